// Package budget shortens an encoded tool result so that it fits in the
// number of characters the agent reads (PROTOCOL.md §3.3: the first 4,000
// characters of a result), keeping it valid JSON and saying what was left out.
//
// # Counting
//
// A result's length is the number of Unicode code points of its JSON
// encoding (utf8.RuneCount), which is how the agent reads it; a byte that is
// not valid UTF-8 counts as one character.
//
// # Rules
//
// [Fit] returns a result that already fits as it is, byte for byte. A longer
// result is shortened by these rules, and only by them:
//
//  1. Only lists (JSON arrays) are shortened, and only lists reached from the
//     top of the result through objects alone: the result itself ([...]), a
//     member of the result ({"orders":[...]}), a member of an object inside
//     it ({"data":{"orders":[...]}}), and so on. A list inside a list item is
//     never shortened: items are kept whole or dropped.
//  2. Items are dropped from the end; every list keeps at least its first
//     item. Kept items, object members and their order, and any white space
//     are left exactly as they were.
//  3. Fit drops one item at a time, always from the list that is currently
//     the longest (in characters, from its '[' to its ']'; on a tie, the one
//     that comes first in the result), and stops as soon as the whole result
//     fits. Several lists therefore end up about the same length.
//  4. Each shortened list gets a count of its dropped items, written
//     compactly after the last member of the object that holds the list:
//     {"orders":[...40 items...]} becomes {"orders":[...3 items...],"omitted":37},
//     and {"data":{"orders":[...]},"ok":true} becomes
//     {"data":{"orders":[...],"omitted":37},"ok":true}.
//     The count is named "omitted" when its list is the only shortened list
//     of that object and the object has no member named "omitted".
//     Otherwise it is named "omitted_" followed by the list's name
//     ("omitted_orders"), and when that name is already a member of the
//     object or an earlier list of the object has it, "_2", "_3", … is added
//     ("omitted_orders_2"). Every list of two items or more holds its
//     "omitted_…" name whether or not it is shortened, so a count's name
//     depends on the other lists only in the choice of plain "omitted".
//     Names are compared as decoded ("omitt\u0065d" is "omitted"). Counts
//     follow the order of their lists.
//  5. A shortened top-level list becomes an object: [...40 items...] becomes
//     {"items":[...3 items...],"omitted":37}.
//  6. A list that is not shortened gets no count.
//
// These rules fix the results Fit tries, one after the other; it does not
// search for other ways to cut. When even the last of them, with every list
// cut to its first item, is longer than the budget, Fit returns an error
// wrapping [ErrTooLarge] that says how long the result is and what the tool
// can do, for example:
//
//	result is 9,120 characters, over the limit of 4,000, and has no list to
//	shorten; return fewer fields or a summary
//
//	result is 5,030 characters, over the limit of 4,000, and still 5,038 with
//	every list cut to its first item (the longest first item is 5,002
//	characters, in "/data/orders"); return fewer or shorter fields, or a summary
//
// Input that is not one JSON value, or a budget below 1, gets an error
// wrapping [ErrBadInput]. Fit never panics.
//
// The input is read with github.com/go-json-experiment/json/jsontext, which
// here accepts what encoding/json's Valid accepts: duplicate object names,
// strings that are not valid UTF-8, nesting up to 10,000 levels.
package budget

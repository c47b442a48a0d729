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
//  4. Each shortened list gets a count of its dropped items, added as the
//     last member of the object that holds the list:
//     {"orders":[...40 items...]} becomes {"orders":[...3 items...],"omitted":37}.
//     The count is named "omitted" when it is the only shortened list of that
//     object and the object has no member named "omitted". Otherwise each
//     shortened list's count is named "omitted_" followed by the list's name
//     ("omitted_orders"); when that name is already a member of the object or
//     the count of an earlier list of the object, "_2", "_3", … is added
//     ("omitted_orders_2"). Counts follow the order of their lists.
//  5. A shortened top-level list becomes an object: [...40 items...] becomes
//     {"items":[...3 items...],"omitted":37}.
//  6. A list that is not shortened gets no count, and a result in which no
//     list is shortened is returned as it is.
//
// When even the shortest result these rules allow (every list cut to its
// first item) is longer than the budget, Fit returns an error saying how long
// the result is and what the tool can do about it, wrapping [ErrTooLarge].
// Input that is not one JSON value, or a budget below 1, gets an error
// wrapping [ErrBadInput]. Fit never panics.
//
// The input is read with github.com/go-json-experiment/json/jsontext, which
// accepts what encoding/json's Valid accepts: duplicate object names and
// strings that are not valid UTF-8 are allowed.
package budget

package budget

import "container/heap"

// wrapChars is what wrapping a shortened top-level list adds besides its
// count: {"items": and }.
const wrapChars = len(`{"items":`) + len(`}`)

// trim drops items by rules 2 and 3 of the package doc until the result
// has at most maxChars characters or no list can lose another item. It
// returns the result's length after trimming.
func trim(s *shape, maxChars int) int {
	size := s.chars
	var q longest
	for _, l := range s.lists {
		if len(l.items) >= 2 {
			q = append(q, l)
		}
	}
	heap.Init(&q)
	for size > maxChars && len(q) > 0 {
		l := q[0]
		size += drop(l)
		if l.keep == 1 {
			heap.Pop(&q)
		} else {
			heap.Fix(&q, 0)
		}
	}
	return size
}

// drop removes the last kept item of l and returns how much the result's
// length changes: the item and its comma go, its holder's counts change.
func drop(l *list) int {
	h := l.holder
	before := h.countChars()
	if l.keep == len(l.items) {
		h.shortened++
		h.sumMulti += len(",:") + l.multiChars + 1 // the count starts at 1
		h.sumDelta += l.singleChars - l.multiChars
	} else {
		h.sumMulti += digits(len(l.items)-l.keep+1) - digits(len(l.items)-l.keep)
	}
	removed := l.items[l.keep-1].chars - l.items[l.keep-2].chars
	l.keep--
	return h.countChars() - before - removed
}

// countChars is what h's counts add to the result: each ,"name":N, and for
// a top-level list the object wrapped around it.
func (h *holder) countChars() int {
	n := h.sumMulti
	if h.shortened == 1 {
		n += h.sumDelta
	}
	if h.top && h.shortened > 0 {
		n += wrapChars
	}
	return n
}

// chars is the length of l as kept, from its '[' to its ']'.
func (l *list) chars() int { return 1 + l.items[l.keep-1].chars + l.tail }

// digits is the number of decimal digits of n >= 1.
func digits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// longest is a heap of lists that can still lose an item, the longest
// first; on a tie, the one that comes first in the result.
type longest []*list

func (q longest) Len() int { return len(q) }
func (q longest) Less(i, j int) bool {
	ci, cj := q[i].chars(), q[j].chars()
	if ci != cj {
		return ci > cj
	}
	return q[i].index < q[j].index
}
func (q longest) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *longest) Push(x any)   { *q = append(*q, x.(*list)) }
func (q *longest) Pop() any {
	old := *q
	l := old[len(old)-1]
	*q = old[:len(old)-1]
	return l
}

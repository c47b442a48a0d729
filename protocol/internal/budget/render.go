package budget

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// edit replaces raw[at:to] with what write appends.
type edit struct {
	at, to int
	write  func([]byte) []byte
}

// render writes the result as trimmed: raw with the dropped items cut out
// and the counts (and the wrapper of a shortened top-level list) added.
// maxChars, the result's most characters, bounds the buffer it starts with.
func render(s *shape, maxChars int) []byte {
	var edits []edit
	for _, l := range s.lists {
		if l.keep < len(l.items) {
			edits = append(edits, edit{at: l.items[l.keep-1].end, to: l.items[len(l.items)-1].end})
		}
	}
	for _, h := range s.holders {
		if h.shortened == 0 {
			continue
		}
		if h.top {
			edits = append(edits, edit{at: h.lists[0].open, to: h.lists[0].open, write: func(b []byte) []byte {
				return append(b, `{"items":`...)
			}})
		}
		edits = append(edits, edit{at: h.insert, to: h.insert, write: h.appendCounts})
	}
	slices.SortStableFunc(edits, func(a, b edit) int { return a.at - b.at })

	size := len(s.raw)
	if maxChars < size/utf8.UTFMax {
		size = utf8.UTFMax * maxChars
	}
	out := make([]byte, 0, size)
	pos := 0
	for _, e := range edits {
		out = append(out, s.raw[pos:e.at]...)
		if e.write != nil {
			out = e.write(out)
		}
		pos = e.to
	}
	return append(out, s.raw[pos:]...)
}

// appendCounts appends ,"name":N for each shortened list of h, in order,
// and closes the wrapper of a top-level list.
func (h *holder) appendCounts(b []byte) []byte {
	for _, l := range h.lists {
		if l.keep == len(l.items) {
			continue
		}
		name := l.multi
		if h.shortened == 1 {
			name = l.single
		}
		b = append(b, ',')
		b = append(b, name...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(len(l.items)-l.keep), 10)
	}
	if h.top {
		b = append(b, '}')
	}
	return b
}

package budget

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// omitted is the count's name when a holder has one shortened list.
const omitted = "omitted"

// nameCounts gives each list that can be shortened (two items or more) the
// two names its count may take (rule 4 of the package doc): single, used
// when it is the only shortened list of its holder, and multi, used
// otherwise. Names are compared as decoded, so "omitt\u0065d" is taken too.
func nameCounts(s *shape) {
	for _, h := range s.holders {
		taken := make(map[string]bool, len(h.names)+len(h.lists))
		for _, n := range h.names {
			taken[unquote(s.raw[n.start:n.end])] = true
		}
		for _, l := range h.lists {
			if len(l.items) < 2 {
				continue
			}
			var multi string
			if h.top {
				multi = omitted
			} else {
				base := omitted + "_" + unquote(s.raw[l.name.start:l.name.end])
				multi = base
				for i := 2; taken[multi]; i++ {
					multi = base + "_" + strconv.Itoa(i)
				}
				taken[multi] = true
			}
			single := multi
			if !taken[omitted] {
				single = omitted
			}
			l.multi, l.multiChars = quote(multi)
			l.single, l.singleChars = quote(single)
		}
	}
}

// unquote decodes a quoted JSON string; bytes that are not valid UTF-8
// become U+FFFD, as jsontext reads them.
func unquote(quoted []byte) string {
	b, _ := jsontext.AppendUnquote(nil, quoted)
	return string(b)
}

// quote encodes s as a JSON string and counts its characters. s is valid
// UTF-8 (it is built from unquote's output), so no error can occur.
func quote(s string) ([]byte, int) {
	b, _ := jsontext.AppendQuote(nil, s)
	return b, countChars(b)
}

package budget

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// orders returns {"orders":[...],"page":1} with order objects, about size
// bytes long.
func orders(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"orders":[`)
	for i := 0; b.Len() < size-20; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"ord_%06d","status":"shipped","total":"%d.99 €","items":[{"sku":"A%d","qty":2}]}`, i, i%500, i)
	}
	b.WriteString(`],"page":1}`)
	return []byte(b.String())
}

func BenchmarkFit(b *testing.B) {
	for _, c := range []struct {
		name string
		raw  []byte
	}{
		{"fits_3KiB", orders(3 << 10)},
		{"4KiB_over", orders(4000 + 4<<10)},
		{"1MiB_list", orders(1 << 20)},
	} {
		b.Run(c.name, func(b *testing.B) {
			out, err := Fit(c.raw, 4000)
			if err != nil || utf8.RuneCount(out) > 4000 {
				b.Fatalf("Fit: %v, %d characters", err, utf8.RuneCount(out))
			}
			b.SetBytes(int64(len(c.raw)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Fit(c.raw, 4000)
			}
		})
	}
}

package testsupport

import (
	"slices"
	"testing"
)

// TestPaired: each side serves every index once, in order, in blocks; the
// order within a pair alternates; between runs before each pair with the
// next index; the report names both sides and their ratio.
func TestPaired(t *testing.T) {
	var calls [2][]int
	var order []int
	var betweens []int
	res := testing.Benchmark(func(b *testing.B) {
		calls, order, betweens = [2][]int{}, nil, nil // testing.Benchmark may run the body more than once
		Paired(b, 4, [2]string{"new", "old"}, [2]func(int){
			func(i int) {
				if i%4 == 0 {
					order = append(order, 0)
				}
				calls[0] = append(calls[0], i)
			},
			func(i int) {
				if i%4 == 0 {
					order = append(order, 1)
				}
				calls[1] = append(calls[1], i)
			},
		}, func(next int) { betweens = append(betweens, next) })
	})
	pairs := len(betweens)
	if pairs == 0 || res.N != pairs {
		t.Fatalf("%d pairs for N = %d", pairs, res.N)
	}
	want := make([]int, 4*pairs)
	for i := range want {
		want[i] = i
	}
	for side := range 2 {
		if !slices.Equal(calls[side], want) {
			t.Fatalf("side %d served %v, want 0..%d in order", side, calls[side], len(want)-1)
		}
	}
	for p := range pairs {
		if betweens[p] != 4*p {
			t.Fatalf("between ran with %v, want multiples of 4", betweens)
		}
		first, second := order[2*p], order[2*p+1]
		if first != p%2 || second != 1-p%2 {
			t.Fatalf("pair %d ran %d then %d: the order must alternate (%v)", p, first, second, order)
		}
	}
	for _, unit := range []string{"new-ns/op", "old-ns/op", "new/old"} {
		if _, ok := res.Extra[unit]; !ok {
			t.Errorf("no %s in %v", unit, res.Extra)
		}
	}
	if res.Extra["new/old"] <= 0 {
		t.Errorf("ratio %v", res.Extra["new/old"])
	}
}

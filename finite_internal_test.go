package gpucc

import (
	"fmt"
	"math"
	"testing"
)

// TestFirstNonFinite: the parallel scan finds the first ±Inf or NaN at
// either end, at the goroutines' seams and past them, in data short enough
// for one scan and long enough for many.
func TestFirstNonFinite(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, n := range []int{0, 1, scanChunk - 1, 3*scanChunk + 5} {
		var cases [][]int // positions to poison; want the smallest, or -1
		cases = append(cases, nil)
		if n > 0 {
			cases = append(cases, []int{0}, []int{n - 1}, []int{n / 2, n - 1})
		}
		if n > scanChunk {
			cases = append(cases, []int{scanChunk}, []int{n/3 - 1, n / 3}, []int{2 * n / 3, n / 3})
		}
		for _, poison := range cases {
			t.Run(fmt.Sprint(n, poison), func(t *testing.T) {
				data := make([]float32, n)
				want := -1
				for i, p := range poison {
					data[p] = [2]float32{inf, nan}[i%2]
					if want < 0 || p < want {
						want = p
					}
				}
				if got := firstNonFinite(data); got != want {
					t.Errorf("firstNonFinite = %d, want %d", got, want)
				}
			})
		}
	}
}

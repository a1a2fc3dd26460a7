package onnx

import (
	"math"
	"testing"
)

// TestDimArithmetic: dimProduct and dimSum never wrap. Each case once
// wrapped in the importer: bs·bs = 2^64 → 0 (DepthToSpace), four
// 2^62 + 2 split sizes → 2, 65536^4 → 0 (Reshape).
func TestDimArithmetic(t *testing.T) {
	const lim = 1 << 20
	products := []struct {
		max  int64
		ds   []int64
		want int64
		ok   bool
	}{
		{lim, nil, 1, true},
		{lim, []int64{1024, 1024}, 1 << 20, true},
		{lim, []int64{1024, 1025}, 0, false},
		{math.MaxInt64, []int64{1 << 32, 1 << 32}, 0, false},
		{math.MaxInt64, []int64{65536, 65536, 65536, 65536}, 0, false},
		{lim, []int64{0, lim}, 0, true},
		{lim, []int64{0, lim + 1}, 0, false}, // a dimension over the limit, even beside a 0
		{lim, []int64{3, -1}, 0, false},
		{math.MaxInt64, []int64{math.MaxInt64, 1}, math.MaxInt64, true},
		{math.MaxInt64, []int64{math.MaxInt64, 2}, 0, false},
	}
	for _, c := range products {
		if got, ok := dimProduct(c.max, c.ds...); got != c.want || ok != c.ok {
			t.Errorf("dimProduct(%d, %v) = %d, %v; want %d, %v", c.max, c.ds, got, ok, c.want, c.ok)
		}
	}
	sums := []struct {
		max  int64
		ds   []int64
		want int64
		ok   bool
	}{
		{2, []int64{1 << 62, 1 << 62, 1 << 62, 1<<62 + 2}, 0, false},
		{math.MaxInt64, []int64{math.MaxInt64, 1}, 0, false},
		{10, []int64{3, 7}, 10, true},
		{10, []int64{3, 8}, 0, false},
		{10, []int64{-1, 11}, 0, false},
	}
	for _, c := range sums {
		if got, ok := dimSum(c.max, c.ds...); got != c.want || ok != c.ok {
			t.Errorf("dimSum(%d, %v) = %d, %v; want %d, %v", c.max, c.ds, got, ok, c.want, c.ok)
		}
	}
}

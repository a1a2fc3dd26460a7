package onnx_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/onnx"
)

// TestCumSum checks CumSum in every combination of rank 1-4, axis
// (negative too), exclusive and reverse against a sequential sum (as
// numpy's cumsum adds). The data are small integers, so every partial
// sum is exact and the order gpucc sums in cannot change a bit. An
// exclusive sum along any axis but the last returned zeros, or another
// shape, before 2026-12-04 (the non-empty mask had the wrong shape).
func TestCumSum(t *testing.T) {
	shapes := [][]int64{{5}, {2, 1}, {3, 3}, {2, 3, 4}, {2, 1, 3}, {2, 3, 1, 2}, {1, 2, 2, 3}}
	for _, s := range shapes {
		n := 1
		for _, d := range s {
			n *= int(d)
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = float32((i*7)%11 - 5)
		}
		for axis := -len(s); axis < len(s); axis++ {
			for _, excl := range []int64{0, 1} {
				for _, rev := range []int64{0, 1} {
					name := fmt.Sprintf("%v/axis%d/excl%d/rev%d", s, axis, excl, rev)
					t.Run(name, func(t *testing.T) {
						doc := model(14, graph(
							[]msg{node("CumSum", "cs", []string{"x", "axis"}, []string{"y"}, attrInt("exclusive", excl), attrInt("reverse", rev))},
							[]msg{int64s("axis", nil, int64(axis))},
							[]msg{valueInfo("x", s...)},
							[]msg{valueInfo("y")},
						))
						g, err := onnx.Load(bytes.NewReader(doc), onnx.Options{})
						if err != nil {
							t.Fatal(err)
						}
						if err := g.SetInput("x", x); err != nil {
							t.Fatal(err)
						}
						got := outputs(g)["y"]
						want := cumsum(x, s, axis, excl != 0, rev != 0)
						if diff := cmp.Diff(want, got); diff != "" {
							t.Errorf("(-want +got):\n%s", diff)
						}
						if out := g.Nodes[g.Outputs[0].ID].Shape; len(out) != len(s) {
							t.Errorf("output shape %v, want %v", out, s)
						} else {
							for k := range s {
								if int64(out[k]) != s[k] {
									t.Errorf("output shape %v, want %v", out, s)
								}
							}
						}
					})
				}
			}
		}
	}
	// The example, spelled out: ORT gives [0,0,0,1,2,3,5,7,9].
	got := cumsum([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, []int64{3, 3}, 0, true, false)
	want := []uint32{}
	for _, v := range []float32{0, 0, 0, 1, 2, 3, 5, 7, 9} {
		want = append(want, math.Float32bits(v))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the reference itself (-ORT +cumsum):\n%s", diff)
	}
}

// cumsum is numpy's cumsum along axis with ONNX's exclusive and reverse,
// in float64 (exact for the tests' integers), as float32 bits.
func cumsum(x []float32, s []int64, axis int, excl, rev bool) []uint32 {
	if axis < 0 {
		axis += len(s)
	}
	inner := 1
	for _, d := range s[axis+1:] {
		inner *= int(d)
	}
	n := int(s[axis])
	out := make([]uint32, len(x))
	for base := range x {
		if base/inner%n != 0 {
			continue // one line per (outer, inner) pair, from its first element
		}
		sum := 0.0
		for k := range n {
			i := k
			if rev {
				i = n - 1 - k
			}
			at := base + i*inner
			if excl {
				out[at] = math.Float32bits(float32(sum))
				sum += float64(x[at])
			} else {
				sum += float64(x[at])
				out[at] = math.Float32bits(float32(sum))
			}
		}
	}
	return out
}

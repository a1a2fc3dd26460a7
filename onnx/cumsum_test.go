package onnx_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
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

// TestCumSumBackends is TestCumSum's sweep (rank 1–4, every axis given
// both ways, exclusive, reverse) on random float32 values too, and on
// every backend: cpuref against sums computed here in float64,
//   - on small integers (every partial sum exact in float32) the exact
//     sums' bits, +0 for an empty exclusive sum;
//   - on random values each y within γ_k·Σ|x_j| of the exact sum, k =
//     ⌈log2 n⌉ + 1 and γ_k = k·u/(1 - k·u), u = 2^-24: the bound of a
//     pairwise sum of at most n terms, which gpucc's SumAxes is (numpy's
//     cumsum adds in sequence: its bits may differ within the same bound);
//
// and every other backend's bits equal to cpuref's (not under -short).
func TestCumSumBackends(t *testing.T) {
	shapes := [][]int64{{5}, {3, 3}, {4, 3}, {2, 1}, {3, 1, 4}, {2, 3, 2}, {2, 3, 1, 4}, {1, 2, 3, 2}}
	rng := rand.New(rand.NewPCG(30, 1))
	var ran []ranTest
	for _, shape := range shapes {
		r := len(shape)
		n := 1
		for _, d := range shape {
			n *= int(d)
		}
		xi, xf := make([]float32, n), make([]float32, n)
		for i := range xi {
			xi[i] = float32(rng.IntN(19) - 9)
			xf[i] = float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(9)-4)))
		}
		for axis := -r; axis < r; axis++ {
			for _, excl := range []int64{0, 1} {
				for _, rev := range []int64{0, 1} {
					name := fmt.Sprintf("%v/axis=%d/exclusive=%d/reverse=%d", shape, axis, excl, rev)
					t.Run(name, func(t *testing.T) {
						g := cumSumGraph(t, shape, int64(axis), excl, rev, xi, xf)
						bits := outputs(g)
						a := (axis + r) % r
						si, mi := cumSum64(shape, a, excl != 0, rev != 0, xi)
						checkCumSum(t, "exact", bits["yi"], si, mi, 0)
						sf, mf := cumSum64(shape, a, excl != 0, rev != 0, xf)
						checkCumSum(t, "random", bits["yf"], sf, mf, int(shape[a]))
						ran = append(ran, ranTest{name: "cumsum " + name, g: g, bits: bits})
					})
				}
			}
		}
	}
	if testing.Short() {
		return
	}
	rts := openBackends(t)
	for _, b := range gpucctest.Backends {
		if rt := rts[b]; rt != nil && b != "cpu" {
			checkBackend(t, rt, ran)
		}
	}
}

// cumSumGraph imports a model of two CumSums of one axis, exclusive and
// reverse: yi of xi and yf of xf, both of shape.
func cumSumGraph(t *testing.T, shape []int64, axis, excl, rev int64, xi, xf []float32) *ir.Graph {
	t.Helper()
	attrs := []msg{attrInt("exclusive", excl), attrInt("reverse", rev)}
	doc := model(14, graph(
		[]msg{
			node("CumSum", "ci", []string{"xi", "axis"}, []string{"yi"}, attrs...),
			node("CumSum", "cf", []string{"xf", "axis"}, []string{"yf"}, attrs...),
		},
		[]msg{int64s("axis", nil, axis)},
		[]msg{valueInfo("xi", shape...), valueInfo("xf", shape...)},
		[]msg{valueInfo("yi", shape...), valueInfo("yf", shape...)}))
	g, err := onnx.Load(bytes.NewReader(doc), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, x := range map[string][]float32{"xi": xi, "xf": xf} {
		if err := g.SetInput(name, x); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range g.Outputs {
		if s := g.Nodes[o.ID].Shape; !slicesEqual64(s, shape) {
			t.Fatalf("output %s has shape %v, want %v", o.Name, s, shape)
		}
	}
	return g
}

func slicesEqual64(s ir.Shape, want []int64) bool {
	if len(s) != len(want) {
		return false
	}
	for k := range s {
		if int64(s[k]) != want[k] {
			return false
		}
	}
	return true
}

// cumSum64 is numpy's cumsum of x (shape) along axis a in float64, and
// beside each sum the sum of its terms' magnitudes: exclusive drops the
// element itself, reverse sums from the end.
func cumSum64(shape []int64, a int, excl, rev bool, x []float32) (sums, mags []float64) {
	inner := 1
	for _, d := range shape[a+1:] {
		inner *= int(d)
	}
	n := int(shape[a])
	sums, mags = make([]float64, len(x)), make([]float64, len(x))
	for base := 0; base < len(x); base++ {
		if base/inner%n != 0 {
			continue // base is the first element of its line along the axis
		}
		var s, m float64
		for step := 0; step < n; step++ {
			j := step
			if rev {
				j = n - 1 - step
			}
			i := base + j*inner
			if !excl {
				s, m = s+float64(x[i]), m+math.Abs(float64(x[i]))
			}
			sums[i], mags[i] = s, m
			if excl {
				s, m = s+float64(x[i]), m+math.Abs(float64(x[i]))
			}
		}
	}
	return sums, mags
}

// checkCumSum compares got with the float64 sums: exactly (bits, and +0
// for a zero sum) when n is 0, else within γ_k·Σ|x_j| for a pairwise sum
// of n terms.
func checkCumSum(t *testing.T, what string, got []uint32, sums, mags []float64, n int) {
	t.Helper()
	if len(got) != len(sums) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(sums))
	}
	k := 1.0
	if n > 1 {
		k = math.Ceil(math.Log2(float64(n))) + 1
	}
	gamma := k * 0x1p-24 / (1 - k*0x1p-24)
	for i, w := range sums {
		v := math.Float32frombits(got[i])
		if n == 0 {
			if got[i] != math.Float32bits(float32(w)) {
				t.Errorf("%s: y[%d] = %v (bits %#x), want %v", what, i, v, got[i], w)
			}
			continue
		}
		if d := math.Abs(float64(v) - w); !(d <= gamma*mags[i]) {
			t.Errorf("%s: y[%d] = %v, want %v within %g", what, i, v, w, gamma*mags[i])
		}
	}
}

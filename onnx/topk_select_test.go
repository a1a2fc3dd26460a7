package onnx_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestTopKSelect: TopK's k passes (taken where n > 16k) give the pairwise
// form's indices and values, bit for bit, and a sort's: float32 with NaNs,
// ±0, ±Inf, a subnormal and ties, int64 at its ends, int32 and uint8 (the
// smallest first through ^x), largest and smallest, along the last axis
// and a middle one, k from 1 to n; on cpu, and on native, wasm and webgpu
// (k = 3 only under -short; GPUCC_TYPED_NODE_BACKENDS chooses them). On a
// GPU whose float32 programs flush subnormals, the float32 cases' 1e-40 may
// come out of its order there (topKSelect's doc).
func TestTopKSelect(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	floats := []float32{1, float32(math.Copysign(0, -1)), nan, 0, 1, -5, inf, -inf, 1e-40, nan, 3, 1}
	ints := map[onnx.DataType][]int64{
		onnx.Int64: {math.MinInt64, math.MaxInt64, -1, math.MaxInt64, 0, -1, 5, math.MinInt64, 7, 0, -1, 3},
		onnx.Int32: {math.MinInt32, math.MaxInt32, -1, math.MaxInt32, 0, -1, 5, math.MinInt32, 7, 0, -1, 3},
		onnx.Uint8: {0, 255, 7, 255, 0, 3, 3, 1, 254, 0, 7, 128},
	}
	const n = 12
	ctx := context.Background()
	rts := map[string]*gpucc.Runtime{}
	backends := typedNodeBackends
	if e := os.Getenv("GPUCC_TYPED_NODE_BACKENDS"); e != "" { // the device machine: webgpu alone
		backends = strings.Split(e, ",")
	}
	for _, name := range append([]string{"cpu"}, backends...) {
		rt, err := gpucc.Open(ctx, gpucc.Options{Backend: name, AllowSoftware: true, Limits: ir.Limits{NonFinite: true}})
		if err != nil {
			t.Logf("%s: %v", name, err)
			continue
		}
		defer rt.Close()
		rts[name] = rt
	}
	defer func(v int) { *onnx.TopKPairsUpTo = v }(*onnx.TopKPairsUpTo)
	for _, et := range []onnx.DataType{onnx.Float32, onnx.Int64, onnx.Int32, onnx.Uint8} {
		for _, shape := range [][]int64{{n}, {2, n, 3}} {
			for _, largest := range []int64{1, 0} {
				for _, k := range []int64{1, 3, 7, n} {
					axis := int64(len(shape) - 1)
					if len(shape) == 3 {
						axis = 1
					}
					what := fmt.Sprintf("%v %v largest %d k %d", et, shape, largest, k)
					vshape := slices.Clone(shape)
					vshape[axis] = k
					in := typedValueInfo("x", int64(et), shape...)
					if et == onnx.Float32 {
						in = valueInfo("x", shape...)
					}
					out := typedValueInfo("v", int64(et), vshape...)
					if et == onnx.Float32 {
						out = valueInfo("v", vshape...)
					}
					raw := model(11, graph([]msg{node("TopK", "t", []string{"x", "k"}, []string{"v", "i"}, attrInt("largest", largest), attrInt("axis", axis))},
						[]msg{int64s("k", []int64{1}, k)}, []msg{in}, []msg{out, typedValueInfo("i", int64(onnx.Int64), vshape...)}))
					size := 1
					for _, d := range shape {
						size *= int(d)
					}
					load := func(pairsUpTo int) *ir.Graph {
						*onnx.TopKPairsUpTo = pairsUpTo
						g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{TypedOutputs: true})
						if err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						x := &g.Nodes[g.Input("x")]
						x.Data, x.Ints = nil, nil
						for j := range size { // the values along every slice, shifted by its position
							if et == onnx.Float32 {
								x.Data = append(x.Data, floats[(j/3+j)%n])
							} else {
								x.Ints = append(x.Ints, ints[et][(j/3+j)%n])
							}
						}
						return g
					}
					pairs, sel := load(1<<30), load(0)
					if len(pairs.Nodes) == len(sel.Nodes) {
						t.Fatalf("%s: both loads took one form", what)
					}
					want, err := rts["cpu"].Run(ctx, pairs)
					if err != nil {
						t.Fatalf("%s: pairs on cpu: %v", what, err)
					}
					checkTopKOrder(t, what, pairs.Nodes[pairs.Input("x")], shape, int(axis), int(k), largest == 1, want.Outputs["i"].Ints)
					for name, rt := range rts {
						if name != "cpu" && k != 3 && testing.Short() { // each pass is kernels to compile
							continue
						}
						got, err := rt.Run(ctx, sel)
						if err != nil {
							t.Errorf("%s: k passes on %s: %v", what, name, err)
							continue
						}
						sameOutputs(t, what+": k passes on "+name, want, got)
					}
				}
			}
		}
	}
}

// checkTopKOrder checks indices idx against a stable sort of x's slices
// along axis: larger first (or smaller), NaN above every number, equal
// values (-0 and +0 alike, NaNs) by index.
func checkTopKOrder(t *testing.T, what string, x ir.Node, shape []int64, axis, k int, largest bool, idx []int64) {
	t.Helper()
	a, n, b := 1, int(shape[axis]), 1
	for _, d := range shape[:axis] {
		a *= int(d)
	}
	for _, d := range shape[axis+1:] {
		b *= int(d)
	}
	val := func(j int) (float64, bool) {
		if x.Data != nil {
			v := float64(x.Data[j])
			return v, v != v
		}
		return float64(x.Ints[j]), false
	}
	less := func(p, q int) bool { // p before q
		vp, np := val(p)
		vq, nq := val(q)
		switch {
		case np && nq:
			return false // tied
		case np || nq: // NaN above every number: first for the largest, last for the smallest
			return np == largest
		}
		if largest {
			return vp > vq
		}
		return vp < vq
	}
	for o := range a {
		for c := range b {
			pos := make([]int, n)
			for j := range pos {
				pos[j] = (o*n+j)*b + c
			}
			sort.SliceStable(pos, func(p, q int) bool { return less(pos[p], pos[q]) })
			for r := range k {
				if got := idx[(o*k+r)*b+c]; got != int64((pos[r]-c)/b%n) {
					t.Errorf("%s: slice (%d, %d) rank %d is index %d, a sort's %d", what, o, c, r, got, (pos[r]-c)/b%n)
					return
				}
			}
		}
	}
}

package onnx_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// naiveEinsum is Einsum by definition over explicit letters (no
// ellipsis): every assignment of the letters, the product of the
// operands' elements summed into the output's element, in float64.
func naiveEinsum(ins []string, out string, shapes [][]int, xs [][]float64) ([]int, []float64) {
	size := map[byte]int{}
	var letters []byte
	for k, in := range ins {
		for a := range len(in) {
			if !slices.Contains(letters, in[a]) {
				letters = append(letters, in[a])
			}
			size[in[a]] = max(size[in[a]], shapes[k][a])
		}
	}
	oshape := make([]int, len(out))
	n := 1
	for a := range len(out) {
		oshape[a] = size[out[a]]
		n *= oshape[a]
	}
	res := make([]float64, n)
	pos := map[byte]int{}
	var walk func(i int)
	walk = func(i int) {
		if i == len(letters) {
			p := 1.0
			for k, in := range ins {
				off := 0
				for a := range len(in) {
					c := pos[in[a]]
					if shapes[k][a] == 1 {
						c = 0
					}
					off = off*shapes[k][a] + c
				}
				p *= xs[k][off]
			}
			off := 0
			for a := range len(out) {
				off = off*oshape[a] + pos[out[a]]
			}
			res[off] += p
			return
		}
		for v := range size[letters[i]] {
			pos[letters[i]] = v
			walk(i + 1)
		}
	}
	walk(0)
	return oshape, res
}

// TestEinsum: Einsum's equations (explicit and implicit outputs, an
// ellipsis, a diagonal, a broadcast letter, a scalar result) give the
// definition's values on small integers, whose sums are exact in any
// order, in float32 and float64; the float32 graph gives cpu's bits on
// native (when its compiler is there), being plain float32 ops.
func TestEinsum(t *testing.T) {
	for _, c := range []struct {
		eq       string
		ins      []string // the letters, the ellipsis spelled out
		out      string
		shapes   [][]int
		implicit bool
	}{
		{"ij,jk->ik", []string{"ij", "jk"}, "ik", [][]int{{2, 3}, {3, 4}}, false},
		{"bij,bjk->bik", []string{"bij", "bjk"}, "bik", [][]int{{2, 2, 3}, {2, 3, 2}}, false},
		{"i,i", []string{"i", "i"}, "", [][]int{{5}, {5}}, true},
		{"ij->i", []string{"ij"}, "i", [][]int{{3, 4}}, false},
		{"ij->ji", []string{"ij"}, "ji", [][]int{{3, 4}}, false},
		{"ij", []string{"ij"}, "ij", [][]int{{3, 4}}, true},
		{"ji", []string{"ji"}, "ij", [][]int{{3, 4}}, true},
		{"...ii->...i", []string{"Bii"}, "Bi", [][]int{{2, 3, 3}}, false},
		{"ii->", []string{"ii"}, "", [][]int{{4, 4}}, false},
		{"ij,j->i", []string{"ij", "j"}, "i", [][]int{{3, 4}, {4}}, false},
		{"bi,ci->bc", []string{"bi", "ci"}, "bc", [][]int{{2, 3}, {1, 3}}, false},
		{"...ij,...jk->...ik", []string{"Bij", "Bjk"}, "Bik", [][]int{{2, 2, 3}, {1, 3, 2}}, false},
		{"i,j,k->ijk", []string{"i", "j", "k"}, "ijk", [][]int{{2}, {3}, {2}}, false},
	} {
		for _, et := range []onnx.DataType{onnx.Float32, onnx.Float64} {
			t.Run(fmt.Sprintf("%s/%v", c.eq, et), func(t *testing.T) {
				var ins []msg
				var names []string
				xs := make([][]float64, len(c.shapes))
				for k, s := range c.shapes {
					dims := make([]int64, len(s))
					n := 1
					for a, d := range s {
						dims[a] = int64(d)
						n *= d
					}
					for e := range n {
						xs[k] = append(xs[k], float64((e*5+k*3)%7-3))
					}
					name := fmt.Sprintf("x%d", k)
					names = append(names, name)
					ins = append(ins, typedValueInfo(name, int64(et), dims...))
				}
				doc := model(12, graph([]msg{node("Einsum", "e", names, []string{"y"}, attrStr("equation", c.eq))}, nil,
					ins, []msg{typedValueInfo("y", int64(et))}))
				g, err := onnx.Load(bytes.NewReader(doc), onnx.Options{})
				if err != nil {
					t.Fatal(err)
				}
				for k, name := range names {
					n := &g.Nodes[g.Input(name)]
					n.Data, n.Ints = nil, nil
					for _, x := range xs[k] {
						if et == onnx.Float64 {
							n.Ints = append(n.Ints, ir.F64Bits(x))
						} else {
							n.Data = append(n.Data, float32(x))
						}
					}
				}
				wantShape, want := naiveEinsum(c.ins, c.out, c.shapes, xs)
				res, err := gpucc.Run(context.Background(), g, gpucc.Options{Backend: "cpu"})
				if err != nil {
					t.Fatal(err)
				}
				y := res.Outputs["y"]
				var got []float64
				if et == onnx.Float64 {
					for _, b := range y.Ints {
						got = append(got, ir.F64Value(b))
					}
				} else {
					for _, v := range y.Data {
						got = append(got, float64(v))
					}
				}
				if !slices.Equal(y.Shape, wantShape) || !slices.Equal(got, want) {
					t.Errorf("got %v %v, want %v %v", y.Shape, got, wantShape, want)
				}
				if et != onnx.Float32 {
					return
				}
				nat, err := gpucc.Run(context.Background(), g, gpucc.Options{Backend: "native"})
				if gpucc.CodeOf(err) == ir.CodeBackendUnavailable {
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if !slices.EqualFunc(nat.Outputs["y"].Data, y.Data, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
					t.Errorf("native %v, cpu %v", nat.Outputs["y"].Data, y.Data)
				}
			})
		}
	}
}

// TestEinsumInt: an integer Einsum multiplies and sums in its dtype,
// wrapping (int32: 65536 · 65536 is 0).
func TestEinsumInt(t *testing.T) {
	doc := model(12, graph([]msg{node("Einsum", "e", []string{"a", "b"}, []string{"y"}, attrStr("equation", "i,i->"))}, nil,
		[]msg{typedValueInfo("a", int64(onnx.Int32), 2), typedValueInfo("b", int64(onnx.Int32), 2)}, []msg{typedValueInfo("y", int64(onnx.Int32))}))
	g, err := onnx.Load(bytes.NewReader(doc), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Nodes[g.Input("a")].Ints = []int64{65536, 3}
	g.Nodes[g.Input("b")].Ints = []int64{65536, -4}
	res, err := gpucc.Run(context.Background(), g, gpucc.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if y := res.Outputs["y"]; y.DType != ir.I32 || !slices.Equal(y.Ints, []int64{-12}) {
		t.Errorf("got %v %v, want int32 [-12]", y.DType, y.Ints)
	}
}

// TestEinsumRefused: a malformed equation is invalid_graph naming the
// node; an equation over more letters than gpucc's rank is unsupported.
func TestEinsumRefused(t *testing.T) {
	for _, c := range []struct {
		eq   string
		dims [][]int64
		code ir.Code
	}{
		{"ij,jk->ik", [][]int64{{2, 3}}, ir.CodeInvalidGraph},                          // two terms, one operand
		{"ijk->ik", [][]int64{{2, 3}}, ir.CodeInvalidGraph},                            // rank 2, three letters
		{"ij->iz", [][]int64{{2, 3}}, ir.CodeInvalidGraph},                             // z names no axis
		{"ii->i", [][]int64{{2, 3}}, ir.CodeInvalidGraph},                              // a diagonal of 2 and 3
		{"i+j->i", [][]int64{{2, 3}}, ir.CodeInvalidGraph},                             // not a letter
		{"ij->ii", [][]int64{{2, 2}}, ir.CodeInvalidGraph},                             // an output letter twice
		{"abcde,fghi->", [][]int64{{1, 1, 1, 1, 1}, {1, 1, 1, 1}}, ir.CodeUnsupported}, // 9 letters
	} {
		var ins []msg
		var names []string
		for k, d := range c.dims {
			names = append(names, fmt.Sprintf("x%d", k))
			ins = append(ins, valueInfo(names[k], d...))
		}
		doc := model(12, graph([]msg{node("Einsum", "e", names, []string{"y"}, attrStr("equation", c.eq))}, nil, ins, []msg{valueInfo("y")}))
		_, err := onnx.Load(bytes.NewReader(doc), onnx.Options{})
		var e *ir.Error
		if !errors.As(err, &e) || e.Code != c.code {
			t.Errorf("%s: %v, want %s", c.eq, err, c.code)
		}
	}
}

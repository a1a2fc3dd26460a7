package onnx_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/onnx"
)

// TestOpsExact runs models of one op on values the node tests do not hold
// (NaN, ±Inf, ±0 beside the selected elements) and checks cpuref's bits
// against the exact result (TestNodeTests checks that every backend
// gives cpuref's bits). A graph's inputs are finite, so each model starts
// with q = x/z, z = [0, 0, 0, -0, 1, 1]: q = [+Inf, -Inf, NaN, -Inf, x4, x5·1].
func TestOpsExact(t *testing.T) {
	negz := float32(math.Copysign(0, -1))
	pinf, ninf, nan := float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x7fc00000)
	div := node("Div", "q", []string{"x", "z"}, []string{"q"})
	tests := []struct {
		name  string
		model []byte
		x, z  []float32 // z is [0, 0, 0, -0, 1, 1] unless given
		want  map[string][]float32
	}{{
		// The selected element's bits, whatever the others hold.
		name: "GatherElements",
		model: model(13, graph(
			[]msg{div, node("GatherElements", "g", []string{"q", "i"}, []string{"y"}, attrInt("axis", 1))},
			[]msg{int64s("i", []int64{2, 4}, 2, 1, 0, -3, 1, 2, 0, -2)},
			[]msg{valueInfo("x", 2, 3), valueInfo("z", 2, 3)}, []msg{valueInfo("y", 2, 4)})),
		x:    []float32{1, -1, 0, 1, 1, negz}, // q = [[+Inf, -Inf, NaN], [-Inf, 1, -0]]
		want: map[string][]float32{"y": {nan, ninf, pinf, pinf, 1, negz, ninf, 1}},
	}, {
		// -x[n, t[n]]: an ignored label gives +0, as the reference's zeros;
		// the NaN and Inf not selected do not reach the loss.
		name: "NegativeLogLikelihoodLoss none",
		model: model(13, graph(
			[]msg{div, node("NegativeLogLikelihoodLoss", "l", []string{"q", "t"}, []string{"y"}, attrStr("reduction", "none"), attrInt("ignore_index", 5))},
			[]msg{int64s("t", []int64{3}, 1, 5, 0)},
			[]msg{valueInfo("x", 3, 2), valueInfo("z", 3, 2)}, []msg{valueInfo("y", 3)})),
		x:    []float32{1, -1, 0, 1, 0.5, 2}, // q = [[+Inf, -Inf], [NaN, -Inf], [0.5, 2]]
		want: map[string][]float32{"y": {pinf, 0, -0.5}},
	}, {
		// sum(-q[n, t[n]])/count over the labels not ignored: the rows of
		// NaN and Inf are ignored and do not reach the mean.
		name: "NegativeLogLikelihoodLoss mean",
		model: model(13, graph(
			[]msg{div, node("NegativeLogLikelihoodLoss", "l", []string{"q", "t"}, []string{"y"}, attrInt("ignore_index", -1))},
			[]msg{int64s("t", []int64{3}, -1, -1, 1)},
			[]msg{valueInfo("x", 3, 2), valueInfo("z", 3, 2)}, []msg{valueInfo("y")})),
		x:    []float32{1, -1, 0, 1, 1, 3}, // q = [[+Inf, -Inf], [NaN, -Inf], [1, 3]]
		want: map[string][]float32{"y": {-3}},
	}, {
		// numpy's rules: the first NaN wins; -0 ties with +0.
		name: "ArgMax ArgMin",
		model: model(13, graph(
			[]msg{div,
				node("ArgMax", "first", []string{"q"}, []string{"first"}, attrInt("axis", 1), attrInt("keepdims", 0)),
				node("ArgMax", "last", []string{"q"}, []string{"last"}, attrInt("axis", 1), attrInt("keepdims", 0), attrInt("select_last_index", 1)),
				node("ArgMin", "min", []string{"q"}, []string{"min"}, attrInt("axis", 1), attrInt("keepdims", 0))},
			nil,
			[]msg{valueInfo("x", 2, 3), valueInfo("z", 2, 3)}, []msg{valueInfo("first", 2), valueInfo("last", 2), valueInfo("min", 2)})),
		x:    []float32{1, -1, 0, 1, 0, negz}, // q = [[+Inf, -Inf, NaN], [-Inf, 0, -0]]
		want: map[string][]float32{"first": {2, 1}, "last": {2, 2}, "min": {2, 0}},
	}, {
		// Selections and tests of NaN, ±Inf and ±0 (numpy's sign(-0) is +0).
		name: "Sign IsNaN IsInf Trilu ThresholdedRelu",
		model: model(14, graph(
			[]msg{div,
				node("Sign", "sign", []string{"q"}, []string{"sign"}),
				node("IsNaN", "isnan", []string{"q"}, []string{"isnan"}),
				node("IsInf", "isinf", []string{"q"}, []string{"isinf"}),
				node("IsInf", "isposinf", []string{"q"}, []string{"isposinf"}, attrInt("detect_negative", 0)),
				node("Trilu", "triu", []string{"q"}, []string{"triu"}),
				node("Trilu", "tril", []string{"q"}, []string{"tril"}, attrInt("upper", 0)),
				node("ThresholdedRelu", "trelu", []string{"q"}, []string{"trelu"})},
			nil,
			[]msg{valueInfo("x", 2, 3), valueInfo("z", 2, 3)},
			[]msg{valueInfo("sign", 2, 3), valueInfo("isnan", 2, 3), valueInfo("isinf", 2, 3), valueInfo("isposinf", 2, 3),
				valueInfo("triu", 2, 3), valueInfo("tril", 2, 3), valueInfo("trelu", 2, 3)})),
		x: []float32{1, -1, 0, 1, 0, negz}, // q = [[+Inf, -Inf, NaN], [-Inf, 0, -0]]
		want: map[string][]float32{
			"sign":     {1, -1, nan, -1, 0, 0},
			"isnan":    {0, 0, 1, 0, 0, 0},
			"isinf":    {1, 1, 0, 1, 0, 0},
			"isposinf": {1, 0, 0, 0, 0, 0},
			"triu":     {pinf, ninf, nan, 0, 0, negz},
			"tril":     {pinf, 0, 0, ninf, 0, 0},
			"trelu":    {pinf, 0, nan, 0, 0, 0},
		},
	}, {
		// Sums of the elements included and -0s; an empty exclusive sum is +0.
		name: "CumSum",
		model: model(14, graph(
			[]msg{div,
				node("CumSum", "incl", []string{"x", "axis"}, []string{"incl"}),
				node("CumSum", "excl", []string{"x", "axis"}, []string{"excl"}, attrInt("exclusive", 1)),
				node("CumSum", "rev", []string{"x", "axis"}, []string{"rev"}, attrInt("reverse", 1)),
				node("CumSum", "revexcl", []string{"x", "axis"}, []string{"revexcl"}, attrInt("reverse", 1), attrInt("exclusive", 1))},
			[]msg{int64s("axis", nil, 0)},
			[]msg{valueInfo("x", 6), valueInfo("z", 6)},
			[]msg{valueInfo("incl", 6), valueInfo("excl", 6), valueInfo("rev", 6), valueInfo("revexcl", 6)})),
		x: []float32{1, 2, 3, 4, 0.5, negz},
		want: map[string][]float32{
			"incl":    {1, 3, 6, 10, 10.5, 10.5},
			"excl":    {0, 1, 3, 6, 10, 10.5},
			"rev":     {10.5, 9.5, 7.5, 4.5, 0.5, negz},
			"revexcl": {9.5, 7.5, 4.5, 0.5, negz, 0},
		},
	}, {
		// Run-time values [off, on] at constant indices; 7 is out of range.
		name: "OneHot",
		model: model(11, graph(
			[]msg{div, node("OneHot", "oh", []string{"i", "depth", "q"}, []string{"y"})},
			[]msg{int64s("i", []int64{3}, 0, -1, 7), int64s("depth", nil, 3)},
			[]msg{valueInfo("x", 2), valueInfo("z", 2)}, []msg{valueInfo("y", 3, 3)})),
		x:    []float32{-1, 5},
		z:    []float32{1, 1},
		want: map[string][]float32{"y": {5, -1, -1, -1, -1, 5, -1, -1, -1}},
	}, {
		// Constant integer exponents, a different one per element.
		name: "Pow",
		model: model(15, graph(
			[]msg{div, node("Pow", "p", []string{"q", "e"}, []string{"y"})},
			[]msg{int64s("e", []int64{2, 3}, 2, -1, 0, 3, 2, -2)},
			[]msg{valueInfo("x", 2, 3), valueInfo("z", 2, 3)}, []msg{valueInfo("y", 2, 3)})),
		x:    []float32{1, -1, 0, 1, 3, 0.5}, // q = [[+Inf, -Inf, NaN], [-Inf, 3, 0.5]]
		want: map[string][]float32{"y": {pinf, negz, 1, ninf, 9, 4}},
	}, {
		// Run-time Slice, Concat and Split move bits: NaN, ±Inf and -0 too.
		name: "Slice Concat Split",
		model: model(13, graph(
			[]msg{div,
				node("Slice", "sl", []string{"q", "st", "en", "ax", "step"}, []string{"sl"}),
				node("Concat", "cat", []string{"q", "q"}, []string{"cat"}, attrInt("axis", 0)),
				node("Split", "sp", []string{"q", "split"}, []string{"s0", "s1"})},
			[]msg{int64s("st", []int64{1}, 5), int64s("en", []int64{1}, 0), int64s("ax", []int64{1}, 0), int64s("step", []int64{1}, -2), int64s("split", []int64{2}, 2, 4)},
			[]msg{valueInfo("x", 6), valueInfo("z", 6)},
			[]msg{valueInfo("sl", 3), valueInfo("cat", 12), valueInfo("s0", 2), valueInfo("s1", 4)})),
		x: []float32{1, -1, 0, 1, 0, negz}, // q = [+Inf, -Inf, NaN, -Inf, 0, -0]
		want: map[string][]float32{
			"sl":  {negz, ninf, ninf},
			"cat": {pinf, ninf, nan, ninf, 0, negz, pinf, ninf, nan, ninf, 0, negz},
			"s0":  {pinf, ninf},
			"s1":  {nan, ninf, 0, negz},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := onnx.Load(bytes.NewReader(tt.model), onnx.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.SetInput("x", tt.x); err != nil {
				t.Fatal(err)
			}
			z := tt.z
			if z == nil {
				z = []float32{0, 0, 0, negz, 1, 1}
			}
			if err := g.SetInput("z", z); err != nil {
				t.Fatal(err)
			}
			want := map[string][]uint32{}
			for name, vs := range tt.want {
				for _, v := range vs {
					want[name] = append(want[name], math.Float32bits(v))
				}
			}
			if diff := cmp.Diff(want, outputs(g)); diff != "" {
				t.Errorf("bits (-want +got):\n%s", diff)
			}
		})
	}
}

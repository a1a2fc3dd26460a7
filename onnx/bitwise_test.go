package onnx_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// bitwiseCases are ONNX's bitwise ops and BitShift at their limits, with
// numpy's answer (np.bitwise_and, np.bitwise_or, np.bitwise_xor,
// np.invert, np.left_shift and np.right_shift, which ONNX's reference
// evaluator calls; numpy 1.24, 2026-12-05): a shift by the width or more
// gives 0, a shift out of the top bit drops it.
var bitwiseCases = []struct {
	op, dir string
	et      int64 // ONNX element type
	dt      ir.DType
	a, b    int64
	want    int64
}{
	{"BitShift", "LEFT", 2, ir.U8, 1, 8, 0},
	{"BitShift", "LEFT", 2, ir.U8, 255, 1, 254},
	{"BitShift", "LEFT", 12, ir.U32, 1, 31, 2147483648},
	{"BitShift", "LEFT", 12, ir.U32, 3, 32, 0},
	{"BitShift", "RIGHT", 2, ir.U8, 128, 7, 1},
	{"BitShift", "RIGHT", 2, ir.U8, 128, 200, 0},
	{"BitShift", "RIGHT", 13, ir.U64, 1<<63 - 1, 64, 0},
	{"BitShift", "LEFT", 4, ir.U16, 0x8001, 1, 2},
	{"BitwiseNot", "", 3, ir.I8, 0, 0, -1},
	{"BitwiseNot", "", 2, ir.U8, 0, 0, 255},
	{"BitwiseNot", "", 4, ir.U16, 5, 0, 65530},
	{"BitwiseNot", "", 7, ir.I64, -1 << 63, 0, 1<<63 - 1},
	{"BitwiseNot", "", 12, ir.U32, 0, 0, 4294967295},
	{"BitwiseAnd", "", 6, ir.I32, -1, 12345, 12345},
	{"BitwiseOr", "", 3, ir.I8, -128, 1, -127},
	{"BitwiseXor", "", 2, ir.U8, 255, 15, 240},
}

// TestBitwiseNumpy: each bitwise op and BitShift of integer constants
// folds to numpy's value, and of run-time inputs of the same values
// computes it, on every backend that runs typed integers (the others
// refuse the graph by name): the folds were refused (unsupported) before.
// A broadcast fold gives numpy's table; a BitShift of signed integers and
// a bitwise op of floats are invalid_graph (ONNX's type constraints), and
// BitwiseNot of uint64 0, whose 2^64-1 has no int64 carrier, is refused
// as the run time refuses it.
func TestBitwiseNumpy(t *testing.T) {
	var nodes, inits, ins, outs []msg
	inputs := gpucc.Inputs{}
	var want []string // output name = value
	for i, c := range bitwiseCases {
		var attrs []msg
		if c.dir != "" {
			attrs = append(attrs, attrStr("direction", c.dir))
		}
		n := 2
		if c.op == "BitwiseNot" {
			n = 1
		}
		ca, cb, xa, xb := fmt.Sprint("ca", i), fmt.Sprint("cb", i), fmt.Sprint("xa", i), fmt.Sprint("xb", i)
		fold, run := fmt.Sprint("fold", i), fmt.Sprint("run", i)
		inits = append(inits, int64sOf(ca, c.et, c.a), int64sOf(cb, c.et, c.b))
		ins = append(ins, typedValueInfo(xa, c.et, 1))
		inputs[xa] = gpucc.Tensor{Shape: []int{1}, DType: c.dt, Ints: []int64{c.a}}
		if n == 2 {
			ins = append(ins, typedValueInfo(xb, c.et, 1))
			inputs[xb] = gpucc.Tensor{Shape: []int{1}, DType: c.dt, Ints: []int64{c.b}}
		}
		// The fold joined with a run-time 0 (Add), since a constant
		// output is returned as float32.
		z := fmt.Sprint("z", i)
		ins = append(ins, typedValueInfo(z, c.et, 1))
		inputs[z] = gpucc.Tensor{Shape: []int{1}, DType: c.dt, Ints: []int64{0}}
		nodes = append(nodes, node(c.op, fold+"c", []string{ca, cb}[:n], []string{fold + "c"}, attrs...), node("Add", fold, []string{fold + "c", z}, []string{fold}),
			node(c.op, run, []string{xa, xb}[:n], []string{run}, attrs...))
		outs = append(outs, typedValueInfo(fold, c.et, 1), typedValueInfo(run, c.et, 1))
		want = append(want, fmt.Sprintf("%s=%d", fold, c.want), fmt.Sprintf("%s=%d", run, c.want))
	}
	m := model(18, graph(nodes, inits, ins, outs))
	lim := ir.Limits{MaxOutputs: 2 * len(bitwiseCases)}
	g, err := onnx.Load(bytes.NewReader(m), onnx.Options{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	// The folds are constants of the graph: no bitwise op but the run
	// time's, one a case.
	ops := 0
	for _, n := range g.Nodes {
		if n.Op == ir.OpBitAnd || n.Op == ir.OpBitOr || n.Op == ir.OpBitXor || n.Op == ir.OpBitNot || n.Op == ir.OpShiftLeft || n.Op == ir.OpShiftRight {
			ops++
		}
	}
	if ops != len(bitwiseCases) {
		t.Errorf("%d bitwise nodes in the graph, want %d (the run time's alone)", ops, len(bitwiseCases))
	}
	got := func(outputs map[string]gpucc.Tensor) []string {
		var s []string
		for i := range bitwiseCases {
			for _, name := range []string{fmt.Sprint("fold", i), fmt.Sprint("run", i)} {
				s = append(s, fmt.Sprintf("%s=%v", name, strings.Trim(fmt.Sprint(outputs[name].Ints), "[]")))
			}
		}
		return s
	}
	ctx := context.Background()
	for _, be := range []string{"cpu", "native", "wasm", "webgpu"} {
		t.Run(be, func(t *testing.T) {
			rt, err := gpucc.Open(ctx, gpucc.Options{Backend: be, AllowSoftware: true, Limits: lim})
			if err != nil {
				if os.Getenv("GPUCC_REQUIRE_"+strings.ToUpper(be)) != "" {
					t.Fatal(err)
				}
				t.Skipf("%s: %v", be, err)
			}
			defer rt.Close()
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				if gpucc.CodeOf(err) == ir.CodeUnsupported && strings.Contains(err.Error(), "bit") || strings.Contains(err.Error(), "shift") {
					t.Logf("%s refuses by name: %v", be, err)
					return
				}
				t.Fatal(err)
			}
			defer exe.Release()
			res, err := exe.Run(ctx, inputs)
			if err != nil {
				t.Fatal(err)
			}
			if s := got(res.Outputs); !slices.Equal(s, want) {
				t.Errorf("got  %v\nwant %v (numpy)", s, want)
			}
		})
	}

	// numpy's broadcast: [[1],[2]] & [3,6,7].
	bm := model(18, graph([]msg{node("BitwiseAnd", "a", []string{"p", "q"}, []string{"r"})},
		[]msg{int64s("p", []int64{2, 1}, 1, 2), int64s("q", []int64{3}, 3, 6, 7)}, nil, []msg{typedValueInfo("r", 7, 2, 3)}))
	bg, err := onnx.Load(bytes.NewReader(bm), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := cpuref.EvalTyped(bg) // a constant output: float32, exact up to 2^24
	if r := v[bg.Outputs[0].ID]; err != nil || !slices.Equal(r.F, []float32{1, 0, 1, 2, 2, 2}) || !slices.Equal(bg.Nodes[bg.Outputs[0].ID].Shape, ir.Shape{2, 3}) {
		t.Errorf("broadcast BitwiseAnd: %v %v, numpy [[1 0 1] [2 2 2]]", r, err)
	}

	for _, c := range []struct {
		name string
		m    []byte
		code ir.Code
	}{
		{"BitShift of int32", model(18, graph([]msg{node("BitShift", "s", []string{"p", "q"}, []string{"r"}, attrStr("direction", "LEFT"))},
			[]msg{int64sOf("p", 6, 1), int64sOf("q", 6, 2)}, nil, []msg{typedValueInfo("r", 6, 1)})), ir.CodeInvalidGraph},
		{"BitwiseAnd of float", model(18, graph([]msg{node("BitwiseAnd", "s", []string{"p", "q"}, []string{"r"})},
			[]msg{floats("p", []int64{1}, 1), floats("q", []int64{1}, 3)}, nil, []msg{valueInfo("r", 1)})), ir.CodeInvalidGraph},
		{"BitwiseNot of uint64 0", model(18, graph([]msg{node("BitwiseNot", "s", []string{"p"}, []string{"r"})},
			[]msg{int64sOf("p", 13, 0)}, nil, []msg{typedValueInfo("r", 13, 1)})), ir.CodeUnsupported},
		{"BitShift without a direction", model(18, graph([]msg{node("BitShift", "s", []string{"p", "q"}, []string{"r"})},
			[]msg{int64sOf("p", 2, 1), int64sOf("q", 2, 2)}, nil, []msg{typedValueInfo("r", 2, 1)})), ir.CodeInvalidGraph},
	} {
		_, err := onnx.Load(bytes.NewReader(c.m), onnx.Options{})
		var e *ir.Error
		if !errors.As(err, &e) || e.Code != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
}

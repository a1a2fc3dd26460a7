package onnx_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"google.golang.org/protobuf/encoding/protowire"
)

// attrGraph is a graph attribute (AttributeProto.g).
func attrGraph(name string, g msg) msg {
	return msg(nil).str(1, name).varint(20, 5).bytes(6, g)
}

// boolConst is a bool TensorProto of one element (rank 0), in int32_data.
func boolConst(name string, v bool) msg {
	b := int64(0)
	if v {
		b = 1
	}
	return msg(nil).varint(2, int64(onnx.Bool)).str(8, name).bytes(5, protowire.AppendVarint(nil, uint64(b)))
}

// ifNode is an If of cond with the two branches, each computing its nodes
// and giving the outputs outs.
func ifNode(name, cond string, outs []string, thenB, elseB msg) msg {
	return node("If", name, []string{cond}, outs, attrGraph("then_branch", thenB), attrGraph("else_branch", elseB))
}

// branch is a subgraph of nodes (and initializers) giving outputs.
func branch(nodes, inits []msg, outputs ...string) msg {
	var outs []msg
	for _, o := range outputs {
		outs = append(outs, valueInfo(o))
	}
	return graph(nodes, inits, nil, outs)
}

// The test model's branches read the outer x (a float32 [4]); each
// defines "t", a name local to it: then is x·x, else is -x.
var (
	thenSquare = branch([]msg{node("Mul", "sq", []string{"x", "x"}, []string{"t"})}, nil, "t")
	elseNeg    = branch([]msg{node("Neg", "neg", []string{"x"}, []string{"t"})}, nil, "t")
	ifX        = []float32{1.5, -2, 0, 3e-20}
)

func square(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = v * v
	}
	return y
}

func negate(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = -v
	}
	return y
}

// runIf loads m, sets x (and the bool input c, if the graph has it) and
// runs it on cpu: output y.
func runIf(t *testing.T, m []byte, opts onnx.Options, c ...int64) (*ir.Graph, []float32) {
	t.Helper()
	g, err := onnx.Load(bytes.NewReader(m), opts)
	if err != nil {
		t.Fatal(err)
	}
	copy(g.Nodes[g.Input("x")].Data, ifX)
	if id := g.Input("c"); id >= 0 {
		g.Nodes[id].Ints = c
	}
	res, err := gpucc.Run(context.Background(), g, gpucc.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	return g, res.Outputs["y"].Data
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func countOp(g *ir.Graph, op ir.Op) int {
	n := 0
	for _, nd := range g.Nodes {
		if nd.Op == op {
			n++
		}
	}
	return n
}

// TestIfConstant: a condition known at import (an initializer, an input
// fixed by Options.Constants, a value folded from them) imports the chosen
// branch inline: no select in the graph, the branch's bits.
func TestIfConstant(t *testing.T) {
	x := valueInfo("x", 4)
	for _, cond := range []bool{true, false} {
		want := negate(ifX)
		if cond {
			want = square(ifX)
		}
		// An initializer.
		m := model(13, graph([]msg{ifNode("if", "c", []string{"y"}, thenSquare, elseNeg)}, []msg{boolConst("c", cond)}, []msg{x}, []msg{valueInfo("y", 4)}))
		g, y := runIf(t, m, onnx.Options{})
		if !sameBits(y, want) || countOp(g, ir.OpMask) != 0 {
			t.Errorf("initializer %v: y = %v, want %v (the branch inline):\n%s", cond, y, want, g)
		}
		// An input fixed at import, negated by a folded Not.
		b := int64(0)
		if !cond {
			b = 1
		}
		m = model(13, graph([]msg{
			node("Not", "not", []string{"c"}, []string{"nc"}),
			ifNode("if", "nc", []string{"y"}, thenSquare, elseNeg),
		}, nil, []msg{x, typedValueInfo("c", int64(onnx.Bool))}, []msg{valueInfo("y", 4)}))
		g, y = runIf(t, m, onnx.Options{Constants: map[string]*onnx.Tensor{"c": {Type: onnx.Bool, Shape: []int{}, Int64: []int64{b}}}})
		if !sameBits(y, want) || countOp(g, ir.OpMask) != 0 {
			t.Errorf("Options.Constants %v: y = %v, want %v:\n%s", cond, y, want, g)
		}
		// A constant outside its type's range is refused (a bool of 2 is
		// no condition ONNX can give).
		bad := onnx.Options{Constants: map[string]*onnx.Tensor{"c": {Type: onnx.Bool, Shape: []int{}, Int64: []int64{2}}}}
		if _, err := onnx.Load(bytes.NewReader(m), bad); gpucc.CodeOf(err) != ir.CodeInvalidInput {
			t.Errorf("a bool constant of 2: %v, want invalid_input", err)
		}
	}
}

// TestIfRuntime: a run-time condition imports both branches and selects
// each output with where: the chosen branch's bits (-0 kept), for either
// value of the condition, of shape [] or [1].
func TestIfRuntime(t *testing.T) {
	for _, cs := range [][]int64{nil, {1}} {
		m := model(13, graph([]msg{ifNode("if", "c", []string{"y"}, thenSquare, elseNeg)}, nil,
			[]msg{valueInfo("x", 4), typedValueInfo("c", int64(onnx.Bool), cs...)}, []msg{valueInfo("y", 4)}))
		for _, c := range []int64{1, 0} {
			want := negate(ifX)
			if c == 1 {
				want = square(ifX)
			}
			g, y := runIf(t, m, onnx.Options{}, c)
			if !sameBits(y, want) || countOp(g, ir.OpMask) == 0 {
				t.Errorf("condition shape %v = %d: y = %v, want %v:\n%s", cs, c, y, want, g)
			}
		}
	}
}

// TestIfNested: an If inside a branch, whose own branches read a value of
// the outer branch (an initializer there) and the graph's x: the run-time
// outer condition selects between the inner If's result and -x.
func TestIfNested(t *testing.T) {
	inner := func(cond string) msg {
		return ifNode("inner", cond, []string{"u"},
			branch([]msg{node("Add", "a", []string{"x", "one"}, []string{"v"})}, nil, "v"),
			branch([]msg{node("Sub", "s", []string{"x", "one"}, []string{"v"})}, nil, "v"))
	}
	for _, innerCond := range []bool{true, false} {
		for _, rt := range []bool{false, true} {
			inits := []msg{floats("one", nil, 1)}
			ins := []msg{valueInfo("x", 4), typedValueInfo("c", int64(onnx.Bool))}
			var condName string
			if rt { // the inner condition is the run-time input d
				ins = append(ins, typedValueInfo("d", int64(onnx.Bool)))
				condName = "d"
			} else {
				inits = append(inits, boolConst("k", innerCond))
				condName = "k"
			}
			thenB := branch([]msg{inner(condName)}, inits, "u")
			m := model(13, graph([]msg{ifNode("outer", "c", []string{"y"}, thenB, elseNeg)}, nil, ins, []msg{valueInfo("y", 4)}))
			g, err := onnx.Load(bytes.NewReader(m), onnx.Options{})
			if err != nil {
				t.Fatal(err)
			}
			copy(g.Nodes[g.Input("x")].Data, ifX)
			if rt {
				g.Nodes[g.Input("d")].Ints = []int64{map[bool]int64{true: 1, false: 0}[innerCond]}
			}
			for _, c := range []int64{1, 0} {
				g.Nodes[g.Input("c")].Ints = []int64{c}
				res, err := gpucc.Run(context.Background(), g, gpucc.Options{Backend: "cpu"})
				if err != nil {
					t.Fatal(err)
				}
				want := negate(ifX)
				if c == 1 {
					want = make([]float32, len(ifX))
					for i, v := range ifX {
						if innerCond {
							want[i] = v + 1
						} else {
							want[i] = v - 1
						}
					}
				}
				if y := res.Outputs["y"].Data; !sameBits(y, want) {
					t.Errorf("inner %v (run-time %v), outer %d: y = %v, want %v", innerCond, rt, c, y, want)
				}
			}
		}
	}
}

// TestIfScopes: a branch's names stay in it. Both branches may define
// "t"; the outer graph cannot read it after the If; a branch cannot
// redefine an outer name.
func TestIfScopes(t *testing.T) {
	ins := []msg{valueInfo("x", 4), typedValueInfo("c", int64(onnx.Bool))}
	leak := model(13, graph([]msg{
		ifNode("if", "c", []string{"y"}, thenSquare, elseNeg),
		node("Add", "after", []string{"y", "t"}, []string{"z"}),
	}, nil, ins, []msg{valueInfo("z", 4)}))
	if _, err := onnx.Load(bytes.NewReader(leak), onnx.Options{}); gpucc.CodeOf(err) != ir.CodeInvalidGraph || !strings.Contains(err.Error(), `"t" is not defined`) {
		t.Errorf("reading a branch's name after the If: %v, want invalid_graph naming t", err)
	}
	shadow := model(13, graph([]msg{
		node("Neg", "n", []string{"x"}, []string{"t"}),
		ifNode("if", "c", []string{"y"}, thenSquare, elseNeg),
	}, nil, ins, []msg{valueInfo("y", 4)}))
	// With the condition fixed the branch's error is the model's
	// (invalid_graph); under a run-time condition it reads as unsupported,
	// as a branch invalid only at these shapes does (TestIfRefused).
	cTrue := onnx.Options{Constants: map[string]*onnx.Tensor{"c": {Type: onnx.Bool, Shape: []int{}, Int64: []int64{1}}}}
	if _, err := onnx.Load(bytes.NewReader(shadow), cTrue); gpucc.CodeOf(err) != ir.CodeInvalidGraph || !strings.Contains(err.Error(), "graph.node[1].then_branch.node[0]") {
		t.Errorf("a branch redefining an outer name: %v, want invalid_graph at graph.node[1].then_branch.node[0]", err)
	}
	if _, err := onnx.Load(bytes.NewReader(shadow), onnx.Options{}); gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "defined twice") {
		t.Errorf("the same under a run-time condition: %v, want unsupported saying why", err)
	}
}

// TestIfRefused: a run-time condition over branches whose outputs differ
// in shape is refused by name; an op a branch holds that gpucc lacks is
// refused at its path; graph attributes nest at most onnx.MaxGraphDepth
// deep.
func TestIfRefused(t *testing.T) {
	ins := []msg{valueInfo("x", 4), typedValueInfo("c", int64(onnx.Bool))}
	short := branch(nil, []msg{floats("k", []int64{2}, 1, 2)}, "k")
	m := model(13, graph([]msg{ifNode("sel", "c", []string{"y"}, thenSquare, short)}, nil, ins, []msg{valueInfo("y", -1)}))
	_, err := onnx.Load(bytes.NewReader(m), onnx.Options{})
	if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), `If node "sel"`) || !strings.Contains(err.Error(), "[4] in then_branch and [2] in else_branch") {
		t.Errorf("branches of shapes [4] and [2]: %v, want unsupported naming the node and shapes", err)
	}
	// A constant condition takes one branch: its shape is the output's.
	m = model(13, graph([]msg{ifNode("sel", "c", []string{"y"}, thenSquare, short)}, []msg{boolConst("c", false)}, ins[:1], []msg{valueInfo("y", -1)}))
	if g, err := onnx.Load(bytes.NewReader(m), onnx.Options{}); err != nil || !g.Nodes[g.Outputs[0].ID].Shape.Equal(ir.Shape{2}) {
		t.Errorf("a constant condition over branches of different shapes: %v", err)
	}
	acos := branch([]msg{node("NonZero", "ac", []string{"x"}, []string{"t"})}, nil, "t")
	m = model(13, graph([]msg{ifNode("sel", "c", []string{"y"}, thenSquare, acos)}, nil, ins, []msg{valueInfo("y", 4)}))
	if _, err := onnx.Load(bytes.NewReader(m), onnx.Options{}); gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "graph.node[0].else_branch.node[0]: NonZero") {
		t.Errorf("NonZero in a branch: %v, want unsupported at its path", err)
	}
	// A branch invalid at these shapes (one a model takes only for other
	// inputs) makes a run-time If unsupported, naming --const; a constant
	// condition that skips it imports.
	badReshape := branch([]msg{node("Reshape", "r", []string{"x", "five"}, []string{"t"})}, []msg{int64s("five", []int64{1}, 5)}, "t")
	m = model(13, graph([]msg{ifNode("sel", "c", []string{"y"}, thenSquare, badReshape)}, nil, ins, []msg{valueInfo("y", 4)}))
	if _, err := onnx.Load(bytes.NewReader(m), onnx.Options{}); gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "gpucc --const") {
		t.Errorf("a run-time If over an invalid branch: %v, want unsupported naming --const", err)
	}
	cTrue := map[string]*onnx.Tensor{"c": {Type: onnx.Bool, Shape: []int{}, Int64: []int64{1}}}
	if _, err := onnx.Load(bytes.NewReader(m), onnx.Options{Constants: cTrue}); err != nil {
		t.Errorf("the same If with its condition fixed: %v", err)
	}
	nest := func(depth int) []byte {
		b := thenSquare
		for range depth - 1 {
			b = branch([]msg{ifNode("if", "k", []string{"t"}, b, elseNeg)}, nil, "t")
		}
		return model(13, graph([]msg{ifNode("if", "k", []string{"y"}, b, elseNeg)}, []msg{boolConst("k", true)}, ins[:1], []msg{valueInfo("y", 4)}))
	}
	if g, err := onnx.Load(bytes.NewReader(nest(onnx.MaxGraphDepth)), onnx.Options{}); err != nil || countOp(g, ir.OpMul) != 1 {
		t.Errorf("If nested %d deep: %v", onnx.MaxGraphDepth, err)
	}
	var e *ir.Error
	if _, err := onnx.Load(bytes.NewReader(nest(onnx.MaxGraphDepth+1)), onnx.Options{}); !errors.As(err, &e) || e.Code != ir.CodeLimitExceeded {
		t.Errorf("If nested %d deep: %v, want limit_exceeded", onnx.MaxGraphDepth+1, err)
	}
}

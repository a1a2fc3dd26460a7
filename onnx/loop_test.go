package onnx_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// loopModel is a Loop over x ([2]): M (an initializer, or absent when m
// < 0) and cond (an initializer) drive a body that maps (i, c, y) to
// (c', y·0.5 + float(i), the same as a scan output); c' is c, or i < 2
// when while is set, or a run-time comparison when rtCond is set.
func loopModel(m int64, while, rtCond bool) []byte {
	bodyNodes := []msg{
		node("Cast", "fi", []string{"i"}, []string{"fi"}, attrInt("to", int64(onnx.Float32))),
		node("Mul", "half", []string{"y_in", "h"}, []string{"a"}),
		node("Add", "add", []string{"a", "fi"}, []string{"y_out"}),
		node("Identity", "scan", []string{"y_out"}, []string{"s"}),
	}
	switch {
	case while:
		bodyNodes = append(bodyNodes, node("Less", "lt", []string{"i", "two"}, []string{"c_out"}))
	case rtCond:
		bodyNodes = append(bodyNodes,
			node("ReduceSum", "sum", []string{"y_out"}, []string{"sum"}),
			node("Greater", "gt", []string{"sum", "h"}, []string{"c_out"}))
	default:
		bodyNodes = append(bodyNodes, node("Identity", "c", []string{"c_in"}, []string{"c_out"}))
	}
	body := graph(bodyNodes, []msg{floats("h", nil, 0.5), int64s("two", nil, 2)},
		[]msg{typedValueInfo("i", int64(onnx.Int64)), typedValueInfo("c_in", int64(onnx.Bool)), valueInfo("y_in", 2)},
		[]msg{typedValueInfo("c_out", int64(onnx.Bool)), valueInfo("y_out", 2), valueInfo("s", 2)})
	inits := []msg{boolConst("cond", true)}
	mName := ""
	if m >= 0 {
		inits = append(inits, int64s("M", nil, m))
		mName = "M"
	}
	return model(13, graph([]msg{node("Loop", "loop", []string{mName, "cond", "x"}, []string{"y", "ys"}, attrGraph("body", body))},
		inits, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2), valueInfo("ys", -1, 2)}))
}

var loopX = []float32{3, -0.75}

// loopWant is y after n iterations and the stacked ys, in float32.
func loopWant(n int) (y, ys []float32) {
	y = append([]float32{}, loopX...)
	for i := range n {
		for k := range y {
			y[k] = y[k]*0.5 + float32(i)
		}
		ys = append(ys, y...)
	}
	return y, ys
}

// runEverywhere runs g on every backend and checks each output's bits
// against want.
func runEverywhere(t *testing.T, g *ir.Graph, want map[string][]float32) {
	t.Helper()
	for _, b := range gpucctest.Backends {
		rt := gpucctest.Open(t, b)
		res, err := rt.Run(context.Background(), g)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for n, w := range want {
			if got := res.Outputs[n].Data; !sameBits(got, w) {
				t.Errorf("%s: %s = %v, want %v", b, n, got, w)
			}
		}
	}
}

// TestLoopUnrolled: a Loop whose trip count is an initializer (5), or
// whose condition folds at import (i < 2: 3 iterations, no M), unrolls:
// the carried value and the stacked scan output are the iterations'
// float32 values, bit for bit, on every backend; M = 0 gives x back and
// an empty scan output, refused by name. Without Loop in the op table the
// model is refused.
func TestLoopUnrolled(t *testing.T) {
	for _, c := range []struct {
		m     int64
		while bool
		n     int
	}{{5, false, 5}, {-1, true, 3}, {1, false, 1}, {9, true, 3}} {
		g, err := onnx.Load(bytes.NewReader(loopModel(c.m, c.while, false)), onnx.Options{})
		if err != nil {
			t.Fatalf("M %d while %v: %v", c.m, c.while, err)
		}
		if err := g.SetInput("x", loopX); err != nil {
			t.Fatal(err)
		}
		y, ys := loopWant(c.n)
		if s := g.Nodes[g.Outputs[1].ID].Shape; !s.Equal(ir.Shape{c.n, 2}) {
			t.Errorf("M %d while %v: ys has shape %v, want [%d 2]", c.m, c.while, s, c.n)
		}
		runEverywhere(t, g, map[string][]float32{"y": y, "ys": ys})
	}
	_, err := onnx.Load(bytes.NewReader(loopModel(0, false, false)), onnx.Options{})
	if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "no iterations") {
		t.Errorf("M = 0: %v, want unsupported (an empty scan output)", err)
	}
}

// TestLoopRefused: what cannot unroll is refused by name: a condition
// computed at run time (unsupported), and more iterations than
// Limits.MaxNodes allows (limit_exceeded naming the limit and its flag,
// before the body is imported a thousand times).
func TestLoopRefused(t *testing.T) {
	_, err := onnx.Load(bytes.NewReader(loopModel(5, false, true)), onnx.Options{})
	if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "condition is computed at run time") {
		t.Errorf("a run-time condition: %v", err)
	}
	_, err = onnx.Load(bytes.NewReader(loopModel(1000, false, false)), onnx.Options{Limits: ir.Limits{MaxNodes: 512}})
	if gpucc.CodeOf(err) != ir.CodeLimitExceeded || !strings.Contains(err.Error(), "1000 iterations") || !strings.Contains(err.Error(), "--max-nodes") {
		t.Errorf("1000 iterations under 512 nodes: %v", err)
	}
	// A condition that stays true unrolls until the builder holds 512
	// nodes (ir.Builder.SetMaxNodes), before the loop's own bound of 102
	// iterations (which counts body nodes only, not the broadcasts and
	// constants each iteration adds) would stop it.
	_, err = onnx.Load(bytes.NewReader(loopModel(-1, false, false)), onnx.Options{Limits: ir.Limits{MaxNodes: 512}})
	if gpucc.CodeOf(err) != ir.CodeLimitExceeded || !strings.Contains(err.Error(), "graph.node[0].body.node[") || !strings.Contains(err.Error(), "--max-nodes") {
		t.Errorf("no M and a condition that stays true: %v", err)
	}
	// The bound is MaxNodes / body nodes: 102 iterations of 5 nodes fit
	// 512, 103 do not.
	if _, err = onnx.Load(bytes.NewReader(loopModel(103, false, false)), onnx.Options{Limits: ir.Limits{MaxNodes: 512}}); gpucc.CodeOf(err) != ir.CodeLimitExceeded {
		t.Errorf("103 iterations: %v", err)
	}
	if _, err = onnx.Load(bytes.NewReader(loopModel(102, false, false)), onnx.Options{Limits: ir.Limits{MaxNodes: 512}}); gpucc.CodeOf(err) == ir.CodeLimitExceeded && strings.Contains(err.Error(), "iterations") {
		t.Errorf("102 iterations: %v", err)
	}
}

// TestScanUnrolled: Scan over X ([2,3]) along axis 1, backwards, with a
// state s ([2]): s' = s + x_t, and s'·2 stacked along axis 1 forwards (Y)
// and along axis 0 backwards (Z); the float32 values bit for bit on every
// backend.
func TestScanUnrolled(t *testing.T) {
	body := graph([]msg{
		node("Add", "add", []string{"s_in", "x_t"}, []string{"s_out"}),
		node("Mul", "dbl", []string{"s_out", "two"}, []string{"o"}),
		node("Identity", "o2", []string{"o"}, []string{"o2"}),
	}, []msg{floats("two", nil, 2)},
		[]msg{valueInfo("s_in", 2), valueInfo("x_t", 2)},
		[]msg{valueInfo("s_out", 2), valueInfo("o", 2), valueInfo("o2", 2)})
	m := model(16, graph([]msg{node("Scan", "scan", []string{"s", "X"}, []string{"s_final", "Y", "Z"},
		attrGraph("body", body), attrInt("num_scan_inputs", 1), attrInts("scan_input_axes", 1), attrInts("scan_input_directions", 1),
		attrInts("scan_output_axes", 1, 0), attrInts("scan_output_directions", 0, 1))}, nil,
		[]msg{valueInfo("s", 2), valueInfo("X", 2, 3)}, []msg{valueInfo("s_final", 2), valueInfo("Y", 2, 3), valueInfo("Z", 3, 2)}))
	g, err := onnx.Load(bytes.NewReader(m), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := []float32{0.1, -0}
	X := []float32{1, 2, 3e-8, -4, 5.5, 6}
	if err := g.SetInput("s", s); err != nil {
		t.Fatal(err)
	}
	if err := g.SetInput("X", X); err != nil {
		t.Fatal(err)
	}
	Y, Z := make([]float32, 6), make([]float32, 6)
	st := append([]float32{}, s...)
	for t := range 3 {
		col := 2 - t
		for r := range 2 {
			st[r] += X[r*3+col]
			o := st[r] * 2
			Y[r*3+t] = o
			Z[(2-t)*2+r] = o
		}
	}
	runEverywhere(t, g, map[string][]float32{"s_final": st, "Y": Y, "Z": Z})
}

// TestLoopScanNodeTests runs onnx 1.12's Loop and Scan node tests:
// test_loop11 and test_scan9_sum pass (every backend cpu's bits, within
// the node tests' tolerance of the reference); test_scan_sum (opset 8's
// batched Scan) and the sequence loops are refused by name.
func TestLoopScanNodeTests(t *testing.T) {
	dir := t.TempDir()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	gen := `import sys; sys.path.insert(0, "testdata"); import gen_node_tests as g
orig = g.node_test.collect_testcases
g.node_test.collect_testcases = lambda x: [c for c in orig(x) if c.name.startswith(("test_loop", "test_scan"))]
g.main(sys.argv[1])`
	if out, err := exec.Command(py, "-c", gen, dir).CombinedOutput(); err != nil {
		if os.Getenv("GPUCC_REQUIRE_ONNX") != "" {
			t.Fatalf("generating the node tests: %v\n%s", err, out)
		}
		t.Skipf("python3-onnx cannot generate the node tests (%v); set GPUCC_REQUIRE_ONNX to fail instead", err)
	}
	want := map[string]string{
		"test_loop11":          "pass",
		"test_scan9_sum":       "pass",
		"test_scan_sum":        "Scan before opset 9",
		"test_loop13_seq":      "sequence",
		"test_loop16_seq_none": "optional",
	}
	backends := openBackends(t)
	for name, w := range want {
		nt := readNodeTest(t, dir, name)
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		g, err := nt.load()
		if w != "pass" {
			if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want unsupported (%s)", name, err, w)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		line, bits := checkReference(t, backends["cpu"], nt, g)
		if bits == nil {
			t.Fatalf("%s: %s", name, line)
		}
		t.Log(line)
		for _, b := range gpucctest.Backends {
			if rt := backends[b]; rt != nil && b != "cpu" {
				checkBackend(t, rt, []ranTest{{name: name, g: g, bits: bits}})
			}
		}
	}
}

// TestLoopNestedBound: the unrolling bound holds over every loop of the
// model, not each loop alone: a Loop of 100 iterations whose body is a
// Loop of 100 iterations of 2 nodes passes each loop's own bound under
// 512 nodes (100 ≤ 512/2) but would import 20,200 body nodes, so it is
// limit_exceeded naming MaxNodes; at 25 × 5 iterations (300 body nodes)
// it imports, and y is x.
func TestLoopNestedBound(t *testing.T) {
	nested := func(outer, inner int64) []byte {
		innerBody := graph([]msg{
			node("Identity", "z", []string{"z_in"}, []string{"z_out"}),
			node("Identity", "c", []string{"c2_in"}, []string{"c2_out"}),
		}, nil, []msg{typedValueInfo("j", int64(onnx.Int64)), typedValueInfo("c2_in", int64(onnx.Bool)), valueInfo("z_in", 2)},
			[]msg{typedValueInfo("c2_out", int64(onnx.Bool)), valueInfo("z_out", 2)})
		outerBody := graph([]msg{
			node("Loop", "inner", []string{"M2", "", "y_in"}, []string{"y_out"}, attrGraph("body", innerBody)),
			node("Identity", "c", []string{"c_in"}, []string{"c_out"}),
		}, []msg{int64s("M2", nil, inner)}, []msg{typedValueInfo("i", int64(onnx.Int64)), typedValueInfo("c_in", int64(onnx.Bool)), valueInfo("y_in", 2)},
			[]msg{typedValueInfo("c_out", int64(onnx.Bool)), valueInfo("y_out", 2)})
		return model(13, graph([]msg{node("Loop", "outer", []string{"M", "", "x"}, []string{"y"}, attrGraph("body", outerBody))},
			[]msg{int64s("M", nil, outer)}, []msg{valueInfo("x", 2)}, []msg{valueInfo("y", 2)}))
	}
	l := onnx.Options{Limits: ir.Limits{MaxNodes: 512}}
	_, err := onnx.Load(bytes.NewReader(nested(100, 100)), l)
	if gpucc.CodeOf(err) != ir.CodeLimitExceeded || !strings.Contains(err.Error(), "loops unrolled so far") || !strings.Contains(err.Error(), "--max-nodes") {
		t.Fatalf("100 × 100 iterations under 512 nodes: %v", err)
	}
	g, err := onnx.Load(bytes.NewReader(nested(25, 5)), l)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetInput("x", loopX); err != nil {
		t.Fatal(err)
	}
	runEverywhere(t, g, map[string][]float32{"y": loopX})
}

package onnx_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/internal/testmodels"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// stopCase is a model imported with its builder stopped at each step.
type stopCase struct {
	name string
	raw  []byte
	opts onnx.Options
	// values, when set, imports by Model.SpecializeValues (typed run-time
	// inputs, typed.go's rules) instead of Specialize.
	values map[string]*onnx.Tensor
}

// TestBuilderStops stops the importer's builder (ir.Builder.SetMaxNodes)
// at every one of its steps, on every model under testdata, the real
// models of internal/testmodels and the ONNX node tests (both with their
// integer inputs fixed and with typed run-time inputs): each stopped
// import must fail with the builder's limit_exceeded error naming the
// node, never panic or give another error, and an import the stop does
// not reach must be the unstopped import, error or graph. A multi-step
// rule that read a shape after the builder failed panicked so (e02bb09);
// importer.rule makes that impossible for every rule, and this test
// drives every rule the models reach into it. -short steps the real
// models' larger imports at a stride (about 40 stops each).
func TestBuilderStops(t *testing.T) {
	t.Run("testdata", func(t *testing.T) {
		var cases []stopCase
		for _, root := range []string{"testdata", "../testdata", "../cmd/gpucc/testdata"} {
			filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(path, ".onnx") {
					return err
				}
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				cases = append(cases, stopCase{name: path, raw: raw, opts: onnx.Options{Limits: realLimits}})
				return nil
			})
		}
		if len(cases) < 400 {
			t.Fatalf("found %d models under testdata, want the 400 or more there", len(cases))
		}
		stops := 0
		for _, c := range cases {
			stops += sweepStops(t, c, 0)
		}
		t.Logf("%d models, %d stopped imports", len(cases), stops)
	})
	t.Run("real", func(t *testing.T) {
		stops, seen := 0, map[string]bool{}
		for _, rc := range realCases {
			if rc.long || seen[rc.model] {
				continue
			}
			seen[rc.model] = true
			raw, err := os.ReadFile(testmodels.Path(t, rc.model))
			if err != nil {
				t.Fatal(err)
			}
			o := onnx.Options{Limits: realLimits, InputShapes: rc.shapes}
			if rc.sr != 0 {
				o.Constants = map[string]*onnx.Tensor{"sr": {Type: onnx.Int64, Shape: []int{}, Int64: []int64{rc.sr}}}
			}
			budget := 0
			if testing.Short() {
				budget = 40
			}
			stops += sweepStops(t, stopCase{name: rc.model, raw: raw, opts: o}, budget)
		}
		t.Logf("%d models, %d stopped imports", len(seen), stops)
	})
	t.Run("nodes", func(t *testing.T) {
		dir := nodeTests(t)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		stops := 0
		for _, e := range entries {
			nt := readNodeTest(t, dir, e.Name())
			raw, err := os.ReadFile(nt.model)
			if err != nil {
				t.Fatal(err)
			}
			consts, values := map[string]*onnx.Tensor{}, map[string]*onnx.Tensor{}
			for _, in := range nt.inputs {
				if in == nil {
					values = nil
					break
				}
				values[in.Name] = in
				if in.Type != onnx.Float32 {
					consts[in.Name] = in
				}
			}
			stops += sweepStops(t, stopCase{name: nt.name, raw: raw, opts: onnx.Options{Constants: consts}}, 0)
			if values != nil {
				stops += sweepStops(t, stopCase{name: nt.name + " (run-time inputs)", raw: raw, values: values}, 0)
			}
		}
		t.Logf("%d node tests, %d stopped imports", len(entries), stops)
	})
}

// sweepStops imports c with its builder stopped after 1, 2, … nodes
// (every budget-th of them when budget > 0 and the graph is larger) until
// an import does not reach the stop, checking each, and returns how many
// stopped.
func sweepStops(t *testing.T, c stopCase, budget int) int {
	t.Helper()
	m, err := onnx.Parse(bytes.NewReader(c.raw), c.opts)
	if err != nil {
		return 0 // refused before any import: nothing to stop
	}
	shapes := c.opts.InputShapes
	if shapes == nil && c.values == nil {
		shapes = map[string][]int{}
		for _, in := range m.Signature().Inputs {
			if s := append([]int{}, in.Shape...); in.Shape != nil {
				for k := range s {
					s[k] = max(s[k], 1) // a dynamic dimension at 1
				}
				shapes[in.Name] = s
			}
		}
	}
	imp := func(n int) (g *ir.Graph, err error) {
		onnx.SetBuilderNodes(m, n)
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
			}
		}()
		if c.values != nil {
			g, _, err = m.SpecializeValues(context.Background(), c.values)
			return g, err
		}
		return m.Specialize(context.Background(), shapes)
	}
	g0, err0 := imp(0)
	if err0 != nil && strings.HasPrefix(err0.Error(), "panic") {
		t.Errorf("%s: the import panicked unstopped: %v", c.name, err0)
		return 0
	}
	stride := 1
	if budget > 0 && g0 != nil && len(g0.Nodes) > budget {
		stride = len(g0.Nodes) / budget
	}
	stops := 0
	for n := 1; n <= realLimits.MaxNodes; n += stride {
		g, err := imp(n)
		var ie *ir.Error
		isErr := errors.As(err, &ie)
		if isErr && ie.Code == ir.CodeLimitExceeded && ie.Limit == "MaxNodes" && strings.Contains(ie.Msg, fmt.Sprintf("more than %d nodes exceed the limit of %d", n, n)) {
			stops++
			if !strings.Contains(ie.Field, "node[") && !strings.Contains(ie.Field, "nodes") {
				t.Errorf("%s stopped at %d nodes: the error names no node: %v", c.name, n, err)
			}
			continue
		}
		// The builder held at most n nodes: the unstopped import.
		switch {
		case err != nil && (!isErr || ie.Code == ir.CodeInternal):
			t.Errorf("%s stopped at %d nodes: %v (want the builder's limit_exceeded or the unstopped import's outcome)", c.name, n, err)
		case (err == nil) != (err0 == nil) || err != nil && err.Error() != err0.Error():
			t.Errorf("%s stopped at %d nodes: %v; unstopped: %v", c.name, n, err, err0)
		case g != nil && len(g.Nodes) != len(g0.Nodes):
			t.Errorf("%s stopped at %d nodes: a graph of %d nodes; unstopped %d", c.name, n, len(g.Nodes), len(g0.Nodes))
		}
		return stops
	}
	t.Errorf("%s: still stopped at %d nodes", c.name, realLimits.MaxNodes)
	return stops
}

// TestImportNodeLimit: a model within the node limit node for node whose
// import expands past it (the MLP: 5 nodes, 4 initializers, a graph of
// more nodes) is refused as its builder reaches the limit, naming the
// node that would pass it and the limit to raise, and imports at the
// graph's own node count: Validate refused it before, after the whole
// graph was built, naming no node.
func TestImportNodeLimit(t *testing.T) {
	load := func(n int) (*ir.Graph, error) {
		return onnx.Load(bytes.NewReader(mlpModel()), onnx.Options{InputShapes: map[string][]int{"x": {2, 3}}, Limits: ir.Limits{MaxNodes: n}})
	}
	g, err := load(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load(len(g.Nodes)); err != nil {
		t.Errorf("MaxNodes %d, the graph's node count: %v", len(g.Nodes), err)
	}
	_, err = load(6)
	var ie *ir.Error
	if !errors.As(err, &ie) || ie.Code != ir.CodeLimitExceeded || ie.Limit != "MaxNodes" || !strings.HasPrefix(ie.Field, "graph.node[") ||
		!strings.Contains(ie.Msg, "more than 6 nodes exceed the limit of 6") || !strings.Contains(err.Error(), "max-nodes") {
		t.Errorf("MaxNodes 6: %v; want limit_exceeded of MaxNodes naming the node and the flag", err)
	}
}

// TestImportPanicIsInternal: a rule that panics with the builder intact
// (a bug) fails the import with an internal error naming the node, in the
// main graph and in a branch, through Load and Model.Specialize, instead
// of taking the process down: serve imports a client's model in its
// handler, where net/http recovers a panic but leaves the request's
// admission slot taken.
func TestImportPanicIsInternal(t *testing.T) {
	defer onnx.PanicRule("Neg")()
	plain := model(13, graph([]msg{node("Neg", "n", []string{"x"}, []string{"y"})}, nil, []msg{valueInfo("x", 4)}, []msg{valueInfo("y", 4)}))
	inBranch := model(13, graph([]msg{ifNode("if", "c", []string{"y"}, thenSquare, elseNeg)}, []msg{boolConst("c", false)}, []msg{valueInfo("x", 4)}, []msg{valueInfo("y", 4)}))
	for _, c := range []struct {
		name, field string
		model       []byte
	}{
		{"main graph", "graph.node[0]", plain},
		{"else branch", "graph.node[0].else_branch.node[0]", inBranch},
	} {
		_, err := onnx.Load(bytes.NewReader(c.model), onnx.Options{})
		var ie *ir.Error
		if !errors.As(err, &ie) || ie.Code != ir.CodeInternal || ie.Field != c.field || !strings.Contains(ie.Msg, "a test's rule panics") {
			t.Errorf("%s: Load: %v; want internal at %s", c.name, err, c.field)
		}
		m, err := onnx.Parse(bytes.NewReader(c.model), onnx.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Specialize(context.Background(), nil); !errors.As(err, &ie) || ie.Code != ir.CodeInternal {
			t.Errorf("%s: Specialize: %v; want internal", c.name, err)
		}
	}
}

// FuzzLoadStops imports FuzzLoadOps's and FuzzLoad's grammar models with
// the builder stopped after stop nodes (0: not stopped): a stopped import
// fails with the builder's limit_exceeded error, an import the stop does
// not reach is the unstopped one, and neither panics or errs internal,
// so the rules of random models meet a builder error at random steps.
func FuzzLoadStops(f *testing.F) {
	for _, s := range []string{"\x02\x03\x04\x01\x05", "\x01\x02\x00\x03\x01\x07\x02\x09", "\xff\xfe\x10\x20\x30\x40\x50\x60\x70\x80"} {
		for _, stop := range []uint16{1, 3, 7} {
			f.Add(false, stop, []byte(s))
		}
	}
	for op := range fuzzOps {
		f.Add(true, uint16(op%5+1), []byte{3, 3, 1, 2, 3, 4, 4, byte(op), 3, 240, 1, 2, byte(op), 0, 1, 2, 3, 4, 5})
	}
	f.Fuzz(func(t *testing.T, grammar bool, stop uint16, raw []byte) {
		doc := opsModel(raw)
		if grammar {
			doc = fuzzModel(raw)
		}
		lim := ir.Limits{MaxNodes: 64, MaxElements: 1 << 12, MaxStorageBytes: 1 << 16}
		m, err := onnx.Parse(bytes.NewReader(doc), onnx.Options{Limits: lim})
		if err != nil {
			return
		}
		g0, err0 := m.Specialize(context.Background(), nil)
		n := int(stop)
		onnx.SetBuilderNodes(m, n)
		g, err := m.Specialize(context.Background(), nil)
		var ie *ir.Error
		switch {
		case err != nil && (!errors.As(err, &ie) || ie.Code == ir.CodeInternal):
			t.Fatalf("stopped at %d nodes: %v", n, err)
		case err != nil && ie.Limit == "MaxNodes" && strings.Contains(ie.Msg, fmt.Sprintf("more than %d nodes exceed the limit of %d", n, n)):
			// The builder stopped.
		case (err == nil) != (err0 == nil) || err != nil && err.Error() != err0.Error():
			t.Fatalf("stopped at %d nodes: %v; unstopped: %v", n, err, err0)
		case g != nil && len(g.Nodes) != len(g0.Nodes):
			t.Fatalf("stopped at %d nodes: %d nodes; unstopped %d", n, len(g.Nodes), len(g0.Nodes))
		}
	})
}

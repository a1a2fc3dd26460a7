package onnx_test

import (
	"context"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	_ "github.com/gpucc/gpucc/runtime/all"
)

// typedGraphSeen, when set, is given each node test's graph that runTyped
// is about to run on cpu, its inputs bound.
var typedGraphSeen func(g *ir.Graph)

// typedNodeBackends are the backends besides cpu that run typed graphs.
var typedNodeBackends = []string{"native", "wasm", "webgpu"}

// TestNodeTestsTypedBackends runs every node test that passes
// TestNodeTestsTypedInputs on cpu and whose graph is typed (gpucc.Typed)
// on the backends with typed code: each must give cpu's outputs bit for
// bit (dtype, shape, every value's bits) or refuse by name (unsupported:
// an op the backend's typed code does not hold yet); anything else fails.
// It logs the counts per backend. Set GPUCC_TYPED_NODE_TESTS to run it;
// GPUCC_TYPED_NODE_TESTS=all runs the passing tests whose graphs are
// float32 only too (the float32 kernels' path), and
// GPUCC_TYPED_NODE_BACKENDS (native,wasm,webgpu) chooses the backends.
func TestNodeTestsTypedBackends(t *testing.T) {
	mode := os.Getenv("GPUCC_TYPED_NODE_TESTS")
	if mode == "" {
		t.Skip("set GPUCC_TYPED_NODE_TESTS to run the typed node tests on every backend")
	}
	typedNodeBackends := typedNodeBackends
	if e := os.Getenv("GPUCC_TYPED_NODE_BACKENDS"); e != "" {
		typedNodeBackends = strings.Split(e, ",")
	}
	dir := nodeTests(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rts := map[string]*gpucc.Runtime{}
	for _, name := range append([]string{"cpu"}, typedNodeBackends...) {
		rt, err := gpucc.Open(ctx, gpucc.Options{Backend: name, AllowSoftware: true, Limits: ir.Limits{NonFinite: true}}) // as runTyped
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer rt.Close()
		rts[name] = rt
	}
	defer func() { typedGraphSeen = nil }()
	typed := 0
	same, refused := map[string]int{}, map[string]int{}
	for _, e := range entries {
		nt := readNodeTest(t, dir, e.Name())
		var g *ir.Graph
		typedGraphSeen = func(seen *ir.Graph) { g = seen.Clone() }
		if ok, _ := runTyped(t, nt); !ok || g == nil || !gpucc.Typed(g) && mode != "all" {
			continue
		}
		typed++
		want, err := rts["cpu"].Run(ctx, g)
		if err != nil {
			t.Errorf("%s: cpu: %v", nt.name, err)
			continue
		}
		for _, name := range typedNodeBackends {
			got, err := rts[name].Run(ctx, g)
			switch {
			case gpucc.CodeOf(err) == ir.CodeUnsupported:
				refused[name]++
				if mode == "v" {
					t.Logf("%s on %s: %v", nt.name, name, err)
				}
			case err != nil:
				t.Errorf("%s on %s: %v", nt.name, name, err)
			case sameOutputs(t, nt.name+" on "+name, want, got):
				same[name]++
			}
		}
	}
	for _, name := range typedNodeBackends {
		t.Logf("node tests passing on cpu (%s): %d; on %s %d give cpu's bits, %d refused by name, %d differ or fail",
			map[bool]string{true: "all", false: "typed graphs"}[mode == "all"], typed, name, same[name], refused[name], typed-same[name]-refused[name])
	}
}

// sameOutputs reports whether got holds want's outputs with the same
// dtype, shape and bits, reporting the first difference.
func sameOutputs(t *testing.T, what string, want, got *gpucc.Result) bool {
	t.Helper()
	for name, w := range want.Outputs {
		o, ok := got.Outputs[name]
		if !ok || o.DType != w.DType || !slices.Equal(o.Shape, w.Shape) || !slices.Equal(o.Ints, w.Ints) || len(o.Data) != len(w.Data) {
			t.Errorf("%s: output %s is %v %v %v, cpu's %v %v %v", what, name, o.DType, o.Shape, o.Ints, w.DType, w.Shape, w.Ints)
			return false
		}
		for i := range w.Data {
			if math.Float32bits(o.Data[i]) != math.Float32bits(w.Data[i]) {
				t.Errorf("%s: output %s element %d is %v, cpu's %v", what, name, i, o.Data[i], w.Data[i])
				return false
			}
		}
	}
	return true
}

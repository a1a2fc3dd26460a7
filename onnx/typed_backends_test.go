package onnx_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	_ "github.com/gpucc/gpucc/runtime/all"
)

// typedGraphSeen, when set, is given each node test's graph that runTyped
// is about to run on cpu, its inputs bound: TestNodeTestsUnion runs it on
// the other backends (it replaced TestNodeTestsTypedBackends, which ran
// the typed graphs alone and counted them by hand).
var typedGraphSeen func(g *ir.Graph)

// typedNodeBackends are the backends besides cpu that run typed graphs
// (TestTopKSelect's; GPUCC_TYPED_NODE_BACKENDS chooses them there).
var typedNodeBackends = []string{"native", "wasm", "webgpu"}

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

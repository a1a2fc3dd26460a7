package web

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/nodetests"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestScatterOnPage runs the scatter rows (ir/scatter.go) through
// gpucc.run in the page on its WebGPU (the typed WGSL kernels) and its
// WebGL2 (the typed GLSL passes), each against cpuref.EvalTyped: every
// dtype through every reduction with repeated and negative indices
// (irtest.Typed's scatter graphs), the limits (irtest.ScatterLimits but
// its NaN inputs and uint64, which protocol v1's JSON cannot carry),
// indices outside their dimension (irtest.ScatterFaults) and 8 random
// chains of scatters.
func TestScatterOnPage(t *testing.T) {
	var cases []irtest.Case
	for _, c := range irtest.Typed() {
		if strings.HasSuffix(c.Name, "/scatter") {
			cases = append(cases, c)
		}
	}
	for _, c := range append(irtest.ScatterLimits(), irtest.ScatterFaults()...) {
		// NaN inputs and uint64: protocol v1's JSON has no NaN and no uint64 to send
		if c.Name != "scatter/nan" && !slices.ContainsFunc(c.Graph.Nodes, func(n ir.Node) bool { return !ir.ProtocolDTypes.Has(n.DType) }) {
			cases = append(cases, c)
		}
	}
	for seed := range 8 {
		cases = append(cases, irtest.Case{Name: "random", Graph: irtest.RandomScatters(uint64(seed))})
	}
	for _, backend := range []string{"webgpu", "webgl2"} {
		t.Run(backend, func(t *testing.T) { casesOnPage(t, backend, cases) })
	}
}

// TestScatterNodeTestsWebGL2 is TestNodeTestsWebGL2 for onnx 1.12's 9
// scatter node tests alone: each, bound to its inputs at run time, gives
// cpu's bits on WebGL2 in the page (its row "same").
func TestScatterNodeTestsWebGL2(t *testing.T) {
	if err := nodetests.Available(); err != nil {
		t.Skipf("python3-onnx is not installed (%v)", err)
	}
	dir := t.TempDir()
	if _, err := nodetests.Generate("../onnx/testdata/gen_node_tests.py", dir); err != nil {
		t.Fatal(err)
	}
	cpu, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "cpu", Limits: nodetests.Limits})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	tests := []string{"test_scatter_elements_with_axis", "test_scatter_elements_with_duplicate_indices",
		"test_scatter_elements_with_negative_indices", "test_scatter_elements_without_axis", "test_scatter_with_axis",
		"test_scatter_without_axis", "test_scatternd", "test_scatternd_add", "test_scatternd_multiply"}
	ctx := page(t, "?life=0", time.Duration(len(tests))*10*time.Second+pageDeadline)
	for _, name := range tests {
		if r := webgl2Row(t, ctx, cpu, dir, name); r != "same" {
			t.Errorf("%s on webgl2: %s", name, r)
		}
	}
}

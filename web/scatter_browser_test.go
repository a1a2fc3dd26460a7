package web

import (
	"slices"
	"strings"
	"testing"

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

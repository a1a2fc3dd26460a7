//go:build !js

package runtime

import (
	"os"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestWebGPUPipelineCacheBounded: a long-lived runtime that runs many
// different graphs keeps at most webgpuMaxPipelines compiled pipelines,
// and runs correctly after the cache has been emptied.
func TestWebGPUPipelineCacheBounded(t *testing.T) {
	rt, err := New(Options{Backend: "webgpu", AllowSoftware: true})
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_WEBGPU") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer rt.Close()
	defer func(old int) { webgpuMaxPipelines = old }(webgpuMaxPipelines)
	webgpuMaxPipelines = 2
	b := rt.backend.(*webgpuBackend)
	for n := 1; n <= 5; n++ { // each size is a different kernel
		bld := ir.NewBuilder()
		x := bld.Input(ir.Shape{n}, irtest.Values(1, n, 3))
		bld.Output("y", x.MulScalar(2).Relu())
		g, err := bld.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := rt.Run(g)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range res.Outputs["y"].Data {
			if want := max(2*g.Nodes[0].Data[i], 0); v != want {
				t.Fatalf("n=%d: y[%d] = %v, want %v", n, i, v, want)
			}
		}
		if len(b.pipelines) > webgpuMaxPipelines {
			t.Fatalf("after %d graphs, %d pipelines cached; bound %d", n, len(b.pipelines), webgpuMaxPipelines)
		}
	}
}

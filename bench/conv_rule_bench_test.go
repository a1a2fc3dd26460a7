package bench

// BenchmarkConvRule times whole ONNX models (the torchvision models that
// bench/torch_vision.py exports at batch 1) under the tiling pass's conv
// rule ("spread", the default: a convolution that the matmul-derived tile
// cuts into fewer than passes.WaveGroups workgroups gets a smaller,
// double-buffered tile) and under passes.Options.KeepConvTile ("keep"):
// inputs and weights resident, the output kept on the device, so that
// dispatch-ms is the kernels (issue 35 item 3: ResNet-18 at batch 1). The
// two rules must give the same bits (tiles never change a result); a
// difference is an error, not a figure.
//
//	GPUCC_BENCH_VISION         the directory of NAME.onnx (skipped unset)
//	GPUCC_BENCH_VISION_MODELS  names, comma-separated (default
//	                           resnet18,mobilenet_v2,efficientnet_b0)

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/onnx"
)

// visionLimits admit torchvision's models at batch 1 (gpucc run's flags in
// device.sh's compile suite).
var visionLimits = ir.Limits{MaxNodes: 100000, MaxElements: 1 << 28, MaxStorageBytes: 4 << 30, MaxOps: 1 << 40,
	MaxKernelOps: 1000000, MaxOutputs: 16}

func BenchmarkConvRule(b *testing.B) {
	dir := os.Getenv("GPUCC_BENCH_VISION")
	if dir == "" {
		b.Skip("GPUCC_BENCH_VISION is not set")
	}
	ctx := context.Background()
	for _, name := range strings.Split(envString("GPUCC_BENCH_VISION_MODELS", "resnet18,mobilenet_v2,efficientnet_b0"), ",") {
		raw, err := os.ReadFile(filepath.Join(dir, name+".onnx"))
		if err != nil {
			b.Logf("%s: %v", name, err)
			continue
		}
		g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Limits: visionLimits})
		if err != nil {
			b.Fatalf("%s does not import: %v", name, err)
		}
		if len(g.Outputs) != 1 {
			b.Fatalf("%s has %d outputs; the benchmark keeps one", name, len(g.Outputs))
		}
		for _, p := range g.Nodes {
			if p.Op == ir.OpInput && p.Name == "x" {
				if err := g.SetInput("x", irtest.Values(1, p.Shape.Len(), 1)); err != nil {
					b.Fatal(err)
				}
			}
		}
		out := map[bool][]float32{}
		for _, spread := range []bool{false, true} {
			rule := "keep"
			if spread {
				rule = "spread"
			}
			b.Run(fmt.Sprintf("%s/%s", name, rule), func(b *testing.B) {
				rt := openEngine(b, func(o *gpucc.Options) { o.Limits, o.Passes.KeepConvTile = visionLimits, !spread })
				exe, err := rt.Compile(ctx, g)
				if err != nil {
					b.Fatal(err)
				}
				convs := map[string]int{}
				for _, k := range exe.Plan().Program.Kernels {
					if k.Kind == ir.KernelConv {
						convs[fmt.Sprintf("%dx%d/%dx%dk%d", k.Tile.BM, k.Tile.BN, k.Tile.TM, k.Tile.TN, k.Tile.BK)]++
					}
				}
				b.Logf("%s %s: conv tiles %v", name, rule, convs)
				in := gpucc.Inputs{}
				for _, p := range g.Nodes {
					if p.Op != ir.OpInput || p.Name == "" {
						continue
					}
					t, err := rt.Upload(ctx, p.Shape, p.Data)
					if err != nil {
						b.Fatal(err)
					}
					defer t.Release()
					in[p.Name] = t
				}
				y := g.Outputs[0].Name
				res, err := exe.RunWith(ctx, in, gpucc.RunOptions{Keep: []string{y}})
				if err != nil {
					b.Fatal(err)
				}
				got, err := res.Kept[y].Read(ctx, nil)
				res.Kept[y].Release()
				if err != nil {
					b.Fatal(err)
				}
				out[spread] = got
				if prev, ok := out[!spread]; ok {
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(prev[i]) {
							b.Fatalf("%s: y[%d] is %v under one rule and %v under the other", name, i, got[i], prev[i])
						}
					}
					b.Logf("%s: both rules gave the same %d outputs, bit for bit", name, len(got))
				}
				benchResident(b, exe, in, y)
				b.ReportMetric(float64(exe.Kernels()), "kernels")
			})
		}
	}
}

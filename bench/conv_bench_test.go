package bench

// BenchmarkConv: issue 23's convolution workloads (a ResNet-style 3×3
// convolution, 64→64 channels at 56×56, with its bias and relu fused; a
// depthwise 3×3 over 256 channels at 56×56, bias and relu fused; a 3×3
// stride-2 max pooling), inputs resident, the output kept on the device:
// dispatch-ms is the kernels. gflops counts 2 operations per product. Each
// convolution runs exact (the name as before) and in fast mode (".../fast",
// gpucc.Options.Fast: contracted multiply-adds, where the backend has them).
//
//	GPUCC_BENCH_CONV        the batch (default 1; the figures: 32)
//	GPUCC_BENCH_CONV_TILES  implicit-GEMM tiles to time the ResNet workloads
//	                        with besides the rule's, space-separated, each
//	                        BMxBN/TMxTNkBK, s2 after it double-buffered
//	                        (passes.Options.Tile, passes.ParseTile)
//	GPUCC_BENCH_CONV_STAGES set: also ResNet's later 3×3 stages, 128 channels
//	                        at 28×28, 256 at 14×14, 512 at 7×7 (+ bias + relu;
//	                        torch_conv.py times them with --stages)

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

func BenchmarkConv(b *testing.B) {
	n := 1
	if v, err := strconv.Atoi(os.Getenv("GPUCC_BENCH_CONV")); err == nil && v > 0 {
		n = v
	}
	tiles, err := parseTiles(os.Getenv("GPUCC_BENCH_CONV_TILES"))
	if err != nil {
		b.Fatal(err)
	}
	pad := []int{1, 1, 1, 1}
	type work struct {
		name  string
		c, m  int // input channels, output channels
		group int
		pool  bool
		fast  bool
		tile  *ir.Tile
		hw    int // input height and width
	}
	var works []work
	for _, fast := range []bool{false, true} {
		works = append(works, work{"resnet3x3-64", 64, 64, 1, false, fast, nil, 56}, work{"depthwise3x3-256", 256, 256, 256, false, fast, nil, 56})
	}
	works = append(works, work{"maxpool3x3s2-64", 64, 64, 0, true, false, nil, 56})
	stages := []struct{ c, hw int }{{64, 56}}
	if os.Getenv("GPUCC_BENCH_CONV_STAGES") != "" {
		stages = append(stages, struct{ c, hw int }{128, 28}, struct{ c, hw int }{256, 14}, struct{ c, hw int }{512, 7})
		for _, st := range stages[1:] {
			for _, fast := range []bool{false, true} {
				works = append(works, work{fmt.Sprintf("resnet3x3-%d-%d", st.c, st.hw), st.c, st.c, 1, false, fast, nil, st.hw})
			}
		}
	}
	for _, st := range stages {
		name := "resnet3x3-64"
		if st.c != 64 {
			name = fmt.Sprintf("resnet3x3-%d-%d", st.c, st.hw)
		}
		for _, t := range tiles {
			for _, fast := range []bool{false, true} {
				works = append(works, work{name, st.c, st.c, 1, false, fast, &t, st.hw})
			}
		}
	}
	for _, w := range works {
		name := fmt.Sprintf("%s/n%d", w.name, n)
		if w.tile != nil {
			name += fmt.Sprintf("/tile=%dx%d-%dx%d-k%d", w.tile.BM, w.tile.BN, w.tile.TM, w.tile.TN, w.tile.BK)
			if w.tile.Stages != 0 {
				name += fmt.Sprintf("-s%d", w.tile.Stages)
			}
		}
		if w.fast {
			name += "/fast"
		}
		b.Run(name, func(b *testing.B) {
			bld := ir.NewBuilder()
			x := bld.NamedInput("x", ir.Shape{n, w.c, w.hw, w.hw}, make([]float32, n*w.c*w.hw*w.hw))
			var y ir.Tensor
			flops := 0.0
			if w.pool {
				y = x.MaxPool2D(map[string][]int{"kernel_shape": {3, 3}, "strides": {2, 2}, "pads": pad})
			} else {
				wt := bld.NamedInput("w", ir.Shape{w.m, w.c / w.group, 3, 3}, make([]float32, w.m*w.c/w.group*9))
				bias := bld.NamedInput("bias", ir.Shape{w.m, 1, 1}, make([]float32, w.m))
				a := map[string][]int{"pads": pad, "group": {w.group}}
				y = x.Conv2D(wt, a).Add(bias).Relu()
				flops = 2 * float64(n*w.m*w.hw*w.hw) * float64(w.c/w.group*9)
			}
			bld.Output("y", y)
			g, err := bld.Build(Limits())
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			rt := openEngine(b, func(o *gpucc.Options) { o.Fast, o.Passes.Tile = w.fast, w.tile })
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				b.Fatal(err)
			}
			for _, k := range exe.Plan().Program.Kernels {
				if k.Kind == ir.KernelConv {
					b.Logf("%s: tile %+v", name, k.Tile)
				}
			}
			in := gpucc.Inputs{}
			for i, p := range g.Nodes {
				if p.Op != ir.OpInput {
					continue
				}
				t, err := rt.Upload(ctx, p.Shape, irtest.Values(uint64(i+1), p.Shape.Len(), 1))
				if err != nil {
					b.Fatal(err)
				}
				defer t.Release()
				in[p.Name] = t
			}
			benchResident(b, exe, in, "y")
			b.ReportMetric(float64(exe.Kernels()), "kernels")
			if flops > 0 {
				b.ReportMetric(flops/(float64(b.Elapsed().Nanoseconds())/float64(b.N)), "gflops-wall")
			}
		})
	}
}

// parseTiles reads GPUCC_BENCH_CONV_TILES: space-separated tiles, each
// BMxBN/TMxTNkBK, s2 after it for the double-buffered GEMM
// (passes.ParseTile).
func parseTiles(s string) ([]ir.Tile, error) {
	var out []ir.Tile
	for _, f := range strings.Fields(s) {
		t, err := passes.ParseTile(f)
		if err != nil || t.Vector != 1 {
			return nil, fmt.Errorf("GPUCC_BENCH_CONV_TILES: %q is not BMxBN/TMxTNkBK[s2]: %v", f, err)
		}
		out = append(out, t)
	}
	return out, nil
}

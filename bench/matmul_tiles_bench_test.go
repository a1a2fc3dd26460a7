package bench

// BenchmarkMatmulTiles times matmul tiles side by side on webgpu, each in
// exact and fast mode, through runtime/gpu/tune's Measure: random operands
// with zeros, -0 and small integers mixed in, the GPU clock warmed, the
// best GPU-timestamp time of GPUCC_BENCH_MATMUL_REPS runs (default 20).
// Each result is checked first: in exact mode sampled rows (all of them
// for small shapes) must be cpuref's bits, in fast mode within
// FastErrorBound of the float64 product; a tile that fails is an error,
// never a figure.
//
//	GPUCC_BENCH_MATMUL_SHAPES  shapes, N (N³) or MxKxN[ta][tb] (operands
//	                           read transposed), comma-separated (default 4096)
//	GPUCC_BENCH_MATMUL_MODES   exact, fast or exact,fast (the default)
//	GPUCC_BENCH_MATMUL_TILES   tiles, space-separated, as passes.ParseTile
//	                           reads them ("128x128/8x8k8v4s2"), or "rule"
//	                           for the tiling pass's own choice (default:
//	                           the rule and the staged kernel's tiles below)

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/gpu/tune"
)

// matmulTiles is the default list: the rule's tile (TileLarge at 4096³;
// what the tiling pass picks without a tuned table), the H200's tuned
// tiles for 4096³ (runtime/gpu/tune/tables/h200.json: exact 64x128 8x8
// k8, fast 64x128 8x4 k16, what the H200 runs by default), and the staged
// kernel (ir.Tile.Stages) at one and two buffers over those shapes and
// larger register tiles, all within the 16 KiB of workgroup memory the
// backend plans tiles for (tune.PlanStorage; NVIDIA grants 48 KiB, and
// GPUCC_PLAN_STORAGE=device admits tiles past 16 KiB, which were no faster
// on an H100 on 2026-12-06), then the double-buffered kernel's options
// (ir.Tile.Opts: l lean, u unroll, w warp) on the shapes that won before,
// and the H100's winner for the MLP step's weight gradients.
const matmulTiles = "rule 64x128/8x8k8v4 64x128/8x4k16v4 64x128/8x8k8v4s2 64x128/8x8k16v4s1 64x128/8x4k8v4s2 " +
	"128x128/8x8k8v4s2 128x128/8x8k16v4s1 128x128/8x16k8v4s2 128x256/8x16k4v4s2 128x64/8x8k8v4s2 " +
	"64x128/8x8k8v4s2l 64x128/8x8k8v4s2lu 64x128/8x8k8v4s2lw 64x128/8x8k8v4s2luw 128x128/8x8k8v4s2l 128x128/8x8k8v4s2lw " +
	"128x128/8x16k8v4s2l 128x128/8x16k8v4s2lw 128x128/16x8k8v4s2l 64x64/4x4k16v4s2l"

func BenchmarkMatmulTiles(b *testing.B) {
	shapes, err := matmulShapes(envString("GPUCC_BENCH_MATMUL_SHAPES", "4096"))
	if err != nil {
		b.Fatal(err)
	}
	var tiles []*ir.Tile
	for _, f := range strings.Fields(envString("GPUCC_BENCH_MATMUL_TILES", matmulTiles)) {
		if f == "rule" {
			tiles = append(tiles, nil)
			continue
		}
		t, err := passes.ParseTile(f)
		if err != nil {
			b.Fatalf("GPUCC_BENCH_MATMUL_TILES: %v", err)
		}
		tiles = append(tiles, &t)
	}
	var modes []bool
	for _, m := range strings.Split(envString("GPUCC_BENCH_MATMUL_MODES", "exact,fast"), ",") {
		switch m {
		case "exact":
			modes = append(modes, false)
		case "fast":
			modes = append(modes, true)
		default:
			b.Fatalf("GPUCC_BENCH_MATMUL_MODES: %q is not exact or fast", m)
		}
	}
	reps := envInt("GPUCC_BENCH_MATMUL_REPS", 20)
	dev := openDevice(b)
	defer dev.Close()
	for _, s := range shapes {
		for _, t := range tiles {
			name := "rule"
			if t != nil {
				name = passes.TileString(*t)
			}
			for _, fast := range modes {
				mode := "exact"
				if fast {
					mode = "fast"
				}
				b.Run(fmt.Sprintf("%v/%s/%s", s, strings.ReplaceAll(name, "/", "_"), mode), func(b *testing.B) {
					var res tune.Result
					for b.Loop() {
						r, err := tune.Measure(dev, s, t, fast, reps)
						if err != nil {
							b.Fatal(err)
						}
						res = r
					}
					b.Logf("%v %s %s: ran tile %s, %.4f ms, %.2f TFLOP/s, exact %v (%d checked), max rel err %.3g (bound %.3g)",
						s, name, mode, passes.TileString(res.Tile), res.Ms, res.TFLOPS, res.Exact, res.Checked, res.MaxRelErr, res.Bound)
					if res.Err != "" || !res.OK {
						b.Errorf("%v tile %s %s: not checked OK: %+v", s, name, mode, res)
						return
					}
					if t != nil && res.Tile != *t {
						// operands not readable as vec4s, or the device's limits
						b.Logf("%v tile %s: the tiling pass ran %s instead", s, name, passes.TileString(res.Tile))
					}
					b.ReportMetric(res.Ms, "gpu-ms")
					b.ReportMetric(res.TFLOPS, "TFLOP/s")
				})
			}
		}
	}
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// matmulShapes reads GPUCC_BENCH_MATMUL_SHAPES: shapes as
// tune.ParseShape reads them (N for N³, or MxKxN followed by ta, tb or
// tatb for operands read through a transpose: the MLP step's gradients
// are 1024x4096x1024ta and 4096x1024x1024tb), comma-separated.
func matmulShapes(list string) ([]tune.Shape, error) {
	var out []tune.Shape
	for _, f := range strings.Split(list, ",") {
		s, err := tune.ParseShape(f)
		if err != nil {
			return nil, fmt.Errorf("GPUCC_BENCH_MATMUL_SHAPES: %v", err)
		}
		out = append(out, s)
	}
	return out, nil
}

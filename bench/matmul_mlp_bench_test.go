package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/gpu/tune"
)

// BenchmarkMatmulMLPStep times the MLP train step (GPUCC_BENCH_MLP sizes,
// as BenchmarkMLPTrainStep's resident run) under sets of matmul tiles, one
// sub-benchmark a set, so one visit can see what a tuned-table entry for
// the step's shape classes would give before it is written:
//
//	GPUCC_BENCH_MLP_TILES  sets separated by ";", each "base" (the
//	                       device's own choice) or CLASS=TILE pairs
//	                       separated by ",", CLASS as tune.Class names a
//	                       matmul's shape ("lmm-v4" 4096x1024x1024,
//	                       "lmm-v4-tb" its input gradient, "mlm-v4-ta" the
//	                       weight gradients), TILE as passes.ParseTile reads
//	                       it; a class a set leaves out takes the tiling
//	                       pass's rule (default: "base")
//
// A tile never changes a bit: every set's first two losses (the second
// after an update by the backward matmuls) must be the first set's, bit
// for bit, or the set fails.
func BenchmarkMatmulMLPStep(b *testing.B) {
	sets, err := mlpTileSets(envString("GPUCC_BENCH_MLP_TILES", "base"))
	if err != nil {
		b.Fatal(err)
	}
	bsz, d, h, o := mlpSize()
	g := MLP(bsz, d, h, o)
	ctx := context.Background()
	var want []float32 // the first set's first two losses
	for i, set := range sets {
		b.Run(fmt.Sprintf("%dx%d-%d-%d/%d", bsz, d, h, o, i), func(b *testing.B) {
			rt := openEngine(b, func(opt *gpucc.Options) {
				if set != nil {
					opt.Passes.TileFor = set
				}
			})
			tr, err := rt.NewTrainer(ctx, g, "loss", 0.01)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			var losses []float32
			for range 2 {
				r, err := tr.Step(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				losses = append(losses, r.Loss)
			}
			if want == nil {
				want = losses
			}
			for j := range losses {
				if math.Float32bits(losses[j]) != math.Float32bits(want[j]) {
					b.Fatalf("tiles %v: loss of step %d is %v, the first set's %v", set, j+1, losses[j], want[j])
				}
			}
			var t gpucc.Timings
			for b.Loop() {
				r, err := tr.Step(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				t.Add(r.Timings)
			}
			step := t.DispatchMs / float64(b.N)
			b.Logf("tiles %v: losses %v (bits of the first set's), %.4f ms a step on the GPU", set, losses, step)
			reportRun(b, t)
			logStepKernels(b, rt, g, step)
		})
	}
}

// logStepKernels logs each kernel of g's train step run alone
// (RunOptions.KernelTimes: the step's executable compiled apart from the
// trainer's, on the graph's own data, each kernel in a submission of its
// own), the best of three such runs each, beside step, the ms a
// step's kernels took together, so that what the step spends beyond its
// kernels shows; a backend that cannot time them so logs that it cannot.
func logStepKernels(b *testing.B, rt *gpucc.Runtime, g *ir.Graph, step float64) {
	ctx := context.Background()
	sg, err := gpucc.StepGraph(g, "loss", 0.01)
	if err != nil {
		b.Fatal(err)
	}
	exe, err := rt.Compile(ctx, sg)
	if err != nil {
		b.Fatal(err)
	}
	defer exe.Release()
	var best []gpucc.KernelTime
	for range 3 {
		res, err := exe.RunWith(ctx, nil, gpucc.RunOptions{KernelTimes: true})
		if gpucc.CodeOf(err) == ir.CodeUnsupported {
			b.Logf("no kernel times: %v", err)
			return
		}
		if err != nil {
			b.Fatal(err)
		}
		if best == nil {
			best = res.KernelTimes
		}
		for i, kt := range res.KernelTimes {
			best[i].Ms = min(best[i].Ms, kt.Ms)
		}
	}
	var sum float64
	var lines []string
	for _, kt := range best {
		sum += kt.Ms
		lines = append(lines, fmt.Sprintf("%-16s %-11s %.4f ms (%s)", kt.Kernel, kt.Kind, kt.Ms, kt.Clock))
	}
	// On stdout: a benchmark's log keeps its first lines only.
	fmt.Printf("%s: each kernel alone, best of 3:\n  %s\n  sum %.4f ms, the step %.4f ms: %.4f ms beyond its kernels alone\n",
		b.Name(), strings.Join(lines, "\n  "), sum, step, step-sum)
}

// classTiles is a passes.TileChooser: the tile of a matmul kernel's shape
// class (tune.Class, its operands' transposition included), else nil (the
// tiling pass's rule). It counts the kernels it gave each class's tile.
type classTiles struct {
	tiles map[string]ir.Tile
	mu    sync.Mutex
	given map[string]int
}

func (c *classTiles) TileFor(k *ir.Kernel) *ir.Tile {
	s := tune.Shape{M: k.M, K: k.K, N: k.N, TA: k.Inputs[0].MatrixTransposed(), TB: k.Inputs[1].MatrixTransposed()}
	t, ok := c.tiles[tune.Class(s)]
	if !ok {
		return nil
	}
	c.mu.Lock()
	c.given[tune.Class(s)]++
	c.mu.Unlock()
	return &t
}

// String names the set and how many kernels took each of its tiles.
func (c *classTiles) String() string {
	if c == nil {
		return "base"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for class, t := range c.tiles {
		parts = append(parts, fmt.Sprintf("%s=%s (%d kernels)", class, passes.TileString(t), c.given[class]))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// mlpTileSets reads GPUCC_BENCH_MLP_TILES (see BenchmarkMatmulMLPStep); a
// nil set is "base".
func mlpTileSets(list string) ([]*classTiles, error) {
	var sets []*classTiles
	for _, f := range strings.Split(list, ";") {
		if f = strings.TrimSpace(f); f == "base" {
			sets = append(sets, nil)
			continue
		}
		set := &classTiles{tiles: map[string]ir.Tile{}, given: map[string]int{}}
		for _, pair := range strings.Split(f, ",") {
			class, tile, ok := strings.Cut(pair, "=")
			t, err := passes.ParseTile(tile)
			if !ok || err != nil || class == "" {
				return nil, fmt.Errorf("GPUCC_BENCH_MLP_TILES: %q is not CLASS=TILE (%v)", pair, err)
			}
			set.tiles[class] = t
		}
		sets = append(sets, set)
	}
	return sets, nil
}

//go:build !js

package tune

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/gpu"
)

// Shape is a matmul's [M,K]×[K,N]; TA (TB) reads A (B) in place through
// a transpose of a buffer laid out [K,M] ([N,K]), as a training step's
// gradients do.
type Shape struct {
	M, K, N int
	TA, TB  bool
}

// String writes s as MxKxN, followed by ta, tb or tatb for the operands
// read transposed.
func (s Shape) String() string {
	t := ""
	if s.TA {
		t += "ta"
	}
	if s.TB {
		t += "tb"
	}
	return fmt.Sprintf("%dx%dx%d%s", s.M, s.K, s.N, t)
}

// ParseShape reads a shape as String writes it, or N for N³: "4096",
// "4096x1024x1024", "1024x4096x1024ta", "64x32x64tatb". Sides must be
// positive.
func ParseShape(f string) (Shape, error) {
	var s Shape
	rest := f
	rest, s.TB = strings.CutSuffix(rest, "tb")
	rest, s.TA = strings.CutSuffix(rest, "ta")
	if n, err := strconv.Atoi(rest); err == nil && !s.TA && !s.TB {
		s = Shape{M: n, K: n, N: n}
	} else if _, err := fmt.Sscanf(rest, "%dx%dx%d", &s.M, &s.K, &s.N); err != nil || s.String() != f {
		return Shape{}, fmt.Errorf("shape %q: want N or MxKxN[ta][tb]", f)
	}
	if s.M <= 0 || s.K <= 0 || s.N <= 0 {
		return Shape{}, fmt.Errorf("shape %q: a side below 1", f)
	}
	return s, nil
}

// Flops is the shape's arithmetic: a multiply and an add per step.
func (s Shape) Flops() float64 { return 2 * float64(s.M) * float64(s.K) * float64(s.N) }

// Result is one candidate measured on one shape.
type Result struct {
	Shape  string  `json:"shape"`
	Class  string  `json:"class"`
	Tile   ir.Tile `json:"tile"`
	Fast   bool    `json:"fast"`
	Ms     float64 `json:"ms"` // best GPU time of the runs
	TFLOPS float64 `json:"tflops"`
	// Exact: every checked element is cpuref's, bit for bit. Fast mode
	// results are checked against a bound instead.
	Exact bool `json:"exact"`
	// Checked is how many output elements were compared.
	Checked int `json:"checked"`
	// MaxRelErr is the largest |y - y64| / Σ|a·b| over the checked
	// elements, y64 the product in float64; Bound is K·2⁻²⁴, the classic
	// bound for K rounded steps (with or without FMA).
	MaxRelErr float64 `json:"maxRelErr"`
	Bound     float64 `json:"bound"`
	OK        bool    `json:"ok"` // exact mode: Exact; fast mode: MaxRelErr ≤ Bound
	Err       string  `json:"error,omitempty"`
}

// Options bound a search.
type Options struct {
	Fast   bool          // search the fast (contractable) kernels
	Reps   int           // timed runs per candidate (default 5)
	Budget time.Duration // per shape; 0: no limit
	// Candidates replaces the search space (Candidates(...) by default).
	Candidates []ir.Tile
	// Progress, when set, is called with each shape's report as Run
	// finishes it.
	Progress func(ShapeReport)
}

// PlanStorage is the workgroup storage the webgpu backend's passes plan
// matmul and conv tiles for on a device of limits l: WebGPU's default 16
// KiB even where the device grants more (only a wide online attention
// tile fills more), so that a tuned tile is one the backend keeps. The
// environment's GPUCC_PLAN_STORAGE=device plans for all the device grants
// (48 KiB on NVIDIA's Vulkan driver): a knob for timing the larger tiles,
// in the benchmarks and in a whole engine alike.
func PlanStorage(l gpu.Limits) int {
	if os.Getenv("GPUCC_PLAN_STORAGE") == "device" {
		return int(l.MaxComputeWorkgroupStorageSize)
	}
	return min(int(l.MaxComputeWorkgroupStorageSize), passes.WebGPUDefault.MaxWorkgroupStorage)
}

// Candidates is the search space for s on a device with limits l: vec4
// kernels over workgroup tiles 32–128, register tiles 4–16 (at most 128
// accumulators a thread) and k-steps 8–32 (workgroup size and memory
// follow), when s's operands allow vec4 reads, then scalar tiles. Each
// vec4 tile whose double buffer fits comes first as the double-buffered
// kernel with the lean option (s2l), then with lean, unroll and warp
// (s2luw), then single-buffered: on the H100 a double-buffered lean tile
// was the fastest in every class timed (2026-12-06: 4096³ exact 27.1
// TFLOP/s by s2luw against 22.1 by the rule's single-buffered tile, fast
// 45.6 against 29.5; the MLP step's layouts s2l). Those that do not fit l
// are left out.
func Candidates(s Shape, l gpu.Limits) []ir.Tile {
	var out []ir.Tile
	storage := PlanStorage(l)
	fits := func(t ir.Tile) bool {
		th := (t.BM / t.TM) * (t.BN / t.TN)
		return th >= 32 && th <= int(l.MaxComputeInvocationsPerWorkgroup) &&
			passes.TileBytes(t) <= storage &&
			t.BN/t.TN <= int(l.MaxComputeWorkgroupSizeX) && t.BM/t.TM <= int(l.MaxComputeWorkgroupSizeY)
	}
	if s.vec4() {
		for _, bm := range []int{32, 64, 128} {
			for _, bn := range []int{32, 64, 128} {
				for _, tm := range []int{4, 8, 16} {
					for _, tn := range []int{4, 8, 16} {
						for _, bk := range []int{8, 16, 32} {
							t := ir.Tile{BM: bm, BN: bn, TM: tm, TN: tn, BK: bk, Vector: 4}
							if tm > bm || tn > bn || tm*tn > 128 || !fits(t) {
								continue
							}
							for _, o := range []ir.TileOpts{ir.TileLean, ir.TileLean | ir.TileUnroll | ir.TileWarp} {
								d := t
								d.Stages, d.Opts = 2, o
								if fits(d) && passes.WellFormed(d) { // w wants a grid of 8×4 warp blocks
									out = append(out, d)
								}
							}
							out = append(out, t)
						}
					}
				}
			}
		}
	}
	// Larger tiles first: under a budget, the likely winners for large
	// shapes are measured before it runs out.
	slices.SortStableFunc(out, func(a, b ir.Tile) int {
		if d := b.BM*b.BN - a.BM*a.BN; d != 0 {
			return d
		}
		if d := b.TM*b.TN - a.TM*a.TN; d != 0 {
			return d
		}
		return abs(a.BK-16) - abs(b.BK-16)
	})
	// A matrix-vector product has one row (or column) of outputs: tiles
	// one row (column) tall, a thread per output, deep k-steps.
	if s.M == 1 {
		for _, bn := range []int{64, 128, 256} {
			for _, bk := range []int{16, 64} {
				if t := (ir.Tile{BM: 1, BN: bn, TM: 1, TN: 1, BK: bk, Vector: 1}); fits(t) {
					out = append(out, t)
				}
			}
		}
	}
	if s.N == 1 {
		for _, bm := range []int{64, 128, 256} {
			for _, bk := range []int{16, 64} {
				if t := (ir.Tile{BM: bm, BN: 1, TM: 1, TN: 1, BK: bk, Vector: 1}); fits(t) {
					out = append(out, t)
				}
			}
		}
	}
	out = append(out, thinTiles(s, fits)...)
	for _, t := range []ir.Tile{passes.TileMedium, passes.TileSmall,
		{BM: 64, BN: 64, TM: 4, TN: 4, BK: 8, Vector: 1}, {BM: 32, BN: 32, TM: 2, TN: 2, BK: 32, Vector: 1},
		{BM: 16, BN: 64, TM: 1, TN: 4, BK: 16, Vector: 1}, {BM: 64, BN: 16, TM: 4, TN: 1, BK: 16, Vector: 1},
		passes.TileFallback} {
		if fits(t) || t == passes.TileFallback {
			out = append(out, t)
		}
	}
	return out
}

// thinTiles are the candidates for a thin product, one side of 2 to 64
// (an MLP's last layer and its gradients: 4096x1024x16, 1024x4096x16 with
// A read transposed): so few outputs that one a thread leaves most lanes
// idle, and each k-step's loads and barriers wait on memory with little
// else to run. Tiles of one output a thread, the thin side whole (16, 32
// or 64 wide), 4 to 32 along the other (more workgroups), and deep
// k-steps of 32 to 128 (fewer waits): the rule's 16x16/1x1k16 took 0.107
// ms for 1024x4096x16 on an H100 (2026-12-06), 256 k-steps of about 420
// ns each, and 8x16/1x1k128 0.046.
func thinTiles(s Shape, fits func(ir.Tile) bool) []ir.Tile {
	side := func(n int) int {
		for _, w := range []int{16, 32, 64} {
			if n <= w {
				return w
			}
		}
		return 0
	}
	var out []ir.Tile
	for _, long := range []int{4, 8, 16, 32} {
		for _, bk := range []int{128, 64, 32} {
			if s.N > 1 && s.N <= 64 && s.M > 64 {
				if t := (ir.Tile{BM: long, BN: side(s.N), TM: 1, TN: 1, BK: bk, Vector: 1}); fits(t) {
					out = append(out, t)
				}
			}
			if s.M > 1 && s.M <= 64 && s.N > 64 {
				if t := (ir.Tile{BM: side(s.M), BN: long, TM: 1, TN: 1, BK: bk, Vector: 1}); fits(t) {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// Class names s's shape class, the key tuned tiles are stored under: each
// dimension is 1, small (≤ 64), medium (≤ 1024) or large, and "v4" marks
// operands that can be read as vec4s.
func Class(s Shape) string {
	b := func(n int) string {
		switch {
		case n == 1:
			return "1"
		case n <= 64:
			return "s"
		case n <= 1024:
			return "m"
		}
		return "l"
	}
	c := b(s.M) + b(s.K) + b(s.N)
	if s.vec4() {
		c += "-v4"
	}
	if s.TA {
		c += "-ta"
	}
	if s.TB {
		c += "-tb"
	}
	return c
}

// vec4 reports whether s's operands can be read as vec4s: along K for A
// and N for B, or along M (K) when read transposed (passes' vec4Operands).
func (s Shape) vec4() bool {
	return (s.TA && s.M%4 == 0 || !s.TA && s.K%4 == 0) && (s.TB && s.K%4 == 0 || !s.TB && s.N%4 == 0)
}

// problem is one shape's inputs and what the candidates are checked
// against, computed once.
type problem struct {
	s     Shape
	g     *ir.Graph
	x, w  []float32
	rows  []int       // checked rows of the output
	ref   [][]float32 // cpuref's rows
	ref64 [][]float64 // the same in float64
	abs   [][]float64 // Σ|a·b| per element
}

// values returns n deterministic operands in [-scale, scale], with exact
// zeros, negative zeros and small integers mixed in: the values
// irtest.Values gives for seed (TestValuesAreIrtests pins them), kept here
// so that production code imports no test helper.
func values(seed uint64, n int, scale float32) []float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]float32, n)
	for i := range out {
		switch r.IntN(10) {
		case 0:
			out[i] = 0
		case 1:
			out[i] = float32(math.Copysign(0, -1))
		case 2:
			out[i] = float32(r.IntN(7) - 3)
		default:
			out[i] = (r.Float32()*2 - 1) * scale
		}
	}
	return out
}

func newProblem(s Shape) (*problem, error) {
	pr := &problem{s: s, x: values(uint64(s.M)*31+uint64(s.K), s.M*s.K, 1), w: values(uint64(s.N)*17+uint64(s.K), s.K*s.N, 1)}
	b := ir.NewBuilder()
	// the same logical operands whatever their layout: a transposed one is
	// stored transposed and read through a transpose
	a, w := b.Input(ir.Shape{s.M, s.K}, pr.x), b.Input(ir.Shape{s.K, s.N}, pr.w)
	if s.TA {
		a = b.Input(ir.Shape{s.K, s.M}, transpose(pr.x, s.M, s.K)).T()
	}
	if s.TB {
		w = b.Input(ir.Shape{s.N, s.K}, transpose(pr.w, s.K, s.N)).T()
	}
	b.Output("y", a.MatMul(w))
	g, err := b.Build(limits)
	if err != nil {
		return nil, err
	}
	pr.g = g
	if s.Flops() <= 1<<28 {
		for i := range s.M {
			pr.rows = append(pr.rows, i)
		}
	} else {
		r := rand.New(rand.NewPCG(uint64(s.M), uint64(s.N)))
		pr.rows = []int{0, s.M - 1, s.M / 2}
		for len(pr.rows) < 8 {
			pr.rows = append(pr.rows, r.IntN(s.M))
		}
		slices.Sort(pr.rows)
		pr.rows = slices.Compact(pr.rows)
	}
	for _, i := range pr.rows {
		a := pr.x[i*s.K : (i+1)*s.K]
		pr.ref = append(pr.ref, cpuref.Matmul(a, pr.w, 1, s.K, s.N))
		r64, ab := make([]float64, s.N), make([]float64, s.N)
		for k, av := range a {
			row := pr.w[k*s.N : (k+1)*s.N]
			for j, bv := range row {
				p := float64(av) * float64(bv)
				r64[j] += p
				ab[j] += math.Abs(p)
			}
		}
		pr.ref64, pr.abs = append(pr.ref64, r64), append(pr.abs, ab)
	}
	return pr, nil
}

// check compares the checked rows of output y with pr's references:
// Exact when every element has cpuref's bits, MaxRelErr the largest
// |y − y64| / Σ|a·b|. An element that no bound admits sets Err: one
// that is not finite (the operands are in [-1, 1], so the sum is), or a
// nonzero one where every product is 0, so the exact sum is 0 and any
// rounding of it too (the relative error is 0/0 there).
func (pr *problem) check(y []float32, res *Result) {
	res.Exact = true
	for ri, i := range pr.rows {
		for j := range pr.s.N {
			v := y[i*pr.s.N+j]
			res.Checked++
			if math.Float32bits(v) != math.Float32bits(pr.ref[ri][j]) {
				res.Exact = false
			}
			e, d := math.Abs(float64(v)-pr.ref64[ri][j]), pr.abs[ri][j]
			switch {
			case d > 0 && !math.IsInf(e, 0) && !math.IsNaN(e):
				res.MaxRelErr = max(res.MaxRelErr, e/d)
			case e != 0 && res.Err == "": // e is NaN, Inf, or nonzero where d is 0
				res.Err = fmt.Sprintf("y[%d,%d] = %v where the sum is %v (Σ|a·b| = %v): outside any error bound", i, j, v, pr.ref64[ri][j], d)
			}
		}
	}
}

// limits admit the largest tuned shape (8192³).
var limits = ir.Limits{MaxElements: 1 << 27, MaxStorageBytes: 1 << 32, MaxOps: 1 << 42}

// warmFor is how long measure keeps the GPU busy with a candidate before
// timing it.
const warmFor = 400 * time.Millisecond

// measure runs candidate t on pr.
func (pr *problem) measure(dev *gpu.Device, t ir.Tile, o Options) (Result, ir.Tile) {
	res := Result{Shape: pr.s.String(), Class: Class(pr.s), Fast: o.Fast, Bound: wgsl.FastErrorBound(pr.s.K)}
	popts := PassOptions(dev)
	popts.Limits, popts.Tile = limits, &t
	p, _, err := passes.Compile(pr.g, popts)
	if err != nil {
		res.Err = err.Error()
		return res, t
	}
	eff := p.Program().Kernels[0].Tile
	res.Tile = eff
	r, err := PrepareFor(dev, p, wgsl.Target{Fast: o.Fast})
	if err != nil {
		res.Err = err.Error()
		return res, eff
	}
	defer r.Release()
	if _, _, err := r.Run(); err != nil { // warm: the driver's first dispatch
		res.Err = err.Error()
		return res, eff
	}
	out, err := r.Outputs()
	if err != nil {
		res.Err = err.Error()
		return res, eff
	}
	pr.check(out["y"], &res)
	res.OK = res.Err == "" && (res.Exact || o.Fast && res.MaxRelErr <= res.Bound)
	if !res.OK {
		return res, eff
	}
	// Keep the GPU busy for a while first: after the host's work on the
	// reference its clocks are down, and a few short runs would be timed
	// at them (the first H200 run measured 4096³ at 4 instead of 22
	// TFLOP/s that way). 60 ms was not enough: on 2026-12-05 the H200's
	// clock log showed 345 MHz at the start of a tile's runs after the
	// check, and one tile in three was timed 3-4× slow (20.1 ms for the
	// 5.5 of the visit before); its clock rose to 1980 MHz within about
	// 250 ms of steady work.
	for warm := time.Now(); time.Since(warm) < warmFor; {
		if _, _, err := r.Run(); err != nil {
			res.Err, res.OK = err.Error(), false
			return res, eff
		}
	}
	best := uint64(math.MaxUint64)
	reps := o.Reps
	if reps <= 0 {
		reps = 5
	}
	for range reps {
		ns, ok, err := r.Run()
		if err != nil {
			res.Err = err.Error()
			res.OK = false
			return res, eff
		}
		if !ok {
			start := time.Now()
			if _, _, err := r.Run(); err != nil {
				res.Err, res.OK = err.Error(), false
				return res, eff
			}
			ns = uint64(time.Since(start))
		}
		best = min(best, ns)
	}
	res.Ms = float64(best) / 1e6
	res.TFLOPS = pr.s.Flops() / float64(best) / 1e3
	return res, eff
}

// Matmul searches the candidates for s on dev and returns every result
// (in search order) and the index of the fastest one that passed its
// check (-1 if none did). Candidates that the tiling pass turns into one
// already measured are skipped. It stops starting candidates when ctx is
// done or the budget is spent.
func Matmul(ctx context.Context, dev *gpu.Device, s Shape, o Options) ([]Result, int, error) {
	pr, err := newProblem(s)
	if err != nil {
		return nil, -1, err
	}
	return pr.search(ctx, dev, o)
}

func (pr *problem) search(ctx context.Context, dev *gpu.Device, o Options) ([]Result, int, error) {
	s := pr.s
	cands := o.Candidates
	if cands == nil {
		cands = Candidates(s, dev.Info().Limits)
	}
	start := time.Now()
	seen := map[ir.Tile]bool{}
	var all []Result
	best := -1
	for _, t := range cands {
		if ctx.Err() != nil || o.Budget > 0 && time.Since(start) > o.Budget {
			break
		}
		res, eff := pr.measure(dev, t, o)
		if seen[eff] {
			continue
		}
		seen[eff] = true
		all = append(all, res)
		if res.OK && res.Err == "" && (best < 0 || res.Ms < all[best].Ms) {
			best = len(all) - 1
		}
	}
	return all, best, ctx.Err()
}

// Measure runs one tile (the tiling pass's own choice when t is nil) on s.
func Measure(dev *gpu.Device, s Shape, t *ir.Tile, fast bool, reps int) (Result, error) {
	pr, err := newProblem(s)
	if err != nil {
		return Result{}, err
	}
	return pr.measureTile(dev, t, fast, reps)
}

func (pr *problem) measureTile(dev *gpu.Device, t *ir.Tile, fast bool, reps int) (Result, error) {
	var tile ir.Tile
	if t != nil {
		tile = *t
	} else {
		popts := PassOptions(dev)
		popts.Limits = limits
		p, _, err := passes.Compile(pr.g, popts)
		if err != nil {
			return Result{}, err
		}
		tile = p.Program().Kernels[0].Tile
	}
	res, _ := pr.measure(dev, tile, Options{Fast: fast, Reps: reps})
	return res, nil
}

// transpose returns the [cols, rows] transpose of the row-major [rows, cols] x.
func transpose(x []float32, rows, cols int) []float32 {
	out := make([]float32, len(x))
	for i := range rows {
		for j := range cols {
			out[j*rows+i] = x[i*cols+j]
		}
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

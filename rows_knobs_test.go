package gpucc_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestRowKnobs: the rows kernels' benchmark knobs change their schedule,
// never their bits: random row graphs (irtest.RandomRows), and softmax,
// log-softmax and layer norm (maximum(x, neg x) as ir.MaxNeg) over
// extremes and random values, at 1024 leaves a row (the benchmarks'
// width, partials apart from the leaves), 4096 (the groups' values in
// red) and 1000 (padded to 1024), with each setting of wgsl.RowRootOnce
// and wgsl.RowDivFast, with wgsl.RowContiguous, without
// wgsl.RowDivNear (a fused device's only), with wgsl.RowPartsLazy
// (likewise), and with wgsl.RowVec4 (vec4
// loads and stores: 4 leaves a thread, 8 at 128 threads, 16 at 4096
// leaves; with rowVec4Graph's views besides, some of which it reads as
// vec4s and some not), against cpuref's bits
// on webgpu. The runtime allows non-finite outputs (the extremes' softmax
// underflows, their log-softmax is -Inf), so that every value is
// compared: under the finite policy such a graph's run is only an error.
func TestRowKnobs(t *testing.T) {
	rt := open(t, "webgpu", func(o *gpucc.Options) { o.Limits = ir.Limits{NonFinite: true} })
	defer func(once, fast, contig, near, atomic, vec4, lazy bool, threads int) {
		wgsl.RowRootOnce, wgsl.RowDivFast, wgsl.RowContiguous, wgsl.RowDivNear, wgsl.RowMaxAtomic, wgsl.RowVec4, wgsl.RowPartsLazy, wgsl.RowThreads = once, fast, contig, near, atomic, vec4, lazy, threads
	}(wgsl.RowRootOnce, wgsl.RowDivFast, wgsl.RowContiguous, wgsl.RowDivNear, wgsl.RowMaxAtomic, wgsl.RowVec4, wgsl.RowPartsLazy, wgsl.RowThreads)
	threads := wgsl.RowThreads
	for _, knobs := range []struct {
		once, fast, contig, near, atomic, vec4, lazy bool // wgsl.RowPartsLazy
		threads                                      int  // wgsl.RowThreads, 0 for the default
	}{
		{true, true, false, true, false, false, false, 0}, {false, false, false, true, false, false, false, 0}, {true, true, true, true, false, false, false, 0},
		{true, true, false, false, false, false, false, 0}, {true, true, false, true, true, false, false, 0}, {true, true, true, true, true, false, false, 0},
		{true, true, false, true, true, true, false, 0}, {false, false, false, true, false, true, false, 0}, {true, true, false, true, true, true, false, 128},
		{true, true, false, true, true, true, true, 0},
	} {
		wgsl.RowRootOnce, wgsl.RowDivFast, wgsl.RowContiguous, wgsl.RowDivNear, wgsl.RowMaxAtomic = knobs.once, knobs.fast, knobs.contig, knobs.near, knobs.atomic
		wgsl.RowVec4, wgsl.RowPartsLazy, wgsl.RowThreads = knobs.vec4, knobs.lazy, threads
		name := fmt.Sprintf("once=%t,divfast=%t,contig=%t,near=%t,maxatomic=%t", knobs.once, knobs.fast, knobs.contig, knobs.near, knobs.atomic)
		if knobs.vec4 {
			name += ",vec4=true"
		}
		if knobs.lazy {
			name += ",partslazy"
		}
		if knobs.threads != 0 {
			wgsl.RowThreads = knobs.threads
			name += fmt.Sprintf(",threads=%d", knobs.threads)
		}
		for _, s := range []ir.Shape{{3, 1024}, {2, 4096}, {3, 1000}} {
			for seed := range 2 {
				g, _ := irtest.RandomRows(uint64(seed), s)
				t.Run(fmt.Sprintf("%s/%v/%d", name, s, seed), func(t *testing.T) { checkNonFinite(t, rt, g) })
			}
			// the benchmarks' row ops over extremes: ±3e38, subnormals, equal values
			g := rowOpsGraph(t, s, ir.Limits{NonFinite: true})
			t.Run(fmt.Sprintf("%s/%v/ops", name, s), func(t *testing.T) { checkNonFinite(t, rt, g) })
			if knobs.vec4 {
				g := rowVec4Graph(t, s)
				t.Run(fmt.Sprintf("%s/%v/views", name, s), func(t *testing.T) { checkNonFinite(t, rt, g) })
			}
		}
	}
}

// rowVec4Graph is softmax, layer norm and a row's sum beside them over
// rows of shape s ([R, C]) read through views that wgsl.RowVec4 reads as
// vec4s (a plain input, a scale broadcast over the rows, a crop at 4 of
// rows 4 more apart) and that it reads as floats (a crop at 1, a crop at
// 4 of rows 6 more apart, a transposed input, a per-row shift broadcast
// over its row), of extremes and random values.
func rowVec4Graph(t *testing.T, s ir.Shape) *ir.Graph {
	t.Helper()
	r, c := s[0], s[1]
	b := ir.NewBuilder()
	x := b.Input(s, irtest.Extremes(11, s.Len()))
	scale := b.Input(ir.Shape{c}, irtest.Values(12, c, 4)).Reshape(ir.Shape{1, c}).Broadcast(s)
	shift := b.Input(ir.Shape{r, 1}, irtest.Values(13, r, 30)).Broadcast(s)
	at4 := irtest.Crop(b.Input(ir.Shape{r, c + 4}, irtest.Values(14, r*(c+4), 30)), []int{0, 4}, s)
	at1 := irtest.Crop(b.Input(ir.Shape{r, c + 1}, irtest.Values(15, r*(c+1), 30)), []int{0, 1}, s)
	odd := irtest.Crop(b.Input(ir.Shape{r, c + 6}, irtest.Extremes(16, r*(c+6))), []int{0, 4}, s)
	tr := b.Input(ir.Shape{c, r}, irtest.Values(17, s.Len(), 30)).T()
	b.Output("softmax", x.Mul(scale).Add(at4).Softmax(1))
	b.Output("layer_norm", at1.Add(shift).LayerNorm(1, 1e-5))
	b.Output("odd", odd.Softmax(1))
	b.Output("transposed", tr.Mul(scale).LogSoftmax(1))
	b.Output("sum", at4.Mul(at4).SumAxes(true, 1))
	g, err := b.Build(ir.Limits{NonFinite: true})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRowDivision: a division by a per-row divisor (a row's max, here),
// which rows kernels compute through ir.DivRowFast and fall back on the
// division for, against cpuref's bits on webgpu (with ir.Limits.NonFinite,
// NaNs as the quiet NaN; where the GPU flushes subnormals, cpuref's
// flushed bits): one row per divisor (the edges: zeros, subnormals, the
// normal limits, ±Inf, NaNs; and random ones), each of 1024 numerators:
// the edges, numerators next to the midpoints of that divisor's quotients
// (b·q rounded and its neighbours), and division's random and hard
// numerators (irtest.DivPairs), so that the fast path, its fallback and
// both within one warp all run, on a fused device the leaves of
// ir.DivRowNear's range and those at its edges too; under each workgroup size a visit may
// choose (wgsl.RowThreads 64, 128, 256), the fast path with its divisor
// parts computed lazily too (wgsl.RowPartsLazy).
func TestRowDivision(t *testing.T) {
	const cols = 1024
	rt := open(t, "webgpu", func(o *gpucc.Options) { o.Limits = ir.Limits{NonFinite: true} })
	// ir.DivRowNear's range is [2^-60, 2^60) for divisors and numerators
	near := []float32{0x1p-60, 0x1.fffffep-61, 0x1.fffffep59, 0x1p60, -0x1p-60, -0x1.fffffep59}
	divisors := append(append(irtest.Edges(), 3, 1.5, 1023.75, 7e-39, 0x1p-126, 0x1p127, 1e-30, -5e20, 1.9999999), near...)
	pa, _ := irtest.DivPairs(7, 1<<14)
	r := rand.New(rand.NewPCG(7, 35))
	var as, bs []float32
	for _, d := range divisors {
		row := append(append([]float32{}, irtest.Edges()...), near...)
		for len(row) < cols/2 {
			p := float32(r.Float64()+1) * d
			u := math.Float32bits(p)
			row = append(row, p, math.Float32frombits(u+1), math.Float32frombits(u-1))
		}
		for len(row) < cols {
			row = append(row, pa[r.IntN(len(pa))])
		}
		as = append(as, row[:cols]...)
		at := r.IntN(cols)
		for i := range cols {
			v := float32(math.Inf(-1))
			if i == at {
				v = d
			}
			bs = append(bs, v)
		}
	}
	shape := ir.Shape{len(divisors), cols}
	b := ir.NewBuilder()
	b.Output("y", b.Input(shape, as).Div(b.Input(shape, bs).MaxAxes(true, 1)))
	g, err := b.Build(ir.Limits{NonFinite: true})
	if err != nil {
		t.Fatal(err)
	}
	want, flushed := cpuref.Eval(g)[g.Outputs[0].ID], cpuref.EvalFlushed(g)[g.Outputs[0].ID]
	canonical(map[string][]float32{"want": want, "flushed": flushed})
	// The default workgroup and the others a visit may time
	// (wgsl.RowThreads): 128 was the default until this test failed on
	// the H100 in a process that had opened the GL adapter (2026-12-05).
	threads := []int{wgsl.RowThreads}
	for _, n := range []int{64, 128, 256} {
		if !slices.Contains(threads, n) {
			threads = append(threads, n)
		}
	}
	type knobs struct{ fast, lazy bool }
	for _, n := range threads {
		for _, k := range []knobs{{true, false}, {false, false}, {true, true}} {
			t.Run(fmt.Sprintf("threads=%d/divfast=%t/partslazy=%t", n, k.fast, k.lazy), func(t *testing.T) {
				defer func(v, lazy bool, n int) {
					wgsl.RowDivFast, wgsl.RowPartsLazy, wgsl.RowThreads = v, lazy, n
				}(wgsl.RowDivFast, wgsl.RowPartsLazy, wgsl.RowThreads)
				wgsl.RowDivFast, wgsl.RowPartsLazy, wgsl.RowThreads = k.fast, k.lazy, n
				res, err := rt.Run(context.Background(), g)
				if err != nil {
					t.Fatal(err)
				}
				got, bad := res.Outputs["y"].Data, 0
				for i := range want {
					if g := math.Float32bits(got[i]); g != math.Float32bits(want[i]) && g != math.Float32bits(flushed[i]) {
						if bad++; bad <= 10 {
							t.Errorf("%#08x / row %d's %#08x: %#08x, cpuref %#08x", math.Float32bits(as[i]), i/cols,
								math.Float32bits(divisors[i/cols]), g, math.Float32bits(want[i]))
						}
					}
				}
			})
		}
	}
}

// TestRowMax: a rows kernel's max (reduced by order keys, RowMaxKeys, or
// by maximum; with RowVec4's vec4 loads and stores or without) and what
// reads it, x - max(x) and softmax, against cpuref's
// bits on webgpu with ir.Limits.NonFinite, over rows of 1024 and 1000
// leaves (padded with -Inf) that are all -0, mixed ±0 (+0 wins), all
// -Inf, NaNs of both signs among numbers, ±Inf, subnormals only, large
// negatives, and random values: x - max shows a zero max's sign.
func TestRowMax(t *testing.T) {
	rt := open(t, "webgpu", func(o *gpucc.Options) { o.Limits = ir.Limits{NonFinite: true} })
	inf, nan := float32(math.Inf(1)), math.Float32frombits(0x7fc00000)
	for _, cols := range []int{1024, 1000} {
		r := rand.New(rand.NewPCG(uint64(cols), 11))
		rows := []func(i int) float32{
			func(int) float32 { return float32(math.Copysign(0, -1)) },
			func(i int) float32 { return float32(math.Copysign(0, float64(i%2*2-1))) },
			func(int) float32 { return -inf },
			func(i int) float32 { return [...]float32{1, -nan, 3, nan, -inf}[i%5] },
			func(i int) float32 { return [...]float32{-2, inf, 7, -inf}[i%4] },
			func(int) float32 { return math.Float32frombits(r.Uint32() & 0x807fffff) },
			func(int) float32 { return -3e38 * float32(r.Float64()) },
			func(int) float32 { return float32(r.NormFloat64()) },
			func(i int) float32 { // one NaN, late
				if i == cols-1 {
					return math.Float32frombits(0xffc00001)
				}
				return 1
			},
		}
		shape := ir.Shape{len(rows), cols}
		var xs []float32
		for _, f := range rows {
			for i := range cols {
				xs = append(xs, f(i))
			}
		}
		for _, knobs := range [][2]bool{{true, false}, {false, false}, {true, true}, {false, true}} {
			keys, vec4 := knobs[0], knobs[1]
			name := fmt.Sprintf("%d/keys=%t", cols, keys)
			if vec4 {
				name += ",vec4=true"
			}
			t.Run(name, func(t *testing.T) {
				defer func(v, w bool) { wgsl.RowMaxKeys, wgsl.RowVec4 = v, w }(wgsl.RowMaxKeys, wgsl.RowVec4)
				wgsl.RowMaxKeys, wgsl.RowVec4 = keys, vec4
				b := ir.NewBuilder()
				x := b.Input(shape, xs)
				b.Output("d", x.Sub(x.MaxAxes(true, 1)))
				b.Output("softmax", x.Softmax(1))
				g, err := b.Build(ir.Limits{NonFinite: true})
				if err != nil {
					t.Fatal(err)
				}
				checkNonFinite(t, rt, g)
			})
		}
	}
}

// TestRowThreads: a rows kernel's workgroup size (wgsl.RowThreads: 32, 64,
// 128 and 256, with no other size for cheap leaves: wgsl.RowCheapThreads
// off) changes its schedule, never its bits:
// random row graphs and softmax, log-softmax and layer norm over extremes
// and random values, rows from 33 to 4096 leaves (a workgroup a row from
// RowThreads padded leaves on, more threads where one would hold more than
// 16 leaves), against cpuref on webgpu.
func TestRowThreads(t *testing.T) {
	rt := open(t, "webgpu")
	defer func(n, c int) { wgsl.RowThreads, wgsl.RowCheapThreads = n, c }(wgsl.RowThreads, wgsl.RowCheapThreads)
	wgsl.RowCheapThreads = 0 // every kernel at RowThreads, layer norm's too (the default runs it at 128)
	threads, shapes := []int{32, 64, 128, 256}, []ir.Shape{{5, 33}, {3, 100}, {3, 1000}, {3, 1024}, {2, 4096}}
	if testing.Short() {
		threads, shapes = []int{64}, []ir.Shape{{3, 100}, {3, 1024}, {2, 4096}}
	}
	for _, n := range threads {
		wgsl.RowThreads = n
		for _, s := range shapes {
			g, _ := irtest.RandomRows(uint64(n+s[1]), s)
			t.Run(fmt.Sprintf("%d/%v/random", n, s), func(t *testing.T) { checkRun(t, rt, g) })
			g = rowOpsGraph(t, s, ir.Limits{})
			t.Run(fmt.Sprintf("%d/%v/ops", n, s), func(t *testing.T) { checkRun(t, rt, g) })
		}
	}
}

// rowOpsGraph is the benchmarks' row ops (softmax, log-softmax, layer
// norm) over rows of shape s, of extremes (±3e38, subnormals, equal
// values) and of random values.
func rowOpsGraph(t *testing.T, s ir.Shape, lim ir.Limits) *ir.Graph {
	t.Helper()
	b := ir.NewBuilder()
	x := b.Input(s, irtest.Extremes(9, s.Len()))
	y := b.Input(s, irtest.Values(10, s.Len(), 30))
	for i, v := range []ir.Tensor{x, y} {
		b.Output(fmt.Sprint("softmax", i), v.Softmax(1))
		b.Output(fmt.Sprint("log_softmax", i), v.LogSoftmax(1))
		b.Output(fmt.Sprint("layer_norm", i), v.LayerNorm(1, 1e-5))
	}
	g, err := b.Build(lim)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

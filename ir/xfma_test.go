package ir_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// The fused twins (ir.Fused, ir.DivRowFastFused) must give the table
// functions' bits on every input: cpuref evaluates ir.XFma with one
// rounding, as a device whose probe found its fma fused computes it.
// Every unary op that calls one of the replaced functions is compared over
// a sweep of float32 inputs (every 65521st; every input with
// GPUCC_XMATH_ALL=1, and outside -short every 16th input that reaches
// tanh's division, |x| in [0.625, 9.1)); division over its random, hard and edge
// pairs (irtest.DivPairs) and quotients next to powers of two, unflushed
// and flushed.

// fusedOf returns x with every call of a function that has a fused twin
// calling the twin, and with each function that calls one (tanh, say)
// rewritten likewise; and whether anything changed.
func fusedOf(x *ir.X) (*ir.X, bool) {
	twins := ir.Fused()
	memo := map[*ir.X]*ir.X{}
	any := false
	var walk func(*ir.X) *ir.X
	walk = func(y *ir.X) *ir.X {
		if z, ok := memo[y]; ok {
			return z
		}
		z := *y
		z.Args = make([]*ir.X, len(y.Args))
		for i, a := range y.Args {
			z.Args[i] = walk(a)
		}
		if y.Op == ir.XCall {
			if tw, ok := twins[y.Fn.Name]; ok {
				z.Fn, any = tw, true
			} else if body, changed := fusedOf(y.Fn.Body); changed {
				z.Fn, any = &ir.Func{Name: y.Fn.Name + "_fused", Params: y.Fn.Params, Body: body}, true
			}
		}
		memo[y] = &z
		return &z
	}
	return walk(x), any
}

// unfused returns x with every fma computed as a product and a sum, each
// rounded: what a driver that does not fuse fma() gives (lavapipe's).
func unfused(x *ir.X) *ir.X {
	memo := map[*ir.X]*ir.X{}
	var walk func(*ir.X) *ir.X
	walk = func(y *ir.X) *ir.X {
		if z, ok := memo[y]; ok {
			return z
		}
		args := make([]*ir.X, len(y.Args))
		for i, a := range y.Args {
			args[i] = walk(a)
		}
		var z *ir.X
		switch y.Op {
		case ir.XFma:
			z = args[0].Mul(args[1]).Add(args[2])
		case ir.XCall:
			z = ir.Call(&ir.Func{Name: y.Fn.Name + "_unfused", Params: y.Fn.Params, Body: walk(y.Fn.Body)}, args...)
		default:
			c := *y
			c.Args = args
			z = &c
		}
		memo[y] = z
		return z
	}
	return walk(x)
}

// fusedOps returns the float ops whose expressions call a function that
// has a fused twin, unary and binary, with their fused forms.
func fusedOps() (unary, binary []ir.Op, fused map[ir.Op]*ir.X) {
	fused = map[ir.Op]*ir.X{}
	for _, op := range ir.Ops() {
		info := op.Info()
		if info.Expr == nil || info.Scalar {
			continue
		}
		f, ok := fusedOf(info.Expr)
		if !ok {
			continue
		}
		fused[op] = f
		if info.Args == 1 {
			unary = append(unary, op)
		} else {
			binary = append(binary, op)
		}
	}
	return unary, binary, fused
}

// TestFusedUnary: every unary op that divides (rsqrt, tanh, sigmoid, …)
// gives the table's bits with its division's fused twin, on every input of
// the sweep, unflushed and flushed.
func TestFusedUnary(t *testing.T) {
	unary, _, fused := fusedOps()
	names := map[ir.Op]bool{}
	for _, op := range unary {
		names[op] = true
	}
	if !names[ir.OpTanh] || !names[ir.OpSigmoid] {
		t.Fatalf("unary ops calling a function with a fused twin: %v, want tanh and sigmoid among them", unary)
	}
	stride := uint64(65521)
	if exhaustive() {
		stride = 1
	}
	// tanh's division's inputs, |x| in [0.625, 9.1): every 16th outside
	// -short (4.5M inputs)
	var ranges [][3]uint32
	if !testing.Short() && !exhaustive() {
		ranges = [][3]uint32{{0x3f200000, 0x4111999a, 16}, {0xbf200000, 0xc111999a, 16}}
	}
	for _, op := range unary {
		t.Run(op.String(), func(t *testing.T) {
			rs := ranges
			if op != ir.OpTanh {
				rs = nil
			}
			n := sweepEqual(t, op.String(), fused[op], op.Info().Expr, stride, rs)
			t.Logf("%d inputs", n)
		})
	}
}

// sweepEqual compares expressions got and want on the edges, every
// stride-th float32 and every step-th float32 of ranges (bits [lo, hi),
// step), unflushed
// and flushed, on every core, and returns how many inputs it compared.
func sweepEqual(t *testing.T, name string, got, want *ir.X, stride uint64, ranges [][3]uint32) int {
	t.Helper()
	const chunk = 1 << 16
	type span struct{ lo, hi, step uint64 }
	spans := []span{{0, 1 << 32, stride}}
	for _, r := range ranges {
		spans = append(spans, span{uint64(r[0]), uint64(r[1]), uint64(r[2])})
	}
	var mu sync.Mutex
	var bad []string
	count := 0
	check := func(xs []float32, g, w []float32) {
		for _, flush := range []bool{false, true} {
			cpuref.EvalXSlice(got, g, xs, nil, flush)
			cpuref.EvalXSlice(want, w, xs, nil, flush)
			for i := range xs {
				if !same(g[i], w[i]) {
					mu.Lock()
					if len(bad) < 10 {
						bad = append(bad, fmt.Sprintf("%s(%#08x) flush=%v: fused %#08x, table %#08x", name, math.Float32bits(xs[i]), flush, math.Float32bits(g[i]), math.Float32bits(w[i])))
					}
					mu.Unlock()
				}
			}
		}
		mu.Lock()
		count += len(xs)
		mu.Unlock()
	}
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			xs := make([]float32, 0, chunk)
			g, o := make([]float32, chunk), make([]float32, chunk)
			flush := func() {
				check(xs, g[:len(xs)], o[:len(xs)])
				xs = xs[:0]
			}
			if w == 0 {
				xs = append(xs, irtest.Edges()...)
			}
			for _, s := range spans {
				for b := s.lo + uint64(w)*s.step; b < s.hi; b += s.step * uint64(workers) {
					xs = append(xs, math.Float32frombits(uint32(b)))
					if len(xs) == chunk {
						flush()
					}
				}
			}
			flush()
		}()
	}
	wg.Wait()
	for _, s := range bad {
		t.Error(s)
	}
	return count
}

// fusedPairs returns division's random, hard and edge pairs
// (irtest.DivPairs) and pairs whose quotient is a power of two or next to
// one, from subnormal to overflowing: a = b·2^k and its neighbours.
func fusedPairs(n int) (as, bs []float32) {
	as, bs = irtest.DivPairs(7, n)
	r := rand.New(rand.NewPCG(7, 35))
	for range n / 16 {
		b := math.Float32frombits(r.Uint32()&0x807fffff | uint32(1+r.IntN(253))<<23)
		k := r.IntN(300) - 150
		ab := math.Float32bits(float32(float64(b) * math.Ldexp(1, k)))
		if ab&0x7f800000 == 0x7f800000 {
			continue
		}
		for d := -2; d <= 2; d++ {
			as, bs = append(as, math.Float32frombits(ab+uint32(d))), append(bs, b)
		}
	}
	return as, bs
}

// TestFusedDivision: div's fused twin gives div's bits (and IEEE's) on
// division's pairs, unflushed and flushed; every binary op that divides
// does too.
func TestFusedDivision(t *testing.T) {
	n := 1 << 18
	if !testing.Short() {
		n = 1 << 20
	}
	as, bs := fusedPairs(n)
	_, binary, fused := fusedOps()
	if len(binary) == 0 || fused[ir.OpDiv] == nil {
		t.Fatalf("binary ops calling a function with a fused twin: %v, want div among them", binary)
	}
	got, want := make([]float32, len(as)), make([]float32, len(as))
	for _, op := range binary {
		for _, flush := range []bool{false, true} {
			cpuref.EvalXSlice(fused[op], got, as, bs, flush)
			cpuref.EvalXSlice(op.Info().Expr, want, as, bs, flush)
			bad := 0
			for i := range as {
				ok := same(got[i], want[i])
				if op == ir.OpDiv && !flush {
					q := as[i] / bs[i]
					if q != q {
						q = math.Float32frombits(0x7fc00000)
					}
					ok = ok && same(got[i], q)
				}
				if !ok {
					if bad++; bad <= 10 {
						t.Errorf("%s(%#08x, %#08x) flush=%v: fused %#08x, table %#08x", op, math.Float32bits(as[i]), math.Float32bits(bs[i]), flush,
							math.Float32bits(got[i]), math.Float32bits(want[i]))
					}
				}
			}
		}
	}
	t.Logf("%d pairs, ops %v", len(as), binary)
}

// divRowFusedExpr is divRowExpr with DivRowFastFused.
func divRowFusedExpr() *ir.X {
	b := ir.Arg(1)
	fast := ir.Call(ir.DivRowFastFused, ir.Arg(0), b, ir.Call(ir.DivRowB, b), ir.Call(ir.DivRowY, b),
		ir.Call(ir.DivRowHi, b), ir.Call(ir.DivRowLo, b), ir.Call(ir.DivRowE, b))
	return ir.If(ir.Call(ir.DivRowOK, b).Eq(ir.F(1)), fast, ir.F(0))
}

// TestDivRowFastFused: the rows kernels' per-leaf division by a shared
// divisor gives DivRowFast's bits (div's, or the +0 that sends a leaf to
// div) fused, on division's pairs and softmax-like rows, unflushed and
// flushed.
func TestDivRowFastFused(t *testing.T) {
	n := 1 << 18
	if !testing.Short() {
		n = 1 << 20
	}
	as, bs := fusedPairs(n)
	for _, b := range []float32{1, 1.5, 3, 1023.75, 1024, 0x1p-126, 0x1.fffffep127} {
		for i := 0; i < 4096; i++ {
			a := float32(math.Exp(-float64(i) / 256))
			as, bs = append(as, a, -a, a*0x1p-100, a*0x1p100), append(bs, b, b, b, b)
		}
	}
	got, want := make([]float32, len(as)), make([]float32, len(as))
	for _, flush := range []bool{false, true} {
		cpuref.EvalXSlice(divRowFusedExpr(), got, as, bs, flush)
		cpuref.EvalXSlice(divRowExpr(), want, as, bs, flush)
		bad := 0
		for i := range as {
			if !same(got[i], want[i]) {
				if bad++; bad <= 10 {
					t.Errorf("%#08x / %#08x flush=%v: fused %#08x, DivRowFast %#08x", math.Float32bits(as[i]), math.Float32bits(bs[i]), flush,
						math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
	t.Logf("%d pairs", len(as))
}

// TestFusedNeedsOneRounding: the twins are wrong where fma rounds twice
// (a driver that renders fma() as a product and a sum, as lavapipe does),
// so a target may use them only where a probe has seen fma fused.
func TestFusedNeedsOneRounding(t *testing.T) {
	as, bs := fusedPairs(1 << 16)
	got, want := make([]float32, len(as)), make([]float32, len(as))
	cpuref.EvalXSlice(unfused(divRowFusedExpr()), got, as, bs, false)
	cpuref.EvalXSlice(divRowExpr(), want, as, bs, false)
	bad := 0
	for i := range as {
		if !same(got[i], want[i]) {
			bad++
		}
	}
	if bad == 0 {
		t.Fatalf("the fused division rounding fma twice gave div's bits on all %d pairs: the test no longer shows why a probe is needed", len(as))
	}
	t.Logf("fma rounded twice: %d of %d quotients wrong", bad, len(as))
}

// TestFusedCounts logs the expression nodes of each twin beside its
// table function: float arithmetic and fma, u32 operations, selects,
// compares.
func TestFusedCounts(t *testing.T) {
	count := func(x *ir.X) (fl, fma, u, sel, cmp int) {
		for _, n := range ir.Inline(x).Nodes() {
			switch {
			case n.Arithmetic():
				fl++
			case n.Op == ir.XFma:
				fma++
			case n.Op == ir.XSelect:
				sel++
			case n.Op == ir.XGt || n.Op == ir.XGe || n.Op == ir.XEq || n.Op == ir.XULt || n.Op == ir.XUEq:
				cmp++
			case n.Op == ir.XUAdd || n.Op == ir.XUSub || n.Op == ir.XAnd || n.Op == ir.XOr || n.Op == ir.XXor || n.Op == ir.XShl || n.Op == ir.XShr:
				u++
			}
		}
		return
	}
	var divNormal *ir.Func
	for _, f := range ir.OpTanh.Info().Expr.Funcs() {
		if f.Name == "div_normal" {
			divNormal = f
		}
	}
	pairs := [][2]*ir.Func{{ir.DivRowFast, ir.DivRowFastFused}, {ir.DivFn, ir.Fused()[ir.DivFn.Name]}, {divNormal, ir.Fused()["div_normal"]}}
	for _, p := range pairs {
		for _, f := range p {
			fl, fma, u, sel, cmp := count(f.Body)
			t.Logf("%s: %d float, %d fma, %d u32, %d selects, %d compares", f.Name, fl, fma, u, sel, cmp)
		}
	}
}

// TestFusedUnaryC: every unary op that divides, in the C the generators
// emit, with each division computed both ways (the table's function and
// its fused twin, C's fmaf rounding once): the op's result is the table's,
// and every division it makes gives the twin the same bits, so the op's
// fused form equals its table form on that input. Every 4093rd input,
// and outside -short every input of tanh's division range (|x| in
// [0.625, 9.1), 72M: 73 s here); all 2^32 with GPUCC_XMATH_ALL=1 (GPUCC_XMATH_OPS=tanh,sigmoid
// limits the ops). All 2^32 inputs of all eight ops passed on 2026-12-04
// at 3975002's twins, 2 cores shared with 8 engineers: tanh and sigmoid
// 1083 s, rsqrt and tan 1120 s, atan and sinh 1236 s, cosh and atanh 550 s.
func TestFusedUnaryC(t *testing.T) {
	unary, _, _ := fusedOps()
	if only := os.Getenv("GPUCC_XMATH_OPS"); only != "" {
		unary = slices.DeleteFunc(unary, func(op ir.Op) bool { return !slices.Contains(strings.Split(only, ","), op.String()) })
	}
	lang := cLang()
	lang.Native = map[string]string{}
	var fs []*ir.Func
	for name, twin := range ir.Fused() {
		var table *ir.Func
		for _, op := range []ir.Op{ir.OpDiv, ir.OpTanh} {
			for _, f := range op.Info().Expr.Funcs() {
				if f.Name == name {
					table = f
				}
			}
		}
		if table == nil {
			t.Fatalf("no table function %s", name)
		}
		fs = append(fs, &ir.Func{Name: name + "_table", Params: table.Params, Body: table.Body}, &ir.Func{Name: name + "_twin", Params: twin.Params, Body: twin.Body})
		lang.Native[name] = fmt.Sprintf(`static inline float prim_%[1]s(float p0, float p1) {
	float t = prim_%[1]s_table(p0, p1), f = prim_%[1]s_twin(p0, p1);
	if (B(t) != B(f)) differ(%[1]q, B(p0), B(p1), f, t);
	return t;
}`, name)
	}
	seen := map[*ir.Func]bool{}
	var calls strings.Builder
	for _, op := range unary {
		f := &ir.Func{Name: "op_" + op.String(), Params: 2, Body: op.Info().Expr}
		for _, g := range append(f.Body.Funcs(), f) {
			if !seen[g] {
				seen[g] = true
				fs = append(fs, g)
			}
		}
		fmt.Fprintf(&calls, "\t\tprim_op_%s(x, 0);\n", op)
	}
	src := cPrelude + "#include <math.h>\n" + strings.Join(codegen.Define(lang, fs, 0), "\n") + `
static void sweep(uint64_t lo, uint64_t hi, uint64_t stride, uint64_t shard, uint64_t shards) {
	for (uint64_t i = lo + shard * stride; i < hi; i += stride * shards) {
		float x = F((u32)i);
` + calls.String() + `	}
}
int main(int argc, char **argv) {
	uint64_t stride = atoll(argv[1]), shard = atoll(argv[3]), shards = atoll(argv[4]);
	sweep(0, 0x100000000ull, stride, shard, shards);
	if (atoi(argv[2])) { /* tanh's division range, both signs */
		sweep(0x3f200000u, 0x4111999au, 1, shard, shards);
		sweep(0xbf200000u, 0xc111999au, 1, shard, shards);
	}
	return bad != 0;
}
`
	stride, tanhRange := "4093", "1"
	if testing.Short() {
		tanhRange = "0"
	}
	if exhaustive() {
		stride, tanhRange = "1", "0"
	}
	runShards(t, buildC(t, src, "-lm"), stride, tanhRange)
}

// TestDivRowRecip: DivRowRecip is RN(1/|b|) for every significand of b,
// at the ends of its exponent range and between, and +0 outside it.
func TestDivRowRecip(t *testing.T) {
	stride := uint32(1)
	if testing.Short() {
		stride = 61
	}
	var bs []float32
	for s := uint32(0); s < 1<<23; s += stride {
		for _, e := range []uint32{67, 126, 127, 128, 186} { // 2^-60, 2^-1, 1, 2, 2^59
			bs = append(bs, math.Float32frombits(e<<23|s), math.Float32frombits(signBit|e<<23|s))
		}
	}
	// the one significand Newton's steps miss (2 - 2^-23), then the range's edges
	bs = append(bs, 1.9999999, 0x1.fffffep-60, -0x1.fffffep59, 0x1.fffffep-61, 0x1p60, 0, float32(math.Inf(1)), 0x1p-126, 0x1p-149, float32(math.NaN()))
	got := make([]float32, len(bs))
	for _, flush := range []bool{false, true} {
		cpuref.EvalXSlice(ir.Call(ir.DivRowRecip, ir.Arg(0)), got, bs, bs, flush)
		bad := 0
		for i, b := range bs {
			want := float32(0)
			if m := math.Float32bits(b) &^ signBit; m >= 0x21800000 && m < 0x5d800000 {
				want = 1 / float32(math.Abs(float64(b)))
			}
			if !same(got[i], want) {
				if bad++; bad <= 10 {
					t.Errorf("1/|%#08x| flush=%v: %#08x, want %#08x", math.Float32bits(b), flush, math.Float32bits(got[i]), math.Float32bits(want))
				}
			}
		}
	}
}

const signBit = 0x80000000

// TestDivRowNear: DivRowNear gives div's bits (IEEE's) wherever a rows
// kernel takes it (DivRowIn(a) = 1, DivRowRecip(b) ≠ +0): on division's
// pairs, softmax-like rows, and every divisor significand against
// numerators near the quotients' rounding midpoints, unflushed and
// flushed.
func TestDivRowNear(t *testing.T) {
	n := 1 << 18
	stride := 7
	if testing.Short() {
		n, stride = 1<<16, 127
	}
	as, bs := fusedPairs(n)
	for _, b := range []float32{1, 1.5, 3, 1023.75, 1024, 0x1p-60, 0x1.fffffep59, -7} {
		for i := 0; i < 4096; i++ {
			a := float32(math.Exp(-float64(i) / 64))
			as, bs = append(as, a, -a, 0, float32(math.Copysign(0, -1))), append(bs, b, b, b, b)
		}
	}
	r := rand.New(rand.NewPCG(3, 60))
	for s := 0; s < 1<<23; s += stride {
		b := math.Float32frombits(uint32(1+r.IntN(253))<<23 | uint32(s))
		for range 4 {
			// a = RN(m·b) for a midpoint m of [1, 2)'s floats, and its neighbours
			m := 1 + (float64(r.Uint32()&0x7fffff)+0.5)/(1<<23)
			a := math.Float32bits(float32(m * float64(b)))
			for d := uint32(0); d < 3; d++ {
				as, bs = append(as, math.Float32frombits(a+d-1)), append(bs, b)
			}
		}
	}
	near := ir.Call(ir.DivRowNear, ir.Arg(0), ir.Arg(1), ir.Call(ir.DivRowRecip, ir.Arg(1)))
	in, y := make([]float32, len(as)), make([]float32, len(as))
	cpuref.EvalXSlice(ir.Call(ir.DivRowIn, ir.Arg(0)), in, as, bs, false)
	cpuref.EvalXSlice(ir.Call(ir.DivRowRecip, ir.Arg(0)), y, bs, bs, false)
	var na, nb []float32
	for i := range as {
		m := math.Float32bits(as[i]) &^ signBit
		wantIn := m == 0 || m >= 0x21800000 && m < 0x5d800000
		if (in[i] == 1) != wantIn {
			t.Fatalf("DivRowIn(%#08x) = %v, want %v", math.Float32bits(as[i]), in[i], wantIn)
		}
		if wantIn && y[i] != 0 {
			na, nb = append(na, as[i]), append(nb, bs[i])
		}
	}
	if len(na) < len(as)/4 { // fusedPairs' exponents are spread wide
		t.Fatalf("only %d of %d pairs in DivRowNear's range", len(na), len(as))
	}
	got, want := make([]float32, len(na)), make([]float32, len(na))
	for _, flush := range []bool{false, true} {
		cpuref.EvalXSlice(near, got, na, nb, flush)
		cpuref.EvalXSlice(ir.OpDiv.Info().Expr, want, na, nb, flush)
		bad := 0
		for i := range na {
			if q := na[i] / nb[i]; !same(got[i], want[i]) || !same(got[i], q) {
				if bad++; bad <= 10 {
					t.Errorf("%#08x / %#08x flush=%v: %#08x, div %#08x, IEEE %#08x", math.Float32bits(na[i]), math.Float32bits(nb[i]), flush,
						math.Float32bits(got[i]), math.Float32bits(want[i]), math.Float32bits(q))
				}
			}
		}
	}
	t.Logf("%d of %d pairs in range", len(na), len(as))
}

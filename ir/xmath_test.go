package ir_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// The float definitions of division and square root (xmath.go) replaced
// integer ones (kept as the oracle in xmath_oracle_test.go) and must give
// the same bits for every input. The tests below compare, for every op of
// the table that calls a replaced function, the op's expression with the
// same expression calling the old functions: every unary op over every
// float32 input, div over random, hard and edge pairs; in Go (cpuref, also
// flushing subnormals as a GPU may) and in C (the code the generators
// emit, built with the system compiler).
//
// GPUCC_XMATH_ALL=1 makes the unary sweeps exhaustive (all 2^32 inputs,
// in Go and in C, on every core; in C here, on 2 shared cores, exp and log
// took 465 s, tanh 1251 s) and div's random pairs 2^30 in C; by default,
// in both tiers, they take every 65521st input (every 4093rd in C) and
// div 2^18 pairs in Go (2^20 outside -short) and 2^22 in C, with the hard
// ones and the edges. GPUCC_XMATH_OPS=exp,log limits TestXMathUnaryC to the
// ops listed.

// exhaustive reports whether GPUCC_XMATH_ALL asks for every input.
func exhaustive() bool { return os.Getenv("GPUCC_XMATH_ALL") != "" }

// replaced maps each function the float definitions replaced to its oracle.
var replaced = map[*ir.Func]*ir.Func{ir.NewDiv: ir.OldDiv, ir.NewDivN: ir.OldDiv, ir.NewSqrt: ir.OldSqrt, ir.NewExp: ir.OldExp, ir.NewLog: ir.OldLog}

// oracle returns x with every call of a replaced function calling its
// oracle instead, and whether there was one.
func oracle(x *ir.X) (*ir.X, bool) {
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
			if old, ok := replaced[y.Fn]; ok {
				z.Fn, any = old, true
			} else if body, changed := oracle(y.Fn.Body); changed {
				z.Fn, any = &ir.Func{Name: "old_" + y.Fn.Name, Params: y.Fn.Params, Body: body}, true
			}
		}
		memo[y] = &z
		return &z
	}
	return walk(x), any
}

// oracleOps returns the float ops whose expressions call a replaced
// function, unary and binary, with their oracles.
func oracleOps() (unary, binary []ir.Op, old map[ir.Op]*ir.X) {
	old = map[ir.Op]*ir.X{}
	for _, op := range ir.Ops() {
		info := op.Info()
		if info.Expr == nil || info.Scalar {
			continue
		}
		o, ok := oracle(info.Expr)
		if !ok {
			continue
		}
		old[op] = o
		if info.Args == 1 {
			unary = append(unary, op)
		} else {
			binary = append(binary, op)
		}
	}
	return unary, binary, old
}

// halfwayExp returns the floats x whose x·log2 e rounds to a half-integer
// from -150.5 to 150.5, where exp's k rounds away from zero: a sparse
// sweep would miss them. Each is one of the 33 floats around (k + ½)/log2 e.
func halfwayExp() []float32 {
	var out []float32
	for k := -151; k <= 150; k++ {
		t := float32(k) + 0.5
		x := float32(float64(t) / math.Log2E)
		for d := -16; d <= 16; d++ {
			v := math.Float32frombits(uint32(int32(math.Float32bits(x)) + int32(d)))
			if v*float32(math.Log2E) == t {
				out = append(out, v)
			}
		}
	}
	return out
}

// same reports whether got is want's bits.
func same(got, want float32) bool { return math.Float32bits(got) == math.Float32bits(want) }

// TestXMathUnaryOracle: every unary op that calls division or square root
// (sqrt, rsqrt, tanh, sigmoid) gives its oracle's bits on every input of
// the sweep, evaluated by cpuref, unflushed and flushed.
func TestXMathUnaryOracle(t *testing.T) {
	unary, _, old := oracleOps()
	if len(unary) < 4 {
		t.Fatalf("unary ops calling a replaced function: %v, want sqrt, rsqrt, tanh and sigmoid at least", unary)
	}
	stride := uint64(65521)
	if exhaustive() {
		stride = 1
	}
	const chunk = 1 << 16
	for _, op := range unary {
		t.Run(op.String(), func(t *testing.T) {
			nx, ox := op.Info().Expr, old[op]
			var mu sync.Mutex
			var bad []string
			check := func(xs []float32, flush bool, n, o []float32) {
				cpuref.EvalXSlice(nx, n, xs, nil, flush)
				cpuref.EvalXSlice(ox, o, xs, nil, flush)
				for i := range xs {
					if !same(n[i], o[i]) {
						mu.Lock()
						if len(bad) < 10 {
							bad = append(bad, fmt.Sprintf("%s(%#08x) flush=%v: %#08x, oracle %#08x", op, math.Float32bits(xs[i]), flush, math.Float32bits(n[i]), math.Float32bits(o[i])))
						}
						mu.Unlock()
					}
				}
			}
			var wg sync.WaitGroup
			workers := runtime.GOMAXPROCS(0)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					xs := make([]float32, 0, chunk)
					n, o := make([]float32, chunk), make([]float32, chunk)
					flushAll := func() {
						for _, f := range []bool{false, true} {
							check(xs, f, n[:len(xs)], o[:len(xs)])
						}
						xs = xs[:0]
					}
					if w == 0 {
						xs = append(xs, irtest.Edges()...)
						xs = append(xs, halfwayExp()...)
					}
					for b := uint64(w) * stride; b < 1<<32; b += stride * uint64(workers) {
						xs = append(xs, math.Float32frombits(uint32(b)))
						if len(xs) == chunk {
							flushAll()
						}
					}
					flushAll()
				}()
			}
			wg.Wait()
			for _, s := range bad {
				t.Error(s)
			}
		})
	}
}

// TestXMathDivOracle: div gives its oracle's bits, and IEEE division's
// (Go's float32 quotient; NaN as the reference's quiet NaN), on random,
// hard and edge pairs, unflushed and flushed (the new definition does no
// arithmetic on a subnormal, so flushing changes nothing).
func TestXMathDivOracle(t *testing.T) {
	_, binary, old := oracleOps()
	if !slices.Contains(binary, ir.OpDiv) { // and pow, whose negative integer powers divide
		t.Fatalf("binary ops calling a replaced function: %v, want div among them", binary)
	}
	n := 1 << 18
	if !testing.Short() {
		n = 1 << 20
	}
	as, bs := irtest.DivPairs(1, n)
	nx, ox := ir.OpDiv.Info().Expr, old[ir.OpDiv]
	got, want := make([]float32, len(as)), make([]float32, len(as))
	bad := 0
	for _, flush := range []bool{false, true} {
		cpuref.EvalXSlice(nx, got, as, bs, flush)
		cpuref.EvalXSlice(ox, want, as, bs, flush)
		for i := range as {
			q := as[i] / bs[i]
			if q != q {
				q = math.Float32frombits(0x7fc00000)
			}
			if !same(got[i], want[i]) || !same(got[i], q) {
				if bad++; bad <= 10 {
					t.Errorf("%#08x / %#08x flush=%v: %#08x, oracle %#08x, IEEE %#08x", math.Float32bits(as[i]), math.Float32bits(bs[i]), flush,
						math.Float32bits(got[i]), math.Float32bits(want[i]), math.Float32bits(q))
				}
			}
		}
	}
	t.Logf("%d pairs", len(as))
}

// cLang is C's syntax without its native division and square root, so
// that both definitions are the expressions under test.
func cLang() codegen.Lang {
	l := c.Lang
	l.Native = nil
	return l
}

// cSource renders, for each op, "float prim_op_new_<op>(float, float)" (the op's
// expression) and "prim_op_old_<op>" (its oracle) with the functions they call.
func cSource(ops []ir.Op, old map[ir.Op]*ir.X) string {
	var fs []*ir.Func
	seen := map[*ir.Func]bool{}
	for _, op := range ops {
		for _, f := range []*ir.Func{{Name: "op_new_" + op.String(), Params: 2, Body: op.Info().Expr}, {Name: "op_old_" + op.String(), Params: 2, Body: old[op]}} {
			for _, g := range append(f.Body.Funcs(), f) {
				if !seen[g] {
					seen[g] = true
					fs = append(fs, g)
				}
			}
		}
	}
	return cPrelude + strings.Join(codegen.Define(cLang(), fs, 0), "\n")
}

const cPrelude = `#pragma STDC FP_CONTRACT OFF
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
typedef unsigned int u32;
static inline float F(u32 b) { union { u32 u; float f; } x; x.u = b; return x.f; }
static inline u32 B(float f) { union { u32 u; float f; } x; x.f = f; return x.u; }
static long bad;
static void differ(const char *op, u32 a, u32 b, float got, float want) {
	if (bad++ < 5) printf("%s(%#010x, %#010x): %#010x, oracle %#010x\n", op, a, b, B(got), B(want));
}
`

// buildC compiles src with the system C compiler (GPUCC_CC, else cc) as
// the native backend does (no contraction), linked with libs, or skips where there is none
// and GPUCC_REQUIRE_NATIVE is unset.
func buildC(t testing.TB, src string, libs ...string) string {
	t.Helper()
	cc := os.Getenv("GPUCC_CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		if os.Getenv("GPUCC_REQUIRE_NATIVE") != "" {
			t.Fatalf("GPUCC_REQUIRE_NATIVE is set but %v", err)
		}
		t.Skipf("no C compiler: %v", err)
	}
	dir := t.TempDir()
	file, bin := filepath.Join(dir, "x.c"), filepath.Join(dir, "x")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-O2", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", "-o", bin, file}, libs...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return bin
}

// runShards runs bin with its arguments and "shard shards" appended, once
// per core, and fails on any output (each line is a difference).
func runShards(t *testing.T, bin string, args ...string) {
	t.Helper()
	shards := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	outs := make([][]byte, shards)
	errs := make([]error, shards)
	for s := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[s], errs[s] = exec.Command(bin, append(args, strconv.Itoa(s), strconv.Itoa(shards))...).CombinedOutput()
		}()
	}
	wg.Wait()
	for s := range shards {
		if errs[s] != nil || len(outs[s]) > 0 {
			t.Errorf("shard %d: %v\n%s", s, errs[s], outs[s])
		}
	}
}

// TestXMathUnaryC: the same comparison as TestXMathUnaryOracle in the C
// the wasm and native generators emit (their native division and square
// root aside), every 4093rd input (every input with GPUCC_XMATH_ALL).
func TestXMathUnaryC(t *testing.T) {
	unary, _, old := oracleOps()
	if only := os.Getenv("GPUCC_XMATH_OPS"); only != "" {
		unary = slices.DeleteFunc(unary, func(op ir.Op) bool { return !slices.Contains(strings.Split(only, ","), op.String()) })
	}
	var calls strings.Builder
	for _, op := range unary {
		fmt.Fprintf(&calls, "\t\t{ float n = prim_op_new_%[1]s(x, 0), o = prim_op_old_%[1]s(x, 0); if (B(n) != B(o)) differ(%[1]q, B(x), 0, n, o); }\n", op.String())
	}
	src := cSource(unary, old) + `
int main(int argc, char **argv) {
	uint64_t stride = atoll(argv[1]), shard = atoll(argv[2]), shards = atoll(argv[3]);
	for (uint64_t i = shard * stride; i < 0x100000000ull; i += stride * shards) {
		float x = F((u32)i);
` + calls.String() + `	}
	return bad != 0;
}
`
	stride := "4093"
	if exhaustive() {
		stride = "1"
	}
	runShards(t, buildC(t, src), stride)
}

// TestXMathDivC: div's expression gives its oracle's bits and the C
// compiler's IEEE quotient's (NaN aside) on random pairs of every kind the
// Go test draws, in C: 2^22 random pairs in all, split over the shards
// (2^30 with GPUCC_XMATH_ALL), and a quarter as many near midpoints, an
// eighth as many subnormal operands and subnormal ties, every exponent pair.
func TestXMathDivC(t *testing.T) {
	_, binary, old := oracleOps()
	src := cSource(binary, old) + `
static u32 s;
static u32 rnd(void) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; return s; }
static u32 fin(u32 b) { return (b & 0x7f800000u) == 0x7f800000u ? b & ~0x40000000u : b; }
static void check(float a, float b) {
	float n = prim_op_new_div(a, b), o = prim_op_old_div(a, b), q = a / b;
	if (q != q) q = F(0x7fc00000u);
	if (B(n) != B(o) || B(n) != B(q)) differ("div", B(a), B(b), n, o);
}
int main(int argc, char **argv) {
	long samples = atol(argv[1]), shard = atol(argv[2]), shards = atol(argv[3]);
	s = 2463534242u + 7919u * (u32)shard;
	samples /= shards;
	for (long i = 0; i < samples; i++) check(F(fin(rnd())), F(fin(rnd())));
	for (long i = 0; i < samples / 4; i++) {
		float b = F(fin(rnd())), q = F(fin(rnd()) & 0xbfffffffu);
		u32 ab = B(b * q);
		for (int d = -2; d <= 2; d++) check(F(ab + d), b);
	}
	for (long i = 0; i < samples / 8; i++) {
		check(F(rnd() & 0x807fffffu), F(fin(rnd())));
		check(F(fin(rnd())), F(rnd() & 0x807fffffu));
		/* a/b at and next to 2^-150 times an odd number: subnormal ties */
		float b = F((rnd() & 0x807fffffu) | (1u + rnd() % 253u) << 23);
		double m = (double)(2 * (rnd() % (1u << (1 + rnd() % 23))) + 1) * 0x1p-150;
		u32 ab = B((float)(m * (double)b));
		for (int d = -2; d <= 2; d++) check(F(ab + d), b);
	}
	for (u32 ea = (u32)shard; ea < 255; ea += (u32)shards) for (u32 eb = 0; eb < 255; eb++) {
		u32 m[] = {0, 1, 0x7fffff, 0x400000, 0x555555, 0x2aaaaa, rnd() & 0x7fffff};
		for (int i = 0; i < 7; i++) for (int j = 0; j < 7; j++) check(F(ea << 23 | m[i]), F(eb << 23 | m[j] | (rnd() & 0x80000000u)));
	}
	return bad != 0;
}
`
	samples := "4194304"
	if exhaustive() {
		samples = "1073741824"
	}
	runShards(t, buildC(t, src), samples)
}

// BenchmarkXMathC times, in the C the wasm and native generators emit, each
// op that calls a replaced function in its new form, its oracle's and, for
// div and sqrt, the C compiler's IEEE instruction (what native and wasm
// run): CPU ns per element over 4096 random operands, one process per
// sub-benchmark, all built in one unit, so the ratios are side by side:
//
//	go test -run '^$' -bench XMathC -benchtime 2000x ./ir/
func BenchmarkXMathC(b *testing.B) {
	unary, binary, old := oracleOps()
	ops := append(binary, unary...)
	var cases strings.Builder
	for _, op := range ops {
		for _, v := range []string{"new", "old"} {
			fmt.Fprintf(&cases, "\tif (!strcmp(argv[1], \"%[1]s/%[2]s\")) for (long r = 0; r < reps; r++) for (int i = 0; i < N; i++) out[i] = prim_op_%[2]s_%[1]s(a[i], b[i]);\n", op, v)
		}
	}
	src := cSource(ops, old) + `
#include <string.h>
#include <time.h>
#define N 4096
static float a[N], b[N], out[N];
int main(int argc, char **argv) {
	long reps = atol(argv[2]);
	u32 s = 2463534242u;
	for (int i = 0; i < N; i++) {
		s ^= s << 13; s ^= s >> 17; s ^= s << 5; a[i] = F(0x3f800000u | (s & 0x7fffff)) * F(0x41000000u) - F(0x40800000u);
		s ^= s << 13; s ^= s >> 17; s ^= s << 5; b[i] = F(0x3f800000u | (s & 0x7fffff));
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
` + cases.String() + `	if (!strcmp(argv[1], "div/ieee")) for (long r = 0; r < reps; r++) for (int i = 0; i < N; i++) out[i] = a[i] / b[i];
	if (!strcmp(argv[1], "sqrt/ieee")) for (long r = 0; r < reps; r++) for (int i = 0; i < N; i++) out[i] = __builtin_sqrtf(b[i]);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	float sum = 0;
	for (int i = 0; i < N; i++) sum += out[i];
	printf("%.4f %g\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / ((double)reps * N), sum);
	return 0;
}
`
	bin := buildC(b, src)
	names := []string{"div/ieee", "sqrt/ieee"}
	for _, op := range ops {
		names = append(names, op.String()+"/new", op.String()+"/old")
	}
	slices.Sort(names)
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			out, err := exec.Command(bin, name, strconv.Itoa(b.N)).Output()
			if err != nil {
				b.Fatal(err)
			}
			ns, err := strconv.ParseFloat(strings.Fields(string(out))[0], 64)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(ns, "ns/elem")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// TestXMathExpIntegerK: ir.ExpIntegerK, which C runs as exp, gives the
// table's exp's bits on the sweep's inputs in cpuref, flushed or not, and
// in C on every 4093rd float32 (every one with GPUCC_XMATH_ALL).
func TestXMathExpIntegerK(t *testing.T) {
	nx, ix := ir.OpExp.Info().Expr, ir.Call(ir.ExpIntegerK, ir.Arg(0))
	var xs []float32
	for b := uint64(0); b < 1<<32; b += 65521 {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	xs = append(append(xs, irtest.Edges()...), halfwayExp()...)
	n, o := make([]float32, len(xs)), make([]float32, len(xs))
	for _, flush := range []bool{false, true} {
		cpuref.EvalXSlice(nx, n, xs, nil, flush)
		cpuref.EvalXSlice(ix, o, xs, nil, flush)
		for i := range xs {
			if !same(n[i], o[i]) {
				t.Fatalf("exp(%#08x) flush=%v: %#08x, integer k %#08x", math.Float32bits(xs[i]), flush, math.Float32bits(n[i]), math.Float32bits(o[i]))
			}
		}
	}
	fs := []*ir.Func{{Name: "float_k", Params: 1, Body: ir.OpExp.Info().Expr}, {Name: "integer_k", Params: 1, Body: ir.ExpIntegerK.Body}}
	src := cPrelude + strings.Join(codegen.Define(cLang(), append(fs[0].Body.Funcs(), fs...), 0), "\n") + `
int main(int argc, char **argv) {
	uint64_t stride = atoll(argv[1]), shard = atoll(argv[2]), shards = atoll(argv[3]);
	for (uint64_t i = shard * stride; i < 0x100000000ull; i += stride * shards) {
		float x = F((u32)i), n = prim_float_k(x), o = prim_integer_k(x);
		if (B(n) != B(o)) differ("exp", B(x), 0, n, o);
	}
	return bad != 0;
}
`
	stride := "4093"
	if exhaustive() {
		stride = "1"
	}
	runShards(t, buildC(t, src), stride)
}

package ir_test

import (
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// tableFunc returns the table function named name that an op calls.
func tableFunc(t testing.TB, name string) *ir.Func {
	t.Helper()
	for _, op := range ir.Ops() {
		if x := op.Info().Expr; x != nil {
			for _, f := range x.Funcs() {
				if f.Name == name {
					return f
				}
			}
		}
	}
	t.Fatalf("no table function %s", name)
	return nil
}

// fastNames returns the fast paths' function names, sorted.
func fastNames() []string {
	var names []string
	for name := range ir.FastPaths() {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// TestRecipRNFused: the fused fast paths' reciprocal is IEEE's 1/B for
// every one of the 2^23 significands B in [1, 2).
func TestRecipRNFused(t *testing.T) {
	bs := make([]float32, 1<<23)
	for i := range bs {
		bs[i] = math.Float32frombits(0x3f800000 | uint32(i))
	}
	got := make([]float32, len(bs))
	cpuref.EvalXSlice(ir.Call(ir.RecipRNFused, ir.Arg(0)), got, bs, nil, false)
	bad := 0
	for i, b := range bs {
		if want := 1 / b; !same(got[i], want) {
			if bad++; bad <= 10 {
				t.Errorf("1/%#08x: %#08x, IEEE %#08x", math.Float32bits(b), math.Float32bits(got[i]), math.Float32bits(want))
			}
		}
	}
}

// fastInputs returns the floats strictly inside (lo, hi) among every
// stride-th float32, the edges, exp's halfway points, the subnormals
// (every 1021st, every 61st outside -short, every one with
// GPUCC_XMATH_ALL: where a GPU's flushing could matter) and the floats next to lo, hi and ±0.625 (tanh's branch).
func fastInputs(lo, hi float32, stride uint64) []float32 {
	var xs []float32
	for b := uint64(0); b < 1<<32; b += stride {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	xs = append(append(xs, irtest.Edges()...), halfwayExp()...)
	step := uint32(1021)
	switch {
	case exhaustive(): // every one passed on 2026-12-05 (e056391's bodies; 300 s here)
		step = 1
	case !testing.Short():
		step = 61
	}
	for b := uint32(1); b < 0x800000; b += step {
		xs = append(xs, math.Float32frombits(b), math.Float32frombits(b|0x80000000))
	}
	for _, v := range []float32{lo, hi, 0.625, -0.625, 0.5, -0.5, 1, -1} {
		for d := -64; d <= 64; d++ {
			xs = append(xs, math.Float32frombits(uint32(int32(math.Float32bits(v))+int32(d))))
		}
	}
	return slices.DeleteFunc(xs, func(x float32) bool { return !(lo < x && x < hi) })
}

// TestFastPaths: each fast body (and its fused form) gives its table
// function's bits at every input of the sweep inside its interval,
// evaluated by cpuref, unflushed and flushed (a GPU may flush subnormals).
func TestFastPaths(t *testing.T) {
	stride := uint64(65521)
	if exhaustive() {
		stride = 1
	}
	for _, name := range fastNames() {
		fp := ir.FastPaths()[name]
		table := ir.Call(tableFunc(t, name), ir.Arg(0))
		bodies := map[string]*ir.X{"body": fp.Body}
		if fp.Fused != nil {
			bodies["fused"] = fp.Fused
		}
		for kind, body := range bodies {
			t.Run(name+"/"+kind, func(t *testing.T) {
				xs := fastInputs(fp.Lo, fp.Hi, stride)
				got, want := make([]float32, len(xs)), make([]float32, len(xs))
				for _, flush := range []bool{false, true} {
					cpuref.EvalXSlice(body, got, xs, nil, flush)
					cpuref.EvalXSlice(table, want, xs, nil, flush)
					bad := 0
					for i := range xs {
						if !same(got[i], want[i]) {
							if bad++; bad <= 10 {
								t.Errorf("%s(%#08x) flush=%v: fast %#08x, table %#08x", name, math.Float32bits(xs[i]), flush, math.Float32bits(got[i]), math.Float32bits(want[i]))
							}
						}
					}
				}
				t.Logf("%d inputs in (%g, %g)", len(xs), fp.Lo, fp.Hi)
			})
		}
	}
}

// TestFastPathsC: the same comparison in the C the generators emit (C's
// fmaf for the fused forms), every 4093rd float32 inside each interval
// (every one with GPUCC_XMATH_ALL=1; GPUCC_XMATH_OPS=exp,tanh limits the
// functions), and beyond each tail's bound that the table's value is the
// tail's constant. All 2^32 inputs of exp, tanh and sigmoid, both bodies
// and the tails, passed on 2026-12-05 at 7f7df6c (524 s of one core).
func TestFastPathsC(t *testing.T) {
	lang := cLang()
	var fs []*ir.Func
	seen := map[*ir.Func]bool{}
	add := func(f *ir.Func) {
		for _, g := range append(f.Body.Funcs(), f) {
			if !seen[g] {
				seen[g] = true
				fs = append(fs, g)
			}
		}
	}
	var calls strings.Builder
	for _, name := range fastNames() {
		if only := os.Getenv("GPUCC_XMATH_OPS"); only != "" && !slices.Contains(strings.Split(only, ","), name) {
			continue
		}
		fp := ir.FastPaths()[name]
		add(tableFunc(t, name))
		add(&ir.Func{Name: name + "_fast", Params: 1, Body: fp.Body})
		fmt.Fprintf(&calls, "\t\tif (x > %[2]s && x < %[3]s) { float w = prim_%[1]s(x), f = prim_%[1]s_fast(x); if (B(f) != B(w)) differ(\"%[1]s\", B(x), 0, f, w);\n",
			name, lang.Float(fp.Lo), lang.Float(fp.Hi))
		if fp.Fused != nil {
			add(&ir.Func{Name: name + "_fused", Params: 1, Body: fp.Fused})
			fmt.Fprintf(&calls, "\t\t\tf = prim_%[1]s_fused(x); if (B(f) != B(w)) differ(\"%[1]s fused\", B(x), 0, f, w);\n", name)
		}
		// the tails: the table's value is the tail's constant
		for _, tail := range []struct {
			cmp string
			t   ir.Tail
		}{{"<", fp.Below}, {">", fp.Above}} {
			fmt.Fprintf(&calls, "\t\t} else if (x %[2]s %[3]s) { float w = prim_%[1]s(x); if (B(w) != %#[4]xu) differ(\"%[1]s tail\", B(x), 0, F(%#[4]xu), w);\n",
				name, tail.cmp, lang.Float(tail.t.At), tail.t.Bits)
		}
		calls.WriteString("\t\t}\n")
	}
	lang.FMA = "fmaf"
	src := cPrelude + "#include <math.h>\n" + strings.Join(codegen.Define(lang, fs, 0), "\n") + `
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
	runShards(t, buildC(t, src, "-lm"), stride)
}

// TestFastTails: each fast path's tails are its function's constants, in
// cpuref, unflushed and flushed: every stride-th float32 beyond each tail's
// bound, the edges and the 4096 floats next to each bound.
func TestFastTails(t *testing.T) {
	stride := uint64(4093)
	if exhaustive() {
		stride = 1
	}
	for _, name := range fastNames() {
		fp := ir.FastPaths()[name]
		table := ir.Call(tableFunc(t, name), ir.Arg(0))
		for _, tail := range []struct {
			below bool
			t     ir.Tail
		}{{true, fp.Below}, {false, fp.Above}} {
			var xs []float32
			for b := uint64(0); b < 1<<32; b += stride {
				xs = append(xs, math.Float32frombits(uint32(b)))
			}
			xs = append(xs, irtest.Edges()...)
			for d := -2048; d <= 2048; d++ {
				xs = append(xs, math.Float32frombits(uint32(int32(math.Float32bits(tail.t.At))+int32(d))))
			}
			xs = slices.DeleteFunc(xs, func(x float32) bool { return !(tail.below && x < tail.t.At || !tail.below && x > tail.t.At) })
			got := make([]float32, len(xs))
			for _, flush := range []bool{false, true} {
				cpuref.EvalXSlice(table, got, xs, nil, flush)
				for i, x := range xs {
					if math.Float32bits(got[i]) != tail.t.Bits {
						t.Fatalf("%s(%#08x) flush=%v: %#08x, the tail's %#08x", name, math.Float32bits(x), flush, math.Float32bits(got[i]), tail.t.Bits)
					}
				}
			}
			t.Logf("%s: %d inputs beyond %g", name, len(xs), tail.t.At)
		}
	}
}

// fastBudget is each fast body's cost in xcost's units at 2026-12-05
// (7f7df6c), which TestFastPathCosts holds it to: a change that adds an
// instruction to a fast body shows here, and should say why.
var fastBudget = map[string]int{"exp/body": 40, "tanh/body": 153, "tanh/fused": 87, "sigmoid/body": 135, "sigmoid/fused": 69}

// TestFastPathCosts logs each fast body's cost beside its table
// function's (xcost's model), and fails where a fast body is not cheaper
// or costs more than its fastBudget.
func TestFastPathCosts(t *testing.T) {
	for _, name := range fastNames() {
		fp := ir.FastPaths()[name]
		table := ir.Call(tableFunc(t, name), ir.Arg(0))
		fused := table
		if f, ok := fusedOf(table); ok {
			fused = f
		}
		for _, c := range []struct {
			kind        string
			body, table *ir.X
		}{{"body", fp.Body, table}, {"fused", fp.Fused, fused}} {
			if c.body == nil {
				continue
			}
			fc, tc := costOf(c.body), costOf(c.table)
			t.Logf("%s %s: %v; table %v", name, c.kind, fc, tc)
			if fc.units() >= tc.units() {
				t.Errorf("%s %s: the fast body costs %d units, the table's %d", name, c.kind, fc.units(), tc.units())
			}
			if b := fastBudget[name+"/"+c.kind]; fc.units() > b {
				t.Errorf("%s %s: the fast body costs %d units, over its budget of %d", name, c.kind, fc.units(), b)
			}
		}
	}
}

package wgsl

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// TestFastPathsFromEnv: GPUCC_FAST_PATHS is on, off or unset (the
// default: fastPathsDefault, on); anything else is a usage error naming the
// variable, which every Emit returns.
func TestFastPathsFromEnv(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{{"", fastPathsDefault}, {"on", true}, {"off", false}} {
		if got, err := fastPathsFromEnv(c.s); got != c.want || err != nil {
			t.Errorf("fastPathsFromEnv(%q) = %v, %v, want %v", c.s, got, err, c.want)
		}
	}
	got, err := fastPathsFromEnv("yes")
	var ie *ir.Error
	if got || !errors.As(err, &ie) || ie.Code != ir.CodeUsage || !strings.Contains(err.Error(), "GPUCC_FAST_PATHS") {
		t.Fatalf("fastPathsFromEnv(yes) = %v, %v, want a usage error naming GPUCC_FAST_PATHS", got, err)
	}
	defer func(old error) { fastPathsEnv = old }(fastPathsEnv)
	fastPathsEnv = err
	if _, got := (Target{}).Emit(fastPathGraph(t)); got != err {
		t.Errorf("Emit under a malformed GPUCC_FAST_PATHS = %v, want %v", got, err)
	}
}

// fastPathGraph is a sealed program whose elementwise kernel calls exp,
// tanh and sigmoid.
func fastPathGraph(t *testing.T) *ir.Sealed {
	t.Helper()
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{64}, make([]float32, 64))
	b.Output("y", x.Exp().Add(x.Tanh()).Add(x.Apply(ir.OpSigmoid)))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sp, _, err := passes.Compile(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestTargetFastPaths: the kernels take the fast paths where the target
// says so and only there, whatever the process's permission (FastPaths,
// which the runtime reads with its device's probe), and the target's name
// (the caches' key) tells the two apart.
func TestTargetFastPaths(t *testing.T) {
	sp := fastPathGraph(t)
	defer func(old bool) { FastPaths = old }(FastPaths)
	for _, allowed := range []bool{false, true} {
		FastPaths = allowed
		for _, fused := range []bool{false, true} {
			for _, paths := range []bool{false, true} {
				tg := Target{Fused: fused, FastPaths: paths}
				sh, err := tg.Emit(sp)
				if err != nil {
					t.Fatal(err)
				}
				src := sh[0].Source
				for _, fn := range []string{"prim_exp_fast", "prim_tanh_fast", "prim_sigmoid_fast"} {
					if strings.Contains(src, fn) != paths {
						t.Errorf("%+v (FastPaths %v): %s in the kernel %v, want %v", tg, allowed, fn, !paths, paths)
					}
				}
			}
		}
	}
	if a, b := (Target{}).Name(), (Target{FastPaths: true}).Name(); a == b {
		t.Errorf("Target{}.Name() = Target{FastPaths: true}.Name() = %q", a)
	}
}

// TestFastProbeSource: the probe compares each path's function as the
// kernels render it with the paths (prim_) and without (ref_), in both
// forms; with LiteralConstant its fast bodies' constants are literals
// (what lavapipe reassociated), else opaque as the kernels'.
func TestFastProbeSource(t *testing.T) {
	paths := ir.FastPaths()
	if got := FastProbeFuncs(paths); strings.Join(got, ",") != "exp,sigmoid,tanh" {
		t.Fatalf("FastProbeFuncs = %v", got)
	}
	for _, vec := range []bool{false, true} {
		o := FastProbeOptions{Paths: paths, Vec: vec}
		src := FastProbe(o).Source
		for _, name := range FastProbeFuncs(paths) {
			for _, want := range []string{"fn ref_" + name + "(", "fn prim_" + name + "(", "fn prim_" + name + "_fast(", "got = prim_" + name + "(x);", "want = ref_" + name + "(x);"} {
				if !strings.Contains(src, want) {
					t.Errorf("vec %v: the probe has no %q", vec, want)
				}
			}
		}
		if strings.Contains(src, "fn ref_exp_fast(") {
			t.Errorf("vec %v: the reference has a fast path", vec)
		}
		o.LiteralConstant = true
		lit := FastProbe(o).Source
		fast := func(s string) string { // prim_exp_fast's body
			i := strings.Index(s, "fn prim_exp_fast(")
			return s[i : i+strings.Index(s[i:], "\n}")]
		}
		if !strings.Contains(fast(src), "| bitcast<u32>(params.zero)") || strings.Contains(fast(lit), "| bitcast<u32>(params.zero)") {
			t.Errorf("vec %v: opaque constants in the probe %v, in its literal twin %v", vec,
				strings.Contains(fast(src), "params.zero"), strings.Contains(fast(lit), "params.zero"))
		}
	}
}

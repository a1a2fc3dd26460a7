package gpucc_test

import (
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// backends are the backends every test runs on (those that cannot start
// here are skipped unless required).
var backends = []string{"cpu", "webgpu", "wasm", "native"}

// requireEnv names, per backend, the variable that turns "cannot start
// here" from a skip into a failure. CI sets them all.
var requireEnv = map[string]string{"webgpu": "GPUCC_REQUIRE_WEBGPU", "wasm": "GPUCC_REQUIRE_WASM", "native": "GPUCC_REQUIRE_NATIVE"}

// open returns a runtime on backend, or skips when it cannot start here and
// the backend is not required.
func open(t testing.TB, backend string, opts ...func(*gpucc.Options)) *gpucc.Runtime {
	t.Helper()
	required := os.Getenv(requireEnv[backend]) != ""
	if !slices.Contains(gpucc.Backends(), backend) {
		if required {
			t.Fatalf("%s is set but backend %s is not built into this binary", requireEnv[backend], backend)
		}
		t.Skipf("backend %s is not built into this binary", backend)
	}
	o := gpucc.Options{Backend: backend, AllowSoftware: true}
	for _, f := range opts {
		f(&o)
	}
	rt, err := gpucc.Open(context.Background(), o)
	if err != nil {
		if required {
			t.Fatalf("%s=%s but %v", requireEnv[backend], os.Getenv(requireEnv[backend]), err)
		}
		t.Skipf("backend %s unavailable: %v", backend, err)
	}
	t.Cleanup(rt.Close)
	return rt
}

// bitsOf maps values to their IEEE bits, so that -0 and +0 differ.
func bitsOf(v []float32) []uint32 {
	b := make([]uint32, len(v))
	for i, x := range v {
		b[i] = math.Float32bits(x)
	}
	return b
}

func bits(m map[string][]float32) map[string][]uint32 {
	out := map[string][]uint32{}
	for k, v := range m {
		out[k] = bitsOf(v)
	}
	return out
}

// expect returns the reference outputs of g, and whether they are all finite.
func expect(g *ir.Graph) (map[string][]float32, bool) {
	vals := cpuref.Eval(g)
	want := map[string][]float32{}
	finite := true
	for _, o := range g.Outputs {
		want[o.Name] = slices.Clone(vals[o.ID])
		for _, v := range vals[o.ID] {
			finite = finite && !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v))
		}
	}
	return want, finite
}

// checkRun runs g on rt and compares every output, bit for bit, with cpuref.
func checkRun(t *testing.T, rt *gpucc.Runtime, g *ir.Graph) {
	t.Helper()
	want, finite := expect(g)
	res, err := rt.Run(context.Background(), g)
	if !finite {
		var re *gpucc.Error
		if !errors.As(err, &re) || re.Code != ir.CodeNonFiniteOutput {
			t.Fatalf("reference output is not finite; want a non_finite_output error, got %v", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	got := map[string][]float32{}
	for name, tensor := range res.Outputs {
		got[name] = tensor.Data
	}
	compare(t, rt, g, want, got)
}

// compare checks got against want bit for bit, accepting on webgpu the
// flushed value where the device flushed a subnormal.
func compare(t *testing.T, rt *gpucc.Runtime, g *ir.Graph, want, got map[string][]float32) {
	t.Helper()
	if rt.Backend() == "webgpu" {
		acceptFlushed(t, g, want, got)
	}
	if diff := cmp.Diff(bits(want), bits(got)); diff != "" {
		t.Errorf("%s differs from cpuref in IEEE bits (-want +got):\n%s", rt.Backend(), diff)
	}
}

// acceptFlushed replaces, in want, each value where a GPU backend returned
// cpuref.EvalFlushed's value instead: the one liberty (flushing subnormals)
// that WGSL grants and that cpuref's package doc states. The cpu and wasm
// backends never need it; it is logged so a run shows where it happened.
func acceptFlushed(t *testing.T, g *ir.Graph, want, got map[string][]float32) {
	t.Helper()
	flushed := cpuref.EvalFlushed(g)
	n := 0
	for _, o := range g.Outputs {
		w, f, v := want[o.Name], flushed[o.ID], got[o.Name]
		for i := range w {
			if i < len(v) && math.Float32bits(v[i]) != math.Float32bits(w[i]) && math.Float32bits(v[i]) == math.Float32bits(f[i]) {
				w[i] = v[i]
				n++
			}
		}
	}
	if n > 0 {
		t.Logf("%d values match cpuref.EvalFlushed (subnormals flushed by the device), not cpuref.Eval", n)
	}
}

func TestSuite(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for _, c := range irtest.Suite() {
				t.Run(c.Name, func(t *testing.T) { checkRun(t, rt, c.Graph) })
			}
		})
	}
}

func TestRandomGraphs(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 10
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for seed := range n {
				g := irtest.Random(uint64(seed), 12)
				t.Run(itoa(seed), func(t *testing.T) { checkRun(t, rt, g) })
			}
		})
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// Package gpucctest holds the helpers that the tests of package gpucc and
// of the backend packages share: opening a backend (skipping when it
// cannot start here, failing when CI requires it) and comparing a run with
// cpuref bit for bit.
package gpucctest

import (
	"context"
	"errors"
	"github.com/gpucc/gpucc/codegen/cache"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// Backends are the backends every test runs on (those that cannot start
// here are skipped unless required).
var Backends = []string{"cpu", "webgpu", "wasm", "native"}

// requireEnv names, per backend, the variable that turns "cannot start
// here" from a skip into a failure. CI sets them all.
var requireEnv = map[string]string{"webgpu": "GPUCC_REQUIRE_WEBGPU", "wasm": "GPUCC_REQUIRE_WASM", "native": "GPUCC_REQUIRE_NATIVE"}

// Open returns a runtime on backend, or skips when it cannot start here and
// the backend is not required.
func Open(t testing.TB, backend string, opts ...func(*gpucc.Options)) *gpucc.Runtime {
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
	twins.Store(rt, &twin{opts: o})
	t.Cleanup(func() {
		rt.Close()
		if tw, ok := twins.LoadAndDelete(rt); ok && tw.(*twin).rt != nil {
			tw.(*twin).rt.Close()
		}
	})
	// GPUCC_REQUIRE_WEBGPU=vulkan (bench/device.sh) also requires the
	// adapter's backend: on the H100 (2026-12-05) a test process opened
	// the GL adapter partway through and its later tests ran there.
	if want := os.Getenv(requireEnv[backend]); backend == "webgpu" && want != "" && want != "1" && rt.Adapter().Backend != want {
		fds, _ := os.ReadDir("/proc/self/fd") // a clue to why (none where there is no /proc)
		t.Fatalf("%s=%s but the adapter is %s on %s (the process has %d open descriptors)", requireEnv[backend], want, rt.Adapter().Name, rt.Adapter().Backend, len(fds))
	}
	return rt
}

// twins holds, by each runtime Open returned, the options it was opened
// with and, once CheckRun needs it, its twin: a runtime opened with the
// same options but ir.Limits.NonFinite, which returns the values that the
// finite policy refuses (the host's check, not the kernels: both compile
// the same program).
var twins sync.Map // *gpucc.Runtime → *twin

type twin struct {
	once sync.Once
	opts gpucc.Options
	rt   *gpucc.Runtime
	err  error
}

// nonFiniteTwin returns rt's twin, opening it the first time.
func nonFiniteTwin(t *testing.T, rt *gpucc.Runtime) *gpucc.Runtime {
	t.Helper()
	v, ok := twins.Load(rt)
	if !ok {
		t.Fatalf("the reference is not finite, and %s's runtime was not opened by gpucctest.Open: compare its values on a runtime with ir.Limits.NonFinite (CheckNonFinite)", rt.Backend())
	}
	tw := v.(*twin)
	tw.once.Do(func() {
		o := tw.opts
		o.Limits.NonFinite = true
		tw.rt, tw.err = gpucc.Open(context.Background(), o)
	})
	if tw.err != nil {
		t.Fatalf("opening %s with ir.Limits.NonFinite: %v", rt.Backend(), tw.err)
	}
	return tw.rt
}

// CheckNonFinite runs g on rt, which allows non-finite outputs
// (ir.Limits.NonFinite), and compares every output's bits with cpuref's
// (CheckAgainst RefOf(g)).
func CheckNonFinite(t *testing.T, rt *gpucc.Runtime, g *ir.Graph) {
	t.Helper()
	CheckAgainst(t, rt, g, RefOf(g))
}

// Ref is a graph's outputs by cpuref and by cpuref.EvalFlushed (what
// webgpu may give instead), each NaN as gpucc.QuietNaN (IEEE leaves a
// NaN's sign and payload to the hardware). A test that runs one graph
// under many schedules computes it once.
type Ref struct{ Want, Flushed map[string][]float32 }

// RefOf returns g's Ref.
func RefOf(g *ir.Graph) Ref {
	want, _ := Expect(g)
	vals := cpuref.EvalFlushed(g)
	flushed := map[string][]float32{}
	for _, o := range g.Outputs {
		flushed[o.Name] = slices.Clone(vals[o.ID])
	}
	for _, m := range []map[string][]float32{want, flushed} {
		for _, v := range m {
			for i := range v {
				if v[i] != v[i] {
					v[i] = math.Float32frombits(gpucc.QuietNaN)
				}
			}
		}
	}
	return Ref{want, flushed}
}

// CheckAgainst runs g on rt (which allows non-finite outputs where ref
// holds them) and compares every output's bits with ref.Want's, or on
// webgpu with ref.Flushed's.
func CheckAgainst(t *testing.T, rt *gpucc.Runtime, g *ir.Graph, ref Ref) {
	t.Helper()
	res, err := rt.Run(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range ref.Want {
		got, bad := res.Outputs[name].Data, 0
		if len(got) != len(w) {
			t.Errorf("%s: %s has %d values, cpuref %d", rt.Backend(), name, len(got), len(w))
			continue
		}
		for i := range w {
			b := math.Float32bits(got[i])
			if b != math.Float32bits(w[i]) && (rt.Backend() != "webgpu" || b != math.Float32bits(ref.Flushed[name][i])) {
				if bad++; bad <= 5 {
					t.Errorf("%s: %s[%d] = %v (%#08x), cpuref %v (%#08x)", rt.Backend(), name, i, got[i], b, w[i], math.Float32bits(w[i]))
				}
			}
		}
		if bad > 5 {
			t.Errorf("%s: %s: %d values differ from cpuref", rt.Backend(), name, bad)
		}
	}
}

// BitsOf maps values to their IEEE bits, so that -0 and +0 differ.
func BitsOf(v []float32) []uint32 {
	b := make([]uint32, len(v))
	for i, x := range v {
		b[i] = math.Float32bits(x)
	}
	return b
}

// Bits maps each output to its values' IEEE bits.
func Bits(m map[string][]float32) map[string][]uint32 {
	out := map[string][]uint32{}
	for k, v := range m {
		out[k] = BitsOf(v)
	}
	return out
}

// Expect returns the reference outputs of g, and whether they are all finite.
func Expect(g *ir.Graph) (map[string][]float32, bool) {
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

// CheckRun runs g on rt and compares every output, bit for bit, with cpuref.
// On webgpu, which may flush subnormals (cpuref.EvalFlushed), a
// non_finite_output error is right where either reference is not finite,
// and a finite result where the flushed one is. Where the run's refusal
// is right, the values are compared too, on rt's twin that allows them
// (ir.Limits.NonFinite; rt must come from Open): a refusal alone would
// let any kernel pass whose graph's reference holds an Inf or a NaN.
func CheckRun(t *testing.T, rt *gpucc.Runtime, g *ir.Graph) {
	t.Helper()
	want, finite := Expect(g)
	res, err := rt.Run(context.Background(), g)
	refused := func() {
		t.Helper()
		var re *gpucc.Error
		if !errors.As(err, &re) || re.Code != ir.CodeNonFiniteOutput {
			t.Fatalf("reference output is not finite; want a non_finite_output error, got %v", err)
		}
		CheckNonFinite(t, nonFiniteTwin(t, rt), g)
	}
	if rt.Backend() == "webgpu" {
		flushedFinite := true
		vals := cpuref.EvalFlushed(g)
		for _, o := range g.Outputs {
			for _, v := range vals[o.ID] {
				flushedFinite = flushedFinite && !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v))
			}
		}
		var re *gpucc.Error
		if !finite && flushedFinite && err == nil || finite && !flushedFinite && errors.As(err, &re) && re.Code == ir.CodeNonFiniteOutput {
			if err != nil {
				refused()
				return
			}
			got := map[string][]float32{}
			for name, tensor := range res.Outputs {
				got[name] = tensor.Data
			}
			Compare(t, rt, g, want, got)
			return
		}
	}
	if !finite {
		refused()
		return
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	got := map[string][]float32{}
	for name, tensor := range res.Outputs {
		got[name] = tensor.Data
	}
	Compare(t, rt, g, want, got)
}

// Compare checks got against want bit for bit, accepting on webgpu the
// flushed value where the device flushed a subnormal.
func Compare(t *testing.T, rt *gpucc.Runtime, g *ir.Graph, want, got map[string][]float32) {
	t.Helper()
	if rt.Backend() == "webgpu" {
		AcceptFlushed(t, g, want, got)
	}
	if diff := cmp.Diff(Bits(want), Bits(got)); diff != "" {
		t.Errorf("%s differs from cpuref in IEEE bits (-want +got):\n%s", rt.Backend(), diff)
	}
}

// AcceptFlushed replaces, in want, each value where a GPU backend returned
// cpuref.EvalFlushed's value instead: the one liberty (flushing subnormals)
// that WGSL grants and that cpuref's package doc states. The cpu and wasm
// backends never need it; it is logged so a run shows where it happened.
func AcceptFlushed(t *testing.T, g *ir.Graph, want, got map[string][]float32) {
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

// Build builds a graph or fails the test.
func Build(t *testing.T, f func(b *ir.Builder)) *ir.Graph {
	t.Helper()
	b := ir.NewBuilder()
	f(b)
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return g
}

// OpenCache opens a new cache object on dir: a new process, as far as
// caching goes.
func OpenCache(t testing.TB, dir string) *cache.Cache {
	t.Helper()
	c, err := cache.Open(cache.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Files lists every file under dirs.
func Files(dirs ...string) []string {
	var out []string
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

// CacheOffWritesNothing checks that with a memory-only cache (--cache-dir off) the
// backend writes to no cache directory, wherever the defaults point.
func CacheOffWritesNothing(t *testing.T, backend string) {
	env, home, xdg := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("GPUCC_CACHE_DIR", env)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", xdg)
	mem, err := cache.Open(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: backend, Cache: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	CheckRun(t, rt, seedGraph(t))
	if got := Files(env, home, xdg); len(got) != 0 {
		t.Errorf("a memory-only cache left files on disk: %v", got)
	}
}

// seedGraph is the seed's relu(x*y) over three values.
func seedGraph(t *testing.T) *ir.Graph {
	return Build(t, func(b *ir.Builder) {
		x := b.Input(ir.Shape{3}, []float32{-2, 3, 4})
		y := b.Input(ir.Shape{3}, []float32{10, 20, 30})
		b.Output("values", x.Mul(y).Relu())
	})
}

// CorruptEach damages the cache file at path in each way a disk can (a
// flipped byte, a truncation, garbage, an empty file), calling check after
// each with the damage's name; check asserts the entry was a miss and got
// rebuilt, which restores the file for the next damage.
func CorruptEach(t *testing.T, path string, check func(damage string)) {
	t.Helper()
	damages := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"flipped byte", func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/3] }},
		{"garbage", func([]byte) []byte { return []byte("not a cache entry") }},
		{"empty", func([]byte) []byte { return nil }},
	}
	for _, d := range damages {
		good, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, d.edit(good), 0o644); err != nil {
			t.Fatal(err)
		}
		check(d.name)
	}
}

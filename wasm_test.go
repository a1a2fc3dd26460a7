package gpucc_test

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// wasmOpen opens the wasm backend with its disk cache in a fresh
// directory. It skips only when clang is absent and GPUCC_REQUIRE_WASM is
// unset; with clang present, a failure to start is a failure.
func wasmOpen(t *testing.T) *gpucc.Runtime {
	t.Helper()
	if os.Getenv("GPUCC_CACHE_DIR") == "" {
		t.Setenv("GPUCC_CACHE_DIR", t.TempDir())
	}
	if _, err := exec.LookPath("clang"); err != nil && os.Getenv("GPUCC_CLANG") == "" && os.Getenv("GPUCC_REQUIRE_WASM") == "" {
		t.Skipf("clang is not installed and GPUCC_REQUIRE_WASM is unset: %v", err)
	}
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "wasm"})
	if err != nil {
		t.Fatalf("wasm backend: %v", err)
	}
	t.Cleanup(rt.Close)
	return rt
}

func seedGraph(t *testing.T) *ir.Graph {
	return build(t, func(b *ir.Builder) {
		x := b.Input(ir.Shape{3}, []float32{-2, 3, 4})
		y := b.Input(ir.Shape{3}, []float32{10, 20, 30})
		b.Output("values", x.Mul(y).Relu())
	})
}

func TestWasmSeed(t *testing.T) {
	rt := wasmOpen(t)
	res, err := rt.Run(context.Background(), seedGraph(t))
	if err != nil {
		t.Fatal(err)
	}
	got := res.Outputs["values"].Data
	want := []float32{0, 60, 120}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("values = %v, want %v", got, want)
		}
	}
	if res.Backend != "wasm" {
		t.Errorf("backend = %q", res.Backend)
	}
}

// TestWasmEdges covers the shapes where the C kernels change strategy:
// matmul tile edges (4×8 register tiles, 64-column panels, transposed b
// packed into scratch), sum block edges (256-leaf blocks, binary counter),
// life on thin tori, and transposed elementwise operands.
func TestWasmEdges(t *testing.T) {
	rt := wasmOpen(t)
	v := irtest.Values
	tests := []struct {
		name  string
		build func(b *ir.Builder)
	}{}
	for _, mkn := range [][3]int{{4, 1, 8}, {5, 3, 9}, {1, 17, 1}, {8, 8, 65}, {3, 2, 129}, {9, 31, 12}} {
		m, k, n := mkn[0], mkn[1], mkn[2]
		tests = append(tests, struct {
			name  string
			build func(b *ir.Builder)
		}{"matmul/" + dims(m, k, n), func(b *ir.Builder) {
			a := b.Input(ir.Shape{m, k}, v(21, m*k, 3))
			w := b.Input(ir.Shape{k, n}, v(22, k*n, 3))
			wt := b.Input(ir.Shape{n, k}, v(23, k*n, 3))
			at := b.Input(ir.Shape{k, m}, v(24, k*m, 3))
			b.Output("ab", a.MatMul(w))
			b.Output("abT", a.MatMul(wt.T()).MulScalar(0.5))
			b.Output("aTb", at.T().MatMul(w).Relu())
			b.Output("aTbT", at.T().MatMul(wt.T()).Sum())
		}})
	}
	for _, n := range []int{2, 255, 256, 257, 511, 513, 768, 1025, 70001} {
		tests = append(tests, struct {
			name  string
			build func(b *ir.Builder)
		}{"sum/" + dims(n), func(b *ir.Builder) {
			x := b.Input(ir.Shape{n}, v(25, n, 1e3))
			b.Output("s", x.Sum())
			b.Output("prologue", x.Mul(x).SubScalar(7).Sum())
		}})
	}
	extra := []struct {
		name  string
		build func(b *ir.Builder)
	}{
		{"matmul/overflowing-products", func(b *ir.Builder) {
			a := b.Input(ir.Shape{2, 3}, []float32{3e38, 1, -3e38, 2, 3, 4})
			w := b.Input(ir.Shape{3, 2}, []float32{10, 1, 1, 1, 10, 1})
			b.Output("positive", a.MatMul(w).Positive())
		}},
		{"matmul/subnormal", func(b *ir.Builder) {
			tiny := math.Float32frombits(3)
			a := b.Input(ir.Shape{2, 2}, []float32{tiny, 1e-30, -tiny, 0.5})
			w := b.Input(ir.Shape{2, 2}, []float32{0.5, 1e-10, 3, -tiny})
			b.Output("mm", a.MatMul(w))
		}},
		{"life/1x9", func(b *ir.Builder) {
			b.Output("next", b.Input(ir.Shape{1, 9}, irtest.Grid(26, 1, 9)).Life())
		}},
		{"life/9x1-transposed", func(b *ir.Builder) {
			b.Output("next", b.Input(ir.Shape{1, 9}, irtest.Grid(27, 1, 9)).T().Life())
		}},
		{"life/transposed", func(b *ir.Builder) {
			b.Output("next", b.Input(ir.Shape{6, 11}, irtest.Grid(28, 6, 11)).T().Life())
		}},
		{"elementwise/transposed-mix", func(b *ir.Builder) {
			x := b.Input(ir.Shape{7, 5}, v(29, 35, 2))
			y := b.Input(ir.Shape{5, 7}, v(30, 35, 2))
			b.Output("z", x.T().Mul(y).Add(y).Relu())
		}},
	}
	tests = append(tests, extra...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkRun(t, rt, build(t, tc.build)) })
	}
}

func dims(d ...int) string {
	s := ""
	for i, x := range d {
		if i > 0 {
			s += "x"
		}
		s += itoa(x)
	}
	return s
}

// TestWasmRandom runs more random graphs than the shared suite, with
// larger bodies.
func TestWasmRandom(t *testing.T) {
	rt := wasmOpen(t)
	n := 40
	if testing.Short() {
		n = 5
	}
	for seed := range n {
		g := irtest.Random(uint64(1000+seed), 24)
		t.Run(itoa(seed), func(t *testing.T) { checkRun(t, rt, g) })
	}
}

func TestWasmTimings(t *testing.T) {
	rt := wasmOpen(t)
	res, err := rt.Run(context.Background(), seedGraph(t))
	if err != nil {
		t.Fatal(err)
	}
	tm := res.Timings
	if tm.CodegenMs <= 0 || tm.CompileMs <= 0 || tm.DispatchMs <= 0 {
		t.Errorf("stages not timed: %+v", tm)
	}
	if tm.UploadBytes != 24 || tm.ReadbackBytes != 12 || tm.DispatchClock != "wall" {
		t.Errorf("upload %d B, readback %d B, clock %q; want 24, 12, wall", tm.UploadBytes, tm.ReadbackBytes, tm.DispatchClock)
	}
}

// TestWasmCache checks each cache level: a fresh backend misses both, a
// second run hits memory, a new backend hits disk, and a corrupt file is
// detected, rebuilt and rewritten.
func TestWasmCache(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GPUCC_CACHE_DIR", dir)
	wasmOpen(t) // skips here when there is no toolchain
	g := seedGraph(t)
	runs := func(rt *gpucc.Runtime) map[string]bool {
		t.Helper()
		res, err := rt.Run(context.Background(), g)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outputs["values"].Data[2] != 120 {
			t.Fatalf("values = %v", res.Outputs["values"].Data)
		}
		return res.Cache
	}
	// fresh is a new process, as far as caching goes: a new backend over
	// a new cache object on dir.
	fresh := func() *gpucc.Runtime {
		rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "wasm", Cache: openCache(t, dir)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rt.Close)
		return rt
	}
	rt := fresh()
	want := func(step string, got map[string]bool, mem, disk bool) {
		t.Helper()
		if got["wasmModuleMemory"] != mem || got["wasmModuleDisk"] != disk {
			t.Errorf("%s: cache = %v, want memory=%v disk=%v", step, got, mem, disk)
		}
	}
	want("first run", runs(rt), false, false)
	want("second run", runs(rt), true, false)
	want("new backend", runs(fresh()), false, true)

	files, _ := filepath.Glob(filepath.Join(dir, "wasm-*.bin"))
	if len(files) != 1 {
		t.Fatalf("cache holds %v, want one module", files)
	}
	gpucctest.CorruptEach(t, files[0], func(damage string) {
		want(damage, runs(fresh()), false, false)
		want(damage+", rebuilt", runs(fresh()), false, true)
	})
}

// TestWasmMissingClang: without a working clang, wasm asked for by name
// opens (a plan carrying its module needs none) but compiling a graph is
// backend_unavailable naming clang; under auto it is a failed
// initialisation, recorded as a fallback attempt.
func TestWasmMissingClang(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"GPUCC_CLANG points nowhere", map[string]string{"GPUCC_CLANG": filepath.Join(t.TempDir(), "no-clang")}},
		{"empty PATH", map[string]string{"PATH": "", "GPUCC_CLANG": ""}},
		{"clang that fails", map[string]string{"GPUCC_CLANG": "false"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			// Asked for by name, wasm opens (for plans that carry their
			// module) but cannot compile a graph: backend_unavailable.
			rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "wasm"})
			if err != nil {
				t.Fatalf("Open(wasm): %v", err)
			}
			_, err = rt.Run(context.Background(), seedGraph(t))
			rt.Close()
			if gpucc.CodeOf(err) != ir.CodeBackendUnavailable || !strings.Contains(err.Error(), "clang") {
				t.Fatalf("running a graph on wasm without clang: %v, want backend_unavailable naming clang", err)
			}
			res, err := gpucc.Run(context.Background(), seedGraph(t), gpucc.Options{Backend: "auto"})
			if err != nil {
				t.Fatalf("auto: %v", err)
			}
			for _, a := range res.FallbackAttempts {
				if a.Backend == "wasm" && a.Code == ir.CodeBackendUnavailable {
					return
				}
			}
			if res.Backend == "webgpu" || res.Backend == "webgl2" {
				t.Skipf("auto chose %s before reaching wasm", res.Backend)
			}
			t.Errorf("auto ran on %s with attempts %+v; want a wasm attempt", res.Backend, res.FallbackAttempts)
		})
	}
}

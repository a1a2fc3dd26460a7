//go:build (darwin || freebsd || linux || netbsd) && (amd64 || arm64) && !android && !js

package native_test

import (
	"context"
	_ "github.com/gpucc/gpucc/runtime/all"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

// skipUnlessCC skips when no C compiler is found and GPUCC_REQUIRE_NATIVE
// is unset; with a compiler present, any later failure is a failure.
func skipUnlessCC(t testing.TB) *cbuild.Native {
	t.Helper()
	cc, err := cbuild.FindNative()
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_NATIVE") != "" {
			t.Fatalf("GPUCC_REQUIRE_NATIVE is set but %v", err)
		}
		t.Skipf("no C compiler and GPUCC_REQUIRE_NATIVE is unset: %v", err)
	}
	return cc
}

// nativeOpen opens the native backend with its disk cache in a fresh
// directory (unless the caller chose one).
func nativeOpen(t *testing.T) *gpucc.Runtime {
	t.Helper()
	if os.Getenv("GPUCC_CACHE_DIR") == "" {
		t.Setenv("GPUCC_CACHE_DIR", t.TempDir())
	}
	skipUnlessCC(t)
	rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "native"})
	if err != nil {
		t.Fatalf("native backend: %v", err)
	}
	t.Cleanup(rt.Close)
	return rt
}

func TestNativeNotInChain(t *testing.T) {
	if slices.Contains(gpucc.Chain, "native") {
		t.Errorf("Chain = %v: native loads generated code into the process and must be asked for explicitly", gpucc.Chain)
	}
}

// TestNativeEdges covers what is particular to the native entry point: a
// kernel with more arguments than purego passes in registers, the scratch
// pointer, subnormals, and buffers reused by a smaller program.
func TestNativeEdges(t *testing.T) {
	rt := nativeOpen(t)
	v := irtest.Values
	tests := []struct {
		name  string
		build func(b *ir.Builder)
	}{
		{"20 inputs", func(b *ir.Builder) {
			acc := b.Input(ir.Shape{33}, v(40, 33, 2))
			for i := range 19 {
				acc = acc.Add(b.Input(ir.Shape{33}, v(uint64(41+i), 33, 2)))
			}
			b.Output("s", acc.Relu())
		}},
		{"transposed b (scratch)", func(b *ir.Builder) {
			a := b.Input(ir.Shape{9, 31}, v(60, 9*31, 3))
			w := b.Input(ir.Shape{12, 31}, v(61, 12*31, 3))
			b.Output("y", a.MatMul(w.T()).AddScalar(1))
		}},
		{"subnormal", func(b *ir.Builder) { subnormalGraph(b) }},
		{"smaller after larger", func(b *ir.Builder) {
			x := b.Input(ir.Shape{2}, []float32{1, -2})
			b.Output("y", x.MulScalar(3).Relu())
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkRun(t, rt, build(t, tc.build)) })
	}
}

// subnormalGraph's outputs are subnormal, or depend on subnormal operands:
// a flush to zero anywhere changes them.
func subnormalGraph(b *ir.Builder) {
	tiny := math.Float32frombits(3)
	a := b.Input(ir.Shape{2, 2}, []float32{tiny, 1e-30, -tiny, 0.5})
	w := b.Input(ir.Shape{2, 2}, []float32{0.5, 1e-10, 3, -tiny})
	b.Output("mm", a.MatMul(w))
	b.Output("half", a.MulScalar(0.5).AddScalar(0))
}

// TestNativeRandom runs more random graphs than the shared suite, with
// larger bodies.
func TestNativeRandom(t *testing.T) {
	rt := nativeOpen(t)
	n := 40
	if testing.Short() {
		n = 5
	}
	for seed := range n {
		g := irtest.Random(uint64(2000+seed), 24)
		t.Run(strconv.Itoa(seed), func(t *testing.T) { checkRun(t, rt, g) })
	}
}

func TestNativeTimings(t *testing.T) {
	rt := nativeOpen(t)
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
	if res.Adapter == nil || res.Adapter.Backend != "native" || res.Adapter.Type != "cpu" {
		t.Errorf("adapter = %+v", res.Adapter)
	}
}

// TestNativeCache checks each cache level: a fresh backend misses both, a
// second run hits memory, a new backend hits disk, and a corrupt file is
// detected, removed and rebuilt.
func TestNativeCache(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GPUCC_CACHE_DIR", dir)
	nativeOpen(t)
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
		rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "native", Cache: openCache(t, dir)})
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	// once runs g on a new backend and closes it, unloading the library:
	// the corruptions below rewrite the file in place, which would also
	// corrupt a copy still mapped into the process.
	once := func() map[string]bool {
		t.Helper()
		rt := fresh()
		defer rt.Close()
		return runs(rt)
	}
	want := func(step string, got map[string]bool, mem, disk bool) {
		t.Helper()
		if got["nativeSoMemory"] != mem || got["nativeSoDisk"] != disk {
			t.Errorf("%s: cache = %v, want memory=%v disk=%v", step, got, mem, disk)
		}
	}
	rt := fresh()
	want("first run", runs(rt), false, false)
	want("second run", runs(rt), true, false)
	rt.Close()
	want("new backend", once(), false, true)

	files, _ := filepath.Glob(filepath.Join(dir, "so-*.bin"))
	if len(files) != 1 {
		t.Fatalf("cache holds %v, want one shared object", files)
	}
	gpucctest.CorruptEach(t, files[0], func(damage string) {
		want(damage, once(), false, false)
		want(damage+", rebuilt", once(), false, true)
	})
	if left, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// TestNativeMissingCompiler: a compiler that cannot be found or does not
// run is a failed initialisation (backend_unavailable), never a crash.
func TestNativeMissingCompiler(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"GPUCC_CC points nowhere", map[string]string{"GPUCC_CC": filepath.Join(t.TempDir(), "no-cc")}},
		{"empty PATH", map[string]string{"PATH": "", "GPUCC_CC": ""}},
		{"compiler that fails", map[string]string{"GPUCC_CC": "false"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "native"})
			if err == nil || gpucc.CodeOf(err) != ir.CodeBackendUnavailable {
				t.Fatalf("New(native) = %v, want backend_unavailable", err)
			}
		})
	}
}

// TestNativeNoFMA disassembles the shared objects of relu(a*b+c) and of
// matmuls (plain, with an epilogue, with a transposed operand) and checks
// that products and sums are separate instructions: no fused multiply-add
// of any width.
func TestNativeNoFMA(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GPUCC_CACHE_DIR", dir)
	rt := nativeOpen(t)
	checkRun(t, rt, build(t, func(b *ir.Builder) {
		v := irtest.Values
		x, y, z := b.Input(ir.Shape{1000}, v(1, 1000, 3)), b.Input(ir.Shape{1000}, v(2, 1000, 3)), b.Input(ir.Shape{1000}, v(3, 1000, 3))
		b.Output("relu", x.Mul(y).Add(z).Relu())
		a, w := b.Input(ir.Shape{37, 64}, v(4, 37*64, 1)), b.Input(ir.Shape{64, 70}, v(5, 64*70, 1))
		b.Output("mm", a.MatMul(w))
		b.Output("mm_epilogue", a.MatMul(w).MulScalar(3).Add(b.Input(ir.Shape{37, 70}, v(6, 37*70, 1))))
		b.Output("mm_t", a.MatMul(b.Input(ir.Shape{70, 64}, v(7, 70*64, 1)).T()))
	}))
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		if objdump, err = exec.LookPath("llvm-objdump"); err != nil {
			t.Skip("neither objdump nor llvm-objdump is installed")
		}
	}
	files := cachedPayloads(t, dir, "so")
	if len(files) == 0 {
		t.Fatal("no shared object in the cache")
	}
	for _, f := range files {
		out, err := exec.Command(objdump, "-d", f).CombinedOutput()
		if err != nil {
			t.Fatalf("%s -d %s: %v\n%s", objdump, f, err, out)
		}
		checkNoFMA(t, f, strings.ToLower(string(out)))
	}
}

// checkNoFMA fails on any fused multiply-add mnemonic, and on a
// disassembly without the separate multiplies it should hold.
func checkNoFMA(t *testing.T, file, dis string) {
	t.Helper()
	mul := map[string]string{"amd64": "mulps", "arm64": "fmul"}[goruntime.GOARCH]
	if !strings.Contains(dis, mul) {
		t.Errorf("%s: no %s in the disassembly: not the kernels expected", file, mul)
	}
	for _, bad := range []string{"fmadd", "fmsub", "fnmadd", "fnmsub", "fmla", "fmls"} {
		if i := strings.Index(dis, bad); i >= 0 {
			line := dis[strings.LastIndex(dis[:i], "\n")+1:]
			line, _, _ = strings.Cut(line, "\n")
			t.Errorf("%s: fused multiply-add in the disassembly: %s", file, line)
		}
	}
}

// fpenvHelper sets or clears flush-to-zero and denormals-are-zero on the
// calling thread, the state a library elsewhere in a process may leave.
const fpenvHelper = `
#if defined(__x86_64__)
__attribute__((visibility("default"))) void set_ftz(int on) {
	unsigned int m;
	__asm__ volatile("stmxcsr %0" : "=m"(m));
	m = on ? (m | 0x8040u) : (m & ~0x8040u);
	__asm__ volatile("ldmxcsr %0" : : "m"(m));
}
__attribute__((visibility("default"))) int get_ftz(void) {
	unsigned int m;
	__asm__ volatile("stmxcsr %0" : "=m"(m));
	return (m & 0x8040u) == 0x8040u;
}
#elif defined(__aarch64__)
__attribute__((visibility("default"))) void set_ftz(int on) {
	unsigned long m;
	__asm__ volatile("mrs %0, fpcr" : "=r"(m));
	m = on ? (m | (1ul << 24)) : (m & ~(1ul << 24));
	__asm__ volatile("msr fpcr, %0" : : "r"(m));
}
__attribute__((visibility("default"))) int get_ftz(void) {
	unsigned long m;
	__asm__ volatile("mrs %0, fpcr" : "=r"(m));
	return (m >> 24) & 1;
}
#endif
`

// TestNativeFPEnv runs subnormal arithmetic on a thread whose float
// control register flushes subnormals: the entry point must compute with
// cpuref's environment anyway, and give the caller's back afterwards.
func TestNativeFPEnv(t *testing.T) {
	cc := skipUnlessCC(t)
	so, err := cc.Shared(context.Background(), fpenvHelper)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fpenv.so")
	if err := os.WriteFile(path, so, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	defer purego.Dlclose(h)
	var setFTZ func(int32)
	var getFTZ func() int32
	purego.RegisterLibFunc(&setFTZ, h, "set_ftz")
	purego.RegisterLibFunc(&getFTZ, h, "get_ftz")

	rt := nativeOpen(t)
	g := build(t, subnormalGraph)
	want, _ := expect(g) // before the flush: Go's own float code would flush too
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	setFTZ(1)
	defer setFTZ(0)
	if getFTZ() != 1 {
		t.Fatal("could not set flush-to-zero")
	}
	res, err := rt.Run(context.Background(), g)
	if getFTZ() != 1 {
		t.Error("the entry point did not restore the caller's flush-to-zero")
	}
	setFTZ(0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]float32{}
	for name, tensor := range res.Outputs {
		got[name] = tensor.Data
	}
	if diff := cmp.Diff(bits(want), bits(got)); diff != "" {
		t.Errorf("under flush-to-zero, native differs from cpuref in IEEE bits (-want +got):\n%s", diff)
	}
}

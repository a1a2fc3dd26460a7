package wasm

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

// TestWazeroVsNative measures what bounds the wasm backend (issue 24 scope
// 5): the kernels of one C unit, the one the wasm backend builds (the
// __wasm__ paths of codegen/c), timed four ways, best of
// GPUCC_WASM_VS_NATIVE_RUNS (default 10) calls of every kernel in order:
//
//   - wasm scalar: the backend's module (-mno-simd128), wazero's compiler;
//   - wasm simd128: the same C with SIMD128, wazero's compiler (not what
//     the backend runs: see TestSIMDCompilerMatchesInterpreter);
//   - native scalar: the same C with the system Clang at -O3, the
//     auto-vectorisers off (-fno-vectorize -fno-slp-vectorize), SSE2 only;
//   - native sse2: the same C vectorised, SSE2 only, 128-bit like SIMD128.
//
// The ratio wasm ÷ native on the same C and the same vector width is
// wazero's cost; the rest of a whole run (copies into and out of linear
// memory, Go) is what TestPeers' whole-run time adds. Every buffer holds
// the same pattern on both sides. Timing only, behind
// GPUCC_WASM_VS_NATIVE=1; bits are TestSIMDCompilerMatchesInterpreter's
// and the suite's business.
func TestWazeroVsNative(t *testing.T) {
	if os.Getenv("GPUCC_WASM_VS_NATIVE") == "" {
		t.Skip("GPUCC_WASM_VS_NATIVE is unset (a benchmark: bench/RESULTS.md has its figures)")
	}
	runs, _ := strconv.Atoi(os.Getenv("GPUCC_WASM_VS_NATIVE_RUNS"))
	if runs <= 0 {
		runs = 10
	}
	tc, err := cbuild.Find()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	comp := wazeroDevice(true)
	defer comp.Close()
	fmt.Printf("workload\twasm-scalar\twasm-simd128\tnative-scalar\tnative-sse2 (ms, kernels only)\n")
	for _, w := range ratioWorkloads(t) {
		p, _, err := passes.Compile(w.graph, passes.Options{Limits: ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1 << 40}})
		if err != nil {
			t.Fatal(err)
		}
		unit, err := c.Target{}.Emit(p)
		if err != nil {
			t.Fatal(err)
		}
		scalar, err := tc.Wasm(ctx, unit.Source)
		if err != nil {
			t.Fatal(err)
		}
		row := []string{w.name}
		for _, mod := range [][]byte{scalar, buildSIMD(t, tc, unit.Source)} {
			row = append(row, fmt.Sprintf("%.3f", timeWasm(t, ctx, comp, p, unit, mod, runs)))
		}
		for _, flags := range [][]string{{"-fno-vectorize", "-fno-slp-vectorize"}, nil} {
			row = append(row, fmt.Sprintf("%.3f", timeNative(t, tc, p.Program(), unit, flags, runs)))
		}
		fmt.Println(strings.Join(row, "\t"))
	}
}

type ratioWorkload struct {
	name  string
	graph *ir.Graph
}

func ratioWorkloads(t *testing.T) []ratioWorkload {
	pattern := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32((40503*i)%65536-32768) / 32768
		}
		return v
	}
	var out []ratioWorkload
	add := func(name string, f func(b *ir.Builder)) {
		b := ir.NewBuilder()
		f(b)
		g, err := b.Build(ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1 << 40})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ratioWorkload{name, g})
	}
	in := func(b *ir.Builder, s ir.Shape) ir.Tensor { return b.Input(s, pattern(s.Len())) }
	sq := ir.Shape{1024, 1024}
	add("relu(a*b+c)/1M", func(b *ir.Builder) {
		s := ir.Shape{1 << 20}
		b.Output("y", in(b, s).Mul(in(b, s)).Add(in(b, s)).Relu())
	})
	add("softmax/1024x1024", func(b *ir.Builder) { b.Output("y", in(b, sq).Softmax(1)) })
	add("layernorm/1024x1024", func(b *ir.Builder) { b.Output("y", in(b, sq).LayerNorm(1, 1e-5)) })
	add("rowsum/1024x1024", func(b *ir.Builder) { b.Output("y", in(b, sq).SumAxes(false, 1)) })
	add("colsum/1024x1024", func(b *ir.Builder) { b.Output("y", in(b, sq).SumAxes(false, 0)) })
	add("rowmax/1024x1024", func(b *ir.Builder) { b.Output("y", in(b, sq).MaxAxes(false, 1)) })
	add("matmul/512", func(b *ir.Builder) { b.Output("y", in(b, ir.Shape{512, 512}).MatMul(in(b, ir.Shape{512, 512}))) })
	add("conv/resnet3x3-64", func(b *ir.Builder) {
		x, w, bias := in(b, ir.Shape{1, 64, 56, 56}), in(b, ir.Shape{64, 64, 3, 3}), in(b, ir.Shape{64, 1, 1})
		b.Output("y", x.Conv2D(w, map[string][]int{"pads": {1, 1, 1, 1}}).Add(bias).Relu())
	})
	add("conv/depthwise3x3-256", func(b *ir.Builder) {
		x, w, bias := in(b, ir.Shape{1, 256, 56, 56}), in(b, ir.Shape{256, 1, 3, 3}), in(b, ir.Shape{256, 1, 1})
		b.Output("y", x.Conv2D(w, map[string][]int{"pads": {1, 1, 1, 1}, "group": {256}}).Add(bias).Relu())
	})
	return out
}

// timeWasm runs p's kernels in module wasm on d, every buffer filled with
// ratioFill, and returns the best of runs in ms (kernel calls only).
func timeWasm(t *testing.T, ctx context.Context, d *device, p *ir.Sealed, unit *c.Unit, wasm []byte, runs int) float64 {
	t.Helper()
	be, err := d.Compile(ctx, &backend.Program{IR: p, Prebuilt: Artifact(unit, wasm)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Release()
	e := be.(*executable)
	for i, buf := range p.Program().Buffers {
		if !e.mod.mem.Write(uint32(e.offs[i]), floatBytes(ratioFill(buf.Len))) {
			t.Fatalf("buffer %d does not fit linear memory", i)
		}
	}
	best := math.Inf(1)
	for r := range runs + 1 {
		start := time.Now()
		for _, cl := range e.calls {
			if _, err := cl.fn.Call(ctx, cl.args...); err != nil {
				t.Fatalf("%s: %v", cl.name, err)
			}
		}
		if r > 0 {
			best = min(best, float64(time.Since(start).Nanoseconds())/1e6)
		}
	}
	return best
}

// ratioFill is the pattern of every buffer on both sides: finite values in
// [-1, 1), the same formula in the native harness.
func ratioFill(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i%2001-1000) / 1000
	}
	return v
}

// timeNative compiles unit's C (its __wasm__ paths, so that both sides
// run the same code) into a native harness that times the kernels the way
// timeWasm does, and returns its best time in ms.
func timeNative(t *testing.T, tc *cbuild.Toolchain, p *ir.Program, unit *c.Unit, flags []string, runs int) float64 {
	t.Helper()
	var h strings.Builder
	h.WriteString("#define __wasm__ 1\n")
	h.WriteString(unit.Source)
	h.WriteString("\n#include <stdio.h>\n#include <stdlib.h>\n#include <time.h>\n")
	h.WriteString("static float *fill(long n) { float *p = aligned_alloc(64, ((n * 4 + 63) / 64) * 64 + 64);\n" +
		"\tfor (long i = 0; i < n; i++) p[i] = (float)(i % 2001 - 1000) / 1000.0f;\n\treturn p; }\n")
	h.WriteString("int main(int argc, char **argv) {\n\tint runs = atoi(argv[1]);\n")
	for i, buf := range p.Buffers {
		fmt.Fprintf(&h, "\tfloat *b%d = fill(%d);\n", i, buf.Len)
	}
	fmt.Fprintf(&h, "\tfloat *scratch = fill(%d);\n\t(void)scratch;\n", max(unit.Scratch, 1))
	h.WriteString("\tdouble best = 1e30;\n\tfor (int r = 0; r <= runs; r++) {\n\t\tstruct timespec t0, t1;\n\t\tclock_gettime(CLOCK_MONOTONIC, &t0);\n")
	for _, k := range unit.Kernels {
		var args []string
		for _, b := range k.Buffers {
			args = append(args, fmt.Sprintf("b%d", b))
		}
		if k.Scratch {
			args = append(args, "scratch")
		}
		// Through a volatile pointer: not inlined into the loop, where
		// Clang could drop stores nothing reads or hoist the repeats.
		fmt.Fprintf(&h, "\t\t{ __typeof__(&%s) volatile f = %s; f(%s); }\n", k.Export, k.Export, strings.Join(args, ", "))
	}
	h.WriteString("\t\tclock_gettime(CLOCK_MONOTONIC, &t1);\n\t\tdouble ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;\n" +
		"\t\tif (r > 0 && ms < best) best = ms;\n\t}\n")
	// Every buffer is read after the loop, so that no store is dead.
	h.WriteString("\tdouble sum = 0;\n")
	for i, buf := range p.Buffers {
		fmt.Fprintf(&h, "\tfor (long i = 0; i < %d; i++) sum += b%d[i];\n", buf.Len, i)
	}
	h.WriteString("\tprintf(\"%.4f %g\\n\", best, sum);\n\treturn 0;\n}\n")
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "h.c"), filepath.Join(dir, "h")
	if err := os.WriteFile(src, []byte(h.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-O3", "-ffp-contract=off", "-fno-math-errno", "-mno-avx", "-Wno-everything"}, flags...)
	if out, err := exec.Command(tc.Clang, append(args, "-o", bin, src)...).CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, strconv.Itoa(runs)).Output()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		t.Fatalf("harness printed %q", out)
	}
	ms, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

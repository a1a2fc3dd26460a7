package wasm

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	goruntime "runtime"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

// TestWazeroSIMDRepro keeps the SIMD gate's evidence as a file: the C of
// testdata/wazero_simd_repro.c (the packed matmul with a bias-relu
// epilogue that wazero v1.12.0's amd64 compiler got wrong in December
// 2026), built with SIMD128 and run on the gate's data under wazero's
// compiler and its interpreter. The interpreter must give the reference
// bits. On amd64 with wazero v1.12.0 the compiler must still differ:
// that is why cbuild.WasmCFlags has -mno-simd128, and the module with
// every v128.bitselect rewritten as and/andnot/or (rewriteBitselect)
// must differ too, so the bug is not bitselect's lowering and avoiding
// bitselect does not make SIMD128 safe. With any other wazero the
// compiler must give the reference bits, which is the first check before
// SIMD128 comes back (then GPUCC_SIMD_GATE=all on
// TestSIMDCompilerMatchesInterpreter).
func TestWazeroSIMDRepro(t *testing.T) {
	if goruntime.GOARCH != "amd64" && goruntime.GOARCH != "arm64" {
		t.Skip("wazero has no compiler on " + goruntime.GOARCH)
	}
	tc, err := cbuild.Find()
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_WASM") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	src, err := os.ReadFile("testdata/wazero_simd_repro.c")
	if err != nil {
		t.Fatal(err)
	}
	mod := buildSIMD(t, tc, string(src))
	if !usesSIMD(t, mod) {
		t.Fatal("the repro's module uses no simd128: the build flags did not take")
	}
	rewritten, n, err := rewriteBitselect(mod)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("the repro's module holds no v128.bitselect to rewrite")
	}
	// The gate's data: a [5,3], b [3,9], bias [1,9] (simdCases' seeds).
	a, b, bias := irtest.Values(1, 15, 2), irtest.Values(2, 27, 2), irtest.Values(5, 9, 2)
	want := make([]uint32, 45)
	for i := range 5 {
		for j := range 9 {
			acc := float32(0)
			for k := range 3 {
				acc = float32(acc + float32(a[i*3+k]*b[k*9+j]))
			}
			v := float32(acc + bias[j])
			if !(v > 0) {
				v = 0
			}
			want[i*9+j] = math.Float32bits(v)
		}
	}
	known := goruntime.GOARCH == "amd64" && wazeroVersion == "v1.12.0"
	for _, m := range []struct {
		name string
		wasm []byte
	}{{"as built", mod}, {fmt.Sprintf("%d bitselects rewritten", n), rewritten}} {
		interp := runRepro(t, m.wasm, false, a, b, bias)
		if d := diffBits(interp, want); d != "" {
			t.Fatalf("%s: the interpreter differs from the reference (the C or the rewrite is wrong, not wazero's compiler): %s", m.name, d)
		}
		d := diffBits(runRepro(t, m.wasm, true, a, b, bias), want)
		switch {
		case known && d == "":
			t.Errorf("%s: wazero %s's compiler gives the reference bits on the repro it got wrong: the repro is lost (or the bug is fixed), and the SIMD gate cannot tell", m.name, wazeroVersion)
		case known:
			t.Logf("%s: wazero %s's compiler, as expected: %s", m.name, wazeroVersion, d)
		case d != "":
			t.Errorf("%s: wazero %s's compiler differs from the reference on the repro: %s (SIMD128 stays off)", m.name, wazeroVersion, d)
		}
	}
}

// runRepro instantiates the repro module under wazero's compiler or its
// interpreter, places a, b, bias, the output and 64 KiB of scratch in a
// page it grows, calls kernel0 and returns the output's bits.
func runRepro(t *testing.T, wasm []byte, compiler bool, a, b, bias []float32) []uint32 {
	t.Helper()
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfigInterpreter()
	if compiler {
		cfg = wazero.NewRuntimeConfigCompiler()
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	defer rt.Close(ctx)
	inst, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	mem := inst.Memory()
	pages, ok := mem.Grow(2)
	if !ok {
		t.Fatal("memory.grow failed")
	}
	base := pages * 65536
	put := func(off uint32, v []float32) {
		buf := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
		if !mem.Write(off, buf) {
			t.Fatal("write out of memory")
		}
	}
	pa, pb, pbias, pout, pscratch := base, base+256, base+512, base+768, base+1024
	put(pa, a)
	put(pb, b)
	put(pbias, bias)
	put(pout, make([]float32, 45))
	fn := inst.ExportedFunction("kernel0")
	if fn == nil {
		t.Fatal("no kernel0")
	}
	if _, err := fn.Call(ctx, uint64(pa), uint64(pb), uint64(pbias), uint64(pout), uint64(pscratch)); err != nil {
		t.Fatal(err)
	}
	raw, ok := mem.Read(pout, 45*4)
	if !ok {
		t.Fatal("read out of memory")
	}
	out := make([]uint32, 45)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return out
}

func diffBits(got, want []uint32) string {
	for i := range want {
		if got[i] != want[i] {
			return fmt.Sprintf("[%d] = %#08x, want %#08x", i, got[i], want[i])
		}
	}
	return ""
}

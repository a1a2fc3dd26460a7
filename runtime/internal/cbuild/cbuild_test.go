package cbuild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// module returns a minimal wasm module whose target_features section
// lists feats ("+simd128", …).
func module(feats ...string) []byte {
	payload := []byte{byte(len("target_features"))}
	payload = append(payload, "target_features"...)
	payload = append(payload, byte(len(feats)))
	for _, f := range feats {
		payload = append(payload, f[0], byte(len(f)-1))
		payload = append(payload, f[1:]...)
	}
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, 0, byte(len(payload)))
	return append(m, payload...)
}

func TestCheckFeatures(t *testing.T) {
	tests := []struct {
		name    string
		wasm    []byte
		wantErr bool
	}{
		{"scalar", module("+mutable-globals", "+sign-ext"), false},
		{"simd128 used (wazero's compiler miscompiles bitselect)", module("+simd128", "+mutable-globals"), true},
		{"simd128 disallowed", module("-simd128"), false},
		{"no section", []byte("\x00asm\x01\x00\x00\x00"), false},
		{"relaxed simd used", module("+simd128", "+relaxed-simd"), true},
		{"relaxed simd required", module("=relaxed-simd"), true},
		{"relaxed simd disallowed", module("-relaxed-simd"), false},
		{"relaxed simd alone", module("+relaxed-simd"), true},
		{"not wasm", []byte("hello"), true},
		{"truncated section", module("+mutable-globals")[:12], true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckFeatures(tc.wasm); (err != nil) != tc.wantErr {
				t.Errorf("CheckFeatures = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// TestToolchainExactness builds a matmul-shaped kernel with the real
// toolchain and checks the module: no SIMD (see WasmCFlags), even for
// vector-typed C, and no fused multiply-add instruction in its
// disassembly.
func TestToolchainExactness(t *testing.T) {
	tc, err := Find()
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_WASM") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	src := `typedef float f4 __attribute__((vector_size(16)));
__attribute__((visibility("default"))) void k(f4 *restrict c, const f4 *restrict a, const f4 *restrict b, int n) {
	for (int i = 0; i < n; i++) { f4 p = a[i] * b[i]; c[i] = c[i] + p; }
}
__attribute__((visibility("default"))) void s(float *restrict c, const float *restrict a, const float *restrict b, int n) {
	for (int i = 0; i < n; i++) c[i] = a[i] * b[i] + c[i];
}`
	wasm, err := tc.Wasm(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	feats, err := Features(wasm)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(feats, "+simd128") || slices.Contains(feats, "+relaxed-simd") {
		t.Errorf("target features %v: want neither simd128 nor relaxed-simd", feats)
	}
	objdump, err := exec.LookPath("llvm-objdump")
	if err != nil {
		t.Skip("llvm-objdump not installed; features checked only")
	}
	path := filepath.Join(t.TempDir(), "k.wasm")
	os.WriteFile(path, wasm, 0o644)
	out, err := exec.Command(objdump, "-d", path).CombinedOutput()
	if err != nil {
		t.Fatalf("llvm-objdump: %v\n%s", err, out)
	}
	dis := string(out)
	if !strings.Contains(dis, "f32.mul") || !strings.Contains(dis, "f32.add") {
		t.Errorf("expected separate f32.mul and f32.add:\n%s", dis)
	}
	for _, bad := range []string{"fma", "madd", "relaxed", "f32x4", "v128"} {
		if strings.Contains(dis, bad) {
			t.Errorf("disassembly contains %q:\n%s", bad, dis)
		}
	}
}

// TestBuildTimeout checks the limit's growth with the unit and its
// override, GPUCC_CC_TIMEOUT.
func TestBuildTimeout(t *testing.T) {
	for _, tt := range []struct {
		env  string
		n    int
		want time.Duration
		err  bool
	}{
		{"", 0, 2 * time.Minute, false},
		{"", 73 << 10, 2*time.Minute + 146*time.Second, false},
		{"10m", 73 << 10, 10 * time.Minute, false},
		{"1.5s", 0, 1500 * time.Millisecond, false},
		{"ten minutes", 0, 0, true},
		{"-1s", 0, 0, true},
	} {
		t.Setenv("GPUCC_CC_TIMEOUT", tt.env)
		got, err := BuildTimeout(tt.n)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("GPUCC_CC_TIMEOUT=%q, %d bytes: %v, %v; want %v (error %v)", tt.env, tt.n, got, err, tt.want, tt.err)
		}
	}
}

// TestSpinningCompilerIsKilled checks that a compiler that never finishes
// (here a shell waiting on a child that holds its output pipes) is
// stopped at the limit and its run reports an error.
func TestSpinningCompilerIsKilled(t *testing.T) {
	cc := filepath.Join(t.TempDir(), "cc")
	if err := os.WriteFile(cc, []byte("#!/bin/sh\nsleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPUCC_CC_TIMEOUT", "1s")
	start := time.Now()
	_, err := (&Native{CC: cc}).Shared(context.Background(), "int x;")
	if err == nil {
		t.Fatal("a compiler that never exits gave no error")
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the run returned after %v, for a limit of 1s", d)
	}
}

// TestNativeCFlags: -mavx2 only on x86-64 with AVX2 requested, -mno-fma on
// every x86-64 build and after -mavx2 (a later flag wins), no ISA flag
// elsewhere, and the exactness flags always.
func TestNativeCFlags(t *testing.T) {
	for _, tc := range []struct {
		arch string
		avx2 bool
		isa  []string
	}{
		{"amd64", false, []string{"-mno-fma"}},
		{"amd64", true, []string{"-mavx2", "-mno-fma"}},
		{"arm64", true, nil},
	} {
		flags := nativeCFlags(tc.arch, tc.avx2)
		var isa []string
		for _, f := range flags {
			if strings.HasPrefix(f, "-m") {
				isa = append(isa, f)
			}
		}
		if diff := cmp.Diff(tc.isa, isa); diff != "" {
			t.Errorf("%s avx2=%v: ISA flags (-want +got):\n%s", tc.arch, tc.avx2, diff)
		}
		for _, need := range []string{"-ffp-contract=off", "-fno-fast-math", "-O3"} {
			if !slices.Contains(flags, need) {
				t.Errorf("%s avx2=%v: %v lacks %s", tc.arch, tc.avx2, flags, need)
			}
		}
	}
}

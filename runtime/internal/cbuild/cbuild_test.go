package cbuild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
		{"simd128 only", module("+simd128", "+mutable-globals"), false},
		{"no section", []byte("\x00asm\x01\x00\x00\x00"), false},
		{"relaxed simd used", module("+simd128", "+relaxed-simd"), true},
		{"relaxed simd required", module("=relaxed-simd"), true},
		{"relaxed simd disallowed", module("-relaxed-simd"), false},
		{"not wasm", []byte("hello"), true},
		{"truncated section", module("+simd128")[:12], true},
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
// toolchain and checks the module: SIMD is on, relaxed SIMD is not, and
// no fused multiply-add instruction appears in its disassembly.
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
	if !slices.Contains(feats, "+simd128") || slices.Contains(feats, "+relaxed-simd") {
		t.Errorf("target features %v: want +simd128 and no relaxed-simd", feats)
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
	if !strings.Contains(dis, "f32x4.mul") || !strings.Contains(dis, "f32x4.add") {
		t.Errorf("expected separate f32x4.mul and f32x4.add:\n%s", dis)
	}
	for _, bad := range []string{"fma", "madd", "relaxed"} {
		if strings.Contains(dis, bad) {
			t.Errorf("disassembly contains %q:\n%s", bad, dis)
		}
	}
}

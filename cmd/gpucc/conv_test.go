package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExplainConv compares the --explain plan of a 3×3 convolution with
// its bias and relu (an implicit GEMM, its tile shown) and a depthwise
// 3×3 after it (the window kernel) with testdata/conv/conv.explain
// (-update rewrites it).
func TestExplainConv(t *testing.T) {
	graph, err := filepath.Abs(filepath.Join("testdata", "conv", "conv.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, v, code := gpucc(t, "", "build", graph, "-o", t.TempDir(), "--explain", "--targets", "wgsl,glsl,c")
	if code != 0 {
		t.Fatalf("exit %d: %s %v", code, out, v)
	}
	golden := filepath.Join("testdata", "conv", "conv.explain")
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("--explain differs from %s (-want +got):\n%s", golden, diff)
	}
}

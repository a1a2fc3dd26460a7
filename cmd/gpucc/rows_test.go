package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExplainRows compares the --explain plans of softmax, layernorm and
// a per-row cross-entropy, each one rows kernel (and four kernels or more
// on webgl2, as the plan says), and of attention, softmax(q·kᵀ·s)·v, three
// kernels (a matmul with the scale in its epilogue, the rows kernel, a
// matmul), with the golden files in testdata/rows (-update rewrites them).
func TestExplainRows(t *testing.T) {
	for _, name := range []string{"softmax", "layernorm", "cross_entropy", "attention"} {
		t.Run(name, func(t *testing.T) {
			graph, err := filepath.Abs(filepath.Join("testdata", "rows", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			out, v, code := gpucc(t, "", "build", graph, "-o", t.TempDir(), "--explain", "--targets", "wgsl,glsl,c")
			if code != 0 {
				t.Fatalf("exit %d: %s %v", code, out, v)
			}
			golden := filepath.Join("testdata", "rows", name+".explain")
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
		})
	}
}

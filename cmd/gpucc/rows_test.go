package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExplainRows compares the --explain plans of softmax and layernorm,
// each one rows kernel (and four kernels on webgl2, as the plan says),
// with the golden files in testdata/rows (-update rewrites them).
func TestExplainRows(t *testing.T) {
	for _, name := range []string{"softmax", "layernorm"} {
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

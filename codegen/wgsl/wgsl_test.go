package wgsl_test

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGolden generates the WGSL of every example graph and compares it with
// testdata/NAME.wgsl. A refactor that changes no kernel changes no file.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.json")
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			doc, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			g, err := ir.DecodeBytes(doc, ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := passes.Compile(g, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			shaders, err := wgsl.Target{}.Emit(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range shaders {
				b.WriteString(s.Source)
				b.WriteString("\n")
			}
			path := filepath.Join("testdata", name+".wgsl")
			if *update {
				os.MkdirAll("testdata", 0o755)
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("%s changed (-want +got):\n%s", path, diff)
			}
		})
	}
}

// TestConstantsAreNotInTheSource checks that two graphs differing only in
// constants share their WGSL (constants travel in the uniform block).
func TestConstantsAreNotInTheSource(t *testing.T) {
	src := func(c float32) (string, []byte) {
		b := ir.NewBuilder()
		x := b.Input(ir.Shape{4}, []float32{1, 2, 3, 4})
		b.Output("y", x.AddScalar(c).MulScalar(c))
		g, _ := b.Build(ir.Limits{})
		p, _, _ := passes.Compile(g, passes.Options{})
		s, _ := wgsl.Target{}.Emit(p)
		return s[0].Source, s[0].Params
	}
	s1, p1 := src(0.5)
	s2, p2 := src(-7)
	if s1 != s2 {
		t.Errorf("source depends on constants:\n%s\n%s", s1, s2)
	}
	if string(p1) == string(p2) {
		t.Error("params do not carry the constants")
	}
	// A nest's constants (pad's, an attribute) travel there too.
	pad := func(c float32) (string, []byte) {
		b := ir.NewBuilder()
		x := b.Input(ir.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6})
		b.Output("y", x.Pad([]int{1, 0, 0, 2}, ir.PadConstant, c).MulScalar(3))
		g, _ := b.Build(ir.Limits{})
		p, _, _ := passes.Compile(g, passes.Options{})
		s, _ := wgsl.Target{}.Emit(p)
		return s[0].Source, s[0].Params
	}
	s1, p1 = pad(0.5)
	s2, p2 = pad(float32(math.Copysign(0, -1)))
	if s1 != s2 {
		t.Errorf("a pad's source depends on its constant:\n%s\n%s", s1, s2)
	}
	if string(p1) == string(p2) {
		t.Error("params do not carry the pad's constant")
	}
}

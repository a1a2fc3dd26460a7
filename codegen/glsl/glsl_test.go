package glsl

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

var update = flag.Bool("update", false, "rewrite the golden .glsl files under testdata")

// plan compiles a protocol v1 graph file to a Plan.
func plan(t *testing.T, path string) (*ir.Program, *Plan) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := ir.DecodeBytes(raw, ir.Limits{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	p, _, err := passes.Compile(g, passes.Options{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	pl, err := Target{}.Emit(p)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p.Program(), pl
}

// render is the golden text of a plan: its textures, then every pass with
// its bindings and source.
func render(pl *Plan) string {
	var b strings.Builder
	for i, tx := range pl.Textures {
		fmt.Fprintf(&b, "// tex%d: buf%d, %d elements in %dx%d\n", i, tx.Buffer, tx.Len, tx.Width, tx.Height)
	}
	for _, ps := range pl.Passes {
		fmt.Fprintf(&b, "\n// ==== %s: in %v -> out %v, %dx%d, free %v\n", ps.Name, ps.Inputs, ps.Outputs, ps.Width, ps.Height, ps.Free)
		b.WriteString(ps.Source)
	}
	return b.String()
}

func graphs(t *testing.T) []string {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test graphs: %v", err)
	}
	return files
}

func TestGolden(t *testing.T) {
	for _, f := range graphs(t) {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			_, pl := plan(t, f)
			got := render(pl)
			golden := strings.TrimSuffix(f, ".json") + ".glsl"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s changed; diff it against the output of go test -update:\n%s", golden, got)
			}
		})
	}
}

// TestGlslangValidator compiles every generated shader with the Khronos
// reference compiler as GLSL ES 3.00.
func TestGlslangValidator(t *testing.T) {
	bin, err := exec.LookPath("glslangValidator")
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_GLSL") != "" {
			t.Fatal("glslangValidator not found and GPUCC_REQUIRE_GLSL is set")
		}
		t.Skip("glslangValidator not found (Debian: glslang-tools)")
	}
	dir := t.TempDir()
	check := func(t *testing.T, stage, name, src string) {
		path := filepath.Join(dir, name+"."+stage)
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bin, "-S", stage, path).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s\n%s", name, err, out, src)
		}
	}
	check(t, "vert", "vertex", Vertex)
	for _, f := range graphs(t) {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			_, pl := plan(t, f)
			for _, ps := range pl.Passes {
				check(t, "frag", name+"_"+ps.Name, ps.Source)
			}
		})
	}
	// The convolution and pooling suite, maxpool2d_grad among them (the
	// goldens above predate it).
	for _, c := range append(irtest.Convs(), irtest.Pools()...) {
		name := strings.ReplaceAll(c.Name, "/", "_")
		t.Run(name, func(t *testing.T) {
			p, _, err := passes.Compile(c.Graph, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			pl, err := Target{}.Emit(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, ps := range pl.Passes {
				check(t, "frag", name+"_"+ps.Name, ps.Source)
			}
		})
	}
	// The split order's parts and their combine (the split pass, under
	// SplitSums), from the attention nest.
	t.Run("attention-parts", func(t *testing.T) {
		defer func(old int) { ir.AttentionSplit = old }(ir.AttentionSplit)
		ir.AttentionSplit = 3
		c := irtest.AttentionCase{B: 2, S: 5, T: 100, D: 8, E: 8, Scale: 0.5, Mask: irtest.MaskPadding, NonFinite: true}
		p, _, err := passes.Compile(c.Graph(1), passes.Options{SplitSums: true, Limits: ir.Limits{NonFinite: true}})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(p.Program().Kernels); n != 2 {
			t.Fatalf("%d kernels, want the parts and their combine:\n%s", n, p.Program())
		}
		pl, err := Target{}.Emit(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, ps := range pl.Passes {
			check(t, "frag", "attention_"+ps.Name, ps.Source)
		}
	})
}

func TestSumPasses(t *testing.T) {
	tests := []struct {
		n     int
		split bool  // passes.Options.SplitSums
		fans  []int // texels written by each pass
	}{
		{1, false, []int{1}},
		{2, false, []int{1}},
		{16, false, []int{1}},
		{17, false, []int{2, 1}},
		{40, false, []int{4, 1}},
		{256, false, []int{16, 1}},
		{1 << 20, false, []int{65536, 4096, 256, 16, 1}},
		// Split: the block kernel stops at its 2^16/4096 = 16 block sums
		// (4096 leaves each), then the final kernel sums those.
		{1 << 16, true, []int{4096, 256, 16, 1}},
		// 2^17 padded leaves, 32 blocks: the last 4096 leaves of 16 blocks
		// hold only padding.
		{1<<16 + 1, true, []int{8192, 512, 32, 2, 1}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n, tt.split), func(t *testing.T) {
			data := make([]float32, tt.n)
			b := ir.NewBuilder()
			b.Output("s", b.Input(ir.Shape{tt.n}, data).Sum())
			g, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := passes.Compile(g, passes.Options{SplitSums: tt.split})
			if err != nil {
				t.Fatal(err)
			}
			if split := len(p.Program().Kernels) > 1 && p.Program().Kernels[0].Blocks > 1; split != tt.split {
				t.Fatalf("sum split = %v, want %v:\n%s", split, tt.split, p)
			}
			pl, err := Target{}.Emit(p)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, ps := range pl.Passes {
				got = append(got, pl.Textures[ps.Outputs[0]].Len)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.fans) {
				t.Errorf("pass sizes %v, want %v", got, tt.fans)
			}
		})
	}
}

func TestPeakTexels(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want int64
	}{
		// The input and the first partials coexist; then the input is freed.
		{"sum 2^20", 1 << 20, 1<<20 + 65536},
		{"sum 40", 40, 40 + 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := ir.NewBuilder()
			b.Output("s", b.Input(ir.Shape{tt.n}, make([]float32, tt.n)).Sum())
			g, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := passes.Compile(g, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			pl, err := Target{}.Emit(p)
			if err != nil {
				t.Fatal(err)
			}
			got := pl.PeakTexels(func(t int) bool { return t < len(p.Program().Buffers) && p.Program().Buffers[t].Input })
			if got != tt.want {
				t.Errorf("peak %d texels, want %d", got, tt.want)
			}
		})
	}
}

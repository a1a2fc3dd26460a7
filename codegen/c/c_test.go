package c

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

var update = flag.Bool("update", false, "rewrite the golden C files in testdata/")

func seq(n int, scale float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(i%13-6) * scale
	}
	return out
}

// goldens are the graphs whose C is kept under testdata/<name>.c.
var goldens = []struct {
	name  string
	build func(b *ir.Builder)
}{
	{"elementwise_chain", func(b *ir.Builder) {
		x := b.Input(ir.Shape{1000}, seq(1000, 0.5))
		y := b.Input(ir.Shape{1000}, seq(1000, 0.25))
		z := b.Input(ir.Shape{1000}, seq(1000, 2))
		b.Output("y", x.Mul(y).Add(z).MulScalar(0.1).Relu())
	}},
	{"relu_matmul_bias", func(b *ir.Builder) {
		a := b.Input(ir.Shape{3, 4}, seq(12, 0.5))
		w := b.Input(ir.Shape{4, 5}, seq(20, 0.25))
		bias := b.Input(ir.Shape{3, 5}, seq(15, 1))
		b.Output("y", a.MatMul(w).Add(bias).Relu())
	}},
	{"sum_prologue", func(b *ir.Builder) {
		x := b.Input(ir.Shape{1000}, seq(1000, 0.5))
		b.Output("s", x.Mul(x).Relu().Sum())
	}},
	{"life", func(b *ir.Builder) {
		x := b.Input(ir.Shape{5, 7}, seq(35, 1))
		b.Output("next", x.Positive().Life())
	}},
	{"transposed_matmul", func(b *ir.Builder) {
		a := b.Input(ir.Shape{4, 5}, seq(20, 0.5))
		w := b.Input(ir.Shape{5, 3}, seq(15, 0.25))
		b.Output("y", w.T().MatMul(a.T()))
	}},
}

// generate compiles build's graph and returns its C unit.
func generate(t *testing.T, build func(b *ir.Builder)) *Unit {
	t.Helper()
	b := ir.NewBuilder()
	build(b)
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	p, _, err := passes.Compile(g, passes.Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	u, err := Target{}.Emit(p)
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, p)
	}
	return u
}

func TestGolden(t *testing.T) {
	for _, tc := range goldens {
		t.Run(tc.name, func(t *testing.T) {
			got := generate(t, tc.build).Source
			path := filepath.Join("testdata", tc.name+".c")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s changed (-want +got); run go test -update if intended:\n%s", path, diff)
			}
		})
	}
}

// TestKernels checks the calling convention: one export per kernel, its
// buffers inputs then outputs, scratch for the packed panels (a transposed
// b is gathered into them: no copy), and its tiles: 16-row blocks.
func TestKernels(t *testing.T) {
	u := generate(t, goldens[4].build) // transposed matmul
	if len(u.Kernels) != 1 {
		t.Fatalf("got %d kernels, want 1", len(u.Kernels))
	}
	k := u.Kernels[0]
	if k.Export != "kernel0" || !k.Scratch || len(k.Buffers) != 3 {
		t.Errorf("kernel = %+v, want kernel0 with 3 buffers and scratch", k)
	}
	if want := 5*16 + 3*5; u.Scratch != want { // b's panel of 16 columns, a's strips
		t.Errorf("scratch = %d floats, want %d", u.Scratch, want)
	}
	if k.Tiles != 1 || k.Work <= 0 {
		t.Errorf("kernel0 has %d tiles and work %d; want 1 tile (3 rows) and some work", k.Tiles, k.Work)
	}
	if !strings.Contains(u.Source, "EXPORT void kernel0(") {
		t.Errorf("source lacks the export:\n%s", u.Source)
	}
}

// TestEmitSealed: the emitter takes a sealed program (ir.Sealed, which
// only ir.Seal makes, so an unsealed one does not compile) and trusts it.
func TestEmitSealed(t *testing.T) {
	p := &ir.Program{Buffers: []ir.Buffer{{Len: 1, Shape: ir.Shape{1}, Input: true, Data: []float32{1}}},
		Outputs: []ir.ProgramOutput{{Name: "x", Shape: ir.Shape{1}, Buffer: 0}}}
	sp, err := ir.Seal(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Target{}).Emit(sp); err != nil {
		t.Errorf("Emit of the sealed program: %v", err)
	}
}

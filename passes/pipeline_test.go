package passes

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s changed (-want +got; run with -update if intended):\n%s", path, diff)
	}
}

// TestGoldenPasses dumps the IR after every pass for each example graph.
func TestGoldenPasses(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.json")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
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
			var b strings.Builder
			fmt.Fprintf(&b, "== input\n%s", g)
			for _, p := range Pipeline {
				var dump bytes.Buffer
				if _, _, err := Compile(g, Options{DumpAfter: p.Name, Dump: &dump}); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, "== after %s\n%s", p.Name, dump.String())
			}
			golden(t, name+".ir", b.String())
		})
	}
}

// Before/after tables for single graph passes.
func TestGraphPasses(t *testing.T) {
	tests := []struct {
		pass  string
		build func(b *ir.Builder)
		want  string
	}{
		{"fold", func(b *ir.Builder) {
			x := b.Full(ir.Shape{2}, 0.1)
			y := x.MulScalar(3).Add(x)
			b.Output("y", y.Add(b.Input(ir.Shape{2}, []float32{1, 2})))
		}, "%0 = full 0.1 : [2]\n%1 = full 0.3 : [2]\n%2 = full 0.4 : [2]\n%3 = input (2 values) : [2]\n%4 = add %2, %3 : [2]\nout \"y\" = %4\n"},
		{"cse", func(b *ir.Builder) {
			x := b.Input(ir.Shape{2}, []float32{1, 2})
			y := b.Input(ir.Shape{2}, []float32{3, 4})
			b.Output("a", x.Mul(y).Relu())
			b.Output("b", y.Mul(x).Relu())
		}, "%0 = input (2 values) : [2]\n%1 = input (2 values) : [2]\n%2 = mul %0, %1 : [2]\n%3 = relu %2 : [2]\n%4 = mul %1, %0 : [2]\n%5 = relu %2 : [2]\nout \"a\" = %3\nout \"b\" = %3\n"},
		{"dce", func(b *ir.Builder) {
			x := b.Input(ir.Shape{2}, []float32{1, 2})
			x.Relu()
			b.Output("p", x.Positive())
		}, "%0 = input (2 values) : [2]\n%1 = positive %0 : [2]\nout \"p\" = %1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.pass, func(t *testing.T) {
			b := ir.NewBuilder()
			tt.build(b)
			g, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			st := &State{Graph: g.Clone(), Origin: make([]ir.NodeID, len(g.Nodes))}
			for _, p := range Pipeline {
				if p.Name == tt.pass {
					if err := p.Run(st); err != nil {
						t.Fatal(err)
					}
				}
			}
			if diff := cmp.Diff(tt.want, st.Graph.String()); diff != "" {
				t.Errorf("after %s (-want +got):\n%s", tt.pass, diff)
			}
		})
	}
}

// checkDifferential compiles g (fused, with maxBindings) and compares the
// lowered program's outputs with cpuref.Eval, bit for bit.
func checkDifferential(t *testing.T, g *ir.Graph, opts Options) {
	t.Helper()
	opts.CheckEach = true // a pass that breaks the IR is named
	p, _, err := Compile(g, opts)
	if err != nil {
		t.Fatalf("compile: %v\n%s", err, g)
	}
	vals := cpuref.Eval(g)
	got := cpuref.RunProgram(p.Program())
	for _, o := range g.Outputs {
		w, gv := vals[o.ID], got[o.Name]
		if len(w) != len(gv) {
			t.Fatalf("output %s: %d values, want %d", o.Name, len(gv), len(w))
		}
		for i := range w {
			if math.Float32bits(w[i]) != math.Float32bits(gv[i]) && !(w[i] != w[i] && gv[i] != gv[i]) {
				t.Fatalf("output %s[%d] = %v, cpuref says %v\ngraph:\n%s\nprogram:\n%s", o.Name, i, gv[i], w[i], g, p)
			}
		}
	}
}

func TestDifferentialRandom(t *testing.T) {
	for seed := range 300 {
		g := irtest.Random(uint64(seed), 16)
		checkDifferential(t, g, Options{MaxBindings: 3 + seed%6})
		checkDifferential(t, g, Options{NoFuse: true})
	}
}

func TestDifferentialRandomViews(t *testing.T) {
	for seed := range 300 {
		g := irtest.RandomViews(uint64(seed), 16)
		checkDifferential(t, g, Options{MaxBindings: 3 + seed%6})
		checkDifferential(t, g, Options{NoFuse: true})
	}
}

func TestDifferentialRandomOps(t *testing.T) {
	for seed := range 200 {
		g := irtest.RandomOps(uint64(seed), 16)
		checkDifferential(t, g, Options{MaxBindings: 3 + seed%6})
		checkDifferential(t, g, Options{NoFuse: true})
	}
}

// TestFoldKeepsOverflowingValue: positive(full(3e38)*10) was refused with
// "pass fold left an invalid graph" (issue 11, item 2): fold made a full of
// +Inf, which no full may hold. It now leaves the overflowing node to run
// time, where positive hides the Inf again and the answer is 1, as for the
// same graph built from an input.
func TestFoldKeepsOverflowingValue(t *testing.T) {
	for _, leaf := range []string{"full", "input"} {
		t.Run(leaf, func(t *testing.T) {
			b := ir.NewBuilder()
			x := b.Full(ir.Shape{2}, 3e38)
			if leaf == "input" {
				x = b.Input(ir.Shape{2}, []float32{3e38, 3e38})
			}
			b.Output("y", x.MulScalar(10).Positive())
			b.Output("s", x.Add(x).Sum().Positive())
			b.Output("d", x.DivScalar(1e-3).Exp().Neg().Positive())
			g, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := Compile(g, Options{})
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			got := cpuref.RunProgram(p.Program())
			want := map[string][]float32{"y": {1, 1}, "s": {1}, "d": {0, 0}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRegressions holds the differential fuzzer's findings, by name: each
// a graph file under testdata/regressions (ir.Encode of the failing graph,
// not a generator seed, so a change to irtest's deck cannot make a name
// test another graph), with the options it failed under. The directory
// holds no file the table does not name.
func TestRegressions(t *testing.T) {
	tests := []struct {
		file     string // under testdata/regressions, without .json
		bindings int
	}{
		// irtest.Random(76, 31): two groups each read the other's value,
		// one through a life kernel: group dependencies were cached per
		// node and went stale when a group grew, so the merge that closed
		// the cycle looked legal.
		{"kernel-cycle-through-life", 8},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "regressions", tt.file+".json")
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g, err := ir.DecodeBytes(raw, ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(bytes.TrimSpace(ir.Encode(g)), bytes.TrimSpace(raw)) {
				t.Fatalf("%s is not ir.Encode's form of its graph: rewrite it with ir.Encode", path)
			}
			checkDifferential(t, g, Options{MaxBindings: tt.bindings})
		})
	}
	files, err := filepath.Glob(filepath.Join("testdata", "regressions", "*"))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, tt := range tests {
		named[tt.file] = true
	}
	for _, f := range files {
		if !named[strings.TrimSuffix(filepath.Base(f), ".json")] {
			t.Errorf("%s: not in TestRegressions (say why it is there)", f)
		}
	}
}

// FuzzPipeline is the differential fuzzer: random valid graphs through the
// optimised pipeline must match unoptimised cpuref evaluation bit for bit.
// A finding becomes a graph file under testdata/regressions, named in
// TestRegressions.
func FuzzPipeline(f *testing.F) {
	for seed := range 8 {
		f.Add(uint64(seed), uint8(12), uint8(8))
	}
	f.Fuzz(func(t *testing.T, seed uint64, size, bindings uint8) {
		opts := Options{MaxBindings: 3 + int(bindings%6), SplitSums: bindings&64 != 0}
		checkDifferential(t, irtest.Random(seed, 1+int(size%40)), opts)
		// The same seed drives the generator with views (broadcast, reshape),
		// and with every elementwise op over extreme values.
		checkDifferential(t, irtest.RandomViews(seed, 1+int(size%40)), opts)
		checkDifferential(t, irtest.RandomOps(seed, 1+int(size%40)), opts)
	})
}

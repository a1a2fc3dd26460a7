package passes

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

func seq(n int, scale float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(i%13-6) * scale
	}
	return out
}

// compile builds, compiles and checks one graph against cpuref.Eval.
func compile(t *testing.T, build func(b *ir.Builder), opts Options) *ir.Program {
	t.Helper()
	b := ir.NewBuilder()
	build(b)
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	p, _, err := Compile(g, opts)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	want := map[string][]float32{}
	vals := cpuref.Eval(g)
	for _, o := range g.Outputs {
		want[o.Name] = vals[o.ID]
	}
	if diff := cmp.Diff(want, cpuref.RunProgram(p.Program())); diff != "" {
		t.Errorf("program differs from cpuref (-want +got):\n%s\n%s", diff, p)
	}
	return p.Program()
}

func TestKernelCounts(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *ir.Builder)
		want  int
	}{
		{"elementwise tree, several outputs", func(b *ir.Builder) {
			x := b.Input(ir.Shape{4, 5}, seq(20, 0.5))
			y := b.Input(ir.Shape{4, 5}, seq(20, 0.25))
			p := x.Mul(y)
			q := p.AddScalar(1).Relu()
			r := x.Sub(y).Positive().Mul(q)
			b.Output("q", q)
			b.Output("r", r)
			b.Output("s", p.Add(r).MulScalar(3))
		}, 1},
		{"relu(matmul+bias)", func(b *ir.Builder) {
			a := b.Input(ir.Shape{3, 4}, seq(12, 0.5))
			w := b.Input(ir.Shape{4, 5}, seq(20, 0.25))
			bias := b.Input(ir.Shape{3, 5}, seq(15, 1))
			b.Output("y", a.MatMul(w).Add(bias).Relu())
		}, 1},
		{"matmul of transposes", func(b *ir.Builder) {
			a := b.Input(ir.Shape{4, 5}, seq(20, 0.5))
			w := b.Input(ir.Shape{5, 3}, seq(15, 0.25))
			b.Output("y", w.T().MatMul(a.T()))
		}, 1},
		{"only fulls", func(b *ir.Builder) {
			x := b.Full(ir.Shape{3, 3}, 2)
			y := b.Full(ir.Shape{3, 3}, 0.1)
			z := x.Mul(y).AddScalar(1).MatMul(y)
			b.Output("z", z.Sum())
			b.Output("w", z.T().Life())
		}, 0},
		{"sum with prologue", func(b *ir.Builder) {
			x := b.Input(ir.Shape{100}, seq(100, 0.5))
			b.Output("s", x.Mul(x).Relu().Sum())
		}, 1},
		{"axis sums and maxes with prologues", func(b *ir.Builder) {
			x := b.Input(ir.Shape{4, 100}, seq(400, 0.5))
			b.Output("rows", x.Mul(x).Relu().SumAxes(false, 1))
			b.Output("cols", x.AddScalar(1).MaxAxes(true, 0))
			b.Output("t", x.T().Neg().SumAxes(false, 0))
		}, 3},
		{"reduction epilogues", func(b *ir.Builder) {
			x := b.Input(ir.Shape{4, 100}, seq(400, 0.5))
			bias := b.Input(ir.Shape{4, 1}, seq(4, 1))
			v := x.Mul(x).SumAxes(true, 1).MulScalar(0.01).Add(bias.Mul(bias)).AddScalar(1e-5).Rsqrt()
			b.Output("v", v)
			b.Output("w", v.Neg())
			m := x.MaxAxes(false)
			b.Output("m", m.Mul(m))
		}, 2},
		{"an epilogue through keepdims false's reshape", func(b *ir.Builder) {
			x := b.Input(ir.Shape{4, 100}, seq(400, 0.5))
			b.Output("mean", x.SumAxes(false, 1).MulScalar(0.01))
		}, 1},
		{"the reduction's argument group cannot be its epilogue", func(b *ir.Builder) {
			x := b.Input(ir.Shape{4, 1}, seq(4, 0.5))
			p := x.MulScalar(3)
			b.Output("y", p.SumAxes(true, 1).Add(p))
		}, 2},
		{"reduction of a reduction", func(b *ir.Builder) {
			x := b.Input(ir.Shape{3, 4, 5}, seq(60, 0.5))
			b.Output("m", x.SumAxes(true, 2).MaxAxes(false, 0))
		}, 2},
		{"transpose output", func(b *ir.Builder) {
			x := b.Input(ir.Shape{2, 3}, seq(6, 1))
			b.Output("t", x.T())
			b.Output("x", x)
		}, 1},
		{"self transpose is not fused into its own group", func(b *ir.Builder) {
			x := b.Input(ir.Shape{3, 3}, seq(9, 1))
			r := x.Relu()
			b.Output("y", r.Add(r.T()))
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := compile(t, tt.build, Options{})
			if got := len(p.Kernels); got != tt.want {
				t.Errorf("got %d kernels, want %d:\n%s", got, tt.want, p)
			}
			compile(t, tt.build, Options{NoFuse: true})
		})
	}
}

func TestSplitOverBindingLimit(t *testing.T) {
	build := func(b *ir.Builder) {
		acc := b.Input(ir.Shape{7}, seq(7, 1))
		for i := 0; i < 12; i++ {
			acc = acc.Add(b.Input(ir.Shape{7}, seq(7, float32(i+1))))
		}
		b.Output("y", acc)
	}
	p := compile(t, build, Options{})
	if len(p.Kernels) < 2 {
		t.Fatalf("13 inputs in one kernel: want a split, got\n%s", p)
	}
	for _, k := range p.Kernels {
		if k.Bindings() > DefaultMaxBindings {
			t.Errorf("kernel %s binds %d buffers, limit %d", k.Name, k.Bindings(), DefaultMaxBindings)
		}
	}
}

func TestTileFitsDeviceLimits(t *testing.T) {
	limits := ir.Limits{MaxElements: 1 << 22}
	plan := func(t *testing.T, m, n int, opts Options) *ir.Program {
		b := ir.NewBuilder()
		b.Output("y", b.Input(ir.Shape{m, 8}, seq(m*8, 0.01)).MatMul(b.Input(ir.Shape{8, n}, seq(8*n, 0.02))))
		g, err := b.Build(limits)
		if err != nil {
			t.Fatal(err)
		}
		opts.Limits = limits
		p, _, err := Compile(g, opts)
		if err != nil {
			t.Fatal(err)
		}
		return p.Program()
	}
	tests := []struct {
		name    string
		m, n    int
		threads int
		storage int
		want    ir.Tile
	}{
		{"defaults", 2048, 2048, 0, 0, TileLarge},
		{"fewer than WaveGroups of TileLarge", 1024, 1024, 0, 0, TileWide},
		{"small workgroup memory", 2048, 2048, 256, 8192, TileWide},
		{"128 threads", 2048, 2048, 128, 16384, TileWide},
		{"few threads", 2048, 2048, 64, 16384, TileFallback},
		{"a narrow output", 1024, 16, 0, 0, ir.Tile{BM: 16, BN: 16, TM: 1, TN: 1, BK: 16, Vector: 1}},
		{"a narrow output, few threads", 1024, 16, 64, 16384, TileFallback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plan(t, tt.m, tt.n, Options{MaxInvocations: tt.threads, MaxWorkgroupStorage: tt.storage})
			if got := p.Kernels[0].Tile; got != tt.want {
				t.Errorf("tile %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSplitSums(t *testing.T) {
	for _, n := range []int{SumSplitMin - 1, SumSplitMin, 100_003, 1 << 20} {
		build := func(b *ir.Builder) {
			x := b.Input(ir.Shape{n}, seq(n, 0.37))
			y := b.Input(ir.Shape{n}, seq(n, -1.1))
			b.Output("s", x.Mul(y).AddScalar(0.5).Sum())
		}
		p := compile(t, build, Options{SplitSums: true})
		want := 1
		if n >= SumSplitMin {
			want = 2
		}
		if len(p.Kernels) != want {
			t.Errorf("n=%d: %d kernels, want %d:\n%s", n, len(p.Kernels), want, p)
		}
	} // Per output: rows of SumSplitMin leaves split, into blocks per row.
	for _, n := range []int{SumSplitMin - 1, SumSplitMin + 3} {
		for _, op := range []ir.Op{ir.OpSum, ir.OpMax} {
			build := func(b *ir.Builder) {
				x := b.Input(ir.Shape{3, n}, seq(3*n, 0.37))
				if op == ir.OpSum {
					b.Output("s", x.MulScalar(1.5).SumAxes(false, 1))
				} else {
					b.Output("s", x.MulScalar(1.5).MaxAxes(true, 1))
					b.Output("cols", x.T().MaxAxes(false, 0))
				}
			}
			p := compile(t, build, Options{SplitSums: true})
			want := len(p.Outputs)
			if n >= SumSplitMin {
				want *= 2
			}
			if len(p.Kernels) != want {
				t.Errorf("n=%d %v: %d kernels, want %d:\n%s", n, op, len(p.Kernels), want, p)
			}
		}
	}
}

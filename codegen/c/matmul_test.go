package c_test

import (
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// TestMatmulShapes runs matmuls (natively codegen/c's packed mm: panels of
// b, strips of a, blocks of k; in wasm the unpacked tiles) on the native
// and wasm backends over odd, prime and
// power-of-two shapes: k across a block boundary (256) and below it, m
// past a strip block (64) and not a multiple of the tile's rows, n not a
// multiple of a panel's 8 or 16 columns; with a and b transposed, and with
// an epilogue (5×3×9 with one caught the packed routine wrong under
// wasm32). Every output must have cpuref's bits.
func TestMatmulShapes(t *testing.T) {
	shapes := [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 31, 13}, {64, 64, 64}, {65, 257, 33}, {131, 300, 129},
		{2, 1024, 17}, {257, 3, 520}, {16, 512, 16}, {5, 3, 9}, {4, 1, 8}, {8, 8, 65}}
	for _, name := range []string{"native", "wasm"} {
		t.Run(name, func(t *testing.T) {
			dev := openBackend(t, name)
			for _, s := range shapes {
				m, k, n := s[0], s[1], s[2]
				bd := ir.NewBuilder()
				in := func(seed uint64, r, c int) ir.Tensor {
					v := reduceData("random", r*c, seed)
					for i := range v {
						if i%7 == 3 {
							v[i] = 0
						}
					}
					return bd.Input(ir.Shape{r, c}, v)
				}
				a, b := in(1, m, k), in(2, k, n)
				at, bt := in(3, k, m), in(4, n, k)
				bd.Output("ab", a.MatMul(b))
				bd.Output("atb", at.T().MatMul(b))
				bd.Output("abt", a.MatMul(bt.T()))
				bd.Output("abt-epilogue", a.MatMul(bt.T()).MulScalar(0.5))
				bd.Output("atbt-sum", at.T().MatMul(bt.T()).SumAxes(false, 0, 1))
				bd.Output("relu", a.MatMul(b).AddScalar(0.5).Relu())
				limits := ir.Limits{MaxStorageBytes: 64 << 20, MaxOps: 1 << 40}
				g, err := bd.Build(limits)
				if err != nil {
					t.Fatal(err)
				}
				for _, prof := range []string{"", "native"} {
					opts := passes.Options{Limits: limits}
					if prof != "" {
						opts = passes.Profile{Name: prof}.Options(limits)
					}
					p, _, err := passes.Compile(g, opts)
					if err != nil {
						t.Fatal(err)
					}
					got, want := run(t, dev, p), cpuref.RunProgram(p.Program())
					for _, o := range p.Program().Outputs {
						for i, w := range want[o.Name] {
							if gb, wb := math.Float32bits(got[o.Name][i]), math.Float32bits(w); gb != wb {
								t.Errorf("%s %dx%dx%d profile %q: %s[%d] = %#08x, cpuref %#08x", name, m, k, n, prof, o.Name, i, gb, wb)
								break
							}
						}
					}
				}
			}
		})
	}
}

// TestMatmulEpilogues runs one matmul kernel per epilogue (each graph has
// a single output, so the epilogue is inlined after mm as in a model)
// over 5×3×9, the shape whose relu wazero 1.12's amd64 compiler got wrong
// through the packed routine (see matmulPrelude's doc), its neighbours one
// step along each of m, k and n, and shapes just under, at and over the
// tiles' rows (2 SSE, 4 AVX2) and panels' columns (8, 16). Every element
// must have cpuref's bits on native and wasm: with the packed routine
// compiled for wasm, relu, max and min (each a v128.bitselect) fail here at
// 5×3×9, 5×4×9 and 5×3×10.
func TestMatmulEpilogues(t *testing.T) {
	shapes := [][3]int{{5, 3, 9}, {4, 3, 9}, {6, 3, 9}, {5, 2, 9}, {5, 4, 9}, {5, 3, 8}, {5, 3, 10},
		{2, 5, 8}, {3, 7, 15}, {4, 9, 16}, {5, 11, 17}, {9, 6, 33}}
	epilogues := []struct {
		name string
		f    func(c, row ir.Tensor) ir.Tensor
	}{
		{"relu", func(c, _ ir.Tensor) ir.Tensor { return c.AddScalar(0.5).Relu() }},
		{"relu-bias", func(c, row ir.Tensor) ir.Tensor { return c.Add(row.Broadcast(c.Shape())).Relu() }},
		{"neg-relu", func(c, _ ir.Tensor) ir.Tensor { return c.Neg().Relu() }},
		{"max", func(c, _ ir.Tensor) ir.Tensor { return c.MaximumScalar(-0.25) }},
		{"min", func(c, _ ir.Tensor) ir.Tensor { return c.MinimumScalar(0.25) }},
	}
	limits := ir.Limits{MaxStorageBytes: 64 << 20, MaxOps: 1 << 40}
	for _, name := range []string{"native", "wasm"} {
		t.Run(name, func(t *testing.T) {
			dev := openBackend(t, name)
			for _, s := range shapes {
				m, k, n := s[0], s[1], s[2]
				for _, e := range epilogues {
					bd := ir.NewBuilder()
					in := func(seed uint64, shape ir.Shape) ir.Tensor {
						v := reduceData("random", shape.Len(), seed)
						for i := range v {
							if i%7 == 3 {
								v[i] = 0
							}
						}
						return bd.Input(shape, v)
					}
					a, b, row := in(1, ir.Shape{m, k}), in(2, ir.Shape{k, n}), in(5, ir.Shape{1, n})
					bd.Output(e.name, e.f(a.MatMul(b), row))
					g, err := bd.Build(limits)
					if err != nil {
						t.Fatal(err)
					}
					p, _, err := passes.Compile(g, passes.Options{Limits: limits})
					if err != nil {
						t.Fatal(err)
					}
					got, want := run(t, dev, p)[e.name], cpuref.RunProgram(p.Program())[e.name]
					for i, w := range want {
						if gb, wb := math.Float32bits(got[i]), math.Float32bits(w); gb != wb {
							t.Errorf("%s %dx%dx%d %s[%d] = %#08x, cpuref %#08x", name, m, k, n, e.name, i, gb, wb)
							break
						}
					}
				}
			}
		})
	}
}

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
					got, want := run(t, dev, p), cpuref.RunProgram(p)
					for _, o := range p.Outputs {
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

package gpucc_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestMatmulTilesExtremes runs every WGSL matmul kernel (the scalar one,
// the vec4 one, the staged one and its lean, unrolled and warp options:
// stagedTiles) on operands at float32's limits, bit for bit against
// cpuref (subnormals flushed where lavapipe flushes them, as CheckRun
// allows): A is irtest.Extremes (±0, subnormals, the least normals,
// ±3e38, ±MaxFloat32, 1 ± an ulp), B the same scaled by 2⁻¹³⁰, so that
// products run from ±MaxFloat32·2⁻¹³⁰ down through the subnormals to ±0
// (every sign of zero a product and a sum can give) while no sum
// overflows; on shapes with partial tiles along M, N and K, each operand
// plain or transposed, and shapes that every tile divides (the lean
// kernel's unguarded loads). A's row 0 makes every product of its
// outputs ±0 (their sum from the uniform +0 is +0: a driver that folded
// a literal +0 + p to p would give -0), its row 1 sums B's subnormals,
// and B's column 0 is -0.
func TestMatmulTilesExtremes(t *testing.T) {
	t.Run("webgpu", testMatmulTilesExtremes) // bench/device.sh's exact suite runs TestMatmul*/webgpu on the driver
}

func testMatmulTilesExtremes(t *testing.T) {
	tiles := append([]string{"8x8/1x1k8", "32x32/2x2k16", "64x64/4x4k16", "64x128/8x8k8v4", "128x128/8x8k16v4",
		"16x16/1x1k64", "8x16/1x1k128", "32x16/2x1k64"}, stagedTiles...) // the deep scalar tiles: the rule's single, the H100 table's thin ones
	type shape struct {
		m, k, n int
		ta, tb  bool
	}
	shapes := []shape{{63, 68, 132, false, false}, {64, 65, 68, true, false}, {65, 68, 63, false, true}, {68, 132, 65, true, true},
		{128, 24, 256, false, false}, {256, 16, 128, true, true}}
	for _, name := range tiles {
		tile, err := passes.ParseTile(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			rt := open(t, "webgpu", func(o *gpucc.Options) { o.Passes.Tile = &tile })
			for i, s := range shapes {
				if testing.Short() && i%2 == 1 {
					continue // 0, 2 and 4: partial tiles plain and with B transposed, and the lean kernel's divided sides
				}
				b := ir.NewBuilder()
				operand := func(vals []float32, rows, cols int, transposed bool) ir.Tensor {
					if transposed { // the same logical matrix, stored transposed
						tr := make([]float32, len(vals))
						for r := range rows {
							for c := range cols {
								tr[c*rows+r] = vals[r*cols+c]
							}
						}
						return b.Input(ir.Shape{cols, rows}, tr).T()
					}
					return b.Input(ir.Shape{rows, cols}, vals)
				}
				av, bv := irtest.Extremes(uint64(2*i+1), s.m*s.k), smallExtremes(uint64(2*i+2), s.k*s.n)
				for j := range s.k {
					av[j] = -0x1p-140                         // row 0: every product rounds to ±0, the sum is +0
					av[s.k+j] = 1 + 0x1p-23*float32(j%3-1)    // row 1: B's values, subnormals summed
					bv[j*s.n] = float32(math.Copysign(0, -1)) // column 0: -0
				}
				b.Output("y", operand(av, s.m, s.k, s.ta).MatMul(operand(bv, s.k, s.n, s.tb)))
				g, err := b.Build(ir.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				refFinite(t, g)
				t.Run(fmt.Sprintf("%dx%dx%d_t%v%v", s.m, s.k, s.n, s.ta, s.tb), func(t *testing.T) { checkRun(t, rt, g) })
			}
		})
	}
}

// smallExtremes is irtest.Extremes(seed, n) times 2⁻¹³⁰: its products with
// irtest.Extremes run from ±MaxFloat32·2⁻¹³⁰ (about ±0.25) down through
// the subnormals to ±0, so that a sum of them does not overflow.
func smallExtremes(seed uint64, n int) []float32 {
	v := irtest.Extremes(seed, n)
	for j := range v {
		v[j] *= 0x1p-130
	}
	return v
}

// refFinite fails the test where cpuref's outputs of g are not all finite
// (a sum overflowed: the seeds need changing), which would leave no bits
// to compare.
func refFinite(t *testing.T, g *ir.Graph) {
	t.Helper()
	vals := cpuref.Eval(g)
	for _, o := range g.Outputs {
		for _, v := range vals[o.ID] {
			if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
				t.Fatalf("output %s: a sum overflowed in cpuref: choose other seeds", o.Name)
			}
		}
	}
}

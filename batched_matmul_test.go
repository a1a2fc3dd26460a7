package gpucc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// batchedCases are batched matmuls [a] × [b] whose batch dimensions
// broadcast (numpy's rule), with odd and prime sizes that leave partial
// tiles: attention's [1,4,128,64] × [1,4,64,128], a batch against a
// matrix on either side, and 1s stretched on both.
var batchedCases = [][2]ir.Shape{
	{{1, 4, 128, 64}, {1, 4, 64, 128}},
	{{3, 7, 5}, {5, 11}},
	{{13, 6}, {2, 6, 9}},
	{{2, 1, 5, 3}, {1, 3, 3, 7}},
	{{4, 17, 19}, {4, 19, 23}},
	{{1, 2, 37, 8}, {3, 1, 8, 4}},
	{{2, 1, 9}, {1, 9, 1}},
	{{5, 33, 2}, {1, 2, 31}},
}

// batchedGraph is y = relu(a × b + bias) over case c, each operand plain
// or, when its flag is set, read through a transpose of its last two
// axes, and bias broadcast along the rows: the epilogue a batched matmul
// fuses like a 2-D one.
func batchedGraph(t *testing.T, c [2]ir.Shape, ta, tb bool, seed uint64) *ir.Graph {
	t.Helper()
	b := ir.NewBuilder()
	operand := func(s ir.Shape, transposed bool, seed uint64) ir.Tensor {
		if !transposed {
			return b.Input(s, irtest.Values(seed, s.Len(), 1))
		}
		r := len(s)
		st := append(append(ir.Shape{}, s[:r-2]...), s[r-1], s[r-2])
		return b.Input(st, irtest.Values(seed, s.Len(), 1)).T()
	}
	y := operand(c[0], ta, seed).MatMul(operand(c[1], tb, seed+1))
	n := y.Shape()[len(y.Shape())-1]
	bias := b.Input(ir.Shape{n}, irtest.Values(seed+2, n, 1))
	b.Output("y", y.Add(bias.Broadcast(y.Shape())).Relu())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestBatchedMatmul runs batched matmuls on every backend, each operand
// plain or transposed, and checks the bits against cpuref, whose batched
// matmul is the 2-D one per matrix (cpuref's TestBatchMatmulPerMatrix).
func TestBatchedMatmul(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for i, c := range batchedCases {
				for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					g := batchedGraph(t, c, tr[0], tr[1], uint64(10*i))
					t.Run(fmt.Sprintf("%v×%v_t%v%v", c[0], c[1], tr[0], tr[1]), func(t *testing.T) { checkRun(t, rt, g) })
				}
			}
		})
	}
}

// TestBatchedMatmulTiles runs the batched cases under each of the tiling
// pass's tiles on webgpu, the vec4 ones included: the batch offset of a
// workgroup never changes which products an output adds, or their order;
// the staged vec4 kernel's (ir.Tile.Stages) too, and its options (ir.Tile.Opts).
func TestBatchedMatmulTiles(t *testing.T) {
	for _, tile := range []ir.Tile{passes.TileLarge, passes.TileWide, passes.TileMedium, passes.TileSmall, passes.TileFallback,
		{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2}, {BM: 32, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 4, Stages: 1},
		{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2, Opts: ir.TileLean | ir.TileUnroll | ir.TileWarp},
		{BM: 32, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 4, Stages: 2, Opts: ir.TileLean}} {
		t.Run(strings.ReplaceAll(passes.TileString(tile), "/", "_"), func(t *testing.T) {
			rt := open(t, "webgpu", func(o *gpucc.Options) { o.Passes.Tile = &tile })
			for i, c := range batchedCases {
				for _, tr := range [][2]bool{{false, false}, {true, true}} {
					g := batchedGraph(t, c, tr[0], tr[1], uint64(7*i))
					t.Run(fmt.Sprintf("%v×%v_t%v", c[0], c[1], tr[0]), func(t *testing.T) { checkRun(t, rt, g) })
				}
			}
		})
	}
}

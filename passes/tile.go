package passes

import "github.com/gpucc/gpucc/ir"

// Tiles the tiling pass chooses from. Large is the vec4 kernel's; the
// others are for the scalar kernel.
var (
	TileLarge  = ir.Tile{BM: 128, BN: 128, TM: 8, TN: 8, BK: 16, Vector: 4} // best of the H200 sweep
	TileMedium = ir.Tile{BM: 64, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 1}
	TileSmall  = ir.Tile{BM: 32, BN: 32, TM: 2, TN: 2, BK: 16, Vector: 1}
)

// tile chooses each matmul kernel's tile from its shape: large matrices
// whose operands can be read four elements at a time get the vec4 kernel's
// 128×128 tile (8×8 outputs per thread); others a 64×64 or, when small,
// 32×32 tile, so that few threads idle. Options.Tile overrides the choice.
// Tiling never changes a result: every output keeps one accumulator that
// walks k in ascending order.
func tile(st *State) error {
	for i := range st.Program.Kernels {
		k := &st.Program.Kernels[i]
		if k.Kind != ir.KernelMatmul {
			continue
		}
		switch {
		case st.Options.Tile != nil:
			k.Tile = *st.Options.Tile
			if k.Tile.Vector == 4 && !vec4Operands(k) {
				k.Tile.Vector = 1
			}
		case k.M >= 128 && k.N >= 128 && vec4Operands(k):
			k.Tile = TileLarge
		case k.M*k.N >= 128*128:
			k.Tile = TileMedium
		default:
			k.Tile = TileSmall
		}
	}
	return nil
}

// vec4Operands reports whether each matmul operand can be read four
// contiguous elements at a time along the direction its tile is loaded.
func vec4Operands(k *ir.Kernel) bool {
	a, b := k.Inputs[0], k.Inputs[1]
	aOK := !a.Transposed && k.K%4 == 0 || a.Transposed && k.M%4 == 0
	bOK := !b.Transposed && k.N%4 == 0 || b.Transposed && k.K%4 == 0
	return aOK && bOK
}

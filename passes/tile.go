package passes

import "github.com/gpucc/gpucc/ir"

// tile chooses each matmul kernel's tile from its shape: a 64×64 output tile
// per workgroup of 16×16 threads, each owning a 4×4 register tile, with a
// k-step of 16; smaller matrices get smaller tiles so that few threads idle.
// Tiling never changes a result: every output keeps one accumulator that
// walks k in ascending order.
func tile(st *State) error {
	for i := range st.Program.Kernels {
		k := &st.Program.Kernels[i]
		if k.Kind != ir.KernelMatmul {
			continue
		}
		t := ir.Tile{BM: 64, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 4}
		if k.M*k.N < 128*128 {
			t = ir.Tile{BM: 32, BN: 32, TM: 2, TN: 2, BK: 16, Vector: 1}
		}
		k.Tile = t
	}
	return nil
}

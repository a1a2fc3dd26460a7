package passes

import "github.com/gpucc/gpucc/ir"

// Tiles the tiling pass chooses from. Large is the vec4 kernel's; the
// others are for the scalar kernel.
var (
	TileLarge  = ir.Tile{BM: 128, BN: 128, TM: 8, TN: 8, BK: 16, Vector: 4} // best of the H200 sweep
	TileMedium = ir.Tile{BM: 64, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 1}
	TileSmall  = ir.Tile{BM: 32, BN: 32, TM: 2, TN: 2, BK: 16, Vector: 1}
	// TileFallback needs 64 threads and 512 bytes: it fits any device.
	TileFallback = ir.Tile{BM: 8, BN: 8, TM: 1, TN: 1, BK: 8, Vector: 1}
)

// tile chooses each matmul kernel's tile from its shape and the device's
// limits: large matrices whose operands can be read four elements at a
// time get the vec4 kernel's 128×128 tile (8×8 outputs per thread); others
// a 64×64 or, when small, 32×32 tile, so that few threads idle. A tile
// that needs more threads or workgroup memory than the device allows is
// replaced by the next smaller one. Options.Tile overrides the choice.
// Tiling never changes a result: every output keeps one accumulator that
// walks k in ascending order.
func tile(st *State) error {
	for i := range st.Program.Kernels {
		if k := &st.Program.Kernels[i]; k.Kind == ir.KernelMatmul {
			k.Tile = fit(choose(k, st.Options), st.Options)
		}
	}
	return nil
}

// choose picks k's tile from its shape, before the device's limits.
func choose(k *ir.Kernel, o Options) ir.Tile {
	switch {
	case o.Tile != nil:
		t := *o.Tile
		if t.Vector == 4 && !vec4Operands(k) {
			t.Vector = 1
		}
		return t
	case k.M >= 128 && k.N >= 128 && vec4Operands(k):
		return TileLarge
	case k.M*k.N >= 128*128:
		return TileMedium
	}
	return TileSmall
}

// vec4Operands reports whether each matmul operand can be read four
// contiguous elements at a time along the direction its tile is loaded.
func vec4Operands(k *ir.Kernel) bool {
	a, b := k.Inputs[0], k.Inputs[1]
	aOK := !a.Transposed && k.K%4 == 0 || a.Transposed && k.M%4 == 0
	bOK := !b.Transposed && k.N%4 == 0 || b.Transposed && k.K%4 == 0
	return aOK && bOK
}

// fit shrinks t until it fits the device's workgroup limits in o (zero
// limits mean WebGPU's defaults: 256 invocations, 16 KiB of workgroup
// memory).
func fit(t ir.Tile, o Options) ir.Tile {
	threads, storage := o.MaxInvocations, o.MaxWorkgroupStorage
	if threads <= 0 {
		threads = 256
	}
	if storage <= 0 {
		storage = 16384
	}
	for _, smaller := range []ir.Tile{t, TileLarge, TileMedium, TileSmall} {
		if smaller.Vector == 4 && t.Vector != 4 {
			continue // only a vec4-capable kernel may take a vec4 tile
		}
		if tileThreads(smaller) <= threads && tileBytes(smaller) <= storage && tileBytes(smaller) <= tileBytes(t) {
			return smaller
		}
	}
	return TileFallback
}

// tileThreads is the workgroup size of t's kernel.
func tileThreads(t ir.Tile) int { return (t.BM / t.TM) * (t.BN / t.TN) }

// tileBytes is the workgroup memory t's kernel stages A and B through.
func tileBytes(t ir.Tile) int { return 4 * t.BK * (t.BM + t.BN) }

package passes

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// fixedTile is a TileChooser that gives one tile for every matmul.
type fixedTile struct{ t ir.Tile }

func (f fixedTile) TileFor(*ir.Kernel) *ir.Tile { return &f.t }

// TestTunedTileWellFormed: a tuned tile the generators can emit is taken
// as it is; one they cannot (a tuned table is read from disk) is ignored
// and the rule's tile is used.
func TestTunedTileWellFormed(t *testing.T) {
	k := &ir.Kernel{Kind: ir.KernelMatmul, M: 64, K: 64, N: 64, Inputs: []ir.Operand{{}, {}}}
	rule := choose(k, Options{})
	for _, c := range []struct {
		tile ir.Tile
		ok   bool
	}{
		{ir.Tile{BM: 32, BN: 64, TM: 4, TN: 4, BK: 32, Vector: 4}, true},
		{ir.Tile{BM: 1, BN: 64, TM: 1, TN: 1, BK: 16, Vector: 1}, true},
		{ir.Tile{BM: 30, BN: 32, TM: 4, TN: 4, BK: 8, Vector: 1}, false},   // TM does not divide BM
		{ir.Tile{BM: 32, BN: 32, TM: 2, TN: 2, BK: 8, Vector: 4}, false},   // vec4 with a 2-wide register tile
		{ir.Tile{BM: 32, BN: 32, TM: 4, TN: 4, BK: 6, Vector: 4}, false},   // vec4 k-step not in vec4s
		{ir.Tile{BM: 32, BN: 32, TM: 0, TN: 4, BK: 8, Vector: 1}, false},   // zero
		{ir.Tile{BM: 32, BN: 32, TM: 4, TN: 4, BK: -8, Vector: 1}, false},  // negative
		{ir.Tile{BM: 32, BN: 32, TM: 4, TN: 4, BK: 8, Vector: 2}, false},   // no vec2 kernel
		{ir.Tile{BM: 32, BN: 32, TM: 32, TN: 32, BK: 8, Vector: 1}, false}, // 1024 accumulators a thread
	} {
		want := rule
		if c.ok {
			want = c.tile
		}
		if got := choose(k, Options{TileFor: fixedTile{c.tile}}); got != want {
			t.Errorf("tuned %+v: chose %+v, want %+v", c.tile, got, want)
		}
	}
}

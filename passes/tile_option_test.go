package passes

import (
	"errors"
	"testing"
	"time"

	"github.com/gpucc/gpucc/ir"
)

// TestForcedTileRefused: an Options.Tile that no generator can emit (a
// zero or negative side, a register tile that does not divide the
// workgroup's, an unknown vector width, stages or option) is refused
// with a usage error naming the field, for a matmul and a convolution
// alike. Before, a zero TM panicked inside the tile pass (an internal
// error) and a negative BM sent the scalar matmul's staging loop round
// for ever. Tiles ParseTile accepts, and Vector 0 (the scalar kernel, as
// the generators read it), still compile.
func TestForcedTileRefused(t *testing.T) {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{64, 64}, make([]float32, 64*64))
	b.Output("y", x.MatMul(x))
	b.Output("z", b.Input(ir.Shape{1, 4, 8, 8}, make([]float32, 256)).Conv2D(b.Input(ir.Shape{8, 4, 3, 3}, make([]float32, 288)), nil))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tile := range []ir.Tile{
		{BM: 64, BN: 64, TM: 0, TN: 4, BK: 16, Vector: 1},
		{BM: -8, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 1},
		{BM: 64, BN: 64, TM: 4, TN: 4, BK: 0, Vector: 1},
		{BM: 64, BN: 64, TM: 3, TN: 4, BK: 16, Vector: 1},
		{BM: 64, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 2},
		{BM: 64, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 4, Stages: 3},
		{BM: 64, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 4, Stages: 2, Opts: 1 << 7},
		{BM: 1 << 20, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 1},
	} {
		done := make(chan error, 1)
		go func() { _, _, err := Compile(g, Options{Tile: &tile}); done <- err }()
		select {
		case err := <-done:
			var e *ir.Error
			if !errors.As(err, &e) || e.Code != ir.CodeUsage || e.Field != "tile" {
				t.Errorf("tile %+v: %v, want a usage error on field tile", tile, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("tile %+v: Compile did not return", tile)
		}
	}
	for _, tile := range []ir.Tile{{BM: 64, BN: 64, TM: 4, TN: 4, BK: 16}, {BM: 64, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 1, Stages: 2},
		{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2, Opts: ir.TileLean | ir.TileUnroll | ir.TileWarp}} {
		if _, _, err := Compile(g, Options{Tile: &tile}); err != nil {
			t.Errorf("tile %+v: %v", tile, err)
		}
	}
}

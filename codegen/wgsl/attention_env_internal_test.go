package wgsl

import (
	"errors"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestAttTileFromEnv: GPUCC_ATTN_TILE names the tile (empty: the
// default), and a malformed value makes every Emit fail with usage
// instead of running the default under another name.
func TestAttTileFromEnv(t *testing.T) {
	for s, want := range map[string]AttTile{"": DefaultAttTile, "16x16k64g": {Rows: 16, Slices: 16, Keys: 64, Direct: true}, "rows": {}} {
		if got, err := attTileFromEnv(s); err != nil || got != want {
			t.Errorf("attTileFromEnv(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	_, err := attTileFromEnv("16x16k30")
	var ie *ir.Error
	if !errors.As(err, &ie) || ie.Code != ir.CodeUsage {
		t.Fatalf("attTileFromEnv(16x16k30) = %v, want a usage error", err)
	}
	defer func(old error) { attTileEnv = old }(attTileEnv)
	attTileEnv = err
	sp, _, cerr := passes.Compile(irtest.AttentionEdges()[0].Graph(1), passes.Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384})
	if cerr != nil {
		t.Fatal(cerr)
	}
	if _, got := (Target{}).Emit(sp); got != err {
		t.Errorf("Emit under a malformed GPUCC_ATTN_TILE = %v, want %v", got, err)
	}
}

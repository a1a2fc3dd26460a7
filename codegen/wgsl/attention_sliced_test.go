package wgsl_test

import (
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
)

// TestParseAttTile: every tile String writes reads back as itself, and a
// malformed or oversized tile is an error, never a kernel.
func TestParseAttTile(t *testing.T) {
	for _, tile := range []wgsl.AttTile{wgsl.DefaultAttTile, {}, {Rows: 16, Slices: 16, Keys: 64, Direct: true},
		{Rows: 8, Slices: 32, Keys: 64, Direct: true, Cache: 64}} {
		got, err := wgsl.ParseAttTile(tile.String())
		if err != nil || got != tile {
			t.Errorf("ParseAttTile(%q) = %+v, %v; want %+v", tile.String(), got, err, tile)
		}
	}
	for _, bad := range []string{"", "16x16", "16x16k", "16x16k30", "0x16k32", "16x0k32", "32x16k32", "16x16k8",
		"16x16k32c4", "16x16k32gc", "16x16k32gc1000", "16x16k32x", "99999999999999999999x1k1", "016x16k32", "rows2"} {
		if got, err := wgsl.ParseAttTile(bad); err == nil {
			t.Errorf("ParseAttTile(%q) = %+v, want an error", bad, got)
		}
	}
}

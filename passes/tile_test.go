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
		{ir.Tile{BM: 32, BN: 64, TM: 4, TN: 4, BK: 32, Vector: 4, Stages: 2}, true},
		{ir.Tile{BM: 32, BN: 64, TM: 4, TN: 4, BK: 32, Vector: 4, Stages: 3}, false}, // no triple buffering
		{ir.Tile{BM: 32, BN: 64, TM: 4, TN: 4, BK: 32, Vector: 4, Stages: -1}, false},
		{ir.Tile{BM: 32, BN: 64, TM: 4, TN: 4, BK: 32, Vector: 1, Stages: 1}, false}, // no staged scalar kernel
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

// TestTileGroups checks the rule's choice where a larger tile would make
// fewer than WaveGroups workgroups, and for one-row products.
func TestTileGroups(t *testing.T) {
	tests := []struct {
		name    string
		m, k, n int
		want    ir.Tile
	}{
		{"square 1024", 1024, 1024, 1024, TileWide},
		{"square 2048", 2048, 64, 2048, TileLarge},
		{"attention values, seq 2048", 2048, 2048, 64, TileSmall},
		{"attention values, seq 256", 256, 256, 64, TileSmall},
		{"tall, 64 wide", 8192, 64, 64, TileMedium},
		{"small", 100, 30, 50, TileSmall},
		{"one row: GPT-2 small's c_attn in a decoding step", 1, 768, 2304, TileRow},
		{"one row: its mlp c_proj", 1, 3072, 768, TileRow},
		{"one row: 1x4096x4096, the H200's tuned shape", 1, 4096, 4096, TileRow},
		{"one row, 128 wide: attention's q·kᵀ over a short cache", 1, 64, 128, TileSmall},
		{"one row, not vec4: a vocabulary of 50257", 1, 768, 50257, ir.Tile{BM: 8, BN: 32, TM: 1, TN: 1, BK: 64, Vector: 1}},
		{"a last layer's weight gradient, K long", 1024, 4096, 16, ir.Tile{BM: 16, BN: 16, TM: 1, TN: 1, BK: 64, Vector: 1}},
		{"a narrow output, K short", 1024, 128, 16, ir.Tile{BM: 16, BN: 16, TM: 1, TN: 1, BK: 16, Vector: 1}},
		{"a transformer block's product at sequence 128", 128, 256, 256, ir.Tile{BM: 16, BN: 16, TM: 1, TN: 1, BK: 64, Vector: 1}},
		{"its QKV product", 128, 256, 768, ir.Tile{BM: 16, BN: 16, TM: 1, TN: 1, BK: 64, Vector: 1}},
		{"square 512: TileWide's 32 workgroups", 512, 512, 512, TileWide},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := &ir.Kernel{Kind: ir.KernelMatmul, M: tt.m, K: tt.k, N: tt.n,
				Inputs: []ir.Operand{ir.PlainOperand(0, ir.Shape{tt.m, tt.k}), ir.PlainOperand(1, ir.Shape{tt.k, tt.n})}}
			if got := choose(k, Options{}); got != tt.want {
				t.Errorf("%dx%dx%d: tile %+v, want %+v (%d groups)", tt.m, tt.k, tt.n, got, tt.want, groups(k, got))
			}
		})
	}
}

// TestParseTile: the tile names the benchmarks take, back and forth, and
// the names refused.
func TestParseTile(t *testing.T) {
	for _, c := range []struct {
		in   string
		want ir.Tile
	}{
		{"64x64/4x4k16", TileMedium},
		{"128x128/8x8k16v4", TileLarge},
		{"128x128/8x8k8v4s2", ir.Tile{BM: 128, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2}},
		{"32x64/4x4k16v4s1", ir.Tile{BM: 32, BN: 64, TM: 4, TN: 4, BK: 16, Vector: 4, Stages: 1}},
		{"16x16/1x1k16s2", ir.Tile{BM: 16, BN: 16, TM: 1, TN: 1, BK: 16, Vector: 1, Stages: 2}}, // the double-buffered conv GEMM
		// the double-buffered vec4 kernel's options
		{"64x128/8x8k8v4s2l", ir.Tile{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2, Opts: ir.TileLean}},
		{"64x128/8x8k8v4s2w", ir.Tile{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2, Opts: ir.TileWarp}},
		{"64x128/8x8k8v4s2lw", ir.Tile{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2, Opts: ir.TileLean | ir.TileWarp}},
		{"64x128/8x8k8v4s2luw", ir.Tile{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2, Opts: ir.TileLean | ir.TileUnroll | ir.TileWarp}},
		{"64x128/8x8k8v4s2u", ir.Tile{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 4, Stages: 2, Opts: ir.TileUnroll}},
	} {
		got, err := ParseTile(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseTile(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if s := TileString(got); s != c.in {
			t.Errorf("TileString(%+v) = %q, want %q", got, s, c.in)
		}
	}
	for _, bad := range []string{"", "64x64", "64x64/4x4", "64x64/4x4k16s1", "64x64/4x4k16v4s3", "64x64/4x4k16v4sx",
		"64x64/3x4k16", "64x64/4x4k16zz", "64x64/4x4k16v2", "64x64/4x4k6v4", "-64x64/4x4k16", "64x64/4x4k16 v4",
		// options: only after v4s2, in the order l u w, once each; w needs a thread grid of 8k×4k threads (32x32/4x8 has 4×8)
		"64x128/8x8k8v4s1l", "64x128/8x8k8v4l", "64x128/8x8k8l", "16x16/1x1k16s2l", "64x128/8x8k8v4s2wl", "64x128/8x8k8v4s2ll",
		"64x128/8x8k8v4s2x", "32x32/4x8k8v4s2w", "64x128/8x8k8v4s2lww", "64x128/8x8k8v4s2ul", "64x128/8x8k8v4s2wu", "64x128/8x8k8v4s1u"} {
		if got, err := ParseTile(bad); err == nil {
			t.Errorf("ParseTile(%q) = %+v, want an error", bad, got)
		}
	}
}

// TestStagedTileBytes: a double-buffered tile counts both buffers against
// the device's workgroup memory, so fit replaces one that does not fit.
func TestStagedTileBytes(t *testing.T) {
	s2 := ir.Tile{BM: 128, BN: 128, TM: 8, TN: 8, BK: 16, Vector: 4, Stages: 2}
	if got := TileBytes(s2); got != 32768 {
		t.Errorf("TileBytes(%+v) = %d, want 32768", s2, got)
	}
	if got := fit(s2, Options{MaxWorkgroupStorage: 16384}); got != TileLarge {
		t.Errorf("fit(%+v) in 16 KiB = %+v, want TileLarge", s2, got)
	}
	if got := fit(s2, Options{MaxWorkgroupStorage: 32768}); got != s2 {
		t.Errorf("fit(%+v) in 32 KiB = %+v, want it unchanged", s2, got)
	}
}

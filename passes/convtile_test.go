package passes

import (
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestConvTile checks the tiling pass's choice for conv kernels: matmul's
// rule over the implicit GEMM's dimensions with scalar loads, the window
// kernel for depthwise convolutions that fit, and the GEMM for those that
// do not.
func TestConvTile(t *testing.T) {
	conv := func(x, w ir.Shape, a map[string][]int) *ir.Kernel {
		attrs, err := ir.PackAttrs(ir.OpConv2D, a)
		if err != nil {
			t.Fatal(err)
		}
		return &ir.Kernel{Kind: ir.KernelConv, Nodes: []ir.NodeID{2}, Attrs: attrs,
			Inputs: []ir.Operand{ir.PlainOperand(0, x), ir.PlainOperand(1, w)}}
	}
	pad1 := map[string][]int{"pads": {1, 1, 1, 1}}
	webgpu := Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384}
	rule := Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384, KeepConvTile: true}
	forced := ir.Tile{BM: 128, BN: 64, TM: 8, TN: 8, BK: 8, Vector: 4}
	tests := []struct {
		name string
		k    *ir.Kernel
		o    Options
		want ir.Tile
	}{
		// 100352 pixels x 64 channels x 576 taps: 784 workgroups of TileConv.
		{"resnet 3x3 64, batch 32", conv(ir.Shape{32, 64, 56, 56}, ir.Shape{64, 64, 3, 3}, pad1), webgpu, TileConv},
		// 12544 x 64: 98 of TileConv, 196 of matmul's 64x64.
		{"resnet 3x3 64, batch 4", conv(ir.Shape{4, 64, 56, 56}, ir.Shape{64, 64, 3, 3}, pad1), webgpu, TileMedium},
		// 32 channels: matmul's rule, a narrow tile.
		{"3x3 32, batch 32", conv(ir.Shape{32, 32, 56, 56}, ir.Shape{32, 32, 3, 3}, pad1), webgpu, ir.Tile{BM: 8, BN: 32, TM: 1, TN: 1, BK: 16, Vector: 1}},
		// 6272 x 64 makes 98 workgroups of 64x64, fewer than WaveGroups.
		{"resnet 3x3 64, batch 2", conv(ir.Shape{2, 64, 56, 56}, ir.Shape{64, 64, 3, 3}, pad1), webgpu, TileSmall},
		// 16384 x 256: TileConv, whatever matmul's rule would say.
		{"large", conv(ir.Shape{16, 128, 32, 32}, ir.Shape{256, 128, 3, 3}, pad1), webgpu, TileConv},
		// 4096 x 256: 64 workgroups of the large tile, so the wide one,
		// and 128 of TileConv.
		{"wide", conv(ir.Shape{4, 128, 32, 32}, ir.Shape{256, 128, 3, 3}, pad1), webgpu, TileConv},
		// 2048 x 256: 64 of TileConv; matmul's rule gives the wide tile,
		// 8x8 a thread, which with scalar loads needs 6.1 KiB.
		{"wide, 2048 pixels", conv(ir.Shape{2, 128, 32, 32}, ir.Shape{256, 128, 3, 3}, pad1), rule, ir.Tile{BM: 64, BN: 128, TM: 8, TN: 8, BK: 8, Vector: 1}},
		// which makes 64 workgroups: spreadConv gives the first tile of the
		// ladder that makes 128, double-buffered.
		{"wide, 2048 pixels, spread", conv(ir.Shape{2, 128, 32, 32}, ir.Shape{256, 128, 3, 3}, pad1), webgpu, ir.Tile{BM: 64, BN: 64, TM: 8, TN: 8, BK: 8, Vector: 1, Stages: 2}},
		{"forced", conv(ir.Shape{32, 64, 56, 56}, ir.Shape{64, 64, 3, 3}, pad1), Options{Tile: &forced, MaxInvocations: 256, MaxWorkgroupStorage: 16384},
			ir.Tile{BM: 128, BN: 64, TM: 8, TN: 8, BK: 8, Vector: 1}},
		// 56 rows in bands of 4 thread rows of 7; a 30x58 window.
		{"depthwise 3x3 256", conv(ir.Shape{32, 256, 56, 56}, ir.Shape{256, 1, 3, 3}, map[string][]int{"pads": {1, 1, 1, 1}, "group": {256}}), webgpu,
			ir.Tile{BM: 28, BN: 56, TM: 7, TN: 1, BK: 0, Vector: 1}},
		// 150 columns in 3 of 50; 5 thread rows; 8 rows a thread would idle 30
		// of 70 rows, 7 none.
		{"depthwise wide", conv(ir.Shape{1, 6, 70, 150}, ir.Shape{6, 1, 3, 3}, map[string][]int{"pads": {1, 1, 1, 1}, "group": {6}}), webgpu,
			ir.Tile{BM: 35, BN: 50, TM: 7, TN: 1, BK: 0, Vector: 1}},
		{"depthwise, 64 threads", conv(ir.Shape{1, 6, 70, 150}, ir.Shape{6, 1, 3, 3}, map[string][]int{"group": {6}}),
			Options{MaxInvocations: 64, MaxWorkgroupStorage: 16384}, ir.Tile{BM: 8, BN: 50, TM: 8, TN: 1, BK: 0, Vector: 1}},
		// A one-channel input has CG = 1 too; 24 rows, 3 a thread, so 8
		// thread rows of the 10 that 256 threads would make.
		{"one channel", conv(ir.Shape{8, 1, 28, 28}, ir.Shape{16, 1, 5, 5}, nil), webgpu, ir.Tile{BM: 24, BN: 24, TM: 3, TN: 1, BK: 0, Vector: 1}},
		// 81 taps are more than the window kernel unrolls.
		{"depthwise 9x9", conv(ir.Shape{1, 8, 40, 40}, ir.Shape{8, 1, 9, 9}, map[string][]int{"group": {8}}), webgpu, TileSmall},
		// One output's window is 801x801 floats.
		{"depthwise dilated past the memory", conv(ir.Shape{1, 2, 900, 900}, ir.Shape{2, 1, 3, 3}, map[string][]int{"group": {2}, "dilations": {400, 400}}), webgpu, TileSmall},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := convTile(tt.k, tt.o); err != nil {
				t.Fatal(err)
			}
			if tt.k.Tile != tt.want {
				t.Errorf("tile %+v, want %+v", tt.k.Tile, tt.want)
			}
		})
	}
}

// TestSpreadConv checks spreadConv on ResNet-18's convolutions at
// batch 1: the rule's tile where it makes WaveGroups workgroups, else the
// first of ConvLadder that does, else the one that makes the most,
// double-buffered; Options.KeepConvTile keeps the rule's.
func TestSpreadConv(t *testing.T) {
	staged := func(t ir.Tile) ir.Tile { t.Stages = 2; return t }
	conv := func(x, w ir.Shape, a map[string][]int) *ir.Kernel {
		attrs, err := ir.PackAttrs(ir.OpConv2D, a)
		if err != nil {
			t.Fatal(err)
		}
		return &ir.Kernel{Kind: ir.KernelConv, Nodes: []ir.NodeID{2}, Attrs: attrs,
			Inputs: []ir.Operand{ir.PlainOperand(0, x), ir.PlainOperand(1, w)}}
	}
	pad1 := map[string][]int{"pads": {1, 1, 1, 1}}
	s2 := map[string][]int{"pads": {1, 1, 1, 1}, "strides": {2, 2}}
	o := Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384}
	tests := []struct {
		name string
		k    *ir.Kernel
		want ir.Tile
	}{
		// 12544 pixels x 64: 196 of TileMedium, the rule's.
		{"stem 7x7 s2", conv(ir.Shape{1, 3, 224, 224}, ir.Shape{64, 3, 7, 7}, map[string][]int{"pads": {3, 3, 3, 3}, "strides": {2, 2}}), TileMedium},
		// 3136 x 64: 196 of TileSmall, the rule's.
		{"3x3 64 at 56", conv(ir.Shape{1, 64, 56, 56}, ir.Shape{64, 64, 3, 3}, pad1), TileSmall},
		// 784 x 128: 13 of the rule's 64x128; 100 of 32x32, 196 of 16x32.
		{"3x3 128 at 28", conv(ir.Shape{1, 128, 28, 28}, ir.Shape{128, 128, 3, 3}, pad1), staged(ConvLadder[5])},
		{"3x3 64->128 s2", conv(ir.Shape{1, 64, 56, 56}, ir.Shape{128, 64, 3, 3}, s2), staged(ConvLadder[5])},
		{"1x1 64->128 s2", conv(ir.Shape{1, 64, 56, 56}, ir.Shape{128, 64, 1, 1}, map[string][]int{"strides": {2, 2}}), staged(ConvLadder[5])},
		// 196 x 256: 8 of 64x128; 104 of 16x32, 112 of 32x16, 208 of 16x16.
		{"3x3 256 at 14", conv(ir.Shape{1, 256, 14, 14}, ir.Shape{256, 256, 3, 3}, pad1), staged(ConvLadder[7])},
		// 49 x 512: 32 of the rule's 32x32; 128 of 16x16.
		{"3x3 512 at 7", conv(ir.Shape{1, 512, 7, 7}, ir.Shape{512, 512, 3, 3}, pad1), staged(ConvLadder[7])},
		// 4 x 16: one workgroup of any tile; the rule's is kept.
		{"tiny", conv(ir.Shape{1, 8, 2, 2}, ir.Shape{16, 8, 3, 3}, pad1), TileSmall},
		// 1024 pixels x 1 channel in each of 8 groups (81 taps: the GEMM):
		// 256 workgroups of TileSmall, the rule's.
		{"depthwise 9x9", conv(ir.Shape{1, 8, 40, 40}, ir.Shape{8, 1, 9, 9}, map[string][]int{"group": {8}}), TileSmall},
		// 49 pixels x 32 channels in each of 4 groups: 8 workgroups of
		// TileSmall, 32 of 16x16, the most of the ladder.
		{"grouped 3x3 at 7", conv(ir.Shape{1, 128, 7, 7}, ir.Shape{128, 32, 3, 3}, map[string][]int{"pads": {1, 1, 1, 1}, "group": {4}}), staged(ConvLadder[7])},
		// batch 32: TileConv, 784 workgroups.
		{"3x3 64 at 56, batch 32", conv(ir.Shape{32, 64, 56, 56}, ir.Shape{64, 64, 3, 3}, pad1), TileConv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := convTile(tt.k, o); err != nil {
				t.Fatal(err)
			}
			if tt.k.Tile != tt.want {
				t.Errorf("tile %+v, want %+v", tt.k.Tile, tt.want)
			}
			off := *tt.k
			if err := convTile(&off, Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384, KeepConvTile: true}); err != nil {
				t.Fatal(err)
			}
			if off.Tile.Stages != 0 || tt.want.Stages == 0 && off.Tile != tt.want {
				t.Errorf("KeepConvTile: tile %+v, want the rule's", off.Tile)
			}
			t.Logf("rule %+v", off.Tile)
		})
	}
	for _, l := range ConvLadder {
		if !WellFormed(l) || tileThreads(l) > 256 || tileThreads(l) < 64 || TileBytes(l) > 16384 {
			t.Errorf("ladder tile %+v: %d threads, %d bytes", l, tileThreads(l), TileBytes(l))
		}
	}
}

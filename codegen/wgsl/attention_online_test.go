package wgsl_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// TestParseOnlineTile: every online tile String writes reads back as
// itself; a malformed one, too many threads or slices that do not divide
// the key block are errors.
func TestParseOnlineTile(t *testing.T) {
	all := wgsl.OnlineTile{Rows: 16, Slices: 16, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true}
	for _, tile := range []wgsl.OnlineTile{wgsl.DefaultOnlineTile, {Rows: 8, Slices: 32}, {Rows: 32, Slices: 8}, {Rows: 64, Slices: 4},
		{Rows: 16, Slices: 16, TreeMax: true}, {Rows: 8, Slices: 32, VecP: true, Index2D: true}, all} {
		got, err := wgsl.ParseOnlineTile(tile.String())
		if err != nil || got != tile {
			t.Errorf("ParseOnlineTile(%q) = %+v, %v; want %+v", tile.String(), got, err, tile)
		}
	}
	for _, bad := range []string{"", "online16", "online16x16", "online0x8", "online8x0", "online16x32", "online8x3", "online8x64", "online08x32", "online8x32x", "16x16k32",
		"online16x16pm", "online16x16mm", "online16x16q", "online16x16m ", "online16x16il", "onlinemcp"} {
		if got, err := wgsl.ParseOnlineTile(bad); err == nil {
			t.Errorf("ParseOnlineTile(%q) = %+v, want an error", bad, got)
		}
	}
}

// TestOnlineKernelShapes: with every attention online, heads of every
// width 1 to 128 (d and e apart) take the online kernel within WebGPU's
// default workgroup storage, under each tile that fits and the default
// where one does not; the full-row kernels' variables are absent.
func TestOnlineKernelShapes(t *testing.T) {
	defer func(old wgsl.OnlineTile, from int) {
		wgsl.AttentionOnlineTile, ir.AttentionOnlineFrom = old, from
	}(wgsl.AttentionOnlineTile, ir.AttentionOnlineFrom)
	ir.AttentionOnlineFrom = 1
	for _, tile := range []wgsl.OnlineTile{wgsl.DefaultOnlineTile, {Rows: 8, Slices: 32}, {Rows: 32, Slices: 8},
		{Rows: 16, Slices: 16, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true}, {Rows: 32, Slices: 8, TreeMax: true, Index2D: true},
		{Rows: 8, Slices: 32, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true, Half: true, TwoLevel: true}, {Rows: 8, Slices: 32, Half: true}} {
		wgsl.AttentionOnlineTile = tile
		for _, de := range [][2]int{{1, 1}, {4, 3}, {64, 64}, {100, 7}, {7, 100}, {128, 128}, {128, 64}, {64, 128}} {
			t.Run(fmt.Sprintf("%s/d%d-e%d", tile, de[0], de[1]), func(t *testing.T) {
				c := irtest.AttentionCase{Name: "x", S: 3, T: 40, D: de[0], E: de[1], Scale: 0.5}
				sp, _, err := passes.Compile(c.Graph(1), passes.Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384})
				if err != nil {
					t.Fatal(err)
				}
				sh, err := wgsl.Target{}.Emit(sp)
				if err != nil {
					t.Fatal(err)
				}
				src := sh[0].Source
				if !strings.Contains(src, "-MaxFloat32") || strings.Contains(src, "Qs") || strings.Contains(src, "pb = ") {
					t.Errorf("not the online kernel:\n%s", src)
				}
				if sh[0].Workgroup[0] > 256 {
					t.Errorf("workgroup %v", sh[0].Workgroup)
				}
			})
		}
	}
}

// TestOnlineTileFlags: each flag of wgsl.OnlineTile changes the online
// kernel as its doc says (TestAttentionOnlineTiles checks the bits): the
// maxima folded as a tree from vec4 rows (m), c from the row's first
// thread (c), four keys' probabilities a load (p), l summed by the row's
// first thread (l), two-dimensional workgroup arrays (i); without a flag,
// none of its marks.
func TestOnlineTileFlags(t *testing.T) {
	defer func(old wgsl.OnlineTile, from int) {
		wgsl.AttentionOnlineTile, ir.AttentionOnlineFrom = old, from
	}(wgsl.AttentionOnlineTile, ir.AttentionOnlineFrom)
	ir.AttentionOnlineFrom = 1
	marks := []struct {
		set  func(*wgsl.OnlineTile)
		mark string
	}{
		{func(t *wgsl.OnlineTile) { t.TreeMax = true }, "combine_maxkey(mk0_0, mk0_1)"},
		{func(t *wgsl.OnlineTile) { t.RowC = true }, "let cs = Cs[i];"},
		{func(t *wgsl.OnlineTile) { t.VecP = true }, "let pv0 = Ps["},
		{func(t *wgsl.OnlineTile) { t.RowL = true }, "Ls[i] = ls;"},
		{func(t *wgsl.OnlineTile) { t.Index2D = true }, "var<workgroup> KVs: array<array<vec4<f32>, 17>, 32>;"},
		{func(t *wgsl.OnlineTile) { t.Rows, t.Slices, t.Half = 8, 32, true }, "o0 = o0 + (pj * KVs[(31u) * 17u + vb].zw) * params.one;"},
		{func(t *wgsl.OnlineTile) { t.TwoLevel = true }, "M2[(i) * 2u + sl / 4u][sl % 4u] = combine_maxkey(combine_maxkey(mq.x, mq.y)"},
	}
	emit := func(tile wgsl.OnlineTile) string {
		wgsl.AttentionOnlineTile = tile
		c := irtest.AttentionCase{Name: "x", S: 3, T: 70, D: 64, E: 64, Scale: 0.125}
		sp, _, err := passes.Compile(c.Graph(1), passes.Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384})
		if err != nil {
			t.Fatal(err)
		}
		sh, err := wgsl.Target{}.Emit(sp)
		if err != nil {
			t.Fatal(err)
		}
		return sh[0].Source
	}
	plain := emit(wgsl.OnlineTile{Rows: 16, Slices: 16})
	for _, m := range marks {
		tile := wgsl.OnlineTile{Rows: 16, Slices: 16}
		m.set(&tile)
		if src := emit(tile); !strings.Contains(src, m.mark) {
			t.Errorf("%s: no %q in\n%s", tile, m.mark, src)
		}
		if strings.Contains(plain, m.mark) {
			t.Errorf("online: %q without its flag", m.mark)
		}
	}
}

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
		{Rows: 16, Slices: 16, TreeMax: true}, {Rows: 8, Slices: 32, VecP: true, Index2D: true}, all,
		{Rows: 8, Slices: 16, RowBlock: 2}, {Rows: 8, Slices: 32, RowBlock: 8, Half: true, TwoLevel: true}, {Rows: 16, Slices: 16, RowBlock: 2, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true},
		{Rows: 16, Slices: 16, Wide: true}, {Rows: 8, Slices: 16, RowBlock: 2, TreeMax: true, RowL: true, TwoLevel: true, Wide: true},
		{Rows: 16, Slices: 16, Span: 2}, {Rows: 8, Slices: 16, RowBlock: 2, Span: 4, TreeMax: true, Wide: true}} {
		got, err := wgsl.ParseOnlineTile(tile.String())
		if err != nil || got != tile {
			t.Errorf("ParseOnlineTile(%q) = %+v, %v; want %+v", tile.String(), got, err, tile)
		}
	}
	// The default spelled out is the default; the tile it replaced
	// (2026-12-05) is spelled online16x16.
	if got, err := wgsl.ParseOnlineTile("online16x16i"); err != nil || got != wgsl.DefaultOnlineTile {
		t.Errorf("ParseOnlineTile(online16x16i) = %+v, %v; want the default", got, err)
	}
	if got, err := wgsl.ParseOnlineTile("online16x16"); err != nil || got != (wgsl.OnlineTile{Rows: 16, Slices: 16}) {
		t.Errorf("ParseOnlineTile(online16x16) = %+v, %v; want 16x16 without flags", got, err)
	}
	for _, bad := range []string{"", "online16", "online16x16x", "online0x8", "online8x0", "online16x32", "online8x3", "online8x64", "online08x32", "online8x32x", "16x16k32",
		"online16x16pm", "online16x16mm", "online16x16q", "online16x16m ", "online16x16il", "onlinemcp",
		"online16x16wm", "online16x16ww", "online8x16wr2", "online16x16b", "online16x16b1", "online16x16b3", "online16x16b8", "online16x16b02",
		"online16x16b2r2", "online16x16mb2", "online16x16b2b2", "online8x16r", "online8x16r0", "online8x16r1", "online8x16r02", "online8x16r9", "online8x16r2r2", "online8x16mr2", "online8x16rm", "online8x16r-2"} {
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
		{Rows: 8, Slices: 32, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true, Half: true, TwoLevel: true}, {Rows: 8, Slices: 32, Half: true},
		{Rows: 8, Slices: 16, RowBlock: 2}, {Rows: 8, Slices: 32, RowBlock: 2, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true, Half: true, TwoLevel: true},
		{Rows: 4, Slices: 32, RowBlock: 8, Half: true}, {Rows: 16, Slices: 16, Span: 2},
		{Rows: 8, Slices: 32, Span: 4, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true, Half: true, TwoLevel: true}} {
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
// first thread (l), two-dimensional workgroup arrays (i), two outputs a
// thread (h), the maxima folded in two levels (t), and two query rows a
// thread (r2: one load of each staged k and v vec4 for both rows);
// without a flag, none of its marks.
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
		{func(t *wgsl.OnlineTile) { t.RowBlock = 2 }, "let k0 = KVs[(kb + 0u) * 17u + 0u];\n\t\t\tlet p0_r0 = (q0_r0 * k0) * params.one;\n\t\t\tlet p0_r1 = (q0_r1 * k0) * params.one;"},
		{func(t *wgsl.OnlineTile) { t.RowBlock = 2 }, "let v0 = KVs[0u + vb + 0u];\n\t\t\tlet pj_r0 = Ps[0u + i];\n\t\t\tls_r0 = ls_r0 + pj_r0;\n\t\t\to0_r0 = o0_r0 + (pj_r0 * v0) * params.one;\n\t\t\tlet pj_r1 = Ps[0u + i + 16u];"},
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

// TestOnlineRowBlockPlan: a row block is taken only where its rows of q
// fit onlineQRegs' 128 floats a thread (r2 at d 64, r4 at d 32, never at
// d 128), and its workgroups then cover Rows·RowBlock query rows; where it
// does not fit, the default tile runs (and OnlineTileFits says so, so
// that BenchmarkAttnTiles skips it instead of timing the default).
func TestOnlineRowBlockPlan(t *testing.T) {
	defer func(old wgsl.OnlineTile, from int) {
		wgsl.AttentionOnlineTile, ir.AttentionOnlineFrom = old, from
	}(wgsl.AttentionOnlineTile, ir.AttentionOnlineFrom)
	ir.AttentionOnlineFrom = 1
	for _, c := range []struct {
		tile   wgsl.OnlineTile
		d      int
		fits   bool
		groups int // workgroups over S = 2048 query rows
	}{
		{wgsl.OnlineTile{Rows: 8, Slices: 16, RowBlock: 2}, 64, true, 128},
		{wgsl.OnlineTile{Rows: 8, Slices: 32, RowBlock: 2, Half: true}, 64, true, 128},
		{wgsl.OnlineTile{Rows: 16, Slices: 16, RowBlock: 2}, 64, true, 64},
		{wgsl.OnlineTile{Rows: 8, Slices: 16, RowBlock: 2}, 128, false, 128},
		{wgsl.OnlineTile{Rows: 8, Slices: 16, RowBlock: 3}, 64, false, 128},
		{wgsl.OnlineTile{Rows: 8, Slices: 16, RowBlock: 4}, 32, true, 64},
		{wgsl.OnlineTile{Rows: 8, Slices: 16, RowBlock: 4}, 33, false, 128},
	} {
		a := ir.Attention{S: 2048, T: 2048, D: c.d, E: c.d, Block: ir.AttentionBlock}
		if got := wgsl.OnlineTileFits(a, c.tile); got != c.fits {
			t.Errorf("OnlineTileFits(d %d, %s) = %v, want %v", c.d, c.tile, got, c.fits)
		}
		wgsl.AttentionOnlineTile = c.tile
		g := irtest.AttentionCase{Name: "x", S: 2048, T: 2048, D: c.d, E: c.d, Scale: 0.125}.Graph(1)
		sp, _, err := passes.Compile(g, passes.Options{Limits: ir.Limits{MaxOps: 1 << 40, MaxElements: 1 << 26, MaxStorageBytes: 1 << 32}, MaxInvocations: 256, MaxWorkgroupStorage: 16384})
		if err != nil {
			t.Fatal(err)
		}
		sh, err := wgsl.Target{}.Emit(sp)
		if err != nil {
			t.Fatal(err)
		}
		if sh[0].Groups[0] != c.groups || strings.Contains(sh[0].Source, "qi_r1") != c.fits {
			t.Errorf("%s at d %d: %d workgroups, qi_r1 %v; want %d, %v", c.tile, c.d, sh[0].Groups[0], strings.Contains(sh[0].Source, "qi_r1"), c.groups, c.fits)
		}
	}
}

// TestOnlineSplitShapes: in the split order (ir.AttentionSplit), the
// online kernel runs the parts side by side, a group of threads each
// (the tile's rows and slices, or fewer, so that G groups fit 256 threads
// and 16 KiB), for every head width 1 to 128 and every tile: at 2048 keys
// and d 64 under 4 parts, 4 groups of 8 rows × 8 slices in 256 workgroups
// of 256 threads (twice the threads of the tile without a split), under 2
// parts 2 groups of 8 × 16; without a split, no group.
func TestOnlineSplitShapes(t *testing.T) {
	defer func(old wgsl.OnlineTile, from, split int) {
		wgsl.AttentionOnlineTile, ir.AttentionOnlineFrom, ir.AttentionSplit = old, from, split
	}(wgsl.AttentionOnlineTile, ir.AttentionOnlineFrom, ir.AttentionSplit)
	ir.AttentionOnlineFrom = 1
	emit := func(c irtest.AttentionCase) (string, [3]int, [3]int) {
		sp, _, err := passes.Compile(c.Graph(1), passes.Options{Limits: ir.Limits{MaxOps: 1 << 40, MaxElements: 1 << 26, MaxStorageBytes: 1 << 32}, MaxInvocations: 256, MaxWorkgroupStorage: 16384})
		if err != nil {
			t.Fatal(err)
		}
		sh, err := wgsl.Target{}.Emit(sp)
		if err != nil {
			t.Fatal(err)
		}
		return sh[0].Source, sh[0].Workgroup, sh[0].Groups
	}
	one := irtest.AttentionCase{Name: "x", S: 2048, T: 2048, D: 64, E: 64, Scale: 0.125}
	for _, c := range []struct {
		split, threads, groups int
		marks                  []string
	}{
		{0, 256, 128, nil},
		{4, 256, 256, []string{"let g = lid.x / 64u;", "let i = lt % 8u;", "var<workgroup> Mp: array<f32, 32>;", "for (var bi = 0u; bi < 16u; bi++) {\n\t\tlet kt = g * 512u + bi * 32u;"}},
		{2, 256, 256, []string{"let g = lid.x / 128u;", "let i = lt % 8u;", "let kt = g * 1024u + bi * 32u;"}},
	} {
		ir.AttentionSplit = c.split
		wgsl.AttentionOnlineTile = wgsl.DefaultOnlineTile
		src, wg, groups := emit(one)
		if wg[0] != c.threads || groups[0] != c.groups || strings.Contains(src, "lid.x / ") != (c.split > 0) {
			t.Errorf("split %d: workgroup %v, groups %v; want %d threads, %d groups", c.split, wg, groups, c.threads, c.groups)
		}
		for _, m := range c.marks {
			if !strings.Contains(src, m) {
				t.Errorf("split %d: no %q in\n%s", c.split, m, src)
			}
		}
	}
	ir.AttentionSplit = 8
	for _, tile := range []wgsl.OnlineTile{wgsl.DefaultOnlineTile, {Rows: 8, Slices: 32, Half: true}, {Rows: 8, Slices: 16, RowBlock: 2, TreeMax: true, RowL: true},
		{Rows: 16, Slices: 16, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true, TwoLevel: true}} {
		wgsl.AttentionOnlineTile = tile
		for _, de := range [][2]int{{1, 1}, {4, 3}, {64, 64}, {100, 7}, {7, 100}, {128, 128}} {
			src, wg, _ := emit(irtest.AttentionCase{Name: "x", S: 3, T: 300, D: de[0], E: de[1], Scale: 0.5})
			if !strings.Contains(src, "let g = lid.x / ") || wg[0] > 256 || !strings.Contains(src, "-MaxFloat32") {
				t.Errorf("%s at d %d, e %d: not the split kernel (workgroup %v)", tile, de[0], de[1], wg)
			}
		}
	}
}

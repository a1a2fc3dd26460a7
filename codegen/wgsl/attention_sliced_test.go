package wgsl_test

import (
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
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
		"16x16k32c4", "16x16k32gc", "16x16k32gc1000", "16x16k32x", "99999999999999999999x1k1", "016x16k32", "rows2", "16x16k16", "8x8k8g"} {
		if got, err := wgsl.ParseAttTile(bad); err == nil {
			t.Errorf("ParseAttTile(%q) = %+v, want an error", bad, got)
		}
	}
}

// TestAttentionTileShapes: the attention kernel takes AttentionTile's
// shape (workgroup Rows·Slices threads, ⌈S/Rows⌉ × batch workgroups), a
// Direct tile binds k as vec4s and v as vectors of its outputs' width
// where their rows allow, a Cache unrolls its tiles, and a head wider
// than the sliced kernel holds takes the rows kernel. (TestAttentionTiles
// runs each tile against cpuref.)
func TestAttentionTileShapes(t *testing.T) {
	defer func(old wgsl.AttTile) { wgsl.AttentionTile = old }(wgsl.AttentionTile)
	defer func(old int) { ir.AttentionOnlineFrom = old }(ir.AttentionOnlineFrom)
	ir.AttentionOnlineFrom = 1 << 30 // the full-row kernel's tiles
	emit := func(c irtest.AttentionCase) codegen.Shader {
		t.Helper()
		sp, _, err := passes.Compile(c.Graph(1), passes.Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384})
		if err != nil {
			t.Fatal(err)
		}
		sh, err := wgsl.Target{}.Emit(sp)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range sp.Program().Kernels {
			if k.Kind == ir.KernelAttention {
				return sh[i]
			}
		}
		t.Fatal("no attention kernel")
		return codegen.Shader{}
	}
	c := irtest.AttentionCase{Name: "x", H: 2, S: 130, T: 130, D: 64, E: 64, Scale: 0.125, Mask: irtest.MaskCausal}
	for _, tc := range []struct {
		tile    wgsl.AttTile
		threads int
		has     []string
		hasnt   []string
	}{
		{wgsl.AttTile{Rows: 16, Slices: 16, Keys: 32}, 256, []string{"var<workgroup> KVs", "in1: array<f32>"}, []string{"Ps: array<f32, 1024>"}},
		{wgsl.AttTile{Rows: 16, Slices: 16, Keys: 64, Direct: true}, 256, []string{"in1: array<vec4<f32>>", "in2: array<vec4<f32>>", "Ps: array<f32, 2048>"}, []string{"KVs"}},
		{wgsl.AttTile{Rows: 8, Slices: 32, Keys: 64, Direct: true}, 256, []string{"in2: array<vec2<f32>>", "var o0 = vec2<f32>"}, []string{"c0_0"}},
		{wgsl.AttTile{Rows: 8, Slices: 32, Keys: 64, Direct: true, Cache: 64}, 256, []string{"c1_1 = ts;", "let ts = c1_1;"}, []string{"c2_0"}},
	} {
		wgsl.AttentionTile = tc.tile
		sh := emit(c)
		if sh.Workgroup != [3]int{tc.threads, 1, 1} || sh.Groups != [3]int{(c.S + tc.tile.Rows - 1) / tc.tile.Rows, 2, 1} {
			t.Errorf("%s: workgroup %v, groups %v; want %d threads, %d×2 groups", tc.tile, sh.Workgroup, sh.Groups, tc.threads, (c.S+tc.tile.Rows-1)/tc.tile.Rows)
		}
		for _, s := range tc.has {
			if !strings.Contains(sh.Source, s) {
				t.Errorf("%s: the kernel lacks %q", tc.tile, s)
			}
		}
		for _, s := range tc.hasnt {
			if strings.Contains(sh.Source, s) {
				t.Errorf("%s: the kernel has %q", tc.tile, s)
			}
		}
	}
	wgsl.AttentionTile = wgsl.DefaultAttTile
	wide := emit(irtest.AttentionCase{Name: "wide", S: 5, T: 7, D: 160, E: 160, Scale: 0.0625})
	if !strings.Contains(wide.Source, "var<workgroup> Qs") || strings.Contains(wide.Source, "let kb = ") {
		t.Errorf("a d 160 head did not take the rows kernel")
	}
}

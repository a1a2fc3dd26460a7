package wgsl_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// workgroupDecl matches a WGSL workgroup array's declaration (one or two
// dimensions).
var workgroupDecl = regexp.MustCompile(`var<workgroup> \w+: (?:array<)?(?:array<)?((?:vec[24]<)?(?:f32|u32)>?), (\d+)>(?:, (\d+)>)?;`)

// workgroupBytes sums the workgroup arrays src declares.
func workgroupBytes(t *testing.T, src string) int {
	t.Helper()
	n := 0
	for _, m := range workgroupDecl.FindAllStringSubmatch(src, -1) {
		size := 4
		if v, ok := strings.CutPrefix(m[1], "vec"); ok {
			size *= int(v[0] - '0')
		}
		count, _ := strconv.Atoi(m[2])
		if m[3] != "" {
			rows, _ := strconv.Atoi(m[3])
			count *= rows
		}
		n += size * count
	}
	if strings.Count(src, "var<workgroup>") != len(workgroupDecl.FindAllString(src, -1)) {
		t.Fatalf("a workgroup declaration workgroupDecl does not read:\n%s", src)
	}
	return n
}

// emitOnline returns the online kernel of c under tile and target.
func emitOnline(t *testing.T, c irtest.AttentionCase, tile wgsl.OnlineTile, target wgsl.Target) string {
	t.Helper()
	defer func(old wgsl.OnlineTile) { wgsl.AttentionOnlineTile = old }(wgsl.AttentionOnlineTile)
	wgsl.AttentionOnlineTile = tile
	sp, _, err := passes.Compile(c.Graph(1), passes.Options{Limits: ir.Limits{MaxOps: 1 << 40, MaxElements: 1 << 26, MaxStorageBytes: 1 << 32}, MaxInvocations: 256, MaxWorkgroupStorage: 16384})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := target.Emit(sp)
	if err != nil {
		t.Fatal(err)
	}
	return sh[0].Source
}

// TestOnlineWideStorage: the w flag lets the online kernel's plan fill
// the device's workgroup storage (wgsl.Target.Storage) and nothing else
// does: under the default storage (Target{}, as gpucc build exports) a
// w tile is its tile without w byte for byte, and so is every tile
// without w under 48 KiB; under 32 KiB (lavapipe) and 48 KiB (NVIDIA)
// the d 128 default tile stages 32 keys a sub-tile where it staged 16, and
// 8x32 fits d 128. Every kernel's workgroup arrays stay within the storage
// it was planned for, and the storage is in the shader cache's key
// (Target.Name) exactly where a w tile is set.
func TestOnlineWideStorage(t *testing.T) {
	defer func(from int) { ir.AttentionOnlineFrom = from }(ir.AttentionOnlineFrom)
	ir.AttentionOnlineFrom = 1
	wide := func(tile wgsl.OnlineTile) wgsl.OnlineTile { tile.Wide = true; return tile }
	tiles := []wgsl.OnlineTile{{Rows: 16, Slices: 16}, {Rows: 8, Slices: 32}, {Rows: 32, Slices: 8},
		{Rows: 16, Slices: 16, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true, TwoLevel: true},
		{Rows: 8, Slices: 32, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true, Half: true, TwoLevel: true},
		{Rows: 8, Slices: 16, RowBlock: 2, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true},
		{Rows: 16, Slices: 16, Span: 2}, {Rows: 16, Slices: 16, Span: 4, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true, TwoLevel: true},
		{Rows: 8, Slices: 32, Span: 2, TreeMax: true, RowC: true, VecP: true, RowL: true, Index2D: true, Half: true, TwoLevel: true},
		{Rows: 8, Slices: 16, RowBlock: 2, Span: 2, RowC: true, VecP: true}, {Rows: 32, Slices: 8, Span: 4}}
	for _, tile := range tiles {
		for _, d := range []int{8, 64, 100, 128} {
			c := irtest.AttentionCase{Name: "x", S: 40, T: 70, D: d, E: d, Scale: 0.125}
			plain := emitOnline(t, c, tile, wgsl.Target{})
			if got := emitOnline(t, c, wide(tile), wgsl.Target{}); got != plain {
				t.Errorf("%s at d %d under the default storage: not %s's kernel", wide(tile), d, tile)
			}
			if got := emitOnline(t, c, tile, wgsl.Target{Storage: 49152}); got != plain {
				t.Errorf("%s at d %d: the device's storage changed a tile without w", tile, d)
			}
			for _, storage := range []int{16384, 32768, 49152} {
				src := emitOnline(t, c, wide(tile), wgsl.Target{Storage: storage})
				if n := workgroupBytes(t, src); n > storage {
					t.Errorf("%s at d %d under %d bytes: %d bytes of workgroup arrays", wide(tile), d, storage, n)
				}
			}
		}
	}
	c128 := irtest.AttentionCase{Name: "x", S: 40, T: 70, D: 128, E: 128, Scale: 0.125}
	for _, c := range []struct {
		tile    wgsl.OnlineTile
		storage int
		mark    string // the staged rows: keys a sub-tile × the pitch
	}{
		{wgsl.OnlineTile{Rows: 16, Slices: 16}, 49152, "var<workgroup> KVs: array<vec4<f32>, 528>;"},
		{wide(wgsl.OnlineTile{Rows: 16, Slices: 16}), 16384, "var<workgroup> KVs: array<vec4<f32>, 528>;"},
		{wide(wgsl.OnlineTile{Rows: 16, Slices: 16}), 32768, "var<workgroup> KVs: array<vec4<f32>, 1056>;"},
		{wide(wgsl.OnlineTile{Rows: 16, Slices: 16}), 49152, "var<workgroup> KVs: array<vec4<f32>, 1056>;"},
	} {
		if src := emitOnline(t, c128, c.tile, wgsl.Target{Storage: c.storage}); !strings.Contains(src, c.mark) {
			t.Errorf("%s at d 128 under %d bytes: no %q", c.tile, c.storage, c.mark)
		}
	}
	a := ir.Attention{S: 2048, T: 2048, D: 128, E: 128, Block: ir.AttentionBlock}
	for _, c := range []struct {
		tile    wgsl.OnlineTile
		storage int
		fits    bool
	}{
		{wgsl.OnlineTile{Rows: 8, Slices: 32}, 49152, false},
		{wide(wgsl.OnlineTile{Rows: 8, Slices: 32}), 16384, false},
		{wide(wgsl.OnlineTile{Rows: 8, Slices: 32}), 32768, true},
		{wide(wgsl.OnlineTile{Rows: 8, Slices: 32}), 49152, true},
	} {
		if got := wgsl.OnlineTileFitsIn(a, c.tile, c.storage); got != c.fits {
			t.Errorf("OnlineTileFitsIn(d 128, %s, %d) = %v, want %v", c.tile, c.storage, got, c.fits)
		}
	}
	defer func(old wgsl.OnlineTile) { wgsl.AttentionOnlineTile = old }(wgsl.AttentionOnlineTile)
	for _, tile := range []wgsl.OnlineTile{wgsl.DefaultOnlineTile, wide(wgsl.DefaultOnlineTile)} {
		wgsl.AttentionOnlineTile = tile
		for _, storage := range []int{0, 16384, 49152} {
			name := (wgsl.Target{Storage: storage}).Name()
			if keyed := strings.Contains(name, "storage="); keyed != (tile.Wide && storage > 16384) {
				t.Errorf("%s under %d bytes: key %q", tile, storage, name)
			}
		}
	}
	wgsl.AttentionOnlineTile = wide(wgsl.DefaultOnlineTile)
	if (wgsl.Target{Storage: 32768}).Name() == (wgsl.Target{Storage: 49152}).Name() {
		t.Error("two storages under a w tile share a shader cache key")
	}
}

// TestOnlineSpanPlan: a span (bN) stages N key blocks of k at once where
// the storage holds them: at d 64 under 32 KiB online16x16b2w stages 64
// keys (64 × 17 vec4s), each thread scoring 2 keys of each block (kb =
// sl·2, its keys kb, kb+1, 32+kb, 33+kb) in 4 chains, with one barrier
// pair a stage of k and of v and one for the maxima: 5 barriers a span of
// 64 keys, the 5 of a block of 32 without it; each block has its own m'
// (mn_b0, mn_b1) and c. Under WebGPU's default 16 KiB the span is staged
// in sub-tiles of a block (9 barriers a span); where the split order's
// parts are not whole spans the span halves (the kernel without it).
func TestOnlineSpanPlan(t *testing.T) {
	defer func(from, split int) { ir.AttentionOnlineFrom, ir.AttentionSplit = from, split }(ir.AttentionOnlineFrom, ir.AttentionSplit)
	ir.AttentionOnlineFrom = 1
	c := irtest.AttentionCase{Name: "x", S: 2048, T: 2048, D: 64, E: 64, Scale: 0.125}
	barriers := func(src string) int {
		return strings.Count(src[strings.Index(src, "for (var kt"):], "workgroupBarrier")
	}
	tile := wgsl.OnlineTile{Rows: 16, Slices: 16, Span: 2, Wide: true}
	wide := emitOnline(t, c, tile, wgsl.Target{Storage: 32768})
	for _, m := range []string{"var<workgroup> KVs: array<vec4<f32>, 1088>;", "let kb = sl * 2u;", "kt += 64u", "KVs[(kb + 33u) * 17u + 15u]",
		"let mn_b1 = unmaxkey(mc);", "o0 = (o0 * cs_b1) * params.one;", "var<workgroup> Ps: array<f32, 1024>;"} {
		if !strings.Contains(wide, m) {
			t.Errorf("%s under 32 KiB: no %q", tile, m)
		}
	}
	plain := emitOnline(t, c, wgsl.DefaultOnlineTile, wgsl.Target{Storage: 32768})
	if got, want := barriers(wide), barriers(plain); got != want || got != 5 {
		t.Errorf("%s: %d barriers a span of 64 keys, the default %d a block of 32; want 5 and 5", tile, got, want)
	}
	if n := barriers(emitOnline(t, c, tile, wgsl.Target{})); n != 9 {
		t.Errorf("%s under 16 KiB: %d barriers a span, want 9 (sub-tiles of a block)", tile, n)
	}
	ir.AttentionSplit = 3
	short := irtest.AttentionCase{Name: "x", S: 40, T: 96, D: 64, E: 64, Scale: 0.125}
	if a, b := emitOnline(t, short, tile, wgsl.Target{Storage: 32768}), emitOnline(t, short, wgsl.OnlineTile{Rows: 16, Slices: 16, Wide: true}, wgsl.Target{Storage: 32768}); a != b {
		t.Errorf("%s in parts of one block: not the kernel without the span", tile)
	}
}

package wgsl_test

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

var matmulSources = flag.String("matmul-sources", "", "TestMatmulSources writes each kernel's WGSL into this folder (to diff two generators' text)")

// matmulSourceTiles are the tiles whose matmul WGSL TestMatmulSources
// records: every tile the rule, the tune tables and the tests name, the
// staged kernel's options (l, u, w) alone and together, and the tile
// strings the next device visit sweeps (bench/RESULTS.md).
var matmulSourceTiles = []string{
	// the rule's (passes.Tile*) and the H200 table's
	"128x128/8x8k16v4", "64x128/8x8k8v4", "64x64/4x4k16", "32x32/2x2k16", "32x64/4x4k32v4", "8x8/1x1k8",
	"64x128/8x8k16v4", "32x32/2x2k32", "64x64/4x4k32v4", "8x32/1x1k16", "32x8/1x1k16",
	// bench/matmul_tiles_bench_test.go's default list
	"64x128/8x4k16v4", "64x128/8x4k8v4s2", "64x128/8x8k16v4s1",
	// the staged kernel, one and two buffers
	"128x128/8x8k16v4s1", "64x128/8x8k8v4s1", "32x64/4x4k16v4s1", "128x128/8x8k8v4s2", "64x128/8x8k8v4s2",
	"128x128/8x16k8v4s2", "128x256/8x16k4v4s2", "32x64/4x4k16v4s2", "64x64/8x4k4v4s2", "128x64/8x8k8v4s2",
	// its options
	"64x128/8x8k8v4s2l", "64x128/8x8k8v4s2u", "64x128/8x8k8v4s2w", "64x128/8x8k8v4s2lu", "64x128/8x8k8v4s2lw",
	"64x128/8x8k8v4s2uw", "64x128/8x8k8v4s2luw",
	"128x128/8x8k8v4s2l", "128x128/8x8k8v4s2lw", "128x128/8x16k8v4s2l", "128x128/8x16k8v4s2lw", "128x128/16x8k8v4s2l",
	"64x64/4x4k16v4s2l", "32x64/4x4k16v4s2l", "32x64/4x4k16v4s2lu", "32x64/4x4k16v4s2lw", "32x64/4x4k16v4s2luw",
	"64x64/8x4k4v4s2l", "64x64/8x4k4v4s2u", "64x64/8x4k4v4s2w", "64x64/8x4k4v4s2luw",
}

// matmulSourceCase is one graph TestMatmulSources compiles under a tile:
// y = epilogue(A × B), A [m,k] and B [k,n], each read transposed in place
// where ta (tb), over a batch of two where batch.
type matmulSourceCase struct {
	name          string
	m, k, n       int
	ta, tb, batch bool
	epilogue      string // "", "bias-relu", "gelu", "gelu-loop" (wgsl.MatmulEpilogueLoop on), "add-x"
}

// matmulSourceCases are the graphs for tile t: sides the tile divides and
// sides that leave partial tiles on M, N and K; a single k-tile, a
// partial one alone, an odd and an even count of k-tiles after the first
// (the unrolled loop's remainder); each operand transposed; a batch; and
// epilogues short, long (unrolled and looped) and reading A's input.
func matmulSourceCases(t ir.Tile) []matmulSourceCase {
	m, n, k := 2*t.BM, 2*t.BN, 4*t.BK
	pm, pn, pk := m+4, n+4, 2*t.BK+4
	cs := []matmulSourceCase{
		{name: "div", m: m, k: k, n: n},
		{name: "part", m: pm, k: pk, n: pn},
		{name: "k1", m: m, k: t.BK, n: n},
		{name: "k4", m: m, k: 4, n: n},
		{name: "k5", m: pm, k: 5 * t.BK, n: n},
		{name: "div-ta", m: m, k: k, n: n, ta: true},
		{name: "div-tb", m: m, k: k, n: n, tb: true},
		{name: "div-tatb", m: m, k: k, n: n, ta: true, tb: true},
		{name: "part-ta", m: pm, k: pk, n: pn, ta: true},
		{name: "part-tb", m: pm, k: pk, n: pn, tb: true},
		{name: "part-tatb", m: pm, k: pk, n: pn, ta: true, tb: true},
		{name: "div-batch", m: m, k: k, n: n, batch: true},
		{name: "part-batch-tatb", m: pm, k: pk, n: pn, batch: true, ta: true, tb: true},
	}
	for _, e := range []string{"bias-relu", "gelu", "gelu-loop"} {
		cs = append(cs, matmulSourceCase{name: "part-" + e, m: pm, k: pk, n: pn, epilogue: e},
			matmulSourceCase{name: "div-" + e, m: m, k: k, n: n, epilogue: e})
	}
	return append(cs, matmulSourceCase{name: "div-add-x", m: m, k: m, n: m, epilogue: "add-x"})
}

// graph builds c's graph.
func (c matmulSourceCase) graph() (*ir.Graph, error) {
	b := ir.NewBuilder()
	operand := func(rows, cols int, transposed bool) ir.Tensor {
		if c.batch && transposed {
			return b.Input(ir.Shape{2, cols, rows}, make([]float32, 2*rows*cols)).Permute(0, 2, 1)
		}
		if c.batch {
			return b.Input(ir.Shape{2, rows, cols}, make([]float32, 2*rows*cols))
		}
		if transposed {
			return b.Input(ir.Shape{cols, rows}, make([]float32, rows*cols)).T()
		}
		return b.Input(ir.Shape{rows, cols}, make([]float32, rows*cols))
	}
	x := operand(c.m, c.k, c.ta)
	y := x.MatMul(operand(c.k, c.n, c.tb))
	switch c.epilogue {
	case "bias-relu":
		y = y.Add(b.Input(ir.Shape{c.n}, make([]float32, c.n))).Relu()
	case "gelu", "gelu-loop":
		y = y.Mul(y.DivScalar(1.4142135).Apply(ir.OpErf).AddScalar(1)).MulScalar(0.5)
	case "add-x":
		y = y.Add(x)
	}
	b.Output("y", y)
	return b.Build(ir.Limits{})
}

// TestMatmulSources records the exact WGSL of the matmul kernel, with its
// bindings, workgroup size, dispatch and uniform block, for every
// tile of matmulSourceTiles, every case of matmulSourceCases, exact and
// fast, as a SHA-256 a line in testdata/matmul_sources.txt: a refactor of
// the matmul generators that changes no kernel changes no line (run with
// -update to rewrite it, -matmul-sources DIR to see the text).
func TestMatmulSources(t *testing.T) {
	defer func(on bool) { wgsl.MatmulEpilogueLoop = on }(wgsl.MatmulEpilogueLoop)
	s := newSources(t)
	for _, name := range matmulSourceTiles {
		tile, err := passes.ParseTile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range matmulSourceCases(tile) {
			g, err := c.graph()
			wgsl.MatmulEpilogueLoop = c.epilogue == "gelu-loop"
			s.add(name+" "+c.name, g, err, &tile, ir.KernelMatmul)
		}
	}
	s.check(filepath.Join("testdata", "matmul_sources.txt"))
}

// sources collects the lines of TestMatmulSources and TestConvSources.
type sources struct {
	t   *testing.T
	got strings.Builder
}

func newSources(t *testing.T) *sources {
	if *matmulSources != "" {
		if err := os.MkdirAll(*matmulSources, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &sources{t: t}
}

// add compiles g (built with error err) under tile (nil: the rule's),
// with limits that no tile here passes, so that every tile is taken as
// named, and records its kernel of kind, exact and fast, as what: a line
// of what, the mode, the tile taken and the source's SHA-256, and the
// source in the -matmul-sources folder.
func (s *sources) add(what string, g *ir.Graph, err error, tile *ir.Tile, kind ir.KernelKind) {
	t := s.t
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	p, _, err := passes.Compile(g, passes.Options{MaxInvocations: 1024, MaxWorkgroupStorage: 65536, Tile: tile})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for _, fast := range []bool{false, true} {
		shaders, err := wgsl.Target{Fast: fast}.Emit(p)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var sh *codegen.Shader
		taken := ""
		for i, k := range p.Program().Kernels {
			if k.Kind == kind {
				sh, taken = &shaders[i], passes.TileString(k.Tile)
			}
		}
		if sh == nil {
			t.Fatalf("%s: no %v kernel", what, kind)
		}
		src := sh.Source
		// the source and all else the runtime takes from the shader: its
		// entry, bindings, workgroup size, dispatch and uniform block
		all := fmt.Sprintf("%s\x00%s\x00%v\x00%v\x00%v\x00%x", sh.Source, sh.Entry, sh.Bindings, sh.Workgroup, sh.Groups, sh.Params)
		mode := map[bool]string{false: "exact", true: "fast"}[fast]
		fmt.Fprintf(&s.got, "%s %s %s %x\n", what, mode, taken, sha256.Sum256([]byte(all)))
		if *matmulSources != "" {
			file := strings.NewReplacer("/", "_", " ", "-").Replace(what) + "-" + mode + ".wgsl"
			if err := os.WriteFile(filepath.Join(*matmulSources, file), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// check compares the lines with the file at path (or writes them there
// with -update).
func (s *sources) check(path string) {
	t, got := s.t, s.got.String()
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
	if len(wl) != len(gl) {
		t.Errorf("%s: %d lines, want %d", path, len(gl), len(wl))
	}
	bad := 0
	for i := range min(len(wl), len(gl)) {
		if wl[i] != gl[i] {
			if bad++; bad <= 20 {
				t.Errorf("kernel changed:\n got %s\nwant %s", gl[i], wl[i])
			}
		}
	}
	if bad > 20 {
		t.Errorf("... %d kernels changed in all", bad)
	}
}

// convSourceTiles are the conv GEMM tiles whose WGSL TestConvSources
// records: the rule's (passes.TileConv, passes.ConvLadder, the fallback),
// each double-buffered (s2), and one whose threads neither divide nor are
// divided by its pixels (64x24/8x8: the X loads' coordinates worked out
// at each load).
var convSourceTiles = []string{
	"8x8/1x1k8", "128x64/8x8k8", "64x64/8x8k8", "64x64/4x4k16", "32x64/4x8k8", "32x32/2x2k16",
	"16x32/1x2k16", "32x16/2x1k16", "16x16/1x1k16", "64x24/8x8k8",
	"8x8/1x1k8s2", "128x64/8x8k8s2", "64x64/8x8k8s2", "64x64/4x4k16s2", "32x64/4x8k8s2", "16x16/1x1k16s2", "64x24/8x8k8s2",
	"16x32/1x2k16s2", "32x32/2x2k16s2", // bench/device.sh's conv tiles
	"rule", // no tile forced: the depthwise cases take the window kernel (passes' windowTile)
}

// convSourceCase is one convolution y = epilogue(conv(x, w)) that
// TestConvSources compiles under each tile.
type convSourceCase struct {
	name     string
	x, w     ir.Shape // w as the convolution reads it; wperm: stored [KH,KW,C/g,M]
	attrs    map[string][]int
	wperm    bool
	epilogue string // "", "relu", "long" (GELU and 4 more ops: looped, convEpilogueLoop, where 8×8 a thread), "add-x"
}

var convSourceCases = []convSourceCase{
	{name: "3x3p1", x: ir.Shape{2, 8, 10, 10}, w: ir.Shape{16, 8, 3, 3}, attrs: map[string][]int{"pads": {1, 1, 1, 1}}},
	{name: "7x7s2p3", x: ir.Shape{1, 3, 20, 20}, w: ir.Shape{8, 3, 7, 7}, attrs: map[string][]int{"pads": {3, 3, 3, 3}, "strides": {2, 2}}},
	{name: "1x1", x: ir.Shape{1, 16, 8, 8}, w: ir.Shape{32, 16, 1, 1}},
	{name: "1x1-div", x: ir.Shape{1, 16, 16, 16}, w: ir.Shape{64, 16, 1, 1}},
	{name: "group2-dil2", x: ir.Shape{1, 8, 9, 9}, w: ir.Shape{8, 4, 3, 3},
		attrs: map[string][]int{"group": {2}, "dilations": {2, 2}, "pads": {1, 0, 2, 1}, "strides": {2, 1}}},
	{name: "3x3-wperm", x: ir.Shape{1, 8, 10, 10}, w: ir.Shape{16, 8, 3, 3}, attrs: map[string][]int{"pads": {1, 1, 1, 1}}, wperm: true},
	{name: "3x3p1-relu", x: ir.Shape{2, 8, 10, 10}, w: ir.Shape{16, 8, 3, 3}, attrs: map[string][]int{"pads": {1, 1, 1, 1}}, epilogue: "relu"},
	{name: "3x3p1-long", x: ir.Shape{2, 8, 10, 10}, w: ir.Shape{16, 8, 3, 3}, attrs: map[string][]int{"pads": {1, 1, 1, 1}}, epilogue: "long"},
	{name: "3x3p1-add-x", x: ir.Shape{1, 8, 10, 10}, w: ir.Shape{8, 8, 3, 3}, attrs: map[string][]int{"pads": {1, 1, 1, 1}}, epilogue: "add-x"},
	// depthwise: the window kernel under the rule
	{name: "dw3x3p1", x: ir.Shape{2, 8, 20, 20}, w: ir.Shape{8, 1, 3, 3}, attrs: map[string][]int{"group": {8}, "pads": {1, 1, 1, 1}}},
	{name: "dw3x3s2-relu", x: ir.Shape{1, 8, 21, 19}, w: ir.Shape{8, 1, 3, 3}, attrs: map[string][]int{"group": {8}, "pads": {0, 1, 1, 0}, "strides": {2, 2}}, epilogue: "relu"},
	{name: "dw5x5d2-long", x: ir.Shape{1, 4, 70, 9}, w: ir.Shape{8, 1, 5, 5}, attrs: map[string][]int{"group": {4}, "pads": {4, 4, 4, 4}, "dilations": {2, 2}}, epilogue: "long"},
	{name: "dw3x3-nopad", x: ir.Shape{1, 4, 16, 16}, w: ir.Shape{4, 1, 3, 3}, attrs: map[string][]int{"group": {4}}},
}

// graph builds c's graph.
func (c convSourceCase) graph() (*ir.Graph, error) {
	b := ir.NewBuilder()
	x := b.Input(c.x, make([]float32, c.x.Len()))
	var w ir.Tensor
	if c.wperm {
		w = b.Input(ir.Shape{c.w[2], c.w[3], c.w[1], c.w[0]}, make([]float32, c.w.Len())).Permute(3, 2, 0, 1)
	} else {
		w = b.Input(c.w, make([]float32, c.w.Len()))
	}
	y := x.Conv2D(w, c.attrs)
	switch c.epilogue {
	case "relu":
		y = y.Relu()
	case "long":
		y = y.Mul(y.DivScalar(1.4142135).Apply(ir.OpErf).AddScalar(1)).MulScalar(0.5).Relu().AddScalar(0.125).MulScalar(2).Neg()
	case "add-x":
		y = y.Add(x)
	}
	b.Output("y", y)
	return b.Build(ir.Limits{})
}

// TestConvSources is TestMatmulSources for the conv GEMM (ir.Tile's
// implicit GEMM, codegen/wgsl's convGEMM): the SHA-256 of each kernel's
// WGSL for every tile of convSourceTiles and case of convSourceCases,
// exact and fast, in testdata/conv_sources.txt.
func TestConvSources(t *testing.T) {
	s := newSources(t)
	for _, name := range convSourceTiles {
		var tile *ir.Tile
		if name != "rule" {
			t1, err := passes.ParseTile(name)
			if err != nil {
				t.Fatal(err)
			}
			tile = &t1
		}
		for _, c := range convSourceCases {
			g, err := c.graph()
			s.add("conv "+name+" "+c.name, g, err, tile, ir.KernelConv)
		}
	}
	s.check(filepath.Join("testdata", "conv_sources.txt"))
}

// BenchmarkMatmulEmit times the WGSL of one matmul kernel and one conv
// GEMM kernel (the CPU side of a first compile): 256³ with a bias and
// relu under the rule's double-buffered tile and its lean, unrolled,
// warp form, and a 3×3 convolution (16 to 64 channels, 56²) under passes.TileConv double-buffered.
func BenchmarkMatmulEmit(b *testing.B) {
	for _, c := range []struct {
		name, tile string
		g          func() (*ir.Graph, error)
	}{
		{"matmul-s2", "64x128/8x8k8v4s2", matmulSourceCase{m: 256, k: 256, n: 256, epilogue: "bias-relu"}.graph},
		{"matmul-s2luw", "64x128/8x8k8v4s2luw", matmulSourceCase{m: 256, k: 256, n: 256, epilogue: "bias-relu"}.graph},
		{"conv-s2", "128x64/8x8k8s2", convSourceCase{x: ir.Shape{1, 16, 56, 56}, w: ir.Shape{64, 16, 3, 3},
			attrs: map[string][]int{"pads": {1, 1, 1, 1}}, epilogue: "relu"}.graph},
	} {
		b.Run(c.name, func(b *testing.B) {
			g, err := c.g()
			if err != nil {
				b.Fatal(err)
			}
			tile, err := passes.ParseTile(c.tile)
			if err != nil {
				b.Fatal(err)
			}
			p, _, err := passes.Compile(g, passes.Options{Tile: &tile})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (wgsl.Target{}).Emit(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

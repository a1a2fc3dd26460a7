package c_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
)

// convTransposeShapes are transposed convolutions wide enough for the
// register tiles (ct_tile: 16 to 64 columns of a residue class) beside
// the columns done one at a time at the borders: the OCR detector's
// 2×2 stride-2 upsampling at 24 and 1 output channels, strides 1-3 with
// pads that reach into the kernel (taps outside x at both borders),
// dilations, output padding, groups with 1-5 channels each (strips of 4
// and the rest), depthwise, a kernel wider than x, and a row class
// shorter than a tile.
var convTransposeShapes = []irtest.ConvTransposeCase{
	{Name: "ocr-up", N: 1, C: 24, H: 5, W: 40, M: 24, KH: 2, KW: 2, Strides: []int{2, 2}},
	{Name: "ocr-last", N: 1, C: 24, H: 4, W: 70, M: 1, KH: 2, KW: 2, Strides: []int{2, 2}},
	{Name: "s1-pad", N: 2, C: 3, H: 4, W: 37, M: 5, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}},
	{Name: "s2-pad-op", N: 1, C: 4, H: 3, W: 45, M: 6, KH: 3, KW: 3, Strides: []int{2, 2}, Pads: []int{1, 1, 0, 2}, OutputPadding: []int{1, 1}},
	{Name: "s3-dil", N: 1, C: 2, H: 3, W: 41, M: 3, KH: 2, KW: 4, Strides: []int{3, 3}, Dilations: []int{2, 2}, Pads: []int{2, 3, 1, 0}},
	{Name: "dil-s1", N: 1, C: 5, H: 2, W: 66, M: 2, KH: 1, KW: 5, Dilations: []int{1, 3}, Pads: []int{0, 4, 0, 1}},
	{Name: "groups", N: 2, C: 6, H: 3, W: 50, M: 10, KH: 2, KW: 3, Strides: []int{1, 2}, Group: 2},
	{Name: "depthwise", N: 1, C: 7, H: 3, W: 48, M: 7, KH: 3, KW: 3, Strides: []int{2, 2}, Pads: []int{1, 1, 1, 1}, Group: 7},
	{Name: "wide-kernel", N: 1, C: 2, H: 2, W: 3, M: 9, KH: 2, KW: 7, Strides: []int{1, 1}},
	{Name: "short-class", N: 1, C: 3, H: 2, W: 9, M: 4, KH: 3, KW: 3, Strides: []int{3, 3}, Pads: []int{0, 1, 0, 1}},
}

// TestConvTransposeShapes runs codegen/c's transposed convolution (register
// tiles inside, lanes one at a time at the borders) over
// convTransposeShapes with a bias-relu epilogue, on random data, with
// NaN, ±Inf, subnormals and ±0 in x and in the weights, on native at 1 and
// 3 threads and on wasm: every output has cpuref's bits (a NaN from an
// add only has to be a NaN: the hardware, not cpuref, picks its payload).
func TestConvTransposeShapes(t *testing.T) {
	type dev struct {
		name string
		d    backend.Device
	}
	var devs []dev
	for _, threads := range []int{1, 3} {
		d := openBackend(t, "native")
		d.Close()
		f, _ := backend.Lookup("native")
		nd, err := f(backend.Options{Cache: cache.Default(), Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nd.Close)
		devs = append(devs, dev{fmt.Sprintf("native/%dt", threads), nd})
	}
	if !testing.Short() {
		devs = append(devs, dev{"wasm", openBackend(t, "wasm")})
	}
	bd := ir.NewBuilder()
	for k, c := range convTransposeShapes {
		g := max(c.Group, 1)
		x := bd.Input(ir.Shape{c.N, c.C, c.H, c.W}, make([]float32, c.N*c.C*c.H*c.W))
		w := bd.Input(ir.Shape{c.C, c.M / g, c.KH, c.KW}, make([]float32, c.C*c.M/g*c.KH*c.KW))
		y := x.ConvTranspose2D(w, c.Attrs())
		bias := bd.Input(ir.Shape{c.M, 1, 1}, irtest.Values(uint64(k), c.M, 1))
		bd.Output(c.Name, y.Add(bias).Relu())
	}
	limits := ir.Limits{MaxStorageBytes: 64 << 20, MaxOps: 1 << 40, MaxOutputs: 64}
	g, err := bd.Build(limits)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := passes.Compile(g, passes.Profile{Name: "native"}.Options(limits))
	if err != nil {
		t.Fatal(err)
	}
	kinds := 0
	for _, k := range p.Program().Kernels {
		if k.Kind == ir.KernelConvTranspose {
			kinds++
		}
	}
	if kinds != len(convTransposeShapes) {
		t.Fatalf("%d conv_transpose kernels, want %d:\n%s", kinds, len(convTransposeShapes), p)
	}
	var fill []int // x's and w's buffers
	for i, b := range p.Program().Buffers {
		if b.Input && allZero(b.Data) {
			fill = append(fill, i)
		}
	}
	if len(fill) != 2*len(convTransposeShapes) {
		t.Fatalf("%d zero inputs, want x and w of each case (%d)", len(fill), 2*len(convTransposeShapes))
	}
	for s, kind := range []string{"random", "nan", "zeros-inf"} {
		for _, i := range fill {
			p.Program().Buffers[i].Data = reduceData(kind, p.Program().Buffers[i].Len, uint64(100*s+i))
		}
		want := cpuref.RunProgram(p.Program())
		for _, d := range devs {
			got := run(t, d.d, p)
			for _, c := range convTransposeShapes {
				for i, w := range want[c.Name] {
					gv := got[c.Name][i]
					if gb, wb := math.Float32bits(gv), math.Float32bits(w); gb != wb && (!isNaN(gv) || !isNaN(w)) {
						t.Errorf("%s %s %s: [%d] = %#08x, cpuref %#08x", d.name, kind, c.Name, i, gb, wb)
						break
					}
				}
			}
		}
	}
}

func allZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

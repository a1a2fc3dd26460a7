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

// convNarrowShapes are convolutions at most 4 output pixels wide with at
// least 8 channels a group, which conv tiles over channels (cv_ctile):
// Silero VAD's 1×3 layers, channel counts below, at and past a block of
// 32 (and wasm's 8), strides, pads, dilations, groups, a 3×3 kernel,
// more than one image.
var convNarrowShapes = []irtest.ConvCase{
	{Name: "vad-1x3", N: 1, C: 129, H: 1, W: 3, M: 128, KH: 1, KW: 3, Pads: []int{0, 1, 0, 1}},
	{Name: "vad-s2", N: 1, C: 128, H: 1, W: 3, M: 64, KH: 1, KW: 3, Strides: []int{1, 2}, Pads: []int{0, 1, 0, 1}},
	{Name: "odd-channels", N: 2, C: 5, H: 3, W: 4, M: 37, KH: 3, KW: 3, Pads: []int{1, 1, 1, 1}},
	{Name: "eight", N: 1, C: 3, H: 2, W: 2, M: 8, KH: 1, KW: 1},
	{Name: "dilated", N: 1, C: 4, H: 5, W: 5, M: 9, KH: 2, KW: 2, Dilations: []int{2, 2}},
	{Name: "groups", N: 1, C: 6, H: 2, W: 6, M: 24, KH: 1, KW: 3, Strides: []int{1, 2}, Group: 2},
	{Name: "one-pixel", N: 1, C: 64, H: 1, W: 1, M: 40, KH: 1, KW: 3, Pads: []int{0, 1, 0, 1}},
}

// TestConvNarrow runs convNarrowShapes with a bias-relu epilogue on
// random data and with NaN, ±Inf, subnormals and ±0 in x and the weights,
// on native at 1 and 3 threads and on wasm: every output has cpuref's
// bits (a NaN from an add only has to be a NaN).
func TestConvNarrow(t *testing.T) {
	type dev struct {
		name string
		d    backend.Device
	}
	var devs []dev
	f, _ := backend.Lookup("native")
	for _, threads := range []int{1, 3} {
		openBackend(t, "native")
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
	for k, c := range convNarrowShapes {
		g := max(c.Group, 1)
		x := bd.Input(ir.Shape{c.N, c.C, c.H, c.W}, make([]float32, c.N*c.C*c.H*c.W))
		w := bd.Input(ir.Shape{c.M, c.C / g, c.KH, c.KW}, make([]float32, c.M*c.C/g*c.KH*c.KW))
		bias := bd.Input(ir.Shape{c.M, 1, 1}, irtest.Values(uint64(k), c.M, 1))
		bd.Output(c.Name, x.Conv2D(w, c.Attrs()).Add(bias).Relu())
	}
	limits := ir.Limits{MaxStorageBytes: 64 << 20, MaxOps: 1 << 40, MaxOutputs: 64}
	gr, err := bd.Build(limits)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := passes.Compile(gr, passes.Profile{Name: "native"}.Options(limits))
	if err != nil {
		t.Fatal(err)
	}
	var fill []int
	for i, b := range p.Program().Buffers {
		if b.Input && allZero(b.Data) {
			fill = append(fill, i)
		}
	}
	if len(fill) != 2*len(convNarrowShapes) {
		t.Fatalf("%d zero inputs, want x and w of each case (%d)", len(fill), 2*len(convNarrowShapes))
	}
	for s, kind := range []string{"random", "nan", "zeros-inf"} {
		for _, i := range fill {
			p.Program().Buffers[i].Data = reduceData(kind, p.Program().Buffers[i].Len, uint64(100*s+i))
		}
		want := cpuref.RunProgram(p.Program())
		for _, d := range devs {
			got := run(t, d.d, p)
			for _, c := range convNarrowShapes {
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

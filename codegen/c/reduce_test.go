package c_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// reduceShapes are odd, prime and power-of-two shapes, with rows shorter
// and longer than a lane group (codegen/c.Lanes) and a sum block
// (codegen/c.SumBlock), and column counts below, at and past a column
// tile.
var reduceShapes = []ir.Shape{
	{1, 1}, {3, 5}, {7, 17}, {16, 16}, {17, 31}, {5, 257}, {31, 509}, {64, 1024}, {257, 13}, {1031, 3}, {3, 7, 11},
	{3, 5, 33},
}

// reduceGraphs are the reductions of issue 24's C kernels: sums and maxima
// over the last axis, the first and, for 3-D shapes, the middle one and
// several at once, with prologues, and the row-resident composites.
var reduceGraphs = []struct {
	name string
	f    func(x ir.Tensor) ir.Tensor
}{
	{"sum-last", func(x ir.Tensor) ir.Tensor { return x.SumAxes(false, len(x.Shape())-1) }},
	{"sum-first", func(x ir.Tensor) ir.Tensor { return x.Mul(x).SumAxes(false, 0) }},
	{"sum-first-epilogue", func(x ir.Tensor) ir.Tensor { return x.SumAxes(false, 0).MulScalar(3).AddScalar(1) }},
	{"sum-middle", func(x ir.Tensor) ir.Tensor { return x.Exp().SumAxes(true, len(x.Shape())/2) }},
	{"max-middle", func(x ir.Tensor) ir.Tensor { return x.MaxAxes(false, len(x.Shape())/2) }},
	{"max-last", func(x ir.Tensor) ir.Tensor { return x.MaxAxes(false, len(x.Shape())-1) }},
	{"max-first", func(x ir.Tensor) ir.Tensor { return x.MaxAxes(false, 0) }},
	{"max-prologue", func(x ir.Tensor) ir.Tensor { return x.Mul(x).Neg().MaxAxes(true, len(x.Shape())-1) }},
	{"max-whole", func(x ir.Tensor) ir.Tensor { return x.Reshape(ir.Shape{x.Shape().Len()}).MaxAxes(false, 0) }},
	{"min-last", func(x ir.Tensor) ir.Tensor { return x.Neg().MaxAxes(false, len(x.Shape())-1).Neg() }},
	{"sum-whole", func(x ir.Tensor) ir.Tensor { return x.Sum() }},
	{"softmax", func(x ir.Tensor) ir.Tensor { return x.Softmax(len(x.Shape()) - 1) }},
	{"logsoftmax", func(x ir.Tensor) ir.Tensor { return x.LogSoftmax(len(x.Shape()) - 1) }},
	{"layernorm", func(x ir.Tensor) ir.Tensor { return x.LayerNorm(len(x.Shape())-1, 1e-5) }},
}

// reduceData fills n values of a kind: random, with NaNs of several
// payloads and both signs at random places, with signed zeros and
// infinities only, or all equal (ties of -0 and +0 included).
func reduceData(kind string, n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 24))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	f := math.Float32frombits
	switch kind {
	case "nan":
		for range 1 + n/50 {
			v[r.IntN(n)] = f([]uint32{0x7fc00001, 0xffc00002, 0x7f800003, 0x7fc12345}[r.IntN(4)])
		}
	case "zeros-inf":
		for i := range v {
			v[i] = f([]uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x80000001}[r.IntN(5)])
		}
	case "ties":
		for i := range v {
			v[i] = f([]uint32{0, 0x80000000}[r.IntN(2)])
		}
	}
	return v
}

// TestReduceShapes runs every reduction graph over every shape and data
// kind on the native and wasm backends, as sum kernels and as row-resident
// kernels (one program per shape holds every graph), and compares each
// output with cpuref bit for bit. The backends are called below the
// runtime's refusal of non-finite outputs, so NaN bits are compared too
// where they are defined: a maximum returns one of its leaves, the first
// NaN, while a NaN through an add is the hardware's (x86 and wasm
// propagate a NaN operand's payload, not cpuref's), so there only NaN-ness
// must agree.
func TestReduceShapes(t *testing.T) {
	for _, name := range []string{"native", "wasm"} {
		t.Run(name, func(t *testing.T) {
			dev := openBackend(t, name)
			for _, prof := range []string{"", "native"} {
				for _, shape := range reduceShapes {
					bd := ir.NewBuilder()
					x := bd.Input(shape, make([]float32, shape.Len()))
					for _, gr := range reduceGraphs {
						bd.Output(gr.name, gr.f(x))
					}
					limits := ir.Limits{MaxStorageBytes: 64 << 20, MaxOps: 1 << 40, MaxOutputs: 64}
					g, err := bd.Build(limits)
					if err != nil {
						t.Fatal(err)
					}
					opts := passes.Options{Limits: limits}
					if prof != "" {
						opts = passes.Profile{Name: prof}.Options(limits)
					}
					p, _, err := passes.Compile(g, opts)
					if err != nil {
						t.Fatal(err)
					}
					for s, kind := range []string{"random", "nan", "zeros-inf", "ties"} {
						for i := range p.Program().Buffers {
							if p.Program().Buffers[i].Input {
								p.Program().Buffers[i].Data = reduceData(kind, shape.Len(), uint64(s))
							}
						}
						got, want := run(t, dev, p), cpuref.RunProgram(p.Program())
						for _, gr := range reduceGraphs {
							for i, w := range want[gr.name] {
								gv := got[gr.name][i]
								gb, wb := math.Float32bits(gv), math.Float32bits(w)
								selects := strings.HasPrefix(gr.name, "max") || strings.HasPrefix(gr.name, "min")
								if gb != wb && (selects || !isNaN(gv) || !isNaN(w)) {
									t.Errorf("profile %q %s %v %s: %s[%d] = %#08x, cpuref %#08x", prof, gr.name, shape, kind, gr.name, i, gb, wb)
									break
								}
							}
						}
					}
				}
			}
		})
	}
}

func isNaN(f float32) bool { return f != f }

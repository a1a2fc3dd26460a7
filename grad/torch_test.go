package grad

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/eval64"
)

// The fixtures make_conv_grads.py writes (see the script): PyTorch's
// float64 autograd (made on the GPU machine), and the same cases' float64
// gradients from their definitions in numpy (made here, --numpy).
var torchFixtures = []string{"testdata/conv_grads.json", "testdata/conv_grads_numpy.json"}

type torchCase struct {
	Name            string               `json:"name"`
	Kind            string               `json:"kind"` // pools: max, avg, global
	X               []int                `json:"x"`    // the shapes of x, w (convolutions) and the output
	W               []int                `json:"w"`
	Y               []int                `json:"y"`
	Strides         []int                `json:"strides"`
	Pads            []int                `json:"pads"`
	Dilations       []int                `json:"dilations"`
	Group           int                  `json:"group"`
	Kernel          []int                `json:"kernel"`
	CountIncludePad bool                 `json:"count_include_pad"`
	Data            map[string][]float32 `json:"data"`
	Grads           map[string][]float64 `json:"grads"`
}

// graph builds sum(y · g) over the case's op with x (and w) parameters,
// and names the op's argument that must not take absolute values for the
// bound (max pooling's x: |x| selects other taps).
func (c torchCase) graph(t *testing.T, abs bool) *ir.Graph {
	t.Helper()
	val := func(name string, keep bool) []float32 {
		v := append([]float32(nil), c.Data[name]...)
		if abs && !keep {
			for i := range v {
				v[i] = float32(math.Abs(float64(v[i])))
			}
		}
		return v
	}
	b := ir.NewBuilder()
	x := b.Param("x", ir.Shape(c.X), val("x", c.Kind == "max"))
	var y ir.Tensor
	switch {
	case c.W != nil:
		y = x.Conv2D(b.Param("w", ir.Shape(c.W), val("w", false)), map[string][]int{
			"strides": c.Strides, "pads": c.Pads, "dilations": c.Dilations, "group": {c.Group}})
	case c.Kind == "max":
		p := []int{c.Pads[0], c.Pads[1], c.Pads[0], c.Pads[1]} // torch's symmetric [pH, pW]
		y = x.MaxPool2D(map[string][]int{"kernel_shape": c.Kernel, "strides": c.Strides, "pads": p, "dilations": c.Dilations})
	case c.Kind == "avg":
		y = x.AvgPool2D(c.Kernel, c.Strides, []int{c.Pads[0], c.Pads[1], c.Pads[0], c.Pads[1]}, c.CountIncludePad)
	case c.Kind == "global":
		y = x.GlobalAvgPool()
	default:
		t.Fatalf("%s: unknown case kind %q", c.Name, c.Kind)
	}
	if !y.Shape().Equal(ir.Shape(c.Y)) {
		t.Fatalf("%s: gpucc's output is %v, torch's %v", c.Name, y.Shape(), c.Y)
	}
	b.Output("loss", y.Mul(b.Input(y.Shape(), val("g", false))).Sum())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestTorchConvGradients compares gpucc's gradients of convolutions and
// poolings (grad's rules, evaluated in float32 by cpuref, with the
// reference's rounding) with PyTorch's float64 autograd on the same
// float32 inputs (testdata/conv_grads.json, made by make_conv_grads.py on
// the GPU machine), and with numpy's float64 gradients from the
// definitions (conv_grads_numpy.json). The bound is the float32 summation's: each gradient
// element is a sum of at most T rounded products (T the largest count of
// terms any gradient element of the case has: N·OH·OW for a weight, the
// taps for an input) added in some order, so
//
//	|gpucc - torch| ≤ (T + 4) · 2⁻²⁴ · A
//
// with A the same gradient of the absolute values (|x|, |w|, |g|; max
// pooling keeps x, whose sign picks the taps), evaluated in float64.
// Each fixture's subtest skips only when its file is absent.
func TestTorchConvGradients(t *testing.T) {
	for _, f := range torchFixtures {
		t.Run(f, func(t *testing.T) { checkConvFixture(t, f) })
	}
}

func checkConvFixture(t *testing.T, torchFixture string) {
	raw, err := os.ReadFile(torchFixture)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("%s is absent: run make_conv_grads.py (PyTorch; --numpy for numpy) to make it", torchFixture)
	}
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Torch string      `json:"torch"`
		Convs []torchCase `json:"convs"`
		Pools []torchCase `json:"pools"`
	}
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Convs) == 0 || len(fx.Pools) == 0 {
		t.Fatalf("%s has %d convolutions and %d poolings", torchFixture, len(fx.Convs), len(fx.Pools))
	}
	t.Logf("fixture from torch %s", fx.Torch)
	for _, c := range append(fx.Convs, fx.Pools...) {
		t.Run(c.Name, func(t *testing.T) {
			g := c.graph(t, false)
			bw, grads, err := backward(g, g.Outputs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			got := cpuref.Eval(bw.g)
			ga := c.graph(t, true)
			bwa, gradsa, err := backward(ga, ga.Outputs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			abs := eval64.Eval(bwa.g, nil)
			terms := 1
			if c.W != nil {
				terms = max(c.Y[0]*c.Y[2]*c.Y[3], c.W[0]/c.Group*c.W[2]*c.W[3])
			} else if c.Kernel != nil {
				terms = c.Kernel[0] * c.Kernel[1]
			} else {
				terms = c.X[2] * c.X[3]
			}
			for _, p := range g.Params() {
				want := c.Grads[p.Name]
				have := got[grads[p.ID]]
				bound := abs[gradsa[p.ID]]
				if len(want) != len(have) {
					t.Fatalf("∂/∂%s: %d values, torch %d", p.Name, len(have), len(want))
				}
				worst, at := 0.0, 0
				for i := range want {
					b := float64(terms+4) * 0x1p-24 * bound[i]
					d := math.Abs(float64(have[i]) - want[i])
					if d > b {
						t.Errorf("∂/∂%s[%d] = %v, torch float64 %v: off by %.3g, beyond the bound %.3g", p.Name, i, have[i], want[i], d, b)
					}
					if b > 0 && d/b > worst {
						worst, at = d/b, i
					}
				}
				t.Logf("∂/∂%s: %d values, the largest |gpucc − torch| is %.3g of its bound (at %d)", p.Name, len(want), worst, at)
			}
		})
	}
}

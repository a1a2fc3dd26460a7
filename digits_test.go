package gpucc_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/grad"
	"github.com/gpucc/gpucc/ir"
)

// digitsCSV is scikit-learn's digits data as Debian's python3-sklearn
// ships it (BSD-licensed): 1797 rows of 64 pixels (0..16) and a label.
// GPUCC_DIGITS_CSV names another copy (on a machine without the package).
func digitsCSV() string {
	if p := os.Getenv("GPUCC_DIGITS_CSV"); p != "" {
		return p
	}
	return "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
}

// digits is the data set: x = pixels/16 (exact in float32), row-major
// [rows,64], and the labels.
type digits struct {
	x      []float32
	labels []int
}

// loadDigits reads digitsCSV() and checks it is the file the fixture was
// made from. Without python3-sklearn the test is skipped, unless
// GPUCC_REQUIRE_WEBGPU is set (as the Makefile and CI do), when it fails.
func loadDigits(t testing.TB, sha string) *digits {
	t.Helper()
	path := digitsCSV()
	raw, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_WEBGPU") == "" {
			t.Skipf("no digits data (python3-sklearn): %v", err)
		}
		t.Fatalf("no digits data (install python3-sklearn): %v", err)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != sha {
		t.Fatalf("%s has sha256 %s; the fixture was made from %s", path, got, sha)
	}
	z, err := gzip.NewReader(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	d := &digits{}
	sc := bufio.NewScanner(z)
	for sc.Scan() {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ",")
		if len(fields) != 65 {
			t.Fatalf("digits row %d has %d fields", len(d.labels), len(fields))
		}
		for i, s := range fields {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 || v > 16 || v != math.Trunc(v) {
				t.Fatalf("digits row %d field %d: %q", len(d.labels), i, s)
			}
			if i < 64 {
				d.x = append(d.x, float32(v/16))
			} else {
				d.labels = append(d.labels, int(v))
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return d
}

// oneHot returns labels as one-hot rows of 10.
func oneHot(labels []int) []float32 {
	out := make([]float32, 10*len(labels))
	for i, l := range labels {
		out[10*i+l] = 1
	}
	return out
}

var digitsParams = []string{"w1", "b1", "w2", "b2"}

// digitsModel builds the classifier on rows [lo,hi) of d:
// logits = relu(x·w1 + b1)·w2 + b2 and loss = CrossEntropy(logits, onehot).
// params gives each parameter's values; with shift, each enters as the
// constant plus a zero parameter of its name (see gradientsOf), else as the
// parameter itself.
func digitsModel(t testing.TB, d *digits, lo, hi int, params map[string][]float32, shapes map[string]ir.Shape, shift bool) *ir.Graph {
	t.Helper()
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{hi - lo, 64}, d.x[64*lo:64*hi])
	y := b.NamedInput("onehot", ir.Shape{hi - lo, 10}, oneHot(d.labels[lo:hi]))
	p := map[string]ir.Tensor{}
	for _, name := range digitsParams {
		s := shapes[name]
		if shift {
			p[name] = b.Input(s, params[name]).Add(b.Param(name, s, make([]float32, s.Len())))
		} else {
			p[name] = b.Param(name, s, params[name])
		}
	}
	logits := x.MatMul(p["w1"]).Add(p["b1"]).Relu().MatMul(p["w2"]).Add(p["b2"])
	b.Output("loss", logits.CrossEntropy(y))
	b.Output("logits", logits)
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// gradientsOf returns ∂loss/∂p of a graph whose every parameter p is a
// zero shift (c + p with p = 0, so the forward pass is the one without
// p), unrounded: one SGD step with lr 1 leaves p' = 0 - 1·g = -g exactly.
func gradientsOf(t testing.TB, g *ir.Graph) map[string][]float32 {
	t.Helper()
	sg, err := grad.Step(g, "loss", 1)
	if err != nil {
		t.Fatal(err)
	}
	vals := cpuref.Eval(sg)
	out := map[string][]float32{}
	for _, o := range sg.Outputs {
		if o.Name == "loss" || o.Name == "logits" {
			continue
		}
		v := vals[o.ID]
		neg := make([]float32, len(v))
		for i := range v {
			neg[i] = -v[i]
		}
		out[o.Name] = neg
	}
	return out
}

func digitsShapes(fx *digitsFixture) map[string]ir.Shape {
	out := map[string]ir.Shape{}
	for name, a := range fx.MLP.Init {
		out[name] = ir.Shape(a.Shape)
	}
	return out
}

func digitsInit(t testing.TB, fx *digitsFixture) map[string][]float32 {
	out := map[string][]float32{}
	for name, a := range fx.MLP.Init {
		out[name] = a.f32(t)
	}
	return out
}

// TestDigitsGradients compares gpucc's step-0 gradients of the digits
// classifier (grad's rules, evaluated by cpuref) with PyTorch's autograd
// in float64, within fixtureBound of PyTorch's float32 autograd.
func TestDigitsGradients(t *testing.T) {
	fx := loadDigitsFixture(t)
	d := loadDigits(t, fx.Data.Sha256)
	g := digitsModel(t, d, 0, fx.Data.Train, digitsInit(t, fx), digitsShapes(fx), true)
	got := gradientsOf(t, g)
	for _, name := range digitsParams {
		want := fx.MLP.Float64.Grads[name].f64(t)
		bound := fixtureBound(want, fx.MLP.Float32.Grads[name].f64(t))
		r, diff := withinFixture(t, "grad "+name, got[name], want, bound)
		t.Logf("grad %s: largest |gpucc − torch float64| %.3g, %.3g of the bound", name, diff, r)
	}
}

// TestDigitsTrain trains the digits classifier for the fixture's steps
// with the Trainer on every backend, from the fixture's initial
// parameters: every loss and final parameter is within fixtureBound of
// PyTorch's float64 run, and every backend's losses and parameters are
// bit-identical to cpu's.
func TestDigitsTrain(t *testing.T) {
	fx := loadDigitsFixture(t)
	d := loadDigits(t, fx.Data.Sha256)
	g := digitsModel(t, d, 0, fx.Data.Train, digitsInit(t, fx), digitsShapes(fx), false)
	var ref map[string][]uint32
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			rt := open(t, backend)
			tr, err := rt.NewTrainer(ctx, g, "loss", fx.MLP.LR)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			losses := make([]float32, fx.MLP.Steps)
			for i := range losses {
				r, err := tr.Step(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				losses[i] = r.Loss
			}
			params, err := tr.Params(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r, diff := withinFixture(t, "loss", losses, fx.MLP.Float64.Losses, fixtureBound(fx.MLP.Float64.Losses, fx.MLP.Float32.Losses))
			t.Logf("losses %v: largest |gpucc − torch float64| %.3g, %.3g of the bound", losses, diff, r)
			got := map[string][]float32{"loss": losses}
			for _, name := range digitsParams {
				want := fx.MLP.Float64.Params[name].f64(t)
				r, diff := withinFixture(t, name, params[name].Data, want, fixtureBound(want, fx.MLP.Float32.Params[name].f64(t)))
				t.Logf("%s: largest |gpucc − torch float64| %.3g, %.3g of the bound", name, diff, r)
				got[name] = params[name].Data
			}
			if ref == nil {
				ref = bits(got)
			} else if diff := compareBits(ref, bits(got)); diff != "" {
				t.Errorf("%s differs from cpu: %s", backend, diff)
			}
		})
	}
}

// TestDigitsAccuracy trains the classifier for the fixture's long run (300
// full-batch steps) on the fastest backend here, then classifies the 360
// held-out digits: the losses follow PyTorch's float64 run within
// fixtureBound of its float32 run, and the test accuracy is PyTorch's
// within two examples.
func TestDigitsAccuracy(t *testing.T) {
	fx := loadDigitsFixture(t)
	d := loadDigits(t, fx.Data.Sha256)
	shapes := digitsShapes(fx)
	n := fx.Data.Train
	ctx := context.Background()
	rt := open(t, "native")
	tr, err := rt.NewTrainer(ctx, digitsModel(t, d, 0, n, digitsInit(t, fx), shapes, false), "loss", fx.MLP.LR)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	losses := make([]float32, fx.MLP.LongSteps)
	for i := range losses {
		r, err := tr.Step(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		losses[i] = r.Loss
	}
	r, diff := withinFixture(t, "long-run loss", losses, fx.MLP.Float64.Long.Losses, fixtureBound(fx.MLP.Float64.Long.Losses, fx.MLP.Float32.Long.Losses))
	params, err := tr.Params(ctx)
	if err != nil {
		t.Fatal(err)
	}
	trained := map[string][]float32{}
	for name, p := range params {
		trained[name] = p.Data
	}
	rows := len(d.labels)
	g := digitsModel(t, d, n, rows, trained, shapes, false)
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	res, err := exe.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	logits := res.Outputs["logits"].Data
	correct := 0
	for i, label := range d.labels[n:] {
		row := logits[10*i : 10*i+10]
		best := 0
		for c := range row {
			if row[c] > row[best] {
				best = c
			}
		}
		if best == label {
			correct++
		}
	}
	total := rows - n
	t.Logf("%d steps: loss %.6g → %.6g (largest |gpucc − torch float64| %.3g, %.3g of the bound); test accuracy %d/%d = %.2f%% (PyTorch float64 %d, float32 %d)",
		len(losses), losses[0], losses[len(losses)-1], diff, r, correct, total, 100*float64(correct)/float64(total),
		fx.MLP.Float64.Long.TestCorrect, fx.MLP.Float32.Long.TestCorrect)
	if w := fx.MLP.Float64.Long.TestCorrect; correct < w-2 || correct > w+2 {
		t.Errorf("test accuracy %d/%d, PyTorch float64 %d/%d", correct, total, w, total)
	}
}

// BenchmarkDigitsStep measures one full-batch training step of the digits
// classifier (1437 examples, 64→128→10, cross-entropy) on each backend,
// with the parameters and the batch resident: only the loss comes back.
func BenchmarkDigitsStep(b *testing.B) {
	fx := loadDigitsFixture(b)
	d := loadDigits(b, fx.Data.Sha256)
	g := digitsModel(b, d, 0, fx.Data.Train, digitsInit(b, fx), digitsShapes(fx), false)
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) {
			ctx := context.Background()
			tr, err := open(b, backend).NewTrainer(ctx, g, "loss", fx.MLP.LR)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			if _, err := tr.Step(ctx, nil); err != nil { // uploads the batch
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := tr.Step(ctx, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package ir_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/grad"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// eps32 is float32's unit roundoff, 2⁻²⁴.
const eps32 = 0x1p-24

// eval evaluates g on cpuref and returns its outputs by name.
func eval(t *testing.T, g *ir.Graph) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	vals := cpuref.Eval(g)
	for _, o := range g.Outputs {
		out[o.Name] = vals[o.ID]
	}
	return out
}

// gradients returns ∂loss/∂p for every parameter of g, computed by grad on
// cpuref. Every parameter must hold zeros and enter the graph only through
// c.Add(p), a constant c plus a zero shift: then c + p = c exactly, the
// forward pass is the one without p, and one SGD step with lr 1 gives
// p' = 0 - 1·g = -g exactly, so the gradient comes back unrounded.
func gradients(t *testing.T, g *ir.Graph, loss string) map[string][]float32 {
	t.Helper()
	for _, p := range g.Params() {
		for _, v := range g.Nodes[p.ID].Data {
			if v != 0 {
				t.Fatalf("gradients: parameter %q is not all zeros", p.Name)
			}
		}
	}
	sg, err := grad.Step(g, loss, 1)
	if err != nil {
		t.Fatal(err)
	}
	out := eval(t, sg)
	gs := map[string][]float32{}
	for _, p := range g.Params() {
		v := out[p.Name]
		neg := make([]float32, len(v))
		for i := range v {
			neg[i] = -v[i]
		}
		gs[p.Name] = neg
	}
	return gs
}

// within checks got against want (float64 math) elementwise, with bound(i)
// the allowed |got - want|, and logs the largest error relative to its
// bound.
func within(t *testing.T, name string, got []float32, want []float64, bound func(i int) float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	worst, at, bad := 0.0, -1, 0
	for i := range got {
		d := math.Abs(float64(got[i]) - want[i])
		if float64(got[i]) == want[i] { // ±Inf included
			d = 0
		}
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		r := d / bound(i)
		if r > worst {
			worst, at = r, i
		}
		if r > 1 {
			if bad < 5 {
				t.Errorf("%s[%d] = %v, want %v (difference %.3g, bound %.3g)", name, i, got[i], want[i], d, bound(i))
			}
			bad++
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d values out of bound in all", name, bad)
	}
	if at >= 0 {
		t.Logf("%s: largest error %.3g of its bound at %d (got %v, want %v)", name, worst, at, got[at], want[at])
	}
}

// gelu64 and its derivative in float64, with the float32 constants the
// composite uses.
func gelu64(x float64) float64 {
	k, c := float64(float32(math.Sqrt(2/math.Pi))), float64(float32(0.044715))
	return 0.5 * x * (1 + math.Tanh(k*(x+c*x*x*x)))
}

func geluPrime64(x float64) float64 {
	k, c := float64(float32(math.Sqrt(2/math.Pi))), float64(float32(0.044715))
	th := math.Tanh(k * (x + c*x*x*x))
	return 0.5*(1+th) + 0.5*x*(1-th*th)*k*(1+3*c*x*x)
}

// TestGELU checks GELU against float64 math over ordinary and extreme
// values (±3e38, subnormals, ±0), within 8ε(|x| + |y|) + 2⁻¹⁴⁹: tanh's
// 2-ULP error (2ε absolute near ±1) carried through 1 + tanh, where it is
// not relative (large negative x), scaled by 0.5|x|, plus a few roundings
// of y, and one subnormal step where 0.5·x rounds.
func TestGELU(t *testing.T) {
	xs := append(irtest.Values(1, 4096, 6), irtest.Extremes(2, 4096)...)
	b := ir.NewBuilder()
	b.Output("y", b.Input(ir.Shape{len(xs)}, xs).GELU())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := eval(t, g)["y"]
	want := make([]float64, len(xs))
	for i, x := range xs {
		want[i] = gelu64(float64(x))
	}
	within(t, "gelu", got, want, func(i int) float64 {
		return 8*eps32*(math.Abs(float64(xs[i]))+math.Abs(want[i])) + 0x1p-149
	})
}

// TestGELUGradient checks grad's gradient of sum(w·GELU(x)), which is
// w·GELU'(x), against float64 math within 16ε·|w|·(1 + 0.5|x|·k·(1+3c·x²)):
// the rounding of 1 - tanh² is absolute and is scaled by the second term's
// factor.
func TestGELUGradient(t *testing.T) {
	n := 2048
	xs, ws := irtest.Values(3, n, 6), irtest.Values(4, n, 2)
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{n}, xs).Add(b.Param("x", ir.Shape{n}, make([]float32, n)))
	b.Output("loss", x.GELU().Mul(b.Input(ir.Shape{n}, ws)).Sum())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := gradients(t, g, "loss")["x"]
	want := make([]float64, n)
	for i := range want {
		want[i] = float64(ws[i]) * geluPrime64(float64(xs[i]))
	}
	k, c := float64(geluK()), 0.044715
	within(t, "gelu'", got, want, func(i int) float64 {
		x := math.Abs(float64(xs[i]))
		return 16*eps32*math.Abs(float64(ws[i]))*(1+0.5*x*k*(1+3*c*x*x)) + 0x1p-149
	})
}

func geluK() float32 { return float32(math.Sqrt(2 / math.Pi)) }

// GELU is the tanh form, lowered to multiplies, an add and tanh.
func ExampleTensor_GELU() {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{5}, []float32{-3, -1, 0, 1, 3})
	b.Output("y", x.GELU())
	g, _ := b.Build(ir.Limits{})
	for _, v := range cpuref.Eval(g)[g.Outputs[0].ID] {
		fmt.Printf("%.6f ", v)
	}
	fmt.Println()
	// Output:
	// -0.003637 -0.158808 0.000000 0.841192 2.996363
}

// rows returns an r×c matrix of ordinary values, with rows of extremes:
// equal values, a spread of ±80 (exp underflows for most), a row holding
// ±3e38, and a row with -0 and subnormals.
func rows(seed uint64, r, c int) []float32 {
	x := irtest.Values(seed, r*c, 8)
	special := [][]float32{{3, 3, 3}, {80, -80, 0, 79.5}, {3e38, -3e38, 1}, {float32(math.Copysign(0, -1)), 0x1p-140, -0x1p-149, 0}}
	for i, s := range special {
		if i >= r {
			break
		}
		row := x[(r-1-i)*c : (r-i)*c]
		for j := range row {
			row[j] = s[j%len(s)]
		}
	}
	return x
}

// ref64 is a float64 evaluation of a row-wise composite.
type ref64 struct {
	y     []float64
	bound []float64
}

// softmax64 is Softmax(1) and LogSoftmax(1) in float64 from float32 x
// [r,c], with bounds:
//   - softmax: (|s| + 2·log₂c + 8)·ε·y + 2⁻¹⁴⁹: the rounding of s = x - max
//     carried through exp (ε|s| relative), exp's 2 ULP, the pairwise sum's
//     log₂c roundings, and the division;
//   - log-softmax: (|s| + 2|L| + 2·log₂c + 8)·ε + ε|y| with L = log(sum):
//     the same, absolute, through log's 2 ULP.
func softmax64(x []float32, r, c int) (sm, lsm ref64) {
	lg := math.Ceil(math.Log2(float64(c)))
	for i := 0; i < r; i++ {
		row := x[i*c : (i+1)*c]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, float64(v))
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(float64(v) - m)
		}
		l := math.Log(sum)
		for _, v := range row {
			s := float64(v) - m
			y := math.Exp(s) / sum
			if math.IsInf(s, -1) {
				s = 0 // exp(-Inf) = 0 exactly
			}
			sm.y = append(sm.y, y)
			sm.bound = append(sm.bound, (math.Abs(s)+2*lg+8)*eps32*y+0x1p-149)
			if math.IsInf(float64(float32(float64(v)-m)), -1) {
				// x - max overflows float32 (a row spanning more than
				// MaxFloat32): log-softmax is -Inf there.
				lsm.y = append(lsm.y, math.Inf(-1))
				lsm.bound = append(lsm.bound, 0)
				continue
			}
			lsm.y = append(lsm.y, s-l)
			lsm.bound = append(lsm.bound, (math.Abs(s)+2*math.Abs(l)+2*lg+8)*eps32+eps32*math.Abs(s-l))
		}
	}
	return sm, lsm
}

// TestSoftmax checks Softmax and LogSoftmax along the last axis (1 and -1)
// against float64 math within softmax64's bounds, over odd and long rows.
func TestSoftmax(t *testing.T) {
	for _, rc := range [][2]int{{1, 1}, {5, 3}, {7, 10}, {33, 57}} {
		r, c := rc[0], rc[1]
		x := rows(uint64(r*c), r, c)
		b := ir.NewBuilder()
		in := b.Input(ir.Shape{r, c}, x)
		b.Output("softmax", in.Softmax(1))
		b.Output("log_softmax", in.LogSoftmax(-1))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		got := eval(t, g)
		sm, lsm := softmax64(x, r, c)
		name := fmt.Sprintf("%dx%d", r, c)
		within(t, "softmax "+name, got["softmax"], sm.y, func(i int) float64 { return sm.bound[i] })
		within(t, "log_softmax "+name, got["log_softmax"], lsm.y, func(i int) float64 { return lsm.bound[i] })
	}
}

// TestCrossEntropy checks CrossEntropy against float64 math, and (with
// grad) its gradient against (softmax(x) - onehot)/N. Loss bound: the mean
// of the log-softmax bounds at the labels, plus the whole sum's 2·log₂(N·C)
// roundings relative to the sum of |terms|, plus the division. Gradient
// bound: softmax64's bound over N, plus 4ε of each term.
func TestCrossEntropy(t *testing.T) { crossEntropy(t, false) }

func crossEntropy(t *testing.T, gradient bool) {
	for _, nc := range [][2]int{{1, 2}, {9, 10}, {300, 10}} {
		n, c := nc[0], nc[1]
		x := rows(uint64(7*n+c), n, c)
		for i, v := range x {
			if math.Abs(float64(v)) > 1e30 {
				x[i] = 0 // a logit of -Inf log-probability makes 0·-Inf = NaN (see CrossEntropy)
			}
		}
		labels := make([]int, n)
		oh := make([]float32, n*c)
		for i := range labels {
			labels[i] = (i*7 + 3) % c
			oh[i*c+labels[i]] = 1
		}
		b := ir.NewBuilder()
		logits := b.Input(ir.Shape{n, c}, x).Add(b.Param("z", ir.Shape{n, c}, make([]float32, n*c)))
		b.Output("loss", logits.CrossEntropy(b.Input(ir.Shape{n, c}, oh)))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		sm, lsm := softmax64(x, n, c)
		loss, lb, mag := 0.0, 0.0, 0.0
		for i, l := range labels {
			loss -= lsm.y[i*c+l]
			lb += lsm.bound[i*c+l]
			mag += math.Abs(lsm.y[i*c+l])
		}
		loss /= float64(n)
		bound := lb/float64(n) + 2*math.Ceil(math.Log2(float64(n*c)))*eps32*mag/float64(n) + eps32*math.Abs(loss)
		name := fmt.Sprintf("%dx%d", n, c)
		within(t, "cross_entropy "+name, eval(t, g)["loss"], []float64{loss}, func(int) float64 { return bound })
		if !gradient {
			continue
		}
		want := make([]float64, n*c)
		for i := range want {
			want[i] = (sm.y[i] - float64(oh[i])) / float64(n)
		}
		within(t, "cross_entropy' "+name, gradients(t, g, "loss")["z"], want, func(i int) float64 {
			return sm.bound[i]/float64(n) + 4*eps32*math.Abs(want[i]) + 4*eps32*(sm.y[i]+float64(oh[i]))/float64(n)
		})
	}
}

// moments64 is the float64 mean and population variance of each row.
func moments64(x []float32, r, c int) (mean, variance []float64) {
	for i := 0; i < r; i++ {
		m := 0.0
		for _, v := range x[i*c : (i+1)*c] {
			m += float64(v)
		}
		m /= float64(c)
		s := 0.0
		for _, v := range x[i*c : (i+1)*c] {
			s += (float64(v) - m) * (float64(v) - m)
		}
		mean, variance = append(mean, m), append(variance, s/float64(c))
	}
	return mean, variance
}

// TestMoments checks Mean, Variance and LayerNorm along axis 1 (and Mean
// over every axis) against float64 math. Bounds, with k = log₂c + 2 (the
// pairwise sum's roundings and one more):
//   - mean: k·ε·mean(|x|);
//   - variance: 2k·ε·mean(c²) + 2·δ·mean(|c|) with δ the mean's bound (c =
//     x - mean, whose error δ enters each c² twice);
//   - layernorm: (2k + 8)·ε·|y| + δ·r + 0.5·r·|y|·δᵥ/(v + eps), with
//     r = rsqrt(v + eps) and δᵥ the variance's bound (rsqrt's 2 ULP and its
//     argument's relative error, halved).
func TestMoments(t *testing.T) {
	const eps = 1e-5
	for _, rc := range [][2]int{{1, 1}, {3, 4}, {9, 64}, {5, 1000}} {
		r, c := rc[0], rc[1]
		x := irtest.Values(uint64(r+c), r*c, 4)
		for i := range x {
			x[i] += 2 // a mean away from zero
		}
		b := ir.NewBuilder()
		in := b.Input(ir.Shape{r, c}, x)
		b.Output("mean", in.Mean(true, 1))
		b.Output("mean-all", in.Mean(false))
		b.Output("variance", in.Variance(true, -1))
		b.Output("layer_norm", in.LayerNorm(1, eps))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		got := eval(t, g)
		mean, variance := moments64(x, r, c)
		k := math.Ceil(math.Log2(float64(c))) + 2
		meanAbs := make([]float64, r)
		cAbs := make([]float64, r)
		for i := 0; i < r; i++ {
			for _, v := range x[i*c : (i+1)*c] {
				meanAbs[i] += math.Abs(float64(v)) / float64(c)
				cAbs[i] += math.Abs(float64(v)-mean[i]) / float64(c)
			}
		}
		mb := func(i int) float64 { return k*eps32*meanAbs[i] + 0x1p-149 }
		vb := func(i int) float64 { return 2*k*eps32*variance[i] + 2*mb(i)*cAbs[i] + 0x1p-149 }
		name := fmt.Sprintf("%dx%d", r, c)
		within(t, "mean "+name, got["mean"], mean, mb)
		within(t, "variance "+name, got["variance"], variance, vb)
		all, allAbs := 0.0, 0.0
		for _, v := range x {
			all += float64(v)
			allAbs += math.Abs(float64(v))
		}
		n := float64(len(x))
		ka := math.Ceil(math.Log2(n)) + 2
		within(t, "mean-all "+name, got["mean-all"], []float64{all / n}, func(int) float64 { return ka * eps32 * allAbs / n })
		ln := make([]float64, r*c)
		for i := range ln {
			row := i / c
			ln[i] = (float64(x[i]) - mean[row]) / math.Sqrt(variance[row]+float64(float32(eps)))
		}
		within(t, "layer_norm "+name, got["layer_norm"], ln, func(i int) float64 {
			row := i / c
			v := variance[row] + float64(float32(eps))
			rs := 1 / math.Sqrt(v)
			return (2*k+8)*eps32*math.Abs(ln[i]) + mb(row)*rs + 0.5*rs*math.Abs(ln[i])*vb(row)/v + 0x1p-149
		})
	}
}

// Softmax along the last axis of a [2,3] tensor; each row sums to 1.
func ExampleTensor_Softmax() {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{2, 3}, []float32{1, 2, 3, -1, 0, 1000})
	b.Output("p", x.Softmax(-1))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cpuref.Eval(g)[g.Outputs[0].ID])
	// Output:
	// [0.09003057 0.24472848 0.66524094 0 0 1]
}

// CrossEntropy of logits against one-hot labels: the mean over the batch
// of -log softmax at the label.
func ExampleTensor_CrossEntropy() {
	b := ir.NewBuilder()
	logits := b.Input(ir.Shape{2, 3}, []float32{2, 0, 0, 0, 0, 0})
	labels := b.Input(ir.Shape{2, 3}, []float32{1, 0, 0, 0, 0, 1})
	b.Output("loss", logits.CrossEntropy(labels))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.6f\n", cpuref.Eval(g)[g.Outputs[0].ID][0])
	// Output:
	// 0.669079
}

// LayerNorm normalises each row to mean 0 and variance 1 (up to eps).
func ExampleTensor_LayerNorm() {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{2, 4}, []float32{1, 2, 3, 4, 10, 10, 10, 14})
	b.Output("y", x.LayerNorm(1, 1e-5))
	b.Output("mean", x.Mean(false, 1))
	b.Output("variance", x.Variance(false, 1))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	vals := cpuref.Eval(g)
	for _, o := range g.Outputs {
		fmt.Printf("%s %.5f\n", o.Name, vals[o.ID])
	}
	// Output:
	// y [-1.34164 -0.44721 0.44721 1.34164 -0.57735 -0.57735 -0.57735 1.73205]
	// mean [2.50000 11.00000]
	// variance [1.25000 3.00000]
}

// TestLayerNormWideRows checks LayerNorm on rows whose spread squares past
// float32's range (c·c overflows from |c| ≈ 1.8e19 on, which once made
// the variance +Inf and the row ±0) against float64 math, and that a row
// inside 2⁴⁰ keeps the bits of the unscaled c · rsqrt(var + eps).
func TestLayerNormWideRows(t *testing.T) {
	const eps = 1e-5
	rows := [][]float32{
		{1e20, -1e20, 3e20, 0},
		{3e37, -3e37, 1e37, 0},
		{1e30, 1, 2, 3},
		{2e19, 2e19, 2e19, 2e19}, // constant: c = 0, y = 0
		{1, 2, 3, 4},
		{0x1p40, -0x1p40, 7, 0}, // k = 1 exactly at the edge
	}
	var x []float32
	for _, r := range rows {
		x = append(x, r...)
	}
	r, c := len(rows), len(rows[0])
	b := ir.NewBuilder()
	in := b.Input(ir.Shape{r, c}, x)
	b.Output("layer_norm", in.LayerNorm(1, eps))
	cen := in.Sub(in.Mean(true, 1))
	b.Output("unscaled", cen.Mul(cen.Mul(cen).Mean(true, 1).AddScalar(eps).Rsqrt()))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := eval(t, g)
	mean, variance := moments64(x, r, c)
	want := make([]float64, r*c)
	for i := range want {
		want[i] = (float64(x[i]) - mean[i/c]) / math.Sqrt(variance[i/c]+float64(float32(eps)))
	}
	within(t, "layer_norm", got["layer_norm"], want, func(i int) float64 {
		return 64*eps32*math.Abs(want[i]) + 0x1p-149
	})
	for _, row := range []int{4, 5} { // every |c| ≤ 2⁴⁰: k = 1
		for i := row * c; i < (row+1)*c; i++ {
			if a, u := math.Float32bits(got["layer_norm"][i]), math.Float32bits(got["unscaled"][i]); a != u {
				t.Errorf("row %d element %d: %#08x, the unscaled form gives %#08x", row, i%c, a, u)
			}
		}
	}
}

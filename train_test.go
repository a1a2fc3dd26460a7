package gpucc_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/bench"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/grad"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// fixture is mlp_train_public.expect.json: PyTorch 2.11's float64 run with a
// per-value bound (see testdata/fixtures/README.md).
type fixture struct {
	Steps  int     `json:"steps"`
	LR     float32 `json:"lr"`
	Losses values  `json:"losses"`
	Params map[string]struct {
		Shape []int `json:"shape"`
		values
	} `json:"params"`
}

type values struct {
	Data  []float64 `json:"data"`
	Bound []float64 `json:"bound"`
}

func loadFixture(t *testing.T) (*ir.Graph, *fixture) {
	t.Helper()
	dir := filepath.Join("testdata", "fixtures")
	f, err := os.Open(filepath.Join(dir, "mlp_train_public.graph.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := ir.Decode(f, ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "mlp_train_public.expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want fixture
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	return g, &want
}

// within checks got against want's float64 data, value by value, and
// returns the largest |got - data| / bound.
func within(t *testing.T, what string, got []float32, want values) float64 {
	t.Helper()
	if len(got) != len(want.Data) || len(want.Bound) != len(want.Data) {
		t.Fatalf("%s: %d values, fixture has %d (and %d bounds)", what, len(got), len(want.Data), len(want.Bound))
	}
	worst := 0.0
	for i, v := range got {
		d := math.Abs(float64(v) - want.Data[i])
		if d > want.Bound[i] {
			t.Errorf("%s[%d] = %v, PyTorch float64 %v: |diff| %.3g over the bound %.3g", what, i, v, want.Data[i], d, want.Bound[i])
		}
		worst = max(worst, d/want.Bound[i])
	}
	return worst
}

// TestTrainFixture trains the seed's MLP fixture for its steps on every
// backend, compares every loss and final parameter with PyTorch, and
// checks that after the first step a step uploads nothing and reads back
// only the loss.
func TestTrainFixture(t *testing.T) {
	g, want := loadFixture(t)
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be)
			res, err := rt.Train(context.Background(), g, "loss", want.LR, want.Steps)
			if err != nil {
				t.Fatal(err)
			}
			worst := within(t, "loss", res.Losses, want.Losses)
			for name, p := range want.Params {
				got, ok := res.Params[name]
				if !ok {
					t.Fatalf("no parameter %q in the result", name)
				}
				worst = max(worst, within(t, name, got.Data, p.values))
			}
			for _, s := range res.PerStep {
				if s.Step > 1 && (s.UploadBytes != 0 || s.ReadbackBytes != 4) {
					t.Errorf("step %d uploaded %d B and read back %d B; want 0 and 4 (the loss)", s.Step, s.UploadBytes, s.ReadbackBytes)
				}
			}
			if s := res.PerStep[0]; s.UploadBytes == 0 || s.ReadbackBytes != 4 {
				t.Errorf("step 1 uploaded %d B and read back %d B; want the parameters and batch, and 4", s.UploadBytes, s.ReadbackBytes)
			}
			t.Logf("%s: %d steps, %d kernels per step; max |diff|/bound: %.4f", be, want.Steps, res.Kernels, worst)
			if n, _ := rt.LiveTensors(); n != 0 {
				t.Errorf("%d tensors live after Train", n)
			}
		})
	}
}

// TestTrainerNewBatches steps a Trainer with a new batch every step and
// checks each loss and the final parameters, bit for bit, against cpuref
// evaluating the step graph with the previous step's parameters.
//
// The graphs: the fixture's MLP, and BenchmarkMLPTrainStep's three layers
// (small), whose loss guard shares one sum among [n,n] weights and [n]
// biases of two layers.
func TestTrainerNewBatches(t *testing.T) {
	fixture, fx := loadFixture(t)
	for _, c := range []struct {
		name string
		g    *ir.Graph
		lr   float32
	}{{"fixture", fixture, fx.LR}, {"mlp3", bench.MLP(64, 32, 48, 5), 0.05}} {
		t.Run(c.name, func(t *testing.T) { trainerNewBatches(t, c.g, c.lr) })
	}
}

func trainerNewBatches(t *testing.T, g *ir.Graph, lr float32) {
	sg, err := grad.Step(g, "loss", lr)
	if err != nil {
		t.Fatal(err)
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx := context.Background()
			rt := open(t, be)
			tr, err := rt.NewTrainer(ctx, g, "loss", lr)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			ref := sg.Clone()
			for i := range ref.Nodes {
				ref.Nodes[i].Data = sg.Nodes[i].Data
			}
			xs, ts := g.Nodes[g.Input("x")].Shape, g.Nodes[g.Input("target")].Shape
			for step := range 4 {
				x := irtest.Values(uint64(100+step), xs.Len(), 1)
				target := irtest.Values(uint64(200+step), ts.Len(), 1)
				r, err := tr.Step(ctx, gpucc.Inputs{"x": gpucc.NewTensor(xs, x), "target": gpucc.NewTensor(ts, target)})
				if err != nil {
					t.Fatal(err)
				}
				ref.Nodes[ref.Input("x")].Data, ref.Nodes[ref.Input("target")].Data = x, target
				vals := cpuref.Eval(ref)
				outs := map[string][]float32{}
				for _, o := range ref.Outputs {
					outs[o.Name] = vals[o.ID]
				}
				if math.Float32bits(r.Loss) != math.Float32bits(outs["loss"][0]) {
					t.Fatalf("step %d: loss %v, cpuref %v", step, r.Loss, outs["loss"][0])
				}
				if want := int64(4 * (xs.Len() + ts.Len())); step > 0 && r.Timings.UploadBytes != want {
					t.Errorf("step %d uploaded %d B, want the batch's %d", step, r.Timings.UploadBytes, want)
				}
				for _, p := range g.Params() {
					ref.Nodes[p.ID].Data = outs[p.Name]
				}
			}
			params, err := tr.Params(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range g.Params() {
				if !equalBits(params[p.Name].Data, ref.Nodes[p.ID].Data) {
					t.Errorf("parameter %s differs from cpuref after 4 steps", p.Name)
				}
			}
		})
	}
}

// TestTrainRefuses: no steps, a nil graph and a parameter given as batch
// data are refused; the caller's graph is never written.
func TestTrainRefuses(t *testing.T) {
	ctx := context.Background()
	g, _ := loadFixture(t)
	before := append([]float32(nil), g.Nodes[g.Input("w1")].Data...)
	rt := open(t, "cpu")
	if _, err := rt.Train(ctx, g, "loss", 0.1, 2); err != nil {
		t.Fatal(err)
	}
	if !equalBits(before, g.Nodes[g.Input("w1")].Data) {
		t.Error("Train changed the caller's parameter data")
	}
	for _, steps := range []int{0, -1} {
		if _, err := rt.Train(ctx, g, "loss", 0.1, steps); gpucc.CodeOf(err) != ir.CodeInvalidInput {
			t.Errorf("Train with %d steps: %v, want %s", steps, err, ir.CodeInvalidInput)
		}
	}
	if _, err := rt.NewTrainer(ctx, nil, "loss", 0.1); gpucc.CodeOf(err) != ir.CodeInvalidGraph {
		t.Errorf("NewTrainer(nil): %v", err)
	}
	for _, lr := range []float32{0, float32(math.Copysign(0, -1)), -1, float32(math.Inf(1)), float32(math.NaN())} {
		if _, err := rt.NewTrainer(ctx, g, "loss", lr); gpucc.CodeOf(err) != ir.CodeInvalidInput {
			t.Errorf("NewTrainer with lr %v: %v, want %s", lr, err, ir.CodeInvalidInput)
		}
	}
	fixed := g.Clone()
	for i := range fixed.Nodes {
		fixed.Nodes[i].Param = false
	}
	if _, err := rt.NewTrainer(ctx, fixed, "loss", 0.1); gpucc.CodeOf(err) != ir.CodeInvalidGraph {
		t.Errorf("NewTrainer of a graph without parameters: %v, want %s", err, ir.CodeInvalidGraph)
	}
	tr, err := rt.NewTrainer(ctx, g, "loss", 0.1)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	w1 := g.Nodes[g.Input("w1")]
	if _, err := tr.Step(ctx, gpucc.Inputs{"w1": gpucc.NewTensor(w1.Shape, w1.Data)}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("a parameter as batch data: %v, want %s", err, ir.CodeInvalidInput)
	}
}

// TestTrainDiverged: a learning rate that sends the parameters to ±Inf
// and NaN is refused at the step that does it, with non_finite_output,
// and the trainer keeps the parameters it had before, on every backend.
// (The loss alone did not tell: it read 21.48, 0, 0 while the parameters
// were ±Inf and NaN.) A step that stays finite is not changed by the
// check: its loss is cpuref's bit for bit.
func TestTrainDiverged(t *testing.T) {
	ctx := context.Background()
	g, fx := loadFixture(t)
	want := map[string][]float32{}
	for _, p := range g.Params() {
		want[p.Name] = g.Nodes[p.ID].Data
	}
	sg, err := grad.Step(g, "loss", fx.LR)
	if err != nil {
		t.Fatal(err)
	}
	ref := cpuref.Eval(sg)[sg.Outputs[0].ID][0]
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be)
			tr, err := rt.NewTrainer(ctx, g, "loss", 3e38)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			for step := range 2 {
				if r, err := tr.Step(ctx, nil); gpucc.CodeOf(err) != ir.CodeNonFiniteOutput {
					t.Errorf("step %d: %+v, %v; want %s", step+1, r, err, ir.CodeNonFiniteOutput)
				}
			}
			got, err := tr.Params(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range want {
				if !equalBits(w, got[name].Data) {
					t.Errorf("parameter %s changed after refused steps", name)
				}
			}
			// Launched steps: each is refused, by Launch where the step
			// completes inside it (cpu, wasm, native), else at its Wait,
			// which undoes it and the ones launched after it.
			var ps []*gpucc.StepPending
			for i := range 3 {
				p, err := tr.Launch(ctx, nil)
				if err != nil {
					if gpucc.CodeOf(err) != ir.CodeNonFiniteOutput {
						t.Errorf("launch %d: %v, want %s", i+1, err, ir.CodeNonFiniteOutput)
					}
					continue
				}
				ps = append(ps, p)
			}
			for i, p := range ps {
				if r, err := p.Wait(ctx); gpucc.CodeOf(err) != ir.CodeNonFiniteOutput {
					t.Errorf("launched step %d: %+v, %v; want %s", i+1, r, err, ir.CodeNonFiniteOutput)
				}
			}
			if got, err = tr.Params(ctx); err != nil {
				t.Fatal(err)
			}
			for name, w := range want {
				if !equalBits(w, got[name].Data) {
					t.Errorf("parameter %s changed after refused launched steps", name)
				}
			}
			if _, err := rt.Train(ctx, g, "loss", 3e38, 3); gpucc.CodeOf(err) != ir.CodeNonFiniteOutput {
				t.Errorf("Train: %v, want %s", err, ir.CodeNonFiniteOutput)
			}
			ok, err := rt.NewTrainer(ctx, g, "loss", fx.LR)
			if err != nil {
				t.Fatal(err)
			}
			defer ok.Close()
			r, err := ok.Step(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if math.Float32bits(r.Loss) != math.Float32bits(ref) {
				t.Errorf("loss %v, cpuref %v", r.Loss, ref)
			}
		})
	}
}

package digits

import (
	"context"
	"fmt"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	_ "github.com/gpucc/gpucc/runtime/cpu" // the backend Train trains on
)

// Accuracy is how many of the held-out digits a model classified right.
type Accuracy struct{ Correct, Total int }

func (a Accuracy) String() string {
	return fmt.Sprintf("%d/%d = %.2f%%", a.Correct, a.Total, 100*float64(a.Correct)/float64(a.Total))
}

// CNN's schedule: full-batch SGD at CNNRate for CNNSteps steps from
// CNNInit(CNNSeed), on the fixture's training rows.
const (
	CNNRate  = 0.5
	CNNSteps = 300
	CNNSeed  = 20261202
)

// Train trains the classifier arch ("mlp": the fixture's MLP, from its
// initial parameters, at its rate for its long run's steps; "cnn": the
// CNN of CNNParams on CNN's schedule) on the data at csvPath with
// gpucc's Trainer on the cpu backend, and returns the page's classifier
// (n = 1) encoded, and its accuracy on the held-out rows.
func Train(ctx context.Context, arch, fixturePath, csvPath string) ([]byte, Accuracy, error) {
	fx, err := LoadFixture(fixturePath)
	if err != nil {
		return nil, Accuracy{}, err
	}
	d, err := Load(csvPath, fx.Sha256)
	if err != nil {
		return nil, Accuracy{}, err
	}
	if len(d.Labels) != fx.Rows {
		return nil, Accuracy{}, fmt.Errorf("digits: %d rows, the fixture says %d", len(d.Labels), fx.Rows)
	}
	var (
		g        *ir.Graph
		lr       = fx.LR
		steps    = fx.Steps
		classify func(n int, p map[string][]float32) (*ir.Graph, error)
	)
	switch arch {
	case "mlp":
		g, err = TrainGraph(d, 0, fx.Train, fx.Init, fx.Shapes)
		classify = func(n int, p map[string][]float32) (*ir.Graph, error) { return Classifier(n, p, fx.Shapes) }
	case "cnn":
		g, err = CNNTrainGraph(d, 0, fx.Train, CNNInit(CNNSeed))
		lr, steps, classify = CNNRate, CNNSteps, CNNClassifier
	default:
		return nil, Accuracy{}, fmt.Errorf("digits: no classifier %q (mlp, cnn)", arch)
	}
	if err != nil {
		return nil, Accuracy{}, err
	}
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu"})
	if err != nil {
		return nil, Accuracy{}, err
	}
	defer rt.Close()
	tr, err := rt.NewTrainer(ctx, g, "loss", lr)
	if err != nil {
		return nil, Accuracy{}, err
	}
	defer tr.Close()
	for range steps {
		if _, err := tr.Step(ctx, nil); err != nil {
			return nil, Accuracy{}, err
		}
	}
	ps, err := tr.Params(ctx)
	if err != nil {
		return nil, Accuracy{}, err
	}
	trained := map[string][]float32{}
	for name, p := range ps {
		trained[name] = p.Data
	}
	acc, err := Evaluate(ctx, rt, d, fx.Train, trained, classify)
	if err != nil {
		return nil, Accuracy{}, err
	}
	c, err := classify(1, trained)
	if err != nil {
		return nil, Accuracy{}, err
	}
	return ir.Encode(c), acc, nil
}

// Evaluate classifies rows [from, end) of d on rt with the classifier
// classify builds from params.
func Evaluate(ctx context.Context, rt *gpucc.Runtime, d *Data, from int, params map[string][]float32, classify func(n int, p map[string][]float32) (*ir.Graph, error)) (Accuracy, error) {
	n := len(d.Labels) - from
	c, err := classify(n, params)
	if err != nil {
		return Accuracy{}, err
	}
	if err := c.SetInput("x", d.Pixels[64*from:]); err != nil {
		return Accuracy{}, err
	}
	res, err := rt.Run(ctx, c)
	if err != nil {
		return Accuracy{}, err
	}
	probs := res.Outputs["probs"].Data
	acc := Accuracy{Total: n}
	for i, label := range d.Labels[from:] {
		if Argmax(probs[10*i:10*i+10]) == label {
			acc.Correct++
		}
	}
	return acc, nil
}

// Argmax is the first index of the largest value of v, the class a
// classifier picks (the page's rule too).
func Argmax(v []float32) int {
	best := 0
	for i := range v {
		if v[i] > v[best] {
			best = i
		}
	}
	return best
}

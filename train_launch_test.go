package gpucc_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
)

// TestTrainerLaunch: steps launched without waiting, their losses read
// every third step, at the end, or never (one whose Wait is cancelled),
// give the losses and parameters of Step on the cpu backend, bit for bit,
// on every backend; no tensor is left but the parameters and the batch.
func TestTrainerLaunch(t *testing.T) {
	g, want := loadFixture(t)
	ctx := context.Background()
	const steps = 7
	ref := open(t, "cpu")
	tr, err := ref.NewTrainer(ctx, g, "loss", want.LR)
	if err != nil {
		t.Fatal(err)
	}
	var losses []float32
	for range steps {
		r, err := tr.Step(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, r.Loss)
	}
	params, err := tr.Params(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refLive, _ := ref.LiveTensors() // the parameters and the uploaded batch
	tr.Close()
	done, cancel := context.WithCancel(ctx)
	cancel()
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be)
			tr, err := rt.NewTrainer(ctx, g, "loss", want.LR)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			var ps []*gpucc.StepPending
			for i := range steps {
				p, err := tr.Launch(ctx, nil)
				if err != nil {
					t.Fatalf("launch %d: %v", i, err)
				}
				ps = append(ps, p)
				if i%3 == 2 {
					r, err := p.Wait(ctx)
					if err != nil {
						t.Fatalf("wait %d: %v", i, err)
					}
					if math.Float32bits(r.Loss) != math.Float32bits(losses[i]) {
						t.Errorf("step %d loss %v, Step's %v", i, r.Loss, losses[i])
					}
				}
			}
			if _, err := ps[1].Wait(done); !errors.Is(err, context.Canceled) {
				t.Errorf("wait on a done context: %v", err)
			}
			for i, p := range ps {
				if i == 1 {
					continue
				}
				r, err := p.Wait(ctx) // again, for those waited above
				if err != nil {
					t.Fatalf("wait %d: %v", i, err)
				}
				if math.Float32bits(r.Loss) != math.Float32bits(losses[i]) {
					t.Errorf("step %d loss %v, Step's %v", i, r.Loss, losses[i])
				}
			}
			got, err := tr.Params(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for name, p := range params {
				if !slices.Equal(gpucctest.BitsOf(got[name].Data), gpucctest.BitsOf(p.Data)) {
					t.Errorf("parameter %s differs from Step's on cpu", name)
				}
			}
			if n, _ := rt.LiveTensors(); n != refLive {
				t.Errorf("%d live tensors, want %d (the parameters and the batch) as after Step", n, refLive)
			}
		})
	}
}

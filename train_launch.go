package gpucc

import (
	"context"
	"time"

	"github.com/gpucc/gpucc/ir"
)

// maxStepsInFlight bounds the steps a Trainer has launched and nobody has
// waited for: past it, Launch waits for the oldest itself, so that a loop
// that never reads its losses holds a bounded number of them.
const maxStepsInFlight = 16

// StepPending is a training step that Trainer.Launch queued; Wait reads
// its loss.
type StepPending struct {
	t        *Trainer
	p        *Pending
	loss     []float32
	uploaded int64
	start    time.Time
	done     bool
	res      *StepResult
	err      error
	// prev holds the parameters the step started from, until Wait knows
	// its loss finite: a step refused as non-finite puts them back.
	prev map[string]*DeviceTensor
	seq  int // its place among the trainer's launches
}

// Launch queues one SGD step as Step runs it, without waiting for it: the
// updated parameters are the trainer's as soon as Launch returns, so the
// next Launch or Step queues behind this one and the device runs the steps
// back to back, and the loss is read only when Wait asks for it (every k
// steps, say, or at the end). A trainer waits for its oldest step itself
// once 16 are in flight; Close drops the losses nobody read. On the cpu,
// wasm and native backends the step completes inside Launch.
//
// Until its Wait a step also holds the parameters it started from: a step
// that Wait refuses as non-finite (non_finite_output: a diverging learning
// rate) is undone, the parameters going back to those, and every step
// launched after it fails with its error.
func (t *Trainer) Launch(ctx context.Context, batch Inputs) (*StepPending, error) {
	if t.exe == nil {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "", "launch: the trainer is closed")
	}
	if len(t.inflight) >= maxStepsInFlight {
		t.inflight[0].Wait(ctx) // its error is its Wait's to report
	}
	start := time.Now()
	in, uploaded, err := t.inputs(ctx, batch)
	if err != nil {
		return nil, err
	}
	s := &StepPending{t: t, loss: make([]float32, 1), uploaded: uploaded, start: start}
	if s.p, err = t.exe.Launch(ctx, in, t.options(s.loss)); err != nil {
		return nil, t.stepError(err)
	}
	// The trainer owns the new parameters from here, whatever becomes of
	// the loss: a failed Wait must not release them.
	kept := s.p.r.res.Kept
	s.p.r.kept = nil
	t.launched++
	s.prev, s.seq = map[string]*DeviceTensor{}, t.launched
	for name, kt := range kept {
		if old, ok := t.params[name]; ok {
			s.prev[name] = old
			t.params[name] = kt
		} else {
			kt.Release()
		}
	}
	t.inflight = append(t.inflight, s)
	return s, nil
}

// rollback undoes s, refused as non-finite, and every step launched after
// it: their parameters, computed from s's, are released, the ones s
// started from are the trainer's again, and the later steps' Waits report
// s's error.
func (t *Trainer) rollback(s *StepPending) {
	var later, keep []*StepPending
	for _, x := range t.inflight {
		if x.seq > s.seq {
			later = append(later, x)
		} else {
			keep = append(keep, x)
		}
	}
	for _, x := range later {
		x.done, x.err = true, s.err
		x.release()
		x.p.Wait(context.WithoutCancel(context.Background())) // end it; its result is dropped
	}
	t.inflight = keep
	for name, prev := range s.prev {
		t.params[name].Release()
		t.params[name] = prev
	}
	s.prev = nil
}

// release drops the parameters s started from: they are no longer needed.
func (s *StepPending) release() {
	for _, pt := range s.prev {
		pt.Release()
	}
	s.prev = nil
}

// Wait waits for the step and returns its loss and timings, as Step
// would have. Once ctx is done it returns ctx's error; the step still
// runs, and its parameters stay the trainer's. Waiting again returns the
// same. Wait is a call on the trainer: the goroutine using it makes it.
func (s *StepPending) Wait(ctx context.Context) (*StepResult, error) {
	if s.done {
		return s.res, s.err
	}
	s.done = true
	t := s.t
	for i, x := range t.inflight {
		if x == s {
			t.inflight = append(t.inflight[:i], t.inflight[i+1:]...)
			break
		}
	}
	res, err := s.p.Wait(ctx)
	if err != nil {
		s.err = t.stepError(err)
		if CodeOf(err) == ir.CodeNonFiniteOutput && s.prev != nil {
			t.rollback(s)
		} else {
			s.release()
		}
		return nil, s.err
	}
	s.release()
	r := &StepResult{Loss: s.loss[0], Timings: res.Timings}
	r.Timings.UploadBytes += s.uploaded + t.pending
	r.Timings.UploadMs += ms(t.pendingTime)
	t.pending, t.pendingTime = 0, 0
	r.Timings.TotalMs = ms(time.Since(s.start))
	s.res = r
	return r, nil
}

// dropInflight ends the steps nobody waited for, reading no loss.
func (t *Trainer) dropInflight() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for len(t.inflight) > 0 {
		t.inflight[0].Wait(ctx)
	}
}

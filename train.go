package gpucc

import (
	"context"
	"time"

	"github.com/gpucc/gpucc/grad"
	"github.com/gpucc/gpucc/ir"
)

// Trainer runs plain SGD on a graph with its parameters resident on the
// device: each Step runs the step graph (grad.Step) once, keeps the
// updated parameters on the device for the next step, and reads back only
// the loss. Parameters come back to the host only when Params asks. A
// Trainer is used by one goroutine at a time; Close releases it.
type Trainer struct {
	rt     *Runtime
	exe    *Executable
	loss   string
	params map[string]*DeviceTensor // the current parameters
	names  []string                 // parameter names, in node order
	batch  map[string]*DeviceTensor // the graph's own batch, uploaded at the first Step that uses it
	// pending is what NewTrainer uploaded, charged to the first step.
	pending     int64
	pendingTime time.Duration
	inflight    []*StepPending // launched steps not yet waited for, oldest first
}

// StepResult is one training step's loss and what the step moved.
type StepResult struct {
	Loss    float32 `json:"loss"`
	Timings Timings `json:"timings"`
}

// NewTrainer compiles the SGD step of g on its output named loss (shape
// []) with learning rate lr, updating every parameter (input marked Param)
// by p -= lr·∂loss/∂p, and uploads the parameters' initial values from g.
// g is not modified.
func (rt *Runtime) NewTrainer(ctx context.Context, g *ir.Graph, loss string, lr float32) (*Trainer, error) {
	if g == nil {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "", "nil graph")
	}
	sg, err := grad.Step(g, loss, lr)
	if err != nil {
		return nil, err
	}
	exe, err := rt.Compile(ctx, sg)
	if err != nil {
		return nil, err
	}
	t := &Trainer{rt: rt, exe: exe, loss: loss, params: map[string]*DeviceTensor{}}
	start := time.Now()
	for _, p := range g.Params() {
		n := &g.Nodes[p.ID]
		pt, err := rt.Upload(ctx, n.Shape, n.Data)
		if err != nil {
			t.Close()
			return nil, err
		}
		t.params[p.Name] = pt
		t.names = append(t.names, p.Name)
		t.pending += pt.Bytes()
	}
	t.pendingTime = time.Since(start)
	return t, nil
}

// Kernels returns the number of kernels a step dispatches.
func (t *Trainer) Kernels() int { return t.exe.Kernels() }

// Step runs one SGD step on batch: the step graph's inputs other than the
// parameters, by name, as host data or device tensors. An input left out
// takes the graph's data, uploaded once at the first step that needs it
// and then kept on the device, so that steps on a fixed batch upload
// nothing after the first. It returns the loss before the update.
func (t *Trainer) Step(ctx context.Context, batch Inputs) (*StepResult, error) {
	if t.exe == nil {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "", "step: the trainer is closed")
	}
	start := time.Now()
	in, uploaded, err := t.inputs(ctx, batch)
	if err != nil {
		return nil, err
	}
	loss := make([]float32, 1)
	res, err := t.exe.RunWith(ctx, in, t.options(loss))
	if err != nil {
		return nil, err
	}
	t.adopt(res.Kept)
	r := &StepResult{Loss: loss[0], Timings: res.Timings}
	r.Timings.UploadBytes += uploaded + t.pending
	r.Timings.UploadMs += ms(t.pendingTime)
	t.pending, t.pendingTime = 0, 0
	r.Timings.TotalMs = ms(time.Since(start))
	return r, nil
}

// inputs are a step's inputs: batch, the parameters, and the graph's own
// batch for inputs left out (uploaded at the first step that needs it),
// with the bytes uploaded.
func (t *Trainer) inputs(ctx context.Context, batch Inputs) (Inputs, int64, error) {
	in := Inputs{}
	var uploaded int64
	for _, pi := range t.exe.plan.Inputs {
		if v, ok := batch[pi.Name]; ok {
			if _, isParam := t.params[pi.Name]; isParam {
				return nil, 0, ir.Errorf(ir.CodeInvalidInput, -1, pi.Name, "step: %q is a parameter, which the trainer holds", pi.Name)
			}
			in[pi.Name] = v
			continue
		}
		if pt, ok := t.params[pi.Name]; ok {
			in[pi.Name] = pt
			continue
		}
		if pi.Buffer < 0 {
			continue
		}
		bt := t.batch[pi.Name]
		if bt == nil {
			var err error
			if bt, err = t.rt.Upload(ctx, pi.Shape, t.exe.plan.Program.Buffers[pi.Buffer].Data); err != nil {
				return nil, 0, err
			}
			if t.batch == nil {
				t.batch = map[string]*DeviceTensor{}
			}
			t.batch[pi.Name] = bt
			uploaded += bt.Bytes()
		}
		in[pi.Name] = bt
	}
	for name := range batch {
		if _, ok := in[name]; !ok {
			return nil, 0, ir.Errorf(ir.CodeInvalidInput, -1, name, "step: the graph has no input named %q", name)
		}
	}
	return in, uploaded, nil
}

// options read the loss into loss and keep every other output on the
// device: the parameters for the next step, g's other outputs to be
// dropped unread.
func (t *Trainer) options(loss []float32) RunOptions {
	var keep []string
	for _, o := range t.exe.plan.Program.Outputs {
		if o.Name != t.loss {
			keep = append(keep, o.Name)
		}
	}
	return RunOptions{Keep: keep, Into: map[string][]float32{t.loss: loss}}
}

// adopt makes a step's kept parameters the trainer's, releasing the old
// ones and the outputs that are no parameter.
func (t *Trainer) adopt(kept map[string]*DeviceTensor) {
	for name, kt := range kept {
		if old, ok := t.params[name]; ok {
			old.Release()
			t.params[name] = kt
		} else {
			kt.Release()
		}
	}
}

// Params reads every parameter back to the host, by name.
func (t *Trainer) Params(ctx context.Context) (map[string]Tensor, error) {
	out := map[string]Tensor{}
	for _, name := range t.names {
		pt := t.params[name]
		data, err := pt.Read(ctx, nil)
		if err != nil {
			return nil, err
		}
		out[name] = Tensor{Shape: pt.Shape(), Data: data}
	}
	return out, nil
}

// Param returns the device tensor holding the current value of parameter
// name (owned by the trainer: valid until the next Step or Close).
func (t *Trainer) Param(name string) (*DeviceTensor, bool) {
	pt, ok := t.params[name]
	return pt, ok
}

// Close releases the trainer's executable and tensors.
func (t *Trainer) Close() {
	t.dropInflight()
	for _, pt := range t.params {
		pt.Release()
	}
	for _, bt := range t.batch {
		bt.Release()
	}
	t.params, t.batch = nil, nil
	if t.exe != nil {
		t.exe.Release()
		t.exe = nil
	}
}

// TrainResult is what Train returns; gpucc train prints it as JSON.
type TrainResult struct {
	Backend string   `json:"backend"`
	Adapter *Adapter `json:"adapter,omitempty"`
	// Losses holds the loss before each step's update, one per step.
	Losses []float32 `json:"losses"`
	// PerStep holds each step's loss and the bytes it moved.
	PerStep []StepStats `json:"perStep"`
	// Params holds every parameter after the last step, by name.
	Params map[string]Tensor `json:"params"`
	// Timings are summed over the steps; TotalMs includes compiling the
	// step graph and reading the parameters back.
	Timings          Timings   `json:"timings"`
	Steps            int       `json:"steps"`
	Kernels          int       `json:"kernels"` // per step
	FallbackAttempts []Attempt `json:"fallbackAttempts"`
	// Exact and ErrorBound are the step's, as in Result (Options.Fast).
	Exact      bool    `json:"exact"`
	ErrorBound float64 `json:"errorBound,omitempty"`
}

// StepStats is one step of a TrainResult.
type StepStats struct {
	Step          int     `json:"step"`
	Loss          float32 `json:"loss"`
	UploadBytes   int64   `json:"uploadBytes"`
	ReadbackBytes int64   `json:"readbackBytes"`
}

// Train runs steps (at least 1) SGD steps of g on its output named loss
// with learning rate lr, on the graph's own batch, with a Trainer, and
// reads the parameters back at the end.
func (rt *Runtime) Train(ctx context.Context, g *ir.Graph, loss string, lr float32, steps int) (*TrainResult, error) {
	start := time.Now()
	if steps < 1 {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "steps", "%d steps; want 1 or more", steps)
	}
	tr, err := rt.NewTrainer(ctx, g, loss, lr)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	res := &TrainResult{Backend: rt.Backend(), Adapter: &rt.info.Adapter, Steps: steps, Kernels: tr.Kernels(),
		Losses: []float32{}, FallbackAttempts: rt.FallbackAttempts()}
	if res.FallbackAttempts == nil {
		res.FallbackAttempts = []Attempt{}
	}
	addCompile(&res.Timings, tr.exe)
	res.Exact, res.ErrorBound = exactness(tr.exe)
	// The steps are launched, not run: the device runs them back to back,
	// and each loss is read once the ones before it are.
	ps := make([]*StepPending, 0, steps)
	for range steps {
		p, err := tr.Launch(ctx, nil)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	for i, p := range ps {
		r, err := p.Wait(ctx)
		if err != nil {
			return nil, err
		}
		res.Losses = append(res.Losses, r.Loss)
		res.PerStep = append(res.PerStep, StepStats{Step: i + 1, Loss: r.Loss, UploadBytes: r.Timings.UploadBytes, ReadbackBytes: r.Timings.ReadbackBytes})
		addTimings(&res.Timings, &r.Timings)
	}
	readStart := time.Now()
	if res.Params, err = tr.Params(ctx); err != nil {
		return nil, err
	}
	for _, p := range res.Params {
		res.Timings.ReadbackBytes += 4 * int64(len(p.Data))
	}
	res.Timings.ReadbackMs += ms(time.Since(readStart))
	res.Timings.TotalMs = ms(time.Since(start))
	return res, nil
}

// addTimings adds the stages of one run to sum.
func addTimings(sum, t *Timings) {
	sum.CodegenMs += t.CodegenMs
	sum.CompileMs += t.CompileMs
	sum.UploadMs += t.UploadMs
	sum.UploadBytes += t.UploadBytes
	sum.DispatchMs += t.DispatchMs
	sum.DispatchClock = t.DispatchClock
	sum.FirstDispatchMs += t.FirstDispatchMs
	sum.ReadbackMs += t.ReadbackMs
	sum.ReadbackBytes += t.ReadbackBytes
}

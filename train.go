package gpucc

import (
	"context"
	"math"
	"slices"
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
	launched    int            // steps launched, numbering them
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
//
// It refuses a learning rate that is not finite and positive
// (invalid_input) and a graph without parameters (invalid_graph), which
// no step could change.
func (rt *Runtime) NewTrainer(ctx context.Context, g *ir.Graph, loss string, lr float32) (*Trainer, error) {
	sg, err := StepGraph(g, loss, lr)
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

// StepGraph returns the graph each step of a Trainer runs: the SGD step
// of g on its output named loss with learning rate lr (grad.Step), its
// loss guarded so that a step leaving a parameter not finite reads back a
// NaN loss (guardLoss). `gpucc train --explain` prints its plan. It
// refuses what NewTrainer refuses; g is not modified.
func StepGraph(g *ir.Graph, loss string, lr float32) (*ir.Graph, error) {
	if g == nil {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "", "nil graph")
	}
	if !(lr > 0) || math.IsInf(float64(lr), 0) {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "lr", "learning rate %v; want a finite float32 above 0", lr)
	}
	if len(g.Params()) == 0 {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "", "the graph has no parameters (inputs marked \"param\"): a step would change nothing")
	}
	sg, err := grad.Step(g, loss, lr)
	if err != nil {
		return nil, err
	}
	if err := guardLoss(sg, loss, g.Params()); err != nil {
		return nil, err
	}
	return sg, nil
}

// guardLoss makes the step graph sg's loss output NaN when an updated
// parameter is not finite, so that the finiteness check every read-back
// output gets (non_finite_output) covers the parameters, which a step
// keeps on the device unread. The loss becomes loss − c·c with c a sum of
// p′·0 over every updated parameter p′: c is ±0 when every p′ is finite
// (and c·c is +0, which subtracts exactly, even from −0) and NaN as soon
// as one is ±Inf or NaN. Nothing folds p′·0, which is not 0 for every
// float.
//
// It costs a pass over the parameters and no transfer. The parameters
// share sums: each joins the first sum whose length its own divides
// (largest parameters first), read as that sum's shape through a
// broadcast (p′·0 of m values, broadcast to [n/m, m], is n values), so that an
// MLP's weights and biases are one sum (split into blocks on a GPU) rather
// than one per parameter; any order of adding ±0 and NaN gives ±0 or NaN.
func guardLoss(sg *ir.Graph, loss string, params []ir.Param) error {
	lossAt := -1
	var updated []ir.NodeID
	for i, o := range sg.Outputs {
		switch {
		case o.Name == loss:
			lossAt = i
		case slices.ContainsFunc(params, func(p ir.Param) bool { return p.Name == o.Name }):
			updated = append(updated, o.ID)
		}
	}
	if lossAt < 0 || len(updated) != len(params) {
		return ir.Errorf(ir.CodeInternal, -1, "", "the step graph has no loss %q or not every parameter (%d of %d)", loss, len(updated), len(params))
	}
	add := func(n ir.Node) ir.NodeID {
		sg.Nodes = append(sg.Nodes, n)
		return ir.NodeID(len(sg.Nodes) - 1)
	}
	// as returns node v read as shape s (a reshape, unless it has it).
	as := func(v ir.NodeID, s ir.Shape) ir.NodeID {
		if sg.Nodes[v].Shape.Equal(s) {
			return v
		}
		return add(ir.Node{Op: ir.OpReshape, Args: []ir.NodeID{v}, Shape: s})
	}
	slices.SortStableFunc(updated, func(a, b ir.NodeID) int { return sg.Nodes[b].Shape.Len() - sg.Nodes[a].Shape.Len() })
	type term struct {
		shape ir.Shape  // the sum's, its largest parameter's
		v     ir.NodeID // its argument so far
	}
	var terms []term
	for _, p := range updated {
		shape := slices.Clone(sg.Nodes[p].Shape)
		m := shape.Len()
		z := add(ir.Node{Op: ir.OpMulScalar, Args: []ir.NodeID{p}, Shape: shape, Scalar: 0})
		i := slices.IndexFunc(terms, func(t term) bool { return t.shape.Len()%m == 0 })
		if i < 0 {
			terms = append(terms, term{shape, z})
			continue
		}
		if n := terms[i].shape.Len(); m < n {
			z = add(ir.Node{Op: ir.OpBroadcast, Args: []ir.NodeID{as(z, ir.Shape{m})}, Shape: ir.Shape{n / m, m}})
		}
		terms[i].v = add(ir.Node{Op: ir.OpAdd, Args: []ir.NodeID{terms[i].v, as(z, slices.Clone(terms[i].shape))}, Shape: slices.Clone(terms[i].shape)})
	}
	c := ir.NodeID(-1)
	for _, t := range terms {
		target, result, err := ir.ReduceTarget(len(sg.Nodes), t.shape, nil, true, false)
		if err != nil {
			return err
		}
		s := add(ir.Node{Op: ir.OpSum, Args: []ir.NodeID{t.v}, Shape: target})
		if !result.Equal(target) {
			s = add(ir.Node{Op: ir.OpReshape, Args: []ir.NodeID{s}, Shape: result})
		}
		if c < 0 {
			c = s
		} else {
			c = add(ir.Node{Op: ir.OpAdd, Args: []ir.NodeID{c, s}, Shape: ir.Shape{}})
		}
	}
	sq := add(ir.Node{Op: ir.OpMul, Args: []ir.NodeID{c, c}, Shape: ir.Shape{}})
	l := sg.Outputs[lossAt].ID
	sg.Outputs[lossAt].ID = add(ir.Node{Op: ir.OpSub, Args: []ir.NodeID{l, sq}, Shape: slices.Clone(sg.Nodes[l].Shape)})
	return nil
}

// Kernels returns the number of kernels a step dispatches.
func (t *Trainer) Kernels() int { return t.exe.Kernels() }

// Step runs one SGD step on batch: the step graph's inputs other than the
// parameters, by name, as host data or device tensors. An input left out
// takes the graph's data, uploaded once at the first step that needs it
// and then kept on the device, so that steps on a fixed batch upload
// nothing after the first. It returns the loss before the update. A step
// whose loss or updated parameters are not finite (a diverging learning
// rate) is refused with non_finite_output, and the trainer keeps the
// parameters it had before it.
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
		return nil, t.stepError(err)
	}
	t.adopt(res.Kept)
	r := &StepResult{Loss: loss[0], Timings: res.Timings}
	r.Timings.UploadBytes += uploaded + t.pending
	r.Timings.UploadMs += ms(t.pendingTime)
	t.pending, t.pendingTime = 0, 0
	r.Timings.TotalMs = ms(time.Since(start))
	return r, nil
}

// stepError explains a step's non_finite_output: the loss read back is
// NaN when an updated parameter is not finite (guardLoss).
func (t *Trainer) stepError(err error) error {
	if CodeOf(err) != ir.CodeNonFiniteOutput {
		return err
	}
	return ir.Errorf(ir.CodeNonFiniteOutput, -1, t.loss,
		"step: the loss or an updated parameter is not finite (the step diverges: try a smaller learning rate): %v", err)
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
	// Interrupted is set when training stopped early (TrainWith): Steps
	// then counts the steps done.
	Interrupted bool `json:"interrupted,omitempty"`
}

// StepStats is one step of a TrainResult.
type StepStats struct {
	Step          int     `json:"step"`
	Loss          float32 `json:"loss"`
	UploadBytes   int64   `json:"uploadBytes"`
	ReadbackBytes int64   `json:"readbackBytes"`
}

// MaxTrainSteps bounds Train's steps: its result holds a loss and a
// StepStats per step, so the bound is the bound on its memory.
const MaxTrainSteps = 1_000_000

// TrainOptions tune Train.
type TrainOptions struct {
	// Progress, when set, is called after each step with its statistics.
	Progress func(StepStats)
}

// Train runs steps (1 to MaxTrainSteps) SGD steps of g on its output
// named loss with learning rate lr, on the graph's own batch, with a
// Trainer, and reads the parameters back at the end.
func (rt *Runtime) Train(ctx context.Context, g *ir.Graph, loss string, lr float32, steps int) (*TrainResult, error) {
	return rt.TrainWith(ctx, g, loss, lr, steps, TrainOptions{})
}

// TrainWith is Train with options. When ctx is cancelled (an interrupt,
// a deadline) after at least one step, it stops between steps or inside
// one (the step is then not taken) and returns the result of the steps
// done, with Interrupted set and Steps counting them, together with
// ctx's error; before the first step it returns only the error.
func (rt *Runtime) TrainWith(ctx context.Context, g *ir.Graph, loss string, lr float32, steps int, opts TrainOptions) (*TrainResult, error) {
	start := time.Now()
	if steps < 1 {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "steps", "%d steps; want 1 or more", steps)
	}
	if steps > MaxTrainSteps {
		return nil, ir.Errorf(ir.CodeLimitExceeded, -1, "steps", "%d steps exceed the limit of %d (the result holds every step's loss)", steps, MaxTrainSteps)
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
	// and each loss is read once the ones before it are, a window of
	// launches behind, so that a long run holds a bounded number.
	var stopped error
	var ps []*StepPending
	wait := func(ctx context.Context) error {
		r, err := ps[0].Wait(ctx)
		ps = ps[1:]
		if err != nil {
			return err
		}
		res.Losses = append(res.Losses, r.Loss)
		st := StepStats{Step: len(res.Losses), Loss: r.Loss, UploadBytes: r.Timings.UploadBytes, ReadbackBytes: r.Timings.ReadbackBytes}
		res.PerStep = append(res.PerStep, st)
		res.Timings.Add(r.Timings)
		if opts.Progress != nil {
			opts.Progress(st)
		}
		return nil
	}
	for range steps {
		if stopped = ctx.Err(); stopped != nil {
			break
		}
		p, err := tr.Launch(ctx, nil)
		if err != nil && ctx.Err() != nil {
			stopped = ctx.Err()
			break
		}
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
		if len(ps) > maxStepsInFlight/2 {
			if err := wait(context.WithoutCancel(ctx)); err != nil {
				return nil, err
			}
		}
	}
	// A launched step's parameters are the trainer's already: its loss is
	// read even after an interrupt (the device finishes what it queued),
	// so that Steps counts it.
	for len(ps) > 0 {
		if err := wait(context.WithoutCancel(ctx)); err != nil {
			return nil, err
		}
	}
	if stopped != nil {
		if len(res.Losses) == 0 {
			return nil, stopped
		}
		res.Steps, res.Interrupted = len(res.Losses), true
		ctx = context.WithoutCancel(ctx) // the parameters are read back still
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
	return res, stopped
}

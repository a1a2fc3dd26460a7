package gpucc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// Executable is a compiled graph, ready to run many times. It belongs to
// the Runtime that compiled it; Release frees it (Close frees them all).
type Executable struct {
	rt      *Runtime
	plan    *Plan
	exe     backend.Executable // nil once released; guarded by rt.mu
	compile backend.Stats      // what Load did
	// embedded holds, by plan buffer, the graph's embedded data on the
	// device: uploaded by the first run that takes it, then bound by every
	// later run that does not give the input (a model's weights are not
	// sent again each call). Counted in rt.held; freed by Release.
	embedded map[int]backend.Buffer
	// typed is, for a typed graph (Typed), the validated graph that each
	// run evaluates: with cpuref.EvalTyped on the cpu backend, with
	// typedExe, what the backend's CompileTyped made of it, elsewhere
	// (compileTyped); plan is nil.
	typed    *ir.Graph
	typedExe backend.TypedExecutable
	// typedIn holds, by node, the bytes of each input a run did not give
	// (its embedded data), encoded once; typedSame says the backend's
	// previous run got those very bytes for it (TypedCall.Same).
	typedIn   map[int][]byte
	typedSame map[int]bool
	typedHeld int64 // typedIn's bytes, counted in rt.held
	// split is, for a typed graph on a backend other than cpu, its
	// segments (split.go); plan, exe and typed are nil.
	split *split
	// segment marks one segment of a split graph: its inputs and outputs
	// are the graph's intermediates, which the host's finiteness policy
	// does not check (the split graph checks its own edges).
	segment bool
	// call is the backend call that RunWith reuses from run to run (runs
	// are serialised by rt.mu, and no backend keeps a Run's call once it
	// returns; a Launch's pending run keeps its own), cleared after each
	// run so that it holds no caller's slice; outShapes are the outputs'
	// shapes that kept tensors share (a DeviceTensor never writes its
	// shape, and Shape returns a copy). A warm resident run then
	// allocates what it returns and nothing else (TestRunAllocs).
	call      *backend.Call
	kept      []*DeviceTensor // RunWith's run's kept tensors' memory, reused likewise
	outShapes []ir.Shape
}

// Plan returns the sealed plan the executable runs (nil for a typed
// graph's: the cpu backend evaluates it without kernels, others run it
// as segments or with their typed code).
func (e *Executable) Plan() *Plan { return e.plan }

// Kernels returns the number of kernels a run dispatches.
func (e *Executable) Kernels() int {
	switch {
	case e.split != nil:
		n := 0
		for _, x := range e.split.segs {
			n += x.Kernels()
		}
		return n
	case e.typedExe != nil: // the backend's typed code: its kernels, or one function
		if kc, ok := e.typedExe.(backend.KernelCounter); ok {
			return kc.Kernels()
		}
		return 1
	case e.typed != nil: // the reference's evaluation on cpu
		return 0
	}
	return len(e.plan.Program.Kernels)
}

// CompileTimings returns what sealing and loading took (passes, codegen,
// compile) and which caches hit.
func (e *Executable) CompileTimings() (Timings, map[string]bool) {
	var t Timings
	addCompile(&t, e)
	return t, e.compile.Caches()
}

// Release frees the executable. Releasing twice is a no-op.
func (e *Executable) Release() {
	e.rt.mu.Lock()
	defer e.rt.mu.Unlock()
	e.releaseLocked()
}

func (e *Executable) releaseLocked() {
	if e.split != nil {
		e.releaseSplitLocked()
	}
	if e.typedExe != nil {
		e.typedExe.Release()
		e.typedExe = nil
		delete(e.rt.exes, e)
	}
	e.rt.held -= e.typedHeld
	e.typedHeld, e.typedIn = 0, nil
	if e.exe != nil {
		e.exe.Release()
		e.exe = nil
		delete(e.rt.exes, e)
	}
	for i, buf := range e.embedded {
		e.rt.held -= 4 * int64(e.plan.Program.Buffers[i].Len)
		buf.Release()
	}
	e.embedded = nil
}

// RunOptions tune one run.
type RunOptions struct {
	// Keep names outputs to leave on the device: Result.Kept holds them as
	// DeviceTensors (which the caller releases) instead of Result.Outputs.
	Keep []string
	// Into gives, by output name, the host slice to read an output into
	// (of the output's length); other outputs get new slices. An output
	// named in both Keep and Into is an error (invalid_input).
	Into map[string][]float32
	// IntoInts is Into for a typed graph's outputs of an integer or bool
	// dtype (Tensor.Ints' values); naming any other output is an error
	// (invalid_input).
	IntoInts map[string][]int64
	// NoWait lets a run whose outputs all stay on the device (each named
	// in Keep) return once its kernels are queued, without waiting for
	// the GPU: on webgpu a run that waits pays a round trip to the GPU
	// and its timestamps' readback beyond the recording. The kept
	// outputs are usable at once, as inputs of the next run or by Read,
	// which the device orders after the kernels that write them; errors
	// are found before anything is queued. Its Timings then hold the
	// wall time of queueing the kernels, not their time on the GPU
	// (DispatchClock "wall"). A run with a host output waits as always,
	// and so does every run on the other backends and of a typed graph.
	NoWait bool
	// Donate names inputs given as DeviceTensors that the run consumes:
	// the backend may write a donated tensor's buffer in place and hand
	// it over as an output's (a scatter of the input, such as a KV
	// cache's row written at a position, then writes only its updates,
	// not a copy of the whole input: webgpu computes a typed graph's
	// scatter so where only that scatter reads the input), and the
	// others free it. Once RunWith returns, with or without an error,
	// each donated tensor is released: its old handle is refused
	// (invalid_tensor, "donated"), so no caller reads what a run wrote
	// into it. A name that is not an input given as a DeviceTensor, or a
	// tensor given under a second name too, is invalid_input.
	Donate []string
	// KernelTimes times each kernel on its own: the run submits its
	// kernels one at a time, waits for each, and Result.KernelTimes holds
	// each one's time, by GPU timestamps where the device has them. It is
	// a tool for finding which kernel costs what, not a way to run: each
	// kernel pays a submission and a wait of its own where a run's kernels
	// share one, so their sum is not the run's time. The outputs are a
	// run's. Only webgpu times kernels so (a typed graph's float32
	// islands' kernels and its typed nodes), and not a split graph's
	// executable (unsupported); with NoWait it is invalid_input.
	KernelTimes bool
}

// Run runs the executable once with in (nil: the graph's embedded data).
// An input not given takes the graph's embedded data, which the first run
// that needs it uploads and the executable keeps on the device, counted
// against Options.MaxDeviceBytes, until Release: later runs do not send it
// again.
func (e *Executable) Run(ctx context.Context, in Inputs) (*Result, error) {
	return e.RunWith(ctx, in, RunOptions{})
}

// RunWith runs the executable once with in and opts. Each host input is
// checked (shape, finite values) and copied to the device; each
// DeviceTensor input is used where it is. Every kernel runs once.
func (e *Executable) RunWith(ctx context.Context, in Inputs, opts RunOptions) (*Result, error) {
	var donors []*DeviceTensor
	if len(opts.Donate) > 0 {
		var err error
		if donors, err = donorsOf(in, opts.Donate); err != nil {
			return nil, err
		}
	}
	if len(donors) > 0 {
		if err := e.rt.claimDonors(donors); err != nil {
			return nil, err
		}
		if donatingHook != nil {
			donatingHook()
		}
	}
	res, err := e.runWith(ctx, in, opts, donors)
	if donatedRunHook != nil && len(donors) > 0 {
		donatedRunHook()
	}
	return res, err
}

// donatingHook, when set (by a test), is called once a donating run has
// claimed its donors and before it runs: another run's donation of them
// is refused by then.
var donatingHook func()

// claimDonors marks donors as being consumed by one run, refusing a
// tensor another run is consuming (invalid_tensor), before the run takes
// the lock for its work: a run that takes it more than once (a split
// executable's segments each do) let a second run donating the same
// tensor run between, both succeeding (TestDonateConcurrent: two donors
// of one tensor on native, in 1 test run of 4).
func (rt *Runtime) claimDonors(donors []*DeviceTensor) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, t := range donors {
		if t.rt == rt && t.donating {
			return ir.Errorf(ir.CodeInvalidTensor, -1, "", "donate: the device tensor is being donated to another run (RunOptions.Donate)")
		}
	}
	for _, t := range donors {
		if t.rt == rt {
			t.donating = true
		}
	}
	return nil
}

// donatedRunHook, when set (by a test), is called after a donating run
// has returned its runtime's lock: no other run may find a donated
// tensor live by then.
var donatedRunHook func()

// consumeLocked releases the tensors a run consumed (RunOptions.Donate),
// which the backend may have written in place or handed over as an
// output's buffer; rt.mu held, in the same hold as the run's, so that no
// other run reads or donates them between the two.
func (rt *Runtime) consumeLocked(donors []*DeviceTensor) {
	for _, t := range donors {
		if t.rt == rt && t.buf != nil {
			t.releaseLocked() // a buffer the backend handed over frees nothing
			t.donated = true
		}
		if t.rt == rt {
			t.donating = false
		}
	}
}

// donorsOf returns the DeviceTensors that names donate (RunOptions.Donate).
func donorsOf(in Inputs, names []string) ([]*DeviceTensor, error) {
	var donors []*DeviceTensor
	for _, name := range names {
		t, ok := in[name].(*DeviceTensor)
		if !ok || t == nil {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, name, "donate: input %s is not given as a device tensor", ir.Quote(name))
		}
		if slices.Contains(donors, t) {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, name, "donate: input %s is named twice", ir.Quote(name))
		}
		for other, v := range in {
			if other != name && v == Value(t) {
				return nil, ir.Errorf(ir.CodeInvalidInput, -1, name, "donate: the device tensor of input %s is input %s too", ir.Quote(name), ir.Quote(other))
			}
		}
		donors = append(donors, t)
	}
	return donors, nil
}

// donated reports whether name is donated by opts.
func (opts RunOptions) donated(name string) bool { return slices.Contains(opts.Donate, name) }

// runWith is RunWith once its donors are found: it releases them before
// it returns rt.mu.
func (e *Executable) runWith(ctx context.Context, in Inputs, opts RunOptions, donors []*DeviceTensor) (*Result, error) {
	rt := e.rt
	if err := e.canTimeKernels(opts); err != nil {
		rt.mu.Lock()
		rt.consumeLocked(donors)
		rt.mu.Unlock()
		return nil, err
	}
	if e.split != nil { // each segment's run locks; none writes in place (no segment is given Donate)
		res, err := e.runSplit(ctx, in, opts)
		rt.mu.Lock()
		rt.consumeLocked(donors)
		rt.mu.Unlock()
		return res, err
	}
	start := time.Now()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	defer rt.consumeLocked(donors) // before the unlock
	if e.typed != nil {
		return e.runTyped(ctx, in, opts, start)
	}
	r := run{kept: e.kept[:0]}
	if err := e.begin(ctx, in, opts, &r, e.reuseCall()); err != nil {
		return nil, err
	}
	defer e.endRun(&r)
	var times []backend.KernelTime
	if _, err := guard(rt, func() (struct{}, error) {
		var err error
		times, err = e.runBackend(ctx, r.call, opts)
		return struct{}{}, err
	}); err != nil {
		return nil, e.failed(&r, err)
	}
	r.adopt()
	res, err := r.finish(ctx, start)
	if res != nil && opts.KernelTimes {
		res.KernelTimes = kernelTimesOf(times)
	}
	return res, err
}

// canTimeKernels refuses opts.KernelTimes where the run cannot be timed
// kernel by kernel.
func (e *Executable) canTimeKernels(opts RunOptions) error {
	switch {
	case !opts.KernelTimes:
		return nil
	case opts.NoWait:
		return ir.Errorf(ir.CodeInvalidInput, -1, "", "kernel times: a run timed kernel by kernel waits for each; it cannot be NoWait")
	case e.split != nil:
		return ir.Errorf(ir.CodeUnsupported, -1, "", "kernel times: a split graph's runs cannot be timed kernel by kernel")
	case e.typed != nil:
		if t, ok := e.typedExe.(backend.TypedKernelTimer); !ok || !t.TimesKernels() {
			return ir.Errorf(ir.CodeUnsupported, -1, "", "kernel times: backend %s cannot time a typed graph's kernels one at a time (webgpu can)", e.rt.info.Name)
		}
		return nil
	}
	if _, ok := e.exe.(backend.KernelTimer); !ok {
		return ir.Errorf(ir.CodeUnsupported, -1, "", "kernel times: backend %s cannot time kernels one at a time (webgpu can)", e.rt.info.Name)
	}
	return nil
}

// kernelTimesOf is the backend's times of a run timed kernel by kernel.
func kernelTimesOf(times []backend.KernelTime) []KernelTime {
	out := make([]KernelTime, 0, len(times))
	for _, kt := range times {
		t := KernelTime{Kernel: kt.Name, Kind: kt.Kind, Ms: ms(kt.Time), Clock: "wall"}
		if kt.GPU {
			t.Clock = "gpu-timestamp"
		}
		out = append(out, t)
	}
	return out
}

// reuseCall returns e.call, made on first use; rt.mu held. begin
// fills it.
func (e *Executable) reuseCall() *backend.Call {
	if e.call == nil && e.plan != nil {
		p := e.plan.Program
		e.call = &backend.Call{Args: make([]backend.Arg, len(p.Buffers)), Dests: make([]backend.Dest, len(p.Outputs)), Stats: &backend.Stats{}}
	}
	return e.call
}

// endRun clears what RunWith's run r put in e.call and e.kept, for the
// next run.
func (e *Executable) endRun(r *run) {
	clearCall(r.call)
	clear(r.kept)
	e.kept = r.kept[:0]
}

// clearCall drops what a run put in call (the caller's slices, the
// backend's buffers, the stats), for the next run.
func clearCall(call *backend.Call) {
	clear(call.Args)
	clear(call.Dests)
	*call.Stats = backend.Stats{}
	call.NonFinite = false
}

// queuer is a backend executable that can queue a run whose outputs all
// stay on the device without waiting for it (webgpu's RunQueued).
type queuer interface {
	RunQueued(ctx context.Context, call *backend.Call) error
}

// runBackend runs call on the backend, queued when opts.NoWait and the
// backend can, each kernel timed alone when opts.KernelTimes; rt.mu held.
func (e *Executable) runBackend(ctx context.Context, call *backend.Call, opts RunOptions) ([]backend.KernelTime, error) {
	if p, ok := e.exe.(backend.KernelTimer); ok && opts.KernelTimes {
		return p.RunEachTimed(ctx, call)
	}
	if q, ok := e.exe.(queuer); ok && opts.NoWait {
		return nil, q.RunQueued(ctx, call)
	}
	return nil, e.exe.Run(ctx, call)
}

// run is one run of an Executable between begin and finish.
type run struct {
	e      *Executable
	call   *backend.Call
	res    *Result
	copied map[string][]float32 // kept outputs to upload after the run
	kept   []*DeviceTensor
}

// begin checks in and opts and fills r with the backend's call: call, a
// cleared one to reuse (reuseCall), or nil for a new one; rt.mu held.
func (e *Executable) begin(ctx context.Context, in Inputs, opts RunOptions, r *run, call *backend.Call) error {
	rt := e.rt
	if rt.dead() {
		return rt.errClosed()
	}
	if e.typed != nil || e.split != nil {
		return ir.Errorf(ir.CodeUnsupported, -1, "", "launch: a typed graph's executable runs with Run and RunWith")
	}
	if e.exe == nil {
		return ir.Errorf(ir.CodeInvalidInput, -1, "", "run: the executable was released")
	}
	p := e.plan.Program
	if call == nil {
		call = &backend.Call{Args: make([]backend.Arg, len(p.Buffers)), Dests: make([]backend.Dest, len(p.Outputs)), Stats: &backend.Stats{}}
	}
	call.NonFinite = rt.opts.Limits.NonFinite || e.segment
	fail := func(err error) error {
		clearCall(call)
		return err
	}
	need, err := e.args(ctx, rt, in, call)
	if err != nil {
		return fail(err)
	}
	res := &Result{Backend: rt.info.Name, Adapter: &rt.info.Adapter, Kernels: len(p.Kernels),
		FallbackAttempts: slices.Clone(rt.attempts), Outputs: map[string]Tensor{}}
	if res.FallbackAttempts == nil {
		res.FallbackAttempts = []Attempt{}
	}
	copied, n, err := e.dests(opts, call.Dests, res)
	if err != nil {
		return fail(err)
	}
	if err := rt.reserve(need + n); err != nil {
		return fail(err)
	}
	r.e, r.call, r.res, r.copied = e, call, res, copied
	return nil
}

// failed is the error of a backend's failed run, which released its kept
// buffers; rt.mu held.
func (e *Executable) failed(r *run, err error) error {
	for _, d := range r.call.Dests {
		if d.Buf != nil {
			d.Buf.Release()
		}
	}
	return e.backendErr(err)
}

// backendErr is the error of a backend's failed run: a non-finite input
// or output it found named, others given a code.
func (e *Executable) backendErr(err error) error {
	var nf *backend.NonFiniteError
	if errors.As(err, &nf) {
		return e.nonFinite(nf)
	}
	var no *backend.NonFiniteOutputError
	if errors.As(err, &no) {
		return nonFiniteOutput(e.rt.info.Name, e.plan.Program.Outputs[no.Output].Name, no.Index, no.Value)
	}
	return e.rt.wrap(err)
}

// adopt makes every kept buffer a tensor, so that an error later leaves
// none unowned; rt.mu held.
func (r *run) adopt() {
	for i := range r.e.plan.Program.Outputs {
		if d := r.call.Dests[i]; d.Buf != nil {
			o := r.e.plan.Program.Outputs[i]
			t := r.e.rt.adoptLocked(d.Buf, r.e.outShape(i))
			r.res.Kept[o.Name] = t
			r.kept = append(r.kept, t)
		}
	}
}

// outShape is output i's shape, one copy of the plan's for every tensor
// kept of it.
func (e *Executable) outShape(i int) ir.Shape {
	if e.outShapes == nil {
		e.outShapes = make([]ir.Shape, len(e.plan.Program.Outputs))
		for k, o := range e.plan.Program.Outputs {
			e.outShapes[k] = slices.Clone(o.Shape)
		}
	}
	return e.outShapes[i]
}

// finish checks the host outputs, keeps the copied ones and fills the
// result's timings; on error it releases the run's kept tensors; rt.mu
// held.
func (r *run) finish(ctx context.Context, start time.Time) (*Result, error) {
	rt, p, res := r.e.rt, r.e.plan.Program, r.res
	fail := func(err error) (*Result, error) {
		for _, t := range r.kept {
			t.releaseLocked()
		}
		return nil, err
	}
	for i, o := range p.Outputs {
		if o.Buffer < 0 || r.call.Dests[i].Keep {
			continue
		}
		if r.call.NonFinite {
			canonicalNaN(r.call.Dests[i].Host)
			continue
		}
		if rt.info.ChecksOutputs {
			continue
		}
		if err := checkFinite(rt.info.Name, fmt.Sprintf("output %q", o.Name), r.call.Dests[i].Host); err != nil {
			return fail(err)
		}
	}
	for name, data := range r.copied { // kept outputs the backend could not keep in place
		o := res.Outputs[name]
		delete(res.Outputs, name)
		t, err := rt.newTensorLocked(ctx, slices.Clone(o.Shape), data)
		if err != nil {
			return fail(err)
		}
		res.Kept[name] = t
		r.kept = append(r.kept, t)
	}
	res.Timings = timings(r.call.Stats)
	res.Exact, res.ErrorBound = exactness(r.e)
	res.Timings.TotalMs = ms(time.Since(start))
	res.Cache = r.call.Stats.Caches()
	return res, nil
}

// args fills the backend's Args from in, checking every value, and returns
// the device bytes the run's host inputs need; rt.mu held.
func (e *Executable) args(ctx context.Context, rt *Runtime, in Inputs, call *backend.Call) (int64, error) {
	args := call.Args
	for name := range in {
		if _, ok := e.plan.Input(name); !ok {
			return 0, ir.Errorf(ir.CodeInvalidInput, -1, name, "the graph has no input named %q (have %v)", name, e.inputNames())
		}
	}
	var need int64
	for _, pi := range e.plan.Inputs {
		v, given := in[pi.Name]
		switch v := v.(type) {
		case nil:
			if given {
				return 0, ir.Errorf(ir.CodeInvalidInput, -1, pi.Name, "input %q is nil", pi.Name)
			}
			if pi.Buffer >= 0 {
				buf, err := e.embeddedBuffer(ctx, pi, call.Stats)
				if err != nil {
					return 0, err
				}
				args[pi.Buffer].Buf = buf
			}
		case Tensor:
			// A backend that checks values while it copies them spares
			// the data a second pass.
			check := checkHost
			if rt.info.ChecksHost || rt.opts.Limits.NonFinite || e.segment {
				check = checkShape
			}
			if err := check(pi.Name, pi.Shape, v.Shape, v.Data); err != nil {
				return 0, err
			}
			if pi.Buffer >= 0 {
				args[pi.Buffer].Host = v.Data
				need += 4 * int64(len(v.Data))
			}
		case *DeviceTensor:
			if err := v.checkNamedLocked(rt, "input ", pi.Name); err != nil { // no string made unless it fails
				return 0, err
			}
			if !v.shape.Equal(pi.Shape) {
				return 0, ir.Errorf(ir.CodeInvalidInput, -1, pi.Name, "input %q: device tensor of shape %v, the graph needs %v", pi.Name, v.shape, pi.Shape)
			}
			if v.dtype != ir.F32 {
				return 0, ir.Errorf(ir.CodeInvalidInput, -1, pi.Name, "input %q: device tensor of %v values, the graph needs float32", pi.Name, v.dtype)
			}
			if pi.Buffer >= 0 {
				args[pi.Buffer].Buf = v.buf
			}
		default:
			return 0, ir.Errorf(ir.CodeInvalidInput, -1, pi.Name, "input %q: unsupported value %T", pi.Name, v)
		}
	}
	return need, nil
}

// embeddedBuffer returns the device buffer holding input pi's embedded
// data, uploading it on first use; rt.mu held.
func (e *Executable) embeddedBuffer(ctx context.Context, pi PlanInput, st *backend.Stats) (backend.Buffer, error) {
	if buf, ok := e.embedded[pi.Buffer]; ok {
		return buf, nil
	}
	rt := e.rt
	data := e.plan.Program.Buffers[pi.Buffer].Data
	if len(data) != e.plan.Program.Buffers[pi.Buffer].Len {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, pi.Name, "input %q is not given and the plan embeds no data for it", pi.Name)
	}
	n := 4 * int64(len(data))
	if err := rt.reserve(n); err != nil {
		return nil, err
	}
	buf, err := guard(rt, func() (backend.Buffer, error) { return rt.dev.Alloc(ctx, len(data)) })
	if err != nil {
		return nil, rt.wrap(err)
	}
	// The data was checked finite when the plan was sealed.
	done := st.Start(backend.StageUpload)
	_, err = guard(rt, func() (struct{}, error) { return struct{}{}, rt.dev.Upload(ctx, buf, data) })
	done()
	st.UploadBytes += n
	if err != nil {
		buf.Release()
		return nil, rt.wrap(err)
	}
	if e.embedded == nil {
		e.embedded = map[int]backend.Buffer{}
	}
	e.embedded[pi.Buffer] = buf
	rt.held += n
	return buf, nil
}

// nonFinite names the input a backend found a non-finite value in.
func (e *Executable) nonFinite(nf *backend.NonFiniteError) error {
	for _, pi := range e.plan.Inputs {
		if pi.Buffer == nf.Buffer {
			return ir.Errorf(ir.CodeInvalidInput, -1, pi.Name, "input %q value %d is %v; inputs must be finite float32", pi.Name, nf.Index, nf.Value)
		}
	}
	return ir.Errorf(ir.CodeInvalidInput, -1, "", "%v", nf)
}

func (e *Executable) inputNames() []string {
	names := make([]string, len(e.plan.Inputs))
	for i, in := range e.plan.Inputs {
		names[i] = in.Name
	}
	return names
}

// dests fills the backend's Dests from opts and sets res's constant
// outputs. A kept output whose buffer is an input, or that another kept
// output already holds, is read to the host and uploaded after the run:
// copied names those, with their host slices. n is the device bytes the
// run's other buffers need.
func (e *Executable) dests(opts RunOptions, dests []backend.Dest, res *Result) (copied map[string][]float32, n int64, err error) {
	p := e.plan.Program
	keep := map[string]bool{}
	for _, name := range opts.Keep {
		if !slices.ContainsFunc(p.Outputs, func(o ir.ProgramOutput) bool { return o.Name == name }) {
			return nil, 0, ir.Errorf(ir.CodeInvalidInput, -1, "keep", "Keep names %q, which is not an output", name)
		}
		keep[name] = true
	}
	if len(keep) > 0 {
		res.Kept = map[string]*DeviceTensor{}
	}
	for name := range opts.IntoInts { // a float32 graph has no integer output
		return nil, 0, ir.Errorf(ir.CodeInvalidInput, -1, "into", "IntoInts[%q]: the graph's outputs are float32; Into takes them", name)
	}
	for name, s := range opts.Into {
		if !slices.ContainsFunc(p.Outputs, func(o ir.ProgramOutput) bool { return o.Name == name && o.Shape.Len() == len(s) }) {
			return nil, 0, ir.Errorf(ir.CodeInvalidInput, -1, "into", "Into[%q] is not an output of %d values", name, len(s))
		}
		if keep[name] {
			return nil, 0, ir.Errorf(ir.CodeInvalidInput, -1, "into", "output %q is both kept on the device (Keep) and read into a host slice (Into); name it in one", name)
		}
	}
	for _, b := range p.Buffers {
		if !b.Input {
			n += 4 * int64(b.Len)
		}
	}
	held := map[int]bool{}
	for i, o := range p.Outputs {
		if keep[o.Name] && o.Buffer >= 0 && !p.Buffers[o.Buffer].Input && !held[o.Buffer] {
			held[o.Buffer] = true
			dests[i].Keep = true
			res.Kept[o.Name] = nil
			continue
		}
		out := Tensor{Shape: slices.Clone(o.Shape)}
		switch {
		case o.Buffer < 0:
			out.Data = make([]float32, o.Shape.Len())
			for k := range out.Data {
				out.Data[k] = o.Const
			}
			if keep[o.Name] {
				if copied == nil {
					copied = map[string][]float32{}
				}
				copied[o.Name] = out.Data
				n += 4 * int64(len(out.Data))
			}
		default:
			out.Data = opts.Into[o.Name]
			if out.Data == nil {
				out.Data = make([]float32, o.Shape.Len())
			}
			dests[i].Host = out.Data
			if keep[o.Name] {
				if copied == nil {
					copied = map[string][]float32{}
				}
				copied[o.Name] = out.Data
				n += 4 * int64(len(out.Data))
			}
		}
		res.Outputs[o.Name] = out
	}
	return copied, n, nil
}

package gpucc

import (
	"context"
	"time"

	"github.com/gpucc/gpucc/runtime/backend"
)

// Pending is a run that Launch queued on the device; Wait completes it.
// Its kept outputs are DeviceTensors from the moment Launch returns
// (Kept), so that a chain of launches reaches the GPU back to back: the
// device runs queued work in order, and each launch's reads of a tensor
// come after the writes of the launches before it.
type Pending struct {
	r     *run
	bp    backend.Pending // nil for a run that completed at Launch
	start time.Time
	done  bool // guarded by the Runtime's mu
	res   *Result
	err   error
}

// Launch is RunWith without the wait: it checks in and opts as RunWith
// does, queues the uploads and the kernels, and returns. The outputs
// opts.Keep names are device tensors at once (Pending.Kept), usable as
// inputs of the next Launch or Run before this one finishes; host outputs
// are read by Wait. Every Pending must be waited for: until then it holds
// the device buffers of its host outputs (Close waits for those still
// pending). On the cpu, wasm and native backends, and for a kept output
// that is an input or a constant, the run completes inside Launch; so
// does a typed graph's run on every backend (launchTyped).
func (e *Executable) Launch(ctx context.Context, in Inputs, opts RunOptions) (*Pending, error) {
	if e.typed != nil || e.split != nil {
		return e.launchTyped(ctx, in, opts)
	}
	start := time.Now()
	rt := e.rt
	rt.mu.Lock()
	defer rt.mu.Unlock()
	r := &run{} // the Pending keeps it, and the backend its call: not the executable's own (reuseCall)
	if err := e.begin(ctx, in, opts, r, nil); err != nil {
		return nil, err
	}
	l, ok := e.exe.(backend.Launcher)
	if !ok || len(r.copied) > 0 {
		if _, err := guard(rt, func() (struct{}, error) { return struct{}{}, e.exe.Run(ctx, r.call) }); err != nil {
			return nil, e.failed(r, err)
		}
		r.adopt()
		res, err := r.finish(ctx, start)
		if err != nil {
			return nil, err
		}
		return &Pending{r: r, start: start, res: res}, nil
	}
	bp, err := guard(rt, func() (backend.Pending, error) { return l.Launch(ctx, r.call) })
	if err != nil {
		return nil, e.failed(r, err)
	}
	r.adopt()
	p := &Pending{r: r, bp: bp, start: start}
	rt.pending[p] = struct{}{}
	return p, nil
}

// launchTyped is Launch of a typed graph: RunWith, whose result the
// Pending holds, so that Kept and Wait answer as for a float32 graph's
// launch that completed inside Launch (kept outputs of any dtype, a Wait
// after ctx is done failing and releasing them). A typed run reads its
// fault words before its outputs are defined (backend.TypedFault), so it
// cannot return before its kernels end.
func (e *Executable) launchTyped(ctx context.Context, in Inputs, opts RunOptions) (*Pending, error) {
	start := time.Now()
	res, err := e.RunWith(ctx, in, opts)
	if err != nil {
		return nil, err
	}
	r := &run{e: e, res: res}
	for _, t := range res.Kept {
		r.kept = append(r.kept, t)
	}
	return &Pending{r: r, start: start, res: res}, nil
}

// Kept returns the kept output named name (nil if opts.Keep did not name
// it). The tensor is the caller's, as Result.Kept's are; a Wait that fails
// releases it.
func (p *Pending) Kept(name string) *DeviceTensor { return p.r.res.Kept[name] }

// Wait waits for the run and returns its result, as RunWith would have:
// host outputs read and checked, Kept holding the tensors Kept returned.
// Once ctx is done it stops waiting and returns ctx's error (the queued
// kernels still run; their buffers are reused only after them). A failed
// Wait releases the run's kept tensors. Waiting again returns the same.
func (p *Pending) Wait(ctx context.Context) (*Result, error) {
	rt := p.r.e.rt
	rt.mu.Lock()
	defer rt.mu.Unlock()
	p.waitLocked(ctx)
	return p.res, p.err
}

// waitLocked completes p once; rt.mu held.
func (p *Pending) waitLocked(ctx context.Context) {
	if p.done {
		return
	}
	p.done = true
	rt := p.r.e.rt
	delete(rt.pending, p)
	fail := func(err error) {
		for _, t := range p.r.kept {
			t.releaseLocked()
		}
		p.res, p.err = nil, err
	}
	switch {
	case rt.dead():
		fail(rt.errClosed())
	case p.bp == nil: // completed at Launch; a done context fails as on every backend
		if err := ctx.Err(); err != nil {
			fail(err)
		}
	default:
		if _, err := guard(rt, func() (struct{}, error) { return struct{}{}, p.bp.Wait(ctx) }); err != nil {
			fail(p.r.e.backendErr(err))
			return
		}
		p.res, p.err = p.r.finish(ctx, p.start)
	}
}

// closePendingLocked ends every pending launch before the device closes:
// nothing more is read, and a later Wait reports the Runtime closed;
// rt.mu held.
func (rt *Runtime) closePendingLocked() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for p := range rt.pending {
		p.done = true
		_, _ = guard(rt, func() (struct{}, error) { return struct{}{}, p.bp.Wait(ctx) })
		p.err = rt.errClosed()
		delete(rt.pending, p)
	}
}

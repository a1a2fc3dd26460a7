// Package cpu is the reference backend: it runs a sealed program kernel by
// kernel with cpuref's semantics (cpuref.RunKernel), which the passes are
// tested to keep bit-identical to cpuref.Eval of the source graph. Its
// device memory is host memory. Importing the package registers it as
// "cpu".
package cpu

import (
	"context"
	"fmt"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
)

func init() {
	backend.Register("cpu", func(backend.Options) (backend.Device, error) { return device{}, nil })
}

type device struct{ backend.HostMemory }

func (device) Info() backend.Info {
	return backend.Info{Name: "cpu", Profile: passes.Profile{Name: "cpu"}, Adapter: backend.Adapter{Name: "cpuref", Type: "cpu"}}
}

func (device) Close() {}

func (device) Compile(_ context.Context, p *backend.Program, _ *backend.Stats) (backend.Executable, error) {
	return &executable{p: p.IR.Program()}, nil
}

type executable struct{ p *ir.Program }

func (e *executable) Release() {}

// Run reads host inputs and resident tensors in place (kernels never write
// an input buffer) and computes every other buffer afresh, so a kept output
// owns its memory and a host output is a copy.
func (e *executable) Run(ctx context.Context, call *backend.Call) error {
	st := call.Stats
	bufs := make([][]float32, len(e.p.Buffers))
	for i, b := range e.p.Buffers {
		if b.Input {
			bufs[i] = backend.HostData(call.Args[i])
			if len(bufs[i]) != b.Len {
				return fmt.Errorf("buf%d: input holds %d values, shape %v needs %d", i, len(bufs[i]), b.Shape, b.Len)
			}
			if call.Args[i].Buf == nil {
				st.UploadBytes += 4 * int64(b.Len)
			}
		} else {
			bufs[i] = make([]float32, b.Len)
		}
	}
	stop := st.Start(backend.StageDispatch)
	for k := range e.p.Kernels {
		if err := ctx.Err(); err != nil {
			stop()
			return err
		}
		if err := cpuref.RunKernelContext(ctx, &e.p.Kernels[k], bufs); err != nil {
			stop()
			return err
		}
	}
	stop()
	defer st.Start(backend.StageReadback)()
	for i, o := range e.p.Outputs {
		d := &call.Dests[i]
		switch {
		case o.Buffer < 0:
		case d.Keep:
			d.Buf = &backend.HostBuffer{Data: bufs[o.Buffer]}
		default:
			copy(d.Host, bufs[o.Buffer])
			st.ReadbackBytes += 4 * int64(len(d.Host))
		}
	}
	return nil
}

package cpuref

import (
	"context"
	"fmt"

	"github.com/gpucc/gpucc/ir"
)

// RunProgram executes a lowered Program kernel by kernel with the reference
// semantics and returns each output's values. It is how passes are checked
// against Eval: a correct pipeline gives the same bits either way.
func RunProgram(p *ir.Program) map[string][]float32 {
	bufs := make([][]float32, len(p.Buffers))
	for i, b := range p.Buffers {
		if b.Input {
			bufs[i] = b.Data
		} else {
			bufs[i] = make([]float32, b.Len)
		}
	}
	for _, k := range p.Kernels {
		runKernel(&k, bufs, nil)
	}
	out := make(map[string][]float32, len(p.Outputs))
	for _, o := range p.Outputs {
		if o.Buffer < 0 {
			v := make([]float32, o.Shape.Len())
			for i := range v {
				v[i] = o.Const
			}
			out[o.Name] = v
		} else {
			out[o.Name] = append([]float32(nil), bufs[o.Buffer]...)
		}
	}
	return out
}

// Gather fills dst with elements lo, lo+1, … (row-major over op.Shape) of
// operand op, read from its buffer buf through op.Strides from op.Offset.
func Gather(op ir.Operand, buf []float32, lo int, dst []float32) {
	c := op.Coalesced()
	if c.Plain() {
		copy(dst, buf[lo:])
		return
	}
	// idx is the multi-index of element lo over c.Shape; off its offset.
	idx := make([]int, len(c.Shape))
	off := c.Offset
	for d, rest := len(c.Shape)-1, lo; d >= 0; d-- {
		idx[d] = rest % c.Shape[d]
		rest /= c.Shape[d]
		off += idx[d] * c.Strides[d]
	}
	last := len(c.Shape) - 1
	for i := range dst {
		dst[i] = buf[off]
		for d := last; d >= 0; d-- { // step idx to the next element
			idx[d]++
			off += c.Strides[d]
			if idx[d] < c.Shape[d] || d == 0 {
				break
			}
			off -= idx[d] * c.Strides[d]
			idx[d] = 0
		}
	}
}

// body evaluates a kernel's body over a chunk of elements at a time, with
// each op's expression flattened once.
type body struct {
	k       *ir.Kernel
	progs   []program   // per instruction; nil unless an op
	vals    [][]float32 // per instruction, chunk values
	scratch []uint32
}

func newBody(k *ir.Kernel) *body {
	bd := &body{k: k, progs: make([]program, len(k.Body)), vals: make([][]float32, len(k.Body))}
	for j, in := range k.Body {
		bd.vals[j] = make([]float32, chunk)
		if in.Kind == ir.InstrOp {
			bd.progs[j] = compile(in.Op.Info().Expr)
			if n := len(bd.progs[j]) * chunk; n > len(bd.scratch) {
				bd.scratch = make([]uint32, n)
			}
		}
	}
	return bd
}

// eval evaluates the body at elements lo..lo+m-1 (m <= chunk); acc holds
// the matmul accumulator of each (nil for other kinds).
func (bd *body) eval(bufs [][]float32, lo, m int, acc []float32) {
	bd.evalRange(bufs, lo, m, acc, 0, len(bd.k.Body))
}

// evalRange is eval of instructions from..to-1 only: a reduction's
// prologue or epilogue.
func (bd *body) evalRange(bufs [][]float32, lo, m int, acc []float32, from, to int) {
	k := bd.k
	for j := from; j < to; j++ {
		in := k.Body[j]
		v := bd.vals[j][:m]
		switch in.Kind {
		case ir.InstrConst:
			for i := range v {
				v[i] = in.Scalar
			}
		case ir.InstrLoad:
			op := k.Inputs[in.Operand]
			Gather(op, bufs[op.Buffer], lo, v)
		case ir.InstrAcc:
			copy(v, acc)
		case ir.InstrOp:
			a := bd.vals[in.Args[0]][:m]
			if in.Op.Info().Args == 2 {
				bd.progs[j].runSlice(v, a, bd.vals[in.Args[1]][:m], 0, exact, bd.scratch)
			} else {
				bd.progs[j].runSlice(v, a, nil, in.Scalar, exact, bd.scratch)
			}
		}
	}
}

// RunKernel executes one kernel of a Program with the reference semantics:
// it reads its input buffers from bufs (indexed like Program.Buffers) and
// writes its outputs into them.
func RunKernel(k *ir.Kernel, bufs [][]float32) { runKernel(k, bufs, nil) }

// RunKernelContext is RunKernel that stops once ctx is done and returns
// ctx's error, its outputs then partly written. It checks ctx between
// chunks of 256 elements, matmul rows, reduction outputs and the values
// of a rows kernel, so that a long kernel (a matmul of 10^8 operations
// takes a second) returns within milliseconds of a deadline. The cpu
// backend runs programs with it.
func RunKernelContext(ctx context.Context, k *ir.Kernel, bufs [][]float32) error {
	if ctx.Done() == nil { // never cancelled
		runKernel(k, bufs, nil)
		return nil
	}
	var err error
	runKernel(k, bufs, func() bool {
		if err == nil {
			err = ctx.Err()
		}
		return err != nil
	})
	return err
}

// runKernel runs k, checking stop (when not nil) as RunKernelContext
// describes and returning early once it reports true, by its kind's row
// of kernels.
func runKernel(k *ir.Kernel, bufs [][]float32, stop func() bool) {
	halt := func() bool { return stop != nil && stop() }
	row(k.Kind)(k, bufs, stop, halt)
}

// runner runs one kernel kind: stop as runKernel's, halt reporting
// whether stop (if any) asks to return.
type runner func(k *ir.Kernel, bufs [][]float32, stop func() bool, halt func() bool)

// kernels is the reference's row of each kernel kind. A kind that
// accumulates per element (ir.KernelInfo.Accumulates) is its accumulator
// followed by the body (perElement).
var kernels = [ir.NumKernelKinds]runner{
	ir.KernelElementwise: perElement(nil),
	ir.KernelMatmul: perElement(func(k *ir.Kernel, bufs [][]float32, stop func() bool) []float32 {
		a := operandValues(k.Inputs[0], bufs)
		b := operandValues(k.Inputs[1], bufs)
		return exact.batchMatmul(a, b, k.Inputs[0].Shape, k.Inputs[1].Shape, stop)
	}),
	ir.KernelConv: perElement(func(k *ir.Kernel, bufs [][]float32, stop func() bool) []float32 {
		x := operandValues(k.Inputs[0], bufs)
		w := operandValues(k.Inputs[1], bufs)
		return exact.conv2d(x, w, ir.Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs), stop)
	}),
	ir.KernelConvTranspose: perElement(func(k *ir.Kernel, bufs [][]float32, stop func() bool) []float32 {
		x := operandValues(k.Inputs[0], bufs)
		w := operandValues(k.Inputs[1], bufs)
		return exact.convTranspose2d(x, w, ir.ConvTranspose2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs), stop)
	}),
	ir.KernelResize: perElement(func(k *ir.Kernel, bufs [][]float32, stop func() bool) []float32 {
		return exact.resize2d(operandValues(k.Inputs[0], bufs), ir.Resize2DOf(k.Inputs[0].Shape, k.Attrs), stop)
	}),
	ir.KernelPad: perElement(func(k *ir.Kernel, bufs [][]float32, _ func() bool) []float32 {
		return Pad(operandValues(k.Inputs[0], bufs), ir.PadOf(k.Inputs[0].Shape, k.Attrs))
	}),
	ir.KernelAttention: perElement(func(k *ir.Kernel, bufs [][]float32, stop func() bool) []float32 {
		in := func(j int) []float32 { return operandValues(k.Inputs[j], bufs) }
		var mask []float32
		if k.Masked() {
			mask = in(3)
		}
		if k.Blocks > 1 {
			return exact.attentionParts(in(0), in(1), in(2), mask, ir.AttentionKernel(k), stop)
		}
		return exact.attention(in(0), in(1), in(2), mask, ir.AttentionKernel(k), stop)
	}),
	ir.KernelAttentionCombine: perElement(func(k *ir.Kernel, bufs [][]float32, stop func() bool) []float32 {
		r := len(k.Shape)
		return exact.attentionCombine(operandValues(k.Inputs[0], bufs), k.Inputs[0].Shape[r-1], k.Shape[r-1], stop)
	}),
	ir.KernelPool: perElement(func(k *ir.Kernel, bufs [][]float32, stop func() bool) []float32 {
		return exact.maxpool2d(operandValues(k.Inputs[0], bufs), ir.Pool2DOf(k.Inputs[0].Shape, k.Attrs), stop)
	}),
	ir.KernelPoolGrad: perElement(func(k *ir.Kernel, bufs [][]float32, stop func() bool) []float32 {
		return exact.maxpool2dGrad(operandValues(k.Inputs[0], bufs), operandValues(k.Inputs[1], bufs), ir.Pool2DOf(k.Inputs[0].Shape, k.Attrs), stop)
	}),
	ir.KernelReduce: runReduce,
	ir.KernelRows: func(k *ir.Kernel, bufs [][]float32, _ func() bool, halt func() bool) {
		runRows(k, bufs, halt)
	},
	ir.KernelLife: func(k *ir.Kernel, bufs [][]float32, _ func() bool, _ func() bool) {
		in := operandValues(k.Inputs[0], bufs)
		copy(bufs[k.Outputs[0]], Life(in, k.Shape[0], k.Shape[1]))
	},
}

func init() {
	if err := checkKernels(&kernels); err != nil {
		panic(err)
	}
}

// checkKernels returns an error naming the first kernel kind that table
// has no row for.
func checkKernels(table *[ir.NumKernelKinds]runner) error {
	for kind, r := range table {
		if r == nil {
			return fmt.Errorf("cpuref: BUG: kernel kind %v has no row in kernels", ir.KernelKind(kind))
		}
	}
	return nil
}

// row returns kind's row of kernels.
func row(kind ir.KernelKind) runner {
	if !kind.Valid() || kernels[kind] == nil {
		panic(fmt.Sprintf("cpuref: BUG: kernel kind %v has no row in kernels", kind))
	}
	return kernels[kind]
}

// perElement is the row of a kind that computes an accumulator per
// element of Shape (acc; nil for none) and then evaluates the body per
// element, chunk by chunk, storing its stored values.
func perElement(acc func(k *ir.Kernel, bufs [][]float32, stop func() bool) []float32) runner {
	return func(k *ir.Kernel, bufs [][]float32, stop func() bool, halt func() bool) {
		n := k.Shape.Len()
		bd := newBody(k)
		var c []float32
		if acc != nil {
			c = acc(k, bufs, stop)
		}
		for lo := 0; lo < n; lo += chunk {
			if halt() {
				return
			}
			m := min(chunk, n-lo)
			var a []float32
			if c != nil {
				a = c[lo : lo+m]
			}
			bd.eval(bufs, lo, m, a)
			for s, v := range k.Stores {
				copy(bufs[k.Outputs[s]][lo:lo+m], bd.vals[v][:m])
			}
		}
	}
}

// runReduce runs a reduction kernel: the prologue at every leaf, the
// reference tree of k.Reduce, then the epilogue (if any) per output.
func runReduce(k *ir.Kernel, bufs [][]float32, stop func() bool, halt func() bool) {
	n := k.Shape.Len()
	bd := newBody(k)
	acc := k.AccIndex()
	pro := acc
	if acc < 0 {
		pro = len(k.Body)
	}
	leaves := make([]float32, n)
	for lo := 0; lo < n; lo += chunk {
		if halt() {
			return
		}
		m := min(chunk, n-lo)
		bd.evalRange(bufs, lo, m, nil, 0, pro)
		copy(leaves[lo:lo+m], bd.vals[k.Stores[0]][:m])
	}
	red := exact.reduceUntil(k.Reduce, leaves, k.Shape, k.Keep, max(k.Blocks, 1), stop)
	if halt() {
		return
	}
	copy(bufs[k.Outputs[0]], red)
	for lo := 0; acc >= 0 && lo < len(red); lo += chunk { // the epilogue, per output
		m := min(chunk, len(red)-lo)
		bd.evalRange(bufs, lo, m, red[lo:lo+m], acc, len(k.Body))
		for s, v := range k.Stores[1:] {
			copy(bufs[k.Outputs[s+1]][lo:lo+m], bd.vals[v][:m])
		}
	}
}

// operandValues returns the operand's logical values in row-major order.
func operandValues(op ir.Operand, bufs [][]float32) []float32 {
	if op.Plain() {
		return bufs[op.Buffer][:op.Shape.Len()]
	}
	v := make([]float32, op.Shape.Len())
	Gather(op, bufs[op.Buffer], 0, v)
	return v
}

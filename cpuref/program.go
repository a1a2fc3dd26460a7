package cpuref

import (
	"math"

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
		runKernel(&k, bufs)
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

// Load returns element i (row-major over op.Shape) of operand op.
func Load(op ir.Operand, buf []float32, i int) float32 {
	if op.Broadcast > 0 {
		return buf[i%op.Broadcast]
	}
	if !op.Transposed {
		return buf[i]
	}
	rows, cols := op.Shape[0], op.Shape[1]
	r, c := i/cols, i%cols
	return buf[c*rows+r]
}

// EvalBody evaluates a kernel body at element i; acc is the matmul
// accumulator (ignored by other kinds). vals is scratch of len(k.Body).
func EvalBody(k *ir.Kernel, bufs [][]float32, i int, acc float32, vals []float32) {
	for j, in := range k.Body {
		switch in.Kind {
		case ir.InstrConst:
			vals[j] = in.Scalar
		case ir.InstrLoad:
			op := k.Inputs[in.Operand]
			vals[j] = Load(op, bufs[op.Buffer], i)
		case ir.InstrAcc:
			vals[j] = acc
		case ir.InstrOp:
			if in.Op.Info().Args == 2 {
				vals[j] = Binary(in.Op, vals[in.Args[0]], vals[in.Args[1]])
			} else {
				vals[j] = Unary(in.Op, vals[in.Args[0]], in.Scalar)
			}
		}
	}
}

// RunKernel executes one kernel of a Program with the reference semantics:
// it reads its input buffers from bufs (indexed like Program.Buffers) and
// writes its outputs into them. The cpu backend runs programs with it.
func RunKernel(k *ir.Kernel, bufs [][]float32) { runKernel(k, bufs) }

func runKernel(k *ir.Kernel, bufs [][]float32) {
	vals := make([]float32, len(k.Body))
	n := k.Shape.Len()
	switch k.Kind {
	case ir.KernelElementwise, ir.KernelMatmul:
		var c []float32
		if k.Kind == ir.KernelMatmul {
			a := operandValues(k.Inputs[0], bufs)
			b := operandValues(k.Inputs[1], bufs)
			c = Matmul(a, b, k.M, k.K, k.N)
		}
		for i := 0; i < n; i++ {
			var acc float32
			if c != nil {
				acc = c[i]
			}
			EvalBody(k, bufs, i, acc, vals)
			for s, v := range k.Stores {
				bufs[k.Outputs[s]][i] = vals[v]
			}
		}
	case ir.KernelSum:
		p := 1
		for p < n {
			p *= 2
		}
		leaves := make([]float32, p)
		for i := range leaves {
			leaves[i] = math.Float32frombits(1 << 31) // -0, the padding leaf
			if i < n {
				EvalBody(k, bufs, i, 0, vals)
				leaves[i] = vals[k.Stores[0]]
			}
		}
		blocks := max(k.Blocks, 1)
		for b := range blocks {
			bufs[k.Outputs[0]][b] = Sum(leaves[b*p/blocks : (b+1)*p/blocks])
		}
	case ir.KernelLife:
		in := operandValues(k.Inputs[0], bufs)
		copy(bufs[k.Outputs[0]], Life(in, k.Shape[0], k.Shape[1]))
	}
}

// operandValues returns the operand's logical values in row-major order.
func operandValues(op ir.Operand, bufs [][]float32) []float32 {
	switch {
	case op.Broadcast > 0:
		return Broadcast(bufs[op.Buffer], op.Shape.Len())
	case op.Transposed:
		return Transpose(bufs[op.Buffer], op.Shape[1], op.Shape[0])
	}
	return bufs[op.Buffer]
}

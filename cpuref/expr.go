package cpuref

import (
	"math"
	"sync"

	"github.com/gpucc/gpucc/ir"
)

// EvalX evaluates the expression x (an elementwise op's ir.OpInfo.Expr) on
// operands a and b: the reference value of one element. With flush, every
// float add, sub and mul reads subnormal operands as zero and writes a
// subnormal result as zero, keeping the sign, and every float comparison
// reads subnormal operands as zero, as a flushing GPU does; selects,
// bitcasts and integer operations never flush.
func EvalX(x *ir.X, a, b float32, flush bool) float32 {
	return compile(x).run(a, b, arith{flush: flush})
}

// EvalXSlice sets out[k] to EvalX(x, a[k], b[k], flush) for every k (b
// nil: 0 for every second operand), evaluating a chunk of elements per
// expression step: the bulk form for tests that sweep many inputs.
func EvalXSlice(x *ir.X, out, a, b []float32, flush bool) {
	compile(x).runSlice(out, a, b, 0, arith{flush: flush}, nil)
}

// step is one expression node over registers (the node's index in
// evaluation order); values are kept as their 32 bits.
type step struct {
	op   ir.XOp
	args [3]int32
	bits uint32
}

type program []step

var programs sync.Map // *ir.X -> program

// compile flattens x, its calls inlined, into evaluation order, once per
// expression.
func compile(x *ir.X) program {
	if p, ok := programs.Load(x); ok {
		return p.(program)
	}
	nodes := ir.Inline(x).Nodes() // calls expanded: the same value, primitives only
	index := make(map[*ir.X]int32, len(nodes))
	p := make(program, len(nodes))
	for i, n := range nodes {
		index[n] = int32(i)
		s := step{op: n.Op, bits: n.Bits}
		if n.Op == ir.XArg {
			s.bits = uint32(n.Arg)
		}
		for k, a := range n.Args {
			s.args[k] = index[a]
		}
		p[i] = s
	}
	programs.Store(x, p)
	return p
}

func (p program) run(a, b float32, ar arith) float32 {
	var out [1]float32
	var scratch [64]uint32
	p.runSlice(out[:], []float32{a}, []float32{b}, 0, ar, scratch[:])
	return out[0]
}

// chunk is the most elements runSlice evaluates per expression step:
// dispatching on the step once per chunk, not once per element, is what
// makes the interpreter cost little more than the arithmetic.
const chunk = 256

// runSlice sets out[k] to the expression's value on a[k] and b[k]; when b
// is nil, every element's second operand is s (a scalar form). scratch is
// reused for the registers when it is large enough.
func (p program) runSlice(out, a, b []float32, s float32, ar arith, scratch []uint32) {
	w := min(chunk, len(out))
	if len(scratch) < len(p)*w {
		scratch = make([]uint32, len(p)*w)
	}
	reg := func(i int32) []uint32 { return scratch[int(i)*w : int(i+1)*w] }
	fb := math.Float32bits
	ff := math.Float32frombits
	bit := func(v bool) uint32 {
		if v {
			return 1
		}
		return 0
	}
	for lo := 0; lo < len(out); lo += w {
		m := min(w, len(out)-lo)
		for i, st := range p {
			r, x, y, z := reg(int32(i))[:m], reg(st.args[0])[:m], reg(st.args[1])[:m], reg(st.args[2])[:m]
			switch st.op {
			case ir.XArg:
				switch {
				case st.bits == 0:
					for k := range r {
						r[k] = fb(a[lo+k])
					}
				case b != nil:
					for k := range r {
						r[k] = fb(b[lo+k])
					}
				default:
					for k := range r {
						r[k] = fb(s)
					}
				}
			case ir.XConst, ir.XUConst:
				for k := range r {
					r[k] = st.bits
				}
			case ir.XAdd:
				for k := range r {
					r[k] = fb(ar.add(ff(x[k]), ff(y[k])))
				}
			case ir.XSub:
				for k := range r {
					r[k] = fb(ar.sub(ff(x[k]), ff(y[k])))
				}
			case ir.XMul:
				for k := range r {
					r[k] = fb(ar.mul(ff(x[k]), ff(y[k])))
				}
			case ir.XFma:
				for k := range r {
					r[k] = fb(ar.fma(ff(x[k]), ff(y[k]), ff(z[k])))
				}
			case ir.XGt:
				for k := range r {
					r[k] = bit(ar.f(ff(x[k])) > ar.f(ff(y[k])))
				}
			case ir.XGe:
				for k := range r {
					r[k] = bit(ar.f(ff(x[k])) >= ar.f(ff(y[k])))
				}
			case ir.XEq:
				for k := range r {
					r[k] = bit(ar.f(ff(x[k])) == ar.f(ff(y[k])))
				}
			case ir.XSelect:
				for k := range r {
					r[k] = z[k]
					if x[k] != 0 {
						r[k] = y[k]
					}
				}
			case ir.XBits, ir.XFloat:
				copy(r, x)
			case ir.XUAdd:
				for k := range r {
					r[k] = x[k] + y[k]
				}
			case ir.XUSub:
				for k := range r {
					r[k] = x[k] - y[k]
				}
			case ir.XAnd:
				for k := range r {
					r[k] = x[k] & y[k]
				}
			case ir.XOr:
				for k := range r {
					r[k] = x[k] | y[k]
				}
			case ir.XXor:
				for k := range r {
					r[k] = x[k] ^ y[k]
				}
			case ir.XShl:
				for k := range r {
					r[k] = x[k] << (y[k] & 31)
				}
			case ir.XShr:
				for k := range r {
					r[k] = x[k] >> (y[k] & 31)
				}
			case ir.XULt:
				for k := range r {
					r[k] = bit(x[k] < y[k])
				}
			case ir.XUEq:
				for k := range r {
					r[k] = bit(x[k] == y[k])
				}
			default:
				panic("cpuref: unknown expression op " + st.op.String())
			}
		}
		last := reg(int32(len(p) - 1))
		for k := range m {
			out[lo+k] = ff(last[k])
		}
	}
}

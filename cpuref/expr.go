package cpuref

import (
	"math"
	"sync"

	"github.com/gpucc/gpucc/ir"
)

// EvalX evaluates the expression x (an elementwise op's ir.OpInfo.Expr) on
// operands a and b: the reference value of one element. With flush, every
// float add, sub and mul reads subnormal operands as zero and writes a
// subnormal result as zero, keeping the sign, as a flushing GPU does;
// comparisons, selects, bitcasts and integer operations never flush.
func EvalX(x *ir.X, a, b float32, flush bool) float32 {
	return compile(x).run(a, b, arith{flush: flush})
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

// compile flattens x into evaluation order, once per expression.
func compile(x *ir.X) program {
	if p, ok := programs.Load(x); ok {
		return p.(program)
	}
	nodes := x.Nodes()
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
	var small [64]uint32
	r := small[:]
	if len(p) > len(small) {
		r = make([]uint32, len(p))
	}
	f := func(k int32) float32 { return math.Float32frombits(r[k]) }
	fb := math.Float32bits
	bit := func(v bool) uint32 {
		if v {
			return 1
		}
		return 0
	}
	for i, s := range p {
		x, y := s.args[0], s.args[1]
		var v uint32
		switch s.op {
		case ir.XArg:
			v = fb(a)
			if s.bits == 1 {
				v = fb(b)
			}
		case ir.XConst, ir.XUConst:
			v = s.bits
		case ir.XAdd:
			v = fb(ar.add(f(x), f(y)))
		case ir.XSub:
			v = fb(ar.sub(f(x), f(y)))
		case ir.XMul:
			v = fb(ar.mul(f(x), f(y)))
		case ir.XGt:
			v = bit(f(x) > f(y))
		case ir.XGe:
			v = bit(f(x) >= f(y))
		case ir.XEq:
			v = bit(f(x) == f(y))
		case ir.XSelect:
			v = r[s.args[2]]
			if r[x] != 0 {
				v = r[y]
			}
		case ir.XBits, ir.XFloat:
			v = r[x]
		case ir.XUAdd:
			v = r[x] + r[y]
		case ir.XUSub:
			v = r[x] - r[y]
		case ir.XAnd:
			v = r[x] & r[y]
		case ir.XOr:
			v = r[x] | r[y]
		case ir.XXor:
			v = r[x] ^ r[y]
		case ir.XShl:
			v = r[x] << (r[y] & 31)
		case ir.XShr:
			v = r[x] >> (r[y] & 31)
		case ir.XULt:
			v = bit(r[x] < r[y])
		case ir.XUEq:
			v = bit(r[x] == r[y])
		default:
			panic("cpuref: unknown expression op " + s.op.String())
		}
		r[i] = v
	}
	return math.Float32frombits(r[len(p)-1])
}

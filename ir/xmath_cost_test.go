package ir_test

import (
	"fmt"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// xcost counts what an expression costs a GPU per element, by class: the
// model of the H200's time for the exact row ops (issue 35), where these
// kernels are bound by instruction issue, not memory. Over [8192,1024] one
// unit is about 0.25 µs (132 SMs × 128 float lanes × 1.98 GHz); tanh's
// table body, 174 units fused, measured 46.9 µs on 2026-12-05.
type xcost struct {
	float, keep, u32, sel, cmp int
}

// units is the time model: a float instruction 1, an integer, select or
// compare 2 (the H200's 64 integer lanes an SM against 128 float ones).
func (c xcost) units() int { return c.float + c.keep + 2*(c.u32+c.sel+c.cmp) }

func (c xcost) String() string {
	return fmt.Sprintf("%d float + %d keep + %d u32 + %d select + %d compare = %d units", c.float, c.keep, c.u32, c.sel, c.cmp, c.units())
}

// costOf counts x inlined.
func costOf(x *ir.X) xcost {
	var c xcost
	nodes := ir.Inline(x).Nodes()
	uses := map[*ir.X][]*ir.X{}
	for _, n := range nodes {
		for _, a := range n.Args {
			uses[a] = append(uses[a], n)
		}
	}
	for _, n := range nodes {
		switch n.Op {
		case ir.XAdd, ir.XSub, ir.XFma:
			c.float++
		case ir.XMul:
			c.float++
			// WGSL's Keep, (a*b)*one: a driver fuses it into an add that
			// consumes the product (fma(a*b, one, c)), never elsewhere
			if u := uses[n]; !(len(u) == 1 && u[0].Op == ir.XAdd) {
				c.keep++
			}
		case ir.XSelect:
			c.sel++
		case ir.XGt, ir.XGe, ir.XEq, ir.XULt, ir.XUEq:
			c.cmp++
		case ir.XUAdd, ir.XUSub, ir.XAnd, ir.XOr, ir.XXor, ir.XShl, ir.XShr:
			c.u32++
		}
	}
	return c
}

// TestXMathCosts logs the cost of each table function (with its division's
// fused twin where it has one) and of the rows kernels' division parts.
// At 2026-12-05: exp 79 units, log 77, tanh 174, sigmoid 254, div 172,
// erf 102, div_row_fma 64 (TestFastPathCosts: the fast paths' own).
func TestXMathCosts(t *testing.T) {
	for _, op := range []ir.Op{ir.OpExp, ir.OpLog, ir.OpTanh, ir.OpSigmoid, ir.OpDiv, ir.OpErf} {
		x := op.Info().Expr
		if f, ok := fusedOf(x); ok {
			x = f
		}
		t.Logf("%-8s %v", op, costOf(x))
	}
	for _, f := range []*ir.Func{ir.DivRowFast, ir.DivRowFastFused, ir.DivByOne, ir.MaxNeg} {
		t.Logf("%-8s %v", f.Name, costOf(f.Body))
	}
}

package codegen_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// TestTypedMovesComplete: every op that only moves values (a view) or
// takes indices has a structural row (a scatter's in TypedScatters), so
// that no target renders one of its own.
func TestTypedMovesComplete(t *testing.T) {
	for _, op := range ir.Ops() {
		info := op.Info()
		_, ok := codegen.TypedMoves[op]
		if _, s := codegen.TypedScatters[op]; s && ok {
			t.Errorf("%v: both a move row and a scatter row", op)
		} else {
			ok = ok || s
		}
		if (info.View || info.Types.Index) != ok {
			t.Errorf("%v: view %v, indexed %v, row %v", op, info.View, info.Types.Index, ok)
		}
	}
}

// offsetOf is the element of op's buffer that element e of op's shape
// reads: Σ coordinate · stride, row-major.
func offsetOf(op ir.Operand, e int) int {
	at := 0
	for d := len(op.Shape) - 1; d >= 0; d-- {
		at += e % op.Shape[d] * op.Strides[d]
		e /= op.Shape[d]
	}
	return at
}

// TestTypedMovesMeanTheirRules: each structural row, evaluated as the
// targets render it (Source, Index, Step, Bound), moves the elements the
// reference moves: over data whose values are their own offsets and
// indices at both ends of [-d, d), every output element equals
// cpuref.EvalTyped's, and an index just outside faults where the
// reference fails with invalid_input.
func TestTypedMovesMeanTheirRules(t *testing.T) {
	type build func(b *ir.Builder, x ir.Tensor) ir.Tensor
	iota := func(n int) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(i)
		}
		return v
	}
	idx := func(b *ir.Builder, shape ir.Shape, v ...int64) ir.Tensor {
		return b.TypedInput("", ir.I64, shape, nil, v)
	}
	cases := []struct {
		name  string
		data  ir.Shape
		build build
	}{
		{"transpose", ir.Shape{2, 3, 4}, func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.T() }},
		{"permute", ir.Shape{2, 3, 4}, func(b *ir.Builder, x ir.Tensor) ir.Tensor {
			attrs, err := ir.PackAttrs(ir.OpPermute, map[string][]int{"perm": {2, 0, 1}})
			if err != nil {
				t.Fatal(err)
			}
			return x.ApplyAttrs(ir.OpPermute, attrs)
		}},
		{"broadcast", ir.Shape{3, 1}, func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Broadcast(ir.Shape{2, 3, 4}) }},
		{"reshape", ir.Shape{2, 6}, func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Reshape(ir.Shape{3, 4}) }},
		{"gather axis 0", ir.Shape{5, 3}, func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Gather(idx(b, ir.Shape{2, 2}, 0, -1, 4, -5), 0) }},
		{"gather axis 1", ir.Shape{2, 5, 3}, func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Gather(idx(b, ir.Shape{3}, -5, 4, 2), 1) }},
		{"gather axis -1", ir.Shape{2, 3, 5}, func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Gather(idx(b, ir.Shape{2}, 4, -1), -1) }},
		{"gather a scalar index", ir.Shape{4, 3}, func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Gather(idx(b, ir.Shape{}, -2), 0) }},
		{"gather_elements axis 1", ir.Shape{3, 4}, func(b *ir.Builder, x ir.Tensor) ir.Tensor {
			return x.GatherElements(idx(b, ir.Shape{2, 3}, -4, 3, 0, 1, -1, 2), 1)
		}},
		{"gather_elements axis 0", ir.Shape{3, 4}, func(b *ir.Builder, x ir.Tensor) ir.Tensor {
			return x.GatherElements(idx(b, ir.Shape{2, 4}, 2, -3, 0, 1, -1, 2, 1, 0), 0)
		}},
	}
	for _, c := range cases {
		b := ir.NewBuilder()
		x := b.TypedInput("x", ir.I64, c.data, nil, iota(c.data.Len()))
		y := c.build(b, x)
		b.Output("y", y)
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		i := int(y.ID())
		mv, ok := codegen.TypedMoveOf(g, i)
		if !ok {
			t.Fatalf("%s: no row for %v", c.name, g.Nodes[i].Op)
		}
		want, err := cpuref.EvalTyped(g)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var ix []int64
		if mv.Indexed {
			ix = want[g.Nodes[i].Args[1]].I
		}
		got := func(e int) (int, error) {
			at := offsetOf(mv.Source, e)
			if !mv.Indexed {
				return at, nil
			}
			v := ix[offsetOf(mv.Index, e)]
			if v < -int64(mv.Bound) || v >= int64(mv.Bound) {
				return 0, fmt.Errorf("index %d outside %d", v, mv.Bound)
			}
			if v < 0 {
				v += int64(mv.Bound)
			}
			return at + int(v)*mv.Step, nil
		}
		for e, w := range want[i].I {
			if at, err := got(e); err != nil || int64(at) != w {
				t.Errorf("%s: element %d from %d (%v), the reference's from %d", c.name, e, at, err, w)
			}
		}
		if !mv.Indexed {
			continue
		}
		// One index just past each end: the row faults where the reference does.
		args := g.Nodes[i].Args
		for _, bad := range []int64{int64(mv.Bound), -int64(mv.Bound) - 1} {
			g.Nodes[args[1]].Ints = append([]int64{bad}, g.Nodes[args[1]].Ints[1:]...)
			ix = g.Nodes[args[1]].Ints
			_, ref := cpuref.EvalTyped(g)
			var re *ir.Error
			if !errors.As(ref, &re) || re.Code != ir.CodeInvalidInput {
				t.Errorf("%s: index %d, the reference gives %v", c.name, bad, ref)
			}
			faulted := false
			for e := range g.Nodes[i].Shape.Len() {
				if _, err := got(e); err != nil {
					faulted = true
				}
			}
			if !faulted {
				t.Errorf("%s: index %d read, where the reference fails", c.name, bad)
			}
		}
	}
}

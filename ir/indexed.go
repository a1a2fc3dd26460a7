package ir

// The indexed rows past gather (ONNX GatherElements, ScatterElements):
// their indices are run-time int32 or int64 values along an axis
// attribute, a negative one counting from the end once, and one outside
// [-d, d) fails the run with invalid_input naming it (never a read or a
// write out of bounds). Their shape rules and index maps live here; their
// meaning is cpuref's (typed.go), one definition each.

// axisAttrs is an indexed row's axis of the data, negative counting from
// the end.
var axisAttrs = []AttrSpec{{Name: "axis", Len: 1, Default: []int{0}}}

// IndexAxis returns the axis attribute of op (gather_elements,
// scatter_elements) for data of rank r, in [0, r).
func IndexAxis(op Op, attrs []int, r int) int {
	a := op.Attr(attrs, "axis")[0]
	if a < 0 {
		a += r
	}
	return a
}

// gatherElementsShape: data and indices of one rank (1 or more), each of
// the indices' dimensions but the axis's at most data's; the result has the
// indices' shape.
func gatherElementsShape(node int, op Op, args []Shape, _ Shape, attrs []int) (Shape, *Error) {
	data, idx := args[0], args[1]
	if err := alongAxis(node, op, data, idx, attrs, "b"); err != nil {
		return nil, err
	}
	return idx, nil
}

// alongAxis checks the indices' shape idx against data's for an op that
// indexes along its axis attribute element by element: one rank, each
// other dimension at most data's.
func alongAxis(node int, op Op, data, idx Shape, attrs []int, field string) *Error {
	a := op.Attr(attrs, "axis")[0]
	if len(data) == 0 || a < -len(data) || a >= len(data) {
		return Errorf(CodeInvalidGraph, node, "axis", "%v's axis %d is outside a tensor of rank %d", op, a, len(data))
	}
	if len(idx) != len(data) {
		return Errorf(CodeInvalidGraph, node, field, "%v's indices of shape %v for data of shape %v: the ranks differ", op, idx, data)
	}
	ax := IndexAxis(op, attrs, len(data))
	for d := range idx {
		if d != ax && idx[d] > data[d] {
			return Errorf(CodeInvalidGraph, node, field, "%v's indices of shape %v for data of shape %v: dimension %d is larger", op, idx, data, d)
		}
	}
	return nil
}

// AlongAxisSources returns, for each element of the indices (row-major over
// their shape idx), the data element it names: its own position with the
// axis coordinate replaced by its index value (already wrapped into
// [0, data[axis])).
func AlongAxisSources(data, idx Shape, ax int, vals []int64) []int {
	src := make([]int, len(vals))
	pos := make([]int, len(idx))
	stride := make([]int, len(data))
	s := 1
	for d := len(data) - 1; d >= 0; d-- {
		stride[d], s = s, s*data[d]
	}
	for k, v := range vals {
		at := 0
		for d, p := range pos {
			if d == ax {
				p = int(v)
			}
			at += p * stride[d]
		}
		src[k] = at
		for d := len(pos) - 1; d >= 0; d-- { // the next position, row-major
			if pos[d]++; pos[d] < idx[d] {
				break
			}
			pos[d] = 0
		}
	}
	return src
}

package ir

// gatherAttrs: gather's axis of the data, negative counting from the end
// (ONNX's Gather).
var gatherAttrs = []AttrSpec{{Name: "axis", Len: 1, Default: []int{0}}}

// GatherAxis returns gather's axis of data of rank r, in [0, r).
func GatherAxis(attrs []int, r int) int {
	a := OpGather.Attr(attrs, "axis")[0]
	if a < 0 {
		a += r
	}
	return a
}

// gatherShape: data [d0, …, dr-1] gathered along axis by indices of shape
// I is [d0, …, d(axis-1), I…, d(axis+1), …], at most MaxRank dimensions.
func gatherShape(node int, op Op, args []Shape, _ Shape, attrs []int) (Shape, *Error) {
	data, idx := args[0], args[1]
	a := op.Attr(attrs, "axis")[0]
	if a < -len(data) || a >= len(data) {
		return nil, Errorf(CodeInvalidGraph, node, "axis", "gather's axis %d is outside a tensor of rank %d", a, len(data))
	}
	ax := GatherAxis(attrs, len(data))
	out := append(append(append(Shape{}, data[:ax]...), idx...), data[ax+1:]...)
	if len(out) > MaxRank {
		return nil, Errorf(CodeInvalidGraph, node, "b", "gather gives rank %d, over the maximum rank %d", len(out), MaxRank)
	}
	if len(out) == 0 {
		out = Shape{}
	}
	return out, nil
}

// GatherSources returns, for each output element of gather (row-major over
// out), its data element, given the indices' values (already wrapped into
// [0, data[axis])).
func GatherSources(data, out Shape, ax int, idx []int64) []int {
	outer, inner := 1, 1
	for _, d := range data[:ax] {
		outer *= d
	}
	for _, d := range data[ax+1:] {
		inner *= d
	}
	n := data[ax]
	src := make([]int, 0, out.Len())
	for o := range outer {
		for _, i := range idx {
			base := (o*n + int(i)) * inner
			for k := range inner {
				src = append(src, base+k)
			}
		}
	}
	return src
}

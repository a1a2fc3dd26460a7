package ir

// ReduceTarget returns the IR target of a reduction (sum, max) of a tensor
// of shape arg over axes, and the shape of its result. With all, every axis
// is reduced (axes is ignored); otherwise axes count from the end when
// negative (numpy's rule) and each may appear once. The target keeps every
// dimension, 1 at each reduced axis (keepdims), except that reducing every
// axis without keepdims gives the target [] (the whole-tensor reduction).
// result is the target, or without keepdims the target less its reduced
// axes: a reshape of the target. node is used only for error messages,
// which name the field "axes".
func ReduceTarget(node int, arg Shape, axes []int, all, keepdims bool) (target, result Shape, err *Error) {
	r := len(arg)
	reduced := make([]bool, r)
	if all {
		for d := range reduced {
			reduced[d] = true
		}
	}
	for _, a := range axes {
		if all {
			break
		}
		d := a
		if d < 0 {
			d += r
		}
		if d < 0 || d >= r {
			return nil, nil, Errorf(CodeInvalidGraph, node, "axes", "axis %d is out of range for a tensor of rank %d", a, r)
		}
		if reduced[d] {
			return nil, nil, Errorf(CodeInvalidGraph, node, "axes", "axis %d appears twice", a)
		}
		reduced[d] = true
	}
	every := true
	for _, red := range reduced {
		every = every && red
	}
	if every && !keepdims {
		return Shape{}, Shape{}, nil
	}
	target, result = Shape{}, Shape{}
	for d, n := range arg {
		if reduced[d] {
			target = append(target, 1)
			continue
		}
		target = append(target, n)
		result = append(result, n)
	}
	if keepdims {
		result = target
	}
	return target, result, nil
}

// Dim is one dimension of an index map: Size indices, Stride elements
// apart.
type Dim struct{ Size, Stride int }

// Reduction is how a reduction of an argument of some shape to a kept
// shape walks the argument: output o (row-major over the kept shape)
// reduces Leaves values, leaf r (row-major over the reduced axes) being
// argument element Offset(Kept, o) + Offset(Reduced, r). Dimensions of
// size 1 are left out and adjacent ones that are contiguous merged, so a
// reduction of the last axis has one Kept and one Reduced dimension.
type Reduction struct {
	Outputs, Leaves int
	Kept, Reduced   []Dim // outermost first
}

// ReductionOf returns the walk of a reduction of arg to the kept shape keep
// ([] or all ones: the whole tensor, one output).
func ReductionOf(arg, keep Shape) Reduction {
	whole := keep.Len() == 1
	red := Reduction{Outputs: keep.Len(), Leaves: arg.Len() / keep.Len()}
	stride := 1
	var kept, reduced []Dim
	for d := len(arg) - 1; d >= 0; d-- {
		n := arg[d]
		if n > 1 {
			dim := Dim{n, stride}
			if whole || keep[d] == 1 {
				reduced = mergeDim(reduced, dim)
			} else {
				kept = mergeDim(kept, dim)
			}
		}
		stride *= n
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	for i, j := 0, len(reduced)-1; i < j; i, j = i+1, j-1 {
		reduced[i], reduced[j] = reduced[j], reduced[i]
	}
	red.Kept, red.Reduced = kept, reduced
	return red
}

// mergeDim adds dim, the next outer dimension, to dims (innermost first),
// merging it with the last one when they are contiguous.
func mergeDim(dims []Dim, dim Dim) []Dim {
	if k := len(dims) - 1; k >= 0 && dims[k].Size*dims[k].Stride == dim.Stride {
		dims[k].Size *= dim.Size
		return dims
	}
	return append(dims, dim)
}

// Offset returns Σ digit·Stride over dims, the digits being v in the mixed
// radix of the dims' sizes (the last dimension varies fastest).
func Offset(dims []Dim, v int) int {
	off := 0
	for d := len(dims) - 1; d >= 0; d-- {
		off += v % dims[d].Size * dims[d].Stride
		v /= dims[d].Size
	}
	return off
}

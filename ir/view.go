package ir

// Views: nodes that only move values, which a kernel reads in place
// through an operand's strides and offset (Operand.Offset) instead of
// being computed by a kernel of their own. The view ops (OpInfo.View:
// transpose, permute, broadcast, reshape) always are; a pad that only
// crops is one too, a slice of its argument: that is how the importer
// writes a Slice or Split of step 1 (onnx's cropOrPad), so GPT-2's split
// of its fused QKV projection reads the projection's buffer at three
// offsets rather than copying it into three buffers.

// Crop returns, for a pad node that only removes elements (every pad ≤ 0,
// in any mode: no border is then read), the first element of its argument
// it keeps along each axis. ok is false for any other node.
func (n *Node) Crop() (begin []int, ok bool) {
	if n.Op != OpPad {
		return nil, false
	}
	pads := OpPad.Attr(n.Attrs, "pads")
	r := len(pads) / 2
	begin = make([]int, r)
	for d, p := range pads {
		if p > 0 {
			return nil, false
		}
		if d < r {
			begin[d] = -p
		}
	}
	return begin, true
}

// IsView reports whether node n only moves values, so that kernels read
// it in place: a view op (Op.IsView) or a crop (Crop).
func (n *Node) IsView() bool {
	if n.Op.IsView() {
		return true
	}
	_, ok := n.Crop()
	return ok
}

// Slice returns op read from multi-index begin on, as shape (each
// begin[d] + shape[d] ≤ op.Shape[d]): the same strides, the offset moved
// to begin's element.
func (op Operand) Slice(begin []int, shape Shape) Operand {
	off := op.Offset
	for d, b := range begin {
		off += b * op.Strides[d]
	}
	return Operand{Buffer: op.Buffer, Shape: shape, Strides: op.Strides, Offset: off}
}

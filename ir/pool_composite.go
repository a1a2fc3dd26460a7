package ir

// AvgPool2D returns ONNX's AveragePool of t (x [N,C,H,W]) over a kH×kW
// window (kernel [kH, kW]) with strides [sH, sW] and pads [top, left,
// bottom, right], as ops of the table:
//
//	sum   = conv2d(x, full([C,1,kH,kW], 1), group C, strides, pads)
//	count = kH·kW                                   with countIncludePad
//	count = conv2d(full([1,1,H,W], 1), full([1,1,kH,kW], 1), strides, pads)  without
//	y     = sum / count (correctly rounded; count broadcast over N and C)
//
// Each product x·1 is x exactly and the padding's +0·1 adds nothing, so
// sum is the window's taps inside x added from +0 in (kh, kw) order, and
// count the number of those taps (exact integers): ONNX's sum / count,
// with its order defined. A window of only -0 gives +0 (numpy's -0).
func (t Tensor) AvgPool2D(kernel, strides, pads []int, countIncludePad bool) Tensor {
	if !t.ok() {
		return t
	}
	s := t.Shape()
	if len(s) != 4 || len(kernel) != 2 {
		return t.fail("a", "avgpool2d needs x [N,C,H,W] and a 2-D kernel_shape, got %v and %v", s, kernel)
	}
	attrs := map[string][]int{"group": {s[1]}}
	if strides != nil {
		attrs["strides"] = strides
	}
	if pads != nil {
		attrs["pads"] = pads
	}
	ones := t.b.Full(Shape{s[1], 1, kernel[0], kernel[1]}, 1)
	sum := t.Conv2D(ones, attrs)
	if countIncludePad {
		return sum.DivScalar(float32(kernel[0] * kernel[1]))
	}
	delete(attrs, "group")
	count := t.b.Full(Shape{1, 1, s[2], s[3]}, 1).Conv2D(t.b.Full(Shape{1, 1, kernel[0], kernel[1]}, 1), attrs)
	return sum.Div(count)
}

// GlobalAvgPool returns ONNX's GlobalAveragePool of t (x [N,C,H,W], or any
// rank above 2): the Mean over every axis after the second, kept as 1s.
func (t Tensor) GlobalAvgPool() Tensor {
	if !t.ok() {
		return t
	}
	s := t.Shape()
	if len(s) < 3 {
		return t.fail("a", "global average pooling needs x [N,C,…], got %v", s)
	}
	axes := make([]int, 0, len(s)-2)
	for d := 2; d < len(s); d++ {
		axes = append(axes, d)
	}
	return t.Mean(true, axes...)
}

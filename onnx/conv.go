package onnx

import (
	"github.com/gpucc/gpucc/ir"
)

// convRules are the convolution and pooling ops, mapped onto conv2d,
// maxpool2d and their composites (ir.Tensor.AvgPool2D, GlobalAvgPool).
// ops.go's init adds them to rules. 1-D forms run as 2-D ones of height 1;
// 3-D forms are refused.
var convRules = map[string]rule{
	"Conv":              {since: 1, attrs: []string{"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}, fn: convOp},
	"ConvInteger":       {since: 10, attrs: []string{"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}, fn: integerOp(true)},
	"MaxPool":           {since: 1, attrs: []string{"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"}, fn: exactInF32(poolOp(true))},
	"AveragePool":       {since: 1, attrs: []string{"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"}, fn: poolOp(false)},
	"ConvTranspose":     {since: 1, attrs: []string{"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"}, fn: convTransposeOp},
	"Pad":               {since: 1, attrs: []string{"mode", "paddings", "pads", "value"}, fn: padOp},
	"Resize":            {since: 11, attrs: []string{"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value", "mode", "nearest_mode"}, fn: resizeOp},
	"GlobalAveragePool": {since: 1, fn: globalPoolOp(func(x ir.Tensor, axes []int) ir.Tensor { return x.GlobalAvgPool() })},
	"GlobalMaxPool":     {since: 1, fn: globalPoolOp(func(x ir.Tensor, axes []int) ir.Tensor { return x.MaxAxes(true, axes...) })},
}

// window is a node's spatial attributes resolved for a 2-D op: kernel,
// strides, dilations, pads [top, left, bottom, right].
type window struct {
	kernel, strides, dilations, pads []int
}

// spatial returns x as 4-D ([N,C,1,L] for a 1-D x) and whether it was
// 1-D, refusing other ranks.
func (c *importer) spatial(x ir.Tensor) (ir.Tensor, bool, *ir.Error) {
	s := x.Shape()
	switch len(s) {
	case 4:
		return x, false, nil
	case 3:
		return x.Reshape(ir.Shape{s[0], s[1], 1, s[2]}), true, nil
	}
	return ir.Tensor{}, false, c.refuse("input of rank %d (shape %v); gpucc runs 1-D and 2-D convolution and pooling", len(s), s)
}

// ints2 reads a spatial attribute of d values (1 or 2) as 2-D values, def
// for each when absent; a 1-D value v becomes [1, v] (pad: see pads2).
func (c *importer) ints2(name string, d int, def int) ([]int, *ir.Error) {
	v, ok := c.attrInts(name)
	if !ok {
		return []int{def, def}, nil
	}
	if len(v) != d {
		return nil, c.invalid("%s has %d values; the input has %d spatial dimensions", name, len(v), d)
	}
	for _, x := range v {
		if x < 0 || x > ir.MaxAttrMagnitude {
			return nil, c.invalid("%s %v is out of range", name, v)
		}
	}
	if d == 1 {
		return []int{1, int(v[0])}, nil
	}
	return []int{int(v[0]), int(v[1])}, nil
}

// resolve reads strides, dilations (when the op has them) and the pads
// (explicit, or from auto_pad) for an input of spatial size in ([H, W])
// and a kernel of kernel ([kH, kW]); d is 1 or 2 spatial dimensions.
func (c *importer) resolve(in, kernel []int, d int, dilated bool) (window, *ir.Error) {
	w := window{kernel: kernel}
	var err *ir.Error
	if w.strides, err = c.ints2("strides", d, 1); err != nil {
		return w, err
	}
	w.dilations = []int{1, 1}
	if dilated {
		if w.dilations, err = c.ints2("dilations", d, 1); err != nil {
			return w, err
		}
	} else if _, ok := c.attrInts("dilations"); ok {
		return w, c.refuse("dilations are not supported for this op")
	}
	w.pads = []int{0, 0, 0, 0}
	if p, ok := c.attrInts("pads"); ok {
		if len(p) != 2*d {
			return w, c.invalid("pads has %d values; the input has %d spatial dimensions", len(p), d)
		}
		for _, x := range p {
			if x < 0 || x > 1<<20 {
				return w, c.invalid("pads %v: each must be 0 to 2^20", p)
			}
		}
		if d == 1 {
			w.pads = []int{0, int(p[0]), 0, int(p[1])}
		} else {
			w.pads = []int{int(p[0]), int(p[1]), int(p[2]), int(p[3])}
		}
	}
	mode := "NOTSET"
	if a := c.attr("auto_pad"); a != nil {
		mode = string(a.s)
	}
	switch mode {
	case "NOTSET", "":
	case "VALID":
		w.pads = []int{0, 0, 0, 0}
	case "SAME_UPPER", "SAME_LOWER": // out = ceil(in / stride), the extra pad at the end (upper) or start
		for j := range 2 {
			if w.strides[j] < 1 {
				return w, c.invalid("strides %v: each must be ≥ 1", w.strides)
			}
			out := (in[j] + w.strides[j] - 1) / w.strides[j]
			total := max((out-1)*w.strides[j]+(kernel[j]-1)*w.dilations[j]+1-in[j], 0)
			lo := total / 2
			if mode == "SAME_LOWER" {
				lo = total - total/2
			}
			w.pads[j], w.pads[j+2] = lo, total-lo
		}
	default:
		return w, c.invalid("auto_pad %q is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", mode)
	}
	return w, nil
}

// convOp imports Conv: conv2d of X and W (1-D as height 1), plus the bias
// B [M] as an add of [M,1,1], which fuses into the convolution's kernel.
func convOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	var fold batchNormFold
	folded := false
	if wv, bv := c.in(1), c.in(2); wv != nil && wv.c != nil && (c.nin() <= 2 || bv != nil && bv.c != nil) {
		var bias *Tensor
		if c.nin() > 2 {
			bias = bv.c
		}
		var err *ir.Error
		if fold, folded, err = c.foldBatchNorm(wv.c, bias); err != nil {
			return nil, err
		}
	}
	var w ir.Tensor
	if folded {
		w, err = c.runtime(&value{c: fold.w}, "the folded weight")
	} else {
		w, err = c.rtIn(1)
	}
	if err != nil {
		return nil, err
	}
	x, oneD, err := c.spatial(x)
	if err != nil {
		return nil, err
	}
	ws := w.Shape()
	if len(ws) != len(x.Shape())-b1(oneD) {
		return nil, c.invalid("W has shape %v for X of rank %d", ws, len(x.Shape())-b1(oneD))
	}
	if oneD {
		w = w.Reshape(ir.Shape{ws[0], ws[1], 1, ws[2]})
		ws = w.Shape()
	}
	d := 2 - b1(oneD)
	if k, ok := c.attrInts("kernel_shape"); ok {
		if len(k) != d || int(k[len(k)-1]) != ws[3] || d == 2 && int(k[0]) != ws[2] {
			return nil, c.invalid("kernel_shape %v does not match W's shape %v", k, c.in(1).shape())
		}
	}
	xs := x.Shape()
	win, err := c.resolve([]int{xs[2], xs[3]}, []int{ws[2], ws[3]}, d, true)
	if err != nil {
		return nil, err
	}
	g := c.attrInt("group", 1)
	if g < 1 || g > ir.MaxAttrMagnitude {
		return nil, c.invalid("group %d is out of range", g)
	}
	y := x.Conv2D(w, map[string][]int{"strides": win.strides, "pads": win.pads, "dilations": win.dilations, "group": {int(g)}})
	if folded {
		bias, err := c.runtime(&value{c: fold.b}, "the folded bias")
		if err != nil {
			return nil, err
		}
		c.folded[fold.node] = true
		y = y.Add(bias.Reshape(ir.Shape{ws[0], 1, 1}))
	} else if c.nin() > 2 {
		bias, err := c.rtIn(2)
		if err != nil {
			return nil, err
		}
		if bs := bias.Shape(); len(bs) != 1 || bs[0] != ws[0] {
			return nil, c.invalid("B has shape %v; W has %d output channels", bs, ws[0])
		}
		y = y.Add(bias.Reshape(ir.Shape{ws[0], 1, 1}))
	}
	return c.unspatial(y, oneD)
}

// unspatial returns y ([N,C,1,L] when oneD) in the op's own rank.
func (c *importer) unspatial(y ir.Tensor, oneD bool) ([]value, *ir.Error) {
	if s := y.Shape(); oneD && s != nil {
		y = y.Reshape(ir.Shape{s[0], s[1], s[3]})
	}
	return one(rtValue(y))
}

// poolOp imports MaxPool (max) or AveragePool: maxpool2d, or AvgPool2D's
// conv2d composite. ceil_mode becomes extra padding at the end, which
// neither the maximum nor the average's count of taps inside x sees (it
// is refused with count_include_pad, where ONNX's count would differ).
// MaxPool's Indices output is refused.
func poolOp(isMax bool) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		if isMax && len(c.n.outputs) > 1 && c.n.outputs[1] != "" {
			return nil, c.refuse("the Indices output is not supported")
		}
		x, err := c.rtIn(0)
		if err != nil {
			return nil, err
		}
		x, oneD, err := c.spatial(x)
		if err != nil {
			return nil, err
		}
		d := 2 - b1(oneD)
		if _, ok := c.attrInts("kernel_shape"); !ok {
			return nil, c.invalid("kernel_shape is missing")
		}
		k, err := c.ints2("kernel_shape", d, 1)
		if err != nil {
			return nil, err
		}
		xs := x.Shape()
		win, err := c.resolve([]int{xs[2], xs[3]}, k, d, isMax)
		if err != nil {
			return nil, err
		}
		include := c.attrInt("count_include_pad", 0) != 0
		if c.attrInt("ceil_mode", 0) != 0 {
			for j := range 2 {
				ext := (k[j]-1)*win.dilations[j] + 1
				span := xs[2+j] + win.pads[j] + win.pads[j+2] - ext
				if win.strides[j] < 1 || span < 0 {
					break // the shape rule refuses it
				}
				out := (span+win.strides[j]-1)/win.strides[j] + 1
				if extra := (out-1)*win.strides[j] + ext - (xs[2+j] + win.pads[j] + win.pads[j+2]); extra > 0 {
					if include {
						return nil, c.refuse("ceil_mode with count_include_pad")
					}
					win.pads[j+2] += extra
				}
			}
		}
		var y ir.Tensor
		if isMax {
			y = x.MaxPool2D(map[string][]int{"kernel_shape": k, "strides": win.strides, "pads": win.pads, "dilations": win.dilations})
		} else {
			y = x.AvgPool2D(k, win.strides, win.pads, include)
		}
		return c.unspatial(y, oneD)
	}
}

// globalPoolOp imports GlobalAveragePool and GlobalMaxPool: f over every
// axis after the second, kept.
func globalPoolOp(f func(x ir.Tensor, axes []int) ir.Tensor) func(c *importer) ([]value, *ir.Error) {
	return func(c *importer) ([]value, *ir.Error) {
		x, err := c.rtIn(0)
		if err != nil {
			return nil, err
		}
		s := x.Shape()
		if len(s) < 3 {
			return nil, c.invalid("input of shape %v; global pooling needs [N,C,…]", s)
		}
		var axes []int
		for d := 2; d < len(s); d++ {
			axes = append(axes, d)
		}
		return one(rtValue(f(x, axes)))
	}
}

// b1 is 1 for true.
func b1(v bool) int {
	if v {
		return 1
	}
	return 0
}

// convTransposeOp imports ConvTranspose: conv_transpose2d of X and W (1-D
// as height 1), plus the bias B [M] as an add of [M,1,1], which fuses
// into its kernel. output_shape and auto_pad resolve to pads and
// output_padding: total = s·(in-1) + output_padding + (k-1)·d + 1 - out,
// split as ONNX 1.12's tests do (start total/2, truncated, and the rest
// at the end; SAME_LOWER the other way round). A negative end pad (an
// output_shape past the full output) becomes more output_padding; a
// negative start pad, which would put rows before the first input's, is
// refused.
func convTransposeOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	w, err := c.rtIn(1)
	if err != nil {
		return nil, err
	}
	x, oneD, err := c.spatial(x)
	if err != nil {
		return nil, err
	}
	ws := w.Shape()
	if len(ws) != len(x.Shape())-b1(oneD) {
		return nil, c.invalid("W has shape %v for X of rank %d", ws, len(x.Shape())-b1(oneD))
	}
	if oneD {
		w = w.Reshape(ir.Shape{ws[0], ws[1], 1, ws[2]})
		ws = w.Shape()
	}
	d := 2 - b1(oneD)
	if k, ok := c.attrInts("kernel_shape"); ok {
		if len(k) != d || int(k[len(k)-1]) != ws[3] || d == 2 && int(k[0]) != ws[2] {
			return nil, c.invalid("kernel_shape %v does not match W's shape %v", k, c.in(1).shape())
		}
	}
	xs := x.Shape()
	// strides and dilations as for Conv; pads and output_padding below.
	win, err := c.resolve([]int{xs[2], xs[3]}, []int{ws[2], ws[3]}, d, true)
	if err != nil {
		return nil, err
	}
	outPad := []int{0, 0}
	if v, ok := c.attrInts("output_padding"); ok {
		if len(v) != d {
			return nil, c.invalid("output_padding has %d values; the input has %d spatial dimensions", len(v), d)
		}
		for j, p := range v {
			if p < 0 || p > 1<<20 {
				return nil, c.invalid("output_padding %v: each must be 0 to 2^20", v)
			}
			outPad[j+2-d] = int(p)
		}
	}
	mode := "NOTSET"
	if a := c.attr("auto_pad"); a != nil && string(a.s) != "" {
		mode = string(a.s)
	}
	var target []int // the spatial output shape, when output_shape or SAME_* sets it
	if v, ok := c.attrInts("output_shape"); ok {
		if len(v) == d+2 { // [N, M, …] written out
			v = v[2:]
		}
		if len(v) != d {
			return nil, c.invalid("output_shape %v: want %d spatial dimensions", v, d)
		}
		target = []int{1, 1}
		for j, o := range v {
			if o < 1 || o > ir.MaxAttrMagnitude {
				return nil, c.invalid("output_shape %v is out of range", v)
			}
			target[j+2-d] = int(o)
		}
	} else if mode == "SAME_UPPER" || mode == "SAME_LOWER" {
		target = []int{xs[2] * win.strides[0], xs[3] * win.strides[1]}
	} else if mode == "VALID" {
		win.pads = []int{0, 0, 0, 0}
	} else if mode != "NOTSET" {
		return nil, c.invalid("auto_pad %q is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", mode)
	}
	if target != nil {
		for j := range 2 {
			if j == 0 && oneD {
				continue // the height of 1 that 1-D runs as
			}
			total := win.strides[j]*(xs[2+j]-1) + outPad[j] + (ws[2+j]-1)*win.dilations[j] + 1 - target[j]
			lo := total / 2
			if mode == "SAME_LOWER" {
				lo = total - total/2
			}
			hi := total - lo
			if lo < 0 {
				return nil, c.refuse("output_shape %v is %d past the full output, which would need output before the first input row or column", target, -total)
			}
			if hi < 0 {
				outPad[j] -= hi
				hi = 0
			}
			win.pads[j], win.pads[j+2] = lo, hi
		}
	}
	g := c.attrInt("group", 1)
	if g < 1 || g > ir.MaxAttrMagnitude {
		return nil, c.invalid("group %d is out of range", g)
	}
	y := x.ConvTranspose2D(w, map[string][]int{"strides": win.strides, "pads": win.pads, "dilations": win.dilations,
		"group": {int(g)}, "output_padding": outPad})
	if c.nin() > 2 {
		bias, err := c.rtIn(2)
		if err != nil {
			return nil, err
		}
		m := ws[1] * int(g)
		if bs := bias.Shape(); len(bs) != 1 || bs[0] != m {
			return nil, c.invalid("B has shape %v; W and group give %d output channels", bs, m)
		}
		y = y.Add(bias.Reshape(ir.Shape{m, 1, 1}))
	}
	return c.unspatial(y, oneD)
}

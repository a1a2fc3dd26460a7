package onnx

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// resizeModes, resizeCoords and resizeNearest map Resize's string
// attributes onto resize2d's values.
var (
	resizeModes  = map[string]int{"nearest": ir.ResizeNearest, "linear": ir.ResizeLinear}
	resizeCoords = map[string]int{"half_pixel": ir.ResizeHalfPixel, "asymmetric": ir.ResizeAsymmetric,
		"align_corners": ir.ResizeAlignCorners, "pytorch_half_pixel": ir.ResizePytorchHalfPixel, "tf_half_pixel_for_nn": ir.ResizeTFHalfPixelForNN}
	resizeNearest = map[string]int{"round_prefer_floor": ir.ResizeRoundPreferFloor, "round_prefer_ceil": ir.ResizeRoundPreferCeil,
		"floor": ir.ResizeFloor, "ceil": ir.ResizeCeil}
)

// resizeOp imports Resize (opset 11 on) of a 4-D X over its last two
// axes as resize2d, nearest or linear, from a constant scales (float32,
// the output size floor(in·scale), the scale itself kept for the
// coordinates) or sizes input; the first two axes must keep their size.
// cubic is two matmuls by constant matrices (resizeCubic). Refused by
// name: exclude_outside outside cubic, tf_crop_and_resize (a region of interest and
// an extrapolation value: not done), other ranks, and a resize of the
// batch or channel axis.
func resizeOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	mode, ok := resizeModes[c.attrStr("mode", "nearest")]
	cubic := c.attrStr("mode", "nearest") == "cubic"
	if !ok && !cubic {
		return nil, c.refuse("mode %s is not supported (gpucc resizes by nearest and linear)", ir.Quote(c.attrStr("mode", "nearest")))
	}
	cm := c.attrStr("coordinate_transformation_mode", "half_pixel")
	coord, ok := resizeCoords[cm]
	if !ok {
		if cm == "tf_crop_and_resize" {
			return nil, c.refuse("coordinate_transformation_mode tf_crop_and_resize (a region of interest with an extrapolation value) is not supported")
		}
		return nil, c.invalid("coordinate_transformation_mode %s is not one of ONNX's", ir.Quote(cm))
	}
	near, ok := resizeNearest[c.attrStr("nearest_mode", "round_prefer_floor")]
	if !ok {
		return nil, c.invalid("nearest_mode %s is not one of ONNX's", ir.Quote(c.attrStr("nearest_mode", "")))
	}
	if c.attrInt("exclude_outside", 0) != 0 && !cubic {
		return nil, c.refuse("exclude_outside is not supported (gpucc takes it for cubic)")
	}
	if cubic && cm == "tf_half_pixel_for_nn" {
		return nil, c.refuse("coordinate_transformation_mode tf_half_pixel_for_nn with cubic is not supported")
	}
	s := x.Shape()
	if len(s) != 4 {
		return nil, c.refuse("input of rank %d (shape %v); gpucc resizes 4-D tensors over their last two axes", len(s), s)
	}
	out := []int{s[2], s[3]}
	bits := []int{0, 0}
	var scales *Tensor
	if v := c.in(2); v != nil && !(v.c != nil && v.c.Len() == 0) {
		if scales, err = c.konst(2, "scales"); err != nil {
			return nil, err
		}
	}
	switch {
	case scales != nil:
		if scales.Type != Float32 || scales.Len() != 4 {
			return nil, c.invalid("scales of type %v and %d values for a 4-D input", scales.Type, scales.Len())
		}
		if scales.Float32[0] != 1 || scales.Float32[1] != 1 {
			return nil, c.refuse("scales %v resize the batch or channel axis; gpucc resizes the last two", scales.Float32)
		}
		for j := range 2 {
			f := scales.Float32[2+j]
			b := math.Float32bits(f)
			if !(f > 0) || b >= 0x7f800000 || b < 0x00800000 {
				return nil, c.invalid("scale %v must be positive, normal and finite", f)
			}
			n := math.Floor(float64(f) * float64(s[2+j])) // the reference's (scale·in).astype(int)
			if n < 1 || n > ir.MaxResize {
				return nil, c.refuse("scale %v gives an output of %v along an axis of %d; gpucc needs 1 to %d", f, n, s[2+j], ir.MaxResize)
			}
			out[j], bits[j] = int(n), int(b)
		}
	case c.in(3) != nil:
		sz, err := c.ints(3, "sizes")
		if err != nil {
			return nil, err
		}
		if len(sz) != 4 {
			return nil, c.invalid("sizes has %d values for a 4-D input", len(sz))
		}
		if int(sz[0]) != s[0] || int(sz[1]) != s[1] {
			return nil, c.refuse("sizes %v resize the batch or channel axis; gpucc resizes the last two", sz)
		}
		for j := range 2 {
			if sz[2+j] < 1 || sz[2+j] > ir.MaxResize {
				return nil, c.refuse("sizes %v: gpucc needs 1 to %d along each axis", sz, ir.MaxResize)
			}
			out[j] = int(sz[2+j])
		}
	default:
		return nil, c.invalid("neither scales nor sizes is given")
	}
	if cubic {
		return c.resizeCubic(x, out, bits, cm)
	}
	return one(rtValue(x.Resize2D(map[string][]int{"sizes": out, "mode": {mode}, "coordinate_mode": {coord}, "nearest_mode": {near}, "scale_bits": bits})))
}

// resizeCubic is a cubic Resize of x [N, C, H, W] to out: Rh·x·Rwᵀ, the
// per-axis weights of ONNX's reference as constant float32 matrices
// (cubicMatrix), two matmuls; bits are the scales' float32 bits (0: from
// sizes, the scale out/in).
func (c *importer) resizeCubic(x ir.Tensor, out, bits []int, mode string) ([]value, *ir.Error) {
	s := x.Shape()
	a := float64(c.attrFloat("cubic_coeff_a", -0.75))
	exclude := c.attrInt("exclude_outside", 0) != 0
	var ms [2][]float32
	for j := range 2 {
		scale := float64(out[j]) / float64(s[2+j])
		if bits[j] != 0 {
			scale = float64(math.Float32frombits(uint32(bits[j])))
		}
		ms[j] = cubicMatrix(s[2+j], out[j], scale, mode, a, exclude)
	}
	rh := c.b.Input(ir.Shape{out[0], s[2]}, ms[0])
	rw := c.b.Input(ir.Shape{out[1], s[3]}, ms[1])
	return one(rtValue(rh.MatMul(x).MatMul(rw.T())))
}

package onnx

import "github.com/gpucc/gpucc/ir"

// gridSampleOp is GridSample (opset 16) of x [N, C, H, W] at grid
// [N, Ho, Wo, 2] computed at run time, as PyTorch's grid_sample (ONNX's
// reference): each grid point unnormalized (align_corners), its
// coordinates padded (border: clipped; reflection: mirrored, then
// clipped; zeros: taps outside give 0), then nearest (ties to even),
// bilinear (the 4 taps, PyTorch's weights and order) or bicubic (the 16
// taps, a = -0.75, each tap padded); each tap a gather_elements of x's
// flattened plane, float32 throughout.
func gridSampleOp(c *importer) ([]value, *ir.Error) {
	x, err := c.rtIn(0)
	if err != nil {
		return nil, err
	}
	grid, err := c.rtIn(1)
	if err != nil {
		return nil, err
	}
	xs, gs := x.Shape(), grid.Shape()
	if len(xs) != 4 || len(gs) != 4 || gs[0] != xs[0] || gs[3] != 2 {
		return nil, c.refuse("GridSample of X %v and grid %v (gpucc samples 4-D X at a [N, Ho, Wo, 2] grid)", xs, gs)
	}
	n, ch, h, w := xs[0], xs[1], xs[2], xs[3]
	p := gs[1] * gs[2]
	mode, pad := c.attrStr("mode", "bilinear"), c.attrStr("padding_mode", "zeros")
	align := c.attrInt("align_corners", 0) != 0
	if mode != "bilinear" && mode != "nearest" && mode != "bicubic" || pad != "zeros" && pad != "border" && pad != "reflection" {
		return nil, c.invalid("mode %s and padding_mode %s", ir.Quote(mode), ir.Quote(pad))
	}
	if _, err := c.elements("the sampled taps", []int{n, ch, p}); err != nil {
		return nil, err
	}
	ps := ir.Shape{n, p}
	coord := func(k, size int) ir.Tensor { // unnormalized
		g := grid.Gather(c.b.TypedInput("", ir.I64, ir.Shape{1}, nil, []int64{int64(k)}), -1).Reshape(ps)
		if align {
			return g.AddScalar(1).DivScalar(2).MulScalar(float32(size - 1))
		}
		return g.AddScalar(1).MulScalar(float32(size)).AddScalar(-1).DivScalar(2)
	}
	clip := func(v ir.Tensor, size int) ir.Tensor { return v.MaximumScalar(0).MinimumScalar(float32(size - 1)) }
	reflect := func(v ir.Tensor, size int) ir.Tensor {
		lo, hi := -1, 2*size-1
		if align {
			lo, hi = 0, 2*(size-1)
		}
		if lo == hi {
			return c.b.Full(v.Shape(), 0)
		}
		min, span := float32(lo)/2, float32(hi-lo)/2
		a := v.AddScalar(-min)
		a = a.Maximum(a.Neg())
		flips := a.DivScalar(span).Apply(ir.OpFloor)
		extra := a.Sub(flips.MulScalar(span))
		even := flips.MulScalar(0.5).Apply(ir.OpFloor).MulScalar(2).Apply(ir.OpEqual, flips)
		return where(even, extra.AddScalar(min), extra.Neg().AddScalar(span+min))
	}
	padded := func(v ir.Tensor, size int) ir.Tensor {
		switch pad {
		case "border":
			return clip(v, size)
		case "reflection":
			return clip(reflect(v, size), size)
		}
		return v
	}
	xf := x.Reshape(ir.Shape{n, ch, h * w})
	zero := c.b.Full(ir.Shape{n, ch, p}, 0)
	wide := func(t ir.Tensor) ir.Tensor { return t.Reshape(ir.Shape{n, 1, p}).Broadcast(ir.Shape{n, ch, p}) }
	// axisTap is an integer-valued coordinate's validity (1 or 0) and its
	// index, clipped and floored; tap reads x there, 0 where either is out.
	type axisTap struct{ in, at ir.Tensor }
	along := func(t ir.Tensor, size int) axisTap {
		in := t.MinimumScalar(float32(size-1)).Apply(ir.OpEqual, t).Mul(t.MaximumScalar(0).Apply(ir.OpEqual, t))
		return axisTap{in, clip(t, size).Apply(ir.OpFloor)}
	}
	tap := func(tx, ty axisTap) ir.Tensor {
		idx := ty.at.MulScalar(float32(w)).Add(tx.at).Cast(ir.I64) // a NaN coordinate fails the run here
		v := xf.GatherElements(idx.Reshape(ir.Shape{n, 1, p}).Broadcast(ir.Shape{n, ch, p}), 2)
		return where(wide(tx.in.Mul(ty.in)), v, zero)
	}
	ix, iy := coord(0, w), coord(1, h)
	var y ir.Tensor
	switch mode {
	case "nearest":
		y = tap(along(padded(ix, w).Apply(ir.OpRound), w), along(padded(iy, h).Apply(ir.OpRound), h))
	case "bilinear":
		ix, iy = padded(ix, w), padded(iy, h)
		x0, y0 := ix.Apply(ir.OpFloor), iy.Apply(ir.OpFloor)
		x1, y1 := x0.AddScalar(1), y0.AddScalar(1)
		nw := x1.Sub(ix).Mul(y1.Sub(iy))
		ne := ix.Sub(x0).Mul(y1.Sub(iy))
		sw := x1.Sub(ix).Mul(iy.Sub(y0))
		se := ix.Sub(x0).Mul(iy.Sub(y0))
		a0, a1, b0, b1 := along(x0, w), along(x1, w), along(y0, h), along(y1, h)
		y = tap(a0, b0).Mul(wide(nw)).Add(tap(a1, b0).Mul(wide(ne))).Add(tap(a0, b1).Mul(wide(sw))).Add(tap(a1, b1).Mul(wide(se)))
	default: // bicubic: Keys' kernel, a = -0.75, over rows then columns
		x0, y0 := ix.Apply(ir.OpFloor), iy.Apply(ir.OpFloor)
		coeffs := func(t ir.Tensor) [4]ir.Tensor {
			const a = -0.75
			c1 := func(v ir.Tensor) ir.Tensor { return v.MulScalar(a + 2).AddScalar(-(a + 3)).Mul(v).Mul(v).AddScalar(1) }
			c2 := func(v ir.Tensor) ir.Tensor {
				return v.MulScalar(a).AddScalar(-5 * a).Mul(v).AddScalar(8 * a).Mul(v).AddScalar(-4 * a)
			}
			u := t.Neg().AddScalar(1)
			return [4]ir.Tensor{c2(t.AddScalar(1)), c1(t), c1(u), c2(u.AddScalar(1))}
		}
		cx, cy := coeffs(ix.Sub(x0)), coeffs(iy.Sub(y0))
		var txs, tys [4]axisTap
		for i := range 4 {
			txs[i] = along(padded(x0.AddScalar(float32(i-1)), w), w)
			tys[i] = along(padded(y0.AddScalar(float32(i-1)), h), h)
		}
		for j := range 4 {
			var row ir.Tensor
			for i := range 4 {
				t := tap(txs[i], tys[j]).Mul(wide(cx[i]))
				if i == 0 {
					row = t
				} else {
					row = row.Add(t)
				}
			}
			row = row.Mul(wide(cy[j]))
			if j == 0 {
				y = row
			} else {
				y = y.Add(row)
			}
		}
	}
	return one(rtValue(y.Reshape(ir.Shape{n, ch, gs[1], gs[2]})))
}

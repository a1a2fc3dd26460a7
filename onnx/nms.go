package onnx

import (
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// nmsOp is NonMaxSuppression of boxes and scores known at import. Its
// output has a row per box kept, so a graph input there decides a shape
// and is read when the model is specialized to its data (konst's "boxes",
// "scores", …; Model.SpecializeValues): the op folds at import. Per batch
// and class, the boxes scoring above score_threshold are taken by
// descending score (ties by the lower box index), and each is kept unless
// its IoU with a box already kept exceeds iou_threshold, up to
// max_output_boxes_per_class (0, the default, keeps none): ONNX Runtime's
// algorithm, its IoU in float32 as ORT computes it (corners ordered, an
// empty intersection or area suppressing nothing). selected_indices is
// [kept, 3] int64 rows of (batch, class, box), by batch, class and order
// of selection; no box kept is an empty output, which gpucc refuses.
func nmsOp(c *importer) ([]value, *ir.Error) {
	boxes, err := c.konst(0, "boxes")
	if err != nil {
		return nil, err
	}
	scores, err := c.konst(1, "scores")
	if err != nil {
		return nil, err
	}
	if boxes.Type != Float32 || scores.Type != Float32 {
		return nil, c.refuse("boxes of %v and scores of %v (gpucc's NonMaxSuppression reads float32)", boxes.Type, scores.Type)
	}
	bs, ss := boxes.Shape, scores.Shape
	if len(bs) != 3 || bs[2] != 4 || len(ss) != 3 || ss[0] != bs[0] || ss[2] != bs[1] {
		return nil, c.invalid("boxes of shape %v and scores of shape %v (want [batches, boxes, 4] and [batches, classes, boxes])", bs, ss)
	}
	maxOut, iou, scoreMin, hasMin := int64(0), float32(0), float32(0), false
	if v := c.in(2); v != nil {
		ks, err := c.ints(2, "max_output_boxes_per_class")
		if err != nil {
			return nil, err
		}
		if len(ks) != 1 {
			return nil, c.invalid("max_output_boxes_per_class holds %d values, not one", len(ks))
		}
		maxOut = max(ks[0], 0)
	}
	scalar := func(k int, what string) (float32, bool, *ir.Error) {
		if c.in(k) == nil {
			return 0, false, nil
		}
		t, err := c.konst(k, what)
		if err != nil {
			return 0, false, err
		}
		if t.Type != Float32 || t.Len() != 1 {
			return 0, false, c.invalid("%s is %v of shape %v, not one float32", what, t.Type, t.Shape)
		}
		return t.Float32[0], true, nil
	}
	if iou, _, err = scalar(3, "iou_threshold"); err != nil {
		return nil, err
	}
	if scoreMin, hasMin, err = scalar(4, "score_threshold"); err != nil {
		return nil, err
	}
	center := c.attrInt("center_point_box", 0) != 0
	nb, nc, n := bs[0], ss[1], bs[1]
	corners := func(b, i int) [4]float32 { // y1, x1, y2, x2 with y1 ≤ y2, x1 ≤ x2
		v := boxes.Float32[(b*n+i)*4 : (b*n+i)*4+4]
		if center { // x_center, y_center, width, height
			hw, hh := float32(v[2]/2), float32(v[3]/2)
			return [4]float32{float32(v[1] - hh), float32(v[0] - hw), float32(v[1] + hh), float32(v[0] + hw)}
		}
		return [4]float32{min(v[0], v[2]), min(v[1], v[3]), max(v[0], v[2]), max(v[1], v[3])}
	}
	suppress := func(p, q [4]float32) bool {
		ymin, xmin := max(p[0], q[0]), max(p[1], q[1])
		ymax, xmax := min(p[2], q[2]), min(p[3], q[3])
		if xmax <= xmin || ymax <= ymin {
			return false
		}
		inter := float32(float32(ymax-ymin) * float32(xmax-xmin))
		a1 := float32(float32(p[2]-p[0]) * float32(p[3]-p[1]))
		a2 := float32(float32(q[2]-q[0]) * float32(q[3]-q[1]))
		union := float32(float32(a1+a2) - inter)
		if inter <= 0 || a1 <= 0 || a2 <= 0 || union <= 0 {
			return false
		}
		return float32(inter/union) > iou
	}
	var rows []int64
	for b := range nb {
		for k := range nc {
			sc := scores.Float32[(b*nc+k)*n : (b*nc+k)*n+n]
			var cand []int
			for i, s := range sc {
				if s != s {
					return nil, c.refuse("a NaN score (batch %d, class %d, box %d)", b, k, i)
				}
				if !hasMin || s > scoreMin {
					cand = append(cand, i)
				}
			}
			slices.SortStableFunc(cand, func(i, j int) int {
				switch {
				case sc[i] > sc[j]:
					return -1
				case sc[i] < sc[j]:
					return 1
				}
				return 0
			})
			var kept [][4]float32
			for _, i := range cand {
				if int64(len(kept)) >= maxOut {
					break
				}
				box := corners(b, i)
				if slices.ContainsFunc(kept, func(q [4]float32) bool { return suppress(q, box) }) {
					continue
				}
				kept = append(kept, box)
				rows = append(rows, int64(b), int64(k), int64(i))
			}
		}
	}
	if len(rows) == 0 {
		return nil, c.refuse("no box is kept: an empty output; gpucc's tensors are not empty")
	}
	out, err := c.newConst(Int64, []int{len(rows) / 3, 3})
	if err != nil {
		return nil, err
	}
	copy(out.Int64, rows)
	return one(constValue(out))
}

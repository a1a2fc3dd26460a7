package onnx

import "github.com/gpucc/gpucc/ir"

// tfIdfVectorizerOp is TfIdfVectorizer of run-time integer tokens X [L]
// or [B, L] against its pool of integer n-grams: for each n from
// min_gram_length to max_gram_length and each skip s to max_skip_count
// (unigrams once), each pool n-gram is counted over the windows of
// stride s+1 (a comparison per token, the window's and, a sum of 0 and
// 1: exact in float32), the counts of a column added; then TF (the
// counts), IDF (the weight where a count is positive) or TFIDF (count ·
// weight). Strings are refused by name.
func tfIdfVectorizerOp(c *importer) ([]value, *ir.Error) {
	if a := c.attr("pool_strings"); a != nil {
		return nil, c.refuse("pool_strings (gpucc reads integer tokens)")
	}
	x, err := c.typedAny(0)
	if err != nil {
		return nil, err
	}
	if !x.DType().IsInt() {
		return nil, c.refuse("tokens of %v (gpucc reads integers)", x.DType())
	}
	s := x.Shape()
	if len(s) == 1 {
		x = x.Reshape(ir.Shape{1, s[0]})
	} else if len(s) != 2 {
		return nil, c.invalid("X of shape %v: [L] or [B, L]", s)
	}
	bn, l := x.Shape()[0], x.Shape()[1]
	counts, _ := c.attrInts("ngram_counts")
	cols, _ := c.attrInts("ngram_indexes")
	var pool []int64
	if a := c.attr("pool_int64s"); a != nil {
		pool = a.ints
	}
	minN, maxN, maxSkip := c.attrInt("min_gram_length", 1), c.attrInt("max_gram_length", 1), c.attrInt("max_skip_count", 0)
	if minN < 1 || maxN < minN || int(maxN) > len(counts) || maxSkip < 0 || maxSkip > int64(l) {
		return nil, c.invalid("gram lengths %d to %d, skips to %d, over %d pool levels", minN, maxN, maxSkip, len(counts))
	}
	var weights []float32
	if a := c.attr("weights"); a != nil {
		weights = a.floats
	}
	width := 0
	for _, col := range cols {
		width = max(width, int(col)+1)
	}
	col := make([]ir.Tensor, width)
	have := make([]bool, width)
	g := 0 // the pool's n-grams in order, n-gram g at column cols[g]
	for n := 1; n <= len(counts); n++ {
		start := int(counts[n-1])
		end := len(pool)
		if n < len(counts) {
			end = int(counts[n])
		}
		if start < 0 || end < start || end > len(pool) || (end-start)%n != 0 {
			return nil, c.invalid("ngram_counts %v for a pool of %d", counts, len(pool))
		}
		for p := start; p < end; p, g = p+n, g+1 {
			if g >= len(cols) || cols[g] < 0 {
				return nil, c.invalid("ngram_indexes %v for %d n-grams", cols, g+1)
			}
			if n < int(minN) || n > int(maxN) {
				continue
			}
			skips := int(maxSkip)
			if n == 1 {
				skips = 0
			}
			for sk := 0; sk <= skips; sk++ {
				w := l - (n-1)*(sk+1) // windows of this stride
				if w < 1 {
					continue
				}
				var hit ir.Tensor
				for k := range n {
					pos := make([]int64, w)
					for i := range pos {
						pos[i] = int64(i + k*(sk+1))
					}
					tok := x.Gather(c.b.TypedInput("", ir.I64, ir.Shape{w}, nil, pos), 1)
					lo, hi := tok.DType().Range()
					if pool[p+k] < lo || pool[p+k] > hi {
						hit = c.b.FullOf(ir.Bool, ir.Shape{bn, w}, 0, 0)
						break
					}
					e := tok.ApplyTo(ir.Bool, ir.OpEqual, c.b.FullOf(tok.DType(), ir.Shape{bn, w}, 0, pool[p+k]))
					if k == 0 {
						hit = e
					} else {
						hit = hit.ApplyTo(ir.Bool, ir.OpAnd, e)
					}
				}
				cnt := hit.Cast(ir.F32).SumAxes(false, 1) // [bn]
				if j := cols[g]; have[j] {
					col[j] = col[j].Add(cnt)
				} else {
					col[j], have[j] = cnt, true
				}
			}
		}
	}
	mode := c.attrStr("mode", "TF")
	parts := make([]ir.Tensor, width)
	for j := range parts {
		v := col[j]
		if !have[j] {
			v = c.b.Full(ir.Shape{bn}, 0)
		}
		wt := float32(1)
		if j < len(weights) {
			wt = weights[j]
		}
		switch mode {
		case "TF":
		case "IDF":
			v = v.Apply(ir.OpPositive).MulScalar(wt) // count > 0 ? weight : 0
		case "TFIDF":
			v = v.MulScalar(wt)
		default:
			return nil, c.invalid("mode %s is not TF, IDF or TFIDF", ir.Quote(mode))
		}
		parts[j] = v.Reshape(ir.Shape{bn, 1})
	}
	y, err := c.concatTensors(parts, 1)
	if err != nil {
		return nil, err
	}
	if len(s) == 1 {
		y = y.Reshape(ir.Shape{width})
	}
	return one(rtValue(y))
}

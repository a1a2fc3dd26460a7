package onnx

import (
	"math"

	"github.com/gpucc/gpucc/ir"
)

// attentionRule is ONNX's Attention (opset 23), imported as one attention
// node (ir/attention.go's order).
var attentionRule = rule{since: 23, attrs: []string{"is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode", "scale", "softcap", "softmax_precision"}, fn: attentionOp}

// attentionOp imports Attention: Q [B,H,S,D], K [B,H,T,D], V [B,H,T,E]
// (or [B,S,H·D] and so on with q_num_heads and kv_num_heads, split into
// heads by a reshape and a permute, which the kernel reads in place), a
// float attn_mask added to the scores (broadcasting to them) or a boolean
// one (true: the key takes part), added as -0 where true and -Inf where
// false (the spec's 0 and -Inf: the scores' sum with +0 or -0 differs
// only in a zero's sign, which no softmax output shows), is_causal, and
// scale (default 1/√D). As the spec says, Q and K are each scaled by
// √scale before their product (the attention node's own scale is then
// 1). Grouped-query attention (H query heads over H/n key and value
// heads) repeats each key and value head n times, interleaved as the
// spec's np.repeat (heads h0 h0 h1 h1 …), through a broadcast that
// ir.GroupAttention reads in place. present_key and present_value are K
// and V as given ([B,kv_num_heads,T,D], not repeated). Refused by name: past keys
// and values, softcap, the qk_matmul_output output, is_causal where S ≠ T
// (the spec aligns the diagonal to the top left; gpucc's causal mask is
// that only for square scores, so it says so instead of guessing).
func attentionOp(c *importer) ([]value, *ir.Error) {
	if c.in(4) != nil || c.in(5) != nil {
		return nil, c.refuse("past_key and past_value (a KV cache) are not supported yet")
	}
	if c.attrFloat("softcap", 0) != 0 {
		return nil, c.refuse("softcap %v: gpucc's attention has no softcap", c.attrFloat("softcap", 0))
	}
	if m := c.attrInt("qk_matmul_output_mode", 0); m != 0 {
		return nil, c.refuse("qk_matmul_output_mode %d", m)
	}
	var qkv [3]ir.Tensor
	for k := range qkv {
		t, err := c.rtIn(k)
		if err != nil {
			return nil, err
		}
		qkv[k] = t
	}
	q, k, v := qkv[0], qkv[1], qkv[2]
	three := len(q.Shape()) == 3
	if three {
		heads := []int64{c.attrInt("q_num_heads", 0), c.attrInt("kv_num_heads", 0), c.attrInt("kv_num_heads", 0)}
		for j, x := range []*ir.Tensor{&q, &k, &v} {
			s := x.Shape()
			h := int(heads[j])
			if len(s) != 3 || h < 1 || s[2]%h != 0 {
				return nil, c.invalid("3-D input %d of shape %v needs q_num_heads and kv_num_heads dividing its last dimension", j, s)
			}
			*x = x.Reshape(ir.Shape{s[0], s[1], h, s[2] / h}).Permute(0, 2, 1, 3)
		}
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	if len(qs) != 4 || len(ks) != 4 || len(vs) != 4 {
		return nil, c.invalid("Q, K and V must be 3-D or 4-D, got %v, %v, %v", qs, ks, vs)
	}
	if ks[1] < 1 || ks[1] != vs[1] || qs[1]%ks[1] != 0 {
		return nil, c.invalid("%d query heads over %d key and %d value heads: the query heads must be a multiple of the key heads, which the value heads equal", qs[1], ks[1], vs[1])
	}
	scale := float32(1 / math.Sqrt(float64(qs[3])))
	if a := c.attr("scale"); a != nil {
		scale = a.f
	}
	r := float32(math.Sqrt(float64(scale)))
	present := []ir.Tensor{k, v}
	k = k.MulScalar(r)             // before the repeat, which ir.GroupAttention then reads in place
	if n := qs[1] / ks[1]; n > 1 { // grouped-query attention: repeat each head n times
		for _, x := range []*ir.Tensor{&k, &v} {
			s := x.Shape()
			*x = x.Reshape(ir.Shape{s[0], s[1], 1, s[2], s[3]}).Broadcast(ir.Shape{s[0], s[1], n, s[2], s[3]}).Reshape(ir.Shape{s[0], s[1] * n, s[2], s[3]})
		}
	}
	causal := c.attrInt("is_causal", 0) != 0
	if causal && qs[2] != ks[2] {
		return nil, c.refuse("is_causal with %d queries and %d keys: gpucc's causal mask is defined for square scores only", qs[2], ks[2])
	}
	mask := c.b.Full(ir.Shape{}, float32(math.Copysign(0, -1))) // adds nothing
	if in := c.in(3); in != nil {
		isBool := in.isBool || !in.set && in.c != nil && in.c.Type == Bool
		if !isBool && (in.isInt || in.set && in.rt.DType() != ir.F32 || !in.set && in.c != nil && in.c.Type != Float32) {
			return nil, c.refuse("an attn_mask of integers: gpucc adds a float32 mask or a boolean one")
		}
		m, err := c.rtIn(3)
		if err != nil {
			return nil, err
		}
		mask = m
		if isBool { // 1 keeps, 0 masks: mask(1 - m, -Inf) is -0 or -Inf
			mask = not(m).Apply(ir.OpMask, c.b.Full(ir.Shape{}, float32(math.Inf(-1))).Broadcast(m.Shape()))
		}
	}
	y := q.MulScalar(r).Attention(k, v, mask, 1, causal)
	if three { // back to [B,S,H·E]
		s := y.Shape()
		y = y.Permute(0, 2, 1, 3).Reshape(ir.Shape{s[0], s[2], s[1] * s[3]})
	}
	return []value{rtValue(y), rtValue(present[0]), rtValue(present[1])}, nil
}

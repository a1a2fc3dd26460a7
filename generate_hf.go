package gpucc

import (
	"context"
	"fmt"
	"slices"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// The attention_mask convention (issue 33): optimum's and
// transformers.js's decoder exports take
//
//   - input_ids: int64 [batch, seq];
//   - attention_mask: int64 [batch, past_len + seq], 1 for a token and 0
//     for padding;
//   - position_ids (optional): int64 [batch, seq];
//   - past_key_values.N.key / .value: float32 [batch, heads, past_len,
//     head_dim], a cache that grows a row a step (present.N.key =
//     Concat(past, row));
//
// and give logits [batch, seq, vocab] and present.N.key / .value. A model
// with an input named attention_mask is taken in this convention:
// NewDecoder binds its axes (batch DecoderOptions.Batch, seq 1: one
// token a step, as a decoding loop feeds it after the prompt),
// specializes it with attention_mask's keys at the cache's rows, and
// rewrites the growing cache into a static one (generate_static.go),
// adding the `position` input that the rewrite's write and length mask
// read. Each step then feeds, from the step's position p and each
// prompt's left padding k (GenerateBatch):
//
//   - attention_mask: 1 at rows k … p, 0 elsewhere (padding, and the rows
//     past p that the step has not written), as Hugging Face's mask of a
//     left-padded batch over the cache's rows;
//   - position_ids: p - k, transformers' cumsum(attention_mask) - 1 at
//     the step's row (1 for a padding row, as its masked_fill);
//   - position: p, the cache row the step writes.
//
// An optimum merged decoder's use_cache_branch (bool [1], the If between
// the step with a cache and the first step without) is fixed to true at
// every specialization: the rewrite's first step reads the static cache's
// zero rows, masked, where the model's other branch would take no past.
// The one executable then serves every step. With DecoderOptions.Prefill
// a second executable takes the prompts' steps at once: the model
// specialized to Prefill tokens a prompt over a past of one row (masked
// out by attention_mask's column 0: a past of 0 rows would be an empty
// tensor), its presents' rows 1 … Prefill loaded as the cache's rows 0 …
// Prefill-1; the model's own mask must be causal at seq > 1. A model without
// position_ids must compute its positions from nothing that depends on
// the cache's length (GPT-2's arange(past_len, past_len + seq) does):
// otherwise the rewrite's check refuses it, naming position_ids. Masks
// of other shapes (a 4-D mask, fixed key counts) are unsupported by name.

// attentionMask returns the step's attention_mask, [len(pads), rows]:
// row b is 1 at pads[b] … position and 0 elsewhere.
func attentionMask(rows int, position int64, pads []int) []int64 {
	m := make([]int64, len(pads)*rows)
	for b, k := range pads {
		for j := k; j <= int(position) && j < rows; j++ {
			m[b*rows+j] = 1
		}
	}
	return m
}

// positionIDs returns the step's position_ids, [len(pads), 1]: position
// less each prompt's padding, and 1 on a padding row (transformers'
// position_ids.masked_fill_(attention_mask == 0, 1)).
func positionIDs(position int64, pads []int) []int64 {
	ids := make([]int64, len(pads))
	for b, k := range pads {
		ids[b] = position - int64(k)
		if ids[b] < 0 {
			ids[b] = 1
		}
	}
	return ids
}

// convention says which step convention the Decoder took, for Explain.
func (d *Decoder) convention() string {
	if !d.hf {
		return "convention: input_ids and position (one element each), past_key_values.N.key/.value -> logits, present.N.key/.value"
	}
	pid := "position_ids [batch, 1] fed as the step's position less the prompt's left padding"
	if d.pidShp == nil {
		pid = "no position_ids (the model computes its positions itself, from nothing that depends on the cache's length)"
	}
	mask := "attention_mask [batch, max_len] fed as 1 at the prompt's rows up to the step's position, 0 for padding and the rows past it"
	if d.maskShp == nil {
		mask = "attention_mask read by nothing"
	}
	if d.merged {
		pid += "; use_cache_branch fixed to true (an optimum merged decoder: its If takes the branch with a cache)"
	}
	pre := "; prefill: a step a token"
	if d.prefill != nil {
		pre = fmt.Sprintf("; prefill: the prompts as one step of %d tokens each (left-padded; a second executable, over a past of one masked row)", d.prefillLen)
	}
	return fmt.Sprintf("convention: optimum/transformers.js (input_ids [batch, seq], attention_mask, position_ids, past_key_values.N.key/.value -> logits, present.N.key/.value), bound at batch %d and seq 1: %s; %s; the cache's write row and length mask at the step's position%s", d.batch, mask, pid, pre)
}

// compilePrefill compiles the prefill (DecoderOptions.Prefill): the model
// specialized to n tokens a prompt over a past of one row, which the
// prefill's attention_mask masks out (a past of 0 rows would be an empty
// tensor), shapes being the decoder's own.
func (d *Decoder) compilePrefill(ctx context.Context, m *onnx.Model, shapes map[string][]int, n int) error {
	switch {
	case n < 0 || n > d.maxLen:
		return ir.Errorf(ir.CodeInvalidInput, -1, "prefill", "decoding: a prefill of %d tokens; want 1 to max_len %d", n, d.maxLen)
	case !d.hf || d.grown == nil:
		return ir.Errorf(ir.CodeUnsupported, -1, "prefill", "decoding: a prefill needs the attention_mask convention and a cache that grows (its step of several tokens writes them after the past)")
	}
	s := map[string][]int{}
	for name, sh := range shapes {
		s[name] = slices.Clone(sh)
	}
	s[StepInputIDs] = []int{d.batch, n}
	if _, ok := s[StepPositionIDs]; ok {
		s[StepPositionIDs] = []int{d.batch, n}
	}
	s[StepAttentionMask] = []int{d.batch, n + 1}
	for _, p := range d.pairs {
		s[p.Past][2] = 1
	}
	g, err := m.Specialize(ctx, s)
	if err != nil {
		return err
	}
	for _, o := range g.Outputs {
		sh := g.Nodes[o.ID].Shape
		if o.Name == StepLogits && sh.Len() != d.batch*n*d.vocab {
			return ir.Errorf(ir.CodeUnsupported, -1, "prefill", "decoding: the prefill's logits are %v; want [batch %d, %d tokens, vocab %d]", sh, d.batch, n, d.vocab)
		}
		for _, p := range d.pairs {
			if want := (ir.Shape{p.Shape[0], p.Shape[1], n + 1, p.Shape[3]}); o.Name == p.Present && !sh.Equal(want) {
				return ir.Errorf(ir.CodeUnsupported, -1, "prefill", "decoding: the prefill's %s is %v; want %v", ir.Quote(p.Present), sh, want)
			}
		}
	}
	d.prefillIn = map[string]bool{}
	for _, nd := range g.Nodes {
		if nd.Op == ir.OpInput && nd.Name != "" {
			d.prefillIn[nd.Name] = true
		}
	}
	if d.prefill, err = d.rt.Compile(ctx, g); err != nil {
		return err
	}
	d.prefillLen = n
	return nil
}

// prefill runs the prompts (toks, each padded on the left by pads) as one
// step and loads the cache with their rows 0 … prefillLen-1; it returns
// the logits by position, then prompt: [prefillLen][batch][vocab].
func (c *kvCache) prefill(ctx context.Context, toks [][]int64, pads []int) ([]float32, error) {
	d, n, B := c.d, c.d.prefillLen, c.d.batch
	ids := make([]int64, B*n)
	pos := make([]int64, B*n)
	mask := make([]int64, B*(n+1)) // column 0: the past's one row, masked out
	for b := range B {
		for j := range n {
			pos[b*n+j] = 1 // a padding row's, as transformers' masked_fill
			if j >= pads[b] {
				ids[b*n+j], pos[b*n+j], mask[b*(n+1)+j+1] = toks[b][j-pads[b]], int64(j-pads[b]), 1
			}
		}
	}
	in := Inputs{}
	for name, t := range map[string]Tensor{
		StepInputIDs:      {Shape: []int{B, n}, DType: ir.I64, Ints: ids},
		StepPositionIDs:   {Shape: []int{B, n}, DType: ir.I64, Ints: pos},
		StepAttentionMask: {Shape: []int{B, n + 1}, DType: ir.I64, Ints: mask},
	} {
		if d.prefillIn[name] {
			in[name] = t
		}
	}
	for _, p := range d.pairs {
		sh := ir.Shape{p.Shape[0], p.Shape[1], 1, p.Shape[3]}
		in[p.Past] = Tensor{Shape: sh, Data: make([]float32, sh.Len())}
	}
	res, err := d.prefill.RunWith(ctx, in, RunOptions{})
	if err != nil {
		return nil, err
	}
	lg, V := res.Outputs[StepLogits].Data, d.vocab
	if len(lg) != B*n*V {
		return nil, &Error{Code: ir.CodeInternal, Backend: res.Backend, Err: fmt.Errorf("decoding: the prefill returned %d logits, want %d", len(lg), B*n*V)}
	}
	logits := make([]float32, 0, len(lg))
	for j := range n {
		for b := range B {
			logits = append(logits, lg[(b*n+j)*V:(b*n+j+1)*V]...)
		}
	}
	for _, p := range d.pairs { // rows 1 … n of the present are the cache's rows 0 … n-1
		pr := res.Outputs[p.Present].Data
		sh := p.Shape // [batch, heads, maxLen, head_dim]
		rows, D := sh[2], sh[3]
		if len(pr) != sh[0]*sh[1]*(n+1)*D {
			return nil, &Error{Code: ir.CodeInternal, Backend: res.Backend, Err: fmt.Errorf("decoding: the prefill returned no %s of %d rows", p.Present, n+1)}
		}
		data := make([]float32, sh.Len())
		for bh := range sh[0] * sh[1] {
			copy(data[bh*rows*D:bh*rows*D+n*D], pr[(bh*(n+1)+1)*D:(bh+1)*(n+1)*D])
		}
		if c.dev == nil {
			c.host[p.Past] = Tensor{Shape: sh, Data: data}
			continue
		}
		t, err := d.rt.Upload(ctx, sh, data)
		if err != nil {
			return nil, err
		}
		c.dev[p.Past].Release()
		c.dev[p.Past] = t
	}
	return logits, nil
}

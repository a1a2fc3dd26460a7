package gpucc

import "fmt"

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
// The one executable then serves every step. A model without
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
	return fmt.Sprintf("convention: optimum/transformers.js (input_ids [batch, seq], attention_mask, position_ids, past_key_values.N.key/.value -> logits, present.N.key/.value), bound at batch %d and seq 1: %s; %s; the cache's write row and length mask at the step's position", d.batch, mask, pid)
}

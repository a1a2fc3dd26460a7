package gpucc_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// TestGenerateAttentionMaskConvention: gpt2kv_hf.onnx (hf_kv.py: the
// fixture's step in optimum's and transformers.js's convention, input_ids
// [batch, seq], attention_mask [batch, past+seq], position_ids, a cache
// that grows, transformers' additive padding mask) decodes with one
// executable, attention_mask, position_ids and the cache's write row fed
// from the step's position, giving the static fixture's tokens and every
// step's logits bit for bit, on cpu and every backend that runs typed
// graphs. gpt2kv_hf_merged.onnx, optimum's merged form (use_cache_branch
// and an If), gives the same with use_cache_branch fixed to true. Explain
// names the convention. (Without the binding NewDecoder refuses
// attention_mask, position_ids and use_cache_branch as none of the step's
// inputs.)
func TestGenerateAttentionMaskConvention(t *testing.T) {
	toks := intTensor(t, filepath.Join(kvDir, "gpt2kv.tokens.npy")).Ints
	steps := kvSteps
	if testing.Short() {
		steps = 16
	}
	for _, model := range []string{"gpt2kv_hf.onnx", "gpt2kv_hf_merged.onnx"} {
		raw, err := os.ReadFile(filepath.Join(kvDir, model))
		if err != nil {
			t.Fatal(err)
		}
		for _, backend := range append([]string{"cpu"}, typedBackends...) {
			t.Run(model+"/"+backend, func(t *testing.T) {
				static := kvDecoder(t, backend)
				rt := open(t, backend, func(o *gpucc.Options) { o.Limits = kvLimits })
				d, err := rt.NewDecoder(context.Background(), kvModel(t, raw), gpucc.DecoderOptions{MaxLen: kvMaxLen})
				if err != nil {
					t.Fatal(err)
				}
				defer d.Release()
				e := d.Explain()
				if !strings.Contains(e, "convention: optimum/transformers.js") || !strings.Contains(e, "bound at batch 1 and seq 1") ||
					!strings.Contains(e, "position_ids [batch, 1] fed") || !strings.Contains(e, "rewritten to a static cache of 128 rows") || !strings.Contains(e, "attention: 2 fused") ||
					strings.Contains(e, "use_cache_branch fixed to true") != (model == "gpt2kv_hf_merged.onnx") {
					t.Errorf("Explain = %q", e)
				}
				opts := gpucc.GenerateOptions{Tokens: steps, Logits: true}
				want, err := static.Generate(context.Background(), toks[:kvPrompt], opts)
				if err != nil {
					t.Fatal(err)
				}
				got, err := d.Generate(context.Background(), toks[:kvPrompt], opts)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Tokens, want.Tokens) || !slices.Equal(got.Tokens, toks[kvPrompt:kvPrompt+steps]) {
					t.Fatalf("tokens %v\nstatic %v\nPyTorch float64 %v", got.Tokens, want.Tokens, toks[kvPrompt:kvPrompt+steps])
				}
				sameLogits(t, got.Logits, want.Logits)
			})
		}
	}
}

// sameLogits fails t unless got and want hold the same steps' logits bit
// for bit.
func sameLogits(t *testing.T, got, want [][]float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d steps' logits, want %d", len(got), len(want))
	}
	for s := range want {
		for i := range want[s] {
			if math.Float32bits(got[s][i]) != math.Float32bits(want[s][i]) {
				t.Fatalf("step %d logit %d: %v, want %v", s, i, got[s][i], want[s][i])
			}
		}
	}
}

// TestAttentionMaskConventionRefused: what the attention_mask convention
// cannot bind is unsupported, by name: gpt2kv_hf_pastpos.onnx (no
// position_ids; its positions arange(past_len, past_len + seq) come from
// the cache's length) names position_ids; gpt2kv_hf_mask4d.onnx (the
// caller's 4-D float additive mask as attention_mask) names
// attention_mask; a batch above one without an attention_mask names
// attention_mask.
func TestAttentionMaskConventionRefused(t *testing.T) {
	ctx := context.Background()
	rt := open(t, "cpu", func(o *gpucc.Options) { o.Limits = kvLimits })
	raw, err := os.ReadFile(filepath.Join(kvDir, "gpt2kv_hf_pastpos.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.NewDecoder(ctx, kvModel(t, raw), gpucc.DecoderOptions{MaxLen: 16})
	if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "no input position_ids") || !strings.Contains(err.Error(), "depends on the cache's length") {
		t.Errorf("positions from the cache's length: %v; want unsupported naming position_ids", err)
	}
	raw, err = os.ReadFile(filepath.Join(kvDir, "gpt2kv_hf_mask4d.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.NewDecoder(ctx, kvModel(t, raw), gpucc.DecoderOptions{MaxLen: 16})
	if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "input \"attention_mask\" is float32, want int64") {
		t.Errorf("a 4-D float attention_mask: %v; want unsupported naming attention_mask", err)
	}
	_, err = rt.NewDecoder(ctx, kvModel(t, nil), gpucc.DecoderOptions{MaxLen: 16, Batch: 2})
	if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "no input \"attention_mask\"") {
		t.Errorf("a batch of 2 without attention_mask: %v; want unsupported naming attention_mask", err)
	}
}

// hfBatch is TestGenerateBatch's and TestGeneratePrefill's fixture:
// gpt2kv_hf.onnx, three prompts of 8, 3 and 5 of the fixture's tokens, and
// the steps to decode (fewer under -short).
func hfBatch(t *testing.T) (raw []byte, prompts [][]int64, steps int) {
	t.Helper()
	toks := intTensor(t, filepath.Join(kvDir, "gpt2kv.tokens.npy")).Ints
	raw, err := os.ReadFile(filepath.Join(kvDir, "gpt2kv_hf.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	steps = 24
	if testing.Short() {
		steps = 8
	}
	return raw, [][]int64{toks[:kvPrompt], toks[10:13], toks[20:25]}, steps
}

// TestGenerateBatch: three prompts of 8, 3 and 5 tokens decoded as one
// batch through gpt2kv_hf.onnx (left-padded to 8, the padding masked by
// attention_mask, position_ids counting from each prompt's first token)
// give each prompt the tokens and every step's logits of decoding it
// alone with the static fixture, bit for bit, on cpu and every backend
// that runs typed graphs: the masked keys add exact zeros to attention's
// ascending sums, and each row of the batch's matmuls sums in the same
// order as one row alone. (Without the padding mask, the shorter prompts'
// logits differ from the first padded step on.)
func TestGenerateBatch(t *testing.T) {
	raw, prompts, steps := hfBatch(t)
	for _, backend := range append([]string{"cpu"}, typedBackends...) {
		t.Run(backend, func(t *testing.T) {
			static := kvDecoder(t, backend)
			rt := open(t, backend, func(o *gpucc.Options) { o.Limits = kvLimits })
			d, err := rt.NewDecoder(context.Background(), kvModel(t, raw), gpucc.DecoderOptions{MaxLen: kvMaxLen, Batch: len(prompts)})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Release()
			if e := d.Explain(); !strings.Contains(e, "bound at batch 3 and seq 1") {
				t.Errorf("Explain = %q", e)
			}
			opts := gpucc.GenerateOptions{Tokens: steps, Logits: true}
			gens, err := d.GenerateBatch(context.Background(), prompts, opts)
			if err != nil {
				t.Fatal(err)
			}
			for b, prompt := range prompts {
				want, err := static.Generate(context.Background(), prompt, opts)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(gens[b].Tokens, want.Tokens) {
					t.Fatalf("prompt %d: tokens %v in the batch, %v alone", b, gens[b].Tokens, want.Tokens)
				}
				if len(gens[b].StepMs) != len(prompt)+steps-1 {
					t.Errorf("prompt %d: %d step times, want %d", b, len(gens[b].StepMs), len(prompt)+steps-1)
				}
				sameLogits(t, gens[b].Logits, want.Logits)
			}
		})
	}
}

// TestGenerateBatchRefuses: a batch's prompts are checked as one prompt
// is, each named by its index, and the count must be the decoder's batch.
func TestGenerateBatchRefuses(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(kvDir, "gpt2kv_hf.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	rt := open(t, "cpu", func(o *gpucc.Options) { o.Limits = kvLimits })
	ctx := context.Background()
	d, err := rt.NewDecoder(ctx, kvModel(t, raw), gpucc.DecoderOptions{MaxLen: 8, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	for _, c := range []struct {
		name    string
		prompts [][]int64
		tokens  int
		field   string
		words   string
	}{
		{"one prompt", [][]int64{{1, 2}}, 2, "batch", "1 prompts; the decoder's batch is 2"},
		{"three prompts", [][]int64{{1}, {2}, {3}}, 2, "batch", "3 prompts"},
		{"an empty prompt", [][]int64{{1, 2}, {}}, 2, "prompt", "prompt 1 is empty"},
		{"an id past the vocabulary", [][]int64{{1, 2}, {3, 256}}, 2, "prompt", "prompt 1's token 1 is 256"},
		{"the longest prompt past max_len", [][]int64{{1, 2, 3, 4, 5, 6, 7}, {1}}, 3, "max_len", "a prompt of 7 tokens"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := d.GenerateBatch(ctx, c.prompts, gpucc.GenerateOptions{Tokens: c.tokens})
			var ie *ir.Error
			if gpucc.CodeOf(err) != ir.CodeInvalidInput || !errors.As(err, &ie) || ie.Field != c.field || !strings.Contains(err.Error(), c.words) {
				t.Errorf("err %v; want invalid_input on %s saying %q", err, c.field, c.words)
			}
		})
	}
	// The last row fits: the longest prompt's 7 and 2 generated fill positions 0 … 7.
	if gens, err := d.GenerateBatch(ctx, [][]int64{{1, 2, 3, 4, 5, 6, 7}, {1}}, gpucc.GenerateOptions{Tokens: 2}); err != nil || len(gens[1].Tokens) != 2 {
		t.Errorf("a batch filling the cache to its last row: %v", err)
	}
	p, err := rt.NewDecoder(ctx, kvModel(t, raw), gpucc.DecoderOptions{MaxLen: 8, Batch: 2, Prefill: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if _, err := p.GenerateBatch(ctx, [][]int64{{1, 2, 3, 4, 5}, {1}}, gpucc.GenerateOptions{Tokens: 1}); gpucc.CodeOf(err) != ir.CodeInvalidInput || !strings.Contains(err.Error(), "prefill takes at most 4") {
		t.Errorf("a prompt longer than the prefill: %v; want invalid_input", err)
	}
	if !strings.Contains(p.Explain(), "prefill: the prompts as one step of 4 tokens") || !strings.Contains(d.Explain(), "prefill: a step a token") {
		t.Errorf("Explain = %q and %q", p.Explain(), d.Explain())
	}
	if _, err := rt.NewDecoder(ctx, kvModel(t, raw), gpucc.DecoderOptions{MaxLen: 8, Batch: 2, Prefill: 9}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("a prefill past max_len: %v; want invalid_input", err)
	}
	if _, err := rt.NewDecoder(ctx, kvModel(t, nil), gpucc.DecoderOptions{MaxLen: 8, Prefill: 4}); gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "attention_mask convention") {
		t.Errorf("a prefill of the position convention: %v; want unsupported", err)
	}
	if _, err := d.Generate(ctx, []int64{1}, gpucc.GenerateOptions{Tokens: 1}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("Generate on a batch of 2: %v; want invalid_input", err)
	}
	if _, err := rt.NewDecoder(ctx, kvModel(t, raw), gpucc.DecoderOptions{MaxLen: 8, Batch: gpucc.MaxDecoderBatch + 1}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("a batch past MaxDecoderBatch: %v; want invalid_input", err)
	}
}

// TestGeneratePrefill: the prompts of TestGenerateBatch run as one step of
// 8 tokens each (DecoderOptions.Prefill: a second executable of seq 8
// over a past of one masked row, the model's own causal mask over its
// keys), then decode a token a step: each prompt gets the tokens and every
// step's logits (the prefill's 8 rows, then the decoding's) of decoding it
// alone a token a step, bit for bit, on cpu and every backend that runs
// typed graphs. Each row of the prefill's matmuls sums in the order of one
// row alone, and the masked keys (the past's row, padding, the keys past
// the diagonal) add exact zeros to attention's ascending sums. This holds
// because attention takes one order at the prefill's 9 keys and the
// decoding's 128 (ir.AttentionOnlineFrom is 1): were the threshold
// between them, the prefill's rows would take the full-row order and the
// decoding's the online one, within a few units in the last place of
// each other, not their bits.
func TestGeneratePrefill(t *testing.T) {
	raw, prompts, steps := hfBatch(t)
	for _, backend := range append([]string{"cpu"}, typedBackends...) {
		t.Run(backend, func(t *testing.T) {
			static := kvDecoder(t, backend)
			rt := open(t, backend, func(o *gpucc.Options) { o.Limits = kvLimits })
			d, err := rt.NewDecoder(context.Background(), kvModel(t, raw), gpucc.DecoderOptions{MaxLen: kvMaxLen, Batch: len(prompts), Prefill: kvPrompt})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Release()
			opts := gpucc.GenerateOptions{Tokens: steps, Logits: true}
			gens, err := d.GenerateBatch(context.Background(), prompts, opts)
			if err != nil {
				t.Fatal(err)
			}
			for b, prompt := range prompts {
				want, err := static.Generate(context.Background(), prompt, opts)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(gens[b].Tokens, want.Tokens) {
					t.Fatalf("prompt %d: tokens %v after the prefill, %v alone", b, gens[b].Tokens, want.Tokens)
				}
				sameLogits(t, gens[b].Logits, want.Logits)
			}
		})
	}
}

// TestGenerateStop: a stop id ends a prompt's generation at its first
// occurrence, kept as its last token (Stopped set), with the logits of
// the steps up to it; in a batch the other prompts decode on, their
// tokens and logits unchanged, and decoding ends when every prompt has
// stopped.
func TestGenerateStop(t *testing.T) {
	toks := intTensor(t, filepath.Join(kvDir, "gpt2kv.tokens.npy")).Ints
	raw, err := os.ReadFile(filepath.Join(kvDir, "gpt2kv_hf.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	static := kvDecoder(t, "cpu")
	full, err := static.Generate(ctx, toks[:kvPrompt], gpucc.GenerateOptions{Tokens: 16, Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	stop := full.Tokens[4] // 102: its first occurrence
	if slices.Index(full.Tokens, stop) != 4 {
		t.Fatalf("the fixture's tokens %v", full.Tokens)
	}
	gen, err := static.Generate(ctx, toks[:kvPrompt], gpucc.GenerateOptions{Tokens: 16, Logits: true, Stop: []int64{999, stop}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gen.Tokens, full.Tokens[:5]) || !gen.Stopped || len(gen.Logits) != kvPrompt+4 || len(gen.StepMs) != kvPrompt+4 {
		t.Errorf("stopped at %d: tokens %v (stopped %v), %d logits, %d steps; want %v, %d", stop, gen.Tokens, gen.Stopped, len(gen.Logits), len(gen.StepMs), full.Tokens[:5], kvPrompt+4)
	}
	sameLogits(t, gen.Logits, full.Logits[:kvPrompt+4])
	rt := open(t, "cpu", func(o *gpucc.Options) { o.Limits = kvLimits })
	d, err := rt.NewDecoder(ctx, kvModel(t, raw), gpucc.DecoderOptions{MaxLen: kvMaxLen, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	other, err := static.Generate(ctx, toks[10:13], gpucc.GenerateOptions{Tokens: 16, Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(other.Tokens, stop) {
		t.Fatalf("the other prompt's tokens %v hold the stop id", other.Tokens)
	}
	gens, err := d.GenerateBatch(ctx, [][]int64{toks[:kvPrompt], toks[10:13]}, gpucc.GenerateOptions{Tokens: 16, Logits: true, Stop: []int64{stop}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gens[0].Tokens, full.Tokens[:5]) || !gens[0].Stopped || !slices.Equal(gens[1].Tokens, other.Tokens) || gens[1].Stopped {
		t.Errorf("a batch: tokens %v (stopped %v) and %v (stopped %v); want %v and %v", gens[0].Tokens, gens[0].Stopped, gens[1].Tokens, gens[1].Stopped, full.Tokens[:5], other.Tokens)
	}
	sameLogits(t, gens[1].Logits, other.Logits)
	// Both stop: the second at its third token.
	gens, err = d.GenerateBatch(ctx, [][]int64{toks[:kvPrompt], toks[10:13]}, gpucc.GenerateOptions{Tokens: 16, Stop: []int64{stop, other.Tokens[2]}})
	if err != nil {
		t.Fatal(err)
	}
	if len(gens[0].Tokens) != 5 || len(gens[1].Tokens) > 3 || !gens[1].Stopped || len(gens[0].StepMs) != kvPrompt+4 {
		t.Errorf("both stop: tokens %v and %v, %d steps", gens[0].Tokens, gens[1].Tokens, len(gens[0].StepMs))
	}
}

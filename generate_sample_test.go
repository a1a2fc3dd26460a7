package gpucc_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// TestGenerateSample: sampling with a seed gives cpu's tokens and logits
// on every backend that runs typed graphs (the logits are the same bits,
// the draw is on the host); top_k 1 is the greedy decoding; another seed
// gives other tokens; bad settings are invalid_input.
func TestGenerateSample(t *testing.T) {
	toks := intTensor(t, filepath.Join(kvDir, "gpt2kv.tokens.npy")).Ints
	ctx := context.Background()
	cpu := kvDecoder(t, "cpu")
	opts := gpucc.GenerateOptions{Tokens: 16, Logits: true, Temperature: 1, Seed: 7}
	want, err := cpu.Generate(ctx, toks[:kvPrompt], opts)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(want.Tokens, toks[kvPrompt:kvPrompt+16]) {
		t.Fatalf("sampled tokens %v are the greedy ones", want.Tokens)
	}
	again, err := cpu.Generate(ctx, toks[:kvPrompt], opts)
	if err != nil || !slices.Equal(again.Tokens, want.Tokens) {
		t.Fatalf("the same seed: %v, %v; want %v", again.Tokens, err, want.Tokens)
	}
	other := opts
	other.Seed = 8
	if g, err := cpu.Generate(ctx, toks[:kvPrompt], other); err != nil || slices.Equal(g.Tokens, want.Tokens) {
		t.Errorf("seed 8: %v, %v; want other tokens than seed 7's %v", g.Tokens, err, want.Tokens)
	}
	greedy := opts
	greedy.TopK = 1
	if g, err := cpu.Generate(ctx, toks[:kvPrompt], greedy); err != nil || !slices.Equal(g.Tokens, toks[kvPrompt:kvPrompt+16]) {
		t.Errorf("top_k 1: %v, %v; want the greedy %v", g.Tokens, err, toks[kvPrompt:kvPrompt+16])
	}
	for _, backend := range typedBackends {
		t.Run(backend, func(t *testing.T) {
			got, err := kvDecoder(t, backend).Generate(ctx, toks[:kvPrompt], opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Tokens, want.Tokens) {
				t.Fatalf("tokens %v, cpu's %v", got.Tokens, want.Tokens)
			}
			sameLogits(t, got.Logits, want.Logits)
		})
	}
	for _, c := range []struct {
		name  string
		o     gpucc.GenerateOptions
		field string
	}{
		{"negative temperature", gpucc.GenerateOptions{Tokens: 2, Temperature: -1}, "temperature"},
		{"NaN temperature", gpucc.GenerateOptions{Tokens: 2, Temperature: math.NaN()}, "temperature"},
		{"infinite temperature", gpucc.GenerateOptions{Tokens: 2, Temperature: math.Inf(1)}, "temperature"},
		{"negative top_k", gpucc.GenerateOptions{Tokens: 2, Temperature: 1, TopK: -1}, "top_k"},
	} {
		_, err := cpu.Generate(ctx, toks[:2], c.o)
		var ie *ir.Error
		if gpucc.CodeOf(err) != ir.CodeInvalidInput || !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%s: %v; want invalid_input on %s", c.name, err, c.field)
		}
	}
}

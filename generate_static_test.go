package gpucc_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestGenerateGrowingCache: gpt2kv_grow.onnx (grow_kv.py: the fixture's
// step with a cache that grows a row a step, Concat(past, row)) decodes
// through the static-cache rewrite with one executable, giving the static
// fixture's tokens and every step's logits bit for bit, on cpu and every
// backend that runs typed graphs. (Without the rewrite NewDecoder refuses
// the model: its presents are a row longer than its pasts.) Explain says
// so, and that both run their 2 attentions fused (the static fixture's
// masked_fill over slots > position ran the unfused chain before ef5c426).
// So does gpt2kv_bias.onnx (bias_kv.py: the same step masking its scores
// as transformers' GPT-2 export writes it, Where(a slice of the causal
// bias buffer, scores, float32's lowest)), whose Where the importer folds
// (its condition is all true at one token a step): it was refused before,
// its unfused matmul reading the cache.
func TestGenerateGrowingCache(t *testing.T) {
	toks := intTensor(t, filepath.Join(kvDir, "gpt2kv.tokens.npy")).Ints
	steps := kvSteps
	if testing.Short() {
		steps = 16
	}
	for _, fixture := range []string{"gpt2kv_grow", "gpt2kv_bias"} {
		raw, err := os.ReadFile(filepath.Join(kvDir, fixture+".onnx"))
		if err != nil {
			t.Fatal(err)
		}
		for _, backend := range append([]string{"cpu"}, typedBackends...) {
			t.Run(fixture+"/"+backend, func(t *testing.T) {
				growingCase(t, raw, backend, toks, steps, false)
			})
		}
	}
}

// TestGenerateScatterCache: with DecoderOptions.ScatterCache, webgpu
// writes each present of the growing fixtures as a scatter of the row
// into its donated past, in place (generate_static.go): the static
// fixture's tokens and every step's logits bit for bit as with the
// select, Explain saying so, 36 kernels a step (the copies left out when
// donated), and a step's kernels writing 11,788 bytes, the four rows
// 1,024 of them, where the select writes 141,316.
func TestGenerateScatterCache(t *testing.T) {
	toks := intTensor(t, filepath.Join(kvDir, "gpt2kv.tokens.npy")).Ints
	for _, fixture := range []string{"gpt2kv_grow", "gpt2kv_bias"} {
		raw, err := os.ReadFile(filepath.Join(kvDir, fixture+".onnx"))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fixture, func(t *testing.T) { growingCase(t, raw, "webgpu", toks, 16, true) })
	}
}

// growingCase is TestGenerateGrowingCache of one fixture on one backend;
// with scatter, DecoderOptions.ScatterCache's (TestGenerateScatterCache).
func growingCase(t *testing.T, raw []byte, backend string, toks []int64, steps int, scatter bool) {
	static := kvDecoder(t, backend)
	rt := open(t, backend, func(o *gpucc.Options) { o.Limits = kvLimits })
	d, err := rt.NewDecoder(context.Background(), kvModel(t, raw), gpucc.DecoderOptions{MaxLen: kvMaxLen, ScatterCache: scatter})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	if e := d.Explain(); !strings.Contains(e, "rewritten to a static cache of 128 rows") || !strings.Contains(e, "4 caches") || !strings.Contains(e, "2 attention nodes") || !strings.Contains(e, "attention: 2 fused") {
		t.Errorf("Explain = %q", e)
	}
	if e := static.Explain(); !strings.Contains(e, "own static cache of 128 rows") || !strings.Contains(e, "attention: 2 fused attention nodes") {
		t.Errorf("the static fixture's Explain = %q", e)
	}
	// The step's kernels: 27 on webgpu (33 before the write mask was
	// float32, 30 before the QKV splits were read in place; 36 with
	// ScatterCache: each cache's scatter is a copy and an apply, the copy
	// left out where the past is donated, and the position's index two
	// moves, and the splits are typed code's copies), 21 on native and
	// wasm (27 before the splits were read in place;
	// TestStaticCacheStepCost counts their bytes).
	explain := map[string]string{"webgpu": "\nstep: 27 kernels (", "native": "\nstep: 21 kernels in 1", "wasm": "\nstep: 21 kernels in 1"}[backend]
	if scatter {
		explain = "\nstep: 36 kernels ("
		if !strings.Contains(d.Explain(), "only the row written") {
			t.Errorf("Explain = %q, want the scatter's write", d.Explain())
		}
	}
	if explain != "" && !strings.Contains(d.Explain(), explain) {
		t.Errorf("Explain = %q, want %q", d.Explain(), explain)
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
	// The bytes a step writes: each present whole (131,072 of 139,264 on
	// native and wasm, of 140,548 on webgpu; 1,536 and 768 more before the QKV
	// splits were read in place); with ScatterCache the rows alone (4 of
	// 256 bytes), the pasts donated and each present a scatter in place,
	// and the rest of the step.
	w := map[string]int64{"native": 139264, "wasm": 139264, "webgpu": 140548}[backend]
	if scatter {
		w = 11788
	}
	if got.StepBytesWritten != w || got.StepKernels == 0 && backend != "cpu" {
		t.Errorf("a step's %d kernels write %d bytes; want %d", got.StepKernels, got.StepBytesWritten, w)
	}
	if !slices.Equal(got.Tokens, want.Tokens) || !slices.Equal(got.Tokens, toks[kvPrompt:kvPrompt+steps]) {
		t.Fatalf("tokens %v\nstatic %v\nPyTorch float64 %v", got.Tokens, want.Tokens, toks[kvPrompt:kvPrompt+steps])
	}
	for s := range want.Logits {
		for i := range want.Logits[s] {
			if math.Float32bits(got.Logits[s][i]) != math.Float32bits(want.Logits[s][i]) {
				t.Fatalf("step %d logit %d: %v grown and rewritten, %v static", s, i, got.Logits[s][i], want.Logits[s][i])
			}
		}
	}
}

// TestGrowingCacheRefused: a growing cache read by anything but fused
// attention (the grown fixture imported with KeepAttention: the unfused
// chain's matmul reads the keys) is refused as unsupported, naming the
// reader; a max_len of 1 (a past of 0 rows to rewrite from) is
// invalid_input.
func TestGrowingCacheRefused(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(kvDir, "gpt2kv_grow.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	rt := open(t, "cpu", func(o *gpucc.Options) { o.Limits = kvLimits })
	m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{Limits: kvLimits, KeepAttention: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.NewDecoder(context.Background(), m, gpucc.DecoderOptions{MaxLen: 16})
	if gpucc.CodeOf(err) != ir.CodeUnsupported || !strings.Contains(err.Error(), "(matmul) reads the cache; only fused attention") {
		t.Errorf("unfused attention: %v; want unsupported naming the matmul", err)
	}
	_, err = rt.NewDecoder(context.Background(), kvModel(t, raw), gpucc.DecoderOptions{MaxLen: 1})
	if gpucc.CodeOf(err) != ir.CodeInvalidInput || !strings.Contains(err.Error(), "at least 2 rows") {
		t.Errorf("max_len 1: %v; want invalid_input", err)
	}
}

// TestGenerateGroupedCache: gqa_kv.onnx (gqa_kv.py: a growing cache read
// by grouped-query attention through repeat_kv's broadcast) decodes
// through the static-cache rewrite on every backend that runs typed
// graphs with cpu's tokens and every step's logits bit for bit, its one
// attention fused and reading the 2 shared heads in place
// (TestStaticCacheMatchesEachLength checks cpu's steps against the grown
// model's at each length). It was refused before: the broadcast read the
// cache.
func TestGenerateGroupedCache(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(kvDir, "gqa_kv.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	var want *gpucc.Generation
	for _, backend := range append([]string{"cpu"}, typedBackends...) {
		rt := open(t, backend, func(o *gpucc.Options) { o.Limits = kvLimits })
		d, err := rt.NewDecoder(context.Background(), kvModel(t, raw), gpucc.DecoderOptions{MaxLen: 16})
		if err != nil {
			t.Fatal(err)
		}
		if e := d.Explain(); !strings.Contains(e, "rewritten to a static cache of 16 rows") || !strings.Contains(e, "attention: 1 fused") {
			t.Errorf("%s: Explain = %q", backend, e)
		}
		got, err := d.Generate(context.Background(), []int64{1, 2, 3}, gpucc.GenerateOptions{Tokens: 12, Logits: true})
		d.Release()
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = got
			continue
		}
		if !slices.Equal(got.Tokens, want.Tokens) {
			t.Fatalf("%s: tokens %v, cpu %v", backend, got.Tokens, want.Tokens)
		}
		for s := range want.Logits {
			for i := range want.Logits[s] {
				if math.Float32bits(got.Logits[s][i]) != math.Float32bits(want.Logits[s][i]) {
					t.Fatalf("%s step %d logit %d: %v, cpu %v", backend, s, i, got.Logits[s][i], want.Logits[s][i])
				}
			}
		}
	}
}

package gpucc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// The decoding fixture (onnx/testdata/transformers/export_kv.py): GPT-2 of
// 2 blocks, one token a step against a static cache, its float64 greedy
// tokens (an 8-token prompt, then 64) and every step's logits.
var (
	kvDir    = filepath.Join("onnx", "testdata", "transformers")
	kvLimits = ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1e11, NonFinite: true}
)

const kvPrompt, kvSteps, kvMaxLen = 8, 64, 128

func kvModel(t *testing.T, raw []byte) *onnx.Model {
	t.Helper()
	if raw == nil {
		var err error
		if raw, err = os.ReadFile(filepath.Join(kvDir, "gpt2kv.onnx")); err != nil {
			t.Fatal(err)
		}
	}
	m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{Limits: kvLimits})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func kvDecoder(t *testing.T, backend string) *gpucc.Decoder {
	t.Helper()
	rt := open(t, backend, func(o *gpucc.Options) { o.Limits = kvLimits })
	d, err := rt.NewDecoder(context.Background(), kvModel(t, nil), gpucc.DecoderOptions{MaxLen: kvMaxLen})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Release)
	return d
}

// TestGenerateFixture: greedy decoding of the fixture's prompt gives
// PyTorch float64's 64 tokens on cpu (cpuref) and on every backend that
// runs typed graphs, with the cache kept on the device and through the
// host; every step's logits are within 1e-5 of the largest float64 logit
// of the step, and each backend's logits are cpu's bit for bit, on both
// paths.
func TestGenerateFixture(t *testing.T) {
	toks := intTensor(t, filepath.Join(kvDir, "gpt2kv.tokens.npy")).Ints
	ref := npyFile(t, filepath.Join(kvDir, "gpt2kv.logits.npy"))
	if len(toks) != kvPrompt+kvSteps || !slices.Equal(ref.Shape, []int{kvPrompt + kvSteps - 1, 256}) {
		t.Fatalf("fixture: %d tokens, logits %v", len(toks), ref.Shape)
	}
	var cpu [][]float32
	for _, backend := range append([]string{"cpu"}, typedBackends...) {
		t.Run(backend, func(t *testing.T) {
			d := kvDecoder(t, backend)
			for _, where := range []string{"device", "host"} {
				gpucc.HostCache(d, where == "host")
				var streamed []int64
				gen, err := d.Generate(context.Background(), toks[:kvPrompt], gpucc.GenerateOptions{Tokens: kvSteps, Logits: true,
					OnToken: func(i int, tok int64, ms float64) error {
						if i != len(streamed) || ms <= 0 {
							t.Errorf("OnToken(%d, %d, %v) after %d tokens", i, tok, ms, len(streamed))
						}
						streamed = append(streamed, tok)
						return nil
					}})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: cache on the %s, prefill %.1f ms, %.2f ms a token (median; dispatch %.2f, %s), compile %.0f ms", backend, gen.Cache, gen.PrefillMs, gen.DecodeMs, gen.DispatchMs, gen.DispatchClock, gen.CompileMs)
				if gen.Cache != where {
					t.Errorf("the cache lived on the %s, want the %s", gen.Cache, where)
				}
				if gen.DispatchMs <= 0 || gen.DispatchMs > gen.DecodeMs || gen.DispatchClock == "" {
					t.Errorf("dispatch %v ms (%q) of %v ms a step", gen.DispatchMs, gen.DispatchClock, gen.DecodeMs)
				}
				if !slices.Equal(gen.Tokens, toks[kvPrompt:]) {
					t.Errorf("%s: tokens %v\nPyTorch float64 %v", where, gen.Tokens, toks[kvPrompt:])
				}
				if !slices.Equal(streamed, gen.Tokens) {
					t.Errorf("OnToken saw %v, Generate returned %v", streamed, gen.Tokens)
				}
				if len(gen.Logits) != kvPrompt+kvSteps-1 || len(gen.StepMs) != len(gen.Logits) {
					t.Fatalf("%d steps' logits, %d step times; want %d", len(gen.Logits), len(gen.StepMs), kvPrompt+kvSteps-1)
				}
				for s, row := range gen.Logits {
					want := ref.Float32[s*256 : (s+1)*256]
					var worst, scale float64
					for i, r := range want {
						worst = max(worst, math.Abs(float64(row[i])-float64(r)))
						scale = max(scale, math.Abs(float64(r)))
					}
					if worst > 1e-5*scale {
						t.Errorf("%s: step %d: max |logit - PyTorch float64| = %.3g, over 1e-5 × %.3g", where, s, worst, scale)
					}
					if cpu == nil {
						continue
					}
					for i := range row {
						if math.Float32bits(row[i]) != math.Float32bits(cpu[s][i]) {
							t.Errorf("%s: step %d logit %d: %#08x on %s, %#08x on cpu", where, s, i, math.Float32bits(row[i]), backend, math.Float32bits(cpu[s][i]))
							break
						}
					}
				}
				if cpu == nil {
					cpu = gen.Logits
				}
			}
		})
	}
}

// TestGenerateForgets: a decoder whose cache is empty at every step (each
// token sees only itself) decodes other tokens than the fixture's, so
// TestGenerateFixture fails for a cache that is not fed back.
func TestGenerateForgets(t *testing.T) {
	toks := intTensor(t, filepath.Join(kvDir, "gpt2kv.tokens.npy")).Ints
	d := kvDecoder(t, "cpu")
	gpucc.ForgetCache(d)
	gen, err := d.Generate(context.Background(), toks[:kvPrompt], gpucc.GenerateOptions{Tokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(gen.Tokens, toks[kvPrompt:kvPrompt+16]) {
		t.Errorf("a cache that forgets decodes the fixture's tokens %v", gen.Tokens)
	}
}

// TestGenerateRefuses: bad prompts and lengths are invalid_input before a
// step runs, and a model that is not a step model (no cache, or a past
// and a present that do not pair by name) is unsupported, naming the
// port.
func TestGenerateRefuses(t *testing.T) {
	ctx := context.Background()
	d := kvDecoder(t, "cpu")
	prompt := []int64{34, 32, 204, 127, 151, 153, 182, 7}
	for _, c := range []struct {
		name   string
		prompt []int64
		tokens int
		field  string
	}{
		{"empty prompt", nil, 4, "prompt"},
		{"id past the vocabulary", []int64{34, 256}, 4, "prompt"},
		{"negative id", []int64{-1}, 4, "prompt"},
		{"no tokens", prompt, 0, "tokens"},
		{"negative tokens", prompt, -3, "tokens"},
		{"max_len one row short", prompt, kvMaxLen - kvPrompt + 2, "max_len"},
		{"max_len far too short", prompt, math.MaxInt, "max_len"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := d.Generate(ctx, c.prompt, gpucc.GenerateOptions{Tokens: c.tokens})
			var ie *ir.Error
			if gpucc.CodeOf(err) != ir.CodeInvalidInput || !errors.As(err, &ie) || ie.Field != c.field {
				t.Errorf("err %v; want invalid_input on %s", err, c.field)
			}
		})
	}
	// The last row fits: positions 0 … max_len-1.
	gen, err := d.Generate(ctx, prompt, gpucc.GenerateOptions{Tokens: kvMaxLen - kvPrompt + 1})
	if err != nil || len(gen.Tokens) != kvMaxLen-kvPrompt+1 {
		t.Errorf("a cache filled to its last row: %v", err)
	}

	rt := open(t, "cpu", func(o *gpucc.Options) { o.Limits = kvLimits })
	if _, err := rt.NewDecoder(ctx, kvModel(t, nil), gpucc.DecoderOptions{}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
		t.Errorf("a dynamic cache without max_len: %v; want invalid_input", err)
	}
	raw, err := os.ReadFile(filepath.Join(kvDir, "gpt2kv.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	gpt2, err := os.ReadFile(filepath.Join(kvDir, "gpt2.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	// Renaming every occurrence of a name keeps the protobuf valid (the
	// same length) and the graph whole: only the pairing breaks.
	rename := func(from, to string) []byte { return bytes.ReplaceAll(raw, []byte(from), []byte(to)) }
	for _, c := range []struct {
		name  string
		raw   []byte
		words string
	}{
		{"no cache (gpt2.onnx)", gpt2, "attention_mask"},
		{"a past without its present", rename("present.1.value", "present.1.valuX"), "present.1.value"},
		{"a present without its past", rename("past_key_values.1.key", "past_key_values.1.keX"), "past_key_values.1.keX"},
		{"no position", rename("position", "positioX"), "positioX"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := rt.NewDecoder(ctx, kvModel(t, c.raw), gpucc.DecoderOptions{MaxLen: kvMaxLen})
			if gpucc.CodeOf(err) != ir.CodeUnsupported || !bytes.Contains([]byte(err.Error()), []byte(c.words)) {
				t.Errorf("err %v; want unsupported naming %q", err, c.words)
			}
		})
	}
}

// TestGenerateCancel: a cancelled context ends decoding with its error.
func TestGenerateCancel(t *testing.T) {
	d := kvDecoder(t, "cpu")
	ctx, cancel := context.WithCancel(context.Background())
	stop := errors.New("stop")
	_, err := d.Generate(ctx, []int64{1, 2}, gpucc.GenerateOptions{Tokens: 8, OnToken: func(i int, _ int64, _ float64) error {
		if i == 2 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled after 3 tokens: %v", err)
	}
	_, err = d.Generate(context.Background(), []int64{1, 2}, gpucc.GenerateOptions{Tokens: 8, OnToken: func(i int, _ int64, _ float64) error { return stop }})
	if !errors.Is(err, stop) {
		t.Errorf("OnToken's error: %v", err)
	}
}

// Greedy decoding of a GPT-2 step model exported with a static cache:
// the prompt's token ids in, the generated ids out.
func ExampleDecoder() {
	ctx := context.Background()
	f, err := os.Open("onnx/testdata/transformers/gpt2kv.onnx")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	limits := ir.Limits{NonFinite: true} // the causal mask holds -Inf
	m, err := onnx.Parse(f, onnx.Options{Limits: limits})
	if err != nil {
		panic(err)
	}
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu", Limits: limits})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	d, err := rt.NewDecoder(ctx, m, gpucc.DecoderOptions{MaxLen: 32})
	if err != nil {
		panic(err)
	}
	defer d.Release()
	gen, err := d.Generate(ctx, []int64{34, 32, 204, 127, 151, 153, 182, 7}, gpucc.GenerateOptions{Tokens: 8})
	if err != nil {
		panic(err)
	}
	fmt.Println(gen.Tokens)
	// Output: [252 221 7 7 102 211 108 77]
}

// TestDecoderRefusesOtherModels: every ONNX model of the repository but
// the step models (the node tests, the exported models, the transformer
// fixtures) is
// refused by NewDecoder with unsupported, never a panic, a compile or a
// decoder that runs.
func TestDecoderRefusesOtherModels(t *testing.T) {
	rt := open(t, "cpu", func(o *gpucc.Options) { o.Limits = kvLimits })
	n := 0
	err := filepath.WalkDir(".", func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || filepath.Ext(path) != ".onnx" || filepath.Base(path) == "gpt2kv.onnx" || filepath.Base(path) == "gpt2kv_grow.onnx" || filepath.Base(path) == "gpt2kv_bias.onnx" || filepath.Base(path) == "gpt2kv_f16.onnx" || filepath.Base(path) == "gqa_kv.onnx" || filepath.Base(path) == "gpt2kv_hf.onnx" || filepath.Base(path) == "gpt2kv_hf_merged.onnx" ||
			filepath.Dir(path) == filepath.Join("testdata", "decode") {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		m, err := onnx.Parse(bytes.NewReader(raw), onnx.Options{Limits: kvLimits})
		if err != nil {
			return nil // the importer's refusal, tested there
		}
		n++
		d, err := rt.NewDecoder(context.Background(), m, gpucc.DecoderOptions{MaxLen: 4})
		if err == nil {
			d.Release()
			t.Errorf("%s: a decoder", path)
		} else if c := gpucc.CodeOf(err); c != ir.CodeUnsupported {
			t.Errorf("%s: %v; want unsupported", path, err)
		}
		return nil
	})
	if err != nil || n < 100 {
		t.Fatalf("%d models: %v", n, err)
	}
}

// TestGenerateStaticCache decodes testdata/decode/static.onnx (mkstep.py:
// a 2-block GPT-2-style step whose cache the model fixes at 6 rows): the
// decoder takes the model's length when none is given and refuses another
// (invalid_input); the 5 ids after the prompt 0, 1 fill the cache to its
// last row and are numpy float64's [2 8 4 2 8] on cpu and every backend
// that runs typed graphs, the logits cpu's bits; one more id does not fit.
func TestGenerateStaticCache(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join("testdata", "decode", "static.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{2, 8, 4, 2, 8}
	var cpu [][]float32
	for _, backend := range append([]string{"cpu"}, typedBackends...) {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend, func(o *gpucc.Options) { o.Limits = kvLimits })
			if _, err := rt.NewDecoder(ctx, kvModel(t, raw), gpucc.DecoderOptions{MaxLen: 8}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
				t.Errorf("max_len 8 for a cache of 6: %v; want invalid_input", err)
			}
			d, err := rt.NewDecoder(ctx, kvModel(t, raw), gpucc.DecoderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Release()
			if d.MaxLen() != 6 || d.Vocab() != 16 || len(d.Pairs()) != 4 {
				t.Errorf("max_len %d, vocab %d, %d pairs; want 6, 16, 4", d.MaxLen(), d.Vocab(), len(d.Pairs()))
			}
			gen, err := d.Generate(ctx, []int64{0, 1}, gpucc.GenerateOptions{Tokens: 5, Logits: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(gen.Tokens, want) || gen.Cache != "device" {
				t.Errorf("ids %v with the cache on the %s; want %v on the device", gen.Tokens, gen.Cache, want)
			}
			if cpu == nil {
				cpu = gen.Logits
			}
			for s := range gen.Logits {
				for i := range gen.Logits[s] {
					if math.Float32bits(gen.Logits[s][i]) != math.Float32bits(cpu[s][i]) {
						t.Fatalf("step %d logit %d: %v on %s, %v on cpu", s, i, gen.Logits[s][i], backend, cpu[s][i])
					}
				}
			}
			if _, err := d.Generate(ctx, []int64{0, 1}, gpucc.GenerateOptions{Tokens: 6}); gpucc.CodeOf(err) != ir.CodeInvalidInput {
				t.Errorf("7 positions in a cache of 6: %v; want invalid_input", err)
			}
		})
	}
}

// TestGenerateConcurrent: two Generates on one Decoder at once, each with
// its own cache, both decode the fixture's ids.
func TestGenerateConcurrent(t *testing.T) {
	toks := intTensor(t, filepath.Join(kvDir, "gpt2kv.tokens.npy")).Ints
	for _, backend := range []string{"cpu", "native"} {
		t.Run(backend, func(t *testing.T) {
			d := kvDecoder(t, backend)
			errs := make(chan error, 2)
			for range 2 {
				go func() {
					gen, err := d.Generate(context.Background(), toks[:kvPrompt], gpucc.GenerateOptions{Tokens: 24})
					if err == nil && !slices.Equal(gen.Tokens, toks[kvPrompt:kvPrompt+24]) {
						err = fmt.Errorf("ids %v, want %v", gen.Tokens, toks[kvPrompt:kvPrompt+24])
					}
					errs <- err
				}()
			}
			for range 2 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		})
	}
}

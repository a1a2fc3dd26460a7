package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/internal/npy"
)

// kvFixture returns the decoding fixture's model path and its float64
// greedy tokens (onnx/testdata/transformers/export_kv.py: an 8-token
// prompt, then 64).
func kvFixture(t *testing.T) (string, []int64) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "onnx", "testdata", "transformers"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "gpt2kv.tokens.npy"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := npy.Read(f, 1<<20)
	if err != nil || len(a.Int64) != 72 {
		t.Fatalf("gpt2kv.tokens.npy: %v, %d ids", err, len(a.Int64))
	}
	return filepath.Join(dir, "gpt2kv.onnx"), a.Int64
}

func idList(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}

// TestGenerate: gpucc generate decodes the fixture's 64 tokens after its
// prompt, PyTorch float64's, on cpu and on webgpu (lavapipe), as text (the
// ids on one line) and as JSON (with each step's latency).
func TestGenerate(t *testing.T) {
	model, toks := kvFixture(t)
	prompt, want := idList(toks[:8]), toks[8:]
	out, _, code := gpuccStderr(t, "", "generate", "--backend", "cpu", "--prompt", prompt, "--tokens", "64", "--max-len", "128", model)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if line := strings.ReplaceAll(idList(want), ",", " ") + "\n"; out != line {
		t.Errorf("generate printed %q\nwant %q", out, line)
	}
	for _, backend := range []string{"cpu", "webgpu"} {
		t.Run(backend, func(t *testing.T) {
			out, v, code := gpucc(t, "", "generate", "--backend", backend, "--allow-software", "--prompt", prompt, "--tokens", "64", "--json", model)
			if backend == "webgpu" && code != 0 && errorCode(v) == "backend_unavailable" && os.Getenv("GPUCC_REQUIRE_WEBGPU") == "" {
				t.Skip(out)
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, out)
			}
			var g struct {
				Backend   string    `json:"backend"`
				Tokens    []int64   `json:"tokens"`
				Cache     string    `json:"cache"`
				MaxLen    int       `json:"maxLen"`
				StepMs    []float64 `json:"stepMs"`
				PrefillMs float64   `json:"prefillMs"`
				DecodeMs  float64   `json:"decodeMs"`
				Kernels   int       `json:"stepKernels"`
			}
			if err := json.Unmarshal([]byte(out), &g); err != nil {
				t.Fatal(err)
			}
			if backend == "webgpu" && g.Kernels == 0 {
				t.Errorf("stepKernels 0 on webgpu")
			}
			if !slices.Equal(g.Tokens, want) {
				t.Errorf("tokens %v\nwant %v", g.Tokens, want)
			}
			if g.Backend != backend || g.MaxLen != 71 || len(g.StepMs) != 71 || g.PrefillMs <= 0 || g.DecodeMs <= 0 || g.Cache == "" {
				t.Errorf("backend %q, maxLen %d (want 71: the prompt and tokens' need), %d steps, prefill %v, decode %v, cache %q",
					g.Backend, g.MaxLen, len(g.StepMs), g.PrefillMs, g.DecodeMs, g.Cache)
			}
		})
	}
}

// TestGenerateHelpAgrees: generate -h names every key that generate
// --json prints.
func TestGenerateHelpAgrees(t *testing.T) {
	model, toks := kvFixture(t)
	help, _, code := gpuccStderr(t, "", "generate", "-h")
	if code != 0 {
		t.Fatalf("generate -h: exit %d", code)
	}
	out, v, code := gpucc(t, "", "generate", "--backend", "cpu", "--prompt", idList(toks[:3]), "--tokens", "2", "--json", model)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	text := strings.Join(strings.Fields(help), " ")
	for key := range v {
		if !regexp.MustCompile(`\b` + key + `\b`).MatchString(text) {
			t.Errorf("generate prints %q, which generate -h does not name:\n%s", key, help)
		}
	}
	for _, flag := range []string{"--prompt", "--tokens int", "--max-len int", "--json", "--backend"} {
		if !strings.Contains(help, flag) {
			t.Errorf("generate -h lacks %s", flag)
		}
	}
}

// TestGenerateRefuses: bad input exits with one JSON error object of a
// stable code and prints no ids.
func TestGenerateRefuses(t *testing.T) {
	model, _ := kvFixture(t)
	gpt2 := filepath.Join(filepath.Dir(model), "gpt2.onnx")
	for _, c := range []struct {
		name string
		args []string
		code string
		exit int
	}{
		{"id past the vocabulary", []string{"--prompt", "34,256", model}, "invalid_input", 1},
		{"negative id", []string{"--prompt", "-1", model}, "invalid_input", 1},
		{"empty prompt", []string{"--prompt", "", model}, "invalid_input", 1},
		{"no prompt", []string{model}, "invalid_input", 1},
		{"max-len too short", []string{"--prompt", "1,2,3", "--tokens", "64", "--max-len", "65", model}, "invalid_input", 1},
		{"not a step model", []string{"--prompt", "1", gpt2}, "unsupported", 1},
		{"a batch without attention_mask", []string{"--prompt", "1,2;3", model}, "unsupported", 1},
		{"a prefill without attention_mask", []string{"--prompt", "1,2", "--prefill", model}, "unsupported", 1},
		{"an empty prompt of a batch", []string{"--prompt", "1,2;", filepath.Join(filepath.Dir(model), "gpt2kv_hf.onnx")}, "invalid_input", 1},
		{"no such model", []string{"--prompt", "1", "nope.onnx"}, "io", 1},
		{"an id that is not a number", []string{"--prompt", "1,x", model}, "usage", 2},
		{"tokens 0", []string{"--prompt", "1", "--tokens", "0", model}, "usage", 2},
		{"a negative temperature", []string{"--prompt", "1", "--temperature", "-1", model}, "invalid_input", 1},
		{"a stop id that is not a number", []string{"--prompt", "1", "--stop", "x", model}, "usage", 2},
		{"no model", []string{"--prompt", "1"}, "usage", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, v, code := gpucc(t, "", append([]string{"generate", "--backend", "cpu"}, c.args...)...)
			if code != c.exit || errorCode(v) != c.code || strings.Count(out, "\n") != 1 {
				t.Errorf("exit %d, %s; want %d and one JSON object of code %s", code, out, c.exit, c.code)
			}
		})
	}
	// A model that fixes its cache's length (testdata/decode/static.onnx:
	// 6 rows) needs no --max-len, and refuses another.
	static, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "decode", "static.onnx"))
	if out, _, code := gpucc(t, "", "generate", "--backend", "cpu", "--prompt", "0,1", "--tokens", "5", static); code != 0 || out != "2 8 4 2 8\n" {
		t.Errorf("static.onnx: exit %d, %q; want 2 8 4 2 8", code, out)
	}
	if out, v, code := gpucc(t, "", "generate", "--backend", "cpu", "--prompt", "0,1", "--tokens", "5", "--max-len", "8", static); code != 1 || errorCode(v) != "invalid_input" {
		t.Errorf("static.onnx with --max-len 8: exit %d, %s; want invalid_input", code, out)
	}
	// The last row fits: a prompt of 3 and 64 tokens write positions 0 to 65.
	if out, _, code := gpucc(t, "", "generate", "--backend", "cpu", "--prompt", "1,2,3", "--tokens", "64", "--max-len", "66", model); code != 0 {
		t.Errorf("max-len 66: exit %d: %s", code, out)
	}
}

// TestGenerateGrowing: gpucc generate decodes gpt2kv_grow.onnx (the
// fixture's step with a cache that grows a row a step) through the
// static-cache rewrite to the fixture's 64 tokens, and --explain states
// the rewrite and its capacity, where the static fixture's says it keeps
// the model's own cache.
func TestGenerateGrowing(t *testing.T) {
	model, toks := kvFixture(t)
	grow := filepath.Join(filepath.Dir(model), "gpt2kv_grow.onnx")
	prompt, want := idList(toks[:8]), toks[8:]
	out, _, code := gpuccStderr(t, "", "generate", "--backend", "cpu", "--prompt", prompt, "--tokens", "64", grow)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if line := strings.ReplaceAll(idList(want), ",", " ") + "\n"; out != line {
		t.Errorf("generate printed %q\nwant %q", out, line)
	}
	for _, c := range []struct{ model, want string }{
		{grow, "rewritten to a static cache of 71 rows (the capacity: max_len, fixed at load; nothing is evicted), 4 caches written at the step's position, 2 attention nodes"},
		{model, "the model's own static cache of 71 rows"},
	} {
		out, _, code := gpuccStderr(t, "", "generate", "--backend", "cpu", "--prompt", prompt, "--tokens", "64", "--explain", c.model)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("--explain %s: exit %d, %q; want it to say %q", filepath.Base(c.model), code, out, c.want)
		}
	}
}

// TestGenerateAttentionMask: generate decodes gpt2kv_hf.onnx (the
// fixture's step in optimum's and transformers.js's convention:
// attention_mask, position_ids, a cache that grows) to the fixture's
// tokens, --explain names the convention it recognized, and two prompts
// separated by a semicolon decode as one left-padded batch, a line each,
// each the ids of decoding that prompt alone.
func TestGenerateAttentionMask(t *testing.T) {
	model, toks := kvFixture(t)
	hf := filepath.Join(filepath.Dir(model), "gpt2kv_hf.onnx")
	prompt, want := idList(toks[:8]), toks[8:24]
	out, _, code := gpuccStderr(t, "", "generate", "--backend", "cpu", "--prompt", prompt, "--tokens", "16", hf)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if line := strings.ReplaceAll(idList(want), ",", " ") + "\n"; out != line {
		t.Errorf("generate printed %q\nwant %q", out, line)
	}
	out, _, code = gpuccStderr(t, "", "generate", "--backend", "cpu", "--prompt", prompt, "--tokens", "16", "--explain", hf)
	if code != 0 || !strings.Contains(out, "convention: optimum/transformers.js") || !strings.Contains(out, "bound at batch 1 and seq 1") {
		t.Errorf("--explain: exit %d, %q; want it to name the attention_mask convention", code, out)
	}
	short := idList(toks[30:33])
	alone, _, code := gpuccStderr(t, "", "generate", "--backend", "cpu", "--prompt", short, "--tokens", "16", model)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, alone)
	}
	out, _, code = gpuccStderr(t, "", "generate", "--backend", "cpu", "--prompt", prompt+";"+short, "--tokens", "16", hf)
	if code != 0 {
		t.Fatalf("a batch: exit %d: %s", code, out)
	}
	if lines := strings.ReplaceAll(idList(want), ",", " ") + "\n" + alone; out != lines {
		t.Errorf("a batch of two printed %q\nwant %q", out, lines)
	}
	out, _, code = gpuccStderr(t, "", "generate", "--backend", "cpu", "--stop", strconv.FormatInt(want[4], 10), "--prompt", prompt, "--tokens", "16", hf)
	if line := strings.ReplaceAll(idList(want[:5]), ",", " ") + "\n"; code != 0 || out != line {
		t.Errorf("--stop %d: exit %d, printed %q; want %q", want[4], code, out, line)
	}
	out, _, code = gpuccStderr(t, "", "generate", "--backend", "cpu", "--temperature", "1", "--top-k", "1", "--seed", "3", "--prompt", prompt, "--tokens", "16", hf)
	if line := strings.ReplaceAll(idList(want), ",", " ") + "\n"; code != 0 || out != line {
		t.Errorf("--temperature 1 --top-k 1: exit %d, printed %q; want the greedy %q", code, out, line)
	}
	out, _, code = gpuccStderr(t, "", "generate", "--backend", "cpu", "--prefill", "--prompt", prompt+";"+short, "--tokens", "16", hf)
	if lines := strings.ReplaceAll(idList(want), ",", " ") + "\n" + alone; code != 0 || out != lines {
		t.Errorf("a batch of two with --prefill: exit %d, printed %q\nwant %q", code, out, lines)
	}
}

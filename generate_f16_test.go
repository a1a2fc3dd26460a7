package gpucc_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// TestGenerateFloat16Cache: gpt2kv_f16.onnx (f16_kv.py: the fixture's
// step with its cache in float16, each past cast to float32 where it is
// read and each present rounded to float16 at the write, everything else
// float32) decodes with its cache kept as float16, on the device where the
// backend keeps typed outputs and through the host otherwise: every
// backend's tokens and every step's logits are cpu's bits on both paths
// (the model was refused before: "is float16, want float32"). Step 0's
// logits are the float32 fixture's bits (its attention reads the step's
// own rows before the rounding, and the cache holds nothing else yet);
// later steps read rounded rows, so some logit differs from the float32
// fixture's, and the greedy tokens stay PyTorch float64's for the 16
// checked here.
func TestGenerateFloat16Cache(t *testing.T) {
	toks := intTensor(t, filepath.Join(kvDir, "gpt2kv.tokens.npy")).Ints
	raw, err := os.ReadFile(filepath.Join(kvDir, "gpt2kv_f16.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	const steps = 16
	opts := gpucc.GenerateOptions{Tokens: steps, Logits: true}
	var want *gpucc.Generation
	for _, backend := range append([]string{"cpu"}, typedBackends...) {
		for _, host := range []bool{false, true} {
			rt := open(t, backend, func(o *gpucc.Options) { o.Limits = kvLimits })
			d, err := rt.NewDecoder(context.Background(), kvModel(t, raw), gpucc.DecoderOptions{MaxLen: kvMaxLen})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range d.Pairs() {
				if p.DType != ir.F16 {
					t.Fatalf("%s is %v, want float16", p.Past, p.DType)
				}
			}
			gpucc.HostCache(d, host)
			got, err := d.Generate(context.Background(), toks[:kvPrompt], opts)
			d.Release()
			if err != nil {
				t.Fatal(err)
			}
			if where := map[bool]string{true: "host", false: "device"}[host]; got.Cache != where {
				t.Errorf("%s: the cache lived on the %s, want the %s", backend, got.Cache, where)
			}
			if !slices.Equal(got.Tokens, toks[kvPrompt:kvPrompt+steps]) {
				t.Fatalf("%s (host %v): tokens %v, PyTorch float64 %v", backend, host, got.Tokens, toks[kvPrompt:kvPrompt+steps])
			}
			if want == nil {
				want = got
				continue
			}
			for s := range want.Logits {
				for i := range want.Logits[s] {
					if math.Float32bits(got.Logits[s][i]) != math.Float32bits(want.Logits[s][i]) {
						t.Fatalf("%s (host %v) step %d logit %d: %v, cpu %v", backend, host, s, i, got.Logits[s][i], want.Logits[s][i])
					}
				}
			}
		}
	}
	f32, err := kvDecoder(t, "cpu").Generate(context.Background(), toks[:kvPrompt], opts)
	if err != nil {
		t.Fatal(err)
	}
	differs := 0
	for s := range f32.Logits {
		same := true
		for i := range f32.Logits[s] {
			same = same && math.Float32bits(f32.Logits[s][i]) == math.Float32bits(want.Logits[s][i])
		}
		if s == 0 && !same {
			t.Errorf("step 0's logits differ from the float32 fixture's: the cache holds no rounded row yet")
		}
		if !same {
			differs++
		}
	}
	if differs == 0 {
		t.Errorf("every step's logits are the float32 fixture's bits: the cache was not rounded to float16")
	}
	t.Logf("%d of %d steps' logits differ from the float32 cache's", differs, len(f32.Logits))
}

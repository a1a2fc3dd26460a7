package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

func init() {
	commands["generate"] = command{summary: "greedy decoding of an ONNX step model with a KV cache: token ids in, token ids out", run: generateCmd}
	help["generate"] = `
Runs greedy decoding of MODEL.onnx, one decoding step of a decoder exported
against a static cache (inputs input_ids and position, int64, one element
each, and past_key_values.N.key/.value [batch, heads, max_len, head_dim];
outputs logits and present.N.key/.value, each present the next step's
past): the --prompt ids one step each, then --tokens generated ids, each
the argmax of its step's logits (ties to the lowest id). The cache stays
on the device between steps where the backend keeps a typed graph's
outputs there, else it goes through the host; the bits are the same.
Prints the generated ids as they come, separated by spaces, on one line.
With --json it prints one JSON object instead: backend, adapter, prompt,
tokens (the generated ids), stopped (the last id is a --stop id), cache ("device" or "host": where the cache
lived), maxLen, compileMs, stepMs (each step's milliseconds; step p feeds
the id at position p), prefillMs (the prompt's steps up to the first
generated id), decodeMs (the median of the later steps, one id each) and
dispatchMs (the median of their dispatch stage: the kernels, on the GPU's
clock where dispatchClock says gpu-timestamp; decodeMs less it is the
step's time beside its kernels), stepKernels (the kernels a step
dispatches) and stepBytesWritten (the bytes they write, counted from the
step's plans on native and wasm; 0 where the backend's typed code runs
the step).
A model whose cache grows a row a step instead (optimum's and
transformers.js's exports: no position-indexed write, present.N.key =
Concat(past_key_values.N.key, the step's row), [batch, heads, past_len + 1,
head_dim], with input_ids and position as above) is rewritten at load into
the static convention, so one executable serves every step: the capacity
is --max-len rows (default: the prompt's length plus --tokens minus 1; at
least 2), fixed at load, nothing evicted; each step writes its row at
position and the fused attention masks the keys past it, which leaves
every logit's bits as the grown cache gives them. The rewrite needs fused
attention reading the cache and nothing else depending on its length;
otherwise the model is unsupported, naming why.
A model with an attention_mask input is taken in optimum's and
transformers.js's own convention: input_ids [batch, seq], attention_mask
[batch, past_len + seq] (int64, 1 a token, 0 padding), position_ids
[batch, seq] (optional), past_key_values.N.key/.value [batch, heads,
past_len, head_dim] growing a row a step, outputs logits and
present.N.key/.value (an optimum merged decoder's use_cache_branch, bool
[1], is fixed to true). It is bound at seq 1 (one token a step) and its
growing cache rewritten as above; each step feeds attention_mask (1 at the
prompt's rows up to the step's position, 0 for padding and the rows past
it), position_ids (the position less the prompt's left padding) and the
cache's write row from the step's position. A model without position_ids
whose positions depend on the cache's length is unsupported, naming
position_ids. In this convention --prompt may hold several prompts
separated by semicolons (1,2,3;4,5): they decode together as one batch,
the shorter ones padded on the left and masked out, as Hugging Face pads
a batch; each line of output is one prompt's ids, and --json prints one
object per prompt in a JSON array. With --prefill the prompts run as one
step of the longest prompt's length (a second executable; the model must
mask causally at seq > 1, as exports do), then a token a step; each
prompt's tokens and logits are those of decoding it a token a step.
--stop ends a prompt's generation at its first end-of-sequence id (kept).
--temperature samples each id from softmax(logits / temperature) over the
--top-k largest logits, in float64 on the host, from a generator seeded by
--seed (prompt b of a batch its own stream): the logits being the same
bits on every backend, a seed gives the same ids on every backend.
--explain prints the convention recognized (which inputs are fed, and
how), how the cache is kept (the model's own static cache, or the rewrite
and its capacity), how many attentions run fused and the step's kernels
(with the bytes they write and read where its plans are known), and exits
without decoding. A float16 cache (past and present float16) is kept as
float16 between steps.
A prompt id outside the vocabulary, an empty prompt, or a --max-len short
of the prompt and tokens is invalid_input; a model that does not follow
the convention is unsupported.`
}

// generation is what generate --json prints.
type generation struct {
	*lib.Generation
	Adapter lib.Adapter `json:"adapter"`
}

func generateCmd(args []string) int {
	fs := newFlags("generate", "generate [--backend auto|BACKEND] [--allow-software] --prompt ID,ID,… [--tokens N] [--max-len N] [--json] [--explain] MODEL.onnx")
	backend := fs.String("backend", "auto", "auto, or one of: "+strings.Join(lib.Backends(), ", "))
	allowSW := fs.Bool("allow-software", false, "accept software GPU adapters (lavapipe, SwiftShader, WARP)")
	cacheDir := fs.String("cache-dir", "", "directory of the on-disk code cache (default $GPUCC_CACHE_DIR or the user cache dir; \"off\" disables it)")
	limits := limitFlags(fs)
	verboseFlag(fs)
	promptFlag := fs.String("prompt", "", "the prompt's token ids, comma-separated (34,32,204); several prompts, decoded as one batch, separated by semicolons (34,32;7)")
	var tokens, maxLen int
	atLeast(fs, &tokens, "tokens", 16, 1, "ids to generate")
	atLeast(fs, &maxLen, "max-len", 0, 0, "the cache's rows (the pasts' axis 2) where the model leaves it dynamic; 0: the prompt's length plus --tokens minus 1, or the model's own")
	asJSON := fs.Bool("json", false, "print one JSON object with the ids and each step's latency instead of the ids")
	stopFlag := fs.String("stop", "", "ids that end a prompt's generation, comma-separated (an end-of-sequence id): the first one generated is the prompt's last")
	temperature := fs.Float64("temperature", 0, "above 0: sample each id from softmax(logits / temperature) instead of the argmax (with --top-k and --seed; the same ids on every backend)")
	topK := fs.Int("top-k", 0, "with --temperature: sample among the k largest logits only (0: all)")
	seed := fs.Uint64("seed", 0, "with --temperature: the sampler's seed")
	prefill := fs.Bool("prefill", false, "run the prompts as one step of the longest prompt's length (the attention_mask convention), then a token a step")
	explain := fs.Bool("explain", false, "print how the cache is kept (the model's static cache, or the rewrite of a growing one and its capacity) and exit without decoding")
	if err := parseInterspersed(fs, args); err != nil {
		return flagError(fs, err)
	}
	if fs.NArg() != 1 {
		return usageError("generate: want exactly one MODEL.onnx argument, got %d", fs.NArg())
	}
	prompts := [][]int64{nil}
	if *promptFlag != "" {
		prompts = nil
		for _, text := range strings.Split(*promptFlag, ";") {
			var prompt []int64
			for i, s := range strings.Split(text, ",") {
				if len(prompts) > 0 && strings.TrimSpace(text) == "" {
					break // an empty prompt of a batch: Generate names it
				}
				id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
				if err != nil {
					return usageError("generate: --prompt: id %d, %q, is not an integer", i, s)
				}
				prompt = append(prompt, id)
			}
			prompts = append(prompts, prompt)
		}
	}
	if len(prompts) > lib.MaxDecoderBatch {
		return usageError("generate: --prompt: %d prompts; at most %d", len(prompts), lib.MaxDecoderBatch)
	}
	prompt := prompts[0]
	for _, p := range prompts {
		if len(p) > len(prompt) {
			prompt = p
		}
	}
	limits.NonFinite = true // a model's causal mask holds -Inf
	// Sized to the model as run sizes one (modellimits.go's loadSized):
	// its bytes and its cache's, for every limit no flag set.
	unset := unsetLimits()
	read := *limits
	if unset["MaxGraphBytes"] {
		read.MaxGraphBytes = maxModelBytes
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return fail(ir.Errorf(ir.CodeIO, -1, "", "%v", err))
	}
	raw, err := readModel(f, read)
	f.Close()
	if err != nil {
		return fail(err)
	}
	sig, err := onnx.ReadSignature(onnx.Bytes(raw), importCaps(*limits, modelCaps(int64(len(raw))), unset))
	if err != nil {
		return fail(err)
	}
	cacheBytes, modelLen := int64(0), 0
	for _, in := range sig.Inputs {
		if len(in.Shape) == 4 && strings.HasPrefix(in.Name, "past_key_values.") {
			n := int64(4)
			for k, d := range in.Shape {
				if k == 2 && d < 0 {
					d = max(maxLen, len(prompt)+tokens-1)
				}
				if k == 0 && d < 0 {
					d = len(prompts)
				}
				n = ir.SatMul(n, int64(max(d, 1)))
			}
			cacheBytes = ir.SatAdd(cacheBytes, n)
			if in.Shape[2] > 0 {
				modelLen = in.Shape[2]
			}
		}
	}
	if maxLen == 0 && modelLen == 0 {
		maxLen = max(len(prompt)+tokens-1, 1)
	}
	*limits = importCaps(*limits, modelCaps(ir.SatAdd(int64(len(raw)), cacheBytes)), unset)
	limits.MaxGraphBytes = read.MaxGraphBytes // Parse refuses a model past it
	m, err := onnx.Parse(onnx.Bytes(raw), onnx.Options{Limits: *limits})
	if err != nil {
		return fail(err)
	}
	c, err := openCache(*cacheDir)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	rt, err := lib.Open(ctx, lib.Options{Backend: *backend, AllowSoftware: *allowSW, Limits: *limits, Cache: c})
	if err != nil {
		return fail(err)
	}
	defer rt.Close()
	d, err := rt.NewDecoder(ctx, m, lib.DecoderOptions{MaxLen: maxLen, Batch: len(prompts), Prefill: map[bool]int{true: len(prompt)}[*prefill]})
	if err != nil {
		return fail(err)
	}
	defer d.Release()
	if *explain {
		fmt.Println(d.Explain())
		return exitOK
	}
	opts := lib.GenerateOptions{Tokens: tokens, Temperature: *temperature, TopK: *topK, Seed: *seed}
	if *stopFlag != "" {
		for i, s := range strings.Split(*stopFlag, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return usageError("generate: --stop: id %d, %q, is not an integer", i, s)
			}
			opts.Stop = append(opts.Stop, id)
		}
	}
	if len(prompts) > 1 || *prefill { // a batch: each prompt's ids on a line, at the end
		gens, err := d.GenerateBatch(ctx, prompts, opts)
		if err != nil {
			return fail(err)
		}
		if *asJSON {
			out := make([]generation, len(gens))
			for b, g := range gens {
				out[b] = generation{Generation: g, Adapter: rt.Adapter()}
			}
			writeJSON(out)
			return exitOK
		}
		for _, g := range gens {
			ids := make([]string, len(g.Tokens))
			for i, id := range g.Tokens {
				ids[i] = strconv.FormatInt(id, 10)
			}
			fmt.Println(strings.Join(ids, " "))
		}
		return exitOK
	}
	printed := false
	if !*asJSON {
		opts.OnToken = func(i int, token int64, _ float64) error {
			printed = true
			sep := " "
			if i == 0 {
				sep = ""
			}
			_, err := fmt.Fprintf(os.Stdout, "%s%d", sep, token)
			return err
		}
	}
	gen, err := d.Generate(ctx, prompt, opts)
	if err != nil {
		if printed {
			fmt.Println()
		}
		return fail(err)
	}
	if *asJSON {
		writeJSON(generation{Generation: gen, Adapter: rt.Adapter()})
		return exitOK
	}
	fmt.Println()
	return exitOK
}

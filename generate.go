package gpucc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// Greedy decoding with a key/value cache (issue 33). A Decoder runs an
// ONNX model of one decoding step, exported against a static cache, once
// per token, and feeds each step's cache to the next.
//
// The step model's convention (Hugging Face optimum's names, with a static
// cache of a fixed number of rows):
//
//   - input_ids: int64, one element (shape [1, 1]): the token of this step;
//   - position: int64, one element (shape [1]): its position, which is the
//     cache row the step writes (0 for the first token);
//   - past_key_values.N.key and past_key_values.N.value for N = 0, 1, …:
//     float32 [batch, heads, max_len, head_dim], the cache before the step
//     (or float16, kept as float16 between steps: the model's presents
//     rounded at the write; not yet for a cache that grows);
//     axis 2 is the cache's length, a dynamic dimension bound to
//     DecoderOptions.MaxLen (any other dynamic dimension is bound to 1);
//   - outputs logits (float32, its last axis the vocabulary; one row) and,
//     for every past, present.N.key / present.N.value of the past's shape:
//     the cache after the step, which the next step takes as its past.
//
// A model with an input named attention_mask is taken in optimum's and
// transformers.js's own convention instead (input_ids [batch, seq],
// attention_mask, position_ids, a cache that grows): generate_hf.go says
// how each step feeds it. Either way, a
// model without one of these inputs, with another run-time input, or
// whose pasts and presents do not pair by name and shape, is refused with
// ir.CodeUnsupported, naming what is missing.
//
// Greedy decoding feeds the prompt's tokens one step each (the prefill),
// then each step's argmax (the lowest id among equal maxima, as numpy's
// argmax; a NaN wins, as there) as the next step's token. A step's cache
// lives on the device as DeviceTensors (RunOptions.Keep in, DeviceTensor
// inputs out) where the backend keeps a typed graph's outputs there, and
// goes through the host otherwise: the bits are the same either way;
// Generation.Cache says which ran.

// Step model port names (see above).
const (
	StepInputIDs = "input_ids"
	StepPosition = "position"
	StepLogits   = "logits"
	// The attention_mask convention's inputs (optimum's and
	// transformers.js's exports; see generate_hf.go).
	StepAttentionMask = "attention_mask"
	StepPositionIDs   = "position_ids"
	// StepUseCacheBranch is optimum's merged decoders' input (bool [1]):
	// an If between the step with a cache and the first step without;
	// NewDecoder fixes it to true (generate_hf.go).
	StepUseCacheBranch = "use_cache_branch"
	stepPastKey        = "past_key_values."
	stepPresentOf      = "present."
)

// pastName matches a past's name: past_key_values.N.key or .value.
var pastName = regexp.MustCompile(`^past_key_values\.(\d+)\.(key|value)$`)

// DecoderOptions configure a Decoder.
type DecoderOptions struct {
	// MaxLen is the cache's rows (the pasts' axis 2): at most MaxLen
	// positions are decoded. It must be given where the model leaves
	// that axis dynamic; where the model fixes it, 0 takes the model's.
	MaxLen int
	// Batch is the number of prompts GenerateBatch decodes together
	// (0: one). Above one the model needs the attention_mask convention,
	// whose mask pads each shorter prompt on the left.
	Batch int
	// Prefill, in the attention_mask convention, runs the prompts as one
	// step of Prefill tokens (each left-padded to it) instead of a step a
	// token: a second executable, of seq Prefill. The model must mask
	// causally at seq > 1, as exports do (gpt2kv_hf.onnx builds
	// transformers' causal mask from the shapes); prompts longer than it
	// are invalid_input. 0: a step a token.
	Prefill int
	// ScatterCache, for a cache that grows a row a step on a backend that
	// runs typed graphs on the device (webgpu), writes each present as a
	// scatter of the row into its donated past, in place (generate_static.go):
	// a step writes the rows, not the caches (gpt2kv_grow: 11,788 bytes,
	// not 141,316), but each scatter is typed code between the step's
	// float32 islands, and each island and typed stretch is a submission
	// and a wait of its own (gpt2kv_grow: 8 where the select has 4; 2 + 2
	// a block in all), which costs more than the bytes save at the sizes
	// measured so far (lavapipe: 17.2 against 15.9 ms a token), until a
	// typed run records them in one submission. Off: the select, which
	// writes each present whole in the float32 island. The environment's
	// GPUCC_KV_WRITE=scatter sets it too (bench/device.sh's decode suite).
	ScatterCache bool
}

// MaxDecoderBatch bounds DecoderOptions.Batch.
const MaxDecoderBatch = 256

// CachePair is one cache tensor: the step's input (past) and the output
// (present) that the next step takes in its place.
type CachePair struct {
	Past, Present string
	Shape         ir.Shape
	// DType is the cache's dtype: float32, or float16 (a model that
	// rounds its presents to float16 at the write, as fp16 exports keep
	// their cache; the static convention only so far).
	DType ir.DType
}

// Decoder runs greedy decoding of an ONNX step model (the convention
// above) on one Runtime: the model is specialized to the cache's shape and
// compiled once, in NewDecoder. Generate may be called concurrently: each
// call has its own cache, and the Runtime serialises the steps.
type Decoder struct {
	rt      *Runtime
	exe     *Executable
	maxLen  int
	vocab   int
	idShape ir.Shape // input_ids' shape: one element
	posShp  ir.Shape // position's shape: one element
	batch   int      // the prompts of a step (DecoderOptions.Batch)
	hf      bool     // the attention_mask convention (generate_hf.go)
	merged  bool     // use_cache_branch fixed to true (an optimum merged decoder)
	maskShp ir.Shape // attention_mask's shape [batch, maxLen] (nil: the step reads none)
	pidShp  ir.Shape // position_ids' shape [batch, 1] (nil: none)
	pairs   []CachePair
	compile time.Duration
	grown   *cacheRewrite // the static-cache rewrite, for a model whose cache grows (nil: none)
	// attention counts the step's fused attention nodes (ir.FuseAttention).
	attention int
	// forget, set by tests only, gives every step an empty cache: the
	// decoding a broken cache gives; host keeps the cache on the host, the
	// fallback's path, on a backend that keeps it on the device.
	forget, host bool
	prefill      *Executable // the prompts in one step (DecoderOptions.Prefill; nil: none)
	prefillLen   int
	prefillIn    map[string]bool // the prefill's run-time inputs, by name
}

// NewDecoder checks m against the step convention, specializes it to a
// cache of opts.MaxLen rows and compiles it on rt.
func (rt *Runtime) NewDecoder(ctx context.Context, m *onnx.Model, opts DecoderOptions) (*Decoder, error) {
	start := time.Now()
	sig := m.Signature()
	unsupported := func(format string, a ...any) error {
		return ir.Errorf(ir.CodeUnsupported, -1, "model", "decoding: "+format+" (gpucc generate's step conventions: inputs input_ids, position and past_key_values.N.key/.value, or input_ids, attention_mask, position_ids and past_key_values.N.key/.value with a cache that grows; outputs logits and present.N.key/.value)", a...)
	}
	if opts.MaxLen < 0 {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "max_len", "decoding: max_len %d is negative", opts.MaxLen)
	}
	if opts.Batch < 0 || opts.Batch > MaxDecoderBatch {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "batch", "decoding: batch %d is outside [0, %d]", opts.Batch, MaxDecoderBatch)
	}
	batch := max(opts.Batch, 1)
	outputs := map[string]onnx.Port{}
	for _, p := range sig.Outputs {
		outputs[p.Name] = p
	}
	if _, ok := outputs[StepLogits]; !ok {
		return nil, unsupported("the model has no output %s", ir.Quote(StepLogits))
	}
	hf := false // the attention_mask convention (see generate_hf.go)
	for _, p := range sig.Inputs {
		hf = hf || p.Name == StepAttentionMask
	}
	if batch > 1 && !hf {
		return nil, unsupported("a batch of %d needs the attention_mask convention (a padding mask per prompt); the model has no input %s", batch, ir.Quote(StepAttentionMask))
	}
	// rows binds the batch and sequence axes of input_ids, position_ids
	// and attention_mask: axis 0 the batch, axis 1 one token (or, for
	// attention_mask, the keys: set per specialization below).
	rows := func(p onnx.Port) ([]int, error) {
		if p.Type != "int64" {
			return nil, unsupported("input %s is %s, want int64", ir.Quote(p.Name), p.Type)
		}
		if len(p.Shape) != 2 {
			return nil, unsupported("input %s has shape %v, want [batch, %s]", ir.Quote(p.Name), p.Shape, map[bool]string{true: "past_len + seq", false: "seq"}[p.Name == StepAttentionMask])
		}
		s := []int{batch, 1}
		if d := p.Shape[0]; d >= 0 && d != batch {
			return nil, unsupported("input %s fixes the batch at %d; the decoder's is %d", ir.Quote(p.Name), d, batch)
		}
		switch d := p.Shape[1]; {
		case p.Name == StepAttentionMask && d >= 0:
			return nil, unsupported("input %s fixes its keys at %d; want past_len + seq, a dynamic dimension", ir.Quote(p.Name), d)
		case p.Name != StepAttentionMask && d > 1:
			return nil, unsupported("input %s fixes its sequence at %d; each step takes one token", ir.Quote(p.Name), d)
		}
		return s, nil
	}
	shapes := map[string][]int{}
	var pairs []CachePair
	maxLen := opts.MaxLen
	merged := false
	for _, p := range sig.Inputs {
		switch {
		case hf && p.Name == StepUseCacheBranch:
			if p.Type != "bool" || len(p.Shape) > 1 || len(p.Shape) == 1 && p.Shape[0] != 1 {
				return nil, unsupported("input %s is %s %v, want bool [1]", ir.Quote(p.Name), p.Type, p.Shape)
			}
			m = m.WithConstants(map[string]*onnx.Tensor{p.Name: {Name: p.Name, Type: onnx.Bool, Shape: slices.Clone(p.Shape), Int64: []int64{1}}})
			merged = true
		case hf && (p.Name == StepInputIDs || p.Name == StepAttentionMask || p.Name == StepPositionIDs):
			s, err := rows(p)
			if err != nil {
				return nil, err
			}
			shapes[p.Name] = s
		case !hf && (p.Name == StepInputIDs || p.Name == StepPosition):
			if p.Type != "int64" {
				return nil, unsupported("input %s is %s, want int64", ir.Quote(p.Name), p.Type)
			}
			s := make([]int, len(p.Shape))
			for k, d := range p.Shape {
				s[k] = max(d, 1)
				if d > 1 {
					return nil, unsupported("input %s has shape %v, want one element", ir.Quote(p.Name), p.Shape)
				}
			}
			if p.Shape == nil {
				s = []int{1}
			}
			shapes[p.Name] = s
		case pastName.MatchString(p.Name):
			dt, ok := ir.ParseDType(p.Type)
			if !ok || dt != ir.F32 && dt != ir.F16 {
				return nil, unsupported("input %s is %s, want float32 or float16", ir.Quote(p.Name), p.Type)
			}
			if len(p.Shape) != 4 {
				return nil, unsupported("input %s has shape %v, want [batch, heads, max_len, head_dim]", ir.Quote(p.Name), p.Shape)
			}
			s := make([]int, 4)
			for k, d := range p.Shape {
				s[k] = max(d, 1)
			}
			if d := p.Shape[0]; d < 0 {
				s[0] = batch
			} else if d != batch {
				return nil, unsupported("input %s fixes the batch at %d; the decoder's is %d", ir.Quote(p.Name), d, batch)
			}
			switch d := p.Shape[2]; {
			case d < 0 && maxLen == 0:
				return nil, ir.Errorf(ir.CodeInvalidInput, -1, "max_len", "decoding: the model's cache length (axis 2 of %s) is dynamic; give its max_len", ir.Quote(p.Name))
			case d < 0:
				s[2] = maxLen
			case maxLen != 0 && d != maxLen:
				return nil, ir.Errorf(ir.CodeInvalidInput, -1, "max_len", "decoding: max_len %d, but the model fixes the cache length (axis 2 of %s) at %d", maxLen, ir.Quote(p.Name), d)
			default:
				maxLen = d
			}
			shapes[p.Name] = s
			present := stepPresentOf + p.Name[len(stepPastKey):]
			if _, ok := outputs[present]; !ok {
				return nil, unsupported("input %s has no output %s to pair with", ir.Quote(p.Name), ir.Quote(present))
			}
			pairs = append(pairs, CachePair{Past: p.Name, Present: present, Shape: s, DType: dt})
		default:
			return nil, unsupported("input %s is none of the step's inputs", ir.Quote(p.Name))
		}
	}
	need := []string{StepInputIDs, StepPosition}
	if hf {
		need = []string{StepInputIDs, StepAttentionMask}
	}
	for _, name := range need {
		if _, ok := shapes[name]; !ok {
			return nil, unsupported("the model has no input %s", ir.Quote(name))
		}
	}
	if len(pairs) == 0 {
		return nil, unsupported("the model has no input past_key_values.N.key or .value: no cache to keep")
	}
	for _, p := range sig.Outputs { // a present without its past would be a cache dropped each step
		if rest, ok := strings.CutPrefix(p.Name, stepPresentOf); ok && pastName.MatchString(stepPastKey+rest) {
			if _, ok := shapes[stepPastKey+rest]; !ok {
				return nil, unsupported("output %s has no input %s to pair with", ir.Quote(p.Name), ir.Quote(stepPastKey+rest))
			}
		}
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].Past < pairs[j].Past })
	if hf { // the keys: the past's rows and the step's one
		shapes[StepAttentionMask] = []int{batch, maxLen + 1}
	}
	g, err := m.Specialize(ctx, shapes)
	if err != nil {
		return nil, err
	}
	d := &Decoder{rt: rt, maxLen: maxLen, pairs: pairs, batch: batch, hf: hf, merged: merged}
	if growing(g, sig, pairs) { // rewrite to a static cache of maxLen rows (generate_static.go)
		for _, p := range pairs {
			if p.DType != ir.F32 {
				return nil, unsupported("input %s is %v: a cache that grows a row a step is rewritten to a static one of float32 only so far", ir.Quote(p.Past), p.DType)
			}
		}
		if maxLen < 2 {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, "max_len", "decoding: max_len %d: a cache that grows a row a step is rewritten to a static one of at least 2 rows", maxLen)
		}
		short := map[string][]int{}
		for name, s := range shapes {
			short[name] = s
		}
		for _, p := range pairs {
			s := slices.Clone(p.Shape)
			s[2] = maxLen - 1
			short[p.Past] = s
		}
		if hf {
			short[StepAttentionMask] = []int{batch, maxLen}
		}
		g1, err := m.Specialize(ctx, short)
		if err != nil {
			return nil, err
		}
		scatter := (opts.ScatterCache || os.Getenv("GPUCC_KV_WRITE") == "scatter") && rt.info.TypedBuffers && rt.info.TypedIslands
		rw, err := staticCache(g1, g, pairs, maxLen, hf, scatter)
		if err != nil && hf && shapes[StepPositionIDs] == nil {
			err = ir.Errorf(ir.CodeUnsupported, -1, StepPositionIDs, "decoding: the model has no input position_ids, and its positions come from inside the graph, which a static cache cannot bind (%v); export it with position_ids", err)
		}
		if err != nil {
			return nil, err
		}
		g, d.grown = rw.g, &rw
	} else if hf {
		return nil, unsupported("the attention_mask convention is bound only to a cache that grows a row a step (present = Concat(past, row), its axis 2 dynamic); this model's presents do not")
	}
	for _, o := range g.Outputs {
		n := g.Nodes[o.ID]
		if o.Name == StepLogits {
			if n.DType != ir.F32 || len(n.Shape) == 0 || n.Shape.Len() != batch*n.Shape[len(n.Shape)-1] {
				return nil, unsupported("output logits is %v %v, want float32 of one row a prompt", n.DType, n.Shape)
			}
			d.vocab = n.Shape[len(n.Shape)-1]
		}
		for _, p := range pairs {
			if o.Name == p.Present && (n.DType != p.DType || !n.Shape.Equal(p.Shape)) {
				return nil, unsupported("output %s is %v %v; its past %s is %v %v", ir.Quote(o.Name), n.DType, n.Shape, ir.Quote(p.Past), p.DType, p.Shape)
			}
		}
	}
	for _, n := range g.Nodes {
		switch {
		case n.Op != ir.OpInput:
		case n.Name == StepInputIDs:
			d.idShape = slices.Clone(n.Shape)
		case n.Name == StepPosition:
			d.posShp = slices.Clone(n.Shape)
		case n.Name == StepAttentionMask:
			d.maskShp = slices.Clone(n.Shape)
		case n.Name == StepPositionIDs:
			d.pidShp = slices.Clone(n.Shape)
		}
	}
	if d.idShape == nil || d.posShp == nil {
		return nil, unsupported("the model computes nothing from input_ids or position")
	}
	for _, n := range g.Nodes {
		if n.Op == ir.OpAttention {
			d.attention++
		}
	}
	if d.exe, err = rt.Compile(ctx, g); err != nil {
		return nil, err
	}
	if opts.Prefill != 0 {
		if err := d.compilePrefill(ctx, m, shapes, opts.Prefill); err != nil {
			d.exe.Release()
			return nil, err
		}
	}
	d.compile = time.Since(start)
	return d, nil
}

// MaxLen returns the cache's rows.
func (d *Decoder) MaxLen() int { return d.maxLen }

// Vocab returns the logits' length: token ids are below it.
func (d *Decoder) Vocab() int { return d.vocab }

// Pairs returns the cache's tensors, by past name.
func (d *Decoder) Pairs() []CachePair { return slices.Clone(d.pairs) }

// Release releases the compiled step.
func (d *Decoder) Release() {
	d.exe.Release()
	if d.prefill != nil {
		d.prefill.Release()
	}
}

// GenerateOptions configure one Generate.
type GenerateOptions struct {
	// Tokens is the number of tokens to generate, at least 1.
	Tokens int
	// Logits keeps every step's logits in Generation.Logits.
	Logits bool
	// OnToken, when set, is called with each generated token as soon as
	// its step is done (i counts from 0); an error it returns ends
	// Generate with that error.
	OnToken func(i int, token int64, ms float64) error
	// Stop lists token ids that end a prompt's generation (an end of
	// sequence): the first one generated is the prompt's last token, kept
	// in its Tokens as Hugging Face keeps eos, and Generation.Stopped is
	// set. Decoding ends when every prompt has ended, or after Tokens.
	Stop []int64
	// Temperature, above 0, samples each generated token from
	// softmax(logits / Temperature) over the TopK largest logits (0: all;
	// ties to the lowest id), computed in float64 on the host, instead of
	// taking the argmax; prompt b of a batch draws from a PCG generator
	// seeded (Seed, b). The logits being every backend's same bits, a seed
	// gives the same tokens on every backend. A step whose logits hold a
	// NaN takes the argmax (the first NaN). 0: greedy.
	Temperature float64
	TopK        int
	Seed        uint64
}

// Generation is what Generate returns.
type Generation struct {
	Backend string  `json:"backend"`
	Prompt  []int64 `json:"prompt"`
	Tokens  []int64 `json:"tokens"` // the generated tokens, in order
	// Stopped says that the last token is one of GenerateOptions.Stop.
	Stopped bool `json:"stopped"`
	// Cache says where the cache lived between steps: "device" (each
	// present kept as a DeviceTensor, fed as the next past) or "host"
	// (read back and sent again each step: the backend's typed graphs
	// return host outputs only).
	Cache  string `json:"cache"`
	MaxLen int    `json:"maxLen"`
	// CompileMs is NewDecoder's specialization and compile.
	CompileMs float64 `json:"compileMs"`
	// StepMs is each step's wall time (run, logits read, argmax), in
	// order: step p feeds the token at position p, so there are
	// len(Prompt)+len(Tokens)-1 steps.
	StepMs []float64 `json:"stepMs"`
	// PrefillMs is the prompt's steps up to the first generated token
	// (the first len(Prompt) steps), summed.
	PrefillMs float64 `json:"prefillMs"`
	// DecodeMs is the median of the later steps, one generated token
	// each (0 when only one token is generated).
	DecodeMs float64 `json:"decodeMs"`
	// DispatchMs is the median of the same steps' dispatch stage
	// (Timings.DispatchMs: the kernels, on the GPU's clock where
	// DispatchClock says "gpu-timestamp"): DecodeMs less it is what a step
	// spends beside its kernels (transfers, submission, waits, argmax).
	DispatchMs    float64 `json:"dispatchMs"`
	DispatchClock string  `json:"dispatchClock"`
	// StepKernels is the kernels a decoding step dispatches, and
	// StepBytesWritten the bytes they write, counted from the step's plans
	// where the backend's are known here (native, wasm), by the backend
	// for its last step where it counts them (webgpu: its typed kernels'
	// outputs, a scatter in place its rows, and its islands' plans), 0
	// elsewhere: the per-token work that Decoder.Explain details.
	StepKernels      int   `json:"stepKernels"`
	StepBytesWritten int64 `json:"stepBytesWritten"`
	// Logits holds each step's logits with GenerateOptions.Logits.
	Logits [][]float32 `json:"-"`
}

// Generate runs greedy decoding: the prompt's tokens, then opts.Tokens
// generated ones. Every prompt id must be below Vocab, and the steps'
// positions, 0 … len(prompt)+opts.Tokens-2, below MaxLen (the last token
// generated is not fed back); otherwise it fails with invalid_input before
// running anything. A Decoder of a batch above one takes GenerateBatch.
func (d *Decoder) Generate(ctx context.Context, prompt []int64, opts GenerateOptions) (*Generation, error) {
	if d.batch != 1 {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "batch", "generate: the decoder's batch is %d prompts; give them to GenerateBatch", d.batch)
	}
	gens, err := d.GenerateBatch(ctx, [][]int64{prompt}, opts)
	if err != nil {
		return nil, err
	}
	return gens[0], nil
}

// GenerateBatch runs greedy decoding of Batch prompts together, one step
// feeding one token of each: the shorter prompts are padded on the left
// (as Hugging Face pads a batch for decoding), their padding masked out by
// attention_mask, so each prompt's positions start at 0 where its tokens
// do. Step p writes cache row p of every prompt; a prompt padded by k
// rows feeds its token i at step k + i. Each prompt's Generation holds
// its own tokens and logits (from its first token's step on) and the
// batch's step times. opts.OnToken is called for each prompt's token in
// turn, prompts in order. The checks are Generate's, for the longest
// prompt. With a prefill (DecoderOptions.Prefill) every prompt is padded
// to its length and the prompts' steps run as one: the first step's time
// is the prefill's, the prompt's other steps take none, and each step's
// logits are the prefill's rows.
func (d *Decoder) GenerateBatch(ctx context.Context, prompts [][]int64, opts GenerateOptions) ([]*Generation, error) {
	bad := func(field, format string, a ...any) error {
		return ir.Errorf(ir.CodeInvalidInput, -1, field, "generate: "+format, a...)
	}
	if len(prompts) != d.batch {
		return nil, bad("batch", "%d prompts; the decoder's batch is %d", len(prompts), d.batch)
	}
	long := d.prefillLen // a prefill pads every prompt to its length
	for b, prompt := range prompts {
		if d.prefill != nil && len(prompt) > d.prefillLen {
			return nil, bad("prompt", "prompt %d has %d tokens; the decoder's prefill takes at most %d", b, len(prompt), d.prefillLen)
		}
		long = max(long, len(prompt))
	}
	for b, prompt := range prompts {
		if len(prompt) == 0 {
			return nil, bad("prompt", "prompt %d is empty; give at least one token id", b)
		}
	}
	switch {
	case opts.Tokens < 1:
		return nil, bad("tokens", "%d tokens to generate; want at least 1", opts.Tokens)
	case !(opts.Temperature >= 0) || math.IsInf(opts.Temperature, 1):
		return nil, bad("temperature", "temperature %v; want 0 (greedy) or a finite positive number", opts.Temperature)
	case opts.TopK < 0:
		return nil, bad("top_k", "top_k %d is negative", opts.TopK)
	case opts.Tokens-1 > d.maxLen:
		return nil, bad("max_len", "%d tokens to generate do not fit a cache of max_len %d", opts.Tokens, d.maxLen)
	case long-1 > d.maxLen-opts.Tokens:
		return nil, bad("max_len", "a prompt of %d tokens and %d generated need max_len %d (positions 0 to %d); it is %d",
			long, opts.Tokens, long+opts.Tokens-1, long+opts.Tokens-2, d.maxLen)
	}
	for b, prompt := range prompts {
		for i, id := range prompt {
			if id < 0 || id >= int64(d.vocab) {
				if d.batch == 1 {
					return nil, bad("prompt", "prompt token %d is %d, outside the vocabulary [0, %d)", i, id, d.vocab)
				}
				return nil, bad("prompt", "prompt %d's token %d is %d, outside the vocabulary [0, %d)", b, i, id, d.vocab)
			}
		}
	}
	gens := make([]*Generation, d.batch)
	toks := make([][]int64, d.batch)
	pads := make([]int, d.batch)
	for b, prompt := range prompts {
		gens[b] = &Generation{Backend: d.rt.Backend(), Prompt: slices.Clone(prompt), MaxLen: d.maxLen,
			CompileMs: math.Round(ms(d.compile)*1e3) / 1e3, Tokens: []int64{}}
		toks[b] = slices.Clone(prompt)
		pads[b] = long - len(prompt)
	}
	c, err := d.newCache(ctx)
	if err != nil {
		return nil, err
	}
	defer c.release()
	steps := long + opts.Tokens - 1
	var stepMs, dispatch []float64 // the batch's steps; the decode steps' dispatch stages
	clock := ""
	feed := make([]int64, d.batch)
	var pre []float32 // the prefill's logits, by position then prompt
	rngs := make([]*rand.Rand, d.batch)
	for b := range rngs {
		rngs[b] = rand.New(rand.NewPCG(opts.Seed, uint64(b)))
	}
	for p := range steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		for b := range feed {
			feed[b] = 0 // a padding row's token: masked out of every other
			if p >= pads[b] {
				feed[b] = toks[b][p-pads[b]]
			}
		}
		var logits []float32
		var tm Timings
		var err error
		switch {
		case d.prefill != nil && p == 0:
			pre, err = c.prefill(ctx, toks, pads)
			logits = pre[:d.batch*d.vocab]
		case d.prefill != nil && p < long:
			logits = pre[p*d.batch*d.vocab : (p+1)*d.batch*d.vocab]
		default:
			logits, tm, err = c.step(ctx, feed, int64(p), pads)
		}
		if err != nil {
			return nil, err
		}
		if p >= long {
			dispatch = append(dispatch, tm.DispatchMs)
			clock = tm.DispatchClock
		}
		next := p+1 >= long
		if next {
			for b := range toks {
				row := logits[b*d.vocab : (b+1)*d.vocab]
				if opts.Temperature > 0 {
					toks[b] = append(toks[b], sample(row, opts.Temperature, opts.TopK, rngs[b]))
				} else {
					toks[b] = append(toks[b], argmax(row))
				}
			}
		}
		took := math.Round(ms(time.Since(t0))*1e3) / 1e3 // to the microsecond, as Timings
		stepMs = append(stepMs, took)
		for b, gen := range gens {
			if gen.Stopped { // an ended prompt's row still runs, unread
				continue
			}
			if p >= pads[b] {
				gen.StepMs = append(gen.StepMs, took)
				if opts.Logits {
					gen.Logits = append(gen.Logits, logits[b*d.vocab:(b+1)*d.vocab])
				}
			}
			if !next {
				continue
			}
			gen.Tokens = append(gen.Tokens, toks[b][len(toks[b])-1])
			gen.Stopped = slices.Contains(opts.Stop, gen.Tokens[len(gen.Tokens)-1])
			if opts.OnToken != nil {
				if err := opts.OnToken(len(gen.Tokens)-1, gen.Tokens[len(gen.Tokens)-1], took); err != nil {
					return nil, err
				}
			}
		}
		if !slices.ContainsFunc(gens, func(g *Generation) bool { return !g.Stopped }) {
			break
		}
	}
	kernels, written := d.exe.Kernels(), int64(0)
	if sc, ok := d.stepCost(); ok {
		written = sc.cost.BytesWritten
	} else if bw, ok := d.exe.typedExe.(interface{ BytesWritten() int64 }); ok { // the backend's count of its last step
		written = bw.BytesWritten()
	}
	for _, gen := range gens {
		gen.Cache = c.where()
		gen.StepKernels, gen.StepBytesWritten = kernels, written
		gen.DispatchClock = clock
		for _, t := range stepMs[:long] {
			gen.PrefillMs += t
		}
		gen.PrefillMs = math.Round(gen.PrefillMs*1e3) / 1e3
		gen.DecodeMs = math.Round(median(stepMs[long:])*1e3) / 1e3
		gen.DispatchMs = math.Round(median(dispatch)*1e3) / 1e3
	}
	return gens, nil
}

// median returns the median of v (the mean of the middle two for an even
// length), 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 0 {
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return v[len(v)/2]
}

// sample draws an id from softmax(v / temperature) over v's topK largest
// (0: all; ties to the lowest id), in float64; a NaN in v gives argmax's.
func sample(v []float32, temperature float64, topK int, rng *rand.Rand) int64 {
	if slices.ContainsFunc(v, func(x float32) bool { return x != x }) {
		return argmax(v)
	}
	ids := make([]int, len(v))
	for i := range ids {
		ids[i] = i
	}
	slices.SortStableFunc(ids, func(a, b int) int { return cmp.Compare(v[b], v[a]) })
	if topK > 0 && topK < len(ids) {
		ids = ids[:topK]
	}
	top := float64(v[ids[0]])
	w := make([]float64, len(ids))
	total := 0.0
	for k, i := range ids {
		if math.IsInf(top, 0) { // an infinite maximum takes all the mass
			if float64(v[i]) == top {
				w[k] = 1
			}
		} else {
			w[k] = math.Exp((float64(v[i]) - top) / temperature)
		}
		total += w[k]
	}
	u := rng.Float64() * total
	for k, i := range ids {
		if u -= w[k]; u < 0 {
			return int64(i)
		}
	}
	return int64(ids[0]) // u within rounding of total
}

// argmax is numpy's argmax of one row: the lowest index of the maximum,
// or of the first NaN.
func argmax(v []float32) int64 {
	best := 0
	for i, x := range v {
		if x != x {
			return int64(i)
		}
		if x > v[best] {
			best = i
		}
	}
	return int64(best)
}

// kvCache is one Generate's cache: on the device (dev) or the host (host).
type kvCache struct {
	d    *Decoder
	dev  map[string]*DeviceTensor // by past name
	host map[string]Tensor        // by past name
}

// newCache returns an empty cache (zeros), on the device where the
// backend keeps a typed graph's outputs there: the first step tells, and
// a refusal (unsupported) moves the cache to the host.
func (d *Decoder) newCache(ctx context.Context) (*kvCache, error) {
	c := &kvCache{d: d}
	if d.forget || d.host {
		return c.toHost(), nil
	}
	c.dev = map[string]*DeviceTensor{}
	for _, p := range d.pairs {
		t, err := d.rt.UploadTensor(ctx, Tensor{Shape: p.Shape, DType: p.DType, Data: make([]float32, p.Shape.Len())})
		if err != nil {
			c.release()
			return nil, err
		}
		c.dev[p.Past] = t
	}
	return c, nil
}

// toHost moves the cache to the host, empty; only before the first step.
func (c *kvCache) toHost() *kvCache {
	c.release()
	c.host = map[string]Tensor{}
	for _, p := range c.d.pairs {
		c.host[p.Past] = Tensor{Shape: p.Shape, DType: p.DType, Data: make([]float32, p.Shape.Len())}
	}
	return c
}

func (c *kvCache) where() string {
	if c.dev != nil {
		return "device"
	}
	return "host"
}

// step runs one decoding step (each prompt's token at position) and
// returns its logits (a row a prompt) and the run's timings, the cache
// advanced; pads[b] is prompt b's left padding (the attention_mask
// convention's mask and position_ids).
func (c *kvCache) step(ctx context.Context, tokens []int64, position int64, pads []int) ([]float32, Timings, error) {
	d := c.d
	in := Inputs{
		StepInputIDs: Tensor{Shape: d.idShape, DType: ir.I64, Ints: slices.Clone(tokens)},
		StepPosition: Tensor{Shape: d.posShp, DType: ir.I64, Ints: []int64{position}},
	}
	if d.maskShp != nil {
		in[StepAttentionMask] = Tensor{Shape: d.maskShp, DType: ir.I64, Ints: attentionMask(d.maxLen, position, pads)}
	}
	if d.pidShp != nil {
		in[StepPositionIDs] = Tensor{Shape: d.pidShp, DType: ir.I64, Ints: positionIDs(position, pads)}
	}
	var opts RunOptions
	if c.dev != nil { // each past donated: the run consumes it, and a backend that can writes its row in place
		for _, p := range d.pairs {
			in[p.Past] = c.dev[p.Past]
			opts.Keep = append(opts.Keep, p.Present)
			opts.Donate = append(opts.Donate, p.Past)
		}
	} else {
		for _, p := range d.pairs {
			in[p.Past] = c.host[p.Past]
		}
	}
	res, err := d.exe.RunWith(ctx, in, opts)
	if c.dev != nil && err != nil {
		c.dev = nil // the pasts were consumed
	}
	if err != nil && position == 0 && CodeOf(err) == ir.CodeUnsupported && c.host == nil {
		c.toHost() // the backend keeps no typed outputs on the device
		return c.step(ctx, tokens, position, pads)
	}
	if err != nil {
		return nil, Timings{}, err
	}
	logits, ok := res.Outputs[StepLogits]
	if !ok || len(logits.Data) != d.batch*d.vocab {
		for _, t := range res.Kept {
			t.Release()
		}
		return nil, Timings{}, &Error{Code: ir.CodeInternal, Backend: res.Backend, Err: errors.New("decoding: the step returned no logits of the vocabulary's length")}
	}
	for _, p := range d.pairs {
		switch {
		case d.forget:
		case c.dev != nil:
			t := res.Kept[p.Present]
			if t == nil {
				return nil, Timings{}, &Error{Code: ir.CodeInternal, Backend: res.Backend, Err: fmt.Errorf("decoding: the step kept no %s", p.Present)}
			}
			c.dev[p.Past] = t // the past was donated: the run released it
		default:
			c.host[p.Past] = res.Outputs[p.Present]
		}
	}
	return logits.Data, res.Timings, nil
}

// release frees the cache's device tensors.
func (c *kvCache) release() {
	for _, t := range c.dev {
		t.Release()
	}
	c.dev = nil
}

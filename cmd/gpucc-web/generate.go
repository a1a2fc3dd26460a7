//go:build js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"syscall/js"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// generation is gpucc.generate's answer: gpucc generate --json's object.
type generation struct {
	*gpucc.Generation
	Adapter gpucc.Adapter `json:"adapter"`
}

// generateOptions are gpucc.generate's options beyond the backend's.
type generateOptions struct {
	prompt  []int64
	tokens  int
	maxLen  int
	onToken js.Value // a function, or undefined
}

// generate is gpucc.generate(model, options): greedy decoding of an .onnx
// model of one decoding step with a KV cache (gpucc.Decoder's convention,
// as gpucc generate runs it) in the page. options: backend,
// allowSoftware, prompt (an array of token ids), tokens (ids to generate,
// default 16), maxLen (the cache's rows; 0 or absent: the prompt's length
// plus tokens minus 1) and onToken(i, id, ms), called as each id comes,
// the page given a turn of its event loop after each so that it can show
// it (the step's own time, ms, leaves that turn out). The promise resolves
// to gpucc generate --json's object (backend, adapter, prompt, tokens,
// cache, maxLen, compileMs, stepMs, prefillMs, decodeMs) and rejects with
// {code, message}.
func generate(_ js.Value, args []js.Value) any {
	model, err := modelBytes(args)
	var opts gpucc.Options
	var g generateOptions
	if err == nil {
		var o js.Value
		if len(args) > 1 {
			o = args[1]
		}
		opts = parseOptions(o)
		g, err = parseGenerateOptions(o)
	}
	return promise(func() ([]byte, error) {
		if err != nil {
			return nil, err
		}
		l := limits
		l.NonFinite = true // a causal mask holds -Inf
		opts.Limits = l
		m, err := onnx.Parse(bytes.NewReader(model), onnx.Options{Limits: l})
		if err != nil {
			return nil, err
		}
		rt, err := open(opts)
		if err != nil {
			return nil, err
		}
		ctx := context.Background()
		if g.maxLen == 0 {
			g.maxLen = max(len(g.prompt)+g.tokens-1, 1)
		}
		d, err := rt.NewDecoder(ctx, m, gpucc.DecoderOptions{MaxLen: g.maxLen})
		if err != nil {
			return nil, err
		}
		defer d.Release()
		gen, err := d.Generate(ctx, g.prompt, gpucc.GenerateOptions{Tokens: g.tokens, OnToken: func(i int, id int64, ms float64) error {
			if g.onToken.Type() == js.TypeFunction {
				g.onToken.Invoke(i, id, ms)
				time.Sleep(time.Millisecond) // a turn of the event loop: the page paints the id
			}
			return nil
		}})
		if err != nil {
			return nil, err
		}
		return json.Marshal(generation{Generation: gen, Adapter: rt.Adapter()})
	})
}

// parseGenerateOptions reads options.prompt, tokens, maxLen and onToken. A
// JS exception while reading them is invalid_input, not the end of the
// program; ids and counts that are not integers are invalid_input too.
func parseGenerateOptions(o js.Value) (g generateOptions, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = ir.Errorf(ir.CodeInvalidInput, -1, "", "reading gpucc.generate's options: %v", r)
		}
	}()
	g.tokens = 16
	if o.Type() != js.TypeObject {
		return g, nil
	}
	integer := func(v js.Value, field string) (int64, error) {
		if v.Type() != js.TypeNumber || v.Float() != float64(int64(v.Float())) {
			return 0, ir.Errorf(ir.CodeInvalidInput, -1, field, "gpucc.generate: %s must be an integer, got %s", field, js.Global().Get("String").Invoke(v).String())
		}
		return int64(v.Float()), nil
	}
	if p := o.Get("prompt"); !p.IsUndefined() {
		if !js.Global().Get("Array").Call("isArray", p).Bool() {
			return g, ir.Errorf(ir.CodeInvalidInput, -1, "prompt", "gpucc.generate: prompt must be an array of token ids")
		}
		for i := range p.Length() {
			id, err := integer(p.Index(i), "prompt")
			if err != nil {
				return g, err
			}
			g.prompt = append(g.prompt, id)
		}
	}
	for _, f := range []struct {
		name string
		p    *int
	}{{"tokens", &g.tokens}, {"maxLen", &g.maxLen}} {
		if v := o.Get(f.name); !v.IsUndefined() {
			n, err := integer(v, f.name)
			if err != nil {
				return g, err
			}
			if n < 0 || n > 1<<20 {
				return g, ir.Errorf(ir.CodeInvalidInput, -1, f.name, "gpucc.generate: %s %d is outside [0, 2^20]", f.name, n)
			}
			*f.p = int(n)
		}
	}
	g.onToken = o.Get("onToken")
	return g, nil
}

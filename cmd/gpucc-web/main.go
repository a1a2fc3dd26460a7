//go:build js

// Command gpucc-web is gpucc for the browser (GOOS=js GOARCH=wasm). It
// exposes one global:
//
//	gpucc.run(graph, {backend: "auto", allowSoftware: false}) → Promise
//
// graph is protocol v1 JSON (a string, or an object that is stringified).
// The promise resolves to the object `gpucc run` prints (backend, adapter,
// outputs, timings, fallbackAttempts) and rejects with {code, message},
// code being one of ir's stable error codes. gpucc.backends lists the
// backends built in. Opened backends are kept per option set, so repeated
// runs (the Life demo) reuse one context and its compiled shaders.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"syscall/js"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	_ "github.com/gpucc/gpucc/runtime/all" // the browser backends
)

func main() {
	api := js.Global().Get("Object").New()
	api.Set("run", js.FuncOf(run))
	backends := []any{}
	for _, b := range gpucc.Backends() {
		backends = append(backends, b)
	}
	api.Set("backends", backends)
	js.Global().Set("gpucc", api)
	if ready := js.Global().Get("gpuccReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {}
}

var (
	mu       sync.Mutex
	runtimes = map[gpucc.Options]*gpucc.Runtime{}
)

// run is gpucc.run: it returns a Promise and does the work in a goroutine,
// because backends await JS promises (WebGPU's mapAsync) and must not block
// the event loop.
func run(_ js.Value, args []js.Value) any {
	graph, opts, err := parseArgs(args)
	executor := js.FuncOf(func(_ js.Value, pr []js.Value) any {
		resolve, reject := pr[0], pr[1]
		go func() {
			if err != nil {
				reject.Invoke(errorObject(err))
				return
			}
			out, err := execute(graph, opts)
			if err != nil {
				reject.Invoke(errorObject(err))
				return
			}
			resolve.Invoke(js.Global().Get("JSON").Call("parse", string(out)))
		}()
		return nil
	})
	// The Promise constructor calls the executor before it returns, so the
	// function can be released here instead of leaking one per call.
	defer executor.Release()
	return js.Global().Get("Promise").New(executor)
}

// parseArgs reads (graph, options) from JS. A JS exception while reading
// them (JSON.stringify throws on a cyclic object or a BigInt) is an
// invalid_graph error: left to panic, it would end the wasm program, and
// every later gpucc.run with it.
func parseArgs(args []js.Value) (raw []byte, opts gpucc.Options, err error) {
	defer func() {
		if r := recover(); r != nil {
			raw, err = nil, ir.Errorf(ir.CodeInvalidGraph, -1, "", "reading gpucc.run's arguments: %v", r)
		}
	}()
	if len(args) == 0 {
		return nil, opts, ir.Errorf(ir.CodeInvalidGraph, -1, "", "gpucc.run needs a graph")
	}
	g := args[0]
	switch g.Type() {
	case js.TypeString:
		raw = []byte(g.String())
	case js.TypeObject:
		raw = []byte(js.Global().Get("JSON").Call("stringify", g).String())
	default:
		return nil, opts, ir.Errorf(ir.CodeInvalidGraph, -1, "", "graph must be a JSON string or object, got %s", g.Type())
	}
	opts.Backend = "auto"
	if len(args) > 1 && args[1].Type() == js.TypeObject {
		o := args[1]
		if b := o.Get("backend"); b.Type() == js.TypeString && b.String() != "" {
			opts.Backend = b.String()
		}
		opts.AllowSoftware = o.Get("allowSoftware").Truthy()
	}
	return raw, opts, nil
}

// execute decodes and runs one graph, returning the result as JSON.
func execute(raw []byte, opts gpucc.Options) (out []byte, err error) {
	defer func() { // a panic would end the wasm program, and every later run with it
		if r := recover(); r != nil {
			err = &gpucc.Error{Code: ir.CodeInternal, Backend: opts.Backend, Err: fmt.Errorf("panic: %v", r)}
		}
	}()
	g, err := ir.DecodeBytes(raw, opts.Limits)
	if err != nil {
		return nil, err
	}
	rt, err := open(opts)
	if err != nil {
		return nil, err
	}
	res, err := rt.Run(context.Background(), g)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// open returns the cached runtime for opts, opening it on first use.
func open(opts gpucc.Options) (*gpucc.Runtime, error) {
	mu.Lock()
	defer mu.Unlock()
	if rt, ok := runtimes[opts]; ok {
		return rt, nil
	}
	rt, err := gpucc.Open(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	runtimes[opts] = rt
	return rt, nil
}

// errorObject is the rejection value: {code, message}.
func errorObject(err error) any {
	code := gpucc.CodeOf(err)
	var ie *ir.Error
	if errors.As(err, &ie) {
		code = ie.Code
	}
	return map[string]any{"code": string(code), "message": fmt.Sprint(err)}
}

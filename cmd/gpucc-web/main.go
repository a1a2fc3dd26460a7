//go:build js

// Command gpucc-web is gpucc for the browser (GOOS=js GOARCH=wasm). It
// exposes one global:
//
//	gpucc.run(graph, {backend: "auto", allowSoftware: false, threads: 0, nonFinite: false}) → Promise
//	gpucc.onnxSignature(model) → Promise
//	gpucc.runONNX(model, {backend, allowSoftware, nonFinite, inputShapes, inputs, npy, constants}) → Promise
//	gpucc.generate(model, {backend, allowSoftware, prompt, tokens, maxLen, onToken}) → Promise
//	gpucc.createPythonGPUAdapter(engine, {allowExecute, maxPending, backend, allowSoftware}) → adapter
//
// graph is protocol v1 JSON (a string, or an object that is stringified).
// The promise resolves to the object `gpucc run` prints (backend, adapter,
// outputs, timings, fallbackAttempts) and rejects with {code, message},
// code being one of ir's stable error codes. nonFinite lifts the seed's
// host policy for a graph's outputs (finite float32 out): with it, an
// output may hold ±Inf and NaN (ir.Limits.NonFinite), written in the
// result as the strings "Infinity", "-Infinity" and "NaN" (gpucc.Tensor's
// JSON), which Number() and Float32Array read back. model is an .onnx file's
// bytes (a Uint8Array or an ArrayBuffer), imported by the onnx package
// here in the page (onnx.go). The adapter is the seed's host model for a
// sandboxed guest engine (host.go). gpucc.backends lists the backends built in.
// Opened backends are kept per backend choice: gpucc.run's graphs and every
// model of gpucc.runONNX share one runtime (shared), so repeated runs (the
// Life demo) and models reuse one context and its compiled shaders;
// gpucc.openRuntimes() says how many the page holds.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"syscall/js"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/modellimits"
	"github.com/gpucc/gpucc/ir"
	_ "github.com/gpucc/gpucc/runtime/all" // the browser backends
)

func main() {
	api := js.Global().Get("Object").New()
	api.Set("run", js.FuncOf(run))
	api.Set("onnxSignature", js.FuncOf(onnxSignature))
	api.Set("runONNX", js.FuncOf(runONNX))
	api.Set("generate", js.FuncOf(generate)) // generate.go
	api.Set("openRuntimes", js.FuncOf(openRuntimes))
	api.Set("createPythonGPUAdapter", js.FuncOf(createAdapter))
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

// run is gpucc.run.
func run(_ js.Value, args []js.Value) any {
	graph, opts, err := parseArgs(args)
	return promise(func() ([]byte, error) {
		if err != nil {
			return nil, err
		}
		return execute(graph, opts)
	})
}

// promise returns a Promise of work's JSON, parsed, or of its error as
// errorObject. work runs in a goroutine, because backends await JS
// promises (WebGPU's mapAsync) and must not block the event loop; a panic
// in it is an internal error, since it would end the wasm program, and
// every later call with it.
func promise(work func() ([]byte, error)) js.Value {
	executor := js.FuncOf(func(_ js.Value, pr []js.Value) any {
		resolve, reject := pr[0], pr[1]
		go func() {
			out, err := func() (out []byte, err error) {
				defer func() {
					if r := recover(); r != nil {
						err = &gpucc.Error{Code: ir.CodeInternal, Err: fmt.Errorf("panic: %v", r)}
					}
				}()
				return work()
			}()
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
	if len(args) > 1 {
		opts = parseOptions(args[1])
	} else {
		opts = parseOptions(js.Undefined())
	}
	return raw, opts, nil
}

// parseOptions reads {backend, allowSoftware, threads, nonFinite} from o (any
// value: what is not an object means the defaults).
func parseOptions(o js.Value) gpucc.Options {
	opts := gpucc.Options{Backend: "auto"}
	if o.Type() == js.TypeObject {
		if b := o.Get("backend"); b.Type() == js.TypeString && b.String() != "" {
			opts.Backend = b.String()
		}
		opts.AllowSoftware = o.Get("allowSoftware").Truthy()
		// threads: the wasm backend's threads (0 or absent: the page's
		// cores where it is cross-origin isolated, runtime/wasm).
		if n := o.Get("threads"); n.Type() == js.TypeNumber {
			opts.Threads = n.Int()
		}
		opts.Limits.NonFinite = o.Get("nonFinite").Truthy()
	}
	return opts
}

// execute decodes and runs one graph, returning the result as JSON.
func execute(raw []byte, opts gpucc.Options) ([]byte, error) {
	g, err := ir.DecodeBytes(raw, opts.Limits)
	if err != nil {
		return nil, err
	}
	rt, err := shared(opts)
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

// shared is the runtime gpucc.run's graphs and gpucc.runONNX's models
// share on opts' backend: its limits are the widest the page sizes a
// model to (modellimits.Caps of the largest model), and each caller
// validates its graph under its own limits first (the seed's for a
// protocol v1 graph, the model's sized ones for a model). The compile
// checks under the limits alone, and no kernel depends on them, so the
// bits are the same. A runtime per model's limits held a WebGPU device
// or a WebGL2 context each, never released: Chromium keeps 16 WebGL
// contexts and loses the oldest past them (TestOneRuntime). The one
// limit kept from opts is the output policy (nonFinite), which the run
// applies: a caller who asks for it gets a second runtime.
func shared(opts gpucc.Options) (*gpucc.Runtime, error) {
	nonFinite := opts.Limits.NonFinite
	opts.Limits = sharedLimits
	opts.Limits.NonFinite = nonFinite
	return open(opts)
}

// sharedLimits are shared's runtime limits: the caps of a model of
// modellimits.MaxModelBytes, with the seed's finite rule.
var sharedLimits = modellimits.Caps(modellimits.MaxModelBytes)

// openRuntimes is gpucc.openRuntimes(): how many runtimes the page holds,
// for the tests.
func openRuntimes(js.Value, []js.Value) any {
	mu.Lock()
	defer mu.Unlock()
	return len(runtimes)
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

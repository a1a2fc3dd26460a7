//go:build js

package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"strings"
	"syscall/js"

	"github.com/gpucc/gpucc/codegen/cache"
)

// In the page the backend's modules run in the browser's own WebAssembly
// (V8 in Chromium), not in wazero, and the page, which has no Clang, asks
// the server that served it to build them (BuildPath, answered by
// ServeBuild).

// BuildPath is the path, relative to the page, that answers BuildRequests.
const BuildPath = "wasm/module"

// pageSIMD asks for SIMD128 modules: V8 runs them to the bit (web's
// TestWasmPage), and wazero's miscompile does not concern the page.
const pageSIMD = true

// newEngine is the page's WebAssembly, running kernels on threads
// threads where the page can (pageThreads; 0 is its default).
func newEngine(threads int) (engine, error) {
	if threads < 0 {
		return nil, fmt.Errorf("threads %d: want 0 (the page's cores) or a positive count", threads)
	}
	n, why := pageThreads(threads)
	return &pageEngine{n: n, why: why}, nil
}

// remoteBuild asks the page's server for each module.
func remoteBuild() (func(context.Context, string, BuildRequest) ([]byte, error), func(string) cache.Key) {
	return fetchModule, func(source string) cache.Key {
		return cache.NewKey([]byte(fmt.Sprint("page-server simd128=", pageSIMD)), []byte(source))
	}
}

// fetchModule posts req to BuildPath and returns the module, refusing one
// built from another source than the page's own.
func fetchModule(ctx context.Context, source string, req BuildRequest) ([]byte, error) {
	req.SIMD = pageSIMD
	body, err := req.Encode()
	if err != nil {
		return nil, fmt.Errorf("encoding the build request: %w", err)
	}
	arr := js.Global().Get("Uint8Array").New(len(body))
	js.CopyBytesToJS(arr, body)
	init := js.Global().Get("Object").New()
	init.Set("method", "POST")
	init.Set("body", arr)
	// gpucc serve --token holds the endpoint to its token: the page's
	// app.js sets gpuccToken from the address's #token=.
	if tok := js.Global().Get("gpuccToken"); tok.Type() == js.TypeString && tok.String() != "" {
		headers := js.Global().Get("Object").New()
		headers.Set("Authorization", "Bearer "+tok.String())
		init.Set("headers", headers)
	}
	resp, err := await(ctx, js.Global().Call("fetch", BuildPath, init))
	if err != nil {
		return nil, fmt.Errorf("asking the page's server for the module: %w", err)
	}
	buf, err := await(ctx, resp.Call("arrayBuffer"))
	if err != nil {
		return nil, fmt.Errorf("reading the page's server's module: %w", err)
	}
	b := make([]byte, buf.Get("byteLength").Int())
	js.CopyBytesToGo(b, js.Global().Get("Uint8Array").New(buf))
	if !resp.Get("ok").Bool() {
		return nil, fmt.Errorf("the page's server cannot build the module (HTTP %d): %s", resp.Get("status").Int(), b)
	}
	var r BuildResponse
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&r); err != nil {
		return nil, fmt.Errorf("the page's server's answer does not decode: %w", err)
	}
	if r.Source != source {
		return nil, errors.New("the page's server built the module of another source than the page's")
	}
	return r.Module, nil
}

// await waits for promise p, which resolves to its value or rejects with
// an error; the event loop runs meanwhile (this goroutine blocks, and Go
// yields to JS).
func await(ctx context.Context, p js.Value) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	done := make(chan result, 1)
	ok := js.FuncOf(func(_ js.Value, args []js.Value) any {
		done <- result{v: args[0]}
		return nil
	})
	bad := js.FuncOf(func(_ js.Value, args []js.Value) any {
		done <- result{err: errors.New(js.Global().Get("String").Invoke(args[0]).String())}
		return nil
	})
	defer ok.Release()
	defer bad.Release()
	p.Call("then", ok, bad)
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return js.Undefined(), ctx.Err()
	}
}

// pageEngine instantiates modules with the page's WebAssembly: a
// program's kernels on n threads (the page's main thread and n-1 Web
// Workers, threads_js.go), where why says why there is one.
type pageEngine struct {
	n    int
	why  string
	pool *workerPool // started by the first threads module
}

// adapter names the engine and its threads, and why there is one thread
// where the page wanted more.
func (e *pageEngine) adapter() string {
	var feats []string
	if pageSIMD {
		feats = append(feats, "SIMD128")
	}
	switch {
	case e.n > 1:
		feats = append(feats, fmt.Sprintf("%d threads", e.n))
	case e.why != "":
		feats = append(feats, "1 thread: "+e.why)
	}
	if len(feats) == 0 {
		return "the page's WebAssembly"
	}
	return "the page's WebAssembly (" + strings.Join(feats, ", ") + ")"
}

func (e *pageEngine) close() {
	if e.pool != nil {
		e.pool.close()
		e.pool = nil
	}
}

func (*pageEngine) instantiate(ctx context.Context, _ string, wasm []byte) (instance, error) {
	arr := js.Global().Get("Uint8Array").New(len(wasm))
	js.CopyBytesToJS(arr, wasm)
	// instantiate, not new WebAssembly.Module: Chromium refuses a
	// synchronous compile of more than 8 MB on the main thread.
	r, err := await(ctx, js.Global().Get("WebAssembly").Call("instantiate", arr, js.Global().Get("Object").New()))
	if err != nil {
		return nil, fmt.Errorf("WebAssembly.instantiate: %w", err)
	}
	return &pageInstance{exports: r.Get("instance").Get("exports")}, nil
}

type pageInstance struct{ exports js.Value }

func (i *pageInstance) memory() memory {
	m := i.exports.Get("memory")
	if !m.InstanceOf(js.Global().Get("WebAssembly").Get("Memory")) {
		return nil
	}
	return pageMemory{m}
}

func (i *pageInstance) export(name string) function {
	f := i.exports.Get(name)
	if f.Type() != js.TypeFunction {
		return nil
	}
	return pageFunction{f}
}

func (i *pageInstance) close(context.Context) {} // the garbage collector's

// pageMemory is a WebAssembly.Memory. Its buffer is detached by every
// grow, so each access takes it anew.
type pageMemory struct{ m js.Value }

func (p pageMemory) Size() uint32 { return uint32(p.m.Get("buffer").Get("byteLength").Float()) }

func (p pageMemory) Grow(delta uint32) (prev uint32, ok bool) {
	defer func() {
		if recover() != nil { // a RangeError: past the maximum
			prev, ok = 0, false
		}
	}()
	return uint32(p.m.Call("grow", delta).Int()), true
}

// view is the bytes [off, off+n) of the memory, or false outside it.
func (p pageMemory) view(off, n uint32) (js.Value, bool) {
	buf := p.m.Get("buffer")
	if uint64(off)+uint64(n) > uint64(buf.Get("byteLength").Float()) {
		return js.Undefined(), false
	}
	return js.Global().Get("Uint8Array").New(buf, off, n), true
}

func (p pageMemory) Read(off, n uint32) ([]byte, bool) {
	v, ok := p.view(off, n)
	if !ok {
		return nil, false
	}
	b := make([]byte, n)
	js.CopyBytesToGo(b, v)
	return b, true
}

func (p pageMemory) Write(off uint32, b []byte) bool {
	v, ok := p.view(off, uint32(len(b)))
	if ok {
		js.CopyBytesToJS(v, b)
	}
	return ok
}

func (p pageMemory) ReadUint32Le(off uint32) (uint32, bool) {
	b, ok := p.Read(off, 4)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b), true
}

// pageFunction is an exported function. Its parameters are i32 offsets,
// passed as numbers (ToInt32 keeps their bits); a trap is an error.
type pageFunction struct{ f js.Value }

func (p pageFunction) Call(_ context.Context, params ...uint64) (_ []uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("wasm trap: %v", r)
		}
	}()
	args := make([]any, len(params))
	for i, v := range params {
		args[i] = float64(uint32(v))
	}
	if r := p.f.Invoke(args...); r.Type() == js.TypeNumber { // an i32 result
		return []uint64{uint64(uint32(r.Int()))}, nil
	}
	return nil, nil
}

//go:build js

package wasm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall/js"

	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

// maxPageThreads caps the threads a page may ask for: each is a Web
// Worker holding an instance of every threads module.
const maxPageThreads = 16

// pageThreads decides the page's threads for the option n (0: one, the
// default; the page's app.js asks for navigator.hardwareConcurrency with
// ?threads=auto). One is the default because on this 2-core machine under
// its load (14-19) no split has paid yet: a 256×256×512 matmul with bias
// and relu took 2.5 ms on one thread and 5.4 on two (web's
// TestWasmThreadsTiming, 2026-12-05), where a worker waits for a core and
// the main thread's wait yields to Go's scheduler (and its collector).
// Threads need shared WebAssembly memory, which only a cross-origin
// isolated page has (web.Handler's headers): elsewhere it is 1, and why
// says so.
func pageThreads(n int) (int, string) {
	g := js.Global()
	switch {
	case !g.Get("crossOriginIsolated").Truthy() || g.Get("SharedArrayBuffer").Type() != js.TypeFunction:
		return 1, "the page is not cross-origin isolated (no SharedArrayBuffer)"
	case g.Get("Worker").Type() != js.TypeFunction:
		return 1, "the page has no Web Workers"
	case !sharedMemoryWorks():
		return 1, "this browser makes no shared WebAssembly memory"
	}
	return min(max(n, 1), maxPageThreads), ""
}

// sharedMemoryWorks reports whether a shared WebAssembly.Memory can be
// made (a JS exception panics in syscall/js).
func sharedMemoryWorks() (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	d := js.Global().Get("Object").New()
	d.Set("initial", 1)
	d.Set("maximum", 1)
	d.Set("shared", true)
	js.Global().Get("WebAssembly").Get("Memory").New(d)
	return true
}

func (e *pageEngine) threads() int { return e.n }

// partWork is MinPartWork, or the page's gpuccWasmMinPartWork where it
// sets a positive number (web's TestWasmThreads splits small kernels).
func (e *pageEngine) partWork() int64 {
	if v := js.Global().Get("gpuccWasmMinPartWork"); v.Type() == js.TypeNumber && v.Float() >= 1 {
		return int64(v.Float())
	}
	return MinPartWork
}

// workerSource is each worker's script: it instantiates the threads
// modules it is sent on their shared memory, with its own stack, and runs
// gpucc_part ranges, answering each request with its seq.
const workerSource = `"use strict";
const mods = new Map();
onmessage = async (e) => {
  const m = e.data;
  try {
    if (m.op === "load") {
      const inst = await WebAssembly.instantiate(m.module, {env: {memory: m.memory}});
      inst.exports.__stack_pointer.value = m.sp;
      mods.set(m.id, inst.exports);
    } else if (m.op === "part") {
      mods.get(m.id).` + partExport + `(m.b, m.scratch, m.k, m.t0, m.t1);
    } else if (m.op === "drop") {
      mods.delete(m.id);
      return;
    }
    postMessage({seq: m.seq});
  } catch (err) {
    postMessage({seq: m.seq, error: String(err)});
  }
};
`

// workerPool is the page's n-1 workers. A request goes to some of them
// and waits for each one's answer: one request at a time (mu), each with
// its own seq, so that an answer left behind by a cancelled wait is
// never taken for a later one's.
type workerPool struct {
	mu      sync.Mutex
	workers []js.Value
	answers []chan js.Value
	funcs   []js.Func
	url     js.Value
	seq     int
	nextID  int
}

// startPool starts n workers.
func startPool(n int) (p *workerPool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("starting the page's workers: %v", r)
		}
	}()
	g := js.Global()
	blob := g.Get("Blob").New([]any{workerSource}, map[string]any{"type": "text/javascript"})
	p = &workerPool{url: g.Get("URL").Call("createObjectURL", blob)}
	for range n {
		w := g.Get("Worker").New(p.url)
		ch := make(chan js.Value, 8)
		onMsg := js.FuncOf(func(_ js.Value, args []js.Value) any {
			ch <- args[0].Get("data")
			return nil
		})
		onErr := js.FuncOf(func(_ js.Value, args []js.Value) any {
			a := js.Global().Get("Object").New()
			a.Set("seq", -1)
			a.Set("error", "the worker failed: "+js.Global().Get("String").Invoke(args[0].Get("message")).String())
			ch <- a
			return nil
		})
		w.Set("onmessage", onMsg)
		w.Set("onerror", onErr)
		p.workers, p.answers, p.funcs = append(p.workers, w), append(p.answers, ch), append(p.funcs, onMsg, onErr)
	}
	return p, nil
}

func (p *workerPool) close() {
	for _, w := range p.workers {
		w.Call("terminate")
	}
	for _, f := range p.funcs {
		f.Release()
	}
	js.Global().Get("URL").Call("revokeObjectURL", p.url)
}

// post sends worker j message m (with the request's seq).
func (p *workerPool) post(j int, m map[string]any) { p.workers[j].Call("postMessage", m) }

// wait takes worker j's answer to request seq, skipping older ones; a
// worker's script error (seq -1) fails whatever waits on it.
func (p *workerPool) wait(ctx context.Context, j, seq int) error {
	for {
		select {
		case a := <-p.answers[j]:
			s := a.Get("seq").Int()
			if s != seq && s != -1 {
				continue
			}
			if e := a.Get("error"); e.Type() == js.TypeString {
				return errors.New(e.String())
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sharedInstance is a threads module instantiated on a shared memory on
// the main thread and in each worker of the pool (under id).
type sharedInstance struct {
	pageInstance
	mem  js.Value
	pool *workerPool
	id   int
	part function
}

func (i *sharedInstance) memory() memory { return pageMemory{i.mem} }

func (i *sharedInstance) close(context.Context) {
	i.pool.mu.Lock()
	defer i.pool.mu.Unlock()
	for j := range i.pool.workers {
		i.pool.post(j, map[string]any{"op": "drop", "id": i.id})
	}
}

// instantiateShared compiles a threads module, makes the shared memory
// its import asks for, instantiates it on the main thread and then in
// every worker, each worker with a stack of its own (cbuild.WasmThreadStack
// bytes, grown at the memory's end before the buffers are laid out).
func (e *pageEngine) instantiateShared(ctx context.Context, _ string, wasm []byte) (instance, error) {
	lo, hi, err := importedMemory(wasm)
	if err != nil {
		return nil, err
	}
	if e.pool == nil {
		if e.pool, err = startPool(e.n - 1); err != nil {
			return nil, err
		}
	}
	arr := js.Global().Get("Uint8Array").New(len(wasm))
	js.CopyBytesToJS(arr, wasm)
	mod, err := await(ctx, js.Global().Get("WebAssembly").Call("compile", arr))
	if err != nil {
		return nil, fmt.Errorf("WebAssembly.compile: %w", err)
	}
	mem, err := newSharedMemory(lo, hi)
	if err != nil {
		return nil, err
	}
	imports := map[string]any{"env": map[string]any{"memory": mem}}
	inst, err := await(ctx, js.Global().Get("WebAssembly").Call("instantiate", mod, imports))
	if err != nil {
		return nil, fmt.Errorf("WebAssembly.instantiate: %w", err)
	}
	si := &sharedInstance{pageInstance: pageInstance{exports: inst.Get("exports")}, mem: mem, pool: e.pool}
	if si.part = si.export(partExport); si.part == nil {
		return nil, fmt.Errorf("the threads module does not export %s", partExport)
	}
	pm := pageMemory{mem}
	const stack = cbuild.WasmThreadStack
	base, ok := pm.Grow(uint32(len(e.pool.workers) * stack / wasmPage))
	if !ok {
		return nil, errors.New("cannot grow the shared memory for the workers' stacks")
	}
	p := e.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	p.seq++
	si.id = p.nextID
	for j := range p.workers {
		sp := uint64(base)*wasmPage + uint64(j+1)*stack
		p.post(j, map[string]any{"op": "load", "seq": p.seq, "id": si.id, "module": mod, "memory": mem, "sp": float64(sp)})
	}
	for j := range p.workers {
		if err := p.wait(ctx, j, p.seq); err != nil {
			return nil, fmt.Errorf("a worker instantiating the module: %w", err)
		}
	}
	return si, nil
}

// newSharedMemory is a shared WebAssembly.Memory of lo pages, at most hi.
func newSharedMemory(lo, hi uint32) (m js.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("a shared WebAssembly.Memory of %d to %d pages: %v", lo, hi, r)
		}
	}()
	return js.Global().Get("WebAssembly").Get("Memory").New(map[string]any{"initial": lo, "maximum": hi, "shared": true}), nil
}

// runParts runs range 0 on the main thread and range j on worker j-1,
// and returns when all are done (after the workers' ranges even where the
// main thread's trapped: they write the same memory).
func (i *sharedInstance) runParts(ctx context.Context, parts [][5]uint64) error {
	p := i.pool
	if len(parts)-1 > len(p.workers) {
		return fmt.Errorf("%d parts for %d threads", len(parts), len(p.workers)+1)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	for j, a := range parts[1:] {
		p.post(j, map[string]any{"op": "part", "seq": p.seq, "id": i.id,
			"b": float64(a[0]), "scratch": float64(a[1]), "k": float64(a[2]), "t0": float64(a[3]), "t1": float64(a[4])})
	}
	_, err := i.part.Call(ctx, parts[0][:]...)
	for j := range parts[1:] {
		if werr := p.wait(ctx, j, p.seq); werr != nil && err == nil {
			err = fmt.Errorf("worker %d: %w", j+1, werr)
		}
	}
	workerParts += len(parts) - 1
	js.Global().Set("gpuccWasmWorkerParts", workerParts)
	return err
}

// workerParts counts the ranges the page's workers have run, which the
// page shows as the global gpuccWasmWorkerParts (web's TestWasmThreads
// reads it: a kernel that was not split would pass a bits test at any
// thread count).
var workerParts int

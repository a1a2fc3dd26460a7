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

// pageThreads decides the page's threads for the option n: n itself
// (up to maxPageThreads), or for 0 ONNX Runtime Web's default, half the
// logical cores the browser reports, rounded up, at most 4 (its
// backend-wasm.ts): a thread per physical core, leaving the page's other
// work and the machine's other users room, since a worker that loses its
// core while it holds a chunk keeps the main thread waiting (4 threads on
// this 2-core machine took a 256×256×512 matmul from 2.5 ms to 6.0, where
// 2 took it to 2.1: web's TestWasmThreadsTiming, 2026-12-05, load 11).
// Threads need shared WebAssembly memory, which only a cross-origin
// isolated page has (web.Handler's headers): elsewhere it is 1, and why
// says so where the page would have taken more.
func pageThreads(n int) (int, string) {
	g := js.Global()
	if n == 0 {
		hc := 1
		if v := g.Get("navigator").Get("hardwareConcurrency"); v.Type() == js.TypeNumber {
			hc = max(v.Int(), 1)
		}
		n = min(4, (hc+1)/2)
	}
	if n == 1 {
		return 1, ""
	}
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
// modules it is sent on their shared memory, with its own stack,
// answering with the request's seq, and claims chunks of the kernels it
// is sent (an array: the module's id and gpucc_claim's arguments),
// answering nothing: a trap sets the control block's failure flag.
const workerSource = `"use strict";
const mods = new Map();
onmessage = async (e) => {
  const m = e.data;
  if (Array.isArray(m)) {
    const x = mods.get(m[0]);
    if (x === undefined) { // never loaded here: it claims nothing, and the threads that did load do the work
      console.error("gpucc wasm worker: module", m[0], "is not loaded");
      return;
    }
    try {
      x.exports.` + claimExport + `(m[1], m[2], m[3], m[4], m[5], m[6], m[7], 0);
    } catch (err) {
      Atomics.store(new Int32Array(x.memory.buffer), (m[6] + 12) >> 2, 1);
      console.error("gpucc wasm worker:", err);
    }
    return;
  }
  try {
    if (m.op === "load") {
      const inst = await WebAssembly.instantiate(m.module, {env: {memory: m.memory}});
      inst.exports.__stack_pointer.value = m.sp;
      mods.set(m.id, {exports: inst.exports, memory: m.memory});
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
	msg     js.Value // a claim's message, reused (no Go allocation a kernel)
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
	p = &workerPool{url: g.Get("URL").Call("createObjectURL", blob), msg: g.Get("Array").New(8)}
	for range n {
		w := g.Get("Worker").New(p.url)
		ch := make(chan js.Value, 8)
		onMsg := js.FuncOf(func(_ js.Value, args []js.Value) any {
			select {
			case ch <- args[0].Get("data"):
			default: // an answer no one waits for any more
			}
			return nil
		})
		onErr := js.FuncOf(func(_ js.Value, args []js.Value) any {
			a := js.Global().Get("Object").New()
			a.Set("seq", -1)
			a.Set("error", "the worker failed: "+js.Global().Get("String").Invoke(args[0].Get("message")).String())
			select {
			case ch <- a:
			default:
			}
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
	mem        js.Value
	pool       *workerPool
	id         int
	arm, claim function
	ctl        uint64 // the control block (ctlBytes)
	gen        uint32
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
	si.arm, si.claim = si.export(armExport), si.export(claimExport)
	if si.arm == nil || si.claim == nil {
		return nil, fmt.Errorf("the threads module does not export %s and %s", armExport, claimExport)
	}
	pm := pageMemory{mem}
	const stack = cbuild.WasmThreadStack
	base, ok := pm.Grow(uint32(len(e.pool.workers)*stack/wasmPage) + 1) // and a page for the control block
	if !ok {
		return nil, errors.New("cannot grow the shared memory for the workers' stacks")
	}
	si.ctl = uint64(base)*wasmPage + uint64(len(e.pool.workers))*stack
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

// runClaims runs kernel c on the main thread and c.threads-1 workers:
// it arms the control block, sends each worker the kernel, claims chunks
// itself (or, where the page sets gpuccWasmMainWaits, leaves them all to
// the workers) and waits in wasm for the chunks the workers hold.
func (i *sharedInstance) runClaims(ctx context.Context, c claim) error {
	p := i.pool
	if c.threads-1 > len(p.workers) {
		return fmt.Errorf("%d threads for a pool of %d", c.threads, len(p.workers)+1)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i.gen++
	if _, err := i.arm.Call(ctx, i.ctl, uint64(i.gen)); err != nil {
		return err
	}
	m := p.msg
	for j, v := range []uint64{uint64(i.id), c.table, 0, c.kernel, c.tiles, c.chunk, i.ctl, uint64(i.gen)} {
		m.SetIndex(j, float64(v))
	}
	for j := 1; j < c.threads; j++ {
		m.SetIndex(2, float64(c.scratch+uint64(j)*c.stride))
		p.workers[j-1].Call("postMessage", m)
	}
	mode := uint64(1)
	if js.Global().Get("gpuccWasmMainWaits").Truthy() {
		mode = 2
	}
	r, err := i.claim.Call(ctx, c.table, c.scratch, c.kernel, c.tiles, c.chunk, i.ctl, uint64(i.gen), mode)
	if err != nil {
		// The main thread trapped in a chunk: a new generation stops the
		// workers' claims (the chunks they hold still finish).
		i.gen++
		i.arm.Call(ctx, i.ctl, uint64(i.gen))
		return err
	}
	if failed, ok := i.memory().ReadUint32Le(uint32(i.ctl) + 12); !ok || failed != 0 {
		i.gen++
		i.arm.Call(ctx, i.ctl, uint64(i.gen))
		return errors.New("a worker trapped (the browser's console says where)")
	}
	if len(r) == 1 {
		workerTiles += int(c.tiles - r[0])
		js.Global().Set("gpuccWasmWorkerTiles", workerTiles)
	}
	return nil
}

// workerTiles counts the tiles the page's workers have computed, which
// the page shows as the global gpuccWasmWorkerTiles (web's
// TestWasmThreads reads it: a kernel that was not split would pass a bits
// test at any thread count).
var workerTiles int

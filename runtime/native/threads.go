//go:build (darwin || freebsd || linux || netbsd) && (amd64 || arm64) && !android && !js

package native

import (
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/gpucc/gpucc/codegen/c"
)

// Threads. A kernel's outputs split into tiles (codegen/c's Kernel.Tiles),
// and the library's gpucc_part computes any range of them with the same
// operations, in the same order, as the whole kernel: so a kernel may run
// as contiguous ranges of tiles on several goroutines at once, each range
// writing its own outputs, and give the same bits on any thread count.
//
// The threads are goroutines, each calling gpucc_part through purego, not
// pthreads inside the C library: the library stays freestanding (no libc,
// no thread pool to start, size and stop per library), Go schedules the
// work within GOMAXPROCS beside the rest of the process, a run between
// kernels stays in Go (where the kernels of a program are ordered by a
// plain wait), and no thread unknown to the Go runtime ever runs in the
// process (a signal arriving on one would find no Go state). The price is
// a goroutine start and a wake-up per part of a kernel, a few µs, which is
// why a kernel is split only when each part has MinPartWork operations.

// MinPartWork is the least estimated work (codegen/c's Kernel.Work, about
// one float operation each) a kernel gives each thread: below it, starting
// and waiting for a goroutine costs more than it saves. Tests lower it to
// split small kernels.
var MinPartWork int64 = 1 << 17

// plan decides how many threads each kernel of u runs on; with one
// thread, or when no kernel is worth splitting, e.parts stays nil and a
// run is one call of the entry point.
func (e *executable) plan(ks []c.Kernel, threads int) {
	parts, tiles := make([]int, len(ks)), make([]int, len(ks))
	split := false
	for n, k := range ks {
		tiles[n] = max(k.Tiles, 1)
		p := int64(1)
		if threads > 1 {
			p = min(int64(threads), int64(tiles[n]), max(1, k.Work/MinPartWork))
		}
		parts[n] = int(p)
		split = split || p > 1
	}
	if split {
		e.parts, e.tiles = parts, tiles
	}
}

// maxParts is the most threads any kernel runs on: the scratch holds one
// area per thread.
func (e *executable) maxParts() int {
	m := 1
	for _, p := range e.parts {
		m = max(m, p)
	}
	return m
}

// dispatchParts runs each kernel in program order, split over e.parts[n]
// goroutines (the calling one included) as contiguous ranges of its tiles,
// part j with area j of scratch; it returns when every kernel is done.
func (e *executable) dispatchParts(ptrs []unsafe.Pointer, scratch []float32) {
	b := uintptr(unsafe.Pointer(&ptrs[0]))
	area := func(j int) uintptr {
		if e.scratch == 0 {
			return uintptr(unsafe.Pointer(&scratch[0]))
		}
		return uintptr(unsafe.Pointer(&scratch[j*e.scratch]))
	}
	var wg sync.WaitGroup
	for n, parts := range e.parts {
		tiles := e.tiles[n]
		if parts == 1 {
			purego.SyscallN(e.lib.part, b, area(0), uintptr(n), 0, uintptr(tiles))
			continue
		}
		wg.Add(parts - 1)
		for j := 1; j < parts; j++ {
			go func(j int) {
				defer wg.Done()
				purego.SyscallN(e.lib.part, b, area(j), uintptr(n), uintptr(j*tiles/parts), uintptr((j+1)*tiles/parts))
			}(j)
		}
		purego.SyscallN(e.lib.part, b, area(0), uintptr(n), 0, uintptr(tiles/parts))
		wg.Wait()
	}
}

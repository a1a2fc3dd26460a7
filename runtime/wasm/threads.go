package wasm

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen/c"
)

// Threads. In a cross-origin isolated page (SharedArrayBuffer exists) the
// page's engine runs a program's kernels on several threads, as the
// native backend does (runtime/native/threads.go): a kernel's outputs
// split into tiles (codegen/c's Kernel.Tiles), and the module's exported
// gpucc_part computes any range of them with the same operations, in the
// same order, as the whole kernel, so each thread computes a contiguous
// range of tiles, writing its own outputs, and the bits are the same on
// any thread count. The module is then built for shared memory
// (cbuild.WasmThreads: imported, shared, __stack_pointer exported); the
// page's Web Workers each instantiate it on the one memory, each with its
// own stack. For each split kernel the main thread arms a control block
// in the shared memory (gpucc_arm: a generation and the next tile, one
// 64-bit word), sends each worker the kernel, and then every thread,
// the main one included, claims chunks of tiles from the word
// (gpucc_claim, a compare-and-swap) and computes them until none is
// left; the main thread then waits (spinning in wasm, not yielding to the
// browser) for the chunks other threads hold. A worker that wakes late
// finds nothing left, or another generation, and computes nothing: so on
// a loaded machine the main thread does the work itself instead of
// waiting for a core, and each tile is still computed once, by one
// thread, with the kernel's own operations. Kernels run in program
// order: the next is armed when every tile of the last is done.
// The page asks for threads (gpucc.run's threads option, app.js's
// ?threads=N or auto); the default is ONNX Runtime Web's (threads_js.go's
// pageThreads says why).

// The threads module's exports: a range of a kernel's tiles, the control
// block's arming and the claiming loop.
const (
	partExport  = "gpucc_part"
	armExport   = "gpucc_arm"
	claimExport = "gpucc_claim"
)

// ctlBytes is the control block: the claim word (generation << 32 | next
// tile), the tiles done and a failure flag.
const ctlBytes = 16

// MinPartWork is the least estimated work (codegen/c's Kernel.Work, about
// one float operation each) a kernel gives each thread of the page: below
// it, the worker's message and wake-up cost more than its part saves.
// 2^23 is about 0.3 ms of SIMD128 matmul in V8 here (a 256×256×512 matmul
// with bias and relu, 2^26 operations, took 2.5 ms on one thread); at
// 2^22 the bench MLP's first matmul (64×256×256) split in two and went
// from 0.445 ms to 0.61 (web's TestWasmThreadsTiming, 2026-12-05, load 11
// on 2 cores). The page may set the global gpuccWasmMinPartWork before
// the backend opens.
var MinPartWork int64 = 1 << 23

// threadEngine is an engine that runs a module's kernels on several
// threads (the page's, in a cross-origin isolated page).
type threadEngine interface {
	engine
	// threads is how many threads a kernel may run on (1: one).
	threads() int
	// partWork is the least work of a kernel's part (MinPartWork).
	partWork() int64
	// instantiateShared instantiates a threads module (cbuild.WasmThreads)
	// on a new shared memory in every thread; the instance is a
	// claimRunner.
	instantiateShared(ctx context.Context, name string, wasm []byte) (instance, error)
}

// claim is one split kernel: gpucc_claim's arguments but the control
// block's, which the instance owns.
type claim struct {
	table   uint64 // the pointer table
	scratch uint64 // thread j's scratch is scratch + j*stride
	stride  uint64
	kernel  uint64
	tiles   uint64
	chunk   uint64 // tiles claimed at a time
	threads int    // the threads that take part, the calling one included
}

// claimRunner runs one kernel on its threads, each claiming chunks of
// its tiles; it returns when every tile is done.
type claimRunner interface {
	runClaims(ctx context.Context, c claim) error
}

// partSource is the C of gpucc_part, appended to a unit's source in a
// threads module: tiles [t0, t1) of kernel k, b[i] buffer i, with the
// scratch area of its thread.
func partSource(u *c.Unit) string {
	var s strings.Builder
	fmt.Fprintf(&s, "\n/* %s runs tiles [t0, t1) of kernel k with its own scratch (see codegen/c's Kernel.Tiles); b[i] is buffer i. */\n", partExport)
	fmt.Fprintf(&s, "EXPORT void %s(float *const *b, float *scratch, idx k, idx t0, idx t1) {\n\tswitch (k) {\n", partExport)
	for n, k := range u.Kernels {
		args := make([]string, 0, len(k.Buffers)+3)
		for _, buf := range k.Buffers {
			args = append(args, fmt.Sprintf("b[%d]", buf))
		}
		if k.Scratch {
			args = append(args, "scratch")
		}
		args = append(args, "t0", "t1")
		fmt.Fprintf(&s, "\tcase %d:\n\t\t%s_tiles(%s);\n\t\tbreak;\n", n, k.Export, strings.Join(args, ", "))
	}
	s.WriteString("\t}\n\t(void)scratch;\n}\n")
	s.WriteString(claimSource)
	return s.String()
}

// claimSource is the C of gpucc_arm and gpucc_claim (see Threads above).
// ctl[0] is the claim word, ctl[1] the tiles done (low half) and a
// failure flag a worker's trap sets (high half).
const claimSource = `
typedef unsigned long long u64;

/* gpucc_arm makes generation gen current, its next tile 0, none done. */
EXPORT void gpucc_arm(u64 *ctl, u32 gen) {
	u32 *done = (u32 *)(ctl + 1);
	__atomic_store_n(done, 0u, __ATOMIC_SEQ_CST);
	__atomic_store_n(done + 1, 0u, __ATOMIC_SEQ_CST);
	__atomic_store_n(ctl, (u64)gen << 32, __ATOMIC_SEQ_CST);
}

/* gpucc_claim computes chunks of kernel k's tiles [0, tiles) of generation
 * gen while there are any (mode 0, a worker, and 1) and waits for the
 * chunks other threads hold, or their failure (modes 1 and 2: the main
 * thread; 2 leaves every chunk to the workers). It returns the tiles it
 * computed. */
EXPORT u32 gpucc_claim(float *const *b, float *scratch, idx k, u32 tiles, u32 chunk, u64 *ctl, u32 gen, int mode) {
	u32 *done = (u32 *)(ctl + 1), mine = 0;
	for (; mode != 2;) {
		u64 w = __atomic_load_n(ctl, __ATOMIC_SEQ_CST);
		u32 t0 = (u32)w;
		if ((u32)(w >> 32) != gen || t0 >= tiles)
			break;
		if (!__atomic_compare_exchange_n(ctl, &w, w + chunk, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			continue;
		u32 t1 = tiles - t0 > chunk ? t0 + chunk : tiles;
		gpucc_part(b, scratch, k, t0, t1);
		mine += t1 - t0;
		__atomic_fetch_add(done, t1 - t0, __ATOMIC_SEQ_CST);
	}
	if (mode != 0)
		while (__atomic_load_n(done, __ATOMIC_SEQ_CST) < tiles && __atomic_load_n(done + 1, __ATOMIC_SEQ_CST) == 0)
			;
	return mine;
}
`

// planParts decides how many threads each kernel runs on, as the native
// backend does: with one thread, or when no kernel is worth splitting,
// it returns nil and a run calls each kernel's export.
func planParts(ks []c.Kernel, threads int, minWork int64) (parts, tiles []int) {
	parts, tiles = make([]int, len(ks)), make([]int, len(ks))
	split := false
	for n, k := range ks {
		tiles[n] = max(k.Tiles, 1)
		p := int64(1)
		if threads > 1 {
			p = min(int64(threads), int64(tiles[n]), max(1, k.Work/max(minWork, 1)))
		}
		parts[n] = int(p)
		split = split || p > 1
	}
	if !split {
		return nil, nil
	}
	return parts, tiles
}

// claimsPerThread is how many chunks a kernel's tiles split into per
// thread: a thread that wakes late or is preempted leaves at most a chunk
// for the others to wait on.
const claimsPerThread = 4

// maxOf is the largest of ps, at least 1.
func maxOf(ps []int) int {
	m := 1
	for _, p := range ps {
		m = max(m, p)
	}
	return m
}

// dispatchParts runs the kernels in program order, kernel n split over
// e.parts[n] threads that claim chunks of its tiles, thread j with
// scratch area j. The pointer table is written first: executables of one
// source share the module, and another may have written its own.
func (e *executable) dispatchParts(ctx context.Context) error {
	cr := e.mod.inst.(claimRunner)
	table := make([]byte, 4*len(e.offs))
	for i, off := range e.offs {
		binary.LittleEndian.PutUint32(table[4*i:], uint32(off))
	}
	if !e.mod.mem.Write(uint32(e.table), table) {
		return fmt.Errorf("the pointer table lies outside wasm memory")
	}
	scratch := e.offs[len(e.offs)-1]
	for n, p := range e.parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == 1 {
			if _, err := e.calls[n].fn.Call(ctx, e.calls[n].args...); err != nil {
				return fmt.Errorf("kernel %s: %w", e.calls[n].name, err)
			}
			continue
		}
		t := uint64(e.tiles[n])
		c := claim{table: e.table, scratch: scratch, stride: 4 * uint64(e.unit.Scratch), kernel: uint64(n), tiles: t,
			chunk: max(1, t/uint64(claimsPerThread*p)), threads: p}
		if err := cr.runClaims(ctx, c); err != nil {
			return fmt.Errorf("kernel %s: %w", e.calls[n].name, err)
		}
	}
	return nil
}

// importedMemory returns the limits, in pages, of the memory a threads
// module imports (env.memory, shared): the page makes that memory itself
// before it instantiates the module, and WebAssembly's own API does not
// say them.
func importedMemory(wasm []byte) (lo, hi uint32, err error) {
	r := &wasmReader{b: wasm}
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return 0, 0, fmt.Errorf("not a wasm module")
	}
	r.at = 8
	for r.at < len(r.b) && r.err == nil {
		id, size := r.byte(), r.uleb()
		end := r.at + int(size)
		if r.err != nil || size > uint64(len(r.b)) || end > len(r.b) {
			break
		}
		if id != 2 { // the import section
			r.at = end
			continue
		}
		for n := r.uleb(); n > 0 && r.err == nil; n-- {
			mod, name, kind := r.name(), r.name(), r.byte()
			switch kind {
			case 0: // a function: its type
				r.uleb()
			case 1: // a table: its type and limits
				r.byte()
				r.limits()
			case 2:
				flags, l, h := r.limits()
				if mod != "env" || name != "memory" || flags != 3 {
					return 0, 0, fmt.Errorf("the module imports memory %s.%s with flags %#x, not a shared env.memory", mod, name, flags)
				}
				return uint32(l), uint32(h), r.err
			case 3: // a global: its type and mutability
				r.byte()
				r.byte()
			default:
				return 0, 0, fmt.Errorf("import of unknown kind %#x", kind)
			}
		}
		break
	}
	if r.err != nil {
		return 0, 0, r.err
	}
	return 0, 0, fmt.Errorf("the module imports no memory: not a threads module")
}

// wasmReader reads a module's bytes; its first error sticks, and reads
// past the end give zeros.
type wasmReader struct {
	b   []byte
	at  int
	err error
}

func (r *wasmReader) byte() byte {
	if r.at >= len(r.b) {
		r.err = fmt.Errorf("the module ends early")
		return 0
	}
	r.at++
	return r.b[r.at-1]
}

func (r *wasmReader) uleb() uint64 {
	var v uint64
	for shift := 0; shift < 64 && r.err == nil; shift += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	if r.err == nil {
		r.err = fmt.Errorf("a LEB128 number is too long")
	}
	return 0
}

func (r *wasmReader) name() string {
	n := r.uleb()
	if r.err != nil || n > uint64(len(r.b)-r.at) {
		r.err = fmt.Errorf("a name runs past the module's end")
		return ""
	}
	r.at += int(n)
	return string(r.b[r.at-int(n) : r.at])
}

// limits reads limits: flags (1: a maximum follows, 3: shared), min, max.
func (r *wasmReader) limits() (flags byte, lo, hi uint64) {
	flags = r.byte()
	lo = r.uleb()
	if flags&1 != 0 {
		hi = r.uleb()
	}
	return flags, lo, hi
}

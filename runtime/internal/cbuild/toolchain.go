// Package cbuild builds the C that codegen/c generates: it finds Clang and
// wasm-ld, compiles a unit to WebAssembly (or, with the system compiler, to
// a shared object), checks the result for features that would break the
// reference semantics, and keeps built artifacts in the artifact cache,
// codegen/cache, which the caller gives it (Load).
package cbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// WasmCFlags are the Clang flags of every wasm build. -ffp-contract=off
// keeps each product and sum rounding on its own (no fused multiply-add);
// -fno-math-errno lets __builtin_sqrtf be the f32.sqrt instruction alone;
// -mno-simd128 keeps vector instructions out of the module: wazero
// v1.12's amd64 compiler miscompiles functions with many live v128 values
// (a relu select returned its first operand). It was hit twice, by the
// packed matmul's inlined relu epilogue and by a convolution's epilogue
// pass (irtest.RandomConv(11).Graph(1011)); runtime/wasm's
// TestWazeroSIMDRepro keeps the first as C and shows that it is not
// v128.bitselect's lowering alone (the module is still wrong with every
// bitselect rewritten as and/andnot/or), so no rewrite of the generated
// code avoids it; any fused kernel with enough live vectors could hit it,
// and a wrong answer costs more than the lanes. Scalar f32 instructions are correctly
// rounded by the spec, so the bits do not change.
var WasmCFlags = []string{"--target=wasm32", "-nostdlib", "-ffreestanding", "-O3",
	"-ffp-contract=off", "-fno-math-errno", "-mno-simd128", "-fno-builtin", "-std=c99", "-c"}

// WasmSIMDCFlags are WasmCFlags with SIMD128 on, relaxed SIMD still off
// (it allows fused multiply-adds and implementation-defined lanes), for a
// module that runs in a browser's engine, not in wazero (the page's wasm
// backend). SIMD128's float lanes round as the scalar instructions do, and
// -ffp-contract=off without fast-math keeps Clang from reassociating a sum
// into lanes, so the bits are the scalar module's.
var WasmSIMDCFlags = simdFlags()

func simdFlags() []string {
	var out []string
	for _, f := range WasmCFlags {
		if f == "-mno-simd128" {
			out = append(out, "-msimd128", "-mno-relaxed-simd")
			continue
		}
		out = append(out, f)
	}
	return out
}

// WasmLDFlags are the wasm-ld flags: no entry point, export the kernels
// (default visibility) and the memory, which the host grows as it needs.
var WasmLDFlags = []string{"--no-entry", "--export-dynamic", "--strip-debug"}

// WasmThreadsCFlags are WasmSIMDCFlags with the features of a module whose
// memory several threads share (Toolchain.WasmThreads): atomics and bulk
// memory (which shared memory requires of every object) and mutable
// globals (which exporting __stack_pointer requires). None of them
// changes a float instruction, so the bits are the SIMD module's.
var WasmThreadsCFlags = append(simdFlags(), "-matomics", "-mbulk-memory", "-mmutable-globals")

// WasmThreadStack is the stack of each thread of a threads module, in
// bytes: wasm-ld's default, which the single-threaded modules run on,
// made explicit because the page gives each worker one of this size.
const WasmThreadStack = 1 << 16

// WasmThreadsLDFlags are WasmLDFlags for a module whose memory several
// threads share: the memory is shared and imported (each worker
// instantiates the module on the one memory the page made), bounded as
// wasm32 allows (one page under 4 GiB, as runtime/wasm's maxPages), and
// __stack_pointer is exported, so that each worker sets its own stack.
var WasmThreadsLDFlags = append(append([]string{}, WasmLDFlags...), "--shared-memory", "--import-memory",
	"--max-memory=4294901760", "--export=__stack_pointer", "-z", fmt.Sprintf("stack-size=%d", WasmThreadStack))

// BuildTimeout returns how long one compiler or linker run over a unit of
// n bytes of C may take: GPUCC_CC_TIMEOUT (a Go duration such as "10m")
// when it is set, else 2 minutes plus 2 seconds per KiB of source. The
// part that grows with the work is sized for a loaded 2-core machine, where
// Clang at -O3 took over 2 minutes (then a fixed limit) on 73 KB of an
// ONNX batch norm. The limit kills a compiler that spins; it is not a
// bound on memory.
func BuildTimeout(n int) (time.Duration, error) {
	if v := os.Getenv("GPUCC_CC_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("GPUCC_CC_TIMEOUT=%q: want a positive duration such as 10m", v)
		}
		return d, nil
	}
	return 2*time.Minute + time.Duration(n/1024)*2*time.Second, nil
}

// withBuildTimeout bounds ctx by BuildTimeout of a unit of n bytes.
func withBuildTimeout(ctx context.Context, n int) (context.Context, context.CancelFunc, error) {
	d, err := BuildTimeout(n)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, nil
}

// Toolchain is a Clang and a wasm-ld that work together.
type Toolchain struct {
	Clang   string // path of clang
	WasmLD  string // path of wasm-ld
	Version string // first line of clang --version
}

// Find locates the toolchain. GPUCC_CLANG and GPUCC_WASM_LD override the
// search; otherwise clang comes from PATH and wasm-ld from PATH, a
// versioned name (wasm-ld-14) or an LLVM install directory
// (/usr/lib/llvm-*/bin). Running clang --version proves clang starts.
func Find() (*Toolchain, error) {
	clang, err := lookClang()
	if err != nil {
		return nil, err
	}
	out, err := run(context.Background(), clang, "--version")
	if err != nil {
		return nil, fmt.Errorf("clang at %s does not run: %w", clang, err)
	}
	version, _, _ := strings.Cut(string(out), "\n")
	ld, err := lookWasmLD(clang)
	if err != nil {
		return nil, err
	}
	return &Toolchain{Clang: clang, WasmLD: ld, Version: strings.TrimSpace(version)}, nil
}

func lookClang() (string, error) {
	name := "clang"
	if env := os.Getenv("GPUCC_CLANG"); env != "" {
		name = env
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("clang not found (install clang, or set GPUCC_CLANG): %w", err)
	}
	return path, nil
}

// lookWasmLD searches for wasm-ld beside clang first, so that a clang
// chosen by GPUCC_CLANG gets its own linker.
func lookWasmLD(clang string) (string, error) {
	if env := os.Getenv("GPUCC_WASM_LD"); env != "" {
		path, err := exec.LookPath(env)
		if err != nil {
			return "", fmt.Errorf("GPUCC_WASM_LD: %w", err)
		}
		return path, nil
	}
	if real, err := filepath.EvalSymlinks(clang); err == nil {
		beside := filepath.Join(filepath.Dir(real), "wasm-ld")
		if _, err := os.Stat(beside); err == nil {
			return beside, nil
		}
	}
	var names []string
	names = append(names, "wasm-ld")
	for v := 30; v >= 11; v-- {
		names = append(names, fmt.Sprintf("wasm-ld-%d", v))
	}
	for _, n := range names {
		if path, err := exec.LookPath(n); err == nil {
			return path, nil
		}
	}
	found, _ := filepath.Glob("/usr/lib/llvm-*/bin/wasm-ld")
	sort.Sort(sort.Reverse(sort.StringSlice(found)))
	if len(found) > 0 {
		return found[0], nil
	}
	return "", errors.New("wasm-ld not found (install lld, or set GPUCC_WASM_LD)")
}

// Wasm compiles one C unit to a WebAssembly module.
func (t *Toolchain) Wasm(ctx context.Context, source string) ([]byte, error) {
	return t.wasm(ctx, source, WasmCFlags, forbidden)
}

// WasmSIMD compiles one C unit to a WebAssembly module with SIMD128
// (WasmSIMDCFlags), for a browser's engine: never for wazero.
func (t *Toolchain) WasmSIMD(ctx context.Context, source string) ([]byte, error) {
	return t.wasm(ctx, source, WasmSIMDCFlags, forbiddenSIMD)
}

// WasmThreads compiles one C unit to a SIMD128 module on an imported
// shared memory (WasmThreadsCFlags, WasmThreadsLDFlags), for a browser's
// engine whose workers run its kernels' parts: never for wazero.
func (t *Toolchain) WasmThreads(ctx context.Context, source string) ([]byte, error) {
	return t.wasmLinked(ctx, source, WasmThreadsCFlags, WasmThreadsLDFlags, forbiddenSIMD)
}

func (t *Toolchain) wasm(ctx context.Context, source string, cflags, forbid []string) ([]byte, error) {
	return t.wasmLinked(ctx, source, cflags, WasmLDFlags, forbid)
}

func (t *Toolchain) wasmLinked(ctx context.Context, source string, cflags, ldflags, forbid []string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "gpucc-wasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src, obj, out := filepath.Join(dir, "kernels.c"), filepath.Join(dir, "kernels.o"), filepath.Join(dir, "kernels.wasm")
	if err := os.WriteFile(src, []byte(source), 0o600); err != nil {
		return nil, err
	}
	ctx, cancel, err := withBuildTimeout(ctx, len(source))
	if err != nil {
		return nil, err
	}
	defer cancel()
	if _, err := run(ctx, t.Clang, append(append([]string{}, cflags...), "-o", obj, src)...); err != nil {
		return nil, fmt.Errorf("clang: %w", err)
	}
	if _, err := run(ctx, t.WasmLD, append(append([]string{}, ldflags...), "-o", out, obj)...); err != nil {
		return nil, fmt.Errorf("wasm-ld: %w", err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	if err := checkFeatures(wasm, forbid); err != nil {
		return nil, err
	}
	return wasm, nil
}

// Key names the flags and compiler that a cache key must cover besides
// the source.
func (t *Toolchain) Key() string {
	return t.Version + "\x00" + strings.Join(WasmCFlags, " ") + "\x00" + strings.Join(WasmLDFlags, " ")
}

// run executes a tool and returns its stdout, or an error holding the
// (trimmed) diagnostics.
func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	// A child the compiler started (cc1 out of process, the linker) may
	// hold the pipes after the kill: Wait gives up on them.
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + "…"
		}
		if msg == "" {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s", err, msg)
	}
	return stdout.Bytes(), nil
}

package cbuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"
)

// NativeCFlags are the flags of every native build. -ffp-contract=off and
// -fno-fast-math keep each product and sum rounding on its own, as cpuref
// defines; -fno-math-errno makes __builtin_sqrtf the sqrt instruction
// alone (codegen/c's native square root), with no call to set errno;
// -fvisibility=hidden exports only the EXPORT functions. There is no
// -march; on an x86-64 CPU with AVX2 (and an OS that saves its
// registers) the build adds -mavx2, unless GPUCC_NATIVE_ISA=baseline:
// 8-lane vectors and per-lane shifts (exp's scaling) make the generated
// loops 2-3× faster, with the same bits (AVX2's float instructions are
// IEEE-754 as SSE's, and -mno-fma keeps products unfused). The flags are
// part of the cache key (Native.Key), so a cache directory shared between
// machines keeps one object per instruction set.
var NativeCFlags = nativeCFlags(runtime.GOARCH, cpu.X86.HasAVX2 && os.Getenv("GPUCC_NATIVE_ISA") != "baseline")

// nativeCFlags adds, on x86-64, -mno-fma: the baseline ISA has no FMA, but
// the flag keeps -mavx2 or a stray -march in CFLAGS-like wrappers from
// enabling it.
func nativeCFlags(arch string, avx2 bool) []string {
	flags := []string{"-O3", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", "-fPIC", "-shared",
		"-fvisibility=hidden", "-std=c99"}
	if arch == "amd64" {
		if avx2 {
			flags = append(flags, "-mavx2")
		}
		flags = append(flags, "-mno-fma")
	}
	return flags
}

// Native is a system C compiler that builds shared objects for this host.
type Native struct {
	CC      string // path of the compiler
	Version string // first line of cc --version
}

// FindNative locates the system C compiler: GPUCC_CC when set, else the
// first of clang (the compiler codegen/c is written and tested against),
// cc and gcc on PATH. Running --version proves it starts.
func FindNative() (*Native, error) {
	names := []string{"clang", "cc", "gcc"}
	if env := os.Getenv("GPUCC_CC"); env != "" {
		names = []string{env}
	}
	var errs []error
	for _, name := range names {
		path, err := exec.LookPath(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out, err := run(context.Background(), path, "--version")
		if err != nil {
			errs = append(errs, fmt.Errorf("%s does not run: %w", path, err))
			continue
		}
		version, _, _ := strings.Cut(string(out), "\n")
		return &Native{CC: path, Version: strings.TrimSpace(version)}, nil
	}
	return nil, fmt.Errorf("no C compiler found (install clang, or set GPUCC_CC): %w", errors.Join(errs...))
}

// Key names the compiler, flags and target that a cache key must cover
// besides the source.
func (n *Native) Key() string {
	return strings.Join([]string{"native", n.CC, n.Version, runtime.GOOS, runtime.GOARCH,
		strings.Join(NativeCFlags, " ")}, "\x00")
}

// Shared compiles one C unit to a shared object and returns its bytes.
func (n *Native) Shared(ctx context.Context, source string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "gpucc-native-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src, out := filepath.Join(dir, "kernels.c"), filepath.Join(dir, "kernels.so")
	if err := os.WriteFile(src, []byte(source), 0o600); err != nil {
		return nil, err
	}
	ctx, cancel, err := withBuildTimeout(ctx, len(source))
	if err != nil {
		return nil, err
	}
	defer cancel()
	if _, err := run(ctx, n.CC, append(append([]string{}, NativeCFlags...), "-o", out, src)...); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(n.CC), err)
	}
	return os.ReadFile(out)
}

package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestKernelProfile prints where native's time goes in a model, kernel by
// kernel, without perf: for GPUCC_PROFILE_MODEL=path.onnx (input shapes
// as GPUCC_PROFILE_SHAPES=x=1,3,320,320;…, constants as
// GPUCC_PROFILE_CONST=sr=16000), it emits the unit the native backend
// builds, links it into a C program with a harness that runs each kernel
// GPUCC_PROFILE_RUNS times (default 9) on one thread and reports each
// kernel's least thread CPU time (CLOCK_THREAD_CPUTIME_ID), and prints
// them largest first with the kernel's kind, name and shape. The flags are
// the native backend's (cbuild.NativeCFlags, here without -shared).
//
//	GPUCC_PROFILE_MODEL=/tmp/det.onnx GPUCC_PROFILE_SHAPES='x=1,3,320,320' \
//	  go test -count=1 -run TestKernelProfile ./bench/
func TestKernelProfile(t *testing.T) {
	model := os.Getenv("GPUCC_PROFILE_MODEL")
	if model == "" {
		t.Skip("GPUCC_PROFILE_MODEL is unset")
	}
	f, err := os.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts := onnx.Options{Limits: Limits(), InputShapes: map[string][]int{}, Constants: map[string]*onnx.Tensor{}}
	opts.Limits.MaxNodes = 1 << 16
	for _, kv := range splitList(os.Getenv("GPUCC_PROFILE_SHAPES")) {
		name, dims, _ := strings.Cut(kv, "=")
		opts.InputShapes[name] = ints(t, dims)
	}
	for _, kv := range splitList(os.Getenv("GPUCC_PROFILE_CONST")) {
		name, v, _ := strings.Cut(kv, "=")
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		opts.Constants[name] = &onnx.Tensor{Name: name, Type: onnx.Int64, Shape: []int{}, Int64: []int64{x}}
	}
	g, err := onnx.Load(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "native", Limits: opts.Limits, Threads: 1})
	if err != nil {
		t.Skip(err)
	}
	defer rt.Close()
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	sp, err := exe.Plan().Sealed()
	if err != nil {
		t.Fatal(err)
	}
	unit, err := c.Target{}.Emit(sp)
	if err != nil {
		t.Fatal(err)
	}
	prog := sp.Program()
	dir := t.TempDir()
	runs, _ := strconv.Atoi(os.Getenv("GPUCC_PROFILE_RUNS"))
	runs = max(runs, 9)
	if err := os.WriteFile(filepath.Join(dir, "k.c"), []byte("#define _GNU_SOURCE\n"+unit.Source+profileHarness(unit, prog, runs)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The buffers' initial data, each buffer's floats in order.
	var blob []byte
	for _, b := range prog.Buffers {
		for i := range b.Len {
			v := float32(0)
			if i < len(b.Data) {
				v = b.Data[i]
			}
			blob = binary.LittleEndian.AppendUint32(blob, math.Float32bits(v))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "data.bin"), blob, 0o600); err != nil {
		t.Fatal(err)
	}
	if save := os.Getenv("GPUCC_PROFILE_SAVE"); save != "" {
		if err := os.WriteFile(save, []byte(unit.Source), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cc := os.Getenv("GPUCC_CC")
	if cc == "" {
		cc = "clang"
	}
	flags := []string{"-O3", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", "-std=c99", "-mno-fma"}
	if os.Getenv("GPUCC_NATIVE_ISA") != "baseline" {
		flags = append(flags, "-mavx2")
	}
	if out, err := exec.Command(cc, append(flags, "-o", filepath.Join(dir, "k"), filepath.Join(dir, "k.c"))...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	out, err := exec.Command(filepath.Join(dir, "k"), filepath.Join(dir, "data.bin")).Output()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ms   float64
		what string
	}
	var rows []row
	total := 0.0
	byKind := map[string]float64{}
	for i, line := range strings.Fields(string(out)) {
		ms, err := strconv.ParseFloat(line, 64)
		if err != nil || i >= len(prog.Kernels) {
			t.Fatalf("harness line %q", line)
		}
		k := &prog.Kernels[i]
		what := fmt.Sprintf("%3d %-11v %-28.28s %v", i, k.Kind, k.Name, k.Shape)
		if k.Kind == ir.KernelConv {
			cv := ir.Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
			what += fmt.Sprintf(" C%d->M%d g%d k%dx%d s%d in%dx%d", cv.C, cv.M, cv.Group, cv.KH, cv.KW, cv.SH, cv.H, cv.W)
		}
		for _, in := range k.Inputs {
			what += fmt.Sprintf(" <%v", in.Shape)
		}
		rows = append(rows, row{ms, what})
		total += ms
		byKind[k.Kind.String()] += ms
	}
	sort.Slice(rows, func(a, b int) bool { return rows[a].ms > rows[b].ms })
	fmt.Printf("profile %s: %d kernels, %.3f ms (sum of each kernel's least CPU time over %d runs)\n", filepath.Base(model), len(rows), total, runs)
	for kind, ms := range byKind {
		fmt.Printf("  kind %-12s %8.3f ms\n", kind, ms)
	}
	for i, r := range rows {
		if i >= 40 {
			break
		}
		fmt.Printf("  %8.3f ms %s\n", r.ms, r.what)
	}
}

// profileHarness is TestKernelProfile's main: it reads the buffers' data,
// then runs each kernel runs times and prints its least CPU time in ms,
// one line per kernel in program order.
func profileHarness(u *c.Unit, p *ir.Program, runs int) string {
	var s strings.Builder
	s.WriteString("\n#include <stdio.h>\n#include <stdlib.h>\n#include <time.h>\n")
	s.WriteString("static double cpu_ms(void) { struct timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6; }\n")
	s.WriteString("int main(int argc, char **argv) {\n\t(void)argc;\n\tFILE *f = fopen(argv[1], \"rb\");\n\tif (!f) return 1;\n")
	fmt.Fprintf(&s, "\tfloat *b[%d];\n", len(p.Buffers)+1)
	for i, buf := range p.Buffers {
		fmt.Fprintf(&s, "\tb[%d] = aligned_alloc(64, %d);\n\tif (fread(b[%d], 4, %d, f) != %d) return 2;\n", i, (buf.Len*4+63)/64*64, i, buf.Len, buf.Len)
	}
	fmt.Fprintf(&s, "\tb[%d] = aligned_alloc(64, %d);\n", len(p.Buffers), (max(u.Scratch, 1)*4+63)/64*64)
	s.WriteString("\tdouble t;\n")
	for _, k := range u.Kernels {
		args := make([]string, 0, len(k.Buffers)+1)
		for _, buf := range k.Buffers {
			args = append(args, fmt.Sprintf("b[%d]", buf))
		}
		if k.Scratch {
			args = append(args, fmt.Sprintf("b[%d]", len(p.Buffers)))
		}
		fmt.Fprintf(&s, "\tt = 1e30;\n\tfor (int r = 0; r < %d; r++) {\n\t\tdouble t0 = cpu_ms();\n\t\t%s(%s);\n\t\tdouble d = cpu_ms() - t0;\n\t\tif (d < t) t = d;\n\t}\n\tprintf(\"%%.4f\\n\", t);\n",
			runs, k.Export, strings.Join(args, ", "))
	}
	s.WriteString("\treturn 0;\n}\n")
	return s.String()
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func ints(t *testing.T, s string) []int {
	var out []int
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

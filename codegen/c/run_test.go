package c

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// compiler returns the system C compiler the runtime's native backend
// would pick (clang first), or skips the test when there is none.
func compiler(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"clang", "cc", "gcc"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("GPUCC_REQUIRE_CC") != "" {
		t.Fatal("no C compiler on PATH and GPUCC_REQUIRE_CC is set")
	}
	t.Skip("no C compiler on PATH")
	return ""
}

// runC builds p's unit with a small driver (inputs on stdin, every buffer
// on stdout, as raw little-endian float32) and returns each program
// output's values. Buffers a kernel writes start as NaN, so an element no
// kernel writes shows instead of reading as a harmless zero.
func runC(t *testing.T, sp *ir.Sealed) map[string][]float32 {
	t.Helper()
	u, err := Target{}.Emit(sp)
	p := sp.Program()
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, p)
	}
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stdlib.h>\n")
	src.WriteString(u.Source)
	src.WriteString("\nint main(void) {\n")
	fmt.Fprintf(&src, "\tfloat *b[%d];\n", len(p.Buffers)+1)
	var in bytes.Buffer
	for i, buf := range p.Buffers {
		fmt.Fprintf(&src, "\tb[%d] = malloc(4 * %d);\n", i, max(buf.Len, 1))
		fmt.Fprintf(&src, "\tfor (int j = 0; j < %d; j++) b[%d][j] = F(0x7fc00001u);\n", buf.Len, i)
		if buf.Input {
			fmt.Fprintf(&src, "\tif (fread(b[%d], 4, %d, stdin) != %d) return 1;\n", i, buf.Len, buf.Len)
			binary.Write(&in, binary.LittleEndian, buf.Data)
		}
	}
	fmt.Fprintf(&src, "\tb[%d] = calloc(%d, 4);\n", len(p.Buffers), max(u.Scratch, 1))
	for _, k := range u.Kernels {
		var args []string
		for _, buf := range k.Buffers {
			args = append(args, fmt.Sprintf("b[%d]", buf))
		}
		if k.Scratch {
			args = append(args, fmt.Sprintf("b[%d]", len(p.Buffers)))
		}
		fmt.Fprintf(&src, "\t%s(%s);\n", k.Export, strings.Join(args, ", "))
	}
	for i, buf := range p.Buffers {
		fmt.Fprintf(&src, "\tfwrite(b[%d], 4, %d, stdout);\n", i, buf.Len)
	}
	src.WriteString("\treturn 0;\n}\n")

	dir := t.TempDir()
	cfile, exe := filepath.Join(dir, "unit.c"), filepath.Join(dir, "unit")
	if err := os.WriteFile(cfile, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"-O2", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", "-std=c99", "-o", exe, cfile}
	if goruntime.GOARCH == "amd64" {
		flags = append(flags, "-mno-fma")
	}
	if out, err := exec.Command(compiler(t), flags...).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	cmd := exec.Command(exe)
	cmd.Stdin = &in
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	bufs := make([][]float32, len(p.Buffers))
	for i, buf := range p.Buffers {
		bufs[i] = make([]float32, buf.Len)
		for j := range bufs[i] {
			bufs[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(raw))
			raw = raw[4:]
		}
	}
	out := map[string][]float32{}
	for _, o := range p.Outputs {
		if o.Buffer >= 0 {
			out[o.Name] = bufs[o.Buffer]
		}
	}
	return out
}

// checkRun runs p as C and compares every output with cpuref.RunProgram,
// bit for bit.
func checkRun(t *testing.T, p *ir.Sealed) {
	t.Helper()
	want := cpuref.RunProgram(p.Program())
	for name, got := range runC(t, p) {
		for i, g := range got {
			if w := want[name][i]; math.Float32bits(g) != math.Float32bits(w) {
				t.Errorf("%s[%d] = %v (%#08x), cpuref %v (%#08x)", name, i, g, math.Float32bits(g), w, math.Float32bits(w))
				return
			}
		}
	}
}

// compile lowers g with opts.
func compile(t *testing.T, g *ir.Graph, opts passes.Options) *ir.Sealed {
	t.Helper()
	p, _, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return p
}

// TestRunSuite runs the shared op suite as C, with and without sum
// splitting (the split pass cuts large sums into blocks, which the
// generated kernels must reduce as separate subtrees).
func TestRunSuite(t *testing.T) {
	for _, split := range []bool{false, true} {
		for _, c := range irtest.Suite() {
			t.Run(fmt.Sprintf("split=%v/%s", split, c.Name), func(t *testing.T) {
				t.Parallel()
				p := compile(t, c.Graph, passes.Options{SplitSums: split})
				if split && !slices.ContainsFunc(p.Program().Kernels, func(k ir.Kernel) bool { return k.Blocks > 1 }) {
					t.Skip("no sum large enough to split: the same program as split=false")
				}
				checkRun(t, p)
			})
		}
	}
}

// TestRunSplitSum is the regression test for split sums: a kernel with
// Blocks > 1 must write each block's subtree sum, including the blocks
// that hold only padding (-0).
func TestRunSplitSum(t *testing.T) {
	for _, n := range []int{passes.SumSplitMin, passes.SumSplitMin + 1, 3*passes.SumSplitMin + 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			data := make([]float32, n)
			for i := range data {
				data[i] = float32(i%1000-500) * 0.37
			}
			b := ir.NewBuilder()
			x := b.Input(ir.Shape{n}, data)
			b.Output("s", x.Mul(x).SubScalar(3).Sum())
			g, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			p := compile(t, g, passes.Options{SplitSums: true})
			if p.Program().Kernels[0].Blocks < 2 {
				t.Fatalf("the sum was not split:\n%s", p)
			}
			checkRun(t, p)
		})
	}
}

// TestRunSumBlocks runs hand-built block sums whose blocks are smaller
// than SumBlock, with blocks of padding only at the end.
func TestRunSumBlocks(t *testing.T) {
	for _, tc := range []struct{ n, blocks int }{{100, 4}, {70, 8}, {1000, 2}, {3, 4}} {
		t.Run(fmt.Sprintf("%d/%d", tc.n, tc.blocks), func(t *testing.T) {
			data := make([]float32, tc.n)
			for i := range data {
				data[i] = float32(i%7-3) * 1.1
			}
			p := &ir.Program{
				Buffers: []ir.Buffer{{Len: tc.n, Shape: ir.Shape{tc.n}, Input: true, Data: data},
					{Len: tc.blocks, Shape: ir.Shape{tc.blocks}}},
				Kernels: []ir.Kernel{{Name: "s", Kind: ir.KernelReduce, Reduce: ir.OpSum, Shape: ir.Shape{tc.n}, Blocks: tc.blocks,
					Inputs: []ir.Operand{ir.PlainOperand(0, ir.Shape{tc.n})}, Outputs: []int{1},
					Body: []ir.Instr{{Kind: ir.InstrLoad}}, Stores: []int32{0}}},
				Outputs: []ir.ProgramOutput{{Name: "blocks", Shape: ir.Shape{tc.blocks}, Buffer: 1}},
			}
			sp, err := ir.Seal(p)
			if err != nil {
				t.Fatal(err)
			}
			checkRun(t, sp)
		})
	}
}

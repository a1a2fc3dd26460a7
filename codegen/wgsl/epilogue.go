package wgsl

import (
	"fmt"
	"os"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// MatmulEpilogueLoop lets a matmul tile loop a long epilogue
// (tileEpilogue); GPUCC_MATMUL_EPILOGUE_LOOP=on sets it. It is off by
// default until a device measures it: it cuts the driver's compile of
// such a kernel (lavapipe: 4152 ms to 38 ms for ViT-Tiny's GELU matmul,
// the same bits), but one output's epilogue at a time may run slower
// than 64 unrolled ones where a matmul has few workgroups (ViT's MLP:
// 24 on 132 SMs), whose independent erf chains hide each other's latency.
var MatmulEpilogueLoop = os.Getenv("GPUCC_MATMUL_EPILOGUE_LOOP") == "on"

// tileEpilogue renders a matmul tile's epilogue once, in a loop over the
// thread's tm×tn outputs, their accumulators copied into a private array
// first, when unrolled it would pass epilogueLoopLines (as a conv GEMM's
// does, convEpilogueLoop): the same operations on the same values in
// each output, so the same bits. It reports whether it did; a short
// epilogue (a bias, a relu), or any while MatmulEpilogueLoop is off, is
// left to the caller to unroll.
//
// The driver inlines every call: ViT-Tiny's MLP matmul with GELU as its
// epilogue unrolled the exact erf and division 64 times (46 KB of WGSL),
// and its pipeline alone took 4.1 s of lavapipe's 4.2 s for the model's
// 14 (2026-12-05), the critical path of the model's first compile; the
// H100's 1.55 s for ViT's pipelines was bound by one kernel too.
//
// Unlike a conv's, the bound counts each call as its function's lines:
// GELU's epilogue is 8 lines, 2 of them calls of about 190 lines.
//
// acc(m, n) names output (m, n)'s accumulator; row and col render its row
// and column from the u32 expressions "rm" and "rn"; guard is the
// condition that the output is in the matrix ("" when the tile divides
// it); oc is the output's batch offset.
func tileEpilogue(b *strings.Builder, k *ir.Kernel, tm, tn int, acc func(m, n int) string, row, col, guard, oc string) bool {
	if !MatmulEpilogueLoop {
		return false
	}
	body := codegen.Body(Lang, k, load(k, "i"), "acc[r]")
	if tm*tn <= 1 || tm*tn*inlinedLines(body, codegen.Funcs(Lang, k)) <= epilogueLoopLines {
		return false
	}
	epilogueLoop(b, k, tm, tn, acc, fmt.Sprintf("\t\tlet rm = r / %du;\n\t\tlet rn = r %% %du;\n\t\tlet row = %s;\n\t\tlet col = %s;\n", tn, tn, row, col),
		guard, oc+"row * N + col")
	return true
}

// epilogueLoop writes a GEMM tile's epilogue once, in a loop over the
// thread's tm×tn outputs, r = m·tn + n, their accumulators acc(m, n)
// copied into a private array first: the same operations on the same
// values in each output, so the same bits as the unrolled epilogue. lets
// place output r (at depth 2); guard and index are epilogueAt's. It ends
// the kernel's function.
func epilogueLoop(b *strings.Builder, k *ir.Kernel, tm, tn int, acc func(m, n int) string, lets, guard, index string) {
	fmt.Fprintf(b, "\tvar acc: array<f32, %d>;\n", tm*tn)
	for m := range tm {
		for n := range tn {
			fmt.Fprintf(b, "\tacc[%d] = %s;\n", m*tn+n, acc(m, n))
		}
	}
	fmt.Fprintf(b, "\tfor (var r = 0u; r < %du; r++) {\n%s", tm*tn, lets)
	epilogueAt(b, k, 2, guard, index, "acc[r]")
	b.WriteString("\t}\n}\n")
}

// inlinedLines counts the lines of body with each call of a function that
// defs define (WGSL "fn name(" ... "}") counted as that function's lines,
// as the driver inlines it.
func inlinedLines(body, defs []string) int {
	size := map[string]int{}
	cur := ""
	for _, ln := range defs {
		if name, ok := strings.CutPrefix(ln, "fn "); ok {
			if i := strings.IndexByte(name, '('); i > 0 {
				cur = name[:i]
			}
		}
		if cur != "" {
			size[cur]++
		}
		if ln == "}" {
			cur = ""
		}
	}
	n := 0
	for _, ln := range body {
		n++
		for name, lines := range size {
			n += strings.Count(ln, name+"(") * lines
		}
	}
	return n
}

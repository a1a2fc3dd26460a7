// Command accuracy measures the elementwise ops that gpucc defines by
// float32 sequences (exp, log, tanh, sqrt, rsqrt, div) against float64
// libm: every float32 input for the unary ops, dense samples and hard
// cases for div. It renders each op's table expression with the C code
// generator (the code the wasm and native backends run, bit-identical to
// cpuref), builds it with the system C compiler and runs it.
//
//	go run ./bench/accuracy            # every input: minutes per op
//	go run ./bench/accuracy -stride 97 # a quick look
//
// It is not part of the test suite; bench/RESULTS.md records its output.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/ir"
)

var unary = []struct {
	op  ir.Op
	ref string // the float64 reference, a C expression of x
}{
	{ir.OpExp, "exp(x)"}, {ir.OpLog, "log(x)"}, {ir.OpTanh, "tanh(x)"},
	{ir.OpSqrt, "sqrt(x)"}, {ir.OpRsqrt, "1.0 / sqrt(x)"},
}

// body renders op applied to operands a (and b) as C statements ending in
// the value v<n>, returning them and the final value's name.
func body(op ir.Op) (string, string) {
	k := &ir.Kernel{Body: []ir.Instr{{Kind: ir.InstrLoad, Operand: 0}, {Kind: ir.InstrLoad, Operand: 1},
		{Kind: ir.InstrOp, Op: op, Args: [2]int32{0, 1}}}}
	load := func(j int) string { return []string{"a", "b"}[j] }
	return codegen.Indent(codegen.Body(c.Lang, k, load, ""), 1), codegen.Value(2)
}

const prelude = `#pragma STDC FP_CONTRACT OFF
#include <math.h>
#include <stdio.h>
#include <stdint.h>
typedef unsigned int u32;
static inline float F(u32 b) { union { u32 u; float f; } x; x.u = b; return x.f; }
static inline u32 B(float f) { union { u32 u; float f; } x; x.f = f; return x.u; }
`

const unaryMain = `
/* ulps is |got - want| in units of the float32 ulp at want. */
static double ulps(float got, double want) {
	if (isnan(want)) return isnan(got) ? 0 : INFINITY;
	if ((float)want == got) {
		if (isinf(got)) return 0;
	} else if (isinf(got) || isnan(got)) return INFINITY;
	int e; frexp(want, &e);
	int q = e - 24; if (q < -149) q = -149;
	return fabs((double)got - want) / ldexp(1, q);
}
int main(int argc, char **argv) {
	uint64_t stride = atoi(argv[1]), shard = atoi(argv[2]), shards = atoi(argv[3]);
	double worst = 0; u32 worstx = 0; unsigned long long n = 0, over1 = 0, over2 = 0, nonfinite = 0, inexact = 0;
	for (uint64_t i = shard * stride; i < 0x100000000ull; i += stride * shards) {
		float x32 = F((u32)i); double x = x32;
		float got = op(x32);
		double e = ulps(got, REF);
		n++;
		if (e > 0.5) inexact++;
		if (e > 1) over1++;
		if (e > 2) over2++;
		if (isinf(e)) { nonfinite++; if (nonfinite <= 5) printf("mismatch x=%a (0x%08x): got %a want %a\n", x, (u32)i, (double)got, REF); continue; }
		if (e > worst) { worst = e; worstx = (u32)i; }
	}
	double x = F(worstx);
	printf("RESULT %llu %.17g %u %llu %llu %llu %llu\n", n, worst, worstx, inexact, over1, over2, nonfinite);
	printf("worst x=%a (0x%08x): got %a, float64 %a\n", x, worstx, (double)op(F(worstx)), REF);
	if (shard != 0) return 0;
	u32 sp[] = {0, 0x80000000u, 1, 0x80000001u, 0x00800000u, 0x7f7fffffu, 0xff7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0x3f800000u};
	for (int k = 0; k < (int)(sizeof sp / sizeof sp[0]); k++) {
		float g = op(F(sp[k]));
		printf("  f(%a) = %a (0x%08x)\n", (double)F(sp[k]), (double)g, B(g));
	}
	return 0;
}
`

const divMain = `
static u32 s = 2463534242u;
static u32 rnd(void) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; return s; }
static u32 fin(u32 b) { return (b & 0x7f800000u) == 0x7f800000u ? b & ~0x40000000u : b; }
static unsigned long long n = 0, bad = 0;
static void check(float a, float b) {
	float got = op(a, b);
	float want = (float)((double)a / (double)b); /* double rounding is innocuous: 53 >= 2*24+2 */
	n++;
	if (B(got) != B(want) && !(isnan(got) && isnan(want))) {
		if (++bad <= 10) printf("mismatch %a / %a: got %a want %a\n", (double)a, (double)b, (double)got, (double)want);
	}
}
int main(int argc, char **argv) {
	long samples = argc > 1 ? atol(argv[1]) : (1L << 28);
	for (long i = 0; i < samples; i++) check(F(fin(rnd())), F(fin(rnd())));
	unsigned long long dense = n;
	/* hard cases: quotients next to exact ones (ties, round-to-even) */
	for (long i = 0; i < samples / 4; i++) {
		float b = F(fin(rnd())), q = F(fin(rnd()) & 0x3fffffffu);
		float a = b * q;
		u32 ab = B(a);
		for (int d = -2; d <= 2; d++) check(F(ab + d), b);
	}
	/* significands of all ones and powers of two, every exponent pair, subnormal results */
	for (int ea = 0; ea < 255; ea++) for (int eb = 0; eb < 255; eb++) {
		u32 m[] = {0, 1, 0x7fffff, 0x400000, 0x555555, 0x2aaaaa};
		for (int i = 0; i < 6; i++) for (int j = 0; j < 6; j++) check(F((u32)ea << 23 | m[i]), F((u32)eb << 23 | m[j]));
	}
	for (long i = 0; i < samples / 16; i++) check(F(rnd() & 0x807fffffu), F(fin(rnd())));  /* subnormal numerators */
	for (long i = 0; i < samples / 16; i++) check(F(fin(rnd())), F(rnd() & 0x807fffffu));  /* subnormal denominators */
	printf("inputs %llu (%llu dense random pairs, %llu hard cases), not correctly rounded %llu\n", n, dense, n - dense, bad);
	return 0;
}
`

func main() {
	stride := flag.Int("stride", 1, "measure every stride-th float32 input (1: all 2^32)")
	jobs := flag.Int("j", goruntime.NumCPU(), "processes per op")
	divSamples := flag.Int64("div", 1<<28, "random pairs for div (and a quarter as many near-exact quotients)")
	cc := flag.String("cc", "cc", "C compiler")
	flag.Parse()
	dir, err := os.MkdirTemp("", "gpucc-accuracy")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	build := func(name, src string) string {
		cfile := filepath.Join(dir, name+".c")
		if err := os.WriteFile(cfile, []byte(src), 0o600); err != nil {
			log.Fatal(err)
		}
		bin := filepath.Join(dir, name)
		if out, err := exec.Command(*cc, "-O2", "-ffp-contract=off", "-fno-fast-math", "-o", bin, cfile, "-lm").CombinedOutput(); err != nil {
			log.Fatalf("%s: %v\n%s", name, err, out)
		}
		return bin
	}
	run := func(bin string, args ...string) string {
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
		if err := cmd.Run(); err != nil {
			log.Fatalf("%s: %v", bin, err)
		}
		return out.String()
	}
	for _, u := range unary {
		lines, v := body(u.op)
		src := prelude + "#include <stdlib.h>\n#define REF (" + u.ref + ")\nstatic float op(float a) {\n\tconst float b = 0;\n" + lines + "\treturn " + v + ";\n}\n" + unaryMain
		bin := build(u.op.String(), src)
		outs := make([]string, *jobs)
		var wg sync.WaitGroup
		for j := range outs {
			wg.Go(func() { outs[j] = run(bin, fmt.Sprint(*stride), fmt.Sprint(j), fmt.Sprint(*jobs)) })
		}
		wg.Wait()
		var n, inexact, over1, over2, wrong uint64
		worst, worstLine, extra := -1.0, "", ""
		for j, o := range outs {
			var sn, si, s1, s2, sw uint64
			var sworst float64
			var wx uint32
			lines := strings.SplitN(o, "\n", 3)
			fmt.Sscanf(lines[0], "RESULT %d %g %d %d %d %d %d", &sn, &sworst, &wx, &si, &s1, &s2, &sw)
			n, inexact, over1, over2, wrong = n+sn, inexact+si, over1+s1, over2+s2, wrong+sw
			if sworst > worst {
				worst, worstLine = sworst, lines[1]
			}
			if j == 0 && len(lines) > 2 {
				extra = lines[2]
			}
		}
		fmt.Printf("%s: %d inputs, max %.3f ULP (%s); > 0.5 ULP: %d, > 1 ULP: %d, > 2 ULP: %d, wrong special values: %d\n%s",
			u.op, n, worst, worstLine, inexact, over1, over2, wrong, extra)
	}
	lines, v := body(ir.OpDiv)
	src := prelude + "#include <stdlib.h>\nstatic float op(float a, float b) {\n" + lines + "\treturn " + v + ";\n}\n" + divMain
	fmt.Printf("div: %s", run(build("div", src), fmt.Sprint(*divSamples)))
}

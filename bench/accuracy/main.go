// Command accuracy measures the elementwise ops that gpucc defines by
// float32 sequences (exp, log, tanh, sqrt, rsqrt, erf, div) against their
// float64 meaning, the row's ir.OpInfo.F64 (the same definition the
// gradient checks and package eval64 use): every float32 input for the
// unary ops, dense samples and hard cases for div. It renders each op's
// table expression with the C code generator (the code the wasm and native
// backends run, bit-identical to cpuref), builds it with the system C
// compiler, runs it over the inputs and reads the results back.
//
//	go run ./bench/accuracy                  # every input: minutes per op
//	go run ./bench/accuracy -stride 97       # a quick look
//	go run ./bench/accuracy -check           # fail if cpuref's table understates an error
//	go run ./bench/accuracy -ops erf -check  # only the ops listed (div included only if listed)
//	go run ./bench/accuracy -write           # rewrite cpuref's table from this run (-stride 1 only)
//
// cpuref's package doc states each unary op's largest error; that table is
// this tool's output (-write, from an exhaustive run), and the benchmark
// tier (`bench/device.sh ops`) reruns it with -check, which fails when a
// measured error exceeds the stated one. It is not part of the test suite;
// bench/RESULTS.md records its output.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// unary are the one-operand ops measured over every float32 input.
var unary = []ir.Op{ir.OpExp, ir.OpLog, ir.OpTanh, ir.OpSqrt, ir.OpRsqrt, ir.OpErf}

// body renders op applied to operands a (and b) as C statements ending in
// the value v<n>, returning the definitions of the functions they call
// (codegen.Funcs: exp, div, …, or C's own division and sqrt), the
// statements and the final value's name.
func body(op ir.Op) (string, string, string) {
	k := &ir.Kernel{Body: []ir.Instr{{Kind: ir.InstrLoad, Operand: 0}, {Kind: ir.InstrLoad, Operand: 1},
		{Kind: ir.InstrOp, Op: op, Args: [2]int32{0, 1}}}}
	load := func(j int) string { return []string{"a", "b"}[j] }
	return codegen.Indent(codegen.Funcs(c.Lang, k), 0), codegen.Indent(codegen.Body(c.Lang, k, load, ""), 1), codegen.Value(2)
}

const prelude = `#pragma STDC FP_CONTRACT OFF
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
typedef unsigned int u32;
static inline float F(u32 b) { union { u32 u; float f; } x; x.u = b; return x.f; }
static inline u32 B(float f) { union { u32 u; float f; } x; x.f = f; return x.u; }
static float out[1 << 14];
static size_t nout;
static void emit(float v) { out[nout++] = v; if (nout == sizeof out / sizeof out[0]) { fwrite(out, 4, nout, stdout); nout = 0; } }
`

// unaryMain writes op(x) for x = shard·stride, then every stride·shards-th
// bit pattern, as little-endian float32.
const unaryMain = `
int main(int argc, char **argv) {
	uint64_t stride = atoll(argv[1]), shard = atoll(argv[2]), shards = atoll(argv[3]);
	for (uint64_t i = shard * stride; i < 0x100000000ull; i += stride * shards) emit(op(F((u32)i)));
	fwrite(out, 4, nout, stdout);
	return 0;
}
`

// divMain writes a, b and op(a, b) for the dense random pairs first, then
// the hard cases.
const divMain = `
static u32 s = 2463534242u;
static u32 rnd(void) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; return s; }
static u32 fin(u32 b) { return (b & 0x7f800000u) == 0x7f800000u ? b & ~0x40000000u : b; }
static void check(float a, float b) { emit(a); emit(b); emit(op(a, b)); }
int main(int argc, char **argv) {
	long samples = atol(argv[1]);
	for (long i = 0; i < samples; i++) check(F(fin(rnd())), F(fin(rnd())));
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
	fwrite(out, 4, nout, stdout);
	return 0;
}
`

// ulps is |got - want| in units of the float32 ULP at want (2⁻¹⁴⁹ in the
// subnormal range): 0 for a matching infinity or NaN, +Inf for a NaN or
// an infinity that want does not round to.
func ulps(got float32, want float64) float64 {
	g := float64(got)
	switch {
	case math.IsNaN(want):
		if math.IsNaN(g) {
			return 0
		}
		return math.Inf(1)
	case float32(want) == got:
		if math.IsInf(g, 0) {
			return 0
		}
	case math.IsInf(g, 0) || math.IsNaN(g):
		return math.Inf(1)
	}
	_, e := math.Frexp(want)
	return math.Abs(g-want) / math.Ldexp(1, max(e-24, -149))
}

// floats reads little-endian float32 values from r, calling f with each.
func floats(r io.Reader, f func(float32)) {
	buf := make([]byte, 1<<16)
	have := 0
	for {
		n, err := r.Read(buf[have:])
		have += n
		whole := have &^ 3
		for k := 0; k < whole; k += 4 {
			f(math.Float32frombits(binary.LittleEndian.Uint32(buf[k:])))
		}
		have = copy(buf, buf[whole:have])
		if err == io.EOF {
			return
		}
		if err != nil {
			log.Fatal(err)
		}
	}
}

// stats is one shard's count of a unary op's errors.
type stats struct {
	n, inexact, over1, over2, wrong uint64
	worst                           float64
	worstX                          uint32
	mismatches                      []string
}

func main() {
	stride := flag.Int("stride", 1, "measure every stride-th float32 input (1: all 2^32)")
	jobs := flag.Int("j", goruntime.NumCPU(), "processes per op")
	divSamples := flag.Int64("div", 1<<28, "random pairs for div (and a quarter as many near-exact quotients)")
	cc := flag.String("cc", "cc", "C compiler")
	check := flag.Bool("check", false, "exit 1 if a measured error exceeds the one cpuref's doc states")
	write := flag.Bool("write", false, "rewrite cpuref's accuracy table with this run's maxima (needs -stride 1)")
	docPath := flag.String("doc", "cpuref/cpuref.go", "the file holding cpuref's accuracy table")
	only := flag.String("ops", "", "comma-separated ops to measure (default: all; div is measured only when listed or by default)")
	flag.Parse()
	if *only != "" {
		var keep []ir.Op
		for _, op := range unary {
			if slices.Contains(strings.Split(*only, ","), op.String()) {
				keep = append(keep, op)
			}
		}
		unary = keep
	}
	if *write && *stride != 1 {
		log.Fatal("-write needs -stride 1: a sampled maximum is only a lower bound")
	}
	measured := map[ir.Op]float64{}
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
		if out, err := exec.Command(*cc, "-O2", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", "-o", bin, cfile, "-lm").CombinedOutput(); err != nil {
			log.Fatalf("%s: %v\n%s", name, err, out)
		}
		return bin
	}
	// stream runs bin and passes its standard output to read.
	stream := func(read func(io.Reader), bin string, args ...string) {
		cmd := exec.Command(bin, args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			log.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			log.Fatalf("%s: %v", bin, err)
		}
		read(out)
		if err := cmd.Wait(); err != nil {
			log.Fatalf("%s: %v", bin, err)
		}
	}
	for _, op := range unary {
		ref := op.Info().F64
		funcs, lines, v := body(op)
		src := prelude + funcs + "static float op(float a) {\n\tconst float b = 0;\n" + lines + "\treturn " + v + ";\n}\n" + unaryMain
		bin := build(op.String(), src)
		shards := make([]stats, *jobs)
		var wg sync.WaitGroup
		for j := range shards {
			wg.Go(func() {
				st := &shards[j]
				i := uint64(j) * uint64(*stride)
				stream(func(r io.Reader) {
					floats(r, func(got float32) {
						x := math.Float32frombits(uint32(i))
						want := ref(float64(x), 0)
						e := ulps(got, want)
						st.n++
						if e > 0.5 {
							st.inexact++
						}
						if e > 1 {
							st.over1++
						}
						if e > 2 {
							st.over2++
						}
						if math.IsInf(e, 1) {
							if st.wrong++; st.wrong <= 5 {
								st.mismatches = append(st.mismatches, fmt.Sprintf("mismatch x=%x (%#08x): got %x want %x", x, uint32(i), got, want))
							}
						} else if e > st.worst {
							st.worst, st.worstX = e, uint32(i)
						}
						i += uint64(*stride) * uint64(*jobs)
					})
				}, bin, fmt.Sprint(*stride), fmt.Sprint(j), fmt.Sprint(*jobs))
			})
		}
		wg.Wait()
		var all stats
		all.worst = -1
		for _, st := range shards {
			all.n, all.inexact, all.over1, all.over2, all.wrong = all.n+st.n, all.inexact+st.inexact, all.over1+st.over1, all.over2+st.over2, all.wrong+st.wrong
			all.mismatches = append(all.mismatches, st.mismatches...)
			if st.worst > all.worst {
				all.worst, all.worstX = st.worst, st.worstX
			}
		}
		for _, m := range all.mismatches {
			fmt.Println(m)
		}
		measured[op] = all.worst
		wx := math.Float32frombits(all.worstX)
		fmt.Printf("%s: %d inputs, max %.3f ULP (worst x=%x (%#08x): got %x, float64 %x); > 0.5 ULP: %d, > 1 ULP: %d, > 2 ULP: %d, wrong special values: %d\n",
			op, all.n, all.worst, wx, all.worstX, cpuref.Unary(op, wx, 0), ref(float64(wx), 0), all.inexact, all.over1, all.over2, all.wrong)
		for _, b := range []uint32{0, 0x80000000, 1, 0x80000001, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x3f800000} {
			g := cpuref.Unary(op, math.Float32frombits(b), 0)
			fmt.Printf("  f(%x) = %x (%#08x)\n", math.Float32frombits(b), g, math.Float32bits(g))
		}
	}
	if *only != "" && !slices.Contains(strings.Split(*only, ","), "div") {
		if *check {
			if err := table(*docPath, measured, 0, false); err != nil {
				log.Fatal(err)
			}
		}
		return
	}
	// div: the float64 quotient rounded to float32 is the correctly rounded
	// one (double rounding is innocuous: 53 ≥ 2·24+2).
	ref := ir.OpDiv.Info().F64
	funcs, lines, v := body(ir.OpDiv)
	src := prelude + funcs + "static float op(float a, float b) {\n" + lines + "\treturn " + v + ";\n}\n" + divMain
	var n, bad uint64
	var triple [3]float32
	k := 0
	stream(func(r io.Reader) {
		floats(r, func(x float32) {
			triple[k] = x
			if k++; k < 3 {
				return
			}
			k = 0
			a, b, got := triple[0], triple[1], triple[2]
			want := float32(ref(float64(a), float64(b)))
			n++
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				if bad++; bad <= 10 {
					fmt.Printf("mismatch %x / %x: got %x want %x\n", a, b, got, want)
				}
			}
		})
	}, build("div", src), fmt.Sprint(*divSamples))
	fmt.Printf("div: inputs %d (%d dense random pairs, %d hard cases), not correctly rounded %d\n", n, *divSamples, n-uint64(*divSamples), bad)
	if *check || *write {
		if err := table(*docPath, measured, bad, *write); err != nil {
			log.Fatal(err)
		}
	}
}

// tableLine matches a row of cpuref's accuracy table: "//\tname  1.234 ULP"
// (sqrt's "correctly rounded (0.500 ULP)" included).
var tableLine = regexp.MustCompile(`(?m)^//\t(\w+)( +)(correctly rounded \()?([0-9.]+) ULP(\))?$`)

// table checks the maxima measured (and div's misses) against the table in
// the file at path, or with write rewrites the file's rows to them, rounded
// up to 0.001 ULP. Every measured unary op must have a row.
func table(path string, measured map[ir.Op]float64, divMisses uint64, write bool) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if divMisses > 0 {
		return fmt.Errorf("div: %d quotients not correctly rounded, which the table says it is", divMisses)
	}
	byName := map[string]ir.Op{}
	for op := range measured {
		byName[op.String()] = op
	}
	seen := map[ir.Op]bool{}
	var errs []string
	out := tableLine.ReplaceAllStringFunc(string(src), func(row string) string {
		m := tableLine.FindStringSubmatch(row)
		op, ok := byName[m[1]]
		if !ok {
			return row
		}
		seen[op] = true
		stated, _ := strconv.ParseFloat(m[4], 64)
		got := math.Ceil(measured[op]*1000) / 1000
		if got > stated {
			errs = append(errs, fmt.Sprintf("%s: measured %.4f ULP, the table states %s", m[1], measured[op], m[4]))
		}
		return fmt.Sprintf("//\t%s%s%s%.3f ULP%s", m[1], m[2], m[3], got, m[5])
	})
	for op := range measured {
		if !seen[op] {
			errs = append(errs, fmt.Sprintf("%s: no row in %s's accuracy table", op, path))
		}
	}
	if write {
		fmt.Printf("rewrote the accuracy table in %s\n", path)
		return os.WriteFile(path, []byte(out), 0o644)
	}
	if len(errs) > 0 {
		return fmt.Errorf("the accuracy table in %s understates:\n%s", path, strings.Join(errs, "\n"))
	}
	fmt.Printf("the accuracy table in %s holds for every input measured\n", path)
	return nil
}

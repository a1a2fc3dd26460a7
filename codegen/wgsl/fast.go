package wgsl

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// FastPaths allows kernels to compute the table functions that have one
// by their fast path (ir.FastPaths: exp, tanh, sigmoid), where their
// target says so (Target.FastPaths): a function prim_<name> that takes
// prim_<name>_fast where every lane of its operand lies inside the path's
// interval and the table's body, renamed prim_<name>_full, elsewhere;
// where every lane is inside or in one of the path's constant tails (a
// masked softmax's -Inf, a saturated tanh), the fast body and a select of
// the tails' constants. Branches, not selects: while a warp's operands are
// ordinary it runs the fast body alone. The same bits (ir's TestFastPaths,
// TestFastPathsC over every float32).
//
// FastPaths is the process's permission (GPUCC_FAST_PATHS: on, off, or
// unset for fastPathsDefault). A device sets Target.FastPaths only where
// it is given and the device's own fast-path probe (FastProbe, which
// runtime/webgpu runs once a process per adapter) saw its driver give the
// table's bits with them: the bodies are proven on the CPU over every
// float32, but a driver's compiler may take liberties with them (lavapipe's
// reassociated exp's fast body until its constants were made opaque).
// On an H100 (2026-12-05) the probe saw every one of 13.3e9 inputs agree
// and 266 bit tests passed with them. Nothing else sets it: the page's WebGPU
// (webgpu_js.go, which runs no probe), the prebuilt shaders of gpucc build,
// WebGL2's GLSL and the C targets call the table's bodies.
var FastPaths, fastPathsEnv = fastPathsFromEnv(os.Getenv("GPUCC_FAST_PATHS"))

// fastPathsDefault is FastPaths where GPUCC_FAST_PATHS is unset: on, so
// every device whose probe passes takes them. The H100's driver ran the
// probe exhaustively and the bit tests with them; they cut sigmoid
// [8192,1024] from 0.0556 to 0.0409 ms and tanh from 0.0496 to 0.0454
// (bench/RESULTS.md, the eighth session's visit).
const fastPathsDefault = true

// fastPathsFromEnv is FastPaths for GPUCC_FAST_PATHS's value s: "on",
// "off", "" (the default), or an error (usage) that every Emit returns,
// rather than run kernels other than the ones asked for.
func fastPathsFromEnv(s string) (bool, error) {
	switch s {
	case "":
		return fastPathsDefault, nil
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, ir.Errorf(ir.CodeUsage, -1, "GPUCC_FAST_PATHS", "GPUCC_FAST_PATHS=%s: want on or off", ir.Quote(s))
}

// withFastPaths rewrites function definitions lines (codegen.Funcs's, in
// lang) so that each function with a fast path takes it: its definition
// is renamed prim_<name>_full and followed by prim_<name>_fast and the
// prim_<name> that chooses between them. With fused, a path's fused body
// where it has one.
func withFastPaths(lines []string, lang codegen.Lang, fused bool) []string {
	return withPaths(lines, lang, fused, ir.FastPaths(), true)
}

// withPaths is withFastPaths for the fast paths given; with opaque, their
// constants hidden from the compiler (the kernels'), else literals (what
// lavapipe reassociated: only FastProbe's tests ask for them).
func withPaths(lines []string, lang codegen.Lang, fused bool, paths map[string]ir.FastPath, opaque bool) []string {
	lit := lang
	lit.Const, lit.Native = nil, nil
	// constants the compiler cannot see, as the table's are (Params.k):
	// with literals, lavapipe's NIR reassociated the arithmetic (exp's fast
	// body came out 1 ulp off on 5485 of TestXMathPairs' inputs). Each is
	// uniform, so a GPU computes it once, not per element.
	if bits := lit.Bits; opaque {
		lit.Bits = func(b uint32) string {
			return strings.Replace(bits(b), "u)", "u | bitcast<u32>(params.zero))", 1)
		}
	}
	var out []string
	for i := 0; i < len(lines); i++ {
		name, fp, ok := fastHead(lines[i], paths)
		if !ok {
			out = append(out, lines[i])
			continue
		}
		end := i + slices.Index(lines[i:], "}")
		full := codegen.FuncName(&ir.Func{Name: name}) + "_full"
		out = append(out, strings.Replace(lines[i], codegen.FuncName(&ir.Func{Name: name})+"(", full+"(", 1))
		out = append(out, lines[i+1:end+1]...)
		out = append(out, "")
		body := fp.Body
		if fused && fp.Fused != nil {
			body = fp.Fused
		}
		f := &ir.Func{Name: name + "_fast", Params: 1, Body: body}
		out = append(out, codegen.Define(lit, []*ir.Func{f}, 0)...)
		out = append(out, lang.Func(codegen.FuncName(&ir.Func{Name: name}), []string{"p0"}))
		c := func(v float32) string { return lit.Bits(math.Float32bits(v)) }
		// inside, and in a tail; all() of a vec4's lanes, a scalar as is
		and, or, all := "&", "|", func(b string) string { return "all(" + b + ")" }
		if !strings.HasPrefix(c(0), "vec") {
			and, or, all = "&&", "||", func(b string) string { return b }
		}
		fast := codegen.FuncName(f) + "(p0)"
		// one comparison of |x| (a free modifier on NVIDIA's) where the
		// interval is symmetric, as every path's is; false for NaN
		inside := fmt.Sprintf("(p0 > %s) %s (p0 < %s)", c(fp.Lo), and, c(fp.Hi))
		if fp.Lo == -fp.Hi {
			inside = fmt.Sprintf("abs(p0) < %s", c(fp.Hi))
		}
		out = append(out,
			"\tvar r = p0;",
			"\tlet inside = "+inside+";",
			"\tif ("+all("inside")+") {",
			"\t\tr = "+fast+";",
			"\t} else {",
			// the tails' comparisons only in the warps that reach them
			fmt.Sprintf("\t\tlet below = p0 < %s;", c(fp.Below.At)),
			fmt.Sprintf("\t\tlet above = p0 > %s;", c(fp.Above.At)),
			"\t\tif ("+all("inside "+or+" below "+or+" above")+") {",
			fmt.Sprintf("\t\t\tr = select(select(%s, %s, above), %s, below);", fast, lit.Bits(fp.Above.Bits), lit.Bits(fp.Below.Bits)),
			"\t\t} else {",
			"\t\t\tr = "+full+"(p0);",
			"\t\t}",
			"\t}",
			"\treturn r;",
			"}")
		i = end
	}
	return out
}

// fastHead reports whether line opens the definition of a function with a
// fast path, and which.
func fastHead(line string, paths map[string]ir.FastPath) (string, ir.FastPath, bool) {
	if !strings.HasPrefix(line, "fn prim_") {
		return "", ir.FastPath{}, false
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(line, "fn prim_"), "(")
	fp, ok := paths[name]
	return name, fp, ok
}

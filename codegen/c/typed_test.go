package c

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// typedCase is one typed row over one dtype: op over operands a (and b)
// of dtype in, giving out.
type typedCase struct {
	op      ir.Op
	in, out ir.DType
	a, b    cpuref.Value
}

// typedCases returns every row the C table holds over every dtype it
// takes, and every cast, over extremes of the dtype (integer divisors
// with zeros, so faults occur).
func typedCases() []typedCase {
	const n = 64
	values := func(t ir.DType, seed uint64) cpuref.Value {
		if t.IsFloat() {
			return cpuref.Value{DType: t, F: irtest.FloatExtremes(t, seed, n)}
		}
		return cpuref.Value{DType: t, I: irtest.IntExtremes(t, seed, n)}
	}
	var cs []typedCase
	var device []ir.DType // protocol v1's and int16 and uint16
	for _, t := range ir.AllDTypes() {
		// uint64's rows are int64's; its range check is the typed
		// graph's (EmitTypedGraph), which TestTypedU64Backends runs.
		if ir.DeviceDTypes.Has(t) && t != ir.U64 {
			device = append(device, t)
		}
	}
	for _, t := range device {
		for _, op := range ir.Ops() {
			info := op.Info()
			if info.ScalarOf != 0 || info.Args > 2 || !info.Elementwise || !info.Types.In.Has(t) || op == ir.OpCast {
				continue
			}
			if _, ok := TypedElementwise(op, t, t, "y", "a", "b"); !ok {
				continue
			}
			out, err := ir.ResultDType(0, op, []ir.DType{t, t}[:info.Args], ir.Bool)
			if err != nil {
				continue
			}
			cs = append(cs, typedCase{op, t, out, values(t, uint64(op)*100+uint64(t)), values(t, uint64(op)*100+uint64(t)+50)})
		}
		for _, to := range device {
			a := values(t, uint64(t)*10+uint64(to))
			if t.IsFloat() { // large values too, so casts leave the range
				for i := range a.F {
					if i%3 == 0 {
						a.F[i] = t.Round(a.F[i] * 1e6)
						if math.IsInf(float64(a.F[i]), 0) {
							a.F[i] = t.Round(65504)
						}
					}
				}
			}
			if !t.IsFloat() { // ties of every float format: 2049 (float16), 257 (bfloat16), 2^24+1, 2^31+2^23+1
				lo, hi := t.Range()
				k := 0
				for _, v := range []int64{2049, 2051, 257, 259, 65519, 65520, 1<<24 + 1, 1<<24 + 3, 1<<31 + 1<<23 + 1, 1<<31 + 1<<23, -(1<<24 + 1), 1<<63 - 1} {
					if v >= lo && v <= hi && k < len(a.I) {
						a.I[k] = v
						k++
					}
				}
			}
			cs = append(cs, typedCase{ir.OpCast, t, to, a, a})
		}
	}
	return cs
}

// reference evaluates one case element by element with cpuref.EvalTyped:
// each element's value, or that it faults.
func (c typedCase) reference(t *testing.T) (vals []string, faults []bool) {
	t.Helper()
	for k := range c.a.Len() {
		b := ir.NewBuilder()
		one := func(v cpuref.Value) ir.Tensor {
			if v.DType.IsFloat() {
				return b.TypedInput("", v.DType, ir.Shape{1}, v.F[k:k+1], nil)
			}
			return b.TypedInput("", v.DType, ir.Shape{1}, nil, v.I[k:k+1])
		}
		x := one(c.a)
		var y ir.Tensor
		switch {
		case c.op == ir.OpCast:
			y = x.Cast(c.out)
		case c.op.Info().Args == 2:
			y = x.ApplyTo(c.out, c.op, one(c.b))
		default:
			y = x.Apply(c.op)
		}
		b.Output("y", y)
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatalf("%v of %v: %v", c.op, c.in, err)
		}
		v, err := cpuref.EvalTyped(g)
		if err != nil {
			vals, faults = append(vals, ""), append(faults, true)
			continue
		}
		vals, faults = append(vals, format(v[g.Outputs[0].ID], 0)), append(faults, false)
	}
	return vals, faults
}

// format writes element k of v as the C driver prints it: a float's bits
// as float32, an integer's value.
func format(v cpuref.Value, k int) string {
	if v.DType.IsFloat() {
		return strconv.FormatUint(uint64(math.Float32bits(v.F[k])), 10)
	}
	return strconv.FormatInt(v.I[k], 10)
}

// cLiteral writes element k of v as C stores it.
func cLiteral(v cpuref.Value, k int) string {
	switch v.DType {
	case ir.F32:
		return fmt.Sprintf("0x%08xu", math.Float32bits(v.F[k]))
	case ir.F16:
		return fmt.Sprintf("0x%04xu", ir.F16Bits(v.F[k]))
	case ir.BF16:
		return fmt.Sprintf("0x%04xu", ir.BF16Bits(v.F[k]))
	case ir.I64:
		if v.I[k] == math.MinInt64 {
			return "(-9223372036854775807LL - 1)"
		}
		return strconv.FormatInt(v.I[k], 10) + "LL"
	case ir.U32:
		return strconv.FormatInt(v.I[k], 10) + "u"
	}
	return strconv.FormatInt(v.I[k], 10)
}

// TestTypedRowsMatchCpuref: every typed row of the C table over every
// dtype it takes, and every cast between two dtypes, compiled with the
// system compiler, gives cpuref.EvalTyped's value on each element, bit for
// bit, and faults exactly where the reference fails the run: two's
// complement wrapping at ±2^31, ±2^63 and the narrow types' edges,
// INT_MIN / -1, division and modulo by zero, shifts of the width,
// float16 and bfloat16 rounding (subnormals, overflow), integer to float
// in one rounding, float to integer out of range.
func TestTypedRowsMatchCpuref(t *testing.T) {
	cc := compiler(t)
	cs := typedCases()
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n")
	src.WriteString(typedPrelude)
	src.WriteString("static float F(t_u32 u) { t_fu x; x.u = u; return x.f; }\n")
	src.WriteString("int main(void) {\n")
	for ci, c := range cs {
		m := c.a.Len()
		fmt.Fprintf(&src, "\t{ /* %v %v -> %v */\n", c.op, c.in, c.out)
		for name, v := range map[string]cpuref.Value{"a": c.a, "b": c.b} {
			var lits []string
			for k := range m {
				lits = append(lits, cLiteral(v, k))
			}
			st := StorageType(c.in)
			if c.in == ir.F32 { // stored as its bits: F() of each
				st = "t_u32"
			}
			fmt.Fprintf(&src, "\t\tstatic const %s %s_[%d] = {%s};\n", st, name, m, strings.Join(lits, ", "))
		}
		load := func(name string) string {
			if c.in == ir.F32 {
				return "float " + name + "[1]; " + name + "[0] = F(" + name + "_[k]);"
			}
			return StorageType(c.in) + " " + name + "[1]; " + name + "[0] = " + name + "_[k];"
		}
		stmt, ok := TypedElementwise(c.op, c.in, c.out, "y", "a", "b")
		if !ok {
			t.Fatalf("%v of %v: no C", c.op, c.in)
		}
		stmt = strings.ReplaceAll(stmt, "[i]", "[0]")
		fmt.Fprintf(&src, "\t\tfor (int k = 0; k < %d; k++) {\n\t\t\t%s %s\n", m, load("a"), load("b"))
		fmt.Fprintf(&src, "\t\t\t%s y[1]; int f0 = 0; int *fault = &f0; (void)fault;\n\t\t\t%s\n", StorageType(c.out), stmt)
		switch {
		case c.out == ir.F32:
			src.WriteString("\t\t\tt_fu u; u.f = y[0]; printf(\"%d %d %u\\n\", " + strconv.Itoa(ci) + ", f0, u.u);\n")
		case c.out == ir.F16 || c.out == ir.BF16:
			conv := map[ir.DType]string{ir.F16: "f16_float", ir.BF16: "bf16_float"}[c.out]
			src.WriteString("\t\t\tt_fu u; u.f = " + conv + "(y[0]); printf(\"%d %d %u\\n\", " + strconv.Itoa(ci) + ", f0, u.u);\n")
		default:
			src.WriteString("\t\t\tprintf(\"%d %d %lld\\n\", " + strconv.Itoa(ci) + ", f0, (t_i64)y[0]);\n")
		}
		src.WriteString("\t\t}\n\t}\n")
	}
	src.WriteString("\treturn 0;\n}\n")
	dir := t.TempDir()
	cfile, exe := filepath.Join(dir, "typed.c"), filepath.Join(dir, "typed")
	if err := os.WriteFile(cfile, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"-O2", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", "-std=c99", "-o", exe, cfile}
	if goruntime.GOARCH == "amd64" {
		flags = append(flags, "-mno-fma")
	}
	if out, err := exec.Command(cc, flags...).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	raw, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	got := map[int][][2]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		ci, _ := strconv.Atoi(f[0])
		got[ci] = append(got[ci], [2]string{f[1], f[2]})
	}
	checked, faults := 0, 0
	for ci, c := range cs {
		want, wfault := c.reference(t)
		for k := range want {
			g := got[ci][k]
			if fault := g[0] == "1"; fault != wfault[k] || !fault && g[1] != want[k] && !(c.out.IsFloat() && isNaN(g[1]) && isNaN(want[k])) {
				t.Errorf("%v %v -> %v, element %d (a %s, b %s): C gives %s (fault %v), cpuref %s (fault %v)",
					c.op, c.in, c.out, k, cLiteral(c.a, k), cLiteral(c.b, k), g[1], fault, want[k], wfault[k])
			}
			checked++
			if wfault[k] {
				faults++
			}
		}
	}
	t.Logf("%d cases, %d elements, %d faults, all cpuref's", len(cs), checked, faults)
}

// isNaN reports whether a printed float32's bits are a NaN: which NaN
// (0/0 is 0xffc00000 on x86, 0x7fc00000 in cpuref) is not observable, as
// a NaN output fails the run (non_finite_output) and every comparison and
// cast treats NaNs alike.
func isNaN(bits string) bool {
	u, err := strconv.ParseUint(bits, 10, 32)
	return err == nil && math.IsNaN(float64(math.Float32frombits(uint32(u))))
}

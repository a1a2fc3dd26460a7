package c

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
)

// TestMath64MatchesCpuref: the prelude's exp64, log64 and pow64, compiled
// with the system compiler at -O2 (-ffp-contract=off, as native's and
// wasm's units are), give cpuref.Exp64's, Log64's and Pow64's bits on
// every argument of a sweep: random values over each function's range,
// subnormals, the overflow and underflow edges, and every pair of pow's
// special values (±0, ±1, ±0.5, ±Inf, NaN, odd and even integers, 2^63).
// The C library's exp would not (glibc's is correctly rounded almost
// always, fdlibm's is not).
func TestMath64MatchesCpuref(t *testing.T) {
	cc := compiler(t)
	r := rand.New(rand.NewPCG(64, 64))
	n := 20000
	if testing.Short() {
		n = 4000
	}
	edges := []float64{0, math.Copysign(0, -1), 5e-324, -5e-324, 0x1p-1022, math.MaxFloat64, -math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(),
		709.782712893383973096, 709.7827128933841, 709.78, 709.44, -745.1332191019411, -745.13321910194122, -708.4, -708.39641853226410622, 0x1p-28, -0x1p-28, 0x1.fffffffffffffp-29, 1, -1, 0.5, 2, 1e-300}
	var xs []float64
	xs = append(xs, edges...)
	for range n {
		xs = append(xs, (r.Float64()*2-1)*750, r.Float64()*math.MaxFloat64, math.Float64frombits(r.Uint64()>>1), (r.Float64()*2-1)*1e-8)
	}
	specials := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 2, -2, 3, -3, 2.5, -2.5, math.Inf(1), math.Inf(-1), math.NaN(), 0x1p63, -0x1p63, 0x1p53 + 2, 0x1p53 - 1, 1e308, 5e-324, 0.999, 1.001, 1e-3, 700, -700}
	type pair struct{ x, y float64 }
	var ps []pair
	for _, x := range specials {
		for _, y := range specials {
			ps = append(ps, pair{x, y})
		}
	}
	for range n {
		ps = append(ps, pair{r.Float64() * 30, (r.Float64()*2 - 1) * 60}, pair{-r.Float64() * 30, float64(r.IntN(81) - 40)},
			pair{math.Float64frombits(r.Uint64() >> 1), (r.Float64()*2 - 1) * 4})
	}
	var in strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&in, "%d\n", math.Float64bits(x))
	}
	for _, p := range ps {
		fmt.Fprintf(&in, "%d %d\n", math.Float64bits(p.x), math.Float64bits(p.y))
	}
	src := "#include <stdio.h>\n" + TypedPrelude() + fmt.Sprintf(`
static unsigned long long bits(double d) { t_du x; x.d = d; return x.u; }
int main(void) {
	unsigned long long a, b;
	for (int k = 0; k < %d; k++) {
		if (scanf("%%llu", &a) != 1) return 1;
		printf("%%llu %%llu\n", bits(exp64(f64_of(a))), bits(log64(f64_of(a))));
	}
	for (int k = 0; k < %d; k++) {
		if (scanf("%%llu %%llu", &a, &b) != 2) return 1;
		printf("%%llu\n", bits(pow64(f64_of(a), f64_of(b))));
	}
	return 0;
}
`, len(xs), len(ps))
	dir := t.TempDir()
	cfile, exe := filepath.Join(dir, "math64.c"), filepath.Join(dir, "math64")
	if err := os.WriteFile(cfile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"-O2", "-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", "-std=c99", "-o", exe, cfile}
	if goruntime.GOARCH == "amd64" {
		flags = append(flags, "-mno-fma")
	}
	if out, err := exec.Command(cc, flags...).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	cmd := exec.Command(exe)
	cmd.Stdin = strings.NewReader(in.String())
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	next := func() []uint64 {
		if !sc.Scan() {
			t.Fatal("the C driver's output ends early")
		}
		var out []uint64
		for _, f := range strings.Fields(sc.Text()) {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	bad := 0
	report := func(what string, got, want float64) {
		if bad++; bad <= 10 {
			t.Errorf("%s: C gives %v (%#x), cpuref %v (%#x)", what, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	for _, x := range xs {
		v := next()
		if want := cpuref.Exp64(x); v[0] != math.Float64bits(want) {
			report(fmt.Sprintf("exp(%v)", x), math.Float64frombits(v[0]), want)
		}
		if want := cpuref.Log64(x); v[1] != math.Float64bits(want) {
			report(fmt.Sprintf("log(%v)", x), math.Float64frombits(v[1]), want)
		}
	}
	for _, p := range ps {
		v := next()
		if want := cpuref.Pow64(p.x, p.y); v[0] != math.Float64bits(want) {
			report(fmt.Sprintf("pow(%v, %v)", p.x, p.y), math.Float64frombits(v[0]), want)
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d values differ", bad, 2*len(xs)+len(ps))
	}
}

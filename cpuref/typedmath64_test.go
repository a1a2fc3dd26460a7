package cpuref_test

import (
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
)

// ulps returns how many float64s lie between a and b (0 when both are the
// same value, NaN and NaN included; a large number across a sign or an
// infinity).
func ulps(a, b float64) uint64 {
	if a == b || a != a && b != b {
		return 0
	}
	if a != a || b != b || math.Signbit(a) != math.Signbit(b) {
		return math.MaxUint64
	}
	x, y := math.Float64bits(a), math.Float64bits(b)
	if x > y {
		return x - y
	}
	return y - x
}

// math64Inputs are the arguments TestMath64Accuracy sweeps: each binade's
// ends and random values over the whole range of each function's interest.
func math64Inputs(lo, hi float64, n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := []float64{lo, hi, 0, math.Copysign(0, -1), 5e-324, -5e-324, 1, -1, 0.5, 2, math.Inf(1), math.Inf(-1), math.NaN()}
	for range n {
		out = append(out, lo+r.Float64()*(hi-lo))
	}
	return out
}

const bigPrec = 256

// bigExp returns e^x to bigPrec bits: the series at x/2^12, squared 12
// times.
func bigExp(x float64) *big.Float {
	r := new(big.Float).SetPrec(bigPrec).SetFloat64(x)
	r.SetMantExp(r, -12)
	sum := new(big.Float).SetPrec(bigPrec).SetInt64(1)
	term := new(big.Float).SetPrec(bigPrec).SetInt64(1)
	for k := int64(1); k < 60; k++ {
		term.Mul(term, r)
		term.Quo(term, new(big.Float).SetPrec(bigPrec).SetInt64(k))
		sum.Add(sum, term)
	}
	for range 12 {
		sum.Mul(sum, sum)
	}
	return sum
}

// bigLog returns ln x to about bigPrec bits: Newton's steps on e^y = x
// from Log64's value, e^y by bigExp at y's float64 part times the series of
// the rest.
func bigLog(x float64) *big.Float {
	bx := new(big.Float).SetPrec(bigPrec).SetFloat64(x)
	y := new(big.Float).SetPrec(bigPrec).SetFloat64(cpuref.Log64(x))
	for range 3 {
		y0, _ := y.Float64()
		e := bigExp(y0)
		d := new(big.Float).SetPrec(bigPrec).Sub(y, new(big.Float).SetFloat64(y0)) // e^y = e^y0 · (1 + d + d²/2 + d³/6)
		d2 := new(big.Float).SetPrec(bigPrec).Mul(d, d)
		d3 := new(big.Float).SetPrec(bigPrec).Mul(d2, d)
		s := new(big.Float).SetPrec(bigPrec).SetInt64(1)
		s.Add(s, d)
		s.Add(s, d2.Quo(d2, big.NewFloat(2)))
		s.Add(s, d3.Quo(d3, big.NewFloat(6)))
		e.Mul(e, s)
		step := new(big.Float).SetPrec(bigPrec).Sub(bx, e) // y += (x - e^y) / e^y
		step.Quo(step, e)
		y.Add(y, step)
	}
	return y
}

// ulpErr returns |got - exact| in units of the last place of exact's
// float64 binade (2^-1074 below the normal range).
func ulpErr(got float64, exact *big.Float) float64 {
	if math.IsInf(got, 0) {
		return math.Inf(1)
	}
	d := new(big.Float).SetPrec(bigPrec).Sub(new(big.Float).SetFloat64(got), exact)
	d.Abs(d)
	e := exact.MantExp(nil) - 53 // exact in [2^(e+52), 2^(e+53))
	if e < -1074 {
		e = -1074
	}
	u, _ := d.SetMantExp(d, -e).Float64()
	return u
}

// TestMath64Accuracy: the reference's float64 exp and log (fdlibm's, in
// binary64's + - * / alone) are within 1 ulp of the exact value (math/big
// at 256 bits) over their whole range, subnormal results and arguments
// included, where amd64's math.Exp (the reference before) overflows to
// +Inf from x ≈ 709.44 though e^x is finite to 709.78 (measured at
// go1.26, 2026-12-05: worst 0.79 ulp for exp, 0.71 for log); pow within 16
// ulp for x in (0, 20), |y| < 20 (10.2 measured: math.Pow's algorithm,
// whose integer power is repeated squaring);
// special values (NaN, ±Inf, ±0, 1 + x near 0) and every special case of
// C99's pow are math's, bit for bit.
func TestMath64Accuracy(t *testing.T) {
	worst := map[string]float64{}
	check := func(name string, got float64, exact *big.Float, bound float64, args ...float64) {
		if d := ulpErr(got, exact); d > bound {
			t.Errorf("%s%v = %v (%#x): %.3f ulp from %s", name, args, got, math.Float64bits(got), d, exact.Text('g', 20))
		} else {
			worst[name] = max(worst[name], d)
		}
	}
	n := 3000
	if testing.Short() {
		n = 600
	}
	for _, x := range append(math64Inputs(-745, 709.78, n, 1), math64Inputs(-1e-6, 1e-6, n/10, 2)...) {
		if x != x || math.IsInf(x, 0) || x == 0 {
			continue
		}
		check("exp", cpuref.Exp64(x), bigExp(x), 1, x)
	}
	for _, x := range append(append(math64Inputs(0, 4, n, 3), math64Inputs(0, 1e-300, n/10, 4)...), math64Inputs(1e300, math.MaxFloat64, n/10, 5)...) {
		if x != x || math.IsInf(x, 0) || x <= 0 || x == 1 {
			continue
		}
		check("log", cpuref.Log64(x), bigLog(x), 1, x)
	}
	for k := range n / 10 { // subnormal arguments
		x := math.Float64frombits(uint64(k)*0x1000000001 + 1)
		check("log", cpuref.Log64(x), bigLog(x), 1, x)
	}
	r := rand.New(rand.NewPCG(6, 6))
	for range n {
		x, y := r.Float64()*20, (r.Float64()-0.5)*40
		if x == 0 {
			continue
		}
		check("pow", cpuref.Pow64(x, y), bigPowExact(x, y), 16, x, y)
	}
	if x := 709.7; !math.IsInf(math.Exp(x), 0) {
		t.Logf("math.Exp(%v) is finite on this host", x)
	} else if got := cpuref.Exp64(x); math.IsInf(got, 0) {
		t.Errorf("Exp64(%v) = %v, want e^x < MaxFloat64", x, got)
	}
	inf, nan, negz := math.Inf(1), math.NaN(), math.Copysign(0, -1)
	specials := []float64{0, negz, 1, -1, 0.5, -0.5, 2, -2, 3, -3, 2.5, inf, -inf, nan, 0x1p63, -0x1p63, 0x1p53 + 2, 1e308, 5e-324}
	for _, x := range specials {
		for _, y := range specials {
			got, want := cpuref.Pow64(x, y), math.Pow(x, y)
			exactCase := math.IsInf(want, 0) || want == 0 || want != want || want == 1 || x == 0 || math.IsInf(x, 0) || math.IsInf(y, 0) || y == 0.5 || y == -0.5 || y == 1
			if d := ulps(got, want); exactCase && d != 0 || d > 4 {
				t.Errorf("pow(%v, %v) = %v, math.Pow's %v", x, y, got, want)
			}
		}
	}
	for _, x := range []float64{nan, inf, -inf, 0, negz, 1e-9, -1e-9, -746, 710} {
		if got, want := cpuref.Exp64(x), math.Exp(x); ulps(got, want) != 0 {
			t.Errorf("exp(%v) = %v, math.Exp's %v", x, got, want)
		}
	}
	for _, x := range []float64{nan, inf, -inf, 0, negz, -1, 1} {
		if got, want := cpuref.Log64(x), math.Log(x); ulps(got, want) != 0 {
			t.Errorf("log(%v) = %v, math.Log's %v", x, got, want)
		}
	}
	t.Logf("worst error (ulp of the exact value): %v", worst)
}

// bigPowExact returns x^y for x > 0 to about bigPrec bits: e^(y ln x),
// with y ln x split into a float64 part and the rest.
func bigPowExact(x, y float64) *big.Float {
	l := bigLog(x)
	l.Mul(l, new(big.Float).SetPrec(bigPrec).SetFloat64(y))
	l0, _ := l.Float64()
	e := bigExp(l0)
	d := new(big.Float).SetPrec(bigPrec).Sub(l, new(big.Float).SetFloat64(l0))
	d2 := new(big.Float).SetPrec(bigPrec).Mul(d, d)
	s := new(big.Float).SetPrec(bigPrec).SetInt64(1)
	s.Add(s, d)
	s.Add(s, d2.Quo(d2, big.NewFloat(2)))
	return e.Mul(e, s)
}

// TestLdexpFrexp64: Frexp64 is exact (f in [0.5, 1), f·2^e = x for normal
// and subnormal x) and Ldexp64 rounds once, as math.Ldexp does, across
// the subnormal range and at overflow.
func TestLdexpFrexp64(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for range 100000 {
		x := math.Float64frombits(r.Uint64() &^ (1 << 63))
		if math.IsInf(x, 0) || x != x || x == 0 {
			continue
		}
		f, e := cpuref.Frexp64(x)
		if gf, ge := math.Frexp(x); f != gf || e != ge {
			t.Fatalf("Frexp64(%v) = %v, %d; math's %v, %d", x, f, e, gf, ge)
		}
		k := r.IntN(4400) - 2200
		if got, want := cpuref.Ldexp64(x, k), math.Ldexp(x, k); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("Ldexp64(%v, %d) = %v, math's %v", x, k, got, want)
		}
		if got, want := cpuref.Ldexp64(-x, k), math.Ldexp(-x, k); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("Ldexp64(%v, %d) = %v, math's %v", -x, k, got, want)
		}
	}
}

// TestMath64NoFusedMultiplyAdd: compiled for arm64, where Go fuses a
// product into a later addition unless an explicit float64() rounds it,
// the reference's float64 exp, log, pow, frexp and ldexp hold no fused
// multiply-add (FMADDD, FMSUBD, FNMADDD, FNMSUBD): their bits are those
// of binary64's separate + - * /, as the C targets' (-ffp-contract=off)
// are. Without the roundings, Exp64, Log64 and Pow64 held six.
func TestMath64NoFusedMultiplyAdd(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	cmd := exec.Command(gotool, "build", "-o", os.DevNull, "-gcflags=-S", ".")
	cmd.Env = append(os.Environ(), "GOARCH=arm64", "GOOS=linux", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build for arm64: %v\n%.2000s", err, out)
	}
	mine := regexp.MustCompile(`cpuref\.(Exp64|Log64|Pow64|Frexp64|Ldexp64|pow2|trunc64|oddInt64)$`)
	fused := regexp.MustCompile(`\tF(N)?M(ADD|SUB)D\t`)
	fn, seen := "", 0
	for _, line := range strings.Split(string(out), "\n") {
		if name, _, ok := strings.Cut(line, " STEXT"); ok {
			fn = name
		}
		if !mine.MatchString(fn) {
			continue
		}
		seen++
		if fused.MatchString(line) {
			t.Errorf("%s: %s", fn, strings.TrimSpace(line))
		}
	}
	if seen == 0 {
		t.Fatal("the assembly listing holds none of the functions")
	}
}

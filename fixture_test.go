package gpucc_test

import (
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// fixArray is one array of the digits fixture: little-endian values,
// base64, row-major.
type fixArray struct {
	Shape []int  `json:"shape"`
	Dtype string `json:"dtype"`
	B64   string `json:"b64"`
}

// f64 returns the values as float64 (a float32 array widened exactly).
func (a fixArray) f64(t testing.TB) []float64 {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(a.B64)
	if err != nil {
		t.Fatal(err)
	}
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	size := map[string]int{"float32": 4, "float64": 8}[a.Dtype]
	if size == 0 || len(raw) != n*size {
		t.Fatalf("fixture array %s%v: %d bytes", a.Dtype, a.Shape, len(raw))
	}
	out := make([]float64, n)
	for i := range out {
		if size == 4 {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		} else {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	}
	return out
}

// f32 returns the values of a float32 array.
func (a fixArray) f32(t testing.TB) []float32 {
	t.Helper()
	if a.Dtype != "float32" {
		t.Fatalf("fixture array is %s, want float32", a.Dtype)
	}
	v := a.f64(t)
	out := make([]float32, len(v))
	for i := range v {
		out[i] = float32(v[i])
	}
	return out
}

// fixRun is one precision's run in the digits fixture.
type fixRun struct {
	Losses []float64           `json:"losses"`
	Params map[string]fixArray `json:"params"`
	Grads  map[string]fixArray `json:"grads"`
	Long   struct {
		Losses       []float64 `json:"losses"`
		TestCorrect  int       `json:"test_correct"`
		TestTotal    int       `json:"test_total"`
		TestAccuracy float64   `json:"test_accuracy"`
	} `json:"long"`
}

// digitsFixture is testdata/fixtures/digits.json.gz, written by
// bench/fixtures/digits.py (see that script for every definition).
type digitsFixture struct {
	Made map[string]any `json:"made"`
	Data struct {
		Sha256 string `json:"sha256"`
		Rows   int    `json:"rows"`
		Train  int    `json:"train"`
	} `json:"data"`
	MLP struct {
		Sizes     []int               `json:"sizes"`
		LR        float32             `json:"lr"`
		Steps     int                 `json:"steps"`
		LongSteps int                 `json:"long_steps"`
		Init      map[string]fixArray `json:"init"`
		Float64   fixRun              `json:"float64"`
		Float32   fixRun              `json:"float32"`
	} `json:"mlp"`
	Attention struct {
		Seq     int                 `json:"seq"`
		D       int                 `json:"d"`
		Scale   float32             `json:"scale"`
		Eps     float32             `json:"eps"`
		Inputs  map[string]fixArray `json:"inputs"`
		Float64 struct {
			Out fixArray `json:"out"`
		} `json:"float64"`
		Float32 struct {
			Out fixArray `json:"out"`
		} `json:"float32"`
	} `json:"attention"`
}

func loadDigitsFixture(t testing.TB) *digitsFixture {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "fixtures", "digits.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var fx digitsFixture
	if err := json.NewDecoder(z).Decode(&fx); err != nil {
		t.Fatal(err)
	}
	return &fx
}

// fixtureBound is the tolerance for a gpucc float32 value against PyTorch's
// float64 one, per value, derived from PyTorch's own float32 run of the
// same computation: 16·M + 4·|f32ᵢ − f64ᵢ| + 8·2⁻²⁴·|f64ᵢ|, with M the
// largest |f32 − f64| over the array (the loss sequence, one parameter).
// M is the scale of float32's error there: a final parameter's error is
// the error of its accumulated updates, which does not shrink with the
// parameter's own size, so a per-value rule alone fails where the float32
// run happened to land close. The factor 16 allows for gpucc's matmul,
// which sums k ascending in one chain (cpuref's definition) where BLAS
// sums in blocks: over the 1437 rows of the weight gradients its error is
// several times BLAS's.
func fixtureBound(f64, f32 []float64) []float64 {
	m := 0.0
	for i := range f64 {
		m = max(m, math.Abs(f32[i]-f64[i]))
	}
	out := make([]float64, len(f64))
	for i := range f64 {
		out[i] = 16*m + 4*math.Abs(f32[i]-f64[i]) + 8*0x1p-24*math.Abs(f64[i])
	}
	return out
}

// withinFixture compares got with want within bound and returns the largest
// |got − want|/bound and |got − want|.
func withinFixture(t *testing.T, what string, got []float32, want, bound []float64) (ratio, diff float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, the fixture has %d", what, len(got), len(want))
	}
	bad := 0
	for i, v := range got {
		d := math.Abs(float64(v) - want[i])
		if !(d <= bound[i]) {
			if bad < 5 {
				t.Errorf("%s[%d] = %v, PyTorch float64 %v: |diff| %.3g over the bound %.3g", what, i, v, want[i], d, bound[i])
			}
			bad++
		}
		ratio, diff = max(ratio, d/bound[i]), max(diff, d)
	}
	if bad > 5 {
		t.Errorf("%s: %d values over the bound", what, bad)
	}
	return ratio, diff
}

// compareBits names the first differing value of two bit maps.
func compareBits(want, got map[string][]uint32) string {
	for name, w := range want {
		g := got[name]
		if len(g) != len(w) {
			return name + ": lengths differ"
		}
		for i := range w {
			if g[i] != w[i] {
				return name + "[" + strconv.Itoa(i) + "]: " + strconv.FormatUint(uint64(g[i]), 16) + " ≠ " + strconv.FormatUint(uint64(w[i]), 16)
			}
		}
	}
	return ""
}

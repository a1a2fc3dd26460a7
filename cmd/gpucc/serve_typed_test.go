package main

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// TestServeTypedOutputs: serve's streamed reply writes a typed output in
// the library's encoding, with its dtype and its values; the stream wrote
// float32 Data only, so an int64 output came out as `"data":[]` with ok
// true. (Serve's backends refuse typed graphs today, so this is checked
// on writeResult itself.)
func TestServeTypedOutputs(t *testing.T) {
	res := &lib.Result{Outputs: map[string]lib.Tensor{
		"sum": {Shape: []int{3}, DType: ir.I64, Ints: []int64{11, 18, 9007199254740994}},
		"gt":  {Shape: []int{3}, DType: ir.Bool, Ints: []int64{0, 0, 1}},
		"y":   {Shape: []int{2}, Data: []float32{0.5, -1}},
	}}
	w := httptest.NewRecorder()
	if err := writeResult(w, res); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Value struct {
			Outputs map[string]json.RawMessage `json:"outputs"`
		} `json:"value"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, w.Body)
	}
	outs := map[string]string{}
	for k, v := range got.Value.Outputs {
		outs[k] = string(v)
	}
	want := map[string]string{
		"sum": `{"shape":[3],"dtype":"int64","data":[11,18,9007199254740994]}`,
		"gt":  `{"shape":[3],"dtype":"bool","data":[false,false,true]}`,
		"y":   `{"shape":[2],"data":[0.5,-1]}`,
	}
	if diff := cmp.Diff(want, outs); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
}

// discard is a ResponseWriter that keeps nothing of the body.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// TestServeTypedReplyStreamed: a typed output (integers, bools, float64,
// float16) is streamed value by value in the library's own encoding
// (json.Marshal of the lib.Tensor, byte for byte, at each dtype's
// extremes), holding no more than the writer's buffer: writeResult of an
// int64 and a float64 output of 2^18 values each allocated 33.6 MB (their
// whole JSON, twice over, in json.Marshal) while the reply was charged 64
// KB of the memory budget (4 bytes a float32 value, and a typed output
// has none); now under 1 MB, and replyBytes charges the 8-byte carriers.
func TestServeTypedReplyStreamed(t *testing.T) {
	nan64, inf := math.NaN(), math.Inf(1)
	f64 := []float64{0, math.Copysign(0, -1), 5e-324, math.MaxFloat64, -math.MaxFloat64, 1e21, 1e20, 1e-6, 1e-7, 0.1, 123456789012345678, nan64, inf, -inf, 2.5e-308}
	var f64bits []int64
	for _, v := range f64 {
		f64bits = append(f64bits, ir.F64Bits(v))
	}
	outs := map[string]lib.Tensor{
		"i64":  {Shape: []int{5}, DType: ir.I64, Ints: []int64{math.MinInt64, math.MaxInt64, 0, -1, 1 << 53}},
		"u8":   {Shape: []int{3}, DType: ir.U8, Ints: []int64{0, 255, 7}},
		"i32":  {Shape: []int{2}, DType: ir.I32, Ints: []int64{math.MinInt32, math.MaxInt32}},
		"b":    {Shape: []int{1, 3}, DType: ir.Bool, Ints: []int64{1, 0, 1}},
		"f64":  {Shape: []int{len(f64)}, DType: ir.F64, Ints: f64bits},
		"f16":  {Shape: []int{6}, DType: ir.F16, Data: []float32{65504, 5.9604645e-08, float32(math.Copysign(0, -1)), float32(nan64), float32(inf), 1e-7}},
		"bf16": {Shape: []int{3}, DType: ir.BF16, Data: []float32{3.3895314e38, 1e-6, 1e21}},
		"f16f": {Shape: []int{2}, DType: ir.F16, Data: []float32{0.5, 1.5e-7}},
		"s":    {Shape: []int{}, DType: ir.I64, Ints: []int64{-5}},
	}
	w := httptest.NewRecorder()
	if err := writeResult(w, &lib.Result{Outputs: outs}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Value struct {
			Outputs map[string]json.RawMessage `json:"outputs"`
		} `json:"value"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, w.Body)
	}
	for name, o := range outs {
		want, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Value.Outputs[name]) != string(want) {
			t.Errorf("%s: streamed %s\nthe library's %s", name, got.Value.Outputs[name], want)
		}
	}
	const n = 1 << 18
	big := &lib.Result{Outputs: map[string]lib.Tensor{
		"i": {Shape: []int{n}, DType: ir.I64, Ints: make([]int64, n)},
		"f": {Shape: []int{n}, DType: ir.F64, Ints: make([]int64, n)},
	}}
	for k := range n {
		big.Outputs["i"].Ints[k] = math.MinInt64
		big.Outputs["f"].Ints[k] = ir.F64Bits(-math.MaxFloat64)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := writeResult(&discard{h: http.Header{}}, big); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("writeResult of 2^19 typed values allocated %d bytes", alloc)
	}
	if got := replyBytes(big); got < 16*n {
		t.Errorf("replyBytes charges %d bytes for 2^19 int64 and float64 values, want their carriers' %d at least", got, 16*n)
	}
}

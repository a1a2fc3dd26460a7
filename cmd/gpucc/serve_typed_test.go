package main

import (
	"encoding/json"
	"net/http/httptest"
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

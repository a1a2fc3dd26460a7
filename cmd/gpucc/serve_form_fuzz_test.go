package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"mime/multipart"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
)

// FuzzModelForm posts the execute API's multipart form (a model, the JSON
// inputs part and one .npy part, as TestServeModelInputs does) built from
// the fuzzer's bytes, or, raw, the fuzzer's bytes as the whole multipart
// body. It must never panic; every answer is the seed's envelope with the
// status its code maps to, an error with a user code (never internal),
// and 200 only when ok.
func FuzzModelForm(f *testing.F) {
	model, err := os.ReadFile(filepath.Join("testdata", "mlp2.onnx"))
	if err != nil {
		f.Fatal(err)
	}
	var x bytes.Buffer
	if err := npy.Write(&x, &npy.Array{DType: "float32", Shape: []int{2, 3}, Float32: []float32{1, -2, 0.5, 4, 5.25, -6}}); err != nil {
		f.Fatal(err)
	}
	var ids bytes.Buffer
	if err := npy.Write(&ids, &npy.Array{DType: "int64", Shape: []int{3}, Int64: []int64{-1 << 63, 7, 1 << 60}}); err != nil {
		f.Fatal(err)
	}
	const xJSON = `{"inputs":{"x":{"dtype":"float32","shape":[2,3],"data":[1,-2,0.5,4,5.25,-6]}}}`
	f.Add(false, model, []byte(nil), "x", x.Bytes())
	f.Add(false, model, []byte(xJSON), "", []byte(nil))
	f.Add(false, model, []byte(`{"inputs":{"x":{"shape":[2,3],"data":[1,-2,0.5,4,5.25,"NaN"]}}}`), "y", ids.Bytes())
	f.Add(false, int64Model(), []byte(`{"inputs":{"ids":{"dtype":"int64","shape":[3],"data":[9007199254740993,-1,9223372036854775807]}}}`), "", []byte(nil))
	f.Add(false, int64Model(), []byte(nil), "ids", ids.Bytes())
	var f64 bytes.Buffer
	if err := npy.Write(&f64, &npy.Array{DType: "float64", Shape: []int{2}, Float64: []float64{math.Copysign(0, -1), math.Float64frombits(0x7ff0000000000001)}}); err != nil {
		f.Fatal(err)
	}
	f.Add(false, float64Model(2), []byte(nil), "x", f64.Bytes())
	f.Add(false, float64Model(2), []byte(`{"inputs":{"x":{"dtype":"float64","shape":[2],"data":[5e-324,"Infinity"]}}}`), "", []byte(nil))
	f.Add(true, []byte(nil), []byte("--b\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nxx\r\n--b--\r\n"), "", []byte(nil))
	f.Fuzz(func(t *testing.T, raw bool, model, inputs []byte, npyName string, npyData []byte) {
		var body bytes.Buffer
		ctype := "multipart/form-data; boundary=b"
		if raw {
			body.Write(inputs)
		} else {
			mw := multipart.NewWriter(&body)
			part := func(name string, data []byte) {
				h := textproto.MIMEHeader{}
				h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, name))
				w, err := mw.CreatePart(h)
				if err != nil {
					t.Fatal(err)
				}
				w.Write(data)
			}
			part(formModel, model)
			if len(inputs) > 0 {
				part(formInputs, inputs)
			}
			if npyName != "" {
				part(npyName, npyData)
			}
			mw.Close()
			ctype = mw.FormDataContentType()
		}
		r := httptest.NewRequest("POST", "/v1/execute?backend=cpu", &body)
		r.Header.Set("Authorization", "Bearer tok")
		r.Header.Set("Content-Type", ctype)
		w := httptest.NewRecorder()
		fuzzAPI().ServeHTTP(w, r)
		var e envelope
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
			t.Fatalf("not an envelope (%v): %q", err, w.Body)
		}
		switch {
		case e.OK:
			if w.Code != 200 {
				t.Fatalf("ok with status %d", w.Code)
			}
		case e.Error == nil || e.Error.Code == "" || e.Error.Code == string(ir.CodeInternal):
			t.Fatalf("a failure without a user code: %s", w.Body)
		case w.Code != 408 && w.Code != 413 && w.Code != 429 && w.Code != httpStatus(ir.Code(e.Error.Code)):
			t.Fatalf("code %s with status %d", e.Error.Code, w.Code)
		}
	})
}

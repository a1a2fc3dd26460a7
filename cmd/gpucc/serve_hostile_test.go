package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"google.golang.org/protobuf/encoding/protowire"
)

// identityModel is an ONNX model whose output y is its input x, of ONNX
// element type elem and static dims.
func identityModel(elem uint64, dims ...uint64) []byte {
	tag := func(b []byte, n protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), v)
	}
	varint := func(b []byte, n protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), v)
	}
	info := func(name string) []byte {
		var shape []byte
		for _, d := range dims {
			shape = tag(shape, 1, varint(nil, 1, d))
		}
		tensor := tag(varint(nil, 1, elem), 2, shape)
		return tag(tag(nil, 1, []byte(name)), 2, tag(nil, 1, tensor))
	}
	node := tag(tag(tag(nil, 1, []byte("x")), 2, []byte("y")), 4, []byte("Identity"))
	graph := tag(tag(tag(tag(nil, 1, node), 2, []byte("g")), 11, info("x")), 12, info("y"))
	return tag(tag(varint(nil, 1, 7), 7, graph), 8, varint(nil, 2, 13))
}

// weightsModel is an ONNX model whose output is its uint8 initializer of
// n elements.
func weightsModel(n uint64) []byte {
	tag := func(b []byte, k protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, k, protowire.BytesType), v)
	}
	varint := func(b []byte, k protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, k, protowire.VarintType), v)
	}
	init := tag(tag(varint(varint(nil, 1, n), 2, 2), 8, []byte("W")), 9, make([]byte, n))
	tensor := tag(varint(nil, 1, 2), 2, tag(nil, 1, varint(nil, 1, n)))
	out := tag(tag(nil, 1, []byte("y")), 2, tag(nil, 1, tensor))
	node := tag(tag(tag(nil, 1, []byte("W")), 2, []byte("y")), 4, []byte("Identity"))
	graph := tag(tag(tag(tag(nil, 1, node), 2, []byte("g")), 5, init), 12, out)
	return tag(tag(varint(nil, 1, 7), 7, graph), 8, varint(nil, 2, 13))
}

// TestServeHostileForms: what serve allocates for an ONNX body or a
// multipart request is bounded by what has arrived, as README's serve
// section states: at most importBytesPerByte bytes a byte of body and 1
// MiB, besides the zeros of the inputs the request leaves out (the
// import's placeholders, within MaxStorageBytes), whatever it claims: a
// JSON input of 2^31 elements or 2^22 with 10 values, an .npy part
// claiming more than it holds, more parts or JSON inputs than a model has
// inputs, and 4 MB of real data of the widest carriers (bool .npy, int64
// JSON, uint8 weights). Before, the int64 JSON allocated 97 bytes a byte
// (a token allocated per value), the bool .npy 21.5 (each input's
// placeholder besides its data), a form's parts were not counted (20,000
// one-value parts, 12 bytes a byte), and a model was charged 9 bytes a
// byte where its uint8 weights alone take 8 in their int64 carriers (14
// in all).
func TestServeHostileForms(t *testing.T) {
	limits := ir.Limits{MaxGraphBytes: 1 << 26, MaxElements: 1 << 24, MaxStorageBytes: 1 << 26, MaxOps: 1 << 40}
	a, err := newAPI(&apiConfig{pending: 4, timeout: time.Minute, grace: time.Second, cacheDir: "off", memory: 8 << 30, limits: &limits}, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	defer a.server.Close(t.Context())
	npyOf := func(arr *npy.Array) []byte {
		var b bytes.Buffer
		if err := npy.Write(&b, arr); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	const n = 1 << 22
	claims := npyOf(&npy.Array{DType: "int64", Shape: []int{n}, Int64: make([]int64, n)})[:200]
	huge := bytes.Replace(npyOf(&npy.Array{DType: "int64", Shape: []int{3}, Int64: make([]int64, 3)}), []byte("(3,)"), []byte("(1099511627776,)"), 1)
	ints := `{"inputs":{"x":{"dtype":"int64","shape":[` + fmt.Sprint(n/2) + `],"data":[` + strings.Repeat("0,", n/2-1) + `0]}}}`
	many := []formPart{{"model", "", identityModel(9, 4)}}
	for k := range 600 {
		many = append(many, formPart{fmt.Sprint("p", k), "", npyOf(&npy.Array{DType: "bool", Shape: []int{1}, Int64: []int64{1}})})
	}
	var names strings.Builder
	names.WriteString(`{"inputs":{`)
	for k := range 20000 {
		if k > 0 {
			names.WriteByte(',')
		}
		fmt.Fprintf(&names, `"i%d":{"shape":[1],"data":[%d]}`, k, k)
	}
	names.WriteString(`}}`)
	cases := []struct {
		name  string
		parts []formPart
		onnx  []byte
		code  ir.Code
		zeros int64 // the placeholders' bytes (inputs left out)
	}{
		{"JSON input of 2^31 elements, 1 value", []formPart{{"model", "", identityModel(7, 1<<31)}, {"inputs", "", []byte(`{"inputs":{"x":{"dtype":"int64","shape":[2147483648],"data":[1]}}}`)}}, nil, ir.CodeLimitExceeded, 0},
		{"JSON input of 2^22 elements, 10 values", []formPart{{"model", "", identityModel(7, n)}, {"inputs", "", []byte(`{"inputs":{"x":{"dtype":"int64","shape":[4194304],"data":[1,2,3,4,5,6,7,8,9,10]}}}`)}}, nil, ir.CodeInvalidInput, 0},
		{".npy claiming 2^22 int64 in 72 bytes of data", []formPart{{"model", "", identityModel(7, n)}, {"x", "", claims}}, nil, ir.CodeInvalidInput, 0},
		{".npy claiming 2^40 elements", []formPart{{"model", "", identityModel(7, 3)}, {"x", "", huge}}, nil, ir.CodeLimitExceeded, 0},
		{"600 parts", many, nil, ir.CodeLimitExceeded, 0},
		{"20,000 inputs in the JSON part", []formPart{{"model", "", identityModel(1, 4)}, {"inputs", "", []byte(names.String())}}, nil, ir.CodeLimitExceeded, 0},
		{"a bool .npy of 2^22", []formPart{{"model", "", identityModel(9, n)}, {"x", "", npyOf(&npy.Array{DType: "bool", Shape: []int{n}, Int64: make([]int64, n)})}}, nil, ir.CodeLimitExceeded, 0},
		{"int64 JSON of 2^21 zeros", []formPart{{"model", "", identityModel(7, n/2)}, {"inputs", "", []byte(ints)}}, nil, ir.CodeLimitExceeded, 0},
		{"a model of 2^22 uint8 weights", nil, weightsModel(n), ir.CodeLimitExceeded, 0},
		{"a model alone, bool input of 2^22", nil, identityModel(9, n), ir.CodeLimitExceeded, 8 * n},
		{"a form of the model alone, bool input of 2^22", []formPart{{"model", "", identityModel(9, n)}}, nil, ir.CodeLimitExceeded, 8 * n},
	}
	for _, c := range cases {
		var body bytes.Buffer
		ctype := "application/onnx"
		if c.onnx != nil {
			body.Write(c.onnx)
		} else {
			mw := multipart.NewWriter(&body)
			for _, p := range c.parts {
				h := textproto.MIMEHeader{}
				h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, p.name))
				w, _ := mw.CreatePart(h)
				w.Write(p.body)
			}
			mw.Close()
			ctype = mw.FormDataContentType()
		}
		size := body.Len()
		r := httptest.NewRequest("POST", "http://localhost/v1/execute?backend=cpu", &body)
		r.Header.Set("Content-Type", ctype)
		w := httptest.NewRecorder()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		a.ServeHTTP(w, r)
		runtime.ReadMemStats(&after)
		got := after.TotalAlloc - before.TotalAlloc
		var e envelope
		json.Unmarshal(w.Body.Bytes(), &e)
		t.Logf("%s: %d bytes of body, %d allocated (%.1f a byte): %s", c.name, size, got, float64(got)/float64(size), e.code())
		if e.code() != string(c.code) {
			t.Errorf("%s: %s, want %s: %.300s", c.name, e.code(), c.code, w.Body)
		}
		if bound := uint64(importBytesPerByte*int64(size) + 1<<20 + c.zeros); got > bound {
			t.Errorf("%s: %d bytes of body allocated %d, over the stated %d a byte and 1 MiB (and %d of zeros)", c.name, size, got, importBytesPerByte, c.zeros)
		}
	}
}

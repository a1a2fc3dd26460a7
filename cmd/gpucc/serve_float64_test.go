package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"mime/multipart"
	"net/http/httptest"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"google.golang.org/protobuf/encoding/protowire"
)

// float64Model returns an ONNX model of a float64 input x of shape [n]:
// outputs same = Identity(x), sum = Add(x, x) and pow = Pow(x, x).
func float64Model(n uint64) []byte {
	msg := func(fields ...func([]byte) []byte) []byte {
		var b []byte
		for _, f := range fields {
			b = f(b)
		}
		return b
	}
	bytesF := func(k protowire.Number, v []byte) func([]byte) []byte {
		return func(b []byte) []byte { return protowire.AppendBytes(protowire.AppendTag(b, k, protowire.BytesType), v) }
	}
	varint := func(k protowire.Number, v uint64) func([]byte) []byte {
		return func(b []byte) []byte {
			return protowire.AppendVarint(protowire.AppendTag(b, k, protowire.VarintType), v)
		}
	}
	info := func(name string) []byte {
		dim := msg(varint(1, n))
		tensor := msg(varint(1, 11), bytesF(2, msg(bytesF(1, dim))))
		return msg(bytesF(1, []byte(name)), bytesF(2, msg(bytesF(1, tensor))))
	}
	node := func(op, out string, in ...string) func([]byte) []byte {
		var fs []func([]byte) []byte
		for _, i := range in {
			fs = append(fs, bytesF(1, []byte(i)))
		}
		fs = append(fs, bytesF(2, []byte(out)), bytesF(4, []byte(op)))
		return bytesF(1, msg(fs...))
	}
	graph := msg(node("Identity", "same", "x"), node("Add", "sum", "x", "x"), node("Pow", "pow", "x", "x"),
		bytesF(2, []byte("g")), bytesF(11, info("x")),
		bytesF(12, info("same")), bytesF(12, info("sum")), bytesF(12, info("pow")))
	return msg(varint(1, 7), bytesF(7, graph), bytesF(8, msg(varint(2, 13))))
}

// postF64 posts parts (model, inputs, x, in that order) as the execute
// API's multipart form to a, on cpu, and returns the status and body.
func postF64(t *testing.T, a *api, parts map[string][]byte) (int, string) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, name := range []string{"model", "inputs", "x"} {
		p, ok := parts[name]
		if !ok {
			continue
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, name))
		w, _ := mw.CreatePart(h)
		w.Write(p)
	}
	mw.Close()
	r := httptest.NewRequest("POST", "/v1/execute?backend=cpu", &body)
	r.Header.Set("Authorization", "Bearer tok")
	r.Header.Set("Content-Type", mw.FormDataContentType())
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

// f64Bits is a float64 output's data of a reply, bit for bit ("NaN",
// "Infinity" and "-Infinity" as the quiet NaN and the infinities).
func f64Bits(t *testing.T, body, name string) []uint64 {
	t.Helper()
	var e struct {
		Value struct {
			Outputs map[string]struct {
				DType string            `json:"dtype"`
				Data  []json.RawMessage `json:"data"`
			} `json:"outputs"`
		} `json:"value"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	o, ok := e.Value.Outputs[name]
	if !ok || o.DType != "float64" {
		t.Fatalf("no float64 output %s in %s", name, body)
	}
	var bits []uint64
	for _, raw := range o.Data {
		switch string(raw) {
		case `"NaN"`:
			bits = append(bits, 0x7ff8000000000000)
		case `"Infinity"`:
			bits = append(bits, math.Float64bits(math.Inf(1)))
		case `"-Infinity"`:
			bits = append(bits, math.Float64bits(math.Inf(-1)))
		default:
			var f float64
			if err := json.Unmarshal(raw, &f); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			bits = append(bits, math.Float64bits(f))
		}
	}
	return bits
}

// TestServeFloat64Inputs: a float64 model's input posted in the JSON
// form or as a .npy part reaches the model with every bit (-0, the least
// subnormal, ±the largest finite), and its outputs (Identity, Add, Pow)
// come back as cpuref's float64 bits; under the finite policy a .npy's
// NaN or Inf is refused (400) and under --non-finite it reads as the quiet
// NaN and the infinities, as the JSON form's "NaN", "Infinity" and
// "-Infinity" do: the spellings a float64 output is written in, which the
// JSON form refused under --non-finite too ("not a finite float64"), so a
// reply's float64 output could not be posted back.
func TestServeFloat64Inputs(t *testing.T) {
	vals := []float64{math.Copysign(0, -1), 5e-324, math.MaxFloat64, -math.MaxFloat64, 709.78, -745.2, 0.5, 3}
	model := float64Model(uint64(len(vals)))
	js, _ := json.Marshal(vals)
	jsonForm := func(data string) []byte {
		return []byte(`{"inputs":{"x":{"dtype":"float64","shape":[8],"data":` + data + `}}}`)
	}
	npyOf := func(v []float64) []byte {
		var buf bytes.Buffer
		if err := npy.Write(&buf, &npy.Array{DType: "float64", Shape: []int{len(v)}, Float64: v}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	const qnan = 0x7ff8000000000000
	for _, nf := range []bool{false, true} {
		c := &apiConfig{token: "tok", pending: 4, timeout: 10 * time.Second, grace: time.Second, cacheDir: "off", limits: &ir.Limits{NonFinite: nf}}
		a, err := newAPI(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Finite values, both ways: the input's bits, then x+x and x^x.
		for _, parts := range []map[string][]byte{{"model": model, "inputs": jsonForm(string(js))}, {"model": model, "x": npyOf(vals)}} {
			code, out := postF64(t, a, parts)
			if !nf {
				// x+x overflows: the finite policy answers non_finite_output.
				if code != 422 || !strings.Contains(out, "non_finite_output") {
					t.Fatalf("finite policy: %d %s", code, out)
				}
				continue
			}
			if code != 200 {
				t.Fatalf("%d %s", code, out)
			}
			same, sum, pow := f64Bits(t, out, "same"), f64Bits(t, out, "sum"), f64Bits(t, out, "pow")
			for i, v := range vals {
				w := []uint64{math.Float64bits(v), math.Float64bits(v + v), math.Float64bits(cpuref.Pow64(v, v))}
				if math.IsNaN(cpuref.Pow64(v, v)) {
					w[2] = qnan
				}
				if same[i] != w[0] || sum[i] != w[1] || pow[i] != w[2] {
					t.Errorf("x[%d] = %v: same %#x sum %#x pow %#x, want %#x %#x %#x", i, v, same[i], sum[i], pow[i], w[0], w[1], w[2])
				}
			}
		}
		// Non-finite values: refused under the finite policy, the quiet NaN
		// and the infinities under --non-finite, from either form.
		nonFinite := []float64{math.Float64frombits(0x7ff0000000000001), math.Float64frombits(0xfff8000000000000), math.Inf(1), math.Inf(-1)}
		for _, parts := range []map[string][]byte{
			{"model": float64Model(4), "x": npyOf(nonFinite)},
			{"model": float64Model(4), "inputs": []byte(`{"inputs":{"x":{"dtype":"float64","shape":[4],"data":["NaN","NaN","Infinity","-Infinity"]}}}`)},
		} {
			code, out := postF64(t, a, parts)
			if !nf {
				if code != 400 || !strings.Contains(out, "invalid_input") {
					t.Errorf("finite policy: a non-finite float64 input: %d %s, want invalid_input", code, out)
				}
				continue
			}
			if code != 200 {
				t.Fatalf("--non-finite: %d %s", code, out)
			}
			want := []uint64{qnan, qnan, math.Float64bits(math.Inf(1)), math.Float64bits(math.Inf(-1))}
			if got := f64Bits(t, out, "same"); !slices.Equal(got, want) {
				t.Errorf("--non-finite: same %#x, want %#x", got, want)
			}
		}
		// A string that is not one of the spellings is refused either way.
		code, out := postF64(t, a, map[string][]byte{"model": float64Model(1), "inputs": []byte(`{"inputs":{"x":{"dtype":"float64","shape":[1],"data":["nan"]}}}`)})
		if code != 400 || !strings.Contains(out, "invalid_input") {
			t.Errorf("\"nan\": %d %s", code, out)
		}
	}
}

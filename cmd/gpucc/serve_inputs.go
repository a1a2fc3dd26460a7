package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"mime/multipart"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// The execute API's multipart/form-data form runs an ONNX model on the
// client's data: the part named "model" is the model (.onnx bytes), the
// part named "inputs" is the JSON form, {"inputs": {NAME: {"dtype":
// "int64", "shape": [1,7], "data": [...]}}} (the reply's "outputs" in
// reverse: data flat in row-major order, dtype float32 when left out,
// bool data true and false, ±Inf and NaN as "Infinity", "-Infinity" and
// "NaN" under --non-finite), and every other part is one input's .npy
// file (numpy.save's format), named by the model's input name. Each
// input's shape binds the model's dynamic dimensions; its dtype must be
// the input's.
const (
	formModel  = "model"
	formInputs = "inputs"
)

// importBytesPerByte bounds what an ONNX body or a multipart request
// allocates up to its run, garbage included, besides 1 MiB and the zeros
// of the inputs it leaves out (the import's placeholders, within
// MaxStorageBytes): its body, each part's copy, the values they decode to
// (8 bytes a byte of a bool .npy or a uint8 initializer, in int64
// carriers; 4 a byte of a JSON array of int64 zeros), the model's import
// (onnx.DecodeBytesPerByte). The --max-memory budget is charged it
// (TestServeHostileForms measures it on hostile and real requests).
const importBytesPerByte = 16

// modelForm is a parsed multipart execute request.
type modelForm struct {
	model  []byte
	inputs map[string]*inputValue
	from   map[string]string // where each input came from, for errors
}

// values are the form's inputs for the import: each one's shape binds
// the model's dynamic dimensions, and its values are held by the input in
// place of a placeholder of zeros (onnx.Options.InputValues).
func (f *modelForm) values() map[string]*onnx.Tensor {
	m := map[string]*onnx.Tensor{}
	for name, v := range f.inputs {
		m[name] = &onnx.Tensor{Name: name, Type: onnx.DataTypeOf(v.dtype), Shape: v.shape, Float32: v.data, Int64: v.ints}
	}
	return m
}

// parseModelForm reads a multipart/form-data body with the given boundary.
// A malformed body or a part given twice is usage; data that cannot be an
// input (a truncated, Fortran-order or pickled .npy, a bad JSON tensor)
// is invalid_input naming the input; more than MaxElements values in one
// input, or more parts than a model's inputs can be (MaxNodes, and the
// model and the JSON inputs), is limit_exceeded.
func parseModelForm(body []byte, boundary string, l ir.Limits) (*modelForm, error) {
	if boundary == "" {
		return nil, ir.Errorf(ir.CodeUsage, -1, "Content-Type", "multipart/form-data without a boundary")
	}
	l = l.WithDefaults()
	f := &modelForm{inputs: map[string]*inputValue{}, from: map[string]string{}}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	seenModel := false
	for parts := int64(0); ; parts++ {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, ir.Errorf(ir.CodeUsage, -1, "multipart", "malformed multipart body: %v", err)
		}
		// Each part costs about 2.5 KB besides its bytes (its header, its
		// reader): a form of 20,000 one-value parts allocated 20 bytes a
		// byte of its 4.9 MB. A model has at most MaxNodes inputs.
		if parts == ir.SatAdd(int64(l.MaxNodes), 2) {
			return nil, ir.LimitErrorf("MaxNodes", -1, "multipart", "the form has more than %d parts: the model, the JSON inputs and one part an input, and a graph has at most %d inputs", parts, l.MaxNodes)
		}
		name := p.FormName()
		content, err := io.ReadAll(p)
		if err != nil {
			return nil, ir.Errorf(ir.CodeUsage, -1, "multipart", "malformed multipart body: part %s: %v", ir.Quote(name), err)
		}
		switch name {
		case "":
			return nil, ir.Errorf(ir.CodeUsage, -1, "multipart", "a part without a form name (Content-Disposition: form-data; name=...)")
		case formModel:
			if seenModel {
				return nil, ir.Errorf(ir.CodeUsage, -1, "model", "the model part is given twice")
			}
			f.model, seenModel = content, true
		case formInputs:
			vs, err := parseJSONInputs(content, l)
			if err != nil {
				return nil, err
			}
			for _, in := range slices.Sorted(maps.Keys(vs)) {
				if err := f.add(in, vs[in], "the inputs part's "+ir.Quote(in)); err != nil {
					return nil, err
				}
			}
		default:
			field := "input " + name
			from := "part " + ir.Quote(name)
			a, err := npy.Read(bytes.NewReader(content), l.MaxElements)
			if err != nil {
				code := ir.CodeInvalidInput
				if shape := npyShapeOver(err); shape {
					code = ir.CodeLimitExceeded
				}
				return nil, ir.Errorf(code, -1, field, "%s: %v", from, err)
			}
			v, err := npyValue(a, from, field)
			if err != nil {
				return nil, err
			}
			if err := f.add(name, v, from); err != nil {
				return nil, err
			}
		}
	}
	if !seenModel {
		return nil, ir.Errorf(ir.CodeUsage, -1, "model", "the form has no part named model (the .onnx model)")
	}
	return f, nil
}

// add records input name's value, refusing a second one.
func (f *modelForm) add(name string, v *inputValue, from string) error {
	if prev, dup := f.from[name]; dup {
		return ir.Errorf(ir.CodeUsage, -1, "input "+name, "input %s is given twice (%s and %s)", ir.Quote(name), prev, from)
	}
	f.inputs[name], f.from[name] = v, from
	return nil
}

// npyShapeOver says whether npy.Read refused a shape over the element
// limit (the one error of a well-formed file that is a limit, not bad
// data).
func npyShapeOver(err error) bool {
	return bytes.Contains([]byte(err.Error()), []byte("elements (the limit)"))
}

// jsonTensor is one input of the JSON form; Data is decoded once the
// dtype is known, value by value.
type jsonTensor struct {
	DType string          `json:"dtype"`
	Shape *[]int          `json:"shape"`
	Data  json.RawMessage `json:"data"`
}

// parseJSONInputs reads the JSON form, {"inputs": {NAME: tensor}}, of at
// most MaxNodes inputs (a graph's inputs are nodes).
func parseJSONInputs(doc []byte, l ir.Limits) (map[string]*inputValue, error) {
	var form struct {
		Inputs map[string]jsonTensor `json:"inputs"`
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&form); err != nil {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "inputs", "the inputs part is not the JSON form {\"inputs\": {NAME: {\"dtype\", \"shape\", \"data\"}}}: %v", err)
	}
	if dec.More() {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "inputs", "the inputs part holds more than one JSON value")
	}
	if len(form.Inputs) > l.MaxNodes {
		return nil, ir.LimitErrorf("MaxNodes", -1, "inputs", "the inputs part gives %d inputs, and a graph has at most %d", len(form.Inputs), l.MaxNodes)
	}
	out := map[string]*inputValue{}
	for name, t := range form.Inputs {
		v, err := t.value(name, l.MaxElements, l.NonFinite)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// value decodes t: its dtype (float32 by default), shape and flat data,
// each value exactly of the dtype (a float16 value float16 holds, an
// integer in the dtype's range, a bool true or false).
func (t jsonTensor) value(name string, maxElements int64, nonFinite bool) (*inputValue, error) {
	field := "input " + name
	bad := func(format string, a ...any) error {
		return ir.Errorf(ir.CodeInvalidInput, -1, field, "input %s: "+format, append([]any{ir.Quote(name)}, a...)...)
	}
	dt := ir.F32
	if t.DType != "" {
		var ok bool
		if dt, ok = ir.ParseDType(t.DType); !ok {
			return nil, bad("dtype %s is not one of gpucc's (float32, float16, bfloat16, float64, int32, int64, uint8, int8, uint32, bool)", ir.Quote(t.DType))
		}
	}
	if t.Shape == nil || t.Data == nil {
		return nil, bad("a tensor needs \"shape\" and \"data\"")
	}
	n := int64(1)
	for _, d := range *t.Shape {
		if d < 0 {
			return nil, bad("shape %v has a negative dimension", *t.Shape)
		}
		n = ir.SatMul(n, int64(d))
	}
	if n > maxElements {
		return nil, ir.LimitErrorf("MaxElements", -1, field, "input %s of shape %v has %d elements, over the limit of %d", ir.Quote(name), *t.Shape, n, maxElements)
	}
	// Values are read one raw JSON value at a time (no token allocated
	// per value: encoding/json's Token took 93 bytes a byte of a 4 MB
	// array of int64 zeros), into carriers sized by what the array can
	// hold (a value and a comma each), never by what the shape claims.
	v := &inputValue{dtype: dt, shape: *t.Shape}
	room := min(n, int64(len(t.Data))/2+1)
	if dt.IsFloat() {
		v.data = make([]float32, 0, room)
	} else {
		v.ints = make([]int64, 0, room)
	}
	dec := jsontext.NewDecoder(bytes.NewReader(t.Data))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, bad("data is not a flat array")
	}
	for k := int64(0); dec.PeekKind() != ']'; k++ {
		if k >= n {
			return nil, bad("data has more than the %d values of shape %v", n, *t.Shape)
		}
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, bad("data: %v", err)
		}
		switch {
		case dt == ir.Bool:
			switch string(raw) {
			case "true":
				v.ints = append(v.ints, 1)
			case "false":
				v.ints = append(v.ints, 0)
			default:
				return nil, bad("value %s at element %d is not true or false", ir.QuoteBytes(raw), k)
			}
		case dt.IsFloat():
			f, err := jsonFloat(raw, nonFinite)
			if err != nil {
				return nil, bad("value %s at element %d: %v", ir.QuoteBytes(raw), k, err)
			}
			if !dt.Holds(f) {
				return nil, bad("value %s at element %d is not a %v value (gpucc never rounds an input)", ir.QuoteBytes(raw), k, dt)
			}
			v.data = append(v.data, f)
		case dt.IsFloat64():
			f, err := jsonFloat64(raw, nonFinite)
			if err != nil {
				return nil, bad("value %s at element %d: %v", ir.QuoteBytes(raw), k, err)
			}
			v.ints = append(v.ints, ir.F64Bits(f))
		default:
			i, err := strconv.ParseInt(string(raw), 10, 64)
			if lo, hi := dt.Range(); err != nil || i < lo || i > hi {
				return nil, bad("value %s at element %d is not an %v (an integer in [%d, %d])", ir.QuoteBytes(raw), k, dt, lo, hi)
			}
			v.ints = append(v.ints, i)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, bad("data: %v", err)
	}
	if got := int64(len(v.data) + len(v.ints)); got != n {
		return nil, bad("data has %d values; shape %v has %d", got, *t.Shape, n)
	}
	return v, nil
}

// jsonFloat64 is jsonFloat of a float64 input: a JSON number as float64
// (correctly rounded), or, under the non-finite policy, one of the
// spellings a float64 output is written in.
func jsonFloat64(raw []byte, nonFinite bool) (float64, error) {
	switch raw[0] {
	case '"':
		f, err := jsonFloat(raw, nonFinite) // ±Inf and NaN: float32's are float64's
		return float64(f), err
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return 0, errors.New("not a finite float64 (out of its range)")
		}
		return f, nil
	}
	return 0, errors.New("not a number")
}

// jsonFloat is a JSON number as float32 (correctly rounded), or one of
// the non-finite spellings the reply writes ("NaN", "Infinity",
// "-Infinity", as JSON strings), which only the --non-finite policy
// admits.
func jsonFloat(raw []byte, nonFinite bool) (float32, error) {
	switch raw[0] {
	case '"':
		var f float32
		switch string(raw) {
		case `"NaN"`:
			f = float32(math.NaN())
		case `"Infinity"`:
			f = float32(math.Inf(1))
		case `"-Infinity"`:
			f = float32(math.Inf(-1))
		default:
			return 0, errors.New("not a number")
		}
		if !nonFinite {
			return 0, errors.New("a non-finite value, which the server's finite policy refuses (serve --non-finite admits it)")
		}
		return f, nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		f, err := strconv.ParseFloat(string(raw), 32)
		if err != nil {
			return 0, errors.New("not a float32 (out of its range, or not a number)")
		}
		return float32(f), nil
	}
	return 0, errors.New("not a number")
}

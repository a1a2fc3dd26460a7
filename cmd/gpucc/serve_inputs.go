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

	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
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

// modelForm is a parsed multipart execute request.
type modelForm struct {
	model  []byte
	inputs map[string]*inputValue
	from   map[string]string // where each input came from, for errors
}

// shapes is each input's shape, which binds the model's dynamic
// dimensions at import.
func (f *modelForm) shapes() map[string][]int {
	m := map[string][]int{}
	for name, v := range f.inputs {
		m[name] = v.shape
	}
	return m
}

// parseModelForm reads a multipart/form-data body with the given boundary.
// A malformed body or a part given twice is usage; data that cannot be an
// input (a truncated, Fortran-order or pickled .npy, a bad JSON tensor)
// is invalid_input naming the input; more than maxElements values in one
// input is limit_exceeded.
func parseModelForm(body []byte, boundary string, maxElements int64, nonFinite bool) (*modelForm, error) {
	if boundary == "" {
		return nil, ir.Errorf(ir.CodeUsage, -1, "Content-Type", "multipart/form-data without a boundary")
	}
	f := &modelForm{inputs: map[string]*inputValue{}, from: map[string]string{}}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	seenModel := false
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, ir.Errorf(ir.CodeUsage, -1, "multipart", "malformed multipart body: %v", err)
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
			vs, err := parseJSONInputs(content, maxElements, nonFinite)
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
			a, err := npy.Read(bytes.NewReader(content), maxElements)
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

// parseJSONInputs reads the JSON form, {"inputs": {NAME: tensor}}.
func parseJSONInputs(doc []byte, maxElements int64, nonFinite bool) (map[string]*inputValue, error) {
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
	out := map[string]*inputValue{}
	for name, t := range form.Inputs {
		v, err := t.value(name, maxElements, nonFinite)
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
			return nil, bad("dtype %s is not one of gpucc's (float32, float16, bfloat16, int32, int64, uint8, int8, uint32, bool)", ir.Quote(t.DType))
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
	v := &inputValue{dtype: dt, shape: *t.Shape}
	dec := json.NewDecoder(bytes.NewReader(t.Data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, bad("data is not a flat array")
	}
	for k := int64(0); dec.More(); k++ {
		if k >= n {
			return nil, bad("data has more than the %d values of shape %v", n, *t.Shape)
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, bad("data: %v", err)
		}
		switch {
		case dt == ir.Bool:
			b, ok := tok.(bool)
			if !ok {
				return nil, bad("value %v at element %d is not true or false", tok, k)
			}
			v.ints = append(v.ints, map[bool]int64{false: 0, true: 1}[b])
		case dt.IsFloat():
			f, err := jsonFloat(tok, nonFinite)
			if err != nil {
				return nil, bad("value %v at element %d: %v", tok, k, err)
			}
			if !dt.Holds(f) {
				return nil, bad("value %v at element %d is not a %v value (gpucc never rounds an input)", tok, k, dt)
			}
			v.data = append(v.data, f)
		case dt.IsFloat64():
			num, ok := tok.(json.Number)
			f, err := strconv.ParseFloat(string(num), 64)
			if !ok || err != nil {
				return nil, bad("value %v at element %d is not a finite float64", tok, k)
			}
			v.ints = append(v.ints, ir.F64Bits(f))
		default:
			num, ok := tok.(json.Number)
			i, err := strconv.ParseInt(string(num), 10, 64)
			if lo, hi := dt.Range(); !ok || err != nil || i < lo || i > hi {
				return nil, bad("value %v at element %d is not an %v (an integer in [%d, %d])", tok, k, dt, lo, hi)
			}
			v.ints = append(v.ints, i)
		}
	}
	if got := int64(len(v.data) + len(v.ints)); got != n {
		return nil, bad("data has %d values; shape %v has %d", got, *t.Shape, n)
	}
	return v, nil
}

// jsonFloat is a JSON number as float32 (correctly rounded), or one of
// the non-finite spellings the reply writes, which only the --non-finite
// policy admits.
func jsonFloat(tok any, nonFinite bool) (float32, error) {
	switch x := tok.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 32)
		if err != nil {
			return 0, errors.New("not a float32 (out of its range, or not a number)")
		}
		return float32(f), nil
	case string:
		var f float32
		switch x {
		case "NaN":
			f = float32(math.NaN())
		case "Infinity":
			f = float32(math.Inf(1))
		case "-Infinity":
			f = float32(math.Inf(-1))
		default:
			return 0, errors.New("not a number")
		}
		if !nonFinite {
			return 0, errors.New("a non-finite value, which the server's finite policy refuses (serve --non-finite admits it)")
		}
		return f, nil
	}
	return 0, errors.New("not a number")
}

// Package onnxconst makes the constants that fix an ONNX model's inputs at
// import (onnx.Options.Constants) from their text: gpucc's --const
// NAME=V0,V1,…, serve's const=NAME=V0,… and the page's constants, so that
// the three read a value the same way and refuse a bad one with the same
// code and message.
package onnxconst

import (
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// File reads a constant's value from the .npy file path for an input of
// type dt (field names it in errors). Only the command line has one.
type File func(path string, dt onnx.DataType, maxElements int64, field string) (*onnx.Tensor, error)

// npyTypes maps a .npy dtype to the ONNX type it fixes.
var npyTypes = map[string]onnx.DataType{"float32": onnx.Float32, "float64": onnx.Float64, "int32": onnx.Int32, "int64": onnx.Int64, "bool": onnx.Bool}

// Npy reads a .npy file (internal/npy: its shape, at most maxElements
// values) as a constant of type dt: the file's dtype must be dt's. what
// names the file in errors (a path, or the page's "file of NAME"); a file
// gpucc cannot read or of another dtype is invalid_input.
func Npy(r io.Reader, what string, dt onnx.DataType, maxElements int64, field string) (*onnx.Tensor, error) {
	a, err := npy.Read(r, maxElements)
	if err != nil {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "%s: %v", what, err)
	}
	if npyTypes[a.DType] != dt {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "%s holds %s; the model's input is %v", what, a.DType, dt)
	}
	return &onnx.Tensor{Type: dt, Shape: a.Shape, Float32: a.Float32, Float64: a.Float64, Int64: a.Int64}, nil
}

// Parse reads the model raw's signature within limits and makes a
// constant of each spec (input NAME to VALUE) for its input: VALUE is a
// comma-separated list of numbers, or true and false, one for each element
// of the input's declared static shape, in the input's declared element
// type; or, where file is not nil, a NAME.npy file, which gives its own
// dtype and shape (file is nil: such a VALUE is a usage error). An input
// the model lacks, a value not of the input's type, a count other than the
// shape's, or an input of another element type is invalid_input or
// unsupported, with field "const NAME".
func Parse(raw []byte, limits ir.Limits, specs map[string]string, file File) (map[string]*onnx.Tensor, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	sig, err := onnx.ReadSignature(onnx.Bytes(raw), limits)
	if err != nil {
		return nil, err
	}
	l := limits.WithDefaults()
	out := map[string]*onnx.Tensor{}
	for _, name := range slices.Sorted(maps.Keys(specs)) { // the first error is always the same one
		spec := specs[name]
		field := "const " + name
		k := slices.IndexFunc(sig.Inputs, func(p onnx.Port) bool { return p.Name == name })
		if k < 0 {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "the model has no input named %s", ir.Quote(name))
		}
		p := sig.Inputs[k]
		dt, ok := DataType(p.Type)
		if !ok || !(dt == onnx.Float32 || dt == onnx.Float64 || dt == onnx.Bool || dt == onnx.Int64 || dt == onnx.Int32 || dt == onnx.Int8 || dt == onnx.Uint8 || dt == onnx.Int16 || dt == onnx.Uint16 || dt == onnx.Uint32) {
			return nil, ir.Errorf(ir.CodeUnsupported, -1, field, "input %s has element type %s; --const fixes float32, float64, integer and bool inputs", ir.Quote(name), ir.Quote(p.Type))
		}
		var t *onnx.Tensor
		isFile := strings.HasSuffix(strings.ToLower(spec), ".npy")
		switch {
		case isFile && file == nil:
			return nil, ir.Errorf(ir.CodeUsage, -1, field, "a .npy file (%s) is read by the command line only; give the values", ir.Quote(spec))
		case isFile:
			t, err = file(spec, dt, l.MaxElements, field)
		default:
			t, err = List(spec, dt, p, field)
		}
		if err != nil {
			return nil, err
		}
		t.Name = name
		out[name] = t
	}
	return out, nil
}

// DataType is the ONNX element type of a signature's type name.
func DataType(s string) (onnx.DataType, bool) {
	for t := onnx.DataType(1); t <= 16; t++ {
		if t.String() == s {
			return t, true
		}
	}
	return 0, false
}

// List parses spec for input p of type dt: one value for each element of
// p's static shape.
func List(spec string, dt onnx.DataType, p onnx.Port, field string) (*onnx.Tensor, error) {
	if p.Shape == nil || slices.Contains(p.Shape, -1) {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "input %s has no static shape in the model (%v); give its value as a .npy file", ir.Quote(p.Name), p.Shape)
	}
	parts := strings.Split(spec, ",")
	n := 1
	for _, d := range p.Shape {
		n *= d
	}
	if len(parts) != n {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "input %s has shape %v (%d elements); %d values were given", ir.Quote(p.Name), p.Shape, n, len(parts))
	}
	t := &onnx.Tensor{Type: dt, Shape: slices.Clone(p.Shape)}
	for _, s := range parts {
		s = strings.TrimSpace(s)
		var err error
		switch dt {
		case onnx.Float32:
			var v float64
			if v, err = strconv.ParseFloat(s, 32); err == nil {
				t.Float32 = append(t.Float32, float32(v))
			}
		case onnx.Float64:
			var v float64
			if v, err = strconv.ParseFloat(s, 64); err == nil {
				t.Float64 = append(t.Float64, v)
			}
		case onnx.Bool:
			var v bool
			if v, err = strconv.ParseBool(s); err == nil {
				t.Int64 = append(t.Int64, map[bool]int64{false: 0, true: 1}[v])
			}
		default:
			var v int64
			if v, err = strconv.ParseInt(s, 10, 64); err == nil {
				t.Int64 = append(t.Int64, v)
			}
		}
		if err != nil {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "value %s is not of type %v", ir.Quote(s), dt)
		}
	}
	return t, nil
}

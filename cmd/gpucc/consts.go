package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// constSpecs is the repeatable --const NAME=VALUE or NAME=FILE.npy flag
// (registered with --input-shape): it fixes an .onnx model's input NAME
// at import, as onnx.Options.Constants does, so that what is computed
// from it folds (a sample rate, a flag, an If's condition). VALUE is a
// comma-separated list of numbers, or true and false, in the model's
// order for the input's declared type and shape; a .npy file gives its
// own dtype, which must be the input's, and shape.
var constSpecs = map[string]string{}

type constFlag struct{}

func (constFlag) String() string { return "" }

func (constFlag) Set(s string) error {
	name, v, ok := strings.Cut(s, "=")
	if !ok || name == "" || v == "" {
		return fmt.Errorf("want NAME=VALUE or NAME=FILE.npy, got %q", s)
	}
	if _, dup := constSpecs[name]; dup {
		return fmt.Errorf("input %q given twice", name)
	}
	constSpecs[name] = v
	return nil
}

func constFlags(fs *flag.FlagSet) {
	constSpecs = map[string]string{}
	fs.Var(constFlag{}, "const", "for an .onnx model: fix input NAME at import, as NAME=V0,V1,… (numbers or true/false, the input's declared type and shape) or NAME=FILE.npy (repeatable)")
}

// onnxConstants reads the model raw's signature and makes a constant of
// each --const for its input: the declared element type, and the
// declared static shape (a list) or the .npy file's shape (which Load
// checks against the model's).
func onnxConstants(raw []byte, limits ir.Limits) (map[string]*onnx.Tensor, error) {
	return constantsFor(raw, limits, constSpecs, true)
}

// constantsFor is onnxConstants of specs (NAME to VALUE); files says
// whether a VALUE may name a .npy file (serve's query may not).
func constantsFor(raw []byte, limits ir.Limits, specs map[string]string, files bool) (map[string]*onnx.Tensor, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	sig, err := onnx.ReadSignature(bytes.NewReader(raw), limits)
	if err != nil {
		return nil, err
	}
	l := limits.WithDefaults()
	out := map[string]*onnx.Tensor{}
	for name, spec := range specs {
		field := "const " + name
		k := slices.IndexFunc(sig.Inputs, func(p onnx.Port) bool { return p.Name == name })
		if k < 0 {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "the model has no input named %s", ir.Quote(name))
		}
		p := sig.Inputs[k]
		dt, ok := dataType(p.Type)
		if !ok || !(dt == onnx.Float32 || dt == onnx.Float64 || dt == onnx.Bool || dt == onnx.Int64 || dt == onnx.Int32 || dt == onnx.Int8 || dt == onnx.Uint8 || dt == onnx.Int16 || dt == onnx.Uint16 || dt == onnx.Uint32) {
			return nil, ir.Errorf(ir.CodeUnsupported, -1, field, "input %s has element type %s; --const fixes float32, float64, integer and bool inputs", ir.Quote(name), ir.Quote(p.Type))
		}
		var t *onnx.Tensor
		if !files && strings.HasSuffix(strings.ToLower(spec), ".npy") {
			return nil, ir.Errorf(ir.CodeUsage, -1, field, "a .npy file (%s) is read by the command line only; give the values", ir.Quote(spec))
		}
		if strings.HasSuffix(strings.ToLower(spec), ".npy") {
			t, err = npyConstant(spec, dt, l.MaxElements, field)
		} else {
			t, err = listConstant(spec, dt, p, field)
		}
		if err != nil {
			return nil, err
		}
		t.Name = name
		out[name] = t
	}
	return out, nil
}

// dataType is the ONNX element type of a signature's type name.
func dataType(s string) (onnx.DataType, bool) {
	for t := onnx.DataType(1); t <= 16; t++ {
		if t.String() == s {
			return t, true
		}
	}
	return 0, false
}

// listConstant parses VALUE for input p of type dt: one value for each
// element of p's static shape.
func listConstant(spec string, dt onnx.DataType, p onnx.Port, field string) (*onnx.Tensor, error) {
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

// npyTypes maps a .npy dtype to the ONNX type it fixes.
var npyTypes = map[string]onnx.DataType{"float32": onnx.Float32, "float64": onnx.Float64, "int32": onnx.Int32, "int64": onnx.Int64, "bool": onnx.Bool}

// npyConstant reads the .npy file path as a constant of type dt.
func npyConstant(path string, dt onnx.DataType, maxElements int64, field string) (*onnx.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, ir.Errorf(ir.CodeIO, -1, field, "%v", err)
	}
	defer f.Close()
	a, err := npy.Read(f, maxElements)
	if err != nil {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "%s: %v", path, err)
	}
	if npyTypes[a.DType] != dt {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "%s holds %s; the model's input is %v", path, a.DType, dt)
	}
	return &onnx.Tensor{Type: dt, Shape: a.Shape, Float32: a.Float32, Float64: a.Float64, Int64: a.Int64}, nil
}

// readModel reads an ONNX model within the limits' graph bytes (one more
// byte, so that Load reports a model over them).
func readModel(r io.Reader, limits ir.Limits) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, limits.WithDefaults().MaxGraphBytes+1))
	if err != nil {
		return nil, ir.Errorf(ir.CodeIO, -1, "", "%v", err)
	}
	return raw, nil
}

//go:build js

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"syscall/js"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/modellimits"
	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/internal/onnxconst"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// onnxSignature is gpucc.onnxSignature(model): the model's inputs and
// outputs as onnx.ReadSignature reads them ({inputs, outputs}, each port
// {name, type, shape, dimParams}, a dynamic dimension -1), so that the
// page can ask for the dynamic dimensions before it runs the model. It
// reads the model under the caps of its size, as runONNX imports it.
func onnxSignature(_ js.Value, args []js.Value) any {
	model, err := modelBytes(args)
	return promise(func() ([]byte, error) {
		if err != nil {
			return nil, err
		}
		sig, err := onnx.ReadSignature(bytes.NewReader(model), modellimits.Caps(int64(len(model))))
		if err != nil {
			return nil, err
		}
		return json.Marshal(sig)
	})
}

// onnxResult is gpucc.runONNX's answer: gpucc.run's, with the import's
// time beside the run's stages (Timings.TotalMs does not include it).
type onnxResult struct {
	*gpucc.Result
	ImportMs float64 `json:"importMs"`
}

// runONNX is gpucc.runONNX(model, options): it imports the model with the
// onnx package (options.inputShapes binds dynamic dimensions by input
// name, as gpucc's --input-shape does; options.constants fixes inputs at
// import, as --const does: {sr: "16000"}, each value a string of
// comma-separated values or a number, a boolean or an array of them, or a
// .npy file's bytes, read by internal/onnxconst as the command line reads
// --const NAME=VALUE and NAME=FILE.npy), binds options.inputs (a
// Float32Array or an array of numbers per input name; an input not given
// stays zero) and runs the graph on options.backend. The limits are sized
// to the model as gpucc run sizes them (internal/modellimits; the page
// has no flags, so every one is): the seed's small limits stay for
// gpucc.run's protocol v1 graphs. The data given before the import is
// bounded by the caps of the model's own size (inputLimit).
func runONNX(_ js.Value, args []js.Value) any {
	model, err := modelBytes(args)
	var (
		opts   gpucc.Options
		shapes map[string][]int
		inputs map[string][]float32
		npys   map[string][]byte
		specs  map[string]string
		files  map[string][]byte
	)
	if err == nil {
		var o js.Value
		if len(args) > 1 {
			o = args[1]
		}
		opts = parseOptions(o)
		maxN := inputLimit(model)
		shapes, inputs, err = parseONNXOptions(o, maxN)
		if err == nil {
			npys, err = npyFiles(o, maxN)
		}
		if err == nil {
			specs, files, err = constantSpecs(o, maxN)
		}
	}
	return promise(func() ([]byte, error) {
		if err != nil {
			return nil, err
		}
		if shapes, inputs, err = bindNpy(npys, shapes, inputs, inputLimit(model)); err != nil {
			return nil, err
		}
		start := time.Now()
		consts, err := onnxconst.Parse(model, modellimits.Caps(int64(len(model))), specs, constantFile(files))
		if err != nil {
			return nil, err
		}
		load := func(raw []byte, l ir.Limits) (*ir.Graph, error) {
			return onnx.Load(onnx.Bytes(raw), onnx.Options{Limits: l, InputShapes: shapes, Constants: consts})
		}
		g, sized, err := modellimits.Load(model, opts.Limits, modellimits.Unset(), shapes, load)
		if err != nil {
			return nil, err
		}
		if err := ir.Validate(g, sized); err != nil { // the shared runtime's limits are wider
			return nil, err
		}
		imported := time.Since(start)
		for name, data := range inputs {
			if g.Input(name) < 0 {
				return nil, ir.Errorf(ir.CodeInvalidInput, -1, "inputs", "the model has no input named %s", ir.Quote(name))
			}
			if err := g.SetInput(name, data); err != nil {
				return nil, ir.Errorf(ir.CodeInvalidInput, -1, "inputs", "%v", err)
			}
		}
		rt, err := shared(opts)
		if err != nil {
			return nil, err
		}
		res, err := rt.Run(context.Background(), g)
		if err != nil {
			return nil, err
		}
		return json.Marshal(onnxResult{Result: res, ImportMs: float64(imported.Microseconds()) / 1000})
	})
}

// modelBytes copies args[0], a Uint8Array or an ArrayBuffer, into Go.
func modelBytes(args []js.Value) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, ir.Errorf(ir.CodeInvalidGraph, -1, "", "reading the model's bytes: %v", r)
		}
	}()
	if len(args) == 0 {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "", "an .onnx model's bytes are needed (a Uint8Array or an ArrayBuffer)")
	}
	v := args[0]
	if v.InstanceOf(js.Global().Get("ArrayBuffer")) {
		v = js.Global().Get("Uint8Array").New(v)
	}
	if !v.InstanceOf(js.Global().Get("Uint8Array")) {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "", "the model must be a Uint8Array or an ArrayBuffer, got %s", v.Type())
	}
	if n := v.Get("length").Int(); int64(n) > limits.MaxGraphBytes {
		return nil, ir.LimitErrorf("MaxGraphBytes", -1, "", "the model is %d bytes, over the limit of %d", n, limits.MaxGraphBytes)
	}
	b = make([]byte, v.Get("length").Int())
	js.CopyBytesToGo(b, v)
	return b, nil
}

// inputLimit bounds the values of one input given before model is
// imported (a shape field, a Float32Array, a .npy file): the elements per
// tensor that the model's own size allows (modellimits.Caps), at least the
// default. The import checks each against the model's shapes.
func inputLimit(model []byte) int64 {
	return modellimits.Caps(int64(len(model))).MaxElements
}

// parseONNXOptions reads options.inputShapes ({name: [d0, d1, …]}) and
// options.inputs ({name: Float32Array or [numbers]}), each of at most maxN
// values. A JS exception while reading them is invalid_input, not the end
// of the program.
func parseONNXOptions(o js.Value, maxN int64) (shapes map[string][]int, inputs map[string][]float32, err error) {
	defer func() {
		if r := recover(); r != nil {
			shapes, inputs, err = nil, nil, ir.Errorf(ir.CodeInvalidInput, -1, "", "reading gpucc.runONNX's options: %v", r)
		}
	}()
	if o.Type() != js.TypeObject {
		return nil, nil, nil
	}
	keys := js.Global().Get("Object").Get("keys")
	if s := o.Get("inputShapes"); s.Type() == js.TypeObject {
		shapes = map[string][]int{}
		names := keys.Invoke(s)
		for i := range names.Length() {
			name := names.Index(i).String()
			dims := s.Get(name)
			if dims.Type() != js.TypeObject || dims.Length() > ir.MaxRank {
				return nil, nil, ir.Errorf(ir.CodeInvalidInput, -1, "inputShapes", "the shape of %s must be an array of at most %d dimensions", ir.Quote(name), ir.MaxRank)
			}
			shape := make([]int, dims.Length())
			for k := range shape {
				d := dims.Index(k)
				if d.Type() != js.TypeNumber || d.Float() != math.Trunc(d.Float()) || d.Float() < 1 || d.Float() > float64(maxN) {
					return nil, nil, ir.Errorf(ir.CodeInvalidInput, -1, "inputShapes", "dimension %d of the shape of %s is %v, not a positive integer within the limits", k, ir.Quote(name), d)
				}
				shape[k] = d.Int()
			}
			shapes[name] = shape
		}
	}
	if in := o.Get("inputs"); in.Type() == js.TypeObject {
		inputs = map[string][]float32{}
		names := keys.Invoke(in)
		for i := range names.Length() {
			name := names.Index(i).String()
			data, err := float32s(in.Get(name), name, maxN)
			if err != nil {
				return nil, nil, err
			}
			inputs[name] = data
		}
	}
	return shapes, inputs, nil
}

// constantSpecs reads options.constants ({name: value}): each value is
// the text of --const's VALUE, "V0,V1,…", or a number, a boolean or an
// array of them, which JavaScript's String writes as that text; or a
// .npy file's bytes (a Uint8Array or an ArrayBuffer), as --const
// NAME=FILE.npy reads a file: its spec is then npyConstantPath(name) and
// its bytes files[name]. A value's text is bounded by 32 bytes for
// each of maxN values, a file by maxN values of 8 bytes.
func constantSpecs(o js.Value, maxN int64) (specs map[string]string, files map[string][]byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			specs, files, err = nil, nil, ir.Errorf(ir.CodeInvalidInput, -1, "constants", "reading gpucc.runONNX's options.constants: %v", r)
		}
	}()
	if o.Type() != js.TypeObject {
		return nil, nil, nil
	}
	c := o.Get("constants")
	if c.Type() == js.TypeUndefined || c.Type() == js.TypeNull {
		return nil, nil, nil
	}
	if c.Type() != js.TypeObject {
		return nil, nil, ir.Errorf(ir.CodeInvalidInput, -1, "constants", "options.constants must be an object of input names to values, got %s", c.Type())
	}
	specs, files = map[string]string{}, map[string][]byte{}
	names := js.Global().Get("Object").Get("keys").Invoke(c)
	for i := range names.Length() {
		name := names.Index(i).String()
		v := c.Get(name)
		if v.InstanceOf(js.Global().Get("ArrayBuffer")) {
			v = js.Global().Get("Uint8Array").New(v)
		}
		if v.InstanceOf(js.Global().Get("Uint8Array")) {
			if n := int64(v.Get("length").Int()); n > 128+8*maxN+(64<<10) {
				return nil, nil, ir.LimitErrorf("MaxElements", -1, "const "+name, "the constant of %s: a .npy file of %d bytes holds more than %d values", ir.Quote(name), n, maxN)
			}
			b := make([]byte, v.Get("length").Int())
			js.CopyBytesToGo(b, v)
			specs[name], files[name] = npyConstantPath(name), b
			continue
		}
		switch v.Type() {
		case js.TypeString, js.TypeNumber, js.TypeBoolean, js.TypeObject:
		default:
			return nil, nil, ir.Errorf(ir.CodeInvalidInput, -1, "const "+name, "the constant of %s must be a string, a number, a boolean, an array of them or a .npy file's bytes, got %s", ir.Quote(name), v.Type())
		}
		if v.Type() == js.TypeObject && !js.Global().Get("Array").Call("isArray", v).Bool() {
			return nil, nil, ir.Errorf(ir.CodeInvalidInput, -1, "const "+name, "the constant of %s must be a string, a number, a boolean, an array of them or a .npy file's bytes, got an object", ir.Quote(name))
		}
		if v.Type() == js.TypeObject && int64(v.Length()) > maxN || v.Type() == js.TypeString && int64(len(v.String())) > 32*maxN {
			return nil, nil, ir.LimitErrorf("MaxElements", -1, "const "+name, "the constant of %s has more than %d values", ir.Quote(name), maxN)
		}
		specs[name] = js.Global().Get("String").Invoke(v).String()
	}
	return specs, files, nil
}

// npyConstantPath is the spec of input name's constant given as a .npy
// file's bytes, which errors name.
func npyConstantPath(name string) string { return name + ".npy" }

// constantFile reads a constant given as a .npy file's bytes (files, by
// input name, from constantSpecs) with the command line's reader
// (onnxconst.Npy). A page has no files by name: a text value ending in
// .npy, which has no bytes under its input's name, is invalid_input.
func constantFile(files map[string][]byte) onnxconst.File {
	return func(path string, dt onnx.DataType, maxElements int64, field string) (*onnx.Tensor, error) {
		b, ok := files[strings.TrimPrefix(field, "const ")]
		if !ok {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "the page reads no file by name (%s): give the .npy file's bytes (a Uint8Array) as the constant", ir.Quote(path))
		}
		return onnxconst.Npy(bytes.NewReader(b), path, dt, maxElements, field)
	}
}

// float32s copies a Float32Array (by its bytes, so every bit pattern
// survives) or an array of numbers, of at most maxN values, into Go.
func float32s(v js.Value, name string, maxN int64) ([]float32, error) {
	if v.InstanceOf(js.Global().Get("Float32Array")) {
		n := v.Get("length").Int()
		if int64(n) > maxN {
			return nil, ir.LimitErrorf("MaxElements", -1, "inputs", "input %s has %d values, over the limit of %d", ir.Quote(name), n, maxN)
		}
		raw := make([]byte, 4*n)
		js.CopyBytesToGo(raw, js.Global().Get("Uint8Array").New(v.Get("buffer"), v.Get("byteOffset"), 4*n))
		out := make([]float32, n)
		for k := range out {
			out[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
		}
		return out, nil
	}
	if v.Type() != js.TypeObject || !js.Global().Get("Array").Call("isArray", v).Bool() {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "inputs", "input %s must be a Float32Array or an array of numbers", ir.Quote(name))
	}
	n := v.Length()
	if int64(n) > maxN {
		return nil, ir.LimitErrorf("MaxElements", -1, "inputs", "input %s has %d values, over the limit of %d", ir.Quote(name), n, maxN)
	}
	out := make([]float32, n)
	for k := range out {
		x := v.Index(k)
		if x.Type() != js.TypeNumber {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, "inputs", "input %s value %d is a %s, not a number", ir.Quote(name), k, x.Type())
		}
		out[k] = float32(x.Float())
	}
	return out, nil
}

// limits are the host limits gpucc.run's protocol v1 graphs run under:
// the defaults (gpucc.Options.Limits is left zero). An .onnx model's
// bytes are read within its MaxGraphBytes; runONNX sizes the rest to the
// model.
var limits = ir.Limits{}.WithDefaults()

// npyFiles reads options.npy: {name: Uint8Array or ArrayBuffer}, the
// bytes of a .npy file per input, each of at most maxN values.
func npyFiles(o js.Value, maxN int64) (files map[string][]byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			files, err = nil, ir.Errorf(ir.CodeInvalidInput, -1, "npy", "reading gpucc.runONNX's options.npy: %v", r)
		}
	}()
	if o.Type() != js.TypeObject {
		return nil, nil
	}
	in := o.Get("npy")
	if in.Type() != js.TypeObject {
		return nil, nil
	}
	files = map[string][]byte{}
	names := js.Global().Get("Object").Get("keys").Invoke(in)
	for i := range names.Length() {
		name := names.Index(i).String()
		v := in.Get(name)
		if v.InstanceOf(js.Global().Get("ArrayBuffer")) {
			v = js.Global().Get("Uint8Array").New(v)
		}
		if !v.InstanceOf(js.Global().Get("Uint8Array")) {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, "npy", "options.npy.%s must be a .npy file's bytes (a Uint8Array or an ArrayBuffer)", name)
		}
		if n := int64(v.Get("length").Int()); n > 128+4*maxN+(64<<10) {
			return nil, ir.LimitErrorf("MaxElements", -1, "npy", "input %s: a .npy file of %d bytes holds more than %d values", ir.Quote(name), n, maxN)
		}
		b := make([]byte, v.Get("length").Int())
		js.CopyBytesToGo(b, v)
		files[name] = b
	}
	return files, nil
}

// bindNpy reads each .npy file of npys (internal/npy, the reader of the
// command line and the server: a truncated, Fortran-order or pickled file
// is invalid_input) into inputs, its shape into shapes (a shape also
// given must be the file's). The page runs float32 data: another dtype is
// refused by name, never converted.
func bindNpy(npys map[string][]byte, shapes map[string][]int, inputs map[string][]float32, maxN int64) (map[string][]int, map[string][]float32, error) {
	for name, b := range npys {
		a, err := npy.Read(bytes.NewReader(b), maxN)
		if err != nil {
			return nil, nil, ir.Errorf(ir.CodeInvalidInput, -1, "npy", "input %s: %v", ir.Quote(name), err)
		}
		if a.DType != "float32" {
			return nil, nil, ir.Errorf(ir.CodeInvalidInput, -1, "npy", "input %s: the .npy file holds %s; the page runs float32 data (gpucc never converts a dtype)", ir.Quote(name), a.DType)
		}
		if given, ok := shapes[name]; ok && !slices.Equal(given, a.Shape) {
			return nil, nil, ir.Errorf(ir.CodeInvalidInput, -1, "npy", "input %s: the shape to run is %v, the .npy file's %v", ir.Quote(name), given, a.Shape)
		}
		if _, ok := inputs[name]; ok {
			return nil, nil, ir.Errorf(ir.CodeInvalidInput, -1, "npy", "input %s is given twice (inputs and npy)", ir.Quote(name))
		}
		if shapes == nil {
			shapes = map[string][]int{}
		}
		if inputs == nil {
			inputs = map[string][]float32{}
		}
		shapes[name], inputs[name] = a.Shape, a.Float32
	}
	return shapes, inputs, nil
}

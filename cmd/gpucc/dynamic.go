package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// runInputs is run's repeatable --input NAME=FILE.npy: run-time data for
// an .onnx model's input NAME, whose shape binds the model's dynamic
// dimensions (no --input-shape needed).
var runInputs = map[string]string{}

type runInputFlag struct{}

func (runInputFlag) String() string { return "" }

func (runInputFlag) Set(s string) error {
	name, file, ok := strings.Cut(s, "=")
	if !ok || name == "" || file == "" {
		return fmt.Errorf("want NAME=FILE.npy or NAME=[…], got %q", s)
	}
	if _, dup := runInputs[name]; dup {
		return fmt.Errorf("input %q given twice", name)
	}
	runInputs[name] = file
	return nil
}

func runInputFlags(fs *flag.FlagSet) {
	runInputs = map[string]string{}
	fs.Var(runInputFlag{}, "input", "run-time data of input NAME (the model's or graph's own name), as NAME=FILE.npy (numpy.save's format, C order) or NAME=JSON (a nested array, inline or a .json file) (repeatable); for an .onnx model its shape binds the dynamic dimensions")
}

// runDynamic runs the .onnx model at path on the data of --input: the
// model is parsed once, kept with its symbolic dimensions, and specialized
// to the data's shapes (gpucc.Dynamic). With explain it prints the shape
// policy and what this run compiled instead of the result.
func runDynamic(path string, limits ir.Limits, opts lib.Options, explain bool, outDir string) int {
	f, err := os.Open(path)
	if err != nil {
		return fail(ir.Errorf(ir.CodeIO, -1, "", "%v", err))
	}
	raw, err := readModel(f, limits)
	f.Close()
	if err != nil {
		return fail(err)
	}
	oopts := onnx.Options{Limits: limits}
	if oopts.Constants, err = onnxConstants(raw, limits); err != nil {
		return fail(err)
	}
	m, err := onnx.Parse(onnx.Bytes(raw), oopts)
	if err != nil {
		return fail(err)
	}
	in := lib.Inputs{}
	var shapes []string
	for name, file := range runInputs {
		dt := ir.F32
		for _, p := range m.Signature().Inputs {
			if p.Name == name && p.Type != "" {
				d, ok := ir.ParseDType(p.Type)
				if !ok {
					return fail(ir.Errorf(ir.CodeUnsupported, -1, "input "+name, "input %s has element type %s; gpucc's dtypes are float32, float16, bfloat16, int32, int64, uint8, int8, uint32 and bool, and it never narrows float64 silently", ir.Quote(name), p.Type))
				}
				dt = d
			}
		}
		a, err := readInput(file, dt, limits.WithDefaults().MaxElements, "input "+name)
		if err != nil {
			return fail(err)
		}
		if want, ok := inputShapes[name]; ok && !slices.Equal(want, a.Shape) {
			return usageError("run: --input-shape %s=%v, but %s has shape %v", name, want, file, a.Shape)
		}
		t := lib.Tensor{Shape: a.Shape, DType: dt}
		switch {
		case dt.IsFloat() && (a.DType == "float32" || a.DType == dt.String()):
			t.Data = a.Float32
		case !dt.IsFloat() && a.DType == dt.String():
			t.Ints = a.Carried()
		default:
			return fail(ir.Errorf(ir.CodeInvalidInput, -1, "input "+name, "input %s is %v; %s holds %s (gpucc never converts an input's dtype)", ir.Quote(name), dt, file, a.DType))
		}
		in[name] = t
		shapes = append(shapes, fmt.Sprintf("%s=%v", name, a.Shape))
	}
	slices.Sort(shapes)
	// The inputs whose values decide a shape (Reshape's shape, Slice's
	// starts, …) are read now, as the data's shapes bind the dynamic
	// dimensions: the model is specialized to them and they are not
	// inputs of the graph that runs.
	values := map[string]*onnx.Tensor{}
	for name, v := range in {
		t := v.(lib.Tensor)
		values[name] = &onnx.Tensor{Name: name, Type: onnx.DataTypeOf(t.DType), Shape: t.Shape, Float32: t.Data, Int64: t.Ints}
	}
	g, fixed, err := m.SpecializeValues(context.Background(), values)
	if err != nil {
		return fail(err)
	}
	for _, name := range fixed {
		delete(in, name)
	}
	rt, err := lib.Open(context.Background(), opts)
	if err != nil {
		return fail(err)
	}
	defer rt.Close()
	d := rt.NewDynamic(specialized{g}, lib.DynamicOptions{})
	defer d.Release()
	var res *lib.Result
	if err := step(fmt.Sprintf("importing %s at %s and compiling it for %s", filepath.Base(path), strings.Join(shapes, " "), rt.Backend()), func() error {
		res, err = d.Run(context.Background(), in)
		return err
	}); err != nil {
		return fail(err)
	}
	if explain {
		st := d.Stats()
		fmt.Printf("model: %v\nshapes: %s\nthis run: %s: %d compiled, %d served from the cache, %d evicted\n",
			m, d.Policy(), strings.Join(shapes, " "), st.Compiles, st.Hits, st.Evictions)
		return exitOK
	}
	if outDir != "" {
		if err := writeOutputs(outDir, res); err != nil {
			return fail(err)
		}
	}
	writeJSON(res)
	return exitOK
}

// specialized is a Specializer of the one graph a run was specialized to
// (onnx.Model.SpecializeValues).
type specialized struct{ g *ir.Graph }

func (s specialized) Specialize(context.Context, map[string][]int) (*ir.Graph, error) {
	return s.g.Clone(), nil
}

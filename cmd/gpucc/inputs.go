package main

import (
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// bindInputs gives each --input's values to the graph's input of that name
// (an ONNX model's inputs keep the model's names), checked against its
// shape and dtype, in place of the values the graph embeds.
func bindInputs(g *ir.Graph, maxElements int64, nonFinite bool) error {
	for _, name := range slices.Sorted(maps.Keys(runInputs)) {
		value := runInputs[name]
		field := "input " + name
		if inputNode(g, name) < 0 {
			return noInput(g, name, field)
		}
		a, ok := runArrays[name] // an .npy file read once, before the import
		if !ok {
			var err error
			if a, err = readInput(value, g.Nodes[inputNode(g, name)].DType, maxElements, field); err != nil {
				return err
			}
		}
		v, err := npyValue(a, value, field)
		if err != nil {
			return err
		}
		if err := bindValue(g, name, v, value, field, nonFinite); err != nil {
			return err
		}
	}
	return nil
}

// loadWithInputs reads the graph or model at path with each --input bound
// by name: an .onnx model is imported at the inputs' shapes (their data
// gives them, as --input-shape would), so a dynamic dimension takes the
// data's size; a shape --input-shape also gives must be the data's.
func loadWithInputs(path string, limits *ir.Limits) (*ir.Graph, error) {
	runValues, runArrays = map[string]*onnx.Tensor{}, map[string]*npy.Array{}
	defer func() { runValues, runArrays = map[string]*onnx.Tensor{}, map[string]*npy.Array{} }()
	var raw []byte
	var rawErr error
	model := isONNX(path) && path != "-"
	if model {
		limits.NonFinite = true // as run: a model's masks hold -Inf
		// The model's bytes are read once: they size the inputs' reads,
		// then they are imported (a read that failed is reported after
		// the inputs', as the import reported it).
		raw, rawErr = readModelFile(path, *limits)
		maxN := modelInputElements(raw, *limits) // modellimits.go
		for _, name := range slices.Sorted(maps.Keys(runInputs)) {
			a, err := readInput(runInputs[name], ir.F32, maxN, "input "+name)
			if err != nil {
				return nil, err
			}
			if given, ok := inputShapes[name]; ok && !slices.Equal(given, a.Shape) {
				return nil, ir.Errorf(ir.CodeUsage, -1, "input-shape", "--input-shape %s=%v, but %s has shape %v", name, given, runInputs[name], a.Shape)
			}
			inputShapes[name] = a.Shape
			t := &onnx.Tensor{Name: name, Shape: a.Shape, Float32: a.Float32, Float64: a.Float64, Int64: a.Int64, Type: onnx.Float64}
			if dt, ok := ir.ParseDType(a.DType); ok {
				t.Type = onnx.DataTypeOf(dt)
			}
			runValues[name] = t
			if strings.HasSuffix(strings.ToLower(runInputs[name]), ".npy") {
				runArrays[name] = a // its dtype is the file's: bindInputs takes it as read
			}
		}
	}
	var g *ir.Graph
	var err error
	switch {
	case rawErr != nil:
		err = rawErr
	case model:
		g, err = loadRaw(raw, *limits)
	default:
		g, err = readGraph(path, *limits)
	}
	if err != nil {
		return nil, err
	}
	if err := bindInputs(g, limits.WithDefaults().MaxElements, limits.NonFinite); err != nil {
		return nil, err
	}
	return g, nil
}

// runArrays are the .npy files of gpucc run's --input read for an .onnx
// model's import (loadWithInputs), which bindInputs binds without reading
// them again: each was read twice, and held three times with the
// placeholder the import made for it.
var runArrays = map[string]*npy.Array{}

// inputValue is one input's run-time data in the IR's carriers: a float
// dtype's values in data, an integer or bool dtype's in ints.
type inputValue struct {
	dtype ir.DType
	shape []int
	data  []float32
	ints  []int64
}

// npyValue is a's values as an inputValue: every dtype gpucc holds keeps
// it, float64 too (its bits in ints); another is refused by name (gpucc
// never converts an input's dtype).
func npyValue(a *npy.Array, from, field string) (*inputValue, error) {
	switch a.DType {
	case "float32", "float16": // a float16 .npy's values, each exactly a float16
		dt, _ := ir.ParseDType(a.DType)
		return &inputValue{dtype: dt, shape: a.Shape, data: a.Float32}, nil
	}
	if dt, ok := ir.ParseDType(a.DType); ok && !dt.IsFloat() { // a .npy's integers, bool, float64; a JSON array's any integer dtype or float64
		return &inputValue{dtype: dt, shape: a.Shape, ints: a.Carried()}, nil
	}
	return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "%s holds %s; gpucc takes float32, int32, int64 and bool data and never converts a dtype", from, a.DType)
}

// inputNode is the index of g's input named name, or -1.
func inputNode(g *ir.Graph, name string) int {
	return slices.IndexFunc(g.Nodes, func(n ir.Node) bool { return n.Op == ir.OpInput && n.Name == name })
}

// noInput is the error for data given to an input g does not have.
func noInput(g *ir.Graph, name, field string) error {
	var names []string
	for _, n := range g.Nodes {
		if n.Op == ir.OpInput && n.Name != "" && !n.Param {
			names = append(names, n.Name)
		}
	}
	return ir.Errorf(ir.CodeInvalidInput, -1, field, "the graph has no input %s (its named inputs: %s)", ir.Quote(name), strings.Join(names, ", "))
}

// bindValue gives v to g's input name in place of its embedded values,
// checked against the input's shape and dtype: the dtypes must be the
// same, except that float32 data may feed a float16 or bfloat16 input
// whose every value it holds exactly (never rounded on the way in). A
// float value must be finite unless nonFinite (ir.Limits.NonFinite): the
// run's input, refused invalid_input as the library's Run refuses it,
// where the graph's validation then called it invalid_graph.
func bindValue(g *ir.Graph, name string, v *inputValue, from, field string, nonFinite bool) error {
	id := inputNode(g, name)
	if id < 0 {
		return noInput(g, name, field)
	}
	n := &g.Nodes[id]
	if !slices.Equal(v.shape, []int(n.Shape)) {
		return ir.Errorf(ir.CodeInvalidInput, id, field, "input %s has shape %v; %s gives %v", ir.Quote(name), n.Shape, from, v.shape)
	}
	if !nonFinite {
		if k := firstNonFinite(v); k >= 0 {
			var x any
			if v.dtype.IsFloat64() {
				x = ir.F64Value(v.ints[k])
			} else {
				x = v.data[k]
			}
			return ir.Errorf(ir.CodeInvalidInput, id, field, "input %s: %s's value %v at element %d is not finite (run with --non-finite to allow ±Inf and NaN)", ir.Quote(name), from, x, k)
		}
	}
	switch {
	case v.dtype == n.DType && n.DType.IsFloat():
		n.Data = v.data
	case v.dtype == n.DType:
		lo, hi := n.DType.Range()
		for k, x := range v.ints {
			if x < lo || x > hi {
				return ir.Errorf(ir.CodeInvalidInput, id, field, "input %s is %v; %s's value %d at element %d is out of its range [%d, %d]", ir.Quote(name), n.DType, from, x, k, lo, hi)
			}
		}
		n.Ints = v.ints
	case v.dtype == ir.F32 && n.DType.IsFloat():
		for k, f := range v.data {
			if !n.DType.Holds(f) {
				return ir.Errorf(ir.CodeInvalidInput, id, field, "input %s is %v; %s's value %v at element %d is not one (gpucc never rounds an input)", ir.Quote(name), n.DType, from, f, k)
			}
		}
		n.Data = v.data
	default:
		return ir.Errorf(ir.CodeInvalidInput, id, field, "input %s is %v; %s holds %v (gpucc never converts an input's dtype)", ir.Quote(name), n.DType, from, v.dtype)
	}
	return nil
}

// firstNonFinite is the index of v's first ±Inf or NaN (a float dtype's,
// float64's bits included), or -1.
func firstNonFinite(v *inputValue) int {
	if v.dtype.IsFloat64() {
		return slices.IndexFunc(v.ints, func(b int64) bool {
			f := math.Float64frombits(uint64(b))
			return math.IsInf(f, 0) || math.IsNaN(f)
		})
	}
	return slices.IndexFunc(v.data, func(f float32) bool { return math.IsInf(float64(f), 0) || f != f })
}

// readInput reads one --input value: a .npy file, or a JSON array (inline
// or a .json file), whose numbers take the input's dtype.
func readInput(value string, dt ir.DType, maxElements int64, field string) (*npy.Array, error) {
	if strings.HasSuffix(strings.ToLower(value), ".npy") {
		f, err := os.Open(value)
		if err != nil {
			return nil, ir.Errorf(ir.CodeIO, -1, field, "%v", err)
		}
		defer f.Close()
		a, err := npy.Read(f, maxElements)
		if err != nil {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "%s: %v", value, err)
		}
		return a, nil
	}
	raw := []byte(value)
	if strings.HasSuffix(strings.ToLower(value), ".json") {
		b, err := os.ReadFile(value)
		if err != nil {
			return nil, ir.Errorf(ir.CodeIO, -1, field, "%v", err)
		}
		raw = b
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, field, "%s is neither a .npy file nor a JSON array: %v", ir.Quote(value), err)
	}
	a := &npy.Array{DType: "float32", Shape: []int{}}
	if !dt.IsFloat() {
		a.DType = dt.String() // an integer dtype, bool or float64
	}
	for x := v; ; {
		l, ok := x.([]any)
		if !ok {
			break
		}
		a.Shape = append(a.Shape, len(l))
		if len(l) == 0 {
			break
		}
		x = l[0]
	}
	var walk func(x any, depth int) error
	walk = func(x any, depth int) error {
		if depth < len(a.Shape) {
			l, ok := x.([]any)
			if !ok || len(l) != a.Shape[depth] {
				return ir.Errorf(ir.CodeInvalidInput, -1, field, "the JSON array is not rectangular (shape %v)", a.Shape)
			}
			for _, e := range l {
				if err := walk(e, depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		f, ok := x.(float64)
		if !ok {
			return ir.Errorf(ir.CodeInvalidInput, -1, field, "the JSON array holds %v, not a number", x)
		}
		if int64(len(a.Float32)+len(a.Float64)+len(a.Int64)) >= maxElements {
			return ir.Errorf(ir.CodeLimitExceeded, -1, field, "the JSON array has more than %d elements", maxElements)
		}
		if dt.IsFloat64() { // JSON's numbers are float64s: exact
			a.Float64 = append(a.Float64, f)
		} else if dt.IsFloat() {
			a.Float32 = append(a.Float32, float32(f))
		} else {
			if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return ir.Errorf(ir.CodeInvalidInput, -1, field, "%v is not an integer of %v", f, dt)
			}
			a.Int64 = append(a.Int64, int64(f))
		}
		return nil
	}
	if err := walk(v, 0); err != nil {
		return nil, err
	}
	return a, nil
}

// writeOutputs writes each output of res as DIR/NAME.npy (float32, or the
// output's integer or bool dtype).
func writeOutputs(dir string, res *lib.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ir.Errorf(ir.CodeIO, -1, "output-dir", "%v", err)
	}
	for name, t := range res.Outputs {
		if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
			return ir.Errorf(ir.CodeUsage, -1, "output-dir", "output %s cannot name a file", ir.Quote(name))
		}
		a := &npy.Array{DType: "float32", Shape: t.Shape, Float32: t.Data}
		if !t.DType.IsFloat() {
			a = npy.FromCarried(t.DType, t.Shape, t.Ints)
		} else if t.DType != ir.F32 {
			a.DType = "float32" // float16 and bfloat16 values are float32-carried: exact in float32
		}
		f, err := os.Create(filepath.Join(dir, name+".npy"))
		if err != nil {
			return ir.Errorf(ir.CodeIO, -1, "output-dir", "%v", err)
		}
		err = npy.Write(f, a)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return ir.Errorf(ir.CodeIO, -1, "output-dir", "%s.npy: %v", name, err)
		}
	}
	return nil
}

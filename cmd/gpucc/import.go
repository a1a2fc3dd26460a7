package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

func init() {
	commands["import"] = command{summary: "import an ONNX model as a protocol v1 graph", run: importCmd}
	help["import"] = `
Reads MODEL.onnx and writes it as a protocol v1 graph to -o (GRAPH.json).
The graph keeps the model's input and output names; initializers become
embedded data and shape computations fold. A dynamic dimension is bound
with --input-shape NAME=D0,D1,… (repeatable); an input is fixed at import
with --const NAME=V0,V1,… or --const NAME=FILE.npy (repeatable), and what
is computed from it folds (a sample rate, an If's condition). An op gpucc cannot run is
refused with code "unsupported", naming the op, the node and the opset.
Prints one JSON object: graph (the file written), nodes, inputs (name,
shape and, when not float32, dtype of each) and outputs (their names). A
typed input (int64 ids, say) keeps its dtype; such a graph runs on cpu. run, build and train read
.onnx files directly, with the same --input-shape and --const; serve's /v1/execute
imports a body of Content-Type application/onnx (static shapes).`
}

// importResult is what gpucc import prints.
type importResult struct {
	Graph   string        `json:"graph"`
	Nodes   int           `json:"nodes"`
	Inputs  []importInput `json:"inputs"`
	Outputs []string      `json:"outputs"`
}

type importInput struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	DType string `json:"dtype,omitempty"` // absent for float32
}

func importCmd(args []string) int {
	fs := newFlags("import", "import MODEL.onnx -o GRAPH.json [--input-shape NAME=D0,D1,…]")
	out := fs.String("o", "", "the graph JSON to write (\"-\": stdout, and no result object)")
	limits := limitFlags(fs)
	inputShapeFlags(fs)
	if err := parseInterspersed(fs, args); err != nil {
		return flagError(fs, err)
	}
	if fs.NArg() != 1 || *out == "" {
		return usageError("import: want MODEL.onnx and -o GRAPH.json")
	}
	g, err := readGraph(fs.Arg(0), *limits)
	if err != nil {
		return fail(err)
	}
	raw := ir.Encode(g)
	if *out == "-" {
		os.Stdout.Write(raw)
		return exitOK
	}
	if err := os.WriteFile(*out, raw, 0o644); err != nil {
		return fail(ir.Errorf(ir.CodeIO, -1, "o", "%v", err))
	}
	res := importResult{Graph: *out, Nodes: len(g.Nodes), Inputs: []importInput{}}
	for _, n := range g.Nodes {
		if n.Op == ir.OpInput && n.Name != "" {
			in := importInput{Name: n.Name, Shape: append([]int{}, n.Shape...)}
			if n.DType != ir.F32 {
				in.DType = n.DType.String()
			}
			res.Inputs = append(res.Inputs, in)
		}
	}
	for _, o := range g.Outputs {
		res.Outputs = append(res.Outputs, o.Name)
	}
	writeJSON(res)
	return exitOK
}

// inputShapes is the repeatable --input-shape NAME=D0,D1,… flag, which
// every command that reads a graph file takes (limitFlags registers it):
// it binds the dynamic dimensions of an .onnx model's inputs.
var inputShapes = map[string][]int{}

type inputShapeFlag struct{}

func (inputShapeFlag) String() string { return "" }

func (inputShapeFlag) Set(s string) error {
	name, dims, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=D0,D1,…, got %q", s)
	}
	if _, dup := inputShapes[name]; dup {
		return fmt.Errorf("input %q given twice", name)
	}
	shape := []int{}
	if dims != "" {
		for _, d := range strings.Split(dims, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(d))
			if err != nil || n < 1 {
				return fmt.Errorf("dimension %q of input %q is not a positive integer", d, name)
			}
			shape = append(shape, n)
		}
	}
	inputShapes[name] = shape
	return nil
}

func inputShapeFlags(fs *flag.FlagSet) {
	inputShapes = map[string][]int{} // one command per process, but tests run many
	fs.Var(inputShapeFlag{}, "input-shape", "for an .onnx model: the shape of input NAME, as NAME=D0,D1,… (repeatable; binds dynamic dimensions)")
	constFlags(fs)
}

// isONNX reports whether path names an ONNX model (by its extension).
func isONNX(path string) bool { return strings.HasSuffix(strings.ToLower(path), ".onnx") }

// onnxParams makes an .onnx model's float32 initializers its trainable
// parameters (gpucc train sets it); other commands embed them.
var onnxParams bool

// loadONNX imports the ONNX model raw, its inputs fixed by --const folded
// (consts.go), holding raw and no copy of it (onnx.Bytes).
func loadONNX(raw []byte, limits ir.Limits) (*ir.Graph, error) {
	opts := onnx.Options{Limits: limits, InputShapes: inputShapes, Params: onnxParams, ShapeHint: cliShapeHint}
	if len(constSpecs) > 0 {
		var err error
		if opts.Constants, err = onnxConstants(raw, limits); err != nil {
			return nil, err
		}
	}
	r := onnx.Bytes(raw)
	if len(runValues) > 0 && len(runValues) == len(inputShapes) {
		// gpucc run's data: the inputs whose values decide a shape are
		// read at specialization (fixed, no longer inputs of the graph),
		// the others bound at run time; integer and bool outputs keep
		// the model's dtype.
		opts.InputShapes = nil
		m, err := onnx.Parse(r, opts)
		if err != nil {
			return nil, err
		}
		g, fixed, err := m.SpecializeValues(context.Background(), runValues)
		if err != nil {
			return nil, err
		}
		for _, name := range fixed {
			delete(runInputs, name)
		}
		return g, nil
	}
	return onnx.Load(r, opts)
}

// runValues are gpucc run's --input data of an .onnx model, by input
// name (loadWithInputs), for onnx.Model.SpecializeValues.
var runValues = map[string]*onnx.Tensor{}

// cliShapeHint is how a gpucc command binds an ONNX input's shape.
func cliShapeHint(input string) string {
	return "--input-shape " + input + "=D0,D1,…"
}

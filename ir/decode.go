package ir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// wireGraph is protocol v1 as it travels. Pointers tell "absent" from zero.
type wireGraph struct {
	Version *int         `json:"version"`
	Nodes   []wireNode   `json:"nodes"`
	Outputs []wireOutput `json:"outputs"`
}

type wireNode struct {
	ID     *int            `json:"id"`
	Op     *string         `json:"op"`
	Shape  []int           `json:"shape,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
	Value  json.RawMessage `json:"value,omitempty"`
	A      *int            `json:"a,omitempty"`
	B      *int            `json:"b,omitempty"`
	Scalar json.RawMessage `json:"scalar,omitempty"`
	Name   *string         `json:"name,omitempty"`
	Param  *bool           `json:"param,omitempty"`
}

type wireOutput struct {
	Name *string `json:"name"`
	ID   *int    `json:"id"`
}

// Decode reads one protocol v1 graph and validates it against limits (zero
// fields mean the defaults). Decoding is strict: unknown fields, wrong types,
// trailing data, non-finite numbers and values that overflow float32 are
// refused.
//
// Protocol v1 as gpucc reads it also has the training extension: an input
// may carry "name" (unique among inputs) and "param": true (a named
// trainable parameter), and add, sub and mul broadcast b when its shape is
// a proper trailing suffix of a's (PyTorch's rule; a never broadcasts).
// Such a node decodes to a broadcast node followed by the op, so IR node
// ids then run ahead of wire ids; errors found while decoding name the
// wire id. Tensor data is parsed only after the node's shape has passed the
// limits, so a hostile graph cannot make Decode allocate more than its own
// size, which is itself capped by Limits.MaxGraphBytes.
func Decode(r io.Reader, limits Limits) (*Graph, error) {
	l := limits.withDefaults()
	raw, err := io.ReadAll(io.LimitReader(r, l.MaxGraphBytes+1))
	if err != nil {
		return nil, Errorf(CodeInvalidGraph, -1, "", "reading graph: %v", err)
	}
	if int64(len(raw)) > l.MaxGraphBytes {
		return nil, Errorf(CodeLimitExceeded, -1, "", "graph JSON exceeds the limit of %d bytes", l.MaxGraphBytes)
	}
	return DecodeBytes(raw, limits)
}

// DecodeBytes is Decode on an in-memory document.
func DecodeBytes(raw []byte, limits Limits) (*Graph, error) {
	l := limits.withDefaults()
	if int64(len(raw)) > l.MaxGraphBytes {
		return nil, Errorf(CodeLimitExceeded, -1, "", "graph JSON exceeds the limit of %d bytes", l.MaxGraphBytes)
	}
	var w wireGraph
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, Errorf(CodeInvalidGraph, -1, "", "unexpected data after the graph object")
	}
	g, err := fromWire(&w, l)
	if err != nil {
		return nil, err
	}
	if err := validate(g, l, false); err != nil { // parseNumber checked every value
		return nil, err
	}
	return g, nil
}

func jsonError(err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return Errorf(CodeInvalidGraph, -1, te.Field, "expected %v, got JSON %s", te.Type, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return Errorf(CodeInvalidGraph, -1, "", "malformed JSON at byte %d: %v", se.Offset, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return Errorf(CodeInvalidGraph, -1, "", "malformed JSON: the document ends early")
	}
	return Errorf(CodeInvalidGraph, -1, "", "malformed JSON: %v", err)
}

func fromWire(w *wireGraph, l Limits) (*Graph, *Error) {
	if w.Version == nil {
		return nil, Errorf(CodeInvalidGraph, -1, "version", "missing; this host speaks version 1")
	}
	if *w.Version != 1 {
		return nil, Errorf(CodeInvalidGraph, -1, "version", "unsupported version %d; this host speaks version 1", *w.Version)
	}
	if len(w.Nodes) > l.MaxNodes {
		return nil, Errorf(CodeLimitExceeded, -1, "nodes", "%d nodes exceed the limit of %d", len(w.Nodes), l.MaxNodes)
	}
	if len(w.Outputs) > l.MaxOutputs {
		return nil, Errorf(CodeLimitExceeded, -1, "outputs", "%d outputs exceed the limit of %d", len(w.Outputs), l.MaxOutputs)
	}
	g := &Graph{Nodes: make([]Node, 0, len(w.Nodes))}
	d := decoder{g: g, l: l, ids: make([]NodeID, len(w.Nodes)), names: map[string]int{}}
	for i := range w.Nodes {
		if err := d.node(i, &w.Nodes[i]); err != nil {
			return nil, err
		}
	}
	for k, o := range w.Outputs {
		field := fmt.Sprintf("outputs[%d]", k)
		if o.Name == nil {
			return nil, Errorf(CodeInvalidGraph, -1, field+".name", "missing")
		}
		if o.ID == nil {
			return nil, Errorf(CodeInvalidGraph, -1, field+".id", "missing")
		}
		if *o.ID < 0 || *o.ID >= len(w.Nodes) {
			return nil, Errorf(CodeInvalidGraph, -1, field+".id", "output %q refers to node %d, graph has %d nodes", *o.Name, *o.ID, len(w.Nodes))
		}
		g.Outputs = append(g.Outputs, Output{Name: *o.Name, ID: d.ids[*o.ID]})
	}
	return g, nil
}

// wireOps maps a protocol op name to its IR op; binary ops with a scalar
// operand become the Op*Scalar variants.
var wireOps = map[string]Op{
	"input": OpInput, "full": OpFull, "add": OpAdd, "sub": OpSub, "mul": OpMul,
	"relu": OpRelu, "positive": OpPositive, "transpose": OpTranspose,
	"matmul": OpMatmul, "sum": OpSum, "life": OpLife,
	"broadcast": OpBroadcast, "reshape": OpReshape,
}

var scalarVariant = map[Op]Op{OpAdd: OpAddScalar, OpSub: OpSubScalar, OpMul: OpMulScalar}

// decoder turns wire nodes into IR nodes. A broadcasting add, sub or mul
// becomes two IR nodes (a broadcast, then the op), so wire ids and IR ids
// differ after the first one: ids maps each wire id to its IR node, and
// errors found while decoding name the wire id.
type decoder struct {
	g       *Graph
	l       Limits
	ids     []NodeID       // IR node of each wire node decoded so far
	names   map[string]int // wire id of each named input
	storage int64
}

// node decodes wire node i and appends its IR node(s) to d.g.
func (d *decoder) node(i int, w *wireNode) *Error {
	n, err := d.nodeFromWire(i, w)
	if err != nil {
		return err
	}
	if n.Op == OpAdd || n.Op == OpSub || n.Op == OpMul {
		a, b := d.g.Nodes[n.Args[0]].Shape, d.g.Nodes[n.Args[1]].Shape
		if !a.Equal(b) { // PyTorch's trailing broadcast of b, checked by nodeFromWire
			d.g.Nodes = append(d.g.Nodes, Node{Op: OpBroadcast, Args: []NodeID{n.Args[1]}, Shape: a})
			n.Args[1] = NodeID(len(d.g.Nodes) - 1)
			if err := d.count(i, a); err != nil {
				return err
			}
		}
	}
	d.ids[i] = NodeID(len(d.g.Nodes))
	d.g.Nodes = append(d.g.Nodes, n)
	return nil
}

// count adds a node of shape s to the summed storage, against the limit.
func (d *decoder) count(i int, s Shape) *Error {
	d.storage += 4 * int64(s.Len())
	if d.storage > d.l.MaxStorageBytes {
		return Errorf(CodeLimitExceeded, i, "shape", "summed storage reaches %d bytes, over the limit of %d", d.storage, d.l.MaxStorageBytes)
	}
	return nil
}

func (d *decoder) nodeFromWire(i int, w *wireNode) (Node, *Error) {
	g, l := d.g, d.l
	bad := func(field, format string, a ...any) (Node, *Error) {
		return Node{}, Errorf(CodeInvalidGraph, i, field, format, a...)
	}
	if w.ID == nil {
		return bad("id", "missing")
	}
	if *w.ID != i {
		return bad("id", "id %d at position %d; ids must run 0..n-1 in order", *w.ID, i)
	}
	if w.Op == nil {
		return bad("op", "missing")
	}
	op, ok := wireOps[*w.Op]
	if !ok {
		return bad("op", "unknown op %q", *w.Op)
	}
	if v, ok := scalarVariant[op]; ok && w.Scalar != nil {
		if w.B != nil {
			return bad("scalar", "%s takes either b or scalar, not both", *w.Op)
		}
		op = v
	}
	info := op.Info()
	allowed := map[string]bool{"a": info.Args >= 1, "b": info.Args == 2,
		"shape": info.Shaped, "data": op == OpInput,
		"value": op == OpFull, "scalar": info.Scalar && op != OpFull}
	present := map[string]bool{"a": w.A != nil, "b": w.B != nil, "shape": w.Shape != nil,
		"data": w.Data != nil, "value": w.Value != nil, "scalar": w.Scalar != nil}
	for _, f := range []string{"a", "b", "shape", "data", "value", "scalar"} {
		if present[f] && !allowed[f] {
			return bad(f, "not allowed for op %s", *w.Op)
		}
		if !present[f] && allowed[f] {
			if f == "b" && (op == OpAdd || op == OpSub || op == OpMul) {
				return bad("b", "%s needs b (a tensor) or scalar (a number)", *w.Op)
			}
			return bad(f, "missing, op %s needs it", *w.Op)
		}
	}
	if w.Name != nil && op != OpInput {
		return bad("name", "not allowed for op %s; only inputs are named", *w.Op)
	}
	if w.Param != nil && op != OpInput {
		return bad("param", "not allowed for op %s; only inputs are parameters", *w.Op)
	}
	n := Node{Op: op}
	if w.Name != nil {
		if *w.Name == "" || len(*w.Name) > 256 {
			return bad("name", "name must be 1 to 256 bytes long")
		}
		if j, dup := d.names[*w.Name]; dup {
			return bad("name", "duplicate input name %q (also node %d)", *w.Name, j)
		}
		d.names[*w.Name] = i
		n.Name = *w.Name
	}
	if w.Param != nil {
		if *w.Param && w.Name == nil {
			return bad("param", "a parameter needs a name: its update is returned under it")
		}
		n.Param = *w.Param
	}
	for k, ref := range []*int{w.A, w.B}[:info.Args] {
		if *ref < 0 || *ref >= i {
			return bad(argField(k), "reference %d must point to an earlier node (0..%d)", *ref, i-1)
		}
		n.Args = append(n.Args, d.ids[*ref])
	}
	if w.Shape != nil {
		if len(w.Shape) > MaxRank {
			return bad("shape", "rank %d exceeds the maximum rank %d", len(w.Shape), MaxRank)
		}
		for k, d := range w.Shape {
			if d < 1 {
				return bad("shape", "dimension %d is %d; zero-sized and negative dimensions are not supported", k, d)
			}
		}
		if Shape(w.Shape).Elements(l.MaxElements) < 0 {
			return Node{}, Errorf(CodeLimitExceeded, i, "shape", "shape %v exceeds the limit of %d elements per tensor", Shape(w.Shape), l.MaxElements)
		}
		n.Shape = append(Shape{}, w.Shape...)
		if info.Args > 0 {
			if err := CheckTarget(i, op, g.Nodes[n.Args[0]].Shape, n.Shape); err != nil {
				return Node{}, err
			}
		}
	} else {
		args := make([]Shape, len(n.Args))
		for k, a := range n.Args {
			args[k] = g.Nodes[a].Shape
		}
		if op == OpAdd || op == OpSub || op == OpMul {
			if a, b := args[0], args[1]; !a.Equal(b) && IsSuffix(b, a) {
				args[1] = a // broadcast by node, below
			}
		}
		s, err := InferShape(i, op, args)
		if err != nil {
			if op == OpAdd || op == OpSub || op == OpMul {
				err.Msg += "; only b may broadcast, and its shape must be a trailing suffix of a's"
			}
			return Node{}, err
		}
		if s.Elements(l.MaxElements) < 0 {
			return Node{}, Errorf(CodeLimitExceeded, i, "shape", "result shape %v exceeds the limit of %d elements per tensor", s, l.MaxElements)
		}
		n.Shape = s
	}
	if err := d.count(i, n.Shape); err != nil {
		return Node{}, err
	}
	var err *Error
	switch {
	case w.Value != nil:
		n.Scalar, err = parseNumber(i, "value", w.Value)
	case w.Scalar != nil:
		n.Scalar, err = parseNumber(i, "scalar", w.Scalar)
	}
	if err != nil {
		return Node{}, err
	}
	if op == OpInput {
		n.Data, err = parseData(i, w.Data, n.Shape.Len())
		if err != nil {
			return Node{}, err
		}
	}
	return n, nil
}

// parseNumber parses one JSON number straight to the nearest float32, so a
// decimal is rounded once (not through float64).
func parseNumber(node int, field string, raw []byte) (float32, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, Errorf(CodeInvalidGraph, node, field, "expected a number, got %.20s", raw)
	}
	f, err := strconv.ParseFloat(string(raw), 32)
	if err != nil || math.IsInf(f, 0) {
		return 0, Errorf(CodeInvalidGraph, node, field, "%s is not a finite float32", raw)
	}
	return float32(f), nil
}

// parseData parses a JSON array of exactly want numbers. The JSON is already
// known to be well formed; only its shape and values are checked here.
func parseData(node int, raw []byte, want int) ([]float32, *Error) {
	p := bytes.TrimSpace(raw)
	if len(p) < 2 || p[0] != '[' {
		return nil, Errorf(CodeInvalidGraph, node, "data", "expected an array of numbers")
	}
	p = bytes.TrimSpace(p[1 : len(p)-1])
	out := make([]float32, 0, want)
	for len(p) > 0 {
		end := bytes.IndexByte(p, ',')
		if end < 0 {
			end = len(p)
		}
		if len(out) == want {
			return nil, Errorf(CodeInvalidGraph, node, "data", "has more than the %d values its shape needs", want)
		}
		v, err := parseNumber(node, "data", p[:end])
		if err != nil {
			err.Msg = fmt.Sprintf("value %d: %s", len(out), err.Msg)
			return nil, err
		}
		out = append(out, v)
		if end == len(p) {
			break
		}
		p = bytes.TrimSpace(p[end+1:])
		if len(p) == 0 {
			return nil, Errorf(CodeInvalidGraph, node, "data", "trailing comma")
		}
	}
	if len(out) != want {
		return nil, Errorf(CodeInvalidGraph, node, "data", "has %d values, shape needs %d", len(out), want)
	}
	return out, nil
}

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
}

type wireOutput struct {
	Name *string `json:"name"`
	ID   *int    `json:"id"`
}

// Decode reads one protocol v1 graph and validates it against limits (zero
// fields mean the defaults). Decoding is strict: unknown fields, wrong types,
// trailing data, non-finite numbers and values that overflow float32 are
// refused. Tensor data is parsed only after the node's shape has passed the
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
	g := &Graph{Nodes: make([]Node, len(w.Nodes))}
	var storage int64
	for i := range w.Nodes {
		n, err := nodeFromWire(g, i, &w.Nodes[i], l, &storage)
		if err != nil {
			return nil, err
		}
		g.Nodes[i] = n
	}
	for k, o := range w.Outputs {
		field := fmt.Sprintf("outputs[%d]", k)
		if o.Name == nil {
			return nil, Errorf(CodeInvalidGraph, -1, field+".name", "missing")
		}
		if o.ID == nil {
			return nil, Errorf(CodeInvalidGraph, -1, field+".id", "missing")
		}
		if *o.ID < 0 || *o.ID >= len(g.Nodes) {
			return nil, Errorf(CodeInvalidGraph, -1, field+".id", "output %q refers to node %d, graph has %d nodes", *o.Name, *o.ID, len(g.Nodes))
		}
		g.Outputs = append(g.Outputs, Output{Name: *o.Name, ID: NodeID(*o.ID)})
	}
	return g, nil
}

// wireOps maps a protocol op name to its IR op; binary ops with a scalar
// operand become the Op*Scalar variants.
var wireOps = map[string]Op{
	"input": OpInput, "full": OpFull, "add": OpAdd, "sub": OpSub, "mul": OpMul,
	"relu": OpRelu, "positive": OpPositive, "transpose": OpTranspose,
	"matmul": OpMatmul, "sum": OpSum, "life": OpLife,
}

var scalarVariant = map[Op]Op{OpAdd: OpAddScalar, OpSub: OpSubScalar, OpMul: OpMulScalar}

func nodeFromWire(g *Graph, i int, w *wireNode, l Limits, storage *int64) (Node, *Error) {
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
		"shape": op == OpInput || op == OpFull, "data": op == OpInput,
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
	n := Node{Op: op}
	for k, ref := range []*int{w.A, w.B}[:info.Args] {
		if *ref < 0 || *ref >= i {
			return bad(argField(k), "reference %d must point to an earlier node (0..%d)", *ref, i-1)
		}
		n.Args = append(n.Args, NodeID(*ref))
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
	} else {
		args := make([]Shape, len(n.Args))
		for k, a := range n.Args {
			args[k] = g.Nodes[a].Shape
		}
		s, err := InferShape(i, op, args)
		if err != nil {
			return Node{}, err
		}
		if s.Elements(l.MaxElements) < 0 {
			return Node{}, Errorf(CodeLimitExceeded, i, "shape", "result shape %v exceeds the limit of %d elements per tensor", s, l.MaxElements)
		}
		n.Shape = s
	}
	*storage += 4 * int64(n.Shape.Len())
	if *storage > l.MaxStorageBytes {
		return Node{}, Errorf(CodeLimitExceeded, i, "shape", "summed storage reaches %d bytes, over the limit of %d", *storage, l.MaxStorageBytes)
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

package onnx

import (
	"io"

	"github.com/gpucc/gpucc/ir"
)

// Signature is what a model declares of its graph's inputs and outputs,
// read without importing the graph: a caller shows it and asks for the
// shapes of dynamic dimensions before Load (the browser page does).
type Signature struct {
	// Inputs are the graph inputs that are not initializers, in order.
	Inputs []Port `json:"inputs"`
	// Outputs are the graph outputs, in order.
	Outputs []Port `json:"outputs"`
}

// Port is one graph input or output as the model declares it.
type Port struct {
	Name string `json:"name"`
	// Type is the element type ("float32", "int64", …), or a non-tensor
	// kind ("sequence", …); "" where the model gives none.
	Type string `json:"type"`
	// Shape holds the dimensions, -1 for a dynamic one; nil where the
	// model gives no shape (Load then needs one in Options.InputShapes).
	Shape []int `json:"shape"`
	// DimParams names each dynamic dimension by its dim_param ("batch"),
	// "" for a static or unnamed one; nil with Shape.
	DimParams []string `json:"dimParams,omitempty"`
}

// ReadSignature decodes the model from r within l (zero fields mean the
// defaults), as Load does, and returns its inputs and outputs. A
// malformed model is ir.CodeInvalidGraph and one over the limits
// ir.CodeLimitExceeded, as for Load; the ops are not looked at.
func ReadSignature(r io.Reader, l ir.Limits) (*Signature, error) {
	m, err := readModel(r, l.WithDefaults())
	if err != nil {
		return nil, err
	}
	return signatureOf(m, nil), nil
}

// readModel reads and decodes a model within l (with its defaults), as
// Load, Parse and ReadSignature do, refusing one without a graph.
func readModel(r io.Reader, l ir.Limits) (m *modelProto, err error) {
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, importPanic(p, "model")
		}
	}()
	raw, rerr := readAll(r, l.MaxGraphBytes)
	if rerr != nil {
		return nil, rerr
	}
	m, perr := decodeModel(raw, newBudget(l, len(raw)))
	if perr != nil {
		return nil, perr
	}
	if m.graph == nil {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "model.graph", "the model has no graph")
	}
	return m, nil
}

// signatureOf lists m's run-time inputs (not its initializers, which IR
// versions below 4 list as inputs too, nor those fixed in constants) and
// its outputs.
func signatureOf(m *modelProto, constants map[string]*Tensor) *Signature {
	inits := map[string]bool{}
	for k := range m.graph.inits {
		inits[m.graph.inits[k].name] = true
	}
	s := &Signature{Inputs: []Port{}, Outputs: []Port{}}
	for _, v := range m.graph.inputs {
		if !inits[v.name] && constants[v.name] == nil {
			s.Inputs = append(s.Inputs, port(v))
		}
	}
	for _, v := range m.graph.outputs {
		s.Outputs = append(s.Outputs, port(v))
	}
	return s
}

func port(v valueInfo) Port {
	p := Port{Name: v.name}
	switch {
	case v.nonTensor != "":
		p.Type = v.nonTensor
	case v.hasType:
		p.Type = DataType(v.elemType).String()
	}
	if v.hasShape {
		p.Shape = staticDims(v.dims)
		p.DimParams = make([]string, len(v.dims))
		for k, d := range v.dims {
			p.DimParams[k] = d.param
		}
	}
	return p
}

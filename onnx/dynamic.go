package onnx

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// Model is an ONNX model decoded once and kept with its symbolic
// dimensions (dim_param: "batch", "sequence"), to be imported at each
// concrete shape it is run with (Specialize). gpucc's graphs are static:
// every shape, index and mask folds at import, so a graph is the model
// specialized to one set of input shapes; gpucc.Dynamic caches the
// compiled executable of each.
type Model struct {
	m    *modelProto
	opts Options
	l    ir.Limits
	sig  *Signature
}

// Parse decodes the model from r within opts.Limits, as Load does, and
// keeps it for Specialize; opts.InputShapes binds no dimension here (each
// Specialize gives every shape).
func Parse(r io.Reader, opts Options) (*Model, error) {
	l := opts.Limits.WithDefaults()
	m, err := readModel(r, l)
	if err != nil {
		return nil, err
	}
	sig := signatureOf(m, opts.Constants)
	opts.InputShapes = nil
	return &Model{m: m, opts: opts, l: l, sig: sig}, nil
}

// Signature returns the model's run-time inputs and outputs as declared:
// Shape -1 and DimParams name its symbolic dimensions.
func (m *Model) Signature() *Signature { return m.sig }

// Specialize imports the model with every run-time input bound to the
// shape shapes gives it (an input left out keeps its static shape). A
// dimension the model fixes must be given as it is, and every dimension
// of one dim_param must get one size (invalid_input otherwise), so that a
// specialization means what the model means. The graph is Load's at
// those shapes, bit for bit.
func (m *Model) Specialize(ctx context.Context, shapes map[string][]int) (*ir.Graph, error) {
	bound := map[string]int{}
	for _, in := range m.sig.Inputs {
		s, ok := shapes[in.Name]
		if !ok || in.Shape == nil {
			continue
		}
		if len(s) != len(in.Shape) {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, in.Name, "input %s has rank %d in the model; given shape %v", ir.Quote(in.Name), len(in.Shape), s)
		}
		for k, d := range s {
			p := in.DimParams[k]
			if p == "" {
				continue // a static dimension, checked by the import; an unnamed dynamic one binds alone
			}
			if b, ok := bound[p]; ok && b != d {
				return nil, ir.Errorf(ir.CodeInvalidInput, -1, in.Name, "dimension %s is %d in input %s and %d before", ir.Quote(p), d, ir.Quote(in.Name), b)
			}
			bound[p] = d
		}
	}
	opts := m.opts
	opts.InputShapes = maps.Clone(shapes)
	for name := range opts.InputShapes {
		if !slices.ContainsFunc(m.sig.Inputs, func(p Port) bool { return p.Name == name }) {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, "input_shapes", "the model has no run-time input named %s", ir.Quote(name))
		}
	}
	g, err := importModel(ctx, m.m, opts, m.l)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Dynamic reports whether some run-time input has a dynamic dimension.
func (m *Model) Dynamic() bool {
	for _, in := range m.sig.Inputs {
		if in.Shape == nil || slices.Contains(in.Shape, -1) {
			return true
		}
	}
	return false
}

// String names the model's symbolic dimensions, for --explain.
func (m *Model) String() string {
	var dims []string
	for _, in := range m.sig.Inputs {
		for k, d := range in.Shape {
			if d < 0 {
				dims = append(dims, fmt.Sprintf("%s[%d]=%s", in.Name, k, in.DimParams[k]))
			}
		}
	}
	return fmt.Sprintf("onnx model, dynamic dimensions %v", dims)
}

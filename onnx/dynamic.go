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
	g, err := m.specialize(ctx, shapes, m.opts.Constants)
	if err != nil {
		return nil, err.err
	}
	return g, nil
}

// specializeError is a failed specialization and, when it failed for one,
// the run-time input whose values decide a shape (importer.wants).
type specializeError struct {
	err   error
	wants string
}

// specialize is Specialize with consts as the model's constants.
func (m *Model) specialize(ctx context.Context, shapes map[string][]int, consts map[string]*Tensor) (*ir.Graph, *specializeError) {
	fail := func(err error) (*ir.Graph, *specializeError) { return nil, &specializeError{err: err} }
	bound := map[string]int{}
	for _, in := range m.sig.Inputs {
		s, ok := shapes[in.Name]
		if !ok || in.Shape == nil {
			continue
		}
		if len(s) != len(in.Shape) {
			return fail(ir.Errorf(ir.CodeInvalidInput, -1, in.Name, "input %s has rank %d in the model; given shape %v", ir.Quote(in.Name), len(in.Shape), s))
		}
		for k, d := range s {
			p := in.DimParams[k]
			if p == "" {
				continue // a static dimension, checked by the import; an unnamed dynamic one binds alone
			}
			if b, ok := bound[p]; ok && b != d {
				return fail(ir.Errorf(ir.CodeInvalidInput, -1, in.Name, "dimension %s is %d in input %s and %d before", ir.Quote(p), d, ir.Quote(in.Name), b))
			}
			bound[p] = d
		}
	}
	opts := m.opts
	opts.InputShapes = maps.Clone(shapes)
	opts.Constants = consts
	for name := range opts.InputShapes {
		if !slices.ContainsFunc(m.sig.Inputs, func(p Port) bool { return p.Name == name }) {
			return fail(ir.Errorf(ir.CodeInvalidInput, -1, "input_shapes", "the model has no run-time input named %s", ir.Quote(name)))
		}
	}
	g, wants, err := importWants(ctx, m.m, opts, m.l)
	if err != nil {
		return nil, &specializeError{err: err, wants: wants}
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

// SpecializeValues is Specialize for a caller that holds the run's data:
// values gives each run-time input's tensor (its shape binds the input as
// shapes would). The graph inputs whose values decide a shape (Reshape's
// shape, Slice's starts, Range's limit, an axes or pads input, …: a graph
// has static shapes) are read from values and fixed as constants, as a
// dynamic dimension is bound by the data; every other input stays a
// run-time input, holding its values where a placeholder of zeros would
// be (Options.InputValues), never read to fold. An empty input holds no values
// and is fixed too (gpucc's run-time tensors are not empty). Integer and
// bool outputs keep the model's dtype (Options.TypedOutputs). It returns
// the graph and the names of the inputs fixed, whose data the caller does
// not bind again (and whose values key a cache of specializations, as
// shapes do).
func (m *Model) SpecializeValues(ctx context.Context, values map[string]*Tensor) (*ir.Graph, []string, error) {
	shapes := map[string][]int{}
	consts := maps.Clone(m.opts.Constants)
	typed := *m
	typed.opts.TypedOutputs = true
	typed.opts.InputValues = values // held where zeros would be (Options.InputValues)
	m = &typed
	if consts == nil {
		consts = map[string]*Tensor{}
	}
	var fixed []string
	for _, in := range m.sig.Inputs {
		t := values[in.Name]
		switch {
		case t == nil:
		case t.Len() == 0:
			consts[in.Name] = t
			fixed = append(fixed, in.Name)
		default:
			shapes[in.Name] = slices.Clone(t.Shape)
		}
	}
	for name := range values {
		if !slices.ContainsFunc(m.sig.Inputs, func(p Port) bool { return p.Name == name }) {
			return nil, nil, ir.Errorf(ir.CodeInvalidInput, -1, "inputs", "the model has no run-time input named %s", ir.Quote(name))
		}
	}
	for {
		g, err := m.specialize(ctx, shapes, consts)
		if err == nil {
			return g, fixed, nil
		}
		if err.wants == "" || values[err.wants] == nil || consts[err.wants] != nil {
			return nil, nil, err.err
		}
		consts[err.wants] = values[err.wants]
		delete(shapes, err.wants)
		fixed = append(fixed, err.wants)
	}
}

// WithConstants returns a copy of m whose specializations fix the inputs
// named in consts to their values, as Options.Constants does at Parse (a
// merged decoder's use_cache_branch, say); m is unchanged.
func (m *Model) WithConstants(consts map[string]*Tensor) *Model {
	c := *m
	c.opts.Constants = maps.Clone(m.opts.Constants)
	if c.opts.Constants == nil {
		c.opts.Constants = map[string]*Tensor{}
	}
	maps.Copy(c.opts.Constants, consts)
	return &c
}

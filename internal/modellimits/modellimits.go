// Package modellimits sizes the host limits to an imported ONNX model, for
// every front end that imports one (gpucc's commands, the page): one rule,
// so that a model the command line runs is not refused by the page.
//
// A protocol v1 graph runs under the seed's small defaults
// (ir.DefaultLimits), as serve's and the page's guests do. An .onnx
// model is sized instead, for every limit the caller did not set (a limit
// the user sets is a cap that holds for import and run):
//
//   - it is imported under caps that grow with its size S, the model's
//     bytes plus 4 bytes an element of its inputs' shapes (given or
//     declared): 4·S elements per tensor, 256·S bytes of storage (its
//     constants and every value), 10^5·S operations, S/4 nodes, S/64
//     outputs and S attribute values, each at least the default (Caps), so
//     a small crafted model is held to the defaults and a model of 8 MB to
//     2 GiB;
//   - it then runs under what it needs (ir.Fit: ir.FitHeadroom times its
//     nodes, largest tensor, storage, operations, outputs and attribute
//     values), within those caps and never below the defaults.
package modellimits

import (
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// MaxModelBytes bounds the model read where the caller sets no graph
// bytes limit: protobuf's own 2 GiB.
const MaxModelBytes = 2 << 30

// Caps returns the caps for a model of s bytes (with its given inputs):
// each field scaled from s as the package doc says, at least the default.
func Caps(s int64) ir.Limits {
	d := ir.DefaultLimits()
	return ir.Limits{
		MaxNodes:        max(d.MaxNodes, int(min(s/4, 1<<24))),
		MaxElements:     max(d.MaxElements, ir.SatMul(4, s)),
		MaxStorageBytes: max(d.MaxStorageBytes, ir.SatMul(256, s)),
		MaxOps:          max(d.MaxOps, ir.SatMul(100_000, s)),
		MaxOutputs:      max(d.MaxOutputs, int(min(s/64, 1<<16))),
		MaxOutputBytes:  max(d.MaxStorageBytes, ir.SatMul(256, s)),
		MaxGraphBytes:   MaxModelBytes,
		MaxAttrValues:   max(d.MaxAttrValues, int(min(s, 1<<24))),
	}
}

// sized are the limits a model sizes: every one but the code per kernel (a
// property of the compiler and the driver, not of the model) and the
// graph's bytes (the model's own size is read under its cap).
var sized = map[string]bool{"MaxNodes": true, "MaxElements": true, "MaxStorageBytes": true, "MaxOps": true,
	"MaxOutputs": true, "MaxOutputBytes": true, "MaxAttrValues": true}

// Unset returns every Limits field of ir.LimitFlags: the set of a caller
// that lets the model size them all (the page, which has no flags).
func Unset() map[string]bool {
	unset := map[string]bool{}
	for _, r := range ir.LimitFlags {
		unset[r.Field] = true
	}
	return unset
}

// With returns limits with each field in unset at caps' value.
func With(limits, caps ir.Limits, unset map[string]bool) ir.Limits {
	for _, r := range ir.LimitFlags {
		if !unset[r.Field] {
			continue
		}
		switch p := r.Of(&limits).(type) {
		case *int:
			*p = *r.Of(&caps).(*int)
		case *int64:
			*p = *r.Of(&caps).(*int64)
		}
	}
	return limits
}

// Loader imports the model raw under limits: onnx.Load of onnx.Bytes(raw)
// with the caller's options (input shapes, constants, specialization), so
// that the import holds the model's bytes once.
type Loader func(raw []byte, limits ir.Limits) (*ir.Graph, error)

// Load imports the model raw (read within limits' MaxGraphBytes, or
// MaxModelBytes where unset names it, plus one byte, so that load reports
// a model over it) with load, each Limits field named in unset sized to the model, and
// returns the graph and the limits to run it under: limits with those
// fields fitted (ir.Fit). shapes are the input shapes given (by name), which
// count in the model's size in place of the declared ones. The other
// fields of limits are caps the model is imported and run under as given.
func Load(raw []byte, limits ir.Limits, unset map[string]bool, shapes map[string][]int, load Loader) (*ir.Graph, ir.Limits, error) {
	if len(unset) == 0 {
		g, err := load(raw, limits)
		return g, limits, err
	}
	s, err := Size(raw, shapes, With(limits, Caps(int64(len(raw))), unset))
	if err != nil {
		return nil, ir.Limits{}, err
	}
	caps := With(limits, Caps(s), unset)
	g, err := load(raw, caps)
	if err != nil {
		return nil, ir.Limits{}, err
	}
	fit := map[string]bool{}
	for f := range unset {
		fit[f] = sized[f]
	}
	return g, ir.Fit(g, limits.WithDefaults(), caps, fit), nil
}

// Size is S: the model's bytes plus 4 bytes an element of each input's
// shape, given (shapes) or declared static in the model.
func Size(raw []byte, shapes map[string][]int, l ir.Limits) (int64, error) {
	sig, err := onnx.ReadSignature(onnx.Bytes(raw), l)
	if err != nil {
		return 0, err
	}
	s := int64(len(raw))
	for _, in := range sig.Inputs {
		shape, ok := shapes[in.Name]
		if !ok {
			shape = in.Shape
		}
		n := int64(4)
		for _, d := range shape {
			n = ir.SatMul(n, int64(max(d, 1))) // a dynamic dimension not given counts 1
		}
		s = ir.SatAdd(s, n)
	}
	return s, nil
}

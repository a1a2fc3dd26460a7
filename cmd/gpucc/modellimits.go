package main

import (
	"bytes"
	"flag"
	"io"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// Model-sized limits. A protocol v1 graph runs under the seed's small
// defaults (ir.DefaultLimits), as serve's guests do. An .onnx model that
// a command reads from a file is sized instead, for every limit no flag
// set (a flag the user gives is a cap that holds for import and run):
//
//   - it is imported under caps that grow with its size S, the model's
//     bytes plus 4 bytes an element of its inputs' shapes (given or
//     declared): 4·S
//     elements per tensor, 256·S bytes of storage (its constants and
//     every value), 10^5·S operations, S/4 nodes, S/64 outputs and S
//     attribute values, each at least the default (modelCaps), so a small
//     crafted model is held to the defaults and a model of 8 MB to 2 GiB;
//   - it then runs under what it needs (ir.Fit: ir.FitHeadroom times its
//     nodes, largest tensor, storage, operations, outputs and attribute
//     values), within those caps and never below the defaults.

// modelCaps returns the caps for a model of s bytes (with its given
// inputs): each field scaled from s as above, at least the default.
func modelCaps(s int64) ir.Limits {
	d := ir.DefaultLimits()
	return ir.Limits{
		MaxNodes:        max(d.MaxNodes, int(min(s/4, 1<<24))),
		MaxElements:     max(d.MaxElements, ir.SatMul(4, s)),
		MaxStorageBytes: max(d.MaxStorageBytes, ir.SatMul(256, s)),
		MaxOps:          max(d.MaxOps, ir.SatMul(100_000, s)),
		MaxOutputs:      max(d.MaxOutputs, int(min(s/64, 1<<16))),
		MaxOutputBytes:  max(d.MaxStorageBytes, ir.SatMul(256, s)),
		MaxGraphBytes:   maxModelBytes,
		MaxAttrValues:   max(d.MaxAttrValues, int(min(s, 1<<24))),
	}
}

// maxModelBytes bounds the model read where --max-graph-bytes is not
// given: protobuf's own 2 GiB.
const maxModelBytes = 2 << 30

// sizedFields are the limits a model sizes: every one but the code per
// kernel (a property of the compiler and the driver, not of the model)
// and the graph's bytes (the model's own size is read under its cap).
var sizedFields = map[string]bool{"MaxNodes": true, "MaxElements": true, "MaxStorageBytes": true, "MaxOps": true,
	"MaxOutputs": true, "MaxOutputBytes": true, "MaxAttrValues": true}

// cliLimits and cliFlags are the limits of the command being run and its
// flag set (limitFlags records them), so that loadONNX can size the
// limits no flag set and the command runs under them.
var (
	cliLimits *ir.Limits
	cliFlags  *flag.FlagSet
)

// unsetLimits returns the Limits fields whose flags the command line did
// not set; none when no command's flags are recorded.
func unsetLimits() map[string]bool {
	if cliFlags == nil {
		return nil
	}
	set := map[string]bool{}
	cliFlags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	unset := map[string]bool{}
	for _, r := range ir.LimitFlags {
		if !set[r.Flag] {
			unset[r.Field] = true
		}
	}
	return unset
}

// importCaps returns limits with each unset field at caps' value.
func importCaps(limits, caps ir.Limits, unset map[string]bool) ir.Limits {
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

// loadSized imports the .onnx model from r with the limits no flag set
// sized to it, and leaves those limits in cliLimits for the run.
func loadSized(r io.Reader, limits ir.Limits) (*ir.Graph, error) {
	unset := unsetLimits()
	if len(unset) == 0 {
		return loadONNX(r, limits)
	}
	read := limits
	if unset["MaxGraphBytes"] {
		read.MaxGraphBytes = maxModelBytes
	}
	raw, err := readModel(r, read)
	if err != nil {
		return nil, err
	}
	s, err := modelSize(raw, importCaps(limits, modelCaps(int64(len(raw))), unset))
	if err != nil {
		return nil, err
	}
	caps := importCaps(limits, modelCaps(s), unset)
	caps.MaxGraphBytes = read.MaxGraphBytes // Load refuses a model past it
	g, err := loadONNX(bytes.NewReader(raw), caps)
	if err != nil {
		return nil, err
	}
	fit := map[string]bool{}
	for f := range unset {
		fit[f] = sizedFields[f]
	}
	sized := ir.Fit(g, limits.WithDefaults(), caps, fit)
	if cliLimits != nil {
		*cliLimits = sized
	}
	return g, nil
}

// modelSize is S: the model's bytes plus 4 bytes an element of each
// input's shape, given (--input-shape) or declared static in the model.
func modelSize(raw []byte, l ir.Limits) (int64, error) {
	sig, err := onnx.ReadSignature(bytes.NewReader(raw), l)
	if err != nil {
		return 0, err
	}
	s := int64(len(raw))
	for _, in := range sig.Inputs {
		shape, ok := inputShapes[in.Name]
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

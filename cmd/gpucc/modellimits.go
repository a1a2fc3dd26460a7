package main

import (
	"flag"
	"io"
	"os"

	"github.com/gpucc/gpucc/internal/modellimits"
	"github.com/gpucc/gpucc/ir"
)

// Model-sized limits (internal/modellimits, the rule the page shares): a
// protocol v1 graph runs under the seed's small defaults, as serve's
// guests do; an .onnx model that a command reads is imported under caps
// that grow with its size and run under what it needs, for every limit no
// flag set. A flag the user gives is a cap that holds for import and run.

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

// loadSized imports the .onnx model from r with the limits no flag set
// sized to it, and leaves those limits in cliLimits for the run.
func loadSized(r io.Reader, limits ir.Limits) (*ir.Graph, error) {
	raw, err := readModel(r, readLimits(limits))
	if err != nil {
		return nil, err
	}
	return loadRaw(raw, limits)
}

// readLimits are the limits an .onnx model's bytes are read under: where
// --max-graph-bytes is not set, up to modellimits.MaxModelBytes (the
// import then checks them against the limit sized to the model).
func readLimits(limits ir.Limits) ir.Limits {
	if unsetLimits()["MaxGraphBytes"] {
		limits.MaxGraphBytes = modellimits.MaxModelBytes
	}
	return limits
}

// readModelFile reads the .onnx model at path as loadSized reads it: a
// file that cannot be opened is an io error.
func readModelFile(path string, limits ir.Limits) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, ir.Errorf(ir.CodeIO, -1, "", "%v", err)
	}
	defer f.Close()
	return readModel(f, readLimits(limits))
}

// loadRaw imports the .onnx model raw (read by readModel under
// readLimits) as loadSized does.
func loadRaw(raw []byte, limits ir.Limits) (*ir.Graph, error) {
	unset := unsetLimits()
	g, sized, err := modellimits.Load(raw, limits, unset, inputShapes, loadONNX)
	if err != nil {
		return nil, err
	}
	if cliLimits != nil {
		*cliLimits = sized
	}
	return g, nil
}

// modelCaps, importCaps and maxModelBytes are modellimits' rule for a
// command that sizes a model itself (generate.go: a model and its cache).
var modelCaps = modellimits.Caps

func importCaps(limits, caps ir.Limits, unset map[string]bool) ir.Limits {
	return modellimits.With(limits, caps, unset)
}

const maxModelBytes = modellimits.MaxModelBytes

// modelInputElements bounds the values of one --input read before the
// .onnx model raw is imported (its data gives the input's shape):
// where --max-elements is not set, the elements per tensor that the
// model's size allows (modellimits.Caps of its bytes and its inputs'
// declared or given shapes, as the page bounds them), never below the
// limit; the import then checks each against the model.
func modelInputElements(raw []byte, limits ir.Limits) int64 {
	n := limits.WithDefaults().MaxElements
	if !unsetLimits()["MaxElements"] || raw == nil {
		return n // a model that could not be read: the import reports it
	}
	s, err := modellimits.Size(raw, inputShapes, modellimits.With(limits, modellimits.Caps(int64(len(raw))), unsetLimits()))
	if err != nil {
		return n
	}
	return max(n, modellimits.Caps(s).MaxElements)
}

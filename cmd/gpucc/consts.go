package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/gpucc/gpucc/internal/onnxconst"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// constSpecs is the repeatable --const NAME=VALUE or NAME=FILE.npy flag
// (registered with --input-shape): it fixes an .onnx model's input NAME
// at import, as onnx.Options.Constants does, so that what is computed
// from it folds (a sample rate, a flag, an If's condition). VALUE is a
// comma-separated list of numbers, or true and false, in the model's
// order for the input's declared type and shape; a .npy file gives its
// own dtype, which must be the input's, and shape.
var constSpecs = map[string]string{}

type constFlag struct{}

func (constFlag) String() string { return "" }

func (constFlag) Set(s string) error {
	name, v, ok := strings.Cut(s, "=")
	if !ok || name == "" || v == "" {
		return fmt.Errorf("want NAME=VALUE or NAME=FILE.npy, got %q", s)
	}
	if _, dup := constSpecs[name]; dup {
		return fmt.Errorf("input %q given twice", name)
	}
	constSpecs[name] = v
	return nil
}

func constFlags(fs *flag.FlagSet) {
	constSpecs = map[string]string{}
	fs.Var(constFlag{}, "const", "for an .onnx model: fix input NAME at import, as NAME=V0,V1,… (numbers or true/false, the input's declared type and shape) or NAME=FILE.npy (repeatable)")
}

// onnxConstants reads the model raw's signature and makes a constant of
// each --const for its input: the declared element type, and the
// declared static shape (a list) or the .npy file's shape (which Load
// checks against the model's).
func onnxConstants(raw []byte, limits ir.Limits) (map[string]*onnx.Tensor, error) {
	return constantsFor(raw, limits, constSpecs, true)
}

// constantsFor is onnxConstants of specs (NAME to VALUE); files says
// whether a VALUE may name a .npy file (serve's query may not). The page
// reads its constants with the same package (internal/onnxconst).
func constantsFor(raw []byte, limits ir.Limits, specs map[string]string, files bool) (map[string]*onnx.Tensor, error) {
	var file onnxconst.File
	if files {
		file = npyConstant
	}
	return onnxconst.Parse(raw, limits, specs, file)
}

// npyConstant reads the .npy file path as a constant of type dt.
func npyConstant(path string, dt onnx.DataType, maxElements int64, field string) (*onnx.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, ir.Errorf(ir.CodeIO, -1, field, "%v", err)
	}
	defer f.Close()
	return onnxconst.Npy(f, path, dt, maxElements, field)
}

// readModel reads an ONNX model within the limits' graph bytes (one more
// byte, so that Load reports a model over them). A file's bytes are read
// into one buffer of its size, not io.ReadAll's doubling series: for
// EfficientNet-B0's 21 MB, 15 copies and 42 MB more allocated and cleared,
// a fifth of gpucc run's import (its CPU profile, 2026-12-05).
func readModel(r io.Reader, limits ir.Limits) ([]byte, error) {
	max := limits.WithDefaults().MaxGraphBytes
	var buf bytes.Buffer
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() <= max {
			buf.Grow(int(fi.Size()) + bytes.MinRead)
		}
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, ir.SatAdd(max, 1))); err != nil {
		return nil, ir.Errorf(ir.CodeIO, -1, "", "%v", err)
	}
	return buf.Bytes(), nil
}

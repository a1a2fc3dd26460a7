package native

import (
	"context"
	"encoding/json"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// This file builds everywhere, also where the backend cannot run: the
// generator of `gpucc build` exports C wherever it runs.

func init() { backend.RegisterExporter("native", exporter{}) }

// exporter makes the native backend's artifact: the C unit of the program
// (codegen/c), as JSON; and its source as kernels.c.
type exporter struct{}

func (exporter) Export(_ context.Context, p *ir.Sealed) (*backend.Export, error) {
	u, err := c.Target{}.Emit(p)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	return &backend.Export{Prebuilt: b, Files: []backend.File{{Name: "kernels.c", Data: []byte(u.Source)}}}, nil
}

func (exporter) Check(p *ir.Sealed, b []byte) error {
	_, err := prebuiltUnit(b, p.Program())
	return err
}

// prebuiltUnit decodes a plan's native artifact, refusing one that does
// not fit p (invalid_graph).
func prebuiltUnit(b []byte, p *ir.Program) (*c.Unit, error) {
	var u c.Unit
	if err := json.Unmarshal(b, &u); err != nil {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "plan", "the plan's C unit does not decode: %v", err)
	}
	if err := u.Check(p); err != nil {
		return nil, err
	}
	return &u, nil
}

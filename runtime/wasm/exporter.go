package wasm

import (
	"context"
	"encoding/json"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

func init() { backend.RegisterExporter("wasm", exporter{}) }

// artifact is the wasm backend's prebuilt artifact: the C unit of the
// program and the module Clang built from it.
type artifact struct {
	Unit   *c.Unit
	Module []byte
}

// exporter makes the wasm backend's artifact, as JSON, and the module as
// kernels.wasm. It needs Clang (backend_unavailable without it).
type exporter struct{}

func (exporter) Export(ctx context.Context, p *ir.Sealed) (*backend.Export, error) {
	u, err := c.Target{}.Emit(p)
	if err != nil {
		return nil, err
	}
	mod, err := BuildModule(ctx, u.Source)
	if err != nil {
		return nil, fail(ir.CodeBackendUnavailable, err)
	}
	b, err := json.Marshal(artifact{Unit: u, Module: mod})
	if err != nil {
		return nil, err
	}
	return &backend.Export{Prebuilt: b, Files: []backend.File{{Name: "kernels.wasm", Data: mod}}}, nil
}

func (exporter) Check(p *ir.Sealed, b []byte) error {
	_, err := prebuilt(b, p.Program())
	return err
}

// prebuilt decodes a plan's wasm artifact, refusing one that does not fit
// p (invalid_graph).
func prebuilt(b []byte, p *ir.Program) (*artifact, error) {
	var a artifact
	if err := json.Unmarshal(b, &a); err != nil || a.Unit == nil || len(a.Module) == 0 {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "plan", "the plan's wasm module does not decode (%v)", err)
	}
	if err := a.Unit.Check(p); err != nil {
		return nil, err
	}
	return &a, nil
}

package webgpu

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// This file builds everywhere (no cgo, no browser): the generator of
// `gpucc build` exports WGSL wherever it runs.

func init() { backend.RegisterExporter("webgpu", exporter{}) }

// exporter makes the webgpu backend's artifact: the exact WGSL shaders of
// every kernel, without their Params (the runtime computes them from the
// program), as JSON; and each shader as a file.
type exporter struct{}

func (exporter) Export(_ context.Context, p *ir.Sealed) (*backend.Export, error) {
	shaders, err := wgsl.Target{}.Emit(p)
	if err != nil {
		return nil, err
	}
	ex := &backend.Export{}
	for i, s := range shaders {
		name := s.Name + ".wgsl"
		kinds := make([]string, len(s.Bindings))
		for j, k := range s.Bindings {
			kinds[j] = [...]string{"read-only-storage", "storage", "uniform"}[k]
		}
		ex.Files = append(ex.Files, backend.File{Name: name, Data: []byte(s.Source)})
		ex.Kernels = append(ex.Kernels, backend.KernelDesc{File: name, Source: []byte(s.Source),
			Workgroup: s.Workgroup, Dispatch: s.Groups, Bindings: kinds})
		shaders[i].Params = nil
	}
	if ex.Prebuilt, err = json.Marshal(shaders); err != nil {
		return nil, err
	}
	return ex, nil
}

func (exporter) Check(p *ir.Sealed, b []byte) error {
	_, err := prebuiltShaders(b, p.Program())
	return err
}

// prebuiltShaders decodes a plan's webgpu artifact into the shaders of p's
// kernels, each with its Params, refusing one that does not fit p
// (invalid_graph).
func prebuiltShaders(b []byte, p *ir.Program) ([]codegen.Shader, error) {
	var shaders []codegen.Shader
	if err := json.Unmarshal(b, &shaders); err != nil {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "plan", "the plan's webgpu kernels do not decode: %v", err)
	}
	if len(shaders) != len(p.Kernels) {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "plan", "%s", fmt.Sprintf("the plan carries %d WGSL shaders for %d kernels", len(shaders), len(p.Kernels)))
	}
	for i := range shaders {
		shaders[i].Params = wgsl.Params(&p.Kernels[i])
	}
	return shaders, nil
}

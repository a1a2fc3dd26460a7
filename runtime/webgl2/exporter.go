package webgl2

import (
	"context"

	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// This file builds everywhere: the generator of `gpucc build` exports
// GLSL wherever it runs.

func init() { backend.RegisterExporter("webgl2", exporter{}) }

// exporter writes each WebGL2 pass of the program as a .glsl file. The
// backend takes no prebuilt artifact: it draws the passes it generates.
type exporter struct{}

func (exporter) Export(_ context.Context, p *ir.Sealed) (*backend.Export, error) {
	pl, err := glsl.Target{}.Emit(p)
	if err != nil {
		return nil, err
	}
	ex := &backend.Export{}
	for _, ps := range pl.Passes {
		ex.Files = append(ex.Files, backend.File{Name: ps.Name + ".glsl", Data: []byte(ps.Source)})
	}
	return ex, nil
}

// Check refuses any artifact: the backend takes none.
func (exporter) Check(_ *ir.Sealed, b []byte) error {
	return ir.Errorf(ir.CodeInvalidGraph, -1, "plan", "the webgl2 backend takes no prebuilt artifact (%d bytes)", len(b))
}

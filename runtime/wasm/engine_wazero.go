package wasm

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// wazeroEngine runs modules with wazero: its compiler where it has one
// (amd64, arm64), else its interpreter.
type wazeroEngine struct {
	rt       wazero.Runtime
	compiler bool
}

func newWazero(compiler bool) *wazeroEngine {
	cfg := wazero.NewRuntimeConfigInterpreter()
	if compiler {
		cfg = wazero.NewRuntimeConfigCompiler()
	}
	return &wazeroEngine{compiler: compiler, rt: wazero.NewRuntimeWithConfig(context.Background(), cfg.WithMemoryLimitPages(maxPages))}
}

func (e *wazeroEngine) adapter() string {
	mode := "interpreter"
	if e.compiler {
		mode = "compiler"
	}
	return fmt.Sprintf("wazero %s (%s)", wazeroVersion, mode)
}

func (e *wazeroEngine) close() { e.rt.Close(context.Background()) }

// instantiate compiles wasm with wazero and instantiates it once.
func (e *wazeroEngine) instantiate(ctx context.Context, name string, wasm []byte) (instance, error) {
	compiled, err := e.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("wazero compile: %w", err)
	}
	inst, err := e.rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(name))
	if err != nil {
		compiled.Close(ctx)
		return nil, fmt.Errorf("wazero instantiate: %w", err)
	}
	return &wazeroInstance{compiled: compiled, inst: inst}, nil
}

type wazeroInstance struct {
	compiled wazero.CompiledModule
	inst     api.Module
}

func (w *wazeroInstance) memory() memory {
	if m := w.inst.Memory(); m != nil {
		return m
	}
	return nil
}

func (w *wazeroInstance) export(name string) function {
	if f := w.inst.ExportedFunction(name); f != nil {
		return f
	}
	return nil
}

// close releases the instance and its compiled code: closing an instance
// alone leaves the code in the wazero runtime until the runtime closes.
func (w *wazeroInstance) close(ctx context.Context) {
	w.inst.Close(ctx)
	w.compiled.Close(ctx)
}

package wasm

import "context"

// engine compiles and instantiates the backend's modules: wazero outside
// the browser (engine_wazero.go), the page's own WebAssembly, V8 in
// Chromium, inside it (engine_js.go). Everything else of the backend (the
// module caches, the layout of buffers in linear memory, the calls) is the
// same code on both.
type engine interface {
	instantiate(ctx context.Context, name string, wasm []byte) (instance, error)
	// adapter names the engine for backend.Info ("wazero v1.12.0 (compiler)").
	adapter() string
	close()
}

// instance is one instantiated module.
type instance interface {
	// memory is the module's exported linear memory; nil when it has none.
	memory() memory
	// export is the exported function name; nil when there is none.
	export(name string) function
	// close releases the instance and its compiled code.
	close(ctx context.Context)
}

// memory is a module's linear memory, as wazero's api.Memory has it.
type memory interface {
	Size() uint32
	Grow(deltaPages uint32) (previousPages uint32, ok bool)
	// Read returns n bytes at offset: a view of the memory on wazero, a
	// copy in the page; callers copy out of it before the next call.
	Read(offset, n uint32) ([]byte, bool)
	Write(offset uint32, b []byte) bool
	ReadUint32Le(offset uint32) (uint32, bool)
}

// function is an exported function, as wazero's api.Function has it.
type function interface {
	Call(ctx context.Context, params ...uint64) ([]uint64, error)
}

module example.com/aot

go 1.25.0

require github.com/gpucc/gpucc v0.0.0

require (
	github.com/cogentcore/webgpu v0.23.0 // indirect
	github.com/dave/jennifer v1.7.1 // indirect
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/tetratelabs/wazero v1.12.0 // indirect
	golang.org/x/sys v0.44.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/gpucc/gpucc => ../..

tool github.com/gpucc/gpucc/cmd/gpucc

module github.com/gpucc/gpucc

go 1.26.8

require (
	github.com/cogentcore/webgpu v0.23.0
	github.com/google/go-cmp v0.7.0
)

require (
	github.com/tetratelabs/wazero v1.12.0 // indirect
	golang.org/x/sys v0.44.0 // indirect
)

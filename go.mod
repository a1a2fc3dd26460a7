module github.com/gpucc/gpucc

go 1.25.0

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/cogentcore/webgpu v0.23.0
	github.com/dave/jennifer v1.7.1
	github.com/ebitengine/purego v0.11.3
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875
	github.com/google/go-cmp v0.7.0
	github.com/tetratelabs/wazero v1.12.0
	golang.org/x/sys v0.44.0
	google.golang.org/protobuf v1.36.12
)

require github.com/chromedp/cdproto v0.159.0 // indirect

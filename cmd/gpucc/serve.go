package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/web"
)

func init() {
	commands["serve"] = command{summary: "serve the browser demo (webgpu, webgl2, cpu in the page)", run: serveCmd}
}

// serveCmd serves web's page, gpucc.wasm and wasm_exec.js. When the binary
// was built without `go generate ./web`, the wasm is built now into a
// temporary directory (the go command must be able to see the module).
// The execute API (serve_api.go) answers beside the page. An interrupt or
// SIGTERM stops the server gracefully, removes that directory and exits 0.
func serveCmd(args []string) int {
	fs := newFlags("serve", "serve [--addr HOST:PORT]")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	apiConf := apiFlags(fs)
	if err := fs.Parse(args); err != nil {
		return flagError(fs, err)
	}
	if fs.NArg() > 0 {
		return usageError("serve takes no arguments, got %q", fs.Args())
	}
	// Catch the signals first, so that one arriving while the wasm builds
	// still lets the deferred RemoveAll run.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "gpucc-serve")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	assets, err := web.Assets(dir)
	if err != nil {
		return fail(ir.Errorf(ir.CodeInternal, -1, "", "%v", err))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(ir.Errorf(ir.CodeInternal, -1, "addr", "%v", err))
	}
	fmt.Fprintf(os.Stderr, "gpucc: serving the demo on http://%s/\n", ln.Addr())
	api, err := newAPI(apiConf, web.Handler(assets))
	if err != nil {
		return fail(err)
	}
	if err := api.serve(ctx, newServer(api, apiConf.timeout), ln); err != nil {
		return fail(ir.Errorf(ir.CodeInternal, -1, "", "%v", err))
	}
	return 0
}

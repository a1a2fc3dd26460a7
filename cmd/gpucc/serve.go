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

// serveCmd serves web's page, gpucc.wasm and wasm_exec.js, all embedded in
// the binary, so it needs no Go toolchain and starts at once. A binary
// built without go generate ./web serves web.NotBuilt in the page's place. The execute
// API (serve_api.go) answers beside the page. An interrupt or SIGTERM
// stops the server gracefully and exits 0.
func serveCmd(args []string) int {
	fs := newFlags("serve", "serve [--addr HOST:PORT]")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (port 0: any free port)")
	apiConf := apiFlags(fs)
	if err := parseInterspersed(fs, args); err != nil {
		return flagError(fs, err)
	}
	if fs.NArg() > 0 {
		return usageError("serve takes no arguments, got %q", fs.Args())
	}
	listen, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return fail(ir.Errorf(ir.CodeUsage, -1, "addr", "serve: --addr %q: %v", *addr, err))
	}
	if !isLoopback(listen) && apiConf.token == "" && os.Getenv(TokenEnv) == "" {
		return fail(ir.Errorf(ir.CodeUsage, -1, "addr", "serve: --addr %s is not a loopback address: give --token (or $%s), so that only holders of the token can run graphs here", ir.Quote(*addr), TokenEnv))
	}
	apiConf.listen = listen
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	page, err := web.Handler(web.Assets())
	if err != nil {
		return fail(err)
	}
	if !web.Built(web.Assets()) {
		fmt.Fprint(os.Stderr, web.NotBuilt) // the API still answers; the page's paths say the same
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil { // a busy port, an address that is not ours, no permission
		return fail(ir.Errorf(ir.CodeIO, -1, "addr", "serve: %v", err))
	}
	fmt.Fprintf(os.Stderr, "gpucc: serving the demo on http://%s/\n", ln.Addr())
	api, err := newAPI(apiConf, page)
	if err != nil {
		return fail(err)
	}
	if err := api.serve(ctx, newServer(api, apiConf.timeout), ln); err != nil {
		return fail(ir.Errorf(ir.CodeIO, -1, "addr", "serve: %v", err))
	}
	return 0
}

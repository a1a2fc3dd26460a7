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
	commands["serve"] = command{summary: "serve the browser demo and the execute API", run: serveCmd}
	help["serve"] = serveHelp
}

// serveHelp is serve's -h text; README.md's serve section says the same at
// length, and TestServeREADME runs its curl examples.
const serveHelp = `
Serves the browser demo page (webgpu, webgl2 and cpu run in the page) and an
execute API on --addr until SIGINT or SIGTERM (then requests in flight may
finish for --grace, the rest are answered disposed, and it exits 0). Prints
the address it listens on to stderr, nothing on stdout.

Routes (every answer is {"ok":true,"value":...} or
{"ok":false,"error":{"code","message","node","field"}}):
  POST /v1/execute?backend=B  run the body, a protocol v1 graph
                              (Content-Type: application/json) or an ONNX
                              model (application/onnx), on B: auto (the
                              default) or a backend of /v1/info; the value
                              is what 'gpucc run' prints. const=NAME=V0,…
                              (repeatable) fixes a model's input at
                              import, as gpucc run --const does
  GET  /v1/info               backends, chain, adapters, limits, maxPending
  GET  /healthz               {"ok":true}, with no token
  POST /wasm/module           the page's wasm backend's modules, built by
                              this machine's Clang (Host, Origin and token
                              as /v1/; the page sends the token it is
                              opened with as /#token=TOKEN)
  GET  anything else          the demo page

Status codes: 200 ok; 400 invalid_graph, invalid_input (an ONNX input of
dynamic shape) or usage; 401 not_granted (token
missing or wrong); 403 not_granted (a foreign Origin, or with no token a Host
other than localhost, loopback or the listen address); 404 and 405 usage;
408 timeout (the body came too slowly); 413 limit_exceeded; 415 usage (a
Content-Type other than the two); 422 non_finite_output, unsupported or integer_fault; 429 busy
(--max-pending or --max-memory reached; Retry-After: 1); 500
execution_failed or internal; 503 backend_unavailable or disposed; 504
timeout.

Headers: Authorization: Bearer TOKEN on /v1/ when --token or $GPUCC_TOKEN is
set (an --addr that is not loopback needs one). Every answer is
application/json with Cache-Control: no-store; an error answer closes the
connection. No CORS headers are sent.

The body is read whole within --timeout before the request counts as
pending; bodies (3 bytes per byte) and replies (4 bytes per output value,
streamed) share --max-memory. --max-output-bytes defaults to 4 MiB here.

  curl -s -H 'Content-Type: application/json' --data-binary @graph.json \
    'http://127.0.0.1:8080/v1/execute?backend=cpu'`

// serveCmd serves web's page, gpucc.wasm and wasm_exec.js, all embedded in
// the binary, so it needs no Go toolchain and starts at once. A binary
// built without go generate ./web serves web.NotBuilt in the page's place. The execute
// API (serve_api.go) answers beside the page. An interrupt or SIGTERM
// stops the server gracefully and exits 0.
func serveCmd(args []string) int {
	fs := newFlags("serve", "serve [--addr HOST:PORT]")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (port 0: any free port)")
	pyodide := fs.String("pyodide", "", "serve this directory (an npm install of pyodide) under /pyodide/, for the page's Python guest")
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
	page = web.WithPyodide(page, *pyodide)
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

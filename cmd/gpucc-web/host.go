//go:build js

package main

// The seed's host model in the page: an adapter between a sandboxed guest
// engine (the Python module in a Worker, say) and gpucc, on package
// server's rules:
//
//	adapter = gpucc.createPythonGPUAdapter(engine, {allowExecute, maxPending, backend, allowSoftware})
//	adapter.pump()      // drain engine.takeHostRequests() and answer each
//	adapter.pending()   // requests admitted and not finished
//	adapter.dispose()   // no reply reaches the engine after this returns
//
// engine is any object with takeHostRequests() → [{id, kind, payload}] and
// pythonCall(name, args). A request of kind "gpu.execute" carries
// {backend, graph} (JSON text or an object); its reply, {ok: true, value}
// or {ok: false, error: {code, message, node?, field?}}, goes back as
// engine.pythonCall("__gpucc_deliver", [id, reply]). Execution is granted
// per engine (allowExecute; default-deny), each engine has its own cap on
// pending requests (maxPending, default 16; beyond it: busy), the graph is
// decoded and checked against the host's limits before anything is
// allocated for it (invalid_graph, limit_exceeded), and once dispose has
// returned no late result is delivered. A refusal is answered at once,
// from pump; a result later, when its graph has run.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"syscall/js"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/server"
)

// DeliverName is the guest function a reply is delivered to.
const deliverName = "__gpucc_deliver"

var engines atomic.Int64

// createAdapter is gpucc.createPythonGPUAdapter(engine, options).
func createAdapter(_ js.Value, args []js.Value) (out any) {
	defer func() {
		if r := recover(); r != nil { // a bad argument must not end the wasm program
			out = js.Global().Get("Error").New(fmt.Sprint("gpucc.createPythonGPUAdapter: ", r))
		}
	}()
	if len(args) == 0 || args[0].Type() != js.TypeObject {
		panic("needs an engine object with takeHostRequests and pythonCall")
	}
	engine := args[0]
	for _, m := range []string{"takeHostRequests", "pythonCall"} {
		if engine.Get(m).Type() != js.TypeFunction {
			panic("the engine has no " + m + " function")
		}
	}
	o := js.Undefined()
	if len(args) > 1 {
		o = args[1]
	}
	opts := parseOptions(o) // backend and allowSoftware, as gpucc.run's
	policy := server.Policy{}
	allow := false
	if o.Type() == js.TypeObject {
		allow = o.Get("allowExecute").Truthy()
		if m := o.Get("maxPending"); m.Type() == js.TypeNumber {
			if m.Int() < 1 {
				panic("maxPending must be at least 1")
			}
			policy.MaxPending = m.Int()
		}
	}
	srv := server.New(server.Options{Policy: policy, AllowSoftware: opts.AllowSoftware})
	id := fmt.Sprintf("engine-%d", engines.Add(1))
	if allow {
		srv.Grant(id)
	}
	maxPending := policy.MaxPending
	if maxPending == 0 {
		maxPending = server.DefaultMaxPending
	}
	a := &adapter{engine: engine, client: srv.Client(id), backend: opts.Backend, allow: allow, maxPending: maxPending,
		allowSoftware: opts.AllowSoftware}
	obj := js.Global().Get("Object").New()
	obj.Set("pump", js.FuncOf(func(js.Value, []js.Value) any { return a.pump() }))
	obj.Set("pending", js.FuncOf(func(js.Value, []js.Value) any { return a.client.Pending() }))
	obj.Set("dispose", js.FuncOf(func(js.Value, []js.Value) any {
		a.gone.Store(true) // replies already on their way are dropped too
		a.client.Dispose()
		go a.closeSessions()               // after a step in flight, which holds its session
		go srv.Close(context.Background()) // its runtimes; nothing is delivered any more
		return nil
	}))
	obj.Set("engineId", id)
	return obj
}

type adapter struct {
	engine        js.Value
	client        *server.Client
	backend       string
	allow         bool // granted execution
	maxPending    int
	allowSoftware bool
	gone          atomic.Bool // disposed
	train         sessions    // gpu.step's trainers (hoststep.go)
}

// pump answers every request the engine has queued and returns how many
// it took.
func (a *adapter) pump() int {
	reqs := a.engine.Call("takeHostRequests")
	n := reqs.Length()
	for i := 0; i < n; i++ {
		a.request(reqs.Index(i))
	}
	return n
}

// request admits one request or answers its refusal at once.
func (a *adapter) request(r js.Value) {
	id := r.Get("id")
	send := func(raw []byte) {
		a.later(func() {
			defer func() { recover() }() // the guest's failure to take a reply is its own
			a.engine.Call("pythonCall", deliverName, []any{id, js.Global().Get("JSON").Call("parse", string(raw))})
		})
	}
	deliver := func(rep server.Reply) {
		raw, err := json.Marshal(rep)
		if err != nil {
			raw, _ = json.Marshal(server.Failed(ir.Errorf(ir.CodeInternal, -1, "", "encoding the reply: %v", err)))
		}
		send(raw)
	}
	var err error
	if k := r.Get("kind"); k.Type() == js.TypeString && k.String() == "gpu.step" {
		p := r.Get("payload")
		if p.Type() != js.TypeString {
			p = js.Global().Get("JSON").Call("stringify", p)
		}
		err = a.step(p.String(), a.allowSoftware, send)
	} else {
		var req server.Request
		if req, err = a.parse(r); err == nil {
			err = a.client.Submit(context.Background(), req, deliver)
		}
	}
	if err != nil {
		if !a.disposed(err) {
			deliver(server.Failed(err))
		}
	}
}

// later runs deliver from the event loop, after the current call into the
// page returns (a reply never arrives inside pump), unless the engine has
// been disposed by then.
func (a *adapter) later(deliver func()) {
	var f js.Func
	f = js.FuncOf(func(js.Value, []js.Value) any {
		f.Release()
		if !a.gone.Load() {
			deliver()
		}
		return nil
	})
	js.Global().Call("setTimeout", f, 0)
}

// disposed reports whether err is the refusal of a disposed client, whose
// engine gets nothing.
func (a *adapter) disposed(err error) bool {
	var ie *ir.Error
	if e, ok := err.(*ir.Error); ok {
		ie = e
	}
	return ie != nil && ie.Code == ir.CodeDisposed
}

// parse reads a request {id, kind, payload}: only gpu.execute is a kind a
// guest may ask for; its payload is {backend, graph}.
func (a *adapter) parse(r js.Value) (req server.Request, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = ir.Errorf(ir.CodeInvalidGraph, -1, "", "reading the request: %v", p)
		}
	}()
	if r.Type() != js.TypeObject {
		return req, ir.Errorf(ir.CodeInvalidGraph, -1, "", "a host request is an object {id, kind, payload}")
	}
	if k := r.Get("kind"); k.Type() != js.TypeString || k.String() != "gpu.execute" {
		return req, ir.Errorf(ir.CodeNotGranted, -1, "kind", "host request kind %s is not one this host answers (gpu.execute)", ir.Quote(fmt.Sprint(k)))
	}
	var payload struct {
		Backend string          `json:"backend"`
		Graph   json.RawMessage `json:"graph"`
	}
	p := r.Get("payload")
	switch p.Type() {
	case js.TypeString: // JSON text: the graph's bytes are kept as sent (-0 stays -0)
		if err := json.Unmarshal([]byte(p.String()), &payload); err != nil {
			return req, ir.Errorf(ir.CodeInvalidGraph, -1, "", "gpu.execute's payload is not {backend, graph}: %v", err)
		}
	case js.TypeObject: // a graph object goes through JSON.stringify, which writes -0 as 0
		if b := p.Get("backend"); b.Type() == js.TypeString {
			payload.Backend = b.String()
		}
		switch g := p.Get("graph"); g.Type() {
		case js.TypeString:
			payload.Graph, _ = json.Marshal(g.String())
		case js.TypeObject:
			payload.Graph = json.RawMessage(js.Global().Get("JSON").Call("stringify", g).String())
		}
	default:
		return req, ir.Errorf(ir.CodeInvalidGraph, -1, "", "gpu.execute's payload is {backend, graph}")
	}
	raw := []byte(payload.Graph)
	var text string
	if json.Unmarshal(raw, &text) == nil { // the graph as a JSON string
		raw = []byte(text)
	}
	if len(raw) == 0 || string(raw) == "null" {
		return req, ir.Errorf(ir.CodeInvalidGraph, -1, "graph", "gpu.execute needs a graph")
	}
	backend := a.backend
	if b := payload.Backend; b != "" && b != "auto" {
		backend = b
	}
	return server.Request{Graph: bytes.NewReader(raw), Backend: backend}, nil
}

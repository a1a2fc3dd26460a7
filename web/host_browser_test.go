package web

import (
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"
)

// hostHarness defines, in the page, a fake guest engine (the seed's
// takeHostRequests and pythonCall) and hostRun(options, requests, ms): it
// creates an adapter, queues the requests, pumps once, optionally disposes
// right after, waits ms and returns what the engine was delivered, by id.
const hostHarness = `
window.fakeEngine = () => {
	const queue = [], got = {};
	return {queue, got,
		takeHostRequests() { return queue.splice(0); },
		pythonCall(name, args) {
			if (name !== "__gpucc_deliver") throw new Error("unexpected call " + name);
			const [id, reply] = args;
			(got[id] = got[id] || []).push(reply);
		}};
};
window.hostRun = async (options, requests, ms, dispose) => {
	const e = fakeEngine();
	const a = gpucc.createPythonGPUAdapter(e, options);
	e.queue.push(...requests);
	const took = a.pump();
	const pendingAfterPump = a.pending();
	if (dispose) a.dispose();
	const deadline = Date.now() + ms;
	while (Date.now() < deadline && !dispose && Object.keys(e.got).length < requests.length) {
		await new Promise(r => setTimeout(r, 20));
	}
	if (dispose) await new Promise(r => setTimeout(r, ms));
	return JSON.stringify({took, pendingAfterPump, got: e.got});
};
true`

type hostReply struct {
	OK    bool `json:"ok"`
	Value *struct {
		Backend string `json:"backend"`
		Outputs map[string]struct {
			Shape []int     `json:"shape"`
			Data  []float64 `json:"data"`
		} `json:"outputs"`
	} `json:"value"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"error"`
}

type hostOutcome struct {
	Took             int                    `json:"took"`
	PendingAfterPump int                    `json:"pendingAfterPump"`
	Got              map[string][]hostReply `json:"got"`
}

// trainGraph is a one-parameter least-squares problem, its loss named loss.
const trainGraph = `{"version":1,"nodes":[{"id":0,"op":"input","shape":[2],"data":[1,2],"name":"w","param":true},{"id":1,"op":"input","shape":[2],"data":[3,5]},{"id":2,"op":"sub","a":0,"b":1},{"id":3,"op":"mul","a":2,"b":2},{"id":4,"op":"sum","a":3}],"outputs":[{"name":"loss","id":4}]}`

const seedGraph = `{"version":1,"nodes":[{"id":0,"op":"input","shape":[3],"data":[-2,3,4]},{"id":1,"op":"input","shape":[3],"data":[10,20,30]},{"id":2,"op":"mul","a":0,"b":1},{"id":3,"op":"relu","a":2}],"outputs":[{"name":"values","id":3}]}`

// TestHostAdapter: the page's host model (gpucc.createPythonGPUAdapter)
// answers the seed's example on every browser backend, and refuses with
// a code an engine it has not granted, a request over the engine's cap on
// pending requests and a graph over the host's limits (before running
// anything), and delivers nothing to an engine disposed while its request
// was pending.
func TestHostAdapter(t *testing.T) {
	ctx := page(t, "?life=0", pageDeadline)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](hostHarness)); err != nil {
		t.Fatal(err)
	}
	hostRun := func(t *testing.T, options map[string]any, reqs []map[string]any, ms int, dispose bool) hostOutcome {
		t.Helper()
		o, _ := json.Marshal(options)
		r, _ := json.Marshal(reqs)
		expr := "hostRun(" + string(o) + "," + string(r) + "," + itoa(ms) + "," + boolJS(dispose) + ")"
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		var out hostOutcome
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			t.Fatalf("%v: %s", err, s)
		}
		return out
	}
	seed := func(id int, backend string) map[string]any {
		return map[string]any{"id": id, "kind": "gpu.execute", "payload": map[string]any{"backend": backend, "graph": seedGraph}}
	}
	granted := map[string]any{"allowExecute": true, "maxPending": 16, "allowSoftware": true}

	for _, backend := range []string{"webgpu", "webgl2", "cpu"} {
		t.Run("seed/"+backend, func(t *testing.T) {
			out := hostRun(t, granted, []map[string]any{seed(7, backend)}, 60000, false)
			rs := out.Got["7"]
			if len(rs) != 1 || !rs[0].OK || rs[0].Value == nil {
				t.Fatalf("replies %+v", rs)
			}
			v := rs[0].Value
			if got := v.Outputs["values"].Data; v.Backend != backend || len(got) != 3 || got[0] != 0 || got[1] != 60 || got[2] != 120 {
				t.Errorf("%s: %v, want [0 60 120]", v.Backend, got)
			}
		})
	}
	code := func(t *testing.T, out hostOutcome, id, want string) {
		t.Helper()
		rs := out.Got[id]
		if len(rs) != 1 || rs[0].OK || rs[0].Error == nil || rs[0].Error.Code != want {
			t.Errorf("request %s: replies %+v, want one error %s", id, rs, want)
		}
	}
	t.Run("not granted", func(t *testing.T) {
		out := hostRun(t, map[string]any{"allowExecute": false}, []map[string]any{seed(1, "cpu")}, 5000, false)
		code(t, out, "1", "not_granted")
		out = hostRun(t, map[string]any{"allowExecute": false}, []map[string]any{seed(1, "cpu")}, 500, true)
		if len(out.Got) != 0 { // even a refusal is not delivered once disposed
			t.Errorf("a disposed engine was delivered %+v", out.Got)
		}
		out = hostRun(t, map[string]any{}, []map[string]any{seed(1, "cpu")}, 5000, false) // default-deny
		code(t, out, "1", "not_granted")
		out = hostRun(t, granted, []map[string]any{{"id": 2, "kind": "fs.read", "payload": "{}"}}, 5000, false)
		code(t, out, "2", "not_granted")
		step := map[string]any{"id": 3, "kind": "gpu.step", "payload": `{"session":0,"graph":` + trainGraph + `,"lr":0.1}`}
		out = hostRun(t, map[string]any{"allowExecute": false}, []map[string]any{step}, 5000, false)
		code(t, out, "3", "not_granted")
	})
	t.Run("over the cap", func(t *testing.T) {
		// webgpu's runs await the device, so the first two are still
		// pending when the third arrives; cpu's may finish inside pump.
		opts := map[string]any{"allowExecute": true, "maxPending": 2, "allowSoftware": true}
		out := hostRun(t, opts, []map[string]any{seed(1, "webgpu"), seed(2, "webgpu"), seed(3, "webgpu")}, 60000, false)
		if out.PendingAfterPump != 2 {
			t.Errorf("pending after the pump: %d, want 2", out.PendingAfterPump)
		}
		for _, id := range []string{"1", "2"} {
			if rs := out.Got[id]; len(rs) != 1 || !rs[0].OK {
				t.Errorf("request %s: %+v", id, rs)
			}
		}
		code(t, out, "3", "busy")
	})
	t.Run("over the limits", func(t *testing.T) {
		big := `{"version":1,"nodes":[{"id":0,"op":"full","shape":[1025,1024],"value":1}],"outputs":[{"name":"y","id":0}]}`
		bad := `{"version":1,"nodes":[{"id":0,"op":"input","shape":[2],"data":[1,2]},{"id":1,"op":"add","a":0,"b":5}],"outputs":[]}`
		out := hostRun(t, granted, []map[string]any{
			{"id": 1, "kind": "gpu.execute", "payload": map[string]any{"backend": "cpu", "graph": big}},
			{"id": 2, "kind": "gpu.execute", "payload": map[string]any{"backend": "cpu", "graph": bad}},
		}, 5000, false)
		if out.PendingAfterPump != 0 {
			t.Errorf("refused graphs are pending: %d", out.PendingAfterPump)
		}
		code(t, out, "1", "limit_exceeded")
		code(t, out, "2", "invalid_graph")
		out = hostRun(t, granted, []map[string]any{
			{"id": 3, "kind": "gpu.step", "payload": `{"session":0,"lr":0.1,"graph":` + big + `}`},
			{"id": 4, "kind": "gpu.step", "payload": `{"session":7,"params":true}`},
		}, 5000, false)
		code(t, out, "3", "limit_exceeded")
		code(t, out, "4", "invalid_input")
	})
	t.Run("training step", func(t *testing.T) {
		// a session's first step uploads the parameters; the second names
		// the session and uploads nothing
		out := hostRun(t, granted, []map[string]any{{"id": 1, "kind": "gpu.step",
			"payload": `{"backend":"cpu","session":0,"graph":` + trainGraph + `,"lr":0.5,"params":true}`}}, 30000, false)
		if rs := out.Got["1"]; len(rs) != 1 || !rs[0].OK {
			t.Fatalf("first step: %+v", rs)
		}
	})
	t.Run("disposed while pending", func(t *testing.T) {
		// a cpu run may finish inside pump, but its reply waits for the
		// event loop, which sees the engine disposed; webgpu's is pending.
		out := hostRun(t, granted, []map[string]any{seed(1, "cpu"), seed(2, "webgpu")}, 3000, true)
		if out.PendingAfterPump < 1 {
			t.Errorf("pending after the pump: %d, want the webgpu request at least", out.PendingAfterPump)
		}
		if len(out.Got) != 0 {
			t.Errorf("a disposed engine was delivered %+v", out.Got)
		}
	})
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func boolJS(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

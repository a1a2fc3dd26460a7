package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpucc/gpucc/internal/chromium"
)

// pyodideDir is where npm ci installs Pyodide (web/pyodide's lock file).
const pyodideDir = "pyodide/node_modules/pyodide"

// ensurePyodide installs Pyodide from npm once (offline afterwards: the
// guest loads it from this server, not from a CDN).
func ensurePyodide(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pyodideDir, "pyodide.asm.wasm")); err == nil {
		return
	}
	fail := t.Skipf
	if os.Getenv("GPUCC_REQUIRE_BROWSER") != "" {
		fail = t.Fatalf
	}
	if _, err := exec.LookPath("npm"); err != nil {
		fail("npm is not on PATH: it installs Pyodide for the Python guest's tests")
		return
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = "pyodide"
	if out, err := cmd.CombinedOutput(); err != nil {
		fail("npm ci in web/pyodide: %v\n%s", err, out)
	}
}

// guestPage opens the page as gpucc serve --pyodide serves it, with the
// suite's random graph generator beside the module.
func guestPage(t *testing.T, deadline time.Duration) (run func(backend, code string, want int) []string, ctx context.Context) {
	t.Helper()
	ctx = pythonPage(t, deadline)
	// run starts a fresh guest on backend, runs code, waits until it has
	// printed want lines (its callbacks run later) and returns them.
	return func(backend, code string, want int) []string {
		t.Helper()
		return guestRun(t, ctx, `{backend: "`+backend+`", allowSoftware: true}`, code, want, false)
	}, ctx
}

// guestRun starts a guest with the options (a JS object literal), runs
// code and returns what it printed once it has printed want lines; with
// dispose, it disposes the guest as soon as the code has run (its
// requests still pending) and returns what it printed in the next 3 s.
func guestRun(t *testing.T, ctx context.Context, options, code string, want int, dispose bool) []string {
	t.Helper()
	{
		c, _ := json.Marshal(code)
		expr := `(async () => {
			const files = (await (await fetch("python/files.json")).json()).map(p => ({path: "/guest/" + p, url: "python/" + p}));
			files.push({path: "/guest/randgraph.py", url: "python-tests/randgraph.py"});
			const g = createPythonGuest(Object.assign({pyodideURL: "/pyodide/", files}, ` + options + `));
			try {
				await g.ready;
				await g.run(` + string(c) + `);
				if (` + boolJS(dispose) + `) {
					const pending = g.adapter.pending();
					g.dispose();
					await new Promise(r => setTimeout(r, 3000));
					return JSON.stringify(["pending " + pending].concat(g.output));
				}
				const deadline = Date.now() + 240000;
				while (g.output.length < ` + itoa(want) + ` && Date.now() < deadline) await new Promise(r => setTimeout(r, 50));
				return JSON.stringify(g.output);
			} finally { g.dispose(); }
		})()`
		return evalLines(t, ctx, expr)
	}
}

func evalLines(t *testing.T, ctx context.Context, expr string) []string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	if err := json.Unmarshal([]byte(s), &lines); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return lines
}

// pythonPage opens the page served with Pyodide (WithPyodide, as gpucc
// serve --pyodide does) and waits for gpucc.wasm and the Python card.
func pythonPage(t *testing.T, deadline time.Duration) context.Context {
	t.Helper()
	ensurePyodide(t)
	h, err := Handler(builtPage(t))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/python-tests/", http.StripPrefix("/python-tests/", http.FileServer(http.Dir("../python/tests"))))
	mux.Handle("/", WithPyodide(h, pyodideDir))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx := chromium.Open(t, srv.URL+"/index.html?life=0", deadline)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.demo && (window.demo.ready || window.demo.error) && window.pythonDemo && window.pythonDemo.ready`)); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// native runs code with python3 on cpu-python (the module's own
// reference, which the Python suite holds to cpuref's bits) and returns
// the lines it prints.
func native(t *testing.T, code string) []string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH")
	}
	cmd := exec.Command(py, "-c", code+"\nimport gpucc; gpucc.wait_all()\n")
	cmd.Env = append(os.Environ(), "PYTHONPATH=../python:../python/tests", "GPUCC_BACKEND=cpu-python", "GPUCC_URL=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	return strings.Split(strings.TrimRight(string(out), "\n"), "\n")
}

const seedMain = `from gpucc import Graph

def show(result):
    print(result["backend"], result["outputs"]["values"]["data"])

g = Graph()
a = g.tensor([-2, 3, 4])
b = g.tensor([10, 20, 30])
g.submit(show, values=(a * b).relu())   # [0, 60, 120]
`

const randomSuite = `import json, randgraph
from gpucc import f32

def report(seed):
    def ok(r):
        print("R", json.dumps({"seed": seed, "out": {k: [o["shape"], ["%08x" % f32.bits(v) for v in o["data"]]] for k, o in sorted(r["outputs"].items())}}))
    def err(e):
        print("R", json.dumps({"seed": seed, "error": e.code}))
    return ok, err

for seed in range(N):
    g, outs = randgraph.graph(seed, backend=None)
    ok, err = report(seed)
    g.submit(ok, on_error=err, **outs)
`

const mlpTraining = `import random
import gpucc
from gpucc import Parameter, f32

r = random.Random(1)
X = [[r.uniform(-1, 1) for _ in range(4)] for _ in range(8)]
Y = [[r.uniform(-1, 1) for _ in range(2)] for _ in range(8)]
params = [Parameter([[r.gauss(0, 0.5) for _ in range(16)] for _ in range(4)], name="w1"),
          Parameter([0.0] * 16, name="b1"),
          Parameter([[r.gauss(0, 0.3) for _ in range(2)] for _ in range(16)], name="w2"),
          Parameter([0.0, 0.0], name="b2")]

def loss_fn(x, y, w1, b1, w2, b2):
    h = (x @ w1 + b1).relu()
    d = h @ w2 + b2 - y
    return (d * d).mean()

train = gpucc.compile(loss_fn, training=True, lr=0.1)
for step in range(5):   # submitted at once; each step is built from the parameters the one before wrote
    train(X, Y, *params).submit(lambda loss, s=step: print("L", s, "%08x" % f32.bits(loss)),
                                on_error=lambda e, s=step: print("L", s, e.code))
`

// TestPythonGuest runs the gpucc module in Pyodide in a Web Worker, whose
// only channel is the host request, against the page's host
// (gpucc.createPythonGPUAdapter): the seed's example as written (the
// module's name aside) prints [0, 60, 120] on webgpu, webgl2 and cpu;
// random graphs written in the guest give cpuref's bits (cpu-python's,
// natively, which the Python suite holds to cpuref); and an MLP trained
// by compile(step, training=True) for 5 steps gives the same losses bit
// for bit on every browser backend. Through the guest, too, a host that
// has not granted it refuses with not_granted, an over-limit graph with
// limit_exceeded, and a guest disposed while its request is pending is
// delivered nothing.
func TestPythonGuest(t *testing.T) {
	run, ctx := guestPage(t, 12*time.Minute)
	for _, backend := range []string{"webgpu", "webgl2", "cpu"} {
		t.Run("seed/"+backend, func(t *testing.T) {
			got := run(backend, seedMain, 1)
			if want := []string{backend + " [0, 60, 120]"}; !slices.Equal(got, want) {
				t.Errorf("printed %q, want %q", got, want)
			}
		})
	}
	t.Run("random", func(t *testing.T) {
		n := "24"
		code := strings.Replace(randomSuite, "range(N)", "range("+n+")", 1)
		want := native(t, code)
		got := run("cpu", code, len(want))
		if !slices.Equal(got, want) {
			t.Errorf("the guest on the page's cpu printed\n%s\ncpu-python printed\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("refusals", func(t *testing.T) {
		report := "from gpucc import Graph\ng = Graph()\n"
		// no grant: the engine's requests are refused, and on_error says so
		got := guestRun(t, ctx, `{backend: "cpu", allowExecute: false}`,
			report+`g.submit(print, on_error=lambda e: print(e.code), y=g.tensor([1.0]).relu())`, 1, false)
		if !slices.Equal(got, []string{"not_granted"}) {
			t.Errorf("no grant: %q", got)
		}
		// over the host's limits: refused before anything is allocated
		got = guestRun(t, ctx, `{backend: "cpu"}`,
			report+`g.submit(print, on_error=lambda e: print(e.code, e.field), y=g.full((1025, 1024), 1.0))`, 1, false)
		if !slices.Equal(got, []string{"limit_exceeded shape"}) {
			t.Errorf("over the limits: %q", got)
		}
		// disposed while its request is pending (webgpu awaits the device):
		// the guest is delivered nothing
		got = guestRun(t, ctx, `{backend: "webgpu", allowSoftware: true}`,
			report+`g.submit(lambda r: print("delivered"), on_error=lambda e: print(e.code), y=g.tensor([1.0]).relu())`, 0, true)
		if !slices.Equal(got, []string{"pending 1"}) {
			t.Errorf("disposed: %q, want the request pending and nothing printed", got)
		}
	})
	t.Run("resident", func(t *testing.T) {
		// gpu.step keeps the parameters on the device: after the first step
		// (the graph, the parameters and the batch uploaded) a step on the
		// same batch uploads nothing, and the parameters still come back.
		code := strings.Replace(mlpTraining, `lambda loss, s=step: print("L", s, "%08x" % f32.bits(loss))`,
			`lambda loss, s=step: print("U", s, train.last_result["timings"]["uploadBytes"], len(params[0].data))`, 1)
		got := run("webgpu", code, 5)
		if len(got) != 5 || got[0] == "U 0 0 64" || !slices.Equal(got[1:], []string{"U 1 0 64", "U 2 0 64", "U 3 0 64", "U 4 0 64"}) {
			t.Errorf("uploads per step %q, want the first step's only", got)
		}
	})
	want := native(t, mlpTraining)
	if len(want) != 5 {
		t.Fatalf("cpu-python printed %q", want)
	}
	for _, backend := range []string{"webgpu", "webgl2", "cpu"} {
		t.Run("mlp/"+backend, func(t *testing.T) {
			if got := run(backend, mlpTraining, 5); !slices.Equal(got, want) {
				t.Errorf("losses %q, want cpu-python's %q", got, want)
			}
		})
	}
}

// TestPythonCard: the page's Python card (python.js) runs its three
// examples in a Worker guest on each browser backend: the seed's prints
// [0, 60, 120], Life the same grid as cpu-python, and the MLP the same
// losses, each with the backend that ran it.
func TestPythonCard(t *testing.T) {
	ctx := pythonPage(t, 12*time.Minute)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("allowSoftware").checked = true`)); err != nil {
		t.Fatal(err) // SwiftShader is this machine's only GPU
	}
	card := func(example, backend string, want int) []string {
		return evalLines(t, ctx, `pythonDemo.run("`+example+`", "`+backend+`", `+itoa(want)+`).then(l => JSON.stringify(l))`)
	}
	src := func(example string) string {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { document.getElementById("pyExample").value = "`+example+`";
			document.getElementById("pyExample").onchange(); return document.getElementById("pyCode").value; })()`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	life, mlp := native(t, src("life")), native(t, src("mlp"))
	step := regexp.MustCompile(`^step \d+ loss \S+ on (\S+) in`)
	for _, backend := range []string{"webgpu", "webgl2", "cpu"} {
		t.Run(backend, func(t *testing.T) {
			if got := card("seed", backend, 1); !slices.Equal(got, []string{backend + " [0, 60, 120]"}) {
				t.Errorf("seed: %q", got)
			}
			got := card("life", backend, len(life))
			if len(got) != len(life) || strings.Replace(got[0], backend, "cpu-python", 1) != life[0] || !slices.Equal(got[2:], life[2:]) {
				t.Errorf("life printed\n%s\ncpu-python\n%s", strings.Join(got, "\n"), strings.Join(life, "\n"))
			}
			got = card("mlp", backend, 5)
			for i := range mlp {
				m := step.FindStringSubmatch(got[min(i, len(got)-1)])
				if len(got) != 5 || m == nil || m[1] != backend || got[i][:strings.Index(got[i], " on ")] != mlp[i][:strings.Index(mlp[i], " on ")] {
					t.Fatalf("mlp printed\n%s\ncpu-python\n%s", strings.Join(got, "\n"), strings.Join(mlp, "\n"))
				}
			}
		})
	}
}

// python.js: the page's Python card. When the server offers Pyodide
// (gpucc serve --pyodide DIR serves it under /pyodide/), it runs Python
// programs written with the gpucc module in a Worker guest (pyguest.js),
// on the backend chosen above: the seed's example, Life and an MLP's
// training loop. window.pythonDemo.run(example, backend, lines) is what
// the browser test calls.
(() => {
  const EXAMPLES = {
    seed: `from gpucc import Graph

def show(result):
    print(result["backend"], result["outputs"]["values"]["data"])

g = Graph()
a = g.tensor([-2, 3, 4])
b = g.tensor([10, 20, 30])
g.submit(show, values=(a * b).relu())   # [0, 60, 120]
`,
    life: `import random
from gpucc import Graph

N, GENERATIONS = 24, 8
r = random.Random(1)
g = Graph()
x = g.tensor([[1.0 if r.random() < 0.3 else 0.0 for _ in range(N)] for _ in range(N)])
for _ in range(GENERATIONS):
    x = x.life()

def show(result):
    d = result["outputs"]["grid"]["data"]
    print(result["backend"], "live cells after", GENERATIONS, "generations:", int(sum(d)))
    print("timings (ms):", {k: v for k, v in result["timings"].items() if k.endswith("Ms")})
    for row in range(N):
        print("".join("#" if d[row * N + c] else "." for c in range(N)))

g.submit(show, grid=x)
`,
    mlp: `import random
import gpucc
from gpucc import Parameter

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

def report(step):
    def show(loss):
        res = train.last_result
        print("step", step, "loss", loss, "on", res["backend"], "in", res["timings"].get("totalMs"), "ms")
    return show

for step in range(5):  # each step runs once the one before has written the parameters
    train(X, Y, *params).submit(report(step))
`,
  };
  const $ = (id) => document.getElementById(id);
  let guest = null, files = null;
  const code = $("pyCode"), out = $("pyOut"), status = $("pyStatus");
  code.value = EXAMPLES.seed;
  $("pyExample").onchange = () => { code.value = EXAMPLES[$("pyExample").value]; };

  // run starts a fresh guest on backend, runs source and resolves with the
  // lines it printed once it has printed want of them (or is quiet for 5 s).
  async function run(source, backend, want) {
    if (guest) guest.dispose();
    out.textContent = "";
    status.textContent = "starting Python…";
    const g = guest = createPythonGuest({pyodideURL: new URL("pyodide/", location.href).href, files, backend,
      allowSoftware: $("allowSoftware").checked});
    await g.ready;
    status.textContent = "running on " + backend;
    const t0 = performance.now();
    await g.run(source);
    let seen = -1, quiet = performance.now();
    while ((want ? g.output.length < want : true) && performance.now() - quiet < (want ? 120000 : 5000)) {
      if (g.output.length !== seen) { seen = g.output.length; quiet = performance.now(); out.textContent = g.output.join("\n"); }
      await new Promise((r) => setTimeout(r, 50));
    }
    out.textContent = g.output.join("\n");
    status.textContent = "done in " + Math.round(performance.now() - t0) + " ms (" + g.requests + " host requests)";
    return g.output.slice();
  }

  window.pythonDemo = {ready: false, run: (example, backend, want) => run(EXAMPLES[example], backend, want)};
  (async () => {
    try {
      const r = await fetch("pyodide/pyodide.js", {method: "HEAD"});
      if (!r.ok) return; // no Pyodide on this server: the card stays hidden
      files = (await (await fetch("python/files.json")).json()).map((p) => ({path: "/guest/" + p,
        url: new URL("python/" + p, location.href).href}));
      $("python").hidden = false;
      $("pyRun").onclick = () => run(code.value, $("backend").value, 0).catch((e) => { status.textContent = String(e); });
      window.pythonDemo.ready = true;
    } catch (e) {
      status.textContent = String(e);
    }
  })();
})();

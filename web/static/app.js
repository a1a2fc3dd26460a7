// gpucc demo page: Life on the chosen backend, plus a graph runner.
// window.demo exposes the state the browser tests read.
"use strict";

const N = 128; // grid side
const demo = { frames: 0, last: null, error: null, ready: false };
window.demo = demo;

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
// A page served by gpucc serve --token opened as …/#token=TOKEN: the wasm
// backend sends the token with its module requests (runtime/wasm), as
// the API's clients do; the fragment never reaches a server, and it is
// dropped from the address bar once read.
{
  const token = new URLSearchParams(location.hash.slice(1)).get("token");
  if (token) {
    globalThis.gpuccToken = token;
    history.replaceState(null, "", location.pathname + location.search);
  }
}
$("backend").value = params.get("backend") || "auto";
$("allowSoftware").checked = params.get("allowSoftware") === "1";
// ?threads=N (or auto: every core the browser reports) runs the wasm
// backend's kernels on N threads where the page is cross-origin isolated
// (its server's headers); without it the backend takes half the cores, at
// most 4, as ONNX Runtime Web does. The adapter line says how many it got,
// or why one.
const pageThreads = params.get("threads") === "auto" ? (navigator.hardwareConcurrency || 1) :
  Math.max(0, Math.floor(Number(params.get("threads")) || 0));

let grid = seed();

function seed() {
  const g = new Array(N * N);
  for (let i = 0; i < g.length; i++) g[i] = Math.random() < 0.3 ? 1 : 0;
  return g;
}

function options() {
  return { backend: $("backend").value, allowSoftware: $("allowSoftware").checked, threads: pageThreads };
}

function lifeGraph(cells) {
  return JSON.stringify({
    version: 1,
    nodes: [
      { id: 0, op: "input", shape: [N, N], data: cells },
      { id: 1, op: "life", a: 0 },
    ],
    outputs: [{ name: "next", id: 1 }],
  });
}

function draw(cells) {
  const c = $("life"), ctx = c.getContext("2d");
  const img = ctx.createImageData(N, N);
  for (let i = 0; i < N * N; i++) {
    const on = cells[i] > 0;
    img.data.set(on ? [120, 220, 160, 255] : [16, 19, 26, 255], 4 * i);
  }
  const tmp = new OffscreenCanvas(N, N);
  tmp.getContext("2d").putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(tmp, 0, 0, c.width, c.height);
}

function show(res) {
  $("ran").textContent = res.backend;
  $("adapter").textContent = res.adapter ? `${res.adapter.name}${res.adapter.software ? " (software)" : ""}` : "–";
  const t = res.timings, rows = [];
  if (res.importMs !== undefined) { // an .onnx model's import, before the run's stages
    rows.push(`<tr><td>import</td><td class="num">${res.importMs.toFixed(3)}</td></tr>`);
  }
  for (const k of ["passesMs", "codegenMs", "compileMs", "uploadMs", "dispatchMs", "readbackMs", "totalMs"]) {
    rows.push(`<tr><td>${k.replace("Ms", "")}</td><td class="num">${(t[k] || 0).toFixed(3)}</td></tr>`);
  }
  rows.push(`<tr><td>clock</td><td class="num">${t.dispatchClock}</td></tr>`);
  $("timings").innerHTML = rows.join("");
  const a = res.fallbackAttempts || [];
  $("attempts").innerHTML = a.length === 0 ? "<li>none: the first choice ran</li>" :
    a.map((x) => `<li class="fail"><b>${esc(x.backend)}</b> ${esc(x.code)}: ${esc(x.error)}</li>`).join("");
}

function esc(s) {
  return String(s).replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);
}

async function step() {
  try {
    const res = await gpucc.run(lifeGraph(grid), options());
    grid = res.outputs.next.data;
    draw(grid);
    show(res);
    demo.frames++;
    demo.last = res;
    demo.error = null;
    $("gen").textContent = demo.frames;
    $("status").textContent = "running";
  } catch (e) {
    demo.error = e;
    $("status").textContent = `error ${e.code}: ${e.message}`;
    $("status").className = "fail";
    setTimeout(() => requestAnimationFrame(step), 1000);
    return;
  }
  requestAnimationFrame(step);
}

async function runGraph() {
  try {
    const res = await gpucc.run($("graph").value, options());
    $("result").textContent = JSON.stringify(res, null, 2);
    show(res);
  } catch (e) {
    $("result").textContent = `error ${e.code}: ${e.message}`;
  }
}

function setupDrop() {
  const d = $("drop");
  d.addEventListener("dragover", (e) => { e.preventDefault(); d.classList.add("over"); });
  d.addEventListener("dragleave", () => d.classList.remove("over"));
  d.addEventListener("drop", async (e) => {
    e.preventDefault();
    d.classList.remove("over");
    const f = e.dataTransfer.files[0];
    if (f) { $("graph").value = await f.text(); runGraph(); }
  });
}

$("graph").value = JSON.stringify({
  version: 1,
  nodes: [
    { id: 0, op: "input", shape: [3], data: [-2, 3, 4] },
    { id: 1, op: "input", shape: [3], data: [10, 20, 30] },
    { id: 2, op: "mul", a: 0, b: 1 },
    { id: 3, op: "relu", a: 2 },
  ],
  outputs: [{ name: "values", id: 3 }],
}, null, 1);
$("run").onclick = runGraph;
$("reseed").onclick = () => { grid = seed(); };
setupDrop();

window.gpuccReady = () => {
  demo.ready = true;
  $("status").textContent = `gpucc ready (backends built in: ${gpucc.backends.join(", ")})`;
  if (params.get("life") !== "0") requestAnimationFrame(step);
};
const go = new Go();
WebAssembly.instantiateStreaming(fetch("gpucc.wasm"), go.importObject)
  // cogentcore/webgpu's js build reads Go's memory through window.wasm.
  .then((r) => { window.wasm = r; go.run(r.instance); })
  .catch((e) => { $("status").textContent = `failed to load gpucc.wasm: ${e}`; demo.error = String(e); });

// gpucc demo page: classify a digit the visitor draws.
// The drawing is reduced to 8×8 pixels in the scale of scikit-learn's
// load_digits (each pixel 0..16: the set pixels of a 4×4 block of a 32×32
// bitmap, the digit scaled to the bitmap's height as the data's are) and
// run through a classifier trained by gpucc's own Trainer.
// window.demo.digits holds the state the browser tests read.
"use strict";

(() => {
  // MODEL is the classifier: a protocol v1 graph whose input named
  // `input` takes the 64 pixels (row-major, 0..16; its shape may be [1,64]
  // or [1,1,8,8]) and whose output named `output` holds the 10 class
  // probabilities. web/internal/digitsgen writes both: the CNN
  // (-model cnn: digits-cnn.json) and the MLP (digits-mlp.json).
  const MODEL = { url: "digits-cnn.json", input: "x", output: "probs" };

  const $ = (id) => document.getElementById(id);
  const state = { model: MODEL.url, pixels: null, probs: null, prediction: null, result: null, error: null, busy: false, done: 0 };
  window.demo.digits = state;
  const canvas = $("pad"), ctx = canvas.getContext("2d");
  let graph = null; // the model, parsed once
  let inputNode = null;

  async function load() {
    try {
      const resp = await fetch(MODEL.url);
      if (!resp.ok) throw { code: "io", message: `${MODEL.url}: ${resp.status} ${resp.statusText}` };
      graph = await resp.json();
      inputNode = graph.nodes.find((n) => n.op === "input" && n.name === MODEL.input);
      if (!inputNode || inputNode.data.length !== 64) {
        throw { code: "invalid_graph", message: `${MODEL.url} has no input ${MODEL.input} of 64 values` };
      }
      $("digitsStatus").textContent = `model ${MODEL.url} loaded: draw a digit`;
    } catch (e) {
      fail(e);
    }
  }

  function fail(e) {
    state.error = { code: e.code || "internal", message: e.message || String(e) };
    $("digitsStatus").textContent = `error ${state.error.code}: ${state.error.message}`;
    $("digitsStatus").className = "fail";
  }

  // Drawing: pointer events, so mouse, pen and touch alike.
  let drawing = false;
  function at(e) {
    const r = canvas.getBoundingClientRect();
    return [(e.clientX - r.left) * canvas.width / r.width, (e.clientY - r.top) * canvas.height / r.height];
  }
  canvas.addEventListener("pointerdown", (e) => {
    drawing = true;
    canvas.setPointerCapture(e.pointerId);
    const [x, y] = at(e);
    ctx.lineWidth = canvas.width / 12;
    ctx.lineCap = ctx.lineJoin = "round";
    ctx.strokeStyle = "#000";
    ctx.beginPath();
    ctx.moveTo(x, y);
    ctx.lineTo(x, y);
    ctx.stroke();
  });
  canvas.addEventListener("pointermove", (e) => {
    if (!drawing) return;
    const [x, y] = at(e);
    ctx.lineTo(x, y);
    ctx.stroke();
  });
  const end = () => {
    if (!drawing) return;
    drawing = false;
    classify();
  };
  canvas.addEventListener("pointerup", end);
  canvas.addEventListener("pointercancel", end);

  function clear() {
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    state.pixels = state.probs = state.prediction = state.result = state.error = null;
    preview(new Array(64).fill(0));
    $("digitsProbs").innerHTML = "";
    $("digitsStatus").textContent = "draw a digit";
    $("digitsStatus").className = "";
  }

  // pixels reduces the drawing to load_digits' 8×8 scale. A canvas pixel
  // is ink where its alpha is at least 128. The digit's ink box, widened
  // to a square about its centre (so the taller side fills it, as the
  // data's digits fill their height), is cut into 32×32 cells (with
  // `normalize` off, the whole canvas is); a cell is set when at least
  // half of its canvas pixels are ink; each of the 8×8 pixels counts the
  // set cells of its 4×4 block. Integer arithmetic throughout, so the
  // same drawing gives the same pixels on every browser.
  function pixels(normalize) {
    const W = canvas.width, H = canvas.height;
    const alpha = ctx.getImageData(0, 0, W, H).data;
    const ink = (x, y) => x >= 0 && y >= 0 && x < W && y < H && alpha[4 * (y * W + x) + 3] >= 128;
    let x0 = W, y0 = H, x1 = -1, y1 = -1;
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        if (ink(x, y)) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
      }
    }
    const out = new Array(64).fill(0);
    if (x1 < 0) return out;
    let sx = 0, sy = 0, L = Math.min(W, H);
    if (normalize) {
      const w = x1 - x0 + 1, h = y1 - y0 + 1;
      L = Math.max(w, h);
      sx = x0 - Math.floor((L - w) / 2);
      sy = y0 - Math.floor((L - h) / 2);
    }
    for (let i = 0; i < 32; i++) {
      const ya = sy + Math.floor(i * L / 32), yb = sy + Math.floor((i + 1) * L / 32);
      for (let j = 0; j < 32; j++) {
        const xa = sx + Math.floor(j * L / 32), xb = sx + Math.floor((j + 1) * L / 32);
        let n = 0;
        for (let y = ya; y < yb; y++) for (let x = xa; x < xb; x++) if (ink(x, y)) n++;
        const area = (yb - ya) * (xb - xa);
        if (area > 0 && 2 * n >= area) out[8 * (i >> 2) + (j >> 2)]++;
      }
    }
    return out;
  }

  function preview(p) {
    const c = $("digitsPreview"), g = c.getContext("2d"), s = c.width / 8;
    for (let k = 0; k < 64; k++) {
      const v = 255 - Math.round(p[k] * 255 / 16);
      g.fillStyle = `rgb(${v},${v},${v})`;
      g.fillRect((k % 8) * s, Math.floor(k / 8) * s, s, s);
    }
  }

  function bars(probs, best) {
    $("digitsProbs").innerHTML = probs.map((p, k) =>
      `<tr${k === best ? ' class="ok"' : ""}><td>${k}</td>` +
      `<td><div class="bar" style="width:${(100 * p).toFixed(1)}%"></div></td>` +
      `<td class="num">${p.toFixed(4)}</td></tr>`).join("");
  }

  async function classify() {
    if (!graph || state.busy) return;
    if (!window.demo.ready) { // gpucc.wasm is still loading; the drawing stays
      $("digitsStatus").textContent = "gpucc is still loading: press classify when it is ready";
      return;
    }
    state.busy = true;
    try {
      const p = pixels($("digitsNormalize").checked);
      state.pixels = p;
      preview(p);
      inputNode.data = p;
      const res = await gpucc.run(JSON.stringify(graph), options());
      const probs = res.outputs[MODEL.output].data;
      let best = 0;
      for (let k = 1; k < probs.length; k++) if (probs[k] > probs[best]) best = k; // the first largest, as digits.Argmax
      state.probs = probs;
      state.prediction = best;
      state.result = res;
      state.error = null;
      bars(probs, best);
      show(res);
      $("digitsStatus").textContent = `it looks like a ${best} (${res.backend})`;
      $("digitsStatus").className = "ok";
    } catch (e) {
      fail(e);
    } finally {
      state.busy = false;
      state.done++;
    }
  }

  $("digitsClear").addEventListener("click", clear);
  $("digitsClassify").addEventListener("click", classify);
  $("digitsNormalize").addEventListener("change", classify);
  clear();
  load();
})();

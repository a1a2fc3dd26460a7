// gpucc demo page: run an .onnx model the visitor picks.
// The model is imported inside the page by gpucc's onnx package (the wasm
// build's gpucc.onnxSignature and gpucc.runONNX); nothing leaves the page.
// window.demo.onnx holds the state the browser tests read: the signature,
// the last result (outputs and timings) or the last error ({code, message}).
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  // picked and done count the picks read and the runs finished (either way).
  const state = { file: null, model: null, signature: null, result: null, error: null, busy: false, picked: 0, done: 0 };
  window.demo.onnx = state;

  // fail shows an error with its stable code, as gpucc's errors carry.
  function fail(e) {
    state.error = { code: e.code || "internal", message: e.message || String(e) };
    $("onnxStatus").textContent = `error ${state.error.code}: ${state.error.message}`;
    $("onnxStatus").className = "fail";
  }

  function status(text) {
    $("onnxStatus").textContent = text;
    $("onnxStatus").className = "";
  }

  const dims = (shape) => shape === null ? "unknown" : `[${shape.map((d) => d < 0 ? "?" : d).join(", ")}]`;

  // describe shows the model's inputs, each with a shape field (dynamic
  // dimensions left for the visitor) and a data source, and its outputs.
  function describe(sig) {
    const rows = ["<tr><th>input</th><th>type</th><th>model's shape</th><th>shape to run</th><th>data</th></tr>"];
    sig.inputs.forEach((p, i) => {
      const named = p.shape === null ? "" : p.shape.map((d, k) => d < 0 ? (p.dimParams[k] || "?") : d).join(",");
      const given = p.shape !== null && p.shape.every((d) => d > 0) ? p.shape.join(",") : "";
      rows.push(`<tr><td>${esc(p.name)}</td><td>${esc(p.type || "–")}</td><td>${esc(dims(p.shape))}</td>` +
        `<td><input type="text" id="onnxShape-${i}" value="${given}" placeholder="${esc(named || "D0,D1,…")}"></td>` +
        `<td><select id="onnxSource-${i}"><option value="random">random (seed ${i + 1})</option><option value="file">file</option>` +
        `<option value="const"${p.type === "float32" ? "" : " selected"}>constant</option>` +
        `<option value="constnpy">constant from the .npy file</option></select> ` +
        `<input type="file" id="onnxData-${i}"> <input type="text" id="onnxConst-${i}" placeholder="V0,V1,… (fixed at import)"></td></tr>`);
    });
    $("onnxInputs").innerHTML = rows.join("");
    $("onnxOutputs").innerHTML = "<tr><th>output</th><th>type</th><th>model's shape</th></tr>" +
      sig.outputs.map((p) => `<tr><td>${esc(p.name)}</td><td>${esc(p.type || "–")}</td><td>${esc(dims(p.shape))}</td></tr>`).join("");
    sig.inputs.forEach((_, i) => {
      $(`onnxData-${i}`).addEventListener("change", () => {
        if ($(`onnxSource-${i}`).value !== "constnpy") $(`onnxSource-${i}`).value = "file";
      });
      $(`onnxConst-${i}`).addEventListener("input", () => { $(`onnxSource-${i}`).value = "const"; });
    });
  }

  async function pick() {
    const f = $("onnxFile").files[0];
    state.file = f ? f.name : null;
    state.model = state.signature = state.result = state.error = null;
    $("onnxRun").disabled = true;
    $("onnxInputs").innerHTML = $("onnxOutputs").innerHTML = $("onnxResult").textContent = "";
    if (!f) { state.picked++; return; }
    status(`reading ${f.name}…`);
    try {
      const model = new Uint8Array(await f.arrayBuffer());
      const sig = await gpucc.onnxSignature(model);
      state.model = model;
      state.signature = sig;
      describe(sig);
      $("onnxRun").disabled = false;
      status(`${f.name}: ${model.length} bytes, ${sig.inputs.length} input(s), ${sig.outputs.length} output(s)`);
    } catch (e) {
      fail(e);
    }
    state.picked++;
  }

  // shapeOf parses the shape field of input i: "D0,D1,…" of positive integers.
  function shapeOf(p, i) {
    const text = $(`onnxShape-${i}`).value.trim();
    const shape = text === "" ? [] : text.split(",").map((s) => Number(s.trim()));
    if (shape.length === 0 || !shape.every((d) => Number.isInteger(d) && d > 0)) {
      throw { code: "invalid_input", message: `input ${p.name}: the shape ${JSON.stringify(text)} is not D0,D1,… of positive integers` };
    }
    return shape;
  }

  // random returns n values uniform in [-1, 1) from a xorshift32 seeded
  // with seed, so that a run can be repeated.
  function random(n, seed) {
    const out = new Float32Array(n);
    let x = (seed * 2654435761 + 1) >>> 0;
    for (let i = 0; i < n; i++) {
      x ^= x << 13; x >>>= 0;
      x ^= x >>> 17;
      x ^= x << 5; x >>>= 0;
      out[i] = (x >>> 8) / (1 << 23) - 1;
    }
    return out;
  }

  async function dataOf(p, i, shape) {
    const n = shape.reduce((a, b) => a * b, 1);
    if ($(`onnxSource-${i}`).value === "random") return random(n, i + 1);
    const f = $(`onnxData-${i}`).files[0];
    if (!f) throw { code: "invalid_input", message: `input ${p.name}: no data file chosen` };
    const buf = await f.arrayBuffer();
    if (buf.byteLength !== 4 * n) {
      throw { code: "invalid_input", message: `input ${p.name}: ${f.name} holds ${buf.byteLength} bytes; shape [${shape}] needs ${n} float32 values, ${4 * n} bytes` };
    }
    // Raw little-endian float32, read explicitly so the page's byte order does not matter.
    const view = new DataView(buf), out = new Float32Array(n);
    for (let k = 0; k < n; k++) out[k] = view.getFloat32(4 * k, true);
    return out;
  }

  function summary(res) {
    const lines = [`ran on ${res.backend}${res.adapter ? ` (${res.adapter.name})` : ""}; import ${res.importMs.toFixed(3)} ms`];
    for (const [name, t] of Object.entries(res.outputs)) {
      const d = t.data, head = d.slice(0, 12).map((v) => Number(v).toPrecision(7));
      lines.push(`${name} [${t.shape.join(", ")}]: ${head.join(", ")}${d.length > 12 ? `, … (${d.length} values)` : ""}`);
    }
    return lines.join("\n");
  }

  async function runModel() {
    if (!state.model || state.busy) return;
    state.busy = true;
    state.result = state.error = null;
    $("onnxResult").textContent = "";
    status("running…");
    try {
      const inputShapes = {}, inputs = {}, npy = {}, constants = {};
      for (const [i, p] of state.signature.inputs.entries()) {
        if ($(`onnxSource-${i}`).value === "const") {
          // Fixed at import, as gpucc run --const NAME=V0,V1,… does: what
          // is computed from it folds (a VAD's sample rate and its If).
          constants[p.name] = $(`onnxConst-${i}`).value.trim();
          continue;
        }
        if ($(`onnxSource-${i}`).value === "constnpy") {
          // As gpucc run --const NAME=FILE.npy: the file's dtype must be
          // the input's, its shape binds the input's.
          const f = $(`onnxData-${i}`).files[0];
          if (!f) throw { code: "invalid_input", message: `input ${p.name}: no .npy file chosen for its constant` };
          constants[p.name] = new Uint8Array(await f.arrayBuffer());
          continue;
        }
        const f = $(`onnxSource-${i}`).value === "file" ? $(`onnxData-${i}`).files[0] : null;
        if (f && f.name.toLowerCase().endsWith(".npy")) {
          // numpy.save's file: gpucc reads it (shape and dtype checked), and
          // its shape binds the dynamic dimensions; a shape given must agree.
          npy[p.name] = new Uint8Array(await f.arrayBuffer());
          if ($(`onnxShape-${i}`).value.trim() !== "") inputShapes[p.name] = shapeOf(p, i);
          continue;
        }
        inputShapes[p.name] = shapeOf(p, i);
        inputs[p.name] = await dataOf(p, i, inputShapes[p.name]);
      }
      const res = await gpucc.runONNX(state.model, { ...options(), inputShapes, inputs, npy, constants });
      state.result = res;
      show(res);
      $("onnxResult").textContent = summary(res);
      status(`${state.file}: ran on ${res.backend}`);
      $("onnxStatus").className = "ok";
    } catch (e) {
      fail(e);
    } finally {
      state.busy = false;
      state.done++;
    }
  }

  $("onnxFile").addEventListener("change", pick);
  $("onnxRun").addEventListener("click", runModel);
})();

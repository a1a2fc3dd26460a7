// gpucc demo page: greedy decoding with a KV cache (issue 33 item 5).
// The visitor picks an .onnx model of one decoding step (gpucc generate's
// convention: input_ids, position and past_key_values.N.key/.value in,
// logits and present.N.key/.value out) and a prompt of token ids; the
// wasm build's gpucc.generate runs it here, on the backend chosen above,
// with the cache kept on the device between steps, and each generated id
// is shown as it comes, with its step's milliseconds. Tokenization stays
// outside: ids in, ids out.
// window.demo.generate holds the state the browser tests read: the ids
// shown so far (streamed), the last result or the last error ({code,
// message}).
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const state = { file: null, model: null, streamed: [], result: null, error: null, busy: false, picked: 0, done: 0 };
  window.demo.generate = state;

  // The card, after the ONNX card (or at the end of the page's cards).
  const card = document.createElement("div");
  card.className = "card";
  card.id = "generate";
  card.innerHTML = `
    <h3>decode with a KV cache</h3>
    <p>Pick an .onnx model of one decoding step exported against a static cache (like
    <code>onnx/testdata/transformers/gpt2kv.onnx</code>: inputs input_ids, position and
    past_key_values.N.key/.value, outputs logits and present.N.key/.value) and give the
    prompt's token ids. gpucc decodes greedily here in the page on the backend chosen
    above, keeping the cache on the device, and shows each id as it comes.</p>
    <input type="file" id="genFile" accept=".onnx">
    <label>prompt <input type="text" id="genPrompt" value="34,32,204,127,151,153,182,7" size="32"></label>
    <label>tokens <input type="number" id="genTokens" value="64" min="1" max="4096"></label>
    <button id="genRun" disabled>generate</button>
    <div id="genStatus"></div>
    <pre id="genOut"></pre>`;
  const after = $("onnx");
  if (after) after.after(card); else document.body.appendChild(card);

  function fail(e) {
    state.error = { code: e.code || "internal", message: e.message || String(e) };
    $("genStatus").textContent = `error ${state.error.code}: ${state.error.message}`;
    $("genStatus").className = "fail";
  }

  function status(text) {
    $("genStatus").textContent = text;
    $("genStatus").className = "";
  }

  async function pick() {
    const f = $("genFile").files[0];
    state.file = f ? f.name : null;
    state.model = state.result = state.error = null;
    $("genRun").disabled = true;
    if (f) {
      state.model = new Uint8Array(await f.arrayBuffer());
      $("genRun").disabled = false;
      status(`${f.name}: ${state.model.length} bytes`);
    }
    state.picked++;
  }

  // promptIds parses "34,32,…" into integers; anything else is the
  // visitor's mistake, shown with the code gpucc would give.
  function promptIds() {
    const text = $("genPrompt").value.trim();
    const ids = text === "" ? [] : text.split(",").map((s) => Number(s.trim()));
    if (!ids.every((v) => Number.isInteger(v))) {
      throw { code: "invalid_input", message: `the prompt ${JSON.stringify(text)} is not comma-separated integer token ids` };
    }
    return ids;
  }

  async function run() {
    if (!state.model || state.busy) return;
    state.busy = true;
    state.streamed = [];
    state.result = state.error = null;
    const out = $("genOut");
    out.textContent = "";
    status("compiling…");
    try {
      const prompt = promptIds(), tokens = Number($("genTokens").value);
      const res = await gpucc.generate(state.model, {
        ...options(), prompt, tokens,
        onToken: (i, id, ms) => {
          state.streamed.push(id);
          out.textContent += (i === 0 ? "" : " ") + id;
          status(`${i + 1} of ${tokens} ids, the last in ${ms.toFixed(3)} ms`);
        },
      });
      state.result = res;
      status(`${res.tokens.length} ids on ${res.backend}${res.adapter ? ` (${res.adapter.name})` : ""}, the cache on the ${res.cache}: ` +
        `compile ${res.compileMs.toFixed(1)} ms, prefill ${res.prefillMs.toFixed(1)} ms, ${res.decodeMs.toFixed(3)} ms an id (median)`);
      $("genStatus").className = "ok";
    } catch (e) {
      fail(e);
    } finally {
      state.busy = false;
      state.done++;
    }
  }

  $("genFile").addEventListener("change", pick);
  $("genRun").addEventListener("click", run);
})();

// Runs real models in ONNX Runtime for Node on the inputs TestRealModels
// wrote, and writes each output's raw little-endian values beside them.
//   NODE_PATH=DIR/node_modules node ort.mjs MANIFEST.json
// The manifest is a list of {case, model, inputs: [{name, type, shape,
// file}], outdir}; each output NAME becomes outdir/NAME.bin (float32, or
// int64 for an integer output) and outdir/outputs.json lists them in the
// model's order with their shapes and types. Default session options
// (every graph optimization, as a user gets them), one thread. An entry
// with stream: {input, state, stateOut, output, frames} runs the model once
// per frame of the input (its first dimension split into frames), the
// state output fed back as the next state input, and writes the output's
// per-frame values (output) and the last state (stateOut).
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
const require = createRequire(process.env.NODE_PATH ? process.env.NODE_PATH + "/" : import.meta.url);
const ort = require("onnxruntime-node");
const manifest = JSON.parse(readFileSync(process.argv[2], "utf8"));
for (const c of manifest) {
  const s = await ort.InferenceSession.create(c.model, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const feeds = {};
  for (const i of c.inputs) {
    const raw = readFileSync(i.file);
    const buf = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength);
    const data = i.type === "int64" ? new BigInt64Array(buf) : new Float32Array(buf);
    feeds[i.name] = new ort.Tensor(i.type, data, i.shape);
  }
  if (c.stream) {
    const st = c.stream;
    const x = feeds[st.input], frame = x.data.length / st.frames;
    const probs = [];
    let res;
    for (let f = 0; f < st.frames; f++) {
      feeds[st.input] = new ort.Tensor("float32", x.data.slice(f * frame, (f + 1) * frame), [1, frame]);
      res = await s.run(feeds);
      probs.push(...res[st.output].data);
      feeds[st.state] = res[st.stateOut];
    }
    const outs = [];
    for (const [k, [n, t]] of [[st.output, new ort.Tensor("float32", Float32Array.from(probs), [probs.length])], [st.stateOut, res[st.stateOut]]].entries()) {
      writeFileSync(join(c.outdir, `out${k}.bin`), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
      outs.push({ name: n, type: t.type, shape: Array.from(t.dims), file: `out${k}.bin` });
    }
    writeFileSync(join(c.outdir, "outputs.json"), JSON.stringify(outs));
    continue;
  }
  const res = await s.run(feeds);
  const outs = [];
  s.outputNames.forEach((n, k) => {
    const t = res[n];
    const file = `out${k}.bin`;
    writeFileSync(join(c.outdir, file), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    outs.push({ name: n, type: t.type, shape: Array.from(t.dims), file });
  });
  writeFileSync(join(c.outdir, "outputs.json"), JSON.stringify(outs));
}

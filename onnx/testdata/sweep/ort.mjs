// Runs every model of cases.json in ONNX Runtime for Node and writes ort.json: per case, each
// output's shape and values (float32 as numbers, int64 as numbers), or ORT's error.
//   NODE_PATH=.../node_modules node ort.mjs
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
const require = createRequire(process.env.NODE_PATH ? process.env.NODE_PATH + "/" : import.meta.url);
const ort = require("onnxruntime-node");
const cases = JSON.parse(readFileSync("cases.json", "utf8"));
const out = { ort: ort.env.versions?.node ?? "onnxruntime-node 1.30.0", results: {} };
for (const c of cases) {
  try {
    const s = await ort.InferenceSession.create(`${c.name}.onnx`, { graphOptimizationLevel: "disabled", intraOpNumThreads: 1 });
    const feeds = {};
    for (const [n, t] of Object.entries(c.inputs)) feeds[n] = new ort.Tensor("float32", Float32Array.from(t.data), t.shape);
    const res = await s.run(feeds);
    const r = {};
    for (const n of s.outputNames) {
      const t = res[n];
      r[n] = { shape: Array.from(t.dims), type: t.type, data: Array.from(t.data, (v) => (typeof v === "bigint" ? Number(v) : v)) };
    }
    out.results[c.name] = r;
  } catch (e) {
    out.results[c.name] = { error: String(e.message ?? e).slice(0, 300) };
  }
}
writeFileSync("ort.json", JSON.stringify(out));
console.log(Object.keys(out.results).length, "cases,", Object.values(out.results).filter((r) => r.error).length, "refused by ORT");

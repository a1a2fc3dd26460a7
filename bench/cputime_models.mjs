// ONNX Runtime's least process CPU time per run of a real model at one
// intra-op thread, beside TestModelCPUTime's gpucc figure on the same
// inputs (modelFill below is TestModelCPUTime's modelFill). ORT-node by
// default; --web runs onnxruntime-web's wasm backend (one thread, SIMD as
// it ships) in Node's V8.
//
//   NODE_PATH=/work/ortnode/node_modules node bench/cputime_models.mjs [--web] RUNS MODEL.onnx 'x=1,3,320,320;sr:int64=16000' ...
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.env.NODE_PATH ?? '.', 'x.js'));
const args = process.argv.slice(2);
const web = args[0] === '--web';
if (web) args.shift();
const ort = web ? require('onnxruntime-web') : require('onnxruntime-node');
if (web) { ort.env.wasm.numThreads = 1; ort.env.wasm.proxy = false; }
const runs = Number(args.shift());

// modelFill is value i of an input: a fixed pattern in [-1, 1).
function modelFill(n) {
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = (((40503 * i + 9973) % 65536) - 32768) / 32768;
  return v;
}

for (let a = 0; a + 1 < args.length; a += 2) {
  const file = args[a], spec = args[a + 1];
  const opts = { graphOptimizationLevel: 'all', executionMode: 'sequential', intraOpNumThreads: 1, interOpNumThreads: 1 };
  if (!web) opts.executionProviders = ['cpu'];
  else opts.executionProviders = ['wasm'];
  const sess = await ort.InferenceSession.create(file, opts);
  const feeds = {};
  for (const part of spec.split(';').filter(Boolean)) {
    const [lhs, rhs] = part.split('=');
    const [name, type] = lhs.split(':');
    if (type === 'int64') feeds[name] = new ort.Tensor('int64', BigInt64Array.from(rhs.split(',').map(BigInt)), []);
    else {
      const shape = rhs.split(',').map(Number);
      const n = shape.reduce((x, y) => x * y, 1);
      feeds[name] = new ort.Tensor('float32', name === 'state' || name === 'h' || name === 'c' ? new Float32Array(n) : modelFill(n), shape);
    }
  }
  await sess.run(feeds);
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const c = process.cpuUsage();
    const out = await sess.run(feeds);
    const d = process.cpuUsage(c);
    best = Math.min(best, (d.user + d.system) / 1e3);
    const y = out[sess.outputNames[0]].data;
    if (i === 0) {
      let sum = 0; for (const v of y) sum += v;
      console.error(`${path.basename(file)} ${sess.outputNames[0]} sum ${sum}`);
    }
  }
  console.log(`model\t${web ? 'ort-web-wasm-1t-cpu' : 'ort-node-1t-cpu'}\t${path.basename(file)}\t${best.toFixed(4)}`);
  await sess.release();
}

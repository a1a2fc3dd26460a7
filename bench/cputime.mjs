// ONNX Runtime for Node's least process CPU time per run (one intra-op
// thread, so the run's work without the time other users held the core),
// beside TestCPUTime's gpucc figure; the models and inputs of peers.mjs.
//
//   node bench/cputime.mjs [runs] [regexp]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const SEEDS = { a: 1, b: 2, c: 3, x: 4, y: 5, w: 6, bias: 7, w1: 8, b1: 9, w2: 10, b2: 11, target: 12 };
// fill is peers.mjs's (TestPeers' peerFill); peers.mjs runs its main on import.
function fill(name, n) {
  const scale = name === 'w' || name === 'w1' || name === 'w2' ? 1 / 16 : 1;
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = (((40503 * i + 9973 * SEEDS[name]) % 65536) - 32768) / 32768 * scale;
  return v;
}

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, 'peers', 'peers.mjs'));
const ort = require('onnxruntime-node');
const runs = Number(process.argv[2] ?? 15);
const only = new RegExp(process.argv[3] ?? '');
const dir = path.join(here, 'peers', 'models');
for (const f of fs.readdirSync(dir).sort()) {
  const name = f.replace(/\.onnx$/, '');
  if (!f.endsWith('.onnx') || !only.test(name)) continue;
  const sess = await ort.InferenceSession.create(path.join(dir, f),
    { graphOptimizationLevel: 'all', executionMode: 'sequential', executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1 });
  const feeds = {};
  for (const m of sess.inputMetadata) feeds[m.name] = new ort.Tensor('float32', fill(m.name, m.shape.reduce((a, b) => a * b, 1)), m.shape);
  await sess.run(feeds);
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const c = process.cpuUsage();
    const y = (await sess.run(feeds))[sess.outputNames[0]].data;
    const d = process.cpuUsage(c);
    best = Math.min(best, (d.user + d.system) / 1e3);
    if (y.length === 0) throw new Error('empty output');
  }
  console.log(`peer\tort-node-1t-cpu\t${name}\t${best.toFixed(4)}`);
  await sess.release();
}

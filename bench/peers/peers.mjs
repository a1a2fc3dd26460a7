// The JavaScript peers of gpucc's benchmarks (issues 22, 23, 24): ONNX
// Runtime for Node (CPU EP), ONNX Runtime Web's wasm EP in Node, and
// TF.js's wasm backend, on the workloads of bench/peers_test.go
// (TestPeers), printing its line format: peer, system, workload, best ms,
// the output's sum and absolute sum, tab separated.
//
//   node peers.mjs ort-node THREADS [runs] [regexp]
//   node peers.mjs ort-web  THREADS [runs] [regexp]
//   node peers.mjs tfjs     [runs] [regexp]
//
// ORT runs the exported models of onnx/testdata/models (and
// $GPUCC_PEER_MODELS) and the graphs make_onnx.py writes into ./models.
// Every input is fill()'s, the formula of TestPeers' peerFill; a model's x
// is its own input file. Each timed call includes what a caller pays: the
// inputs given as typed arrays, the output read back to a typed array.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire, register } from 'node:module';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

const SEEDS = { a: 1, b: 2, c: 3, x: 4, y: 5, w: 6, bias: 7, w1: 8, b1: 9, w2: 10, b2: 11, target: 12 };

// fill is peerFill: element i is (k - 32768)/32768·scale with
// k = (40503·i + 9973·seed) mod 65536, exact in float32.
export function fill(name, n) {
  const seed = SEEDS[name];
  if (seed === undefined) throw new Error(`fill: no seed for input ${name}`);
  const scale = name === 'w' || name === 'w1' || name === 'w2' ? 1 / 16 : 1;
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = (((40503 * i + 9973 * seed) % 65536) - 32768) / 32768 * scale;
  return v;
}

const fileName = (w) => w.replace(/[^A-Za-z0-9-]+/g, '_');
const size = (dims) => dims.reduce((a, b) => a * b, 1);

// checksum is TestPeers' peerChecksum: the position-weighted sum
// Σ y[i]·(2654435761·i mod 2³²)/2³² and the absolute sum.
function checksum(data) {
  let s = 0, a = 0;
  for (let i = 0; i < data.length; i++) {
    s += data[i] * ((Math.imul(i, 2654435761) >>> 0) / 4294967296);
    a += Math.abs(data[i]);
  }
  return [s, a];
}

async function best(fn, runs) {
  let out = await fn();
  let b = Infinity;
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    await fn();
    b = Math.min(b, Number(process.hrtime.bigint() - t) / 1e6);
  }
  return [b, out];
}

function print(system, name, ms, out) {
  const [s, a] = checksum(out);
  console.log(`peer\t${system}\t${name}\t${ms.toFixed(4)}\t${s.toPrecision(9)}\t${a.toPrecision(9)}`);
}

// The workloads ORT runs: the exported models, then the graphs of
// make_onnx.py, in TestPeers' order.
const ortWork = [
  'model/mlp', 'model/digits', 'model/transformer',
  'conv/resnet3x3-64', 'conv/depthwise3x3-256', 'conv/maxpool3x3s2-64',
  'relu(a*b+c)/1M', 'chain16/1M', 'softmax/1024x1024', 'layernorm/1024x1024', 'rowsum/1024x1024',
  'colsum/1024x1024', 'rowmax/1024x1024', 'matmul/512', 'matmul/1024', 'mlp/256x784-256-10',
];

function modelFile(w) {
  if (w.startsWith('model/')) {
    const m = w.slice(6);
    const dirs = [process.env.GPUCC_PEER_MODELS, path.join(here, '..', '..', 'onnx', 'testdata', 'models')];
    for (const d of dirs) {
      if (d && fs.existsSync(path.join(d, m + '.onnx'))) return [path.join(d, m + '.onnx'), path.join(d, m + '.input.bin')];
    }
    return [null, null];
  }
  return [path.join(here, 'models', fileName(w) + '.onnx'), null];
}

async function runORT(kind, threads, runs, only) {
  const ort = kind === 'ort-node' ? await import('onnxruntime-node') : await import('onnxruntime-web');
  const system = `${kind}-${threads}t`;
  const opts = { graphOptimizationLevel: 'all', executionMode: 'sequential' };
  if (kind === 'ort-node') {
    Object.assign(opts, { executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1 });
  } else {
    ort.env.wasm.numThreads = threads;
    ort.env.wasm.simd = true;
    opts.executionProviders = ['wasm'];
  }
  for (const w of ortWork) {
    if (!only.test(w)) continue;
    const [file, input] = modelFile(w);
    if (!file || !fs.existsSync(file)) {
      console.log(`skip\t${system}\t${w}\tno model file (${file ?? 'not exported here'}; make_onnx.py writes ./models)`);
      continue;
    }
    const sess = await ort.InferenceSession.create(file, opts);
    const feeds = {};
    for (const name of sess.inputNames) {
      const meta = sess.inputMetadata.find((m) => m.name === name);
      const dims = meta.shape;
      let data;
      if (input) {
        const raw = fs.readFileSync(input);
        data = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
      } else {
        data = fill(name, size(dims));
      }
      feeds[name] = new ort.Tensor('float32', data, dims);
    }
    const out = sess.outputNames[0];
    const [ms, y] = await best(async () => (await sess.run(feeds))[out].data, runs);
    print(system, w, ms, y);
    await sess.release();
  }
}

async function runTFJS(runs, only) {
  const tf = await import('@tensorflow/tfjs-core');
  // The gradients tf.train.sgd needs are only in tfjs-core's ES module
  // build; they register into the same global registry (esm_js_hook.mjs
  // says why the hook).
  register('./esm_js_hook.mjs', import.meta.url);
  await import('@tensorflow/tfjs-core/dist/register_all_gradients.js');
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  wasm.setWasmPaths(path.join(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm')), path.sep));
  await tf.setBackend('wasm');
  await tf.ready();
  const simd = tf.env().getBool('WASM_HAS_SIMD_SUPPORT');
  const threads = tf.env().getBool('WASM_HAS_MULTITHREAD_SUPPORT') ? 'mt' : '1t';
  const system = `tfjs-wasm-${threads}`;
  console.error(`tfjs ${tf.version_core} wasm, simd ${simd}, threads ${threads}`);
  const t = (name, shape) => tf.tensor(fill(name, size(shape)), shape);
  const m1 = [1 << 20];
  const sq = [1024, 1024];
  const work = [];
  const add = (name, inputs, f, post = (d) => d) => work.push({ name, inputs, f, post });
  // nchw reorders an NHWC output [1, h, w, c] to NCHW for the checksum,
  // after the timing.
  const nchw = (h, w, c) => (d) => {
    const o = new Float32Array(d.length);
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) for (let k = 0; k < c; k++) o[(k * h + y) * w + x] = d[(y * w + x) * c + k];
    return o;
  };
  add('conv/resnet3x3-64', () => {
    // TF.js's wasm convolution is NHWC: the NCHW inputs are transposed once, outside the timing.
    const x = tf.transpose(t('x', [1, 64, 56, 56]), [0, 2, 3, 1]);
    const w = tf.transpose(t('w', [64, 64, 3, 3]), [2, 3, 1, 0]);
    return [x, w, t('bias', [64])];
  }, (x, w, b) => tf.fused.conv2d({ x, filter: w, strides: 1, pad: [[0, 0], [1, 1], [1, 1], [0, 0]], bias: b, activation: 'relu' }), nchw(56, 56, 64));
  add('conv/depthwise3x3-256', () => {
    const x = tf.transpose(t('x', [1, 256, 56, 56]), [0, 2, 3, 1]);
    const w = tf.transpose(t('w', [256, 1, 3, 3]), [2, 3, 0, 1]);
    return [x, w, t('bias', [256])];
  }, (x, w, b) => tf.fused.depthwiseConv2d({ x, filter: w, strides: 1, pad: [[0, 0], [1, 1], [1, 1], [0, 0]], bias: b, activation: 'relu' }), nchw(56, 56, 256));
  add('conv/maxpool3x3s2-64', () => [tf.transpose(t('x', [1, 64, 56, 56]), [0, 2, 3, 1])], (x) => tf.maxPool(x, 3, 2, 1), nchw(28, 28, 64));
  add('relu(a*b+c)/1M', () => [t('a', m1), t('b', m1), t('c', m1)], (a, b, c) => tf.relu(tf.add(tf.mul(a, b), c)));
  add('chain16/1M', () => [t('x', m1), t('y', m1)], (x, y) => {
    let v = x;
    for (let i = 0; i < 16; i++) {
      v = [() => tf.relu(v), () => tf.mul(v, y), () => tf.add(v, 0.25), () => tf.sub(v, y), () => tf.mul(v, 0.5), () => tf.add(v, x)][i % 6]();
    }
    return v;
  });
  add('softmax/1024x1024', () => [t('x', sq)], (x) => tf.softmax(x));
  add('layernorm/1024x1024', () => [t('x', sq)], (x) => {
    // TF.js has no layer-norm op: what tf.layers.layerNormalization computes, without scale and shift.
    const { mean, variance } = tf.moments(x, 1, true);
    return tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, 1e-5)));
  });
  add('rowsum/1024x1024', () => [t('x', sq)], (x) => tf.sum(x, 1));
  add('colsum/1024x1024', () => [t('x', sq)], (x) => tf.sum(x, 0));
  add('rowmax/1024x1024', () => [t('x', sq)], (x) => tf.max(x, 1));
  add('matmul/512', () => [t('a', [512, 512]), t('b', [512, 512])], (a, b) => tf.matMul(a, b));
  add('matmul/1024', () => [t('a', sq), t('b', sq)], (a, b) => tf.matMul(a, b));
  const mlp = (x, w1, b1, w2, b2) => tf.add(tf.matMul(tf.relu(tf.add(tf.matMul(x, w1), b1)), w2), b2);
  const mlpIn = () => [t('x', [256, 784]), t('w1', [784, 256]), t('b1', [1, 256]), t('w2', [256, 10]), t('b2', [1, 10])];
  add('mlp/256x784-256-10', mlpIn, mlp);
  for (const w of work) {
    if (!only.test(w.name)) continue;
    const ins = w.inputs();
    const [ms, y] = await best(async () => {
      const r = tf.tidy(() => w.f(...ins));
      const d = await r.data(); // the output read back, as a caller would
      r.dispose();
      return d;
    }, runs);
    print(system, w.name, ms, w.post(y));
    ins.forEach((x) => x.dispose());
  }
  if (only.test('mlpstep/256x784-256-10')) {
    // One SGD step (lr 0.01) on sum((y - target)²)/256, parameters and
    // batch resident, the loss read back: TestPeers' Trainer.Step.
    const [x, ...ps] = mlpIn();
    const vars = ps.map((p) => tf.variable(p));
    const target = t('target', [256, 10]);
    const opt = tf.train.sgd(0.01);
    const [ms, loss] = await best(async () => {
      const l = opt.minimize(() => {
        const d = tf.sub(mlp(x, ...vars), target);
        return tf.mul(tf.sum(tf.mul(d, d)), 1 / 256);
      }, true, vars);
      const v = await l.data();
      l.dispose();
      return v;
    }, runs);
    print(system, 'mlpstep/256x784-256-10', ms, loss);
  }
}

async function main() {
  const [kind, ...rest] = process.argv.slice(2);
  if (kind === 'ort-node' || kind === 'ort-web') {
    const threads = Number(rest[0] ?? 1);
    await runORT(kind, threads, Number(rest[1] ?? 15), new RegExp(rest[2] ?? ''));
  } else if (kind === 'tfjs') {
    await runTFJS(Number(rest[0] ?? 15), new RegExp(rest[1] ?? ''));
  } else {
    console.error('usage: node peers.mjs ort-node|ort-web THREADS [runs] [regexp] | tfjs [runs] [regexp]');
    process.exit(2);
  }
}

await main();

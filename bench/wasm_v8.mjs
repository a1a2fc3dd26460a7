// gpucc's wasm kernels in V8 (Node's, the engine of Chromium's page): the
// modules runtime/wasm's TestWasmKernelProfile writes with GPUCC_V8_DIR
// (scalar, as the wasm backend builds it, and the same C with SIMD128),
// each loaded with the linear memory wazero had (the model's inputs and
// weights) and run as the backend runs it, every kernel call in order.
// Prints the least process CPU time of a whole run over RUNS (default 5).
//
//   node bench/wasm_v8.mjs DIR [RUNS]
import fs from 'node:fs';
import path from 'node:path';

const dir = process.argv[2];
const runs = Number(process.argv[3] ?? 5);
for (const name of ['scalar', 'simd128']) {
  const file = path.join(dir, name + '.wasm');
  if (!fs.existsSync(file)) continue;
  const { instance } = await WebAssembly.instantiate(fs.readFileSync(file), {});
  const mem = instance.exports.memory;
  const img = fs.readFileSync(path.join(dir, name + '.mem'));
  const have = mem.buffer.byteLength;
  if (img.length > have) mem.grow(Math.ceil((img.length - have) / 65536));
  new Uint8Array(mem.buffer).set(img);
  const calls = JSON.parse(fs.readFileSync(path.join(dir, name + '.json'), 'utf8'))
    .map((c) => [instance.exports[c.export], c.args.map(Number)]);
  const run = () => { for (const [f, a] of calls) f(...a); };
  run();
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const c = process.cpuUsage();
    run();
    const d = process.cpuUsage(c);
    best = Math.min(best, (d.user + d.system) / 1e3);
  }
  console.log(`v8\tgpucc-wasm-${name}-1t-cpu\t${path.basename(dir)}\t${best.toFixed(4)}`);
}

#!/usr/bin/env node
// Per-op-type time of ONNX Runtime on one model, from ORT's own profiler, to set beside `ophost bench --profile`.
//
//   NODE_PATH=DIR/node_modules node tools/bench/ort_profile.js MODEL NAME=D0,D1,... [ITERS=20] [--nodes]
//                                                               [--save FILE]
//
// Same deterministic --random input as ort-run.js (fmix32 of the element index), 1 intra-op thread, all graph
// optimisations. Prints, per op type (after ORT's fusions), the mean ms per run and its share; --nodes prints the
// 25 slowest nodes too; --save FILE keeps ORT's own profile (Chrome trace JSON, every run, warm-ups included;
// per node: name, dur in us, args.op_name, args.input_type_shape) for tools/bench/node_compare.py. The first 3
// runs are warm-ups and are left out.
const fs = require('fs'); const os = require('os'); const path = require('path');
const ort = require('onnxruntime-node');
const [model, input, itersArg, ...rest] = process.argv.slice(2);
if (!model || !input) { console.error('usage: ort_profile.js MODEL NAME=D0,D1,... [ITERS] [--nodes]'); process.exit(2); }
const iters = +(itersArg || 20), warm = 3;
function fmix32(h) { h ^= h >>> 16; h = Math.imul(h, 0x85ebca6b); h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35); h ^= h >>> 16; return h >>> 0; }
(async () => {
  const prefix = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ortprof-')), 'p');
  const s = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, interOpNumThreads: 1,
    graphOptimizationLevel: 'all', enableProfiling: true, profileFilePrefix: prefix });
  const [name, sh] = input.split('='); const dims = sh.split(',').map(Number);
  const n = dims.reduce((a, b) => a * b, 1); const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = ((fmix32(i) >>> 8) / 16777216) * 2 - 1;
  const feeds = { [name]: new ort.Tensor('float32', a, dims) };
  for (let i = 0; i < warm + iters; i++) await s.run(feeds);
  const dir = path.dirname(prefix);
  s.endProfiling && s.endProfiling();
  await s.release();
  const file = fs.readdirSync(dir).map(f => path.join(dir, f)).find(f => f.endsWith('.json'));
  const ev = JSON.parse(fs.readFileSync(file, 'utf8'));
  const save = rest.indexOf('--save');
  if (save >= 0) fs.copyFileSync(file, rest[save + 1]);
  const runs = ev.filter(e => e.cat === 'Session' && e.name === 'model_run');
  const t0 = runs[warm].ts;
  const byOp = new Map(), byNode = new Map(); let total = 0;
  for (const e of ev) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time') || e.ts < t0) continue;
    const op = e.args.op_name; byOp.set(op, (byOp.get(op) || 0) + e.dur);
    const k = e.name.replace(/_kernel_time$/, '') + ' (' + op + ')'; byNode.set(k, (byNode.get(k) || 0) + e.dur);
    total += e.dur;
  }
  const runMs = runs.slice(warm).reduce((s, e) => s + e.dur, 0) / iters / 1000;
  console.log(`ORT ${path.basename(model)}: ${runMs.toFixed(3)} ms per run (profiled), kernels ${(total / iters / 1000).toFixed(3)} ms`);
  for (const [op, us] of [...byOp].sort((x, y) => y[1] - x[1]))
    console.log(`  ${op.padEnd(28)} ${(us / iters / 1000).toFixed(3).padStart(9)} ms  ${(100 * us / total).toFixed(1).padStart(5)}%`);
  if (rest.includes('--nodes')) {
    console.log('slowest nodes:');
    for (const [k, us] of [...byNode].sort((x, y) => y[1] - x[1]).slice(0, 25))
      console.log(`  ${(us / iters / 1000).toFixed(3).padStart(8)} ms  ${k}`);
  }
  console.log(`nodes per run: ${ev.filter(e => e.cat === "Node" && e.name.endsWith("_kernel_time") && e.ts >= t0).length / iters}`);
  fs.rmSync(dir, { recursive: true, force: true });
})().catch(e => { console.error(String(e.message || e)); process.exit(1); });

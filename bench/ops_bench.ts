/**
 * Per-op overhead: `add` of two 16-element F32 tensors, output allocation included, against a plain TypeScript
 * loop that allocates its output too. Target: under 1 µs per op in Deno and in Bun. (A small tensor created and
 * disposed is in memory_bench.ts.)
 *
 *   deno bench -A bench/ops_bench.ts      Deno: groups with the TypeScript loop as the baseline
 *   bun bench/ops_bench.ts                Bun: the same cases timed in a loop, ratios in a table
 *
 * @module
 */
import { ActivationScope, ops, Tensor } from "../mod.ts";
import { type BenchCase, runBenchmarks } from "./harness.ts";

const BATCH = 1000;
let sink = 0;

const a = Tensor.from(Float32Array.from({ length: 16 }, (_, i) => i));
const b = Tensor.from(Float32Array.from({ length: 16 }, (_, i) => 2 * i));
const ja = a.toArray() as Float32Array;
const jb = b.toArray() as Float32Array;

const addGroup = `add of two 16-element F32 tensors, output allocated, ×${BATCH}`;

const cases: BenchCase[] = [
  {
    group: addGroup,
    name: "TypeScript loop into a new Float32Array(16)",
    baseline: true,
    fn: () => {
      for (let n = 0; n < BATCH; n++) {
        const out = new Float32Array(16);
        for (let i = 0; i < 16; i++) out[i] = ja[i] + jb[i];
        sink += out[15];
      }
    },
  },
  {
    group: addGroup,
    name: "ops.add in an ActivationScope (freed by the scope)",
    fn: () => {
      using _ = new ActivationScope();
      for (let n = 0; n < BATCH; n++) ops.add(a, b);
    },
  },
  {
    group: addGroup,
    name: "ops.add then dispose, no scope",
    fn: () => {
      for (let n = 0; n < BATCH; n++) ops.add(a, b).dispose();
    },
  },
];

runBenchmarks(cases, { perCall: BATCH, note: () => `(sink ${sink})` });

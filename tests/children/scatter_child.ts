// Child process of kernels_scatter.test.ts: random cases of the indexAdd kernel and of max pooling with
// dilation, ceil-mode extents and plane-local indices, native against reference, under the ISA forced by
// ZIGTENSOR_ISA; prints one JSON report with a hash of every exact-mode output (equal across ISAs).
import { kernelInfo } from "../../src/native/kernel_info.ts";
import { nativeKernels, referenceKernels } from "../../src/kernels/sets.ts";
import type { ComputeSettings, KernelOperand } from "../../src/kernels/types.ts";
import { sweepExtents } from "../../src/ops/common.ts";
import { contiguousView, fillF32, OperandPool, randomView, Rng } from "../helpers/operands.ts";

const failures: string[] = [];
let hash = 0x811c9dc5;
let cases = 0;

/** Bitwise equality, any NaN equal to any NaN (JavaScript does not keep a NaN's sign or payload). */
function compare(label: string, mode: string, a: KernelOperand, b: KernelOperand, float: boolean): void {
  const x = new Uint32Array(a.data.buffer, a.data.byteOffset, a.data.byteLength / 4);
  const y = new Uint32Array(b.data.buffer, b.data.byteOffset, b.data.byteLength / 4);
  const isNaN = (bits: number) => float && (bits & 0x7fffffff) > 0x7f800000;
  for (let i = 0; i < x.length; i++) {
    const nan = isNaN(x[i]) && isNaN(y[i]);
    if (x[i] !== y[i] && !nan) {
      failures.push(`${label}: element ${i} native ${y[i]} reference ${x[i]}`);
      return;
    }
    if (mode === "exact") hash = Math.imul(hash ^ (nan ? 0x7fc00000 : y[i]), 16777619) >>> 0;
  }
}

function settings(rng: Rng, mode: "exact" | "fast"): ComputeSettings {
  return { mode, threads: 1 + rng.int(4) };
}

function indexAddCase(pool: OperandPool, seed: number): void {
  const rng = new Rng(seed);
  const groups = 1 + rng.int(3);
  const count = rng.int(600);
  const width = 1 + rng.int(9);
  const rows = 1 + rng.int(10);
  const flat = rng.chance(0.5);
  const src = pool.operand("f32", randomView(rng, [groups, count, width], { broadcast: true }));
  fillF32(rng, src.data as Float32Array, rng.chance(0.8) ? "uniform" : "mixed");
  const index = pool.operand("i32", contiguousView([groups, count]));
  const ids = index.data as Int32Array;
  for (let b = 0; b < groups; b++) {
    for (let k = 0; k < count; k++) ids[b * count + k] = rng.int(rows) + (flat ? b * rows : 0);
  }
  const outRef = pool.operand("f32", randomView(rng, [groups, rows, width]));
  fillF32(rng, outRef.data as Float32Array, "uniform");
  const params = { groups, count, width, rows, flat };
  for (const mode of ["exact", "fast"] as const) {
    const ref = pool.twin(outRef);
    const nat = pool.twin(outRef);
    referenceKernels.indexAdd(params, ref, src, index, settings(rng, mode));
    nativeKernels.indexAdd(params, nat, src, index, settings(rng, mode));
    compare(`indexAdd seed ${seed} ${mode}`, mode, ref, nat, true);
  }
  cases++;
}

function maxPoolCase(pool: OperandPool, seed: number): void {
  const rng = new Rng(seed);
  const input: [number, number, number, number] = [
    1 + rng.int(2),
    1 + rng.int(3),
    1 + rng.int(12),
    1 + rng.int(12),
  ];
  const kernel: [number, number] = [1 + rng.int(4), 1 + rng.int(4)];
  const stride: [number, number] = [1 + rng.int(3), 1 + rng.int(3)];
  const padding: [number, number] = [rng.int(kernel[0]), rng.int(kernel[1])];
  const dilation: [number, number] = [1 + rng.int(3), 1 + rng.int(3)];
  const ceilMode = rng.chance(0.5);
  let output: [number, number];
  try {
    output = sweepExtents("case", input, kernel, stride, padding, dilation, ceilMode, true);
  } catch {
    return; // a geometry the op refuses
  }
  const params = { input, kernel, stride, padding, dilation, output, localIndices: rng.chance(0.5) };
  const shape = [input[0], input[1], output[0], output[1]];
  const x = pool.operand("f32", randomView(rng, input, { broadcast: true }));
  fillF32(rng, x.data as Float32Array, rng.chance(0.5) ? "ties" : "mixed");
  for (const mode of ["exact", "fast"] as const) {
    const outRef = pool.operand("f32", randomView(rng, shape));
    const outNat = pool.twin(outRef);
    const indRef = pool.operand("i32", randomView(rng, shape));
    const indNat = pool.twin(indRef);
    referenceKernels.maxPool2d(params, outRef, x, indRef, settings(rng, mode));
    nativeKernels.maxPool2d(params, outNat, x, indNat, settings(rng, mode));
    compare(`maxPool2d seed ${seed} ${mode} values`, mode, outRef, outNat, true);
    compare(`maxPool2d seed ${seed} ${mode} indices`, mode, indRef, indNat, false);
  }
  cases++;
}

const pool = new OperandPool();
try {
  for (let i = 0; i < 200; i++) {
    indexAddCase(pool, 9000 + i);
    maxPoolCase(pool, 7000 + i);
    if (i % 16 === 15) pool.release();
  }
} finally {
  pool.release();
}
console.log(JSON.stringify({ isa: kernelInfo().isa, cases, failures, hash }));

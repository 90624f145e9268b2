/**
 * Conformance of the native im2col/col2im kernels against the reference ones: random geometries (stride,
 * padding up to beyond the kernel, dilation), random operand layouts (permuted, gapped, reversed; broadcast
 * columns for col2im, as average pooling's backward passes), both modes and several thread counts. Values
 * must agree exactly (`Object.is` on every storage element, so -0 and NaN count).
 */
import { kernelInfo } from "../../src/native/kernel_info.ts";
import { nativeCol2im, nativeIm2col, referenceCol2im, referenceIm2col } from "../../src/kernels/conv.ts";
import type { ConvWindowParams } from "../../src/kernels/conv.ts";
import type { ArithmeticMode, KernelOperand } from "../../src/kernels/types.ts";
import { fillF32, OperandPool, randomView, Rng } from "./operands.ts";

/** What one conformance run found. */
export interface ConvConformanceReport {
  isa: string;
  cases: number;
  failures: string[];
}

/** A random geometry whose output is at least 1×1. */
export function randomConvParams(rng: Rng): ConvWindowParams {
  const kernel: [number, number] = [1 + rng.int(4), 1 + rng.int(4)];
  const dilation: [number, number] = [1 + rng.int(2), 1 + rng.int(3)];
  const stride: [number, number] = [1 + rng.int(3), 1 + rng.int(3)];
  const padding: [number, number] = [rng.int(kernel[0] + 1), rng.int(kernel[1] + 1)];
  const size = (axis: number) => {
    const span = dilation[axis] * (kernel[axis] - 1) + 1;
    return Math.max(1, span - 2 * padding[axis] + rng.int(9));
  };
  const h = size(0);
  const w = size(1);
  const extent = (s: number, axis: number) =>
    Math.floor((s + 2 * padding[axis] - dilation[axis] * (kernel[axis] - 1) - 1) / stride[axis]) + 1;
  return {
    input: [1 + rng.int(3), 1 + rng.int(4), h, w],
    kernel,
    stride,
    padding,
    dilation,
    output: [extent(h, 0), extent(w, 1)],
  };
}

function same(a: KernelOperand, b: KernelOperand): boolean {
  const x = a.data as Float32Array;
  const y = b.data as Float32Array;
  for (let i = 0; i < x.length; i++) if (!Object.is(x[i], y[i])) return false;
  return true;
}

/** Runs `count` random cases of each kernel from `seed` over the thread counts `threads`. */
export function runConvConformance(
  count: number,
  seed: number,
  threads: readonly number[],
): ConvConformanceReport {
  const rng = new Rng(seed);
  const failures: string[] = [];
  let cases = 0;
  for (let i = 0; i < count; i++) {
    const params = randomConvParams(rng);
    const [n, c, h, w] = params.input;
    const columnsShape = [n, c, params.kernel[0], params.kernel[1], params.output[0], params.output[1]];
    const mode: ArithmeticMode = rng.chance(0.5) ? "exact" : "fast";
    for (const direction of ["im2col", "col2im"] as const) {
      const pool = new OperandPool();
      try {
        const image = randomView(rng, [n, c, h, w], { broadcast: false });
        const columns = randomView(rng, columnsShape, { broadcast: direction === "col2im" });
        const [outView, inView] = direction === "im2col" ? [columns, image] : [image, columns];
        const a = pool.operand("f32", inView);
        fillF32(rng, a.data as Float32Array, direction === "im2col" ? "mixed" : "wide");
        const expected = pool.operand("f32", outView);
        fillF32(rng, expected.data as Float32Array, "uniform");
        const before = Float32Array.from(expected.data as Float32Array);
        const reference = direction === "im2col" ? referenceIm2col : referenceCol2im;
        reference(params, expected, a, { mode, threads: 1 });
        for (const t of threads) {
          const out = pool.operand("f32", outView);
          // The same random values as the reference started from: garbage where the kernel writes, and
          // gaps it must leave alone.
          (out.data as Float32Array).set(before);
          const native = direction === "im2col" ? nativeIm2col : nativeCol2im;
          native(params, out, a, { mode, threads: t });
          cases++;
          if (!same(out, expected)) {
            failures.push(
              `${direction} ${JSON.stringify(params)} ${mode} threads ${t} (case ${i}, seed ${seed})`,
            );
          }
        }
      } finally {
        pool.release();
      }
    }
  }
  return { isa: kernelInfo().isa, cases, failures };
}

/**
 * Conformance of the native convolution kernels against the reference ones. im2col/col2im: random geometries (stride,
 * padding up to beyond the kernel, dilation), random operand layouts (permuted, gapped, reversed; broadcast
 * columns for col2im, as average pooling's backward passes), both modes and several thread counts. Values
 * must agree exactly (`Object.is` on every storage element, so -0 and NaN count).
 */
import { kernelInfo } from "../../src/native/kernel_info.ts";
import {
  nativeCol2im,
  nativeConvProduct,
  nativeIm2col,
  referenceCol2im,
  referenceConvProduct,
  referenceIm2col,
} from "../../src/kernels/conv.ts";
import type { ConvProductParams, ConvWindowParams } from "../../src/kernels/conv.ts";
import { fastMatMulBound } from "../../src/kernels/matmul.ts";
import type { ArithmeticMode, KernelOperand } from "../../src/kernels/types.ts";
import { contiguousView, fillF32, OperandPool, randomView, Rng } from "./operands.ts";

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

/** The case count `runConvProductConformance` reports for `count` random cases over `threads`. */
export function convProductCases(count: number, threads: readonly number[], large: boolean): number {
  return (count + (large ? 2 : 0)) * 2 * threads.length;
}

/**
 * Conformance of the native convolution products (forward, weight gradient) against the reference: random
 * geometries and groups, random image and weight layouts, contiguous outputs and gradients; exact mode
 * bitwise (`Object.is`), fast mode within `fastMatMulBound` of the reference's sums (the bound's absolute
 * sums are the reference run on the operands' magnitudes). `large` adds two cases of K and OH·OW beyond the
 * GEMM's panel depth and enough work to split across threads, one with two groups.
 */
export function runConvProductConformance(
  count: number,
  seed: number,
  threads: readonly number[],
  large: boolean,
): ConvConformanceReport {
  const rng = new Rng(seed);
  const geometries: ConvProductCase[] = [];
  for (let i = 0; i < count; i++) {
    const window = randomConvParams(rng);
    const groups = 1 + rng.int(3);
    const c = groups * (1 + rng.int(3));
    const params = {
      ...window,
      input: [window.input[0], c, window.input[2], window.input[3]] as const,
      groups,
      outChannels: groups * (1 + rng.int(4)),
    };
    geometries.push({ params, mode: rng.chance(0.5) ? "exact" : "fast" });
  }
  if (large) {
    for (const groups of [1, 2]) {
      const params: ConvProductParams = {
        input: [2, 32 * groups, 20, 21],
        kernel: [3, 3],
        stride: [1, 1],
        padding: [1, 1],
        dilation: [1, 1],
        output: [20, 21],
        groups,
        outChannels: 24 * groups,
      };
      geometries.push({ params, mode: groups === 1 ? "exact" : "fast" });
    }
  }
  return { isa: kernelInfo().isa, ...checkConvProducts(rng, geometries, threads, seed) };
}

/** A product geometry and the mode to check it in. */
export interface ConvProductCase {
  params: ConvProductParams;
  mode: ArithmeticMode;
}

/**
 * Checks the native products (forward and weight gradient) of each case against the reference on random
 * image and weight layouts over the thread counts `threads`: exact mode bitwise, fast mode within
 * `fastMatMulBound`. Failures name the case and `seed`.
 */
export function checkConvProducts(
  rng: Rng,
  geometries: readonly ConvProductCase[],
  threads: readonly number[],
  seed: number,
): { cases: number; failures: string[] } {
  const failures: string[] = [];
  let cases = 0;
  for (const [i, { params, mode }] of geometries.entries()) {
    const [n, c, h, w] = params.input;
    const [kh, kw] = params.kernel;
    const [oh, ow] = params.output;
    const o = params.outChannels;
    const cg = c / params.groups;
    for (const kind of ["forward", "weight"] as const) {
      const pool = new OperandPool();
      try {
        const image = pool.operand("f32", randomView(rng, [n, c, h, w], { broadcast: false }));
        const aView = kind === "forward"
          ? randomView(rng, [o, cg, kh, kw], { broadcast: false })
          : contiguousView([n, o, oh, ow]);
        const a = pool.operand("f32", aView);
        const fill = mode === "exact" ? "wide" : "uniform";
        fillF32(rng, image.data as Float32Array, fill);
        fillF32(rng, a.data as Float32Array, fill);
        const outView = contiguousView(kind === "forward" ? [n, o, oh, ow] : [n, o, cg, kh, kw]);
        const expected = pool.operand("f32", outView);
        referenceConvProduct(params, kind, expected, a, image, { mode, threads: 1 });
        const bound = pool.operand("f32", outView);
        if (mode === "fast") {
          // The reference reads only data, offset and strides: the magnitudes need no native block.
          const magnitude = (operand: KernelOperand): KernelOperand => ({
            ...operand,
            data: (operand.data as Float32Array).map(Math.abs),
          });
          referenceConvProduct(params, kind, bound, magnitude(a), magnitude(image), { mode, threads: 1 });
        }
        const depth = kind === "forward" ? cg * kh * kw : oh * ow;
        for (const t of threads) {
          const out = pool.operand("f32", outView);
          nativeConvProduct(params, kind, out, a, image, { mode, threads: t });
          cases++;
          const ok = mode === "exact" ? same(out, expected) : (() => {
            const x = out.data as Float32Array;
            const y = expected.data as Float32Array;
            const b = bound.data as Float32Array;
            for (let j = 0; j < x.length; j++) {
              if (!(Math.abs(x[j] - y[j]) <= fastMatMulBound(depth, b[j]))) return false;
            }
            return true;
          })();
          if (!ok) {
            failures.push(`${kind} ${JSON.stringify(params)} ${mode} threads ${t} (case ${i}, seed ${seed})`);
          }
        }
      } finally {
        pool.release();
      }
    }
  }
  return { cases, failures };
}

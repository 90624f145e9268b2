/**
 * The CTC loss kernel: Graves' forward-backward algorithm in log space, in f64, over a batch. α once for the
 * loss and, when the gradient is wanted, β once for it, written scaled by each sequence's reduction factor, so
 * that the backward pass is one product with the output gradient. `nativeCtc` runs `zt_ctc_f32`
 * (`zig/kernels/ctc.zig`, the same bits on every ISA and thread count); `referenceCtc` is the same recursion
 * in plain TypeScript with `Math.exp`/`Math.log` and defines the result (the native one agrees within an f32
 * ulp: the two f64 exp/log algorithms differ by an f64 ulp at most).
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { NativePointer } from "../native/symbols.ts";
import type { ComputeSettings, KernelOperand } from "./types.ts";

/** The geometry and options of one CTC batch. */
export interface CtcParams {
  /** T: the steps of logProbs. */
  readonly steps: number;
  /** N: the sequences. */
  readonly batch: number;
  /** C: the classes. */
  readonly classes: number;
  /** The blank class. */
  readonly blank: number;
  /** 0 none, 1 mean, 2 sum. */
  readonly reduction: number;
  /** Whether infinite losses (and their gradients) become 0. */
  readonly zeroInfinity: boolean;
  /** S: the widest extended target, 2 · max target length + 1. */
  readonly width: number;
}

/**
 * A kernel that writes the loss of a batch into `out` ([N] for reduction none, else one value) and, when
 * `grad` is given, the gradient of that loss with respect to `logProbs` (each sequence's part times its
 * reduction factor; every element of grad [T, N, C] written). `logProbs` is contiguous F32 [T, N, C]; `meta`
 * (Int32) holds the input lengths [N], target lengths [N], label starts [N] and the labels concatenated;
 * `work` is F64 scratch of `ctcWorkspace(params, grad !== null)` elements.
 */
export type CtcKernel = (
  params: CtcParams,
  logProbs: KernelOperand,
  meta: KernelOperand,
  out: KernelOperand,
  grad: KernelOperand | null,
  work: KernelOperand,
  settings: ComputeSettings,
) => void;

/** The f64 elements of scratch the kernel needs: per sequence α (and β) [T, S] and C class sums; N losses. */
export function ctcWorkspace(params: CtcParams, wantGrad: boolean): number {
  const { steps, batch, classes, width } = params;
  return batch * (steps * width * (wantGrad ? 2 : 1) + classes) + batch;
}

const MODE = { fast: 0, exact: 1 } as const;
const NULL = null as unknown as NativePointer;

/** The native CTC kernel (`zt_ctc_f32`); assumes operands validated and sized by the caller. */
export const nativeCtc: CtcKernel = (params, logProbs, meta, out, grad, work, settings) => {
  args.op(0, MODE[settings.mode], settings.threads)
    .int(0, params.steps)
    .int(1, params.batch)
    .int(2, params.classes)
    .int(3, params.blank)
    .int(4, params.reduction)
    .int(5, params.zeroInfinity ? 1 : 0)
    .int(6, grad === null ? 0 : 1)
    .int(7, params.width)
    .int(8, logProbs.offset)
    .int(9, meta.offset)
    .int(10, out.offset)
    .int(11, grad?.offset ?? 0)
    .int(12, work.offset);
  native.zt_ctc_f32(
    args.pointer,
    logProbs.pointer,
    meta.pointer,
    out.pointer,
    grad?.pointer ?? NULL,
    work.pointer,
  );
};

/** log(eᵃ + eᵇ), exact for −∞. */
function logAdd(a: number, b: number): number {
  if (a === -Infinity) return b;
  if (b === -Infinity) return a;
  const m = a > b ? a : b;
  return m + Math.log(Math.exp(a - m) + Math.exp(b - m));
}

/** The reference CTC kernel: the native kernel's recursion and order, in TypeScript. */
export const referenceCtc: CtcKernel = (params, logProbs, meta, out, grad, work) => {
  const { steps, batch, classes, blank, reduction, zeroInfinity, width } = params;
  const lpData = logProbs.data as Float32Array;
  const m = meta.data as Int32Array;
  const w = work.data as Float64Array;
  const stride = steps * width * (grad === null ? 1 : 2) + classes;
  const losses = work.offset + batch * stride;
  const at = (i: number) => m[meta.offset + i];
  const lp = (t: number, n: number, c: number) => lpData[logProbs.offset + (t * batch + n) * classes + c];
  const scale = (n: number) => (reduction === 1 ? 1 / (batch * Math.max(at(batch + n), 1)) : 1);
  for (let n = 0; n < batch; n++) {
    const inputs = at(n);
    const labels = 3 * batch + at(2 * batch + n);
    const sLen = 2 * at(batch + n) + 1;
    const ext = (s: number) => (s % 2 === 0 ? blank : at(labels + (s >> 1)));
    const canSkip = (s: number) =>
      s >= 2 && s % 2 === 1 && at(labels + (s >> 1)) !== at(labels + (s >> 1) - 1);
    const alpha = work.offset + n * stride;
    for (let t = 0; t < inputs; t++) {
      for (let s = 0; s < sLen; s++) {
        let sum: number;
        if (t === 0) sum = s < 2 ? 0 : -Infinity;
        else {
          const prev = alpha + (t - 1) * sLen;
          sum = logAdd(w[prev + s], s >= 1 ? w[prev + s - 1] : -Infinity);
          if (canSkip(s)) sum = logAdd(sum, w[prev + s - 2]);
        }
        w[alpha + t * sLen + s] = sum === -Infinity ? -Infinity : sum + lp(t, n, ext(s));
      }
    }
    let nll: number;
    if (inputs === 0) nll = sLen === 1 ? 0 : Infinity;
    else {
      const last = alpha + (inputs - 1) * sLen;
      nll = -logAdd(w[last + sLen - 1], sLen >= 2 ? w[last + sLen - 2] : -Infinity);
    }
    const infinite = nll === Infinity;
    w[losses + n] = zeroInfinity && infinite ? 0 : nll;
    if (grad === null) continue;
    const g = grad.data as Float32Array;
    for (let t = 0; t < steps; t++) {
      g.fill(0, grad.offset + (t * batch + n) * classes, grad.offset + (t * batch + n + 1) * classes);
    }
    if (inputs === 0 || (zeroInfinity && infinite)) continue;
    const beta = alpha + steps * width;
    const sums = beta + steps * width;
    const factor = scale(n);
    for (let t = inputs - 1; t >= 0; t--) {
      const row = beta + t * sLen;
      for (let s = 0; s < sLen; s++) {
        let sum: number;
        if (t === inputs - 1) sum = s + 2 >= sLen ? 0 : -Infinity;
        else {
          const next = beta + (t + 1) * sLen;
          sum = logAdd(w[next + s], s + 1 < sLen ? w[next + s + 1] : -Infinity);
          if (s + 2 < sLen && canSkip(s + 2)) sum = logAdd(sum, w[next + s + 2]);
        }
        w[row + s] = sum === -Infinity ? -Infinity : sum + lp(t, n, ext(s));
      }
      w.fill(-Infinity, sums, sums + classes);
      for (let s = 0; s < sLen; s++) {
        const c = ext(s);
        w[sums + c] = logAdd(w[sums + c], w[alpha + t * sLen + s] + w[row + s]);
      }
      const base = grad.offset + (t * batch + n) * classes;
      for (let c = 0; c < classes; c++) {
        // A class no path visits at step t has no gradient, even where its probability is 0 (lp = −∞).
        if (w[sums + c] === -Infinity) continue;
        const occupancy = Math.exp(w[sums + c] - lp(t, n, c) + nll);
        g[base + c] = -occupancy * factor;
      }
    }
  }
  const o = out.data as Float32Array;
  if (reduction === 0) {
    for (let n = 0; n < batch; n++) o[out.offset + n] = w[losses + n];
  } else {
    let total = 0;
    for (let n = 0; n < batch; n++) total += w[losses + n] * scale(n);
    o[out.offset] = total;
  }
};

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
import { type ComputeSettings, type KernelOperand, MODE_CODE } from "./types.ts";

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

/**
 * The f64 elements of scratch the kernel needs: per sequence α (and β) [T, S + 4] (rows padded with −∞ on
 * both sides), one row of log-probabilities, S + 2 skip terms and C class sums; then N losses.
 */
export function ctcWorkspace(params: CtcParams, wantGrad: boolean): number {
  const { steps, batch, classes, width } = params;
  return batch * (steps * (width + 4) * (wantGrad ? 2 : 1) + 2 * width + 2 + classes) + batch;
}

const NULL = null as unknown as NativePointer;

/** The native CTC kernel (`zt_ctc_f32`); assumes operands validated and sized by the caller. */
export const nativeCtc: CtcKernel = (params, logProbs, meta, out, grad, work, settings) => {
  args.op(0, MODE_CODE[settings.mode], settings.threads)
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

/** log(eᵃ + eᵇ + eᶜ) = m + log(e^(a−m) + e^(b−m) + e^(c−m)) with m the largest (−∞ when all are). */
function logSum3(a: number, b: number, c: number): number {
  const m1 = a > b ? a : b;
  const m = m1 > c ? m1 : c;
  if (m === -Infinity) return -Infinity;
  return m + Math.log(Math.exp(a - m) + Math.exp(b - m) + Math.exp(c - m));
}

/** One recursion step: the log-sum of three neighbours plus the step's log-probability, −∞ where the sum is. */
function cell(a: number, b: number, c: number, lp: number): number {
  const sum = logSum3(a, b, c);
  return sum === -Infinity ? -Infinity : sum + lp;
}

/** The reference CTC kernel: the native kernel's recursion, layout and order, in TypeScript. */
export const referenceCtc: CtcKernel = (params, logProbs, meta, out, grad, work) => {
  const { steps, batch, classes, blank, reduction, zeroInfinity, width } = params;
  const lpData = logProbs.data as Float32Array;
  const m = meta.data as Int32Array;
  const w = work.data as Float64Array;
  const r = width + 4;
  const stride = steps * r * (grad === null ? 1 : 2) + 2 * width + 2 + classes;
  const losses = work.offset + batch * stride;
  const at = (i: number) => m[meta.offset + i];
  const scale = (n: number) => (reduction === 1 ? 1 / (batch * Math.max(at(batch + n), 1)) : 1);
  for (let n = 0; n < batch; n++) {
    const inputs = at(n);
    const labels = 3 * batch + at(2 * batch + n);
    const sLen = 2 * at(batch + n) + 1;
    const ext = (s: number) => (s % 2 === 0 ? blank : at(labels + (s >> 1)));
    const alpha = work.offset + n * stride;
    const beta = alpha + steps * r;
    const lpe = alpha + steps * r * (grad === null ? 1 : 2);
    const skip = lpe + width;
    const sums = skip + width + 2;
    for (let s = 0; s < sLen + 2; s++) {
      const ok = s >= 2 && s < sLen && s % 2 === 1 && at(labels + (s >> 1)) !== at(labels + (s >> 1) - 1);
      w[skip + s] = ok ? 0 : -Infinity;
    }
    const gather = (t: number) => {
      const base = logProbs.offset + (t * batch + n) * classes;
      for (let s = 0; s < sLen; s++) w[lpe + s] = lpData[base + ext(s)];
    };
    const pad = (row: number) => {
      w[row] =
        w[row + 1] =
        w[row + 2 + sLen] =
        w[row + 3 + sLen] =
          -Infinity;
    };
    for (let t = 0; t < inputs; t++) {
      const row = alpha + t * r;
      pad(row);
      gather(t);
      const prev = alpha + (t - 1) * r;
      for (let s = 0; s < sLen; s++) {
        w[row + 2 + s] = t === 0
          ? (s < 2 ? 0 + w[lpe + s] : -Infinity)
          : cell(w[prev + 2 + s], w[prev + 1 + s], w[prev + s] + w[skip + s], w[lpe + s]);
      }
    }
    let nll: number;
    if (inputs === 0) nll = sLen === 1 ? 0 : Infinity;
    else {
      const last = alpha + (inputs - 1) * r + 2;
      nll = -logSum3(w[last + sLen - 1], w[last + sLen - 2], -Infinity);
    }
    const infinite = nll === Infinity;
    w[losses + n] = zeroInfinity && infinite ? 0 : nll;
    if (grad === null) continue;
    const g = grad.data as Float32Array;
    for (let t = 0; t < steps; t++) {
      g.fill(0, grad.offset + (t * batch + n) * classes, grad.offset + (t * batch + n + 1) * classes);
    }
    if (inputs === 0 || (zeroInfinity && infinite)) continue;
    const factor = scale(n);
    for (let t = inputs - 1; t >= 0; t--) {
      const row = beta + t * r;
      pad(row);
      gather(t);
      const next = beta + (t + 1) * r;
      for (let s = 0; s < sLen; s++) {
        w[row + 2 + s] = t === inputs - 1
          ? (s + 2 >= sLen ? 0 + w[lpe + s] : -Infinity)
          : cell(w[next + 2 + s], w[next + 3 + s], w[next + 4 + s] + w[skip + 2 + s], w[lpe + s]);
      }
      // Each position's share of the paths through step t over the probability there, into α's row.
      const aRow = alpha + t * r + 2;
      for (let s = 0; s < sLen; s++) {
        const e = w[aRow + s] + w[row + 2 + s];
        w[aRow + s] = e === -Infinity ? 0 : Math.exp(e - w[lpe + s] + nll);
      }
      w.fill(0, sums, sums + classes);
      for (let s = 0; s < sLen; s++) w[sums + ext(s)] += w[aRow + s];
      const base = grad.offset + (t * batch + n) * classes;
      for (let c = 0; c < classes; c++) {
        // A class no path visits at step t has no gradient, even where its probability is 0 (lp = −∞).
        if (w[sums + c] !== 0) g[base + c] = -w[sums + c] * factor;
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

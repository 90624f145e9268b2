/**
 * The class-loss kernels: nllLoss and crossEntropy (log-softmax over the classes fused with the pick of the
 * target, the class weights, label smoothing and the reduction), forward and backward
 * (`zig/kernels/nll.zig` documents the formulas and the work layout). `nativeNll` runs `zt_nll_f32`;
 * `referenceNll` is the same in plain TypeScript, row by row in row-major order, every step in f64, each sum
 * in ascending order, each result rounded once: it defines the bits the native kernel gives in exact mode
 * (within 1 ulp where an exponential or a logarithm is involved: `Math.exp`/`Math.log` against math.zig's).
 * Index targets are checked before anything is written; `false` means one is neither `ignoreIndex` nor a
 * class in [0, C).
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { NativePointer } from "../native/symbols.ts";
import { kernelCodes } from "../core/op_table.ts";
import type { KernelCode, KernelCodes } from "../core/op_table.ts";
import { type ComputeSettings, type KernelOperand, MODE_CODE } from "./types.ts";

/** The class losses by kernel name (from the op table). */
export const NllOp: KernelCodes["nll"] = kernelCodes("nll");
/** A class-loss kernel's operation code. */
export type NllOp = KernelCode<"nll">;

/** What one call computes: the loss, the input's gradient, or a probability target's gradient. */
export const NllPhase = { Forward: 0, InputGrad: 1, TargetGrad: 2 } as const;
/** A phase of `NllPhase`. */
export type NllPhase = (typeof NllPhase)[keyof typeof NllPhase];

/** The geometry and options of one call. */
export interface NllParams {
  /** nllLoss or crossEntropy. */
  readonly op: NllOp;
  /** The loss or one of the gradients. */
  readonly phase: NllPhase;
  /** [rows..., C]: the class axis last. */
  readonly shape: readonly number[];
  /** 0 none, 1 mean, 2 sum. */
  readonly reduction: number;
  /** The index target that takes no part. */
  readonly ignoreIndex: number;
  /** Whether the target holds probabilities (F32 over the whole shape) rather than class indices. */
  readonly probabilities: boolean;
  /** ε, in [0, 1]. */
  readonly labelSmoothing: number;
}

/**
 * A class-loss kernel. `x` and the output follow `params.shape` (the output over the rows only, strides 0 for
 * a reduced loss, in the forward phase); `target` follows the rows (I32 or I64) or the whole shape (F32
 * probabilities); `weight` is a contiguous F32 [C] from its offset, or null; `work` is F64 of
 * `nllWorkspace(rows)` elements from its offset, filled by the forward phase and read by the backward ones;
 * `g` (backward) follows the rows. Returns false, having written nothing, when an index target is out of
 * range.
 */
export type NllKernel = (
  params: NllParams,
  x: KernelOperand,
  target: KernelOperand,
  weight: KernelOperand | null,
  out: KernelOperand,
  work: KernelOperand,
  g: KernelOperand | null,
  settings: ComputeSettings,
) => boolean;

/** The f64 elements of work for `rows` rows: log-sum-exps, losses, row weights, and the mean's divisor. */
export function nllWorkspace(rows: number): number {
  return 3 * rows + 1;
}

const NULL = null as unknown as NativePointer;

/** The native kernel (`zt_nll_f32`); assumes operands validated and sized by the op. */
export const nativeNll: NllKernel = (params, x, target, weight, out, work, g, settings) => {
  args.shape(params.shape)
    .operand(0, x.offset, x.strides)
    .operand(1, target.offset, target.strides)
    .operand(2, out.offset, out.strides)
    .operand(3, g?.offset ?? 0, g?.strides ?? params.shape.map(() => 0))
    .op(params.op, MODE_CODE[settings.mode], settings.threads)
    .int(0, params.phase)
    .int(1, params.reduction)
    .int(2, params.ignoreIndex)
    .int(3, params.probabilities ? 0 : target.data.BYTES_PER_ELEMENT)
    .int(4, weight?.offset ?? 0)
    .int(5, work.offset)
    .float(0, params.labelSmoothing);
  return native.zt_nll_f32(
    args.pointer,
    x.pointer,
    target.pointer,
    weight?.pointer ?? NULL,
    out.pointer,
    work.pointer,
    g?.pointer ?? NULL,
  ) === 0;
};

/** The element offset of every row of `shape` (the rows, without the class axis) in each operand. */
function rowOffsets(rows: readonly number[], operand: KernelOperand | null): number[] {
  const count = rows.reduce((a, b) => a * b, 1);
  const out = new Array<number>(count);
  if (count === 0) return out;
  const coord = rows.map(() => 0);
  let at = operand?.offset ?? 0;
  for (let j = 0; j < count; j++) {
    out[j] = at;
    for (let d = rows.length - 1; d >= 0; d--) {
      coord[d]++;
      at += operand?.strides[d] ?? 0;
      if (coord[d] < rows[d]) break;
      at -= rows[d] * (operand?.strides[d] ?? 0);
      coord[d] = 0;
    }
  }
  return out;
}

/** The reference kernel: the native kernel's meaning in plain TypeScript. */
export const referenceNll: NllKernel = (params, x, target, weight, out, work, g) => {
  const { shape, reduction, ignoreIndex, labelSmoothing: eps } = params;
  const r = shape.length - 1;
  const classes = shape[r];
  const rowShape = shape.slice(0, r);
  const xs = x.data as Float32Array;
  const ts = target.data;
  const os = out.data as Float32Array;
  const ws = work.data as Float64Array;
  const wo = work.offset;
  const xRows = rowOffsets(rowShape, x);
  const tRows = rowOffsets(rowShape, target);
  const oRows = rowOffsets(rowShape, out);
  const gRows = rowOffsets(rowShape, g);
  const rows = xRows.length;
  const [cx, ct, co] = [x.strides[r], target.strides[r], out.strides[r]];
  const w = (c: number) => (weight === null ? 1 : (weight.data as Float32Array)[weight.offset + c]);
  const share = eps / classes;
  const classOf = (j: number) => Number(ts[tRows[j]]);
  const q = (j: number, c: number) => {
    const y = (ts as Float32Array)[tRows[j] + c * ct];
    return eps === 0 ? y : (1 - eps) * y + share;
  };
  const xAt = (j: number, c: number) => xs[xRows[j] + c * cx];
  const lseOf = (j: number) => {
    let m = -Infinity;
    for (let c = 0; c < classes; c++) {
      const v = xAt(j, c);
      if (v !== v) {
        m = NaN;
        break;
      }
      if (v > m) m = v;
    }
    let s = 0;
    for (let c = 0; c < classes; c++) s += Math.exp(xAt(j, c) - m);
    return m + Math.log(s);
  };
  let weightSum = 0;
  for (let c = 0; c < classes; c++) weightSum += w(c);
  if (params.phase === NllPhase.Forward) {
    if (!params.probabilities) {
      for (let j = 0; j < rows; j++) {
        const t = classOf(j);
        if (t !== ignoreIndex && (t < 0 || t >= classes)) return false;
      }
    }
    for (let j = 0; j < rows; j++) {
      let [loss, rowWeight, lse] = [0, 0, 0];
      if (params.probabilities) {
        lse = lseOf(j);
        for (let c = 0; c < classes; c++) loss += (w(c) * q(j, c)) * (lse - xAt(j, c));
        rowWeight = 1;
      } else {
        const t = classOf(j);
        if (t !== ignoreIndex) {
          rowWeight = w(t);
          if (params.op === NllOp.NllLoss) {
            loss = -(rowWeight * xAt(j, t));
          } else {
            lse = lseOf(j);
            loss = rowWeight * (lse - xAt(j, t));
            if (eps > 0) {
              let b = 0;
              for (let c = 0; c < classes; c++) b += w(c) * (lse - xAt(j, c));
              loss = (1 - eps) * loss + share * b;
            }
          }
        }
      }
      ws[wo + j] = lse;
      ws[wo + rows + j] = loss;
      ws[wo + 2 * rows + j] = rowWeight;
      if (reduction === 0) os[oRows[j]] = loss;
    }
    if (reduction !== 0) {
      let [total, divisor] = [0, 0];
      for (let j = 0; j < rows; j++) {
        total += ws[wo + rows + j];
        divisor += ws[wo + 2 * rows + j];
      }
      ws[wo + 3 * rows] = divisor;
      os[out.offset] = reduction === 1 ? total / divisor : total;
    }
    return true;
  }
  const gs = g!.data as Float32Array;
  const store = (j: number, c: number, value: number) => (os[oRows[j] + c * co] = value);
  for (let j = 0; j < rows; j++) {
    const gj = gs[gRows[j]];
    const scale = reduction === 1 ? gj / ws[wo + 3 * rows] : gj;
    const lse = ws[wo + j];
    if (params.phase === NllPhase.TargetGrad) {
      for (let c = 0; c < classes; c++) {
        let d = w(c) * (lse - xAt(j, c));
        if (eps > 0) d *= 1 - eps;
        store(j, c, scale * d);
      }
      continue;
    }
    let [target, coef, hit] = [classes, 0, 0];
    if (params.probabilities) {
      for (let c = 0; c < classes; c++) coef += w(c) * q(j, c);
    } else {
      const t = classOf(j);
      if (t === ignoreIndex) {
        for (let c = 0; c < classes; c++) store(j, c, 0);
        continue;
      }
      target = t;
      hit = w(t);
      if (params.op === NllOp.NllLoss) {
        for (let c = 0; c < classes; c++) store(j, c, 0);
        store(j, t, -(hit * scale));
        continue;
      }
      if (eps > 0) hit *= 1 - eps;
      coef = eps > 0 ? hit + share * weightSum : hit;
    }
    for (let c = 0; c < classes; c++) {
      let d = Math.exp(xAt(j, c) - lse) * coef;
      if (params.probabilities) d -= w(c) * q(j, c);
      else {
        if (c === target) d -= hit;
        if (eps > 0) d -= share * w(c);
      }
      store(j, c, scale * d);
    }
  }
  return true;
};

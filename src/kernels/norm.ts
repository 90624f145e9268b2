/**
 * The normalization kernels: one call forward (statistics, x̂ and the affine part), one call backward (dx, and
 * the weight and bias gradients). A normalized group ("row") r is `segments` runs of `width` contiguous
 * elements, run k starting at r·rowStride + k·segmentStride: layer normalization has R rows of one run of D
 * (its weight and bias indexed by the position in the row), batch normalization over [N, C, S] has C rows of N
 * runs of S, segmentStride C·S (its weight and bias indexed by the row, `perRow`). `referenceNorm` and
 * `referenceNormBackward` define the bits; `nativeNorm` and `nativeNormBackward` run `zt_norm_f32` and
 * `zt_norm_backward_f32` (`zig/kernels/norm.zig`), the reference's bits in exact mode on every ISA and thread
 * count, within `NORM_FAST_BOUND` in fast mode.
 *
 * Exact mode, per row of M elements in row order: s = Σ x in f64 in ascending order, μ = s/M,
 * v = Σ (x − μ)² in f64 in ascending order, rstd = 1/√(v/M + eps) in f64 (saved rounded to f32; μ and v/M
 * written rounded when asked), x̂ = (x − μ)·rstd in f64 and y = x̂·w + b in f64, each rounded once to f32; with
 * given statistics (evaluation) μ and v/M are read instead. Backward, with ĝ = g·w (g without a weight) in
 * f64: a = Σ ĝ/M, c = Σ ĝ·x̂/M (f64, ascending), dx = f32(rstd·((ĝ − a) − x̂·c)), or f32(rstd·ĝ) when the
 * statistics were given. Per position, dw = Σ g·x̂ and db = Σ g over the rows in f64, ascending within fixed
 * blocks of `NORM_BLOCK_ROWS` rows, the block sums added in ascending order from +0 and rounded once; per row,
 * the row's own sums in ascending order: the same bits in both modes and for any thread count.
 *
 * @module
 */
import { type ArgBlock, args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { NativePointer } from "../native/symbols.ts";
import { type ComputeSettings, type KernelOperand, MODE_CODE } from "./types.ts";

/** Rows per block of the per-position weight and bias gradients' partial sums (`block_rows` in zig/kernels/norm.zig). */
export const NORM_BLOCK_ROWS = 128;

/**
 * Fast mode's bound, measured against exact mode: |fast − exact| ≤ bound·(1 + |exact|) for y, x̂, dx and the
 * statistics (f32 vector arithmetic on a row whose sums are still f64: a few f32 roundings of the normalized
 * value).
 */
export const NORM_FAST_BOUND = 2 ** -18;

/** The layout and options of one normalization. */
export interface NormParams {
  /** R: the groups normalized (layer norm: the leading elements; batch norm: the channels). */
  readonly rows: number;
  /** The contiguous run of each segment (layer norm: D; batch norm: the spatial extent S), at least 1. */
  readonly width: number;
  /** Runs per row (layer norm: 1; batch norm: N), at least 1. */
  readonly segments: number;
  /** Elements between the starts of consecutive runs of a row (batch norm: C·S). */
  readonly segmentStride: number;
  /** Elements between the starts of consecutive rows (layer norm: D; batch norm: S). */
  readonly rowStride: number;
  /** The weight and bias hold one value per row (batch norm), else one per position of a run (layer norm). */
  readonly perRow: boolean;
  /** Added to the variance. */
  readonly eps: number;
}

/** The parameters of a layer normalization of `rows` contiguous rows of `width`. */
export function layerNormParams(rows: number, width: number, eps: number): NormParams {
  return { rows, width, segments: 1, segmentStride: 0, rowStride: width, perRow: false, eps };
}

/** What the forward kernel writes: y and rstd [R], x̂ when given, and the batch statistics [R] when given. */
export interface NormOutputs {
  /** The output, in x's layout. */
  readonly y: KernelOperand;
  /** x̂, in x's layout (not written when null). */
  readonly xhat: KernelOperand | null;
  /** 1/√(variance + eps) per row. */
  readonly rstd: KernelOperand;
  /** μ per row, rounded to f32 (written; not with `given`). */
  readonly mean: KernelOperand | null;
  /** The biased variance v/M per row, rounded to f32 (written; not with `given`). */
  readonly variance: KernelOperand | null;
}

/** Statistics per row to normalize with instead of the batch's own (evaluation). */
export interface NormStatistics {
  /** The mean per row. */
  readonly mean: KernelOperand;
  /** The (biased) variance per row. */
  readonly variance: KernelOperand;
}

/**
 * Normalizes x (laid out as `params` says; every output has x's layout, the statistics [R]) with the optional
 * weight and bias, by its own statistics or the `given` ones.
 */
export type NormKernel = (
  params: NormParams,
  out: NormOutputs,
  x: KernelOperand,
  weight: KernelOperand | null,
  bias: KernelOperand | null,
  given: NormStatistics | null,
  settings: ComputeSettings,
) => void;

/** Where the backward kernel writes: each gradient is optional; `work` (F64) is needed for per-position dw or db. */
export interface NormGradients {
  /** dx, in x's layout. */
  readonly dx: KernelOperand | null;
  /** dweight [width] or [rows]. */
  readonly dw: KernelOperand | null;
  /** dbias [width] or [rows]. */
  readonly db: KernelOperand | null;
  /** F64 scratch of `normWorkspace(params)` elements for a per-position dw or db. */
  readonly work: KernelOperand | null;
}

/**
 * Writes the wanted gradients from g and the saved x̂ (x's layout), rstd [R] and the weight if any; `centered`
 * when the statistics were the batch's (false: they were given, constants).
 */
export type NormBackwardKernel = (
  params: NormParams,
  grads: NormGradients,
  g: KernelOperand,
  xhat: KernelOperand,
  rstd: KernelOperand,
  weight: KernelOperand | null,
  centered: boolean,
  settings: ComputeSettings,
) => void;

/** The F64 elements of the backward kernel's workspace: 2·width per block of rows (per-position weights). */
export function normWorkspace(params: NormParams): number {
  return params.perRow ? 0 : Math.ceil(params.rows / NORM_BLOCK_ROWS) * 2 * params.width;
}

/** Visits the element offsets of row r (relative to an operand's offset) in row order, with the position in the run. */
function eachOf(params: NormParams, r: number, visit: (at: number, i: number) => void): void {
  for (let k = 0; k < params.segments; k++) {
    const base = r * params.rowStride + k * params.segmentStride;
    for (let i = 0; i < params.width; i++) visit(base + i, i);
  }
}

/**
 * The reference forward kernel.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { layerNormParams, referenceNorm } from "./norm.ts";
 * import type { KernelOperand } from "./types.ts";
 * import type { NativePointer } from "../native/symbols.ts";
 * const operand = (data: Float32Array): KernelOperand =>
 *   ({ pointer: null as unknown as NativePointer, data, offset: 0, strides: [] });
 * const y = new Float32Array(2);
 * const rstd = new Float32Array(1);
 * const out = { y: operand(y), xhat: null, rstd: operand(rstd), mean: null, variance: null };
 * referenceNorm(layerNormParams(1, 2, 0), out, operand(new Float32Array([1, 3])), null, null, null, { mode: "exact", threads: 1 });
 * assert.ok(y.join() === "-1,1" && rstd[0] === 1);
 * ```
 */
export const referenceNorm: NormKernel = (params, out, x, weight, bias, given) => {
  const xd = x.data as Float32Array;
  const yd = out.y.data as Float32Array;
  const wd = weight?.data as Float32Array | undefined;
  const bd = bias?.data as Float32Array | undefined;
  const count = params.width * params.segments;
  const f32 = (o: KernelOperand) => o.data as Float32Array;
  for (let r = 0; r < params.rows; r++) {
    let mu: number;
    let variance: number;
    if (given !== null) {
      mu = f32(given.mean)[given.mean.offset + r];
      variance = f32(given.variance)[given.variance.offset + r];
    } else {
      let s = 0;
      eachOf(params, r, (at) => (s += xd[x.offset + at]));
      mu = s / count;
      let v = 0;
      eachOf(params, r, (at) => {
        const t = xd[x.offset + at] - mu;
        v += t * t;
      });
      variance = v / count;
      if (out.mean !== null) f32(out.mean)[out.mean.offset + r] = mu;
      if (out.variance !== null) f32(out.variance)[out.variance.offset + r] = variance;
    }
    const rs = 1 / Math.sqrt(variance + params.eps);
    f32(out.rstd)[out.rstd.offset + r] = rs;
    eachOf(params, r, (at, i) => {
      const xh = (xd[x.offset + at] - mu) * rs;
      if (out.xhat !== null) f32(out.xhat)[out.xhat.offset + at] = xh;
      const p = params.perRow ? r : i;
      let value = xh;
      if (wd !== undefined) value = value * wd[weight!.offset + p];
      if (bd !== undefined) value = value + bd[bias!.offset + p];
      yd[out.y.offset + at] = value;
    });
  }
};

/**
 * The reference backward kernel.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { layerNormParams, referenceNormBackward } from "./norm.ts";
 * import type { KernelOperand } from "./types.ts";
 * import type { NativePointer } from "../native/symbols.ts";
 * const operand = (data: Float32Array | Float64Array): KernelOperand =>
 *   ({ pointer: null as unknown as NativePointer, data, offset: 0, strides: [] });
 * // x̂ = [-1, 1], rstd 1: a gradient along x̂ itself has no part that moves x (the row's scale is free).
 * const xhat = new Float32Array([-1, 1]);
 * const dx = new Float32Array(2);
 * const db = new Float32Array(2);
 * const grads = { dx: operand(dx), dw: null, db: operand(db), work: operand(new Float64Array(4)) };
 * referenceNormBackward(layerNormParams(1, 2, 0), grads, operand(xhat), operand(xhat), operand(new Float32Array([1])), null, true, { mode: "exact", threads: 1 });
 * assert.ok(dx.join() === "0,0" && db.join() === "-1,1");
 * ```
 */
export const referenceNormBackward: NormBackwardKernel = (
  params,
  grads,
  g,
  xhat,
  rstd,
  weight,
  centered,
) => {
  const { rows, width } = params;
  const gd = g.data as Float32Array;
  const xd = xhat.data as Float32Array;
  const wd = weight?.data as Float32Array | undefined;
  const count = width * params.segments;
  const gw = (r: number, at: number, i: number) => {
    const v = gd[g.offset + at];
    return wd === undefined ? v : v * wd[weight!.offset + (params.perRow ? r : i)];
  };
  if (grads.dx !== null) {
    const dx = grads.dx.data as Float32Array;
    for (let r = 0; r < rows; r++) {
      let s1 = 0;
      let s2 = 0;
      if (centered) {
        eachOf(params, r, (at, i) => {
          const t = gw(r, at, i);
          s1 += t;
          s2 += t * xd[xhat.offset + at];
        });
      }
      const a = s1 / count;
      const c = s2 / count;
      const rs = (rstd.data as Float32Array)[rstd.offset + r];
      eachOf(params, r, (at, i) => {
        const t = gw(r, at, i);
        dx[grads.dx!.offset + at] = centered ? rs * ((t - a) - xd[xhat.offset + at] * c) : rs * t;
      });
    }
  }
  const gAt = (at: number) => gd[g.offset + at];
  const gxAt = (at: number) => gd[g.offset + at] * xd[xhat.offset + at];
  const sums: [KernelOperand | null, (at: number) => number][] = [[grads.dw, gxAt], [grads.db, gAt]];
  for (const [out, term] of sums) {
    if (out === null) continue;
    const o = out.data as Float32Array;
    if (params.perRow) {
      for (let r = 0; r < rows; r++) {
        let total = 0;
        eachOf(params, r, (at) => (total += term(at)));
        o[out.offset + r] = total;
      }
      continue;
    }
    for (let i = 0; i < width; i++) {
      let total = 0;
      for (let start = 0; start < rows; start += NORM_BLOCK_ROWS) {
        let block = 0;
        const end = Math.min(rows, start + NORM_BLOCK_ROWS);
        for (let r = start; r < end; r++) block += term(r * params.rowStride + i);
        total += block;
      }
      o[out.offset + i] = total;
    }
  }
};

const NULL = null as unknown as NativePointer;

function geometry(params: NormParams, mode: number, threads: number): ArgBlock {
  return args.op(0, mode, threads)
    .int(0, params.rows)
    .int(1, params.width)
    .int(2, params.segments)
    .int(3, params.segmentStride)
    .int(4, params.rowStride)
    .float(0, params.eps);
}

/** The native forward kernel (`zt_norm_f32`); operands validated and sized by the caller. */
export const nativeNorm: NormKernel = (params, out, x, weight, bias, given, settings) => {
  const mean = given?.mean ?? out.mean;
  const variance = given?.variance ?? out.variance;
  const flags = (out.xhat === null ? 0 : 1) | (weight === null ? 0 : 2) | (bias === null ? 0 : 4) |
    (params.perRow ? 8 : 0) | (given === null && out.mean !== null ? 16 : 0) | (given === null ? 0 : 32);
  geometry(params, MODE_CODE[settings.mode], settings.threads)
    .int(5, out.y.offset)
    .int(6, out.xhat?.offset ?? 0)
    .int(7, out.rstd.offset)
    .int(8, x.offset)
    .int(9, weight?.offset ?? 0)
    .int(10, bias?.offset ?? 0)
    .int(11, mean?.offset ?? 0)
    .int(12, variance?.offset ?? 0)
    .int(13, flags);
  native.zt_norm_f32(
    args.pointer,
    out.y.pointer,
    out.xhat?.pointer ?? NULL,
    out.rstd.pointer,
    x.pointer,
    weight?.pointer ?? NULL,
    bias?.pointer ?? NULL,
    mean?.pointer ?? NULL,
    variance?.pointer ?? NULL,
  );
};

/** The native backward kernel (`zt_norm_backward_f32`); operands validated and sized by the caller. */
export const nativeNormBackward: NormBackwardKernel = (
  params,
  grads,
  g,
  xhat,
  rstd,
  weight,
  centered,
  settings,
) => {
  const { dx, dw, db, work } = grads;
  const flags = (dx === null ? 0 : 1) | (weight === null ? 0 : 2) | (dw === null ? 0 : 4) |
    (db === null ? 0 : 8) | (params.perRow ? 16 : 0) | (centered ? 0 : 32);
  geometry(params, MODE_CODE[settings.mode], settings.threads)
    .int(5, dx?.offset ?? 0)
    .int(6, dw?.offset ?? 0)
    .int(7, db?.offset ?? 0)
    .int(8, g.offset)
    .int(9, xhat.offset)
    .int(10, rstd.offset)
    .int(11, weight?.offset ?? 0)
    .int(12, work?.offset ?? 0)
    .int(13, flags);
  native.zt_norm_backward_f32(
    args.pointer,
    dx?.pointer ?? NULL,
    dw?.pointer ?? NULL,
    db?.pointer ?? NULL,
    g.pointer,
    xhat.pointer,
    rstd.pointer,
    weight?.pointer ?? NULL,
    work?.pointer ?? NULL,
  );
};

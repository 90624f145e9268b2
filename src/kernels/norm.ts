/**
 * The layer normalization kernels over contiguous rows [R, D]: one call forward (statistics, x̂ and the affine
 * part), one call backward (dx, and the weight and bias gradients summed over the rows). `referenceLayerNorm`
 * and `referenceLayerNormBackward` define the bits; `nativeLayerNorm` and `nativeLayerNormBackward` run
 * `zt_layer_norm_f32` and `zt_layer_norm_backward_f32` (`zig/kernels/norm.zig`), the reference's bits in exact
 * mode on every ISA and thread count, within `LAYER_NORM_FAST_BOUND` in fast mode.
 *
 * Exact mode, per row: s = Σ x in f64 in ascending order, μ = s/D, v = Σ (x − μ)² in f64 in ascending order,
 * rstd = 1/√(v/D + eps) in f64 (saved rounded to f32), x̂ = (x − μ)·rstd in f64 and y = x̂·w + b in f64, each
 * rounded once to f32. Backward, with ĝ = g·w (g without a weight) in f64: a = Σ ĝ/D, c = Σ ĝ·x̂/D (f64,
 * ascending), dx = f32(rstd·((ĝ − a) − x̂·c)). dw = Σ g·x̂ and db = Σ g over the rows in f64, ascending within
 * fixed blocks of `LAYER_NORM_BLOCK_ROWS` rows, the block sums added in ascending order from +0 and rounded
 * once: the same bits in both modes and for any thread count.
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { NativePointer } from "../native/symbols.ts";
import type { ComputeSettings, KernelOperand } from "./types.ts";

/** Rows per block of the weight and bias gradients' partial sums (`block_rows` in zig/kernels/norm.zig). */
export const LAYER_NORM_BLOCK_ROWS = 128;

/**
 * Fast mode's bound, measured against exact mode: |fast − exact| ≤ bound·(1 + |exact|) for y, x̂ and dx (f32
 * vector arithmetic on a row whose sums are still f64: a few f32 roundings of the normalized value).
 */
export const LAYER_NORM_FAST_BOUND = 2 ** -18;

/** The extents and options of one layer normalization. */
export interface LayerNormParams {
  /** R: the rows (the product of the leading extents). */
  readonly rows: number;
  /** D: the elements of a row (the product of the normalized extents), at least 1. */
  readonly width: number;
  /** Added to the variance. */
  readonly eps: number;
}

/**
 * Writes y [R, D], rstd [R] and, when given, x̂ [R, D] from x [R, D] and the optional weight and bias [D]; all
 * operands are contiguous from their offsets.
 */
export type LayerNormKernel = (
  params: LayerNormParams,
  y: KernelOperand,
  xhat: KernelOperand | null,
  rstd: KernelOperand,
  x: KernelOperand,
  weight: KernelOperand | null,
  bias: KernelOperand | null,
  settings: ComputeSettings,
) => void;

/** Where the backward kernel writes: each gradient is optional; `work` (F64) is needed for dw or db. */
export interface LayerNormGradients {
  /** dx [R, D]. */
  readonly dx: KernelOperand | null;
  /** dweight [D]. */
  readonly dw: KernelOperand | null;
  /** dbias [D]. */
  readonly db: KernelOperand | null;
  /** F64 scratch of `layerNormWorkspace(params)` elements when dw or db is wanted. */
  readonly work: KernelOperand | null;
}

/** Writes the wanted gradients from g [R, D], the saved x̂ [R, D] and rstd [R], and the weight [D] if any. */
export type LayerNormBackwardKernel = (
  params: LayerNormParams,
  grads: LayerNormGradients,
  g: KernelOperand,
  xhat: KernelOperand,
  rstd: KernelOperand,
  weight: KernelOperand | null,
  settings: ComputeSettings,
) => void;

/** The F64 elements of the backward kernel's workspace: 2·D per block of rows. */
export function layerNormWorkspace(params: LayerNormParams): number {
  return Math.ceil(params.rows / LAYER_NORM_BLOCK_ROWS) * 2 * params.width;
}

/**
 * The reference forward kernel.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceLayerNorm } from "./norm.ts";
 * import type { KernelOperand } from "./types.ts";
 * import type { NativePointer } from "../native/symbols.ts";
 * const operand = (data: Float32Array): KernelOperand =>
 *   ({ pointer: null as unknown as NativePointer, data, offset: 0, strides: [] });
 * const y = new Float32Array(2);
 * const rstd = new Float32Array(1);
 * referenceLayerNorm({ rows: 1, width: 2, eps: 0 }, operand(y), null, operand(rstd), operand(new Float32Array([1, 3])), null, null, { mode: "exact", threads: 1 });
 * assert.ok(y.join() === "-1,1" && rstd[0] === 1);
 * ```
 */
export const referenceLayerNorm: LayerNormKernel = (params, y, xhat, rstd, x, weight, bias) => {
  const { rows, width: d, eps } = params;
  const xd = x.data as Float32Array;
  const yd = y.data as Float32Array;
  const wd = weight?.data as Float32Array | undefined;
  const bd = bias?.data as Float32Array | undefined;
  for (let r = 0; r < rows; r++) {
    const base = x.offset + r * d;
    let s = 0;
    for (let i = 0; i < d; i++) s += xd[base + i];
    const mu = s / d;
    let v = 0;
    for (let i = 0; i < d; i++) {
      const t = xd[base + i] - mu;
      v += t * t;
    }
    const rs = 1 / Math.sqrt(v / d + eps);
    (rstd.data as Float32Array)[rstd.offset + r] = rs;
    for (let i = 0; i < d; i++) {
      const xh = (xd[base + i] - mu) * rs;
      if (xhat !== null) (xhat.data as Float32Array)[xhat.offset + r * d + i] = xh;
      let out = xh;
      if (wd !== undefined) out = out * wd[weight!.offset + i];
      if (bd !== undefined) out = out + bd[bias!.offset + i];
      yd[y.offset + r * d + i] = out;
    }
  }
};

/**
 * The reference backward kernel.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceLayerNormBackward } from "./norm.ts";
 * import type { KernelOperand } from "./types.ts";
 * import type { NativePointer } from "../native/symbols.ts";
 * const operand = (data: Float32Array | Float64Array): KernelOperand =>
 *   ({ pointer: null as unknown as NativePointer, data, offset: 0, strides: [] });
 * // x̂ = [-1, 1], rstd 1: a gradient along x̂ itself has no part that moves x (the row's scale is free).
 * const xhat = new Float32Array([-1, 1]);
 * const dx = new Float32Array(2);
 * const db = new Float32Array(2);
 * const grads = { dx: operand(dx), dw: null, db: operand(db), work: operand(new Float64Array(4)) };
 * referenceLayerNormBackward({ rows: 1, width: 2, eps: 0 }, grads, operand(xhat), operand(xhat), operand(new Float32Array([1])), null, { mode: "exact", threads: 1 });
 * assert.ok(dx.join() === "0,0" && db.join() === "-1,1");
 * ```
 */
export const referenceLayerNormBackward: LayerNormBackwardKernel = (
  params,
  grads,
  g,
  xhat,
  rstd,
  weight,
) => {
  const { rows, width: d } = params;
  const gd = g.data as Float32Array;
  const xd = xhat.data as Float32Array;
  const wd = weight?.data as Float32Array | undefined;
  const gw = (r: number, i: number) => {
    const v = gd[g.offset + r * d + i];
    return wd === undefined ? v : v * wd[weight!.offset + i];
  };
  if (grads.dx !== null) {
    const dx = grads.dx.data as Float32Array;
    for (let r = 0; r < rows; r++) {
      let s1 = 0;
      let s2 = 0;
      for (let i = 0; i < d; i++) {
        const t = gw(r, i);
        s1 += t;
        s2 += t * xd[xhat.offset + r * d + i];
      }
      const a = s1 / d;
      const c = s2 / d;
      const rs = (rstd.data as Float32Array)[rstd.offset + r];
      for (let i = 0; i < d; i++) {
        dx[grads.dx.offset + r * d + i] = rs * ((gw(r, i) - a) - xd[xhat.offset + r * d + i] * c);
      }
    }
  }
  const sum = (out: KernelOperand, term: (r: number, i: number) => number) => {
    const o = out.data as Float32Array;
    for (let i = 0; i < d; i++) {
      let total = 0;
      for (let start = 0; start < rows; start += LAYER_NORM_BLOCK_ROWS) {
        let block = 0;
        const end = Math.min(rows, start + LAYER_NORM_BLOCK_ROWS);
        for (let r = start; r < end; r++) block += term(r, i);
        total += block;
      }
      o[out.offset + i] = total;
    }
  };
  const gAt = (r: number, i: number) => gd[g.offset + r * d + i];
  if (grads.dw !== null) sum(grads.dw, (r, i) => gAt(r, i) * xd[xhat.offset + r * d + i]);
  if (grads.db !== null) sum(grads.db, gAt);
};

const MODE = { fast: 0, exact: 1 } as const;
const NULL = null as unknown as NativePointer;

/** The native forward kernel (`zt_layer_norm_f32`); operands validated and sized by the caller. */
export const nativeLayerNorm: LayerNormKernel = (params, y, xhat, rstd, x, weight, bias, settings) => {
  args.op(0, MODE[settings.mode], settings.threads)
    .int(0, params.rows)
    .int(1, params.width)
    .int(2, y.offset)
    .int(3, xhat?.offset ?? 0)
    .int(4, rstd.offset)
    .int(5, x.offset)
    .int(6, weight?.offset ?? 0)
    .int(7, bias?.offset ?? 0)
    .int(8, (xhat === null ? 0 : 1) | (weight === null ? 0 : 2) | (bias === null ? 0 : 4))
    .float(0, params.eps);
  native.zt_layer_norm_f32(
    args.pointer,
    y.pointer,
    xhat?.pointer ?? NULL,
    rstd.pointer,
    x.pointer,
    weight?.pointer ?? NULL,
    bias?.pointer ?? NULL,
  );
};

/** The native backward kernel (`zt_layer_norm_backward_f32`); operands validated and sized by the caller. */
export const nativeLayerNormBackward: LayerNormBackwardKernel = (
  params,
  grads,
  g,
  xhat,
  rstd,
  weight,
  settings,
) => {
  const { dx, dw, db, work } = grads;
  args.op(1, MODE[settings.mode], settings.threads)
    .int(0, params.rows)
    .int(1, params.width)
    .int(2, dx?.offset ?? 0)
    .int(3, dw?.offset ?? 0)
    .int(4, db?.offset ?? 0)
    .int(5, g.offset)
    .int(6, xhat.offset)
    .int(7, rstd.offset)
    .int(8, weight?.offset ?? 0)
    .int(9, work?.offset ?? 0)
    .int(
      10,
      (dx === null ? 0 : 1) | (weight === null ? 0 : 2) | (dw === null ? 0 : 4) | (db === null ? 0 : 8),
    );
  native.zt_layer_norm_backward_f32(
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

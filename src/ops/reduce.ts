/**
 * Reductions (`sum mean max min argmax`) over any set of axes with `keepDims`, and `softmax` / `logSoftmax`
 * over one axis. The reduced axes are permuted to the end as a view, so the kernel walks rows in the output's
 * row-major order; sums accumulate in f64.
 *
 * @module
 */
import { DType } from "../core/dtype.ts";
import { OptionError, TensorShapeError } from "../core/errors.ts";
import { checkBoolean, checkOptions, describe } from "../core/options.ts";
import { computeSettings, kernels } from "../context.ts";
import { formatShape, normalizeAxis } from "../core/shape.ts";
import { allocate, type Tensor } from "../tensor.ts";
import { ReduceOp } from "../kernels/types.ts";
import { recordOp, shouldRecord } from "../autograd/record.ts";
import { kernelCode, type ReduceOpName, type SoftmaxOpName } from "../core/op_table.ts";
import { checkF32, newOutput } from "./common.ts";

/** Options of the reductions. */
export interface ReduceOptions {
  /** Keep reduced axes as extent 1. @default false */
  readonly keepDims?: boolean;
}

/**
 * The reductions' options: an object with `keepDims` only, or a bare boolean taken as `keepDims` (PyTorch's
 * positional `keepdim`, as in `x.sum(1, true)`). Anything else is an `OptionError`.
 */
export function keepDimsOf(op: string, options: ReduceOptions | boolean | undefined): boolean {
  if (typeof options === "boolean") return options;
  return checkBoolean(op, "keepDims", checkOptions(op, options, REDUCE_KEYS, AXIS_ELSEWHERE).keepDims, false);
}

const AXIS_ELSEWHERE = {
  dim: "the axis is the argument before the options",
  axis: "the axis is the argument before the options",
};

const REDUCE_KEYS = ["keepDims"] as const;

/** The reduced axes, normalized, sorted and unique; all axes when `axis` is undefined. */
export function reducedAxes(op: string, t: Tensor, axis?: number | readonly number[]): number[] {
  if (axis === undefined) return Array.from({ length: t.rank }, (_, i) => i);
  if (typeof axis !== "number" && !Array.isArray(axis)) {
    throw new OptionError(op, `axis must be an integer or an array of integers, got ${describe(axis)}`);
  }
  const list = typeof axis === "number" ? [axis] : [...axis];
  const axes = list.map((a) => normalizeAxis(op, a, t.rank, t.shape));
  const unique = [...new Set(axes)].sort((x, y) => x - y);
  if (unique.length !== axes.length) {
    throw new TensorShapeError(
      op,
      `axis ${JSON.stringify(list)} names an axis twice for shape ${formatShape(t.shape)}`,
      [t.shape],
    );
  }
  return unique;
}

/** The output shape: reduced axes removed, or kept as 1. */
export function reducedShape(shape: readonly number[], axes: readonly number[], keepDims: boolean): number[] {
  const result: number[] = [];
  for (let i = 0; i < shape.length; i++) {
    if (!axes.includes(i)) result.push(shape[i]);
    else if (keepDims) result.push(1);
  }
  return result;
}

function reduceKernel(
  op: string,
  kind: ReduceOp,
  x: Tensor,
  axes: readonly number[],
  keepDims: boolean,
  dtype: typeof DType.F32 | typeof DType.I64,
): Tensor {
  const kept = Array.from({ length: x.rank }, (_, i) => i).filter((i) => !axes.includes(i));
  const order = [...kept, ...axes];
  const shape = order.map((i) => x.shape[i]);
  const strides = order.map((i) => x.strides[i]);
  const count = axes.reduce((n, a) => n * x.shape[a], 1);
  if (count === 0 && kind !== ReduceOp.Sum && kind !== ReduceOp.Mean) {
    throw new TensorShapeError(op, `${op} over an empty axis of ${formatShape(x.shape)} has no identity`, [
      x.shape,
    ]);
  }
  const out = allocate(op, reducedShape(x.shape, axes, keepDims), dtype, false, { scoped: true });
  // The output's strides over the kept axes, in order.
  const outStrides: number[] = [];
  for (let i = 0, j = 0; i < x.rank; i++) {
    if (!axes.includes(i)) outStrides.push(out.strides[j]);
    if (!axes.includes(i) || keepDims) j++;
  }
  kernels().reduce(
    kind,
    shape,
    axes.length,
    out.operand(op, outStrides),
    x.operand(op, strides),
    computeSettings(),
  );
  return out;
}

function reduction(
  op: Exclude<ReduceOpName, "argmax">,
  x: Tensor,
  axis: number | readonly number[] | undefined,
  options: ReduceOptions | boolean | undefined,
): Tensor {
  checkF32(op, x);
  const keepDims = keepDimsOf(op, options);
  const axes = reducedAxes(op, x, axis);
  const out = reduceKernel(op, kernelCode("reduce", op), x, axes, keepDims, DType.F32);
  if (!shouldRecord(x)) return out;
  // Max and Min also save their input and output to route the gradient.
  return recordOp(op, out, [x], {
    attrs: { axes, keepDims },
    saved: op === "max" || op === "min" ? [x, out] : [],
  });
}

/**
 * The sum over `axis` (a number or an array; every axis by default), accumulated in f64.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Tensor } from "@zigtensor/zigtensor";
 * using a = Tensor.from([[1, 2, 3], [4, 5, 6]]);
 * using rows = a.sum(1);
 * using all = a.sum();
 * using kept = a.sum(0, { keepDims: true });
 * using keptToo = a.sum(0, true); // PyTorch's positional keepdim
 * assert.ok(rows.toArray().join() === "6,15" && all.item() === 21 && kept.shape.join() === "1,3");
 * assert.ok(keptToo.shape.join() === "1,3");
 * ```
 */
export function sum(
  x: Tensor,
  axis?: number | readonly number[],
  options?: ReduceOptions | boolean,
): Tensor {
  return reduction("sum", x, axis, options);
}

/** The mean over `axis` (every axis by default). */
export function mean(
  x: Tensor,
  axis?: number | readonly number[],
  options?: ReduceOptions | boolean,
): Tensor {
  return reduction("mean", x, axis, options);
}

/** The maximum over `axis` (every axis by default); NaN wins. The gradient is shared among tied maxima. */
export function max(
  x: Tensor,
  axis?: number | readonly number[],
  options?: ReduceOptions | boolean,
): Tensor {
  return reduction("max", x, axis, options);
}

/** The minimum over `axis` (every axis by default); NaN wins. The gradient is shared among tied minima. */
export function min(
  x: Tensor,
  axis?: number | readonly number[],
  options?: ReduceOptions | boolean,
): Tensor {
  return reduction("min", x, axis, options);
}

/** The I64 index of the first maximum along `axis` (a NaN wins at its first occurrence). */
export function argmax(x: Tensor, axis: number, options?: ReduceOptions | boolean): Tensor {
  checkF32("argmax", x);
  const keepDims = keepDimsOf("argmax", options);
  return reduceKernel(
    "argmax",
    ReduceOp.ArgMax,
    x,
    [normalizeAxis("argmax", axis, x.rank, x.shape)],
    keepDims,
    DType.I64,
  );
}

function softmaxFamily(op: SoftmaxOpName, x: Tensor, axis: number): Tensor {
  checkF32(op, x);
  if (x.rank === 0) {
    throw new TensorShapeError(op, `${op} needs at least one axis, got a rank-0 tensor`, [x.shape]);
  }
  const a = normalizeAxis(op, axis, x.rank, x.shape);
  const out = newOutput(op, x.shape);
  const order = [...Array.from({ length: x.rank }, (_, i) => i).filter((i) => i !== a), a];
  const pick = (values: readonly number[]) => order.map((i) => values[i]);
  kernels().softmax(
    kernelCode("softmax", op),
    pick(x.shape),
    out.operand(op, pick(out.strides)),
    x.operand(op, pick(x.strides)),
    computeSettings(),
  );
  // Saves its output; the scale is 1 here.
  return recordOp(op, out, [x], { saved: [out], attrs: { axis: a, scale: 1 } });
}

/**
 * Softmax over `axis` (the last by default): exp(x − max) / Σ exp(x − max), with the sum in f64.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[1, 2, 3]]);
 * using p = ops.softmax(x);
 * const total = (p.toArray() as Float32Array).reduce((s, v) => s + v, 0);
 * assert.ok(Math.abs(total - 1) < 1e-6);
 * ```
 */
export function softmax(x: Tensor, axis = -1): Tensor {
  return softmaxFamily("softmax", x, axis);
}

/** Log-softmax over `axis` (the last by default). */
export function logSoftmax(x: Tensor, axis = -1): Tensor {
  return softmaxFamily("logSoftmax", x, axis);
}

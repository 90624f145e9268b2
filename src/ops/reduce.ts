/**
 * Reductions (`sum mean max min argmax argmin prod var std logsumexp norm`) over any set of axes with `keepDims`, and `softmax` / `logSoftmax`
 * over one axis. The reduced axes are permuted to the end as a view, so the kernel walks rows in the output's
 * row-major order; sums accumulate in f64.
 *
 * @module
 */
import { DType } from "../core/dtype.ts";
import { OptionError, TensorShapeError } from "../core/errors.ts";
import { checkBoolean, checkOptions, describe } from "../core/options.ts";
import { computeSettings, computeSnapshot, kernels, kernelsOf } from "../context.ts";
import { formatShape, normalizeAxis } from "../core/shape.ts";
import { allocateOutput, dtypeOf, operandOf, rankOf, shapeOf, stridesOf, type Tensor } from "../tensor.ts";
import { ReduceOp } from "../kernels/types.ts";
import { recordOp, shouldRecord } from "../autograd/record.ts";
import { kernelCode, type ReduceOpName, type SoftmaxOpName } from "../core/op_table.ts";
import { abs, add, div, exp, log, mul, ne, sqrt, sub } from "./elementwise.ts";
import { checkDTypes, checkF32, isPlainF32, newOutput } from "./common.ts";
import { reshape } from "./views.ts";

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
  if (axis === undefined) {
    const all: number[] = [];
    for (let i = 0; i < rankOf(t); i++) all.push(i);
    return all;
  }
  if (typeof axis === "number") return [normalizeAxis(op, axis, rankOf(t), shapeOf(t))];
  if (!Array.isArray(axis)) {
    throw new OptionError(op, `axis must be an integer or an array of integers, got ${describe(axis)}`);
  }
  const list = typeof axis === "number" ? [axis] : [...axis];
  const axes = list.map((a) => normalizeAxis(op, a, rankOf(t), shapeOf(t)));
  const unique = [...new Set(axes)].sort((x, y) => x - y);
  if (unique.length !== axes.length) {
    throw new TensorShapeError(
      op,
      `axis ${JSON.stringify(list)} names an axis twice for shape ${formatShape(shapeOf(t))}`,
      [shapeOf(t)],
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

/**
 * One reduction kernel call: the kept axes in order, then the reduced ones, as the iteration order; `x`'s view
 * is checked (its operand made) before the output is allocated. `reduce` for F32 input, `reduceInt` for
 * integer and Bool input; the output has `dtype`. An empty max, min, argmax or argmin is a `TensorShapeError`,
 * except with `emptyIdentity` (any and all: a Bool max or min, whose kernels give false and true over nothing).
 */
function reduceKernel(
  op: string,
  kind: ReduceOp,
  x: Tensor,
  axes: readonly number[],
  keepDims: boolean,
  dtype: DType,
  emptyIdentity = false,
): Tensor {
  const xShape = shapeOf(x);
  const xStrides = stridesOf(x);
  const shape: number[] = [];
  const strides: number[] = [];
  for (let i = 0; i < xShape.length; i++) {
    if (axes.includes(i)) continue;
    shape.push(xShape[i]);
    strides.push(xStrides[i]);
  }
  let count = 1;
  for (let k = 0; k < axes.length; k++) {
    shape.push(xShape[axes[k]]);
    strides.push(xStrides[axes[k]]);
    count *= xShape[axes[k]];
  }
  if (
    count === 0 && kind !== ReduceOp.Sum && kind !== ReduceOp.Mean && kind !== ReduceOp.Prod && !emptyIdentity
  ) {
    throw new TensorShapeError(op, `${op} over an empty axis of ${formatShape(xShape)} has no identity`, [
      xShape,
    ]);
  }
  const input = operandOf(x, op, strides);
  const out = allocateOutput(op, reducedShape(xShape, axes, keepDims), dtype);
  // The output's strides over the kept axes, in order: its own strides unless reduced axes were kept as 1.
  let outStrides = stridesOf(out);
  if (keepDims && axes.length > 0) {
    const kept: number[] = [];
    for (let i = 0; i < outStrides.length; i++) if (!axes.includes(i)) kept.push(outStrides[i]);
    outStrides = kept;
  }
  const compute = computeSnapshot();
  if (dtypeOf(x) === DType.F32) {
    kernelsOf(compute).reduce(kind, shape, axes.length, operandOf(out, op, outStrides), input, compute);
  } else {
    kernelsOf(compute).reduceInt(
      kind,
      dtypeOf(x),
      shape,
      axes.length,
      operandOf(out, op, outStrides),
      input,
      compute,
    );
  }
  return out;
}

function reduction(
  op: Exclude<ReduceOpName, "argmax" | "argmin">,
  x: Tensor,
  axis: number | readonly number[] | undefined,
  options: ReduceOptions | boolean | undefined,
): Tensor {
  // Every reduction's rule takes F32: the common case skips the rule lookup.
  const dtype = isPlainF32(x) ? DType.F32 : checkDTypes(op, x);
  const keepDims = keepDimsOf(op, options);
  const axes = reducedAxes(op, x, axis);
  // PyTorch's rule: an integer or Bool sum is I64; max and min keep the dtype.
  const outDType = op === "sum" && dtype !== DType.F32 ? DType.I64 : dtype;
  const out = reduceKernel(op, kernelCode("reduce", op), x, axes, keepDims, outDType);
  if (!shouldRecord(x)) return out;
  // Max, Min and Prod also save their input and output to route the gradient.
  return recordOp(op, out, [x], {
    attrs: { axes, keepDims },
    saved: op === "max" || op === "min" || op === "prod" ? [x, out] : [],
  });
}

/**
 * The sum over `axis` (a number or an array; every axis by default), accumulated in f64. An integer or Bool
 * tensor's sum is I64 (PyTorch's rule), added with wrap-around in i64.
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

/**
 * The mean over `axis` (every axis by default). F32 only: an integer mean is a `DTypeError`, as in PyTorch
 * (cast() to F32 first).
 */
export function mean(
  x: Tensor,
  axis?: number | readonly number[],
  options?: ReduceOptions | boolean,
): Tensor {
  return reduction("mean", x, axis, options);
}

/**
 * The maximum over `axis` (every axis by default); NaN wins. The gradient is shared among tied maxima. Integer
 * and Bool tensors keep their dtype (a Bool max is `any`).
 */
export function max(
  x: Tensor,
  axis?: number | readonly number[],
  options?: ReduceOptions | boolean,
): Tensor {
  return reduction("max", x, axis, options);
}

/**
 * The minimum over `axis` (every axis by default); NaN wins. The gradient is shared among tied minima. Integer
 * and Bool tensors keep their dtype (a Bool min is `all`).
 */
export function min(
  x: Tensor,
  axis?: number | readonly number[],
  options?: ReduceOptions | boolean,
): Tensor {
  return reduction("min", x, axis, options);
}

/**
 * The I64 index of the first maximum along `axis` (a NaN wins at its first occurrence), for F32 and integer
 * tensors (not Bool, as PyTorch).
 */
export function argmax(x: Tensor, axis: number, options?: ReduceOptions | boolean): Tensor {
  return argReduction("argmax", x, axis, options);
}

/**
 * The I64 index of the first minimum along `axis` (a NaN wins at its first occurrence), as `torch.argmin`, for
 * F32 and integer tensors.
 */
export function argmin(x: Tensor, axis: number, options?: ReduceOptions | boolean): Tensor {
  return argReduction("argmin", x, axis, options);
}

function argReduction(
  op: "argmax" | "argmin",
  x: Tensor,
  axis: number,
  options: ReduceOptions | boolean | undefined,
): Tensor {
  if (!isPlainF32(x)) checkDTypes(op, x);
  const keepDims = keepDimsOf(op, options);
  return reduceKernel(
    op,
    kernelCode("reduce", op),
    x,
    [normalizeAxis(op, axis, rankOf(x), shapeOf(x))],
    keepDims,
    DType.I64,
  );
}

/** `any` or `all`: x ≠ 0 as Bool (x itself when Bool), then the Bool max or min, which has an identity. */
function anyAll(
  op: "any" | "all",
  x: Tensor,
  axis: number | readonly number[] | undefined,
  options: ReduceOptions | boolean | undefined,
): Tensor {
  const dtype = checkDTypes(op, x);
  const keepDims = keepDimsOf(op, options);
  const axes = reducedAxes(op, x, axis);
  using nonzero = dtype === DType.Bool ? null : ne(x, 0);
  const kind = op === "any" ? ReduceOp.Max : ReduceOp.Min;
  return reduceKernel(op, kind, nonzero ?? x, axes, keepDims, DType.Bool, true);
}

/**
 * Whether any element over `axis` (every axis by default) is nonzero (true, for Bool; NaN counts), as Bool:
 * `torch.any`. False over an empty axis.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using mask = Tensor.from([[true, false], [false, false]], [2, 2], { dtype: "bool" });
 * using rows = ops.any(mask, 1);
 * using all = mask.all();
 * assert.deepEqual(rows.toNested(), [1, 0]);
 * assert.equal(all.item(), 0);
 * ```
 */
export function any(
  x: Tensor,
  axis?: number | readonly number[],
  options?: ReduceOptions | boolean,
): Tensor {
  return anyAll("any", x, axis, options);
}

/** Whether every element over `axis` (every axis by default) is nonzero, as Bool: `torch.all`. True over an empty axis. */
export function all(
  x: Tensor,
  axis?: number | readonly number[],
  options?: ReduceOptions | boolean,
): Tensor {
  return anyAll("all", x, axis, options);
}

// --- reductions added with issue 12: prod, and compositions of the native reductions ---

/**
 * The product over `axis` (every axis by default), multiplied in f64 in ascending order and rounded once; an
 * empty product is 1. The gradient is the product of the other elements (exact at zeros, as PyTorch's).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Tensor } from "@zigtensor/zigtensor";
 * using a = Tensor.from([[1, 2, 3], [4, 5, 6]]);
 * using p = a.prod(1);
 * assert.deepEqual(p.toNested(), [6, 120]);
 * ```
 */
export function prod(
  x: Tensor,
  axis?: number | readonly number[],
  options?: ReduceOptions | boolean,
): Tensor {
  return reduction("prod", x, axis, options);
}

/** Options of `var` and `std`: `keepDims`, and `correction` (Bessel's, PyTorch's default 1). */
export interface VarOptions extends ReduceOptions {
  /** The count is reduced by this much before dividing (1: the unbiased estimate, 0: the population's). @default 1 */
  readonly correction?: number;
}

const VAR_KEYS = ["keepDims", "correction"] as const;

function varianceOf(
  op: "var" | "std",
  x: Tensor,
  axis: number | readonly number[] | undefined,
  options: VarOptions | undefined,
): Tensor {
  checkF32(op, x);
  const checked = checkOptions(op, options, VAR_KEYS, {
    unbiased: "use correction (1 for unbiased: true, 0 for unbiased: false)",
    ...AXIS_ELSEWHERE,
  });
  const keepDims = checkBoolean(op, "keepDims", checked.keepDims, false);
  const correction = checked.correction ?? 1;
  if (typeof correction !== "number" || !Number.isFinite(correction)) {
    throw new OptionError(op, `correction must be a finite number, got ${describe(correction)}`);
  }
  const axes = reducedAxes(op, x, axis);
  const count = axes.reduce((n, a) => n * shapeOf(x)[a], 1);
  const centered = sub(x, mean(x, axes, { keepDims: true }));
  // Σ(x − mean)² / max(0, N − correction), as PyTorch (a zero divisor gives inf or NaN).
  const v = div(sum(mul(centered, centered), axes, { keepDims }), Math.max(0, count - correction));
  return op === "std" ? sqrt(v) : v;
}

/**
 * The variance over `axis` (every axis by default): Σ(x − mean)² / (N − correction), `correction` 1 by
 * default as `torch.var`. A composition of mean, sub, mul, sum and div, so it is differentiable.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using a = Tensor.from([1, 2, 3, 4]);
 * using v = ops.var(a);
 * using p = a.var(0, { correction: 0 });
 * assert.ok(Math.abs((v.item() as number) - 5 / 3) < 1e-6 && p.item() === 1.25);
 * ```
 */
function variance(x: Tensor, axis?: number | readonly number[], options?: VarOptions): Tensor {
  return varianceOf("var", x, axis, options);
}
export { variance as var };

/** The standard deviation over `axis`: the square root of `var` with the same options (`torch.std`). */
export function std(x: Tensor, axis?: number | readonly number[], options?: VarOptions): Tensor {
  return varianceOf("std", x, axis, options);
}

/**
 * log Σ exp(x) over `axis` (every axis by default), computed as m + log Σ exp(x − m) with m the maximum (held
 * constant for the gradient), as `torch.logsumexp`. A row whose maximum is infinite gives NaN here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using a = Tensor.from([[1000, 1000]]);
 * using l = ops.logsumexp(a, 1);
 * assert.ok(Math.abs((l.item() as number) - (1000 + Math.log(2))) < 1e-3);
 * ```
 */
export function logsumexp(
  x: Tensor,
  axis?: number | readonly number[],
  options?: ReduceOptions | boolean,
): Tensor {
  checkF32("logsumexp", x);
  const keepDims = keepDimsOf("logsumexp", options);
  const axes = reducedAxes("logsumexp", x, axis);
  const m = max(x, axes, { keepDims: true }).detach();
  const s = add(log(sum(exp(sub(x, m)), axes, { keepDims: true })), m);
  return keepDims ? s : reshape(s, reducedShape(shapeOf(x), axes, false));
}

/** Options of `norm`: the order `p` (2, 1 or Infinity), the axes and `keepDims`. */
export interface NormOptions extends ReduceOptions {
  /** The order: 2 (Euclidean), 1 (sum of magnitudes) or Infinity (largest magnitude). @default 2 */
  readonly p?: number;
  /** The axis or axes (every axis by default, the whole tensor as one vector). */
  readonly axis?: number | readonly number[];
}

const NORM_KEYS = ["p", "axis", "keepDims"] as const;

/**
 * The vector norm over `axis` (every axis by default), as `torch.linalg.vector_norm`: p = 2 is √Σx², p = 1 is
 * Σ|x|, p = Infinity is max |x|. A composition of differentiable ops (the 2-norm's gradient at a zero vector
 * is NaN here, PyTorch's is 0).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using a = Tensor.from([[3, -4]]);
 * using two = a.norm();
 * using one = ops.norm(a, { p: 1, axis: 1 });
 * assert.ok(two.item() === 5 && (one.toNested() as number[])[0] === 7);
 * ```
 */
export function norm(x: Tensor, options?: NormOptions): Tensor {
  checkF32("norm", x);
  const checked = checkOptions("norm", options, NORM_KEYS, { ord: "zigtensor spells it p" });
  const keepDims = checkBoolean("norm", "keepDims", checked.keepDims, false);
  const p = checked.p ?? 2;
  const axes = reducedAxes("norm", x, checked.axis);
  if (p === 2) return sqrt(sum(mul(x, x), axes, { keepDims }));
  if (p === 1) return sum(abs(x), axes, { keepDims });
  if (p === Infinity) return max(abs(x), axes, { keepDims });
  throw new OptionError("norm", `p must be 2, 1 or Infinity, got ${describe(p)}`);
}

function softmaxFamily(op: SoftmaxOpName, x: Tensor, axis: number): Tensor {
  checkF32(op, x);
  if (rankOf(x) === 0) {
    throw new TensorShapeError(op, `${op} needs at least one axis, got a rank-0 tensor`, [shapeOf(x)]);
  }
  const a = normalizeAxis(op, axis, rankOf(x), shapeOf(x));
  const out = newOutput(op, shapeOf(x));
  const order = [...Array.from({ length: rankOf(x) }, (_, i) => i).filter((i) => i !== a), a];
  const pick = (values: readonly number[]) => order.map((i) => values[i]);
  kernels().softmax(
    kernelCode("softmax", op),
    pick(shapeOf(x)),
    operandOf(out, op, pick(stridesOf(out))),
    operandOf(x, op, pick(stridesOf(x))),
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

/**
 * Layer and batch normalization, built from the element-wise and reduction kernels. Both normalize
 * `x̂ = (x − mean)·rstd` with `rstd = 1/√(var + eps)` (the biased variance), then scale and shift. Their
 * records follow spec 000 §8: the normalized rows and the inverse standard deviation as owned slots (the
 * output itself when there is no affine part), plus the scale input.
 *
 * @module
 */
import { DType } from "../core/dtype.ts";
import { DTypeError, OptionError, TensorShapeError } from "../core/errors.ts";
import { checkOptions, describe } from "../core/options.ts";
import { computeSettings, GradMode, kernels } from "../context.ts";
import { formatShape } from "../core/shape.ts";
import { allocate, type Tensor } from "../tensor.ts";
import { type AttributesOf, type BackwardRecord, record, shouldRecord } from "../autograd/record.ts";
import { add, div, mul, sqrt, sub } from "./elementwise.ts";
import { checkF32, checkParameter, newOutput } from "./common.ts";
import { mean } from "./reduce.ts";
import { reshape } from "./views.ts";
import { contiguous, copyInto } from "./copy.ts";
import { layerNormWorkspace } from "../kernels/norm.ts";

/** Options of `layerNorm`. */
export interface LayerNormOptions {
  /** The scale, of the normalized shape. */
  readonly weight?: Tensor;
  /** The shift, of the normalized shape. */
  readonly bias?: Tensor;
  /** Added to the variance. @default 1e-5 */
  readonly eps?: number;
}

/** Options of `batchNorm`. */
export interface BatchNormOptions {
  /** The scale, one per channel [C]. */
  readonly weight?: Tensor;
  /** The shift, one per channel [C]. */
  readonly bias?: Tensor;
  /** Normalize with the batch's statistics and update the running ones; otherwise use the running ones. @default false */
  readonly training?: boolean;
  /** The weight of the batch statistics in the running update. @default 0.1 */
  readonly momentum?: number;
  /** Added to the variance. @default 1e-5 */
  readonly eps?: number;
}

/** The normalized input and the pieces of its statistics, each a new scoped tensor (kept dims). */
interface Normalized {
  readonly xhat: Tensor;
  readonly rstd: Tensor;
  readonly mean: Tensor;
  readonly variance: Tensor;
}

function checkEps(op: string, eps: number): void {
  if (typeof eps !== "number" || !(eps >= 0) || !Number.isFinite(eps)) {
    throw new OptionError(op, `eps must be a finite number ≥ 0, got ${String(eps)}`);
  }
}

/** x̂ = (x − mean)·rstd over `axes` (no records: the caller records the whole op). */
function normalize(x: Tensor, axes: readonly number[], eps: number): Normalized {
  return GradMode.noGrad(() => {
    const average = mean(x, axes, { keepDims: true });
    const centered = sub(x, average);
    const square = mul(centered, centered);
    const variance = mean(square, axes, { keepDims: true });
    square.dispose();
    const shifted = add(variance, eps);
    const std = sqrt(shifted);
    const rstd = div(1, std);
    shifted.dispose();
    std.dispose();
    const xhat = mul(centered, rstd);
    centered.dispose();
    return { xhat, rstd, mean: average, variance };
  });
}

/** y = x̂·weight + bias, each part optional; `weight` and `bias` are already viewed to broadcast. */
function affine(xhat: Tensor, weight: Tensor | undefined, bias: Tensor | undefined): Tensor {
  return GradMode.noGrad(() => {
    if (weight === undefined) return bias === undefined ? xhat : add(xhat, bias);
    const scaled = mul(xhat, weight);
    if (bias === undefined) return scaled;
    const y = add(scaled, bias);
    scaled.dispose();
    return y;
  });
}

/**
 * Records a normalization. Slot 0 is x̂ (owned, or the output itself when there is no affine part), slot 1
 * rstd (owned), slot 2 the weight when the input needs a gradient.
 */
function recordNorm<K extends "LayerNorm" | "BatchNorm">(
  kind: K,
  y: Tensor,
  x: Tensor,
  parts: { xhat: Tensor; rstd: Tensor; weight?: Tensor; bias?: Tensor; attrs: AttributesOf<K> },
): Tensor {
  const { xhat, rstd, weight, bias } = parts;
  const inputs = [x, ...(weight === undefined ? [] : [weight]), ...(bias === undefined ? [] : [bias])];
  if (!shouldRecord(...inputs)) {
    if (xhat !== y) xhat.dispose();
    rstd.dispose();
    return y;
  }
  return record(y, kind, inputs, {
    saved: [xhat, rstd, weight !== undefined && x.requiresGrad ? weight : null],
    attrs: parts.attrs,
    owned: xhat === y ? [rstd] : [xhat, rstd],
  });
}

/** `t` itself when contiguous, else a contiguous copy made without a record (the kernels read rows). */
function dense(t: Tensor): Tensor {
  return t.isContiguous ? t : GradMode.noGrad(() => contiguous(t));
}

/** Disposes the copies `dense` made. */
function disposeCopies(pairs: readonly (readonly [Tensor | undefined, Tensor | undefined])[]): void {
  for (const [original, copy] of pairs) if (copy !== undefined && copy !== original) copy.dispose();
}

/**
 * Layer normalization over the trailing axes `normalizedShape` (a number or an array; they must be the last
 * extents of `x`), with an optional elementwise `weight` and `bias` of that shape: one kernel call
 * (`src/kernels/norm.ts`) per row block for the statistics, x̂ and the affine part. Records LayerNorm
 * (attributes: the number of normalized axes, whether weight and bias were given, eps), whose backward pass is
 * one kernel call too.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[1, 3], [10, 30]]);
 * using y = ops.layerNorm(x, [2], { eps: 0 });
 * assert.deepEqual(y.toNested(), [[-1, 1], [-1, 1]]);
 * ```
 */
export function layerNorm(
  x: Tensor,
  normalizedShape: number | readonly number[],
  options?: LayerNormOptions,
): Tensor {
  const op = "layerNorm";
  options = checkOptions(op, options, ["weight", "bias", "eps"]);
  checkF32(op, x);
  if (typeof normalizedShape !== "number" && !Array.isArray(normalizedShape)) {
    throw new OptionError(
      op,
      `normalizedShape must be an extent or an array of extents, got ${describe(normalizedShape)}`,
    );
  }
  const shape = typeof normalizedShape === "number" ? [normalizedShape] : [...normalizedShape];
  const k = shape.length;
  const lead = x.rank - k;
  if (k === 0 || lead < 0 || shape.some((e, i) => e !== x.shape[lead + i])) {
    throw new TensorShapeError(
      op,
      `normalizedShape ${formatShape(shape)} must be the last extents of the input ${formatShape(x.shape)}`,
      [x.shape, shape],
    );
  }
  const { weight, bias } = options;
  checkParameter(op, "weight", weight, shape);
  checkParameter(op, "bias", bias, shape);
  const eps = options.eps ?? 1e-5;
  checkEps(op, eps);
  const width = shape.reduce((a, b) => a * b, 1);
  const rows = width === 0 ? 0 : x.size / width;
  const recording = shouldRecord(
    x,
    ...(weight === undefined ? [] : [weight]),
    ...(bias === undefined ? [] : [bias]),
  );
  const y = newOutput(op, x.shape);
  const affine = weight !== undefined || bias !== undefined;
  const xhat = recording && affine ? newOutput(op, x.shape) : y;
  const rstd = allocate(op, [...x.shape.slice(0, lead), ...shape.map(() => 1)], DType.F32, width === 0, {
    scoped: true,
  });
  if (width > 0) {
    const [xd, wd, bd] = [dense(x), weight && dense(weight), bias && dense(bias)];
    try {
      kernels().layerNorm(
        { rows, width, eps },
        y.operand(op),
        xhat === y ? null : xhat.operand(op),
        rstd.operand(op),
        xd.operand(op),
        wd?.operand(op) ?? null,
        bd?.operand(op) ?? null,
        computeSettings(),
      );
    } finally {
      disposeCopies([[x, xd], [weight, wd], [bias, bd]]);
    }
  }
  return recordNorm("LayerNorm", y, x, {
    xhat,
    rstd,
    weight,
    bias,
    attrs: { normalizedAxes: k, hasWeight: weight !== undefined, hasBias: bias !== undefined, eps },
  });
}

/**
 * The LayerNorm rule: dx, dweight and dbias (each where its input needs one) from the saved x̂, rstd and weight
 * by one kernel call (`src/kernels/norm.ts`).
 */
export function layerNormBackward(r: BackwardRecord<"LayerNorm">, g: Tensor): (Tensor | null)[] {
  const op = "layerNorm backward";
  const input = r.inputShape(0);
  const k = r.attrs.normalizedAxes;
  const width = input.slice(input.length - k).reduce((a, b) => a * b, 1);
  const rows = width === 0 ? 0 : input.reduce((a, b) => a * b, 1) / width;
  const { hasWeight, hasBias } = r.attrs;
  const biasSlot = hasWeight ? 2 : 1;
  const dx = r.needsGrad(0) ? newOutput(op, input) : null;
  const dw = hasWeight && r.needsGrad(1) ? newOutput(op, r.inputShape(1)) : null;
  const db = hasBias && r.needsGrad(biasSlot) ? newOutput(op, r.inputShape(biasSlot)) : null;
  if (width > 0) {
    const params = { rows, width, eps: r.attrs.eps };
    const weight = hasWeight && dx !== null ? r.savedTensor(2) : undefined;
    const [gd, wd] = [dense(g), weight && dense(weight)];
    const work = dw === null && db === null
      ? null
      : allocate(op, [Math.max(1, layerNormWorkspace(params))], DType.F64, false, { scoped: true });
    try {
      kernels().layerNormBackward(
        params,
        {
          dx: dx?.operand(op) ?? null,
          dw: dw?.operand(op) ?? null,
          db: db?.operand(op) ?? null,
          work: work?.operand(op) ?? null,
        },
        gd.operand(op),
        r.savedTensor(0).operand(op),
        r.savedTensor(1).operand(op),
        wd?.operand(op) ?? null,
        computeSettings(),
      );
    } finally {
      disposeCopies([[g, gd], [weight, wd]]);
      work?.dispose();
    }
  }
  return [dx, ...(hasWeight ? [dw] : []), ...(hasBias ? [db] : [])];
}

/** A per-channel [C] tensor viewed as [C, 1, …] to broadcast over [N, C, …] of rank `rank`. */
function perChannel(t: Tensor | undefined, rank: number): Tensor | undefined {
  if (t === undefined) return undefined;
  return GradMode.noGrad(() => reshape(t, [t.shape[0], ...new Array<number>(rank - 2).fill(1)]));
}

function checkBatchNorm(
  op: string,
  x: Tensor,
  runningMean: Tensor | null,
  runningVar: Tensor | null,
  options: BatchNormOptions,
): void {
  checkF32(op, x);
  if (x.rank < 2) {
    throw new TensorShapeError(op, `batchNorm takes [N, C, ...], got ${formatShape(x.shape)}`, [x.shape]);
  }
  const channels = [x.shape[1]];
  if ((runningMean === null) !== (runningVar === null)) {
    throw new OptionError(op, `give both running statistics or neither`);
  }
  if (runningMean === null && options.training !== true) {
    throw new OptionError(op, `evaluation mode (training: false) needs the running mean and variance`);
  }
  checkParameter(op, "runningMean", runningMean ?? undefined, channels);
  checkParameter(op, "runningVar", runningVar ?? undefined, channels);
  checkParameter(op, "weight", options.weight, channels);
  checkParameter(op, "bias", options.bias, channels);
  checkEps(op, options.eps ?? 1e-5);
  const momentum = options.momentum ?? 0.1;
  if (typeof momentum !== "number" || !Number.isFinite(momentum)) {
    throw new OptionError(op, `momentum must be a finite number, got ${String(momentum)}`);
  }
  if (options.training === true && x.size / Math.max(x.shape[1], 1) <= 1) {
    throw new TensorShapeError(
      op,
      `training needs more than one value per channel, got input ${formatShape(x.shape)}`,
      [x.shape],
    );
  }
  if (runningMean !== null && (runningMean.dtype !== DType.F32 || runningVar!.dtype !== DType.F32)) {
    throw new DTypeError(op, "the running statistics must be F32");
  }
}

/** running ← (1 − momentum)·running + momentum·batch, written in place without a record. */
function updateRunning(running: Tensor, batch: Tensor, momentum: number): void {
  GradMode.noGrad(() => {
    const old = mul(running, 1 - momentum);
    const fresh = mul(reshape(batch, running.shape), momentum);
    const next = add(old, fresh);
    copyInto(running, next);
    for (const t of [old, fresh, next]) t.dispose();
  });
}

/** Batch statistics over [0, 2, …]: normalizes and updates the running mean and the unbiased variance. */
function trainingStatistics(
  x: Tensor,
  axes: readonly number[],
  eps: number,
  running: { mean: Tensor | null; variance: Tensor | null; momentum: number },
): Normalized {
  const normalized = normalize(x, axes, eps);
  if (running.mean !== null && running.variance !== null) {
    const count = x.size / x.shape[1];
    updateRunning(running.mean, normalized.mean, running.momentum);
    const unbiased = GradMode.noGrad(() => mul(normalized.variance, count / (count - 1)));
    updateRunning(running.variance, unbiased, running.momentum);
    unbiased.dispose();
  }
  return normalized;
}

/** Running statistics: x̂ = (x − running mean)·rstd with rstd from the running variance. */
function evaluationStatistics(x: Tensor, runningMean: Tensor, runningVar: Tensor, eps: number) {
  return GradMode.noGrad(() => {
    const meanView = perChannel(runningMean, x.rank)!;
    const shifted = add(perChannel(runningVar, x.rank)!, eps);
    const std = sqrt(shifted);
    const rstd = div(1, std);
    const centered = sub(x, meanView);
    const xhat = mul(centered, rstd);
    for (const t of [shifted, std, centered]) t.dispose();
    return { xhat, rstd };
  });
}

/**
 * Batch normalization of `x` [N, C, ...] per channel, PyTorch's `batch_norm`: in training mode with the
 * batch's mean and biased variance over every axis but 1, and `runningMean`/`runningVar` ([C], or null for
 * none) updated in place without a record as `(1 − momentum)·running + momentum·batch` (the unbiased
 * variance); in evaluation mode with the running statistics. Records BatchNorm (attributes: training, whether
 * weight and bias were given, eps, momentum).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[1, 10], [3, 30]]); // N = 2, C = 2
 * using runningMean = Tensor.zeros([2]);
 * using runningVar = Tensor.ones([2]);
 * using y = ops.batchNorm(x, runningMean, runningVar, { training: true, eps: 0 });
 * assert.deepEqual(y.toNested(), [[-1, -1], [1, 1]]);
 * assert.deepEqual([...runningMean.toArray()], [Math.fround(0.2), 2]); // 0.9·0 + 0.1·mean, in f32
 * ```
 */
export function batchNorm(
  x: Tensor,
  runningMean: Tensor | null,
  runningVar: Tensor | null,
  options?: BatchNormOptions,
): Tensor {
  const op = "batchNorm";
  options = checkOptions(op, options, ["weight", "bias", "training", "momentum", "eps"]);
  checkBatchNorm(op, x, runningMean, runningVar, options);
  const training = options.training ?? false;
  const eps = options.eps ?? 1e-5;
  const momentum = options.momentum ?? 0.1;
  const axes = [0, ...Array.from({ length: x.rank - 2 }, (_, i) => i + 2)];
  let xhat: Tensor;
  let rstd: Tensor;
  if (training) {
    const stats = trainingStatistics(x, axes, eps, { mean: runningMean, variance: runningVar, momentum });
    stats.mean.dispose();
    stats.variance.dispose();
    ({ xhat, rstd } = stats);
  } else {
    ({ xhat, rstd } = evaluationStatistics(x, runningMean!, runningVar!, eps));
  }
  const y = affine(xhat, perChannel(options.weight, x.rank), perChannel(options.bias, x.rank));
  return recordNorm("BatchNorm", y, x, {
    xhat,
    rstd,
    weight: options.weight,
    bias: options.bias,
    attrs: {
      training,
      hasWeight: options.weight !== undefined,
      hasBias: options.bias !== undefined,
      eps,
      momentum,
    },
  });
}

/**
 * Layer and batch normalization, each one native kernel call forward and one backward (`src/kernels/norm.ts`,
 * `zig/kernels/norm.zig`). Both normalize `x̂ = (x − mean)·rstd` with `rstd = 1/√(var + eps)` (the biased
 * variance), then scale and shift. Their records follow spec 000 §8: the normalized rows and the inverse
 * standard deviation as owned slots (the output itself when there is no affine part), plus the scale input.
 *
 * @module
 */
import { DType } from "../core/dtype.ts";
import { DTypeError, OptionError, TensorShapeError } from "../core/errors.ts";
import { checkOptions, describe } from "../core/options.ts";
import { computeSettings, GradMode, kernels } from "../context.ts";
import { formatShape } from "../core/shape.ts";
import {
  allocate,
  dtypeOf,
  isContiguousOf,
  operandOf,
  rankOf,
  requiresGradOf,
  shapeOf,
  sizeOf,
  type Tensor,
} from "../tensor.ts";
import { type AttributesOf, type BackwardRecord, record, shouldRecord } from "../autograd/record.ts";
import { add, mul } from "./elementwise.ts";
import { checkF32, checkParameter, newOutput } from "./common.ts";
import { reshape } from "./views.ts";
import { contiguous, copyInto } from "./copy.ts";
import { layerNormParams, type NormParams, normWorkspace } from "../kernels/norm.ts";

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

function checkEps(op: string, eps: number): void {
  if (typeof eps !== "number" || !(eps >= 0) || !Number.isFinite(eps)) {
    throw new OptionError(op, `eps must be a finite number ≥ 0, got ${String(eps)}`);
  }
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
    saved: [xhat, rstd, weight !== undefined && requiresGradOf(x) ? weight : null],
    attrs: parts.attrs,
    owned: xhat === y ? [rstd] : [xhat, rstd],
  });
}

/** `t` itself when contiguous, else a contiguous copy made without a record (the kernels read rows). */
function dense(t: Tensor): Tensor {
  return isContiguousOf(t) ? t : GradMode.noGrad(() => contiguous(t));
}

/** Disposes the copies `dense` made. */
function disposeCopies(pairs: readonly (readonly [Tensor | undefined, Tensor | undefined])[]): void {
  for (const [original, copy] of pairs) if (copy !== undefined && copy !== original) copy.dispose();
}

/** What `normForward` gives: y, x̂ (y itself unless recorded with an affine part), rstd and the batch statistics. */
interface NormResult {
  readonly y: Tensor;
  readonly xhat: Tensor;
  readonly rstd: Tensor;
  readonly mean: Tensor | null;
  readonly variance: Tensor | null;
}

/**
 * One forward kernel call: y of x's shape, rstd of `statShape`, x̂ when the call records with an affine part,
 * the batch mean and biased variance [rows] when `wantStatistics`, or normalized by `given` ([rows] each).
 */
function normForward(
  op: string,
  x: Tensor,
  params: NormParams,
  parts: {
    weight?: Tensor;
    bias?: Tensor;
    statShape: readonly number[];
    wantStatistics: boolean;
    given: { mean: Tensor; variance: Tensor } | null;
  },
): NormResult {
  const { weight, bias } = parts;
  const recording = shouldRecord(
    x,
    ...(weight === undefined ? [] : [weight]),
    ...(bias === undefined ? [] : [bias]),
  );
  const y = newOutput(op, shapeOf(x));
  const xhat = recording && (weight !== undefined || bias !== undefined) ? newOutput(op, shapeOf(x)) : y;
  const empty = sizeOf(x) === 0;
  const rstd = allocate(op, parts.statShape, DType.F32, empty, { scoped: true });
  const statistic = () => allocate(op, [params.rows], DType.F32, empty, { scoped: true });
  const mean = parts.wantStatistics ? statistic() : null;
  const variance = parts.wantStatistics ? statistic() : null;
  if (!empty) {
    const given = parts.given;
    const copies = [x, weight, bias, given?.mean, given?.variance].map((t) => t && dense(t));
    const [xd, wd, bd, md, vd] = copies;
    try {
      kernels().norm(
        params,
        {
          y: operandOf(y, op),
          xhat: xhat === y ? null : operandOf(xhat, op),
          rstd: operandOf(rstd, op),
          mean: mean ? operandOf(mean, op) : null,
          variance: variance ? operandOf(variance, op) : null,
        },
        operandOf(xd!, op),
        wd ? operandOf(wd, op) : null,
        bd ? operandOf(bd, op) : null,
        md === undefined ? null : { mean: operandOf(md, op), variance: operandOf(vd!, op) },
        computeSettings(),
      );
    } finally {
      disposeCopies([[x, xd], [weight, wd], [bias, bd], [given?.mean, md], [given?.variance, vd]]);
    }
  }
  return { y, xhat, rstd, mean, variance };
}

/**
 * The LayerNorm and BatchNorm rules: dx, dweight and dbias (each where its input needs one) from the saved x̂,
 * rstd and weight by one kernel call; `centered` when the statistics were the batch's.
 */
function normBackward(
  r: BackwardRecord<"LayerNorm" | "BatchNorm">,
  g: Tensor,
  params: NormParams,
  centered: boolean,
): (Tensor | null)[] {
  const op = `${r.op} backward`;
  const { hasWeight, hasBias } = r.attrs;
  const biasSlot = hasWeight ? 2 : 1;
  const dx = r.needsGrad(0) ? newOutput(op, r.inputShape(0)) : null;
  const zeroed = r.inputShape(0).includes(0);
  const parameter = (slot: number) => allocate(op, r.inputShape(slot), DType.F32, zeroed, { scoped: true });
  const dw = hasWeight && r.needsGrad(1) ? parameter(1) : null;
  const db = hasBias && r.needsGrad(biasSlot) ? parameter(biasSlot) : null;
  if (!zeroed) {
    const weight = hasWeight && dx !== null ? r.savedTensor(2) : undefined;
    const [gd, wd] = [dense(g), weight && dense(weight)];
    const workspace = normWorkspace(params);
    const work = (dw === null && db === null) || workspace === 0
      ? null
      : allocate(op, [workspace], DType.F64, false, { scoped: true });
    try {
      kernels().normBackward(
        params,
        {
          dx: dx ? operandOf(dx, op) : null,
          dw: dw ? operandOf(dw, op) : null,
          db: db ? operandOf(db, op) : null,
          work: work ? operandOf(work, op) : null,
        },
        operandOf(gd, op),
        operandOf(r.savedTensor(0), op),
        operandOf(r.savedTensor(1), op),
        wd ? operandOf(wd, op) : null,
        centered,
        computeSettings(),
      );
    } finally {
      disposeCopies([[g, gd], [weight, wd]]);
      work?.dispose();
    }
  }
  return [dx, ...(hasWeight ? [dw] : []), ...(hasBias ? [db] : [])];
}

/** The rows of a layer normalization of `shape` over its last `k` axes. */
function layerNormGeometry(shape: readonly number[], k: number, eps: number): NormParams {
  const width = shape.slice(shape.length - k).reduce((a, b) => a * b, 1);
  return layerNormParams(width === 0 ? 0 : shape.reduce((a, b) => a * b, 1) / width, width, eps);
}

/** The rows of a batch normalization of [N, C, …]: one per channel, N runs of the spatial extent S each. */
function batchNormGeometry(shape: readonly number[], eps: number): NormParams {
  const [n, c] = shape;
  const spatial = shape.slice(2).reduce((a, b) => a * b, 1);
  return {
    rows: c,
    width: spatial,
    segments: n,
    segmentStride: c * spatial,
    rowStride: spatial,
    perRow: true,
    eps,
  };
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
  const lead = rankOf(x) - k;
  if (k === 0 || lead < 0 || shape.some((e, i) => e !== shapeOf(x)[lead + i])) {
    throw new TensorShapeError(
      op,
      `normalizedShape ${formatShape(shape)} must be the last extents of the input ${
        formatShape(shapeOf(x))
      }`,
      [shapeOf(x), shape],
    );
  }
  const { weight, bias } = options;
  checkParameter(op, "weight", weight, shape);
  checkParameter(op, "bias", bias, shape);
  const eps = options.eps ?? 1e-5;
  checkEps(op, eps);
  const { y, xhat, rstd } = normForward(op, x, layerNormGeometry(shapeOf(x), k, eps), {
    weight,
    bias,
    statShape: [...shapeOf(x).slice(0, lead), ...shape.map(() => 1)],
    wantStatistics: false,
    given: null,
  });
  return recordNorm("LayerNorm", y, x, {
    xhat,
    rstd,
    weight,
    bias,
    attrs: { normalizedAxes: k, hasWeight: weight !== undefined, hasBias: bias !== undefined, eps },
  });
}

/** The LayerNorm rule: one backward kernel call. */
export function layerNormBackward(r: BackwardRecord<"LayerNorm">, g: Tensor): (Tensor | null)[] {
  return normBackward(r, g, layerNormGeometry(r.inputShape(0), r.attrs.normalizedAxes, r.attrs.eps), true);
}

/** The BatchNorm rule: one backward kernel call; with the running statistics (evaluation) dx = ĝ·rstd. */
export function batchNormBackward(r: BackwardRecord<"BatchNorm">, g: Tensor): (Tensor | null)[] {
  return normBackward(r, g, batchNormGeometry(r.inputShape(0), r.attrs.eps), r.attrs.training);
}

function checkBatchNorm(
  op: string,
  x: Tensor,
  runningMean: Tensor | null,
  runningVar: Tensor | null,
  options: BatchNormOptions,
): void {
  checkF32(op, x);
  if (rankOf(x) < 2) {
    throw new TensorShapeError(op, `batchNorm takes [N, C, ...], got ${formatShape(shapeOf(x))}`, [
      shapeOf(x),
    ]);
  }
  const channels = [shapeOf(x)[1]];
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
  if (options.training === true && sizeOf(x) / Math.max(shapeOf(x)[1], 1) <= 1) {
    throw new TensorShapeError(
      op,
      `training needs more than one value per channel, got input ${formatShape(shapeOf(x))}`,
      [shapeOf(x)],
    );
  }
  if (runningMean !== null && (dtypeOf(runningMean) !== DType.F32 || dtypeOf(runningVar!) !== DType.F32)) {
    throw new DTypeError(op, "the running statistics must be F32");
  }
}

/** running ← (1 − momentum)·running + momentum·batch, written in place without a record. */
function updateRunning(running: Tensor, batch: Tensor, momentum: number): void {
  GradMode.noGrad(() => {
    const old = mul(running, 1 - momentum);
    const fresh = mul(reshape(batch, shapeOf(running)), momentum);
    const next = add(old, fresh);
    copyInto(running, next);
    for (const t of [old, fresh, next]) t.dispose();
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
  const { weight, bias } = options;
  const statShape = [1, shapeOf(x)[1], ...shapeOf(x).slice(2).map(() => 1)];
  const given = training ? null : { mean: runningMean!, variance: runningVar! };
  const { y, xhat, rstd, mean, variance } = normForward(op, x, batchNormGeometry(shapeOf(x), eps), {
    weight,
    bias,
    statShape,
    wantStatistics: training && runningMean !== null,
    given,
  });
  if (mean !== null && variance !== null) {
    // The running variance takes the unbiased batch variance.
    const count = sizeOf(x) / shapeOf(x)[1];
    updateRunning(runningMean!, mean, momentum);
    const unbiased = GradMode.noGrad(() => mul(variance, count / (count - 1)));
    updateRunning(runningVar!, unbiased, momentum);
    for (const t of [unbiased, mean, variance]) t.dispose();
  }
  return recordNorm("BatchNorm", y, x, {
    xhat,
    rstd,
    weight,
    bias,
    attrs: {
      training,
      hasWeight: options.weight !== undefined,
      hasBias: options.bias !== undefined,
      eps,
      momentum,
    },
  });
}

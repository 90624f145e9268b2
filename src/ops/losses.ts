/**
 * Losses with PyTorch's semantics. The classification losses `nllLoss` and `crossEntropy` are one fused native
 * kernel each (`src/kernels/nll.ts`), forward and backward. The regression and probability losses `mseLoss`,
 * `l1Loss`, `smoothL1Loss`, `binaryCrossEntropy`, `binaryCrossEntropyWithLogits` and `klDiv` are each a
 * composition of differentiable element-wise ops and one reduction, so their gradients come from those ops'
 * rules (every tie and kink gets PyTorch's subgradient, noted per loss); without a record their
 * intermediates are freed by a scope.
 *
 * @module
 */
import { BackwardNotImplementedError, DTypeError, OptionError, TensorShapeError } from "../core/errors.ts";
import { checkBoolean, checkOptions, describe } from "../core/options.ts";
import { broadcastShapes, formatShape } from "../core/shape.ts";
import { DType, dtypeInfo } from "../core/dtype.ts";
import {
  allocate,
  blockSizeOf,
  dtypeOf,
  isContiguousOf,
  operandOf,
  rankOf,
  shapeOf,
  stridesOf,
  type Tensor,
} from "../tensor.ts";
import { tidy } from "../memory/scope.ts";
import { computeSettings, GradMode, kernels } from "../context.ts";
import { type BackwardRecord, recordOp, shouldRecord } from "../autograd/record.ts";
import { NllOp, type NllParams, NllPhase, nllWorkspace } from "../kernels/nll.ts";
import type { KernelOperand } from "../kernels/types.ts";
import { abs, add, div, exp, log, maximum, minimum, mul, sub } from "./elementwise.ts";
import { mean, sum } from "./reduce.ts";
import { contiguous } from "./copy.ts";
import { checkF32, checkTensor, newOutput } from "./common.ts";

/** How a loss reduces its element-wise values: their mean, their sum, or none (the element-wise tensor). */
export type LossReduction = "mean" | "sum" | "none";

/** The option every loss takes. */
export interface LossOptions {
  /** How the element-wise losses are reduced. @default "mean" */
  readonly reduction?: LossReduction;
}

/** Options of `smoothL1Loss`. */
export interface SmoothL1LossOptions extends LossOptions {
  /** Where the loss turns from quadratic to linear; 0 gives `l1Loss`. @default 1 */
  readonly beta?: number;
}

/** Options of `binaryCrossEntropy`. */
export interface BinaryCrossEntropyOptions extends LossOptions {
  /** A weight of each element, broadcast to the input's shape. */
  readonly weight?: Tensor;
}

/** Options of `binaryCrossEntropyWithLogits`. */
export interface BinaryCrossEntropyWithLogitsOptions extends BinaryCrossEntropyOptions {
  /** A weight of the positive term, broadcast to the input's shape (PyTorch's `pos_weight`, one per class). */
  readonly posWeight?: Tensor;
}

/** Options of `klDiv`. */
export interface KlDivOptions {
  /** As `LossOptions`, plus `"batchmean"`: the sum divided by the input's first extent. @default "mean" */
  readonly reduction?: LossReduction | "batchmean";
  /** The target is given as log-probabilities. @default false */
  readonly logTarget?: boolean;
}

const REDUCTIONS: readonly string[] = ["mean", "sum", "none"];

/** The checked reduction, one of `allowed`. */
function checkReduction(op: string, value: unknown, allowed: readonly string[] = REDUCTIONS): string {
  const reduction = value ?? "mean";
  if (typeof reduction !== "string" || !allowed.includes(reduction)) {
    throw new OptionError(
      op,
      `reduction must be ${allowed.map((r) => `"${r}"`).join(", ")}, got ${describe(value)}`,
    );
  }
  return reduction;
}

/** Throws unless `target` (and each present weight) fits `input`: the same shape, or broadcast to it. */
function checkShapes(
  op: string,
  input: Tensor,
  target: Tensor,
  weights: Readonly<Record<string, Tensor | undefined>> = {},
): void {
  checkF32(op, input, target);
  if (rankOf(target) !== rankOf(input) || shapeOf(target).some((e, i) => e !== shapeOf(input)[i])) {
    throw new TensorShapeError(
      op,
      `the target ${formatShape(shapeOf(target))} must have the input's shape ${formatShape(shapeOf(input))}`,
      [shapeOf(input), shapeOf(target)],
    );
  }
  for (const [name, w] of Object.entries(weights)) {
    if (w === undefined) continue;
    checkF32(op, w);
    const shape = broadcastShapes(op, shapeOf(input), shapeOf(w));
    if (shape.length !== rankOf(input) || shape.some((e, i) => e !== shapeOf(input)[i])) {
      throw new TensorShapeError(
        op,
        `${name} ${formatShape(shapeOf(w))} must broadcast to the input's shape ${
          formatShape(shapeOf(input))
        }`,
        [shapeOf(input), shapeOf(w)],
      );
    }
  }
}

/** `elementwise()` reduced as asked; in a scope unless something records. */
function reduce(reduction: string, recording: boolean, elementwise: () => Tensor, batch = 1): Tensor {
  const run = () => {
    const values = elementwise();
    if (reduction === "none") return values;
    if (reduction === "mean") return mean(values);
    const total = sum(values);
    return reduction === "batchmean" ? div(total, batch) : total;
  };
  return recording ? run() : tidy(run);
}

/**
 * The mean squared error `(input − target)²`, reduced (PyTorch's `mse_loss`). The target has the input's shape.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using loss = ops.mseLoss(Tensor.from([1, 2, 3]), Tensor.from([1, 0, 0]));
 * assert.ok(Math.abs((loss.item() as number) - 13 / 3) < 1e-6);
 * ```
 */
export function mseLoss(input: Tensor, target: Tensor, options?: LossOptions): Tensor {
  const op = "mseLoss";
  options = checkOptions(op, options, ["reduction"]);
  const reduction = checkReduction(op, options.reduction);
  checkShapes(op, input, target);
  return reduce(reduction, shouldRecord(input, target), () => {
    const d = sub(input, target);
    return mul(d, d);
  });
}

/**
 * The mean absolute error `|input − target|`, reduced (PyTorch's `l1_loss`; the gradient at a zero difference
 * is 0).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using loss = ops.l1Loss(Tensor.from([1, 2, 3]), Tensor.from([1, 0, 0]), { reduction: "sum" });
 * assert.equal(loss.item(), 5);
 * ```
 */
export function l1Loss(input: Tensor, target: Tensor, options?: LossOptions): Tensor {
  const op = "l1Loss";
  options = checkOptions(op, options, ["reduction"]);
  const reduction = checkReduction(op, options.reduction);
  checkShapes(op, input, target);
  return reduce(reduction, shouldRecord(input, target), () => abs(sub(input, target)));
}

/**
 * The Huber-like loss of PyTorch's `smooth_l1_loss`: with `d = |input − target|`, `0.5·d²/beta` where
 * `d < beta`, else `d − 0.5·beta`; `beta = 0` is `l1Loss`. Computed as `m·(d − 0.5·m)/beta` with
 * `m = min(d, beta)`, which is both branches at once and gives the gradient `clamp(diff/beta, −1, 1)`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using loss = ops.smoothL1Loss(Tensor.from([0.5, 3]), Tensor.from([0, 0]), { reduction: "none" });
 * assert.deepEqual([...loss.toArray()], [0.125, 2.5]);
 * ```
 */
export function smoothL1Loss(input: Tensor, target: Tensor, options?: SmoothL1LossOptions): Tensor {
  const op = "smoothL1Loss";
  options = checkOptions(op, options, ["reduction", "beta"]);
  const reduction = checkReduction(op, options.reduction);
  const beta = options.beta ?? 1;
  if (typeof beta !== "number" || !(beta >= 0) || beta === Infinity) {
    throw new OptionError(op, `beta must be a finite number ≥ 0, got ${describe(options.beta)}`);
  }
  checkShapes(op, input, target);
  return reduce(reduction, shouldRecord(input, target), () => {
    const d = abs(sub(input, target));
    if (beta === 0) return d;
    const m = minimum(d, beta);
    return div(mul(m, sub(d, mul(m, 0.5))), beta);
  });
}

/**
 * Binary cross-entropy of probabilities `input` against targets in [0, 1] (PyTorch's `binary_cross_entropy`):
 * `−weight·(target·log(input) + (1 − target)·log(1 − input))`, each log clamped at −100 as PyTorch does. The
 * gradient is `weight·(input − target)/(input·(1 − input))`; at an input of exactly 0 or 1 it is infinite
 * where PyTorch's is large but finite.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using loss = ops.binaryCrossEntropy(Tensor.from([0.5, 0.5]), Tensor.from([1, 0]));
 * assert.ok(Math.abs((loss.item() as number) - Math.LN2) < 1e-6);
 * ```
 */
export function binaryCrossEntropy(
  input: Tensor,
  target: Tensor,
  options?: BinaryCrossEntropyOptions,
): Tensor {
  const op = "binaryCrossEntropy";
  options = checkOptions(op, options, ["reduction", "weight"]);
  const reduction = checkReduction(op, options.reduction);
  const weight = options.weight;
  checkShapes(op, input, target, { weight });
  const inputs = weight === undefined ? [input, target] : [input, target, weight];
  return reduce(reduction, shouldRecord(...inputs), () => {
    const positive = mul(target, maximum(log(input), -100));
    const negative = mul(sub(1, target), maximum(log(sub(1, input)), -100));
    const loss = sub(0, add(positive, negative));
    return weight === undefined ? loss : mul(loss, weight);
  });
}

/**
 * Binary cross-entropy of logits `input` against targets in [0, 1] (PyTorch's
 * `binary_cross_entropy_with_logits`), stable for any logit:
 * `weight·((1 − target)·input + (1 + (posWeight − 1)·target)·softplus(−input))` with
 * `softplus(−x) = log(1 + e^(−|x|)) − min(x, 0)`. The gradient is
 * `weight·((1 + (posWeight − 1)·target)·sigmoid(input) − posWeight·target)`, at a logit of 0 too (the tie of the
 * minimum splits its gradient).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using loss = ops.binaryCrossEntropyWithLogits(Tensor.from([0, 0]), Tensor.from([1, 0]));
 * assert.ok(Math.abs((loss.item() as number) - Math.LN2) < 1e-6);
 * ```
 */
export function binaryCrossEntropyWithLogits(
  input: Tensor,
  target: Tensor,
  options?: BinaryCrossEntropyWithLogitsOptions,
): Tensor {
  const op = "binaryCrossEntropyWithLogits";
  options = checkOptions(op, options, ["reduction", "weight", "posWeight"]);
  const reduction = checkReduction(op, options.reduction);
  const { weight, posWeight } = options;
  checkShapes(op, input, target, { weight, posWeight });
  const inputs = [input, target, ...[weight, posWeight].filter((w) => w !== undefined)];
  return reduce(reduction, shouldRecord(...inputs), () => {
    const softplus = sub(log(add(exp(mul(abs(input), -1)), 1)), minimum(input, 0));
    const scale = posWeight === undefined ? softplus : mul(add(mul(sub(posWeight, 1), target), 1), softplus);
    const loss = add(mul(sub(1, target), input), scale);
    return weight === undefined ? loss : mul(loss, weight);
  });
}

/**
 * The Kullback–Leibler divergence of PyTorch's `kl_div`: `input` holds log-probabilities, `target`
 * probabilities (or log-probabilities with `logTarget`); the element-wise loss is `target·(log(target) − input)`
 * with `0·log 0 = 0`, or `exp(target)·(target − input)`. `"batchmean"` divides the sum by the first extent,
 * the mathematical KL divergence of a batch. Targets below 2^−126 (subnormal) count as 2^−126 inside the log.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using logP = Tensor.from([Math.log(0.5), Math.log(0.5)], [1, 2]);
 * using loss = ops.klDiv(logP, Tensor.from([1, 0], [1, 2]), { reduction: "batchmean" });
 * assert.ok(Math.abs((loss.item() as number) - Math.LN2) < 1e-6);
 * ```
 */
export function klDiv(input: Tensor, target: Tensor, options?: KlDivOptions): Tensor {
  const op = "klDiv";
  options = checkOptions(op, options, ["reduction", "logTarget"]);
  const reduction = checkReduction(op, options.reduction, [...REDUCTIONS, "batchmean"]);
  const logTarget = checkBoolean(op, "logTarget", options.logTarget, false);
  checkShapes(op, input, target);
  if (reduction === "batchmean" && rankOf(input) === 0) {
    throw new TensorShapeError(op, `"batchmean" needs a batch axis, got a scalar input`, [shapeOf(input)]);
  }
  const batch = rankOf(input) === 0 ? 1 : shapeOf(input)[0];
  return reduce(reduction, shouldRecord(input, target), () => {
    if (logTarget) return mul(exp(target), sub(target, input));
    return sub(mul(target, log(maximum(target, 2 ** -126))), mul(target, input));
  }, batch);
}

/** Options of `nllLoss`. */
export interface NllLossOptions extends LossOptions {
  /**
   * A weight per class, F32 [C]: each target's loss is scaled by its class's weight, and the mean divides by
   * the sum of the weights of the targets that are not ignored (PyTorch's rule). Frozen: it takes no gradient.
   */
  readonly weight?: Tensor;
  /**
   * Targets equal to this value add nothing to the loss nor to the mean's divisor (PyTorch's
   * `ignore_index`). @default -100
   */
  readonly ignoreIndex?: number;
}

/** Options of `crossEntropy`. */
export interface CrossEntropyOptions extends NllLossOptions {
  /**
   * ε in [0, 1]: the target becomes a mix of itself (1 − ε) and the uniform distribution over the C classes
   * (ε/C each), PyTorch's `label_smoothing`. @default 0
   */
  readonly labelSmoothing?: number;
}

const REDUCTION_CODES: Readonly<Record<string, number>> = { none: 0, mean: 1, sum: 2 };

/** The checked geometry and options of a class loss. */
interface ClassLoss {
  readonly params: NllParams;
  /** The rows' shape: the input's without the class axis (PyTorch's output shape for reduction none). */
  readonly rows: readonly number[];
  readonly weight: Tensor | undefined;
  readonly reduction: LossReduction;
}

/** Strides over [rows..., C] of a tensor laid out as the input ([N, C, d...], or [C]). */
function classLast(strides: readonly number[]): number[] {
  return strides.length < 2 ? [...strides] : [strides[0], ...strides.slice(2), strides[1]];
}

function checkClassLoss(
  op: "nllLoss" | "crossEntropy",
  input: Tensor,
  target: Tensor,
  options: CrossEntropyOptions,
): ClassLoss {
  checkF32(op, input);
  checkTensor(op, "the target", target);
  const reduction = checkReduction(op, options.reduction) as LossReduction;
  if (rankOf(input) < 1) {
    throw new TensorShapeError(op, `the input must be [C], [N, C] or [N, C, d1, ...], got a scalar`, [
      shapeOf(input),
    ]);
  }
  const axis = rankOf(input) === 1 ? 0 : 1;
  const classes = shapeOf(input)[axis];
  const rows = shapeOf(input).filter((_, d) => d !== axis);
  const info = dtypeInfo(dtypeOf(target));
  const probabilities = op === "crossEntropy" && dtypeOf(target) === DType.F32 && blockSizeOf(target) === 0;
  const wanted = probabilities ? shapeOf(input) : rows;
  if (!probabilities && dtypeOf(target) !== DType.I64 && dtypeOf(target) !== DType.I32) {
    throw new DTypeError(
      op,
      `the target must hold class indices (I64 or I32)${
        op === "crossEntropy" ? " or probabilities (F32, the input's shape)" : ""
      }, got ${info.name}`,
    );
  }
  if (rankOf(target) !== wanted.length || shapeOf(target).some((e, d) => e !== wanted[d])) {
    throw new TensorShapeError(
      op,
      `the target must have shape ${formatShape(wanted)} for the input ${formatShape(shapeOf(input))} (${
        probabilities ? "probabilities: the input's shape" : "class indices: the input's without axis " + axis
      }), got ${formatShape(shapeOf(target))}`,
      [shapeOf(input), shapeOf(target)],
    );
  }
  const weight = options.weight;
  if (weight !== undefined) {
    checkTensor(op, "weight", weight);
    checkF32(op, weight);
    if (rankOf(weight) !== 1 || shapeOf(weight)[0] !== classes) {
      throw new TensorShapeError(
        op,
        `weight must be [C] = [${classes}] for the input ${formatShape(shapeOf(input))}, got ${
          formatShape(shapeOf(weight))
        }`,
        [shapeOf(input), shapeOf(weight)],
      );
    }
    if (shouldRecord(weight)) throw new BackwardNotImplementedError(`${op} (the gradient of weight)`);
  }
  const ignoreIndex = options.ignoreIndex ?? -100;
  if (!Number.isInteger(ignoreIndex) || ignoreIndex < -(2 ** 31) || ignoreIndex >= 2 ** 31) {
    throw new OptionError(op, `ignoreIndex must be a 32-bit integer, got ${describe(options.ignoreIndex)}`);
  }
  const labelSmoothing = options.labelSmoothing ?? 0;
  if (typeof labelSmoothing !== "number" || !(labelSmoothing >= 0 && labelSmoothing <= 1)) {
    throw new OptionError(
      op,
      `labelSmoothing must be a number in [0, 1], got ${describe(options.labelSmoothing)}`,
    );
  }
  const params: NllParams = {
    op: op === "nllLoss" ? NllOp.NllLoss : NllOp.CrossEntropy,
    phase: NllPhase.Forward,
    shape: [...rows, classes],
    reduction: REDUCTION_CODES[reduction],
    ignoreIndex,
    probabilities,
    labelSmoothing,
  };
  return { params, rows, weight, reduction };
}

/** Throws the error of the first index target that is neither ignoreIndex nor a class. */
function targetOutOfRange(op: string, target: Tensor, classes: number, ignoreIndex: number): never {
  const values = Array.from(target.toArray() as ArrayLike<number | bigint>, Number);
  const flat = values.findIndex((t) => t !== ignoreIndex && (t < 0 || t >= classes));
  const position = shapeOf(target).map((_, d) => {
    const inner = shapeOf(target).slice(d + 1).reduce((a, b) => a * b, 1);
    return Math.floor(flat / inner) % shapeOf(target)[d];
  });
  throw new TensorShapeError(
    op,
    `target ${values[flat]} at position ${formatShape(position)} is not a class index in [0, ${classes}) ` +
      `nor ignoreIndex ${ignoreIndex}`,
    [shapeOf(target)],
  );
}

/** The weight as a contiguous operand (a copy when it is a strided view), or null. */
function weightOperand<T>(op: string, weight: Tensor | undefined, run: (w: KernelOperand | null) => T): T {
  if (weight === undefined) return run(null);
  const dense = isContiguousOf(weight) ? weight : GradMode.noGrad(() => contiguous(weight));
  try {
    return run(operandOf(dense, op, [1]));
  } finally {
    if (dense !== weight) dense.dispose();
  }
}

/** One forward call of the class-loss kernel, and its record. */
function classLoss(
  op: "nllLoss" | "crossEntropy",
  input: Tensor,
  target: Tensor,
  options: CrossEntropyOptions | undefined,
): Tensor {
  const accepted = ["reduction", "weight", "ignoreIndex"];
  options = checkOptions(op, options, op === "crossEntropy" ? [...accepted, "labelSmoothing"] : accepted);
  const loss = checkClassLoss(op, input, target, options);
  const { params, rows } = loss;
  const rowCount = rows.reduce((a, b) => a * b, 1);
  const out = newOutput(op, loss.reduction === "none" ? rows : []);
  const work = allocate(op, [nllWorkspace(rowCount)], DType.F64, false, { scoped: true });
  const targetStrides = params.probabilities ? classLast(stridesOf(target)) : [...stridesOf(target), 0];
  const outStrides = loss.reduction === "none" ? [...stridesOf(out), 0] : params.shape.map(() => 0);
  const ok = weightOperand(op, loss.weight, (weight) =>
    kernels().nll(
      params,
      operandOf(input, op, classLast(stridesOf(input))),
      operandOf(target, op, targetStrides),
      weight,
      operandOf(out, op, outStrides),
      operandOf(work, op, [1]),
      null,
      computeSettings(),
    ));
  if (!ok) {
    out.dispose();
    work.dispose();
    targetOutOfRange(op, target, params.shape[params.shape.length - 1], params.ignoreIndex);
  }
  const inputs = params.probabilities ? [input, target] : [input];
  return recordOp(op, out, inputs, {
    saved: [op === "crossEntropy" ? input : null, target, loss.weight ?? null, work],
    owned: [work],
    attrs: {
      reduction: params.reduction,
      ignoreIndex: params.ignoreIndex,
      labelSmoothing: params.labelSmoothing,
      probabilities: params.probabilities,
    },
  });
}

/**
 * The gradients of a NllLoss or CrossEntropy record: the input's (and a probability target's) from the
 * saved input, target, weight and work (each row's log-sum-exp and the mean's divisor), one kernel call each.
 */
export function classLossBackward(
  r: BackwardRecord<"NllLoss" | "CrossEntropy">,
  g: Tensor,
): (Tensor | null)[] {
  const op = "backward";
  const shape = r.inputShape(0);
  const base: NllParams = {
    op: r.op === "NllLoss" ? NllOp.NllLoss : NllOp.CrossEntropy,
    phase: NllPhase.InputGrad,
    shape: classLast(shape),
    reduction: r.attrs.reduction,
    ignoreIndex: r.attrs.ignoreIndex,
    probabilities: r.attrs.probabilities,
    labelSmoothing: r.attrs.labelSmoothing,
  };
  const target = r.savedTensor(1);
  const weight = r.saved[2] === null ? undefined : r.savedTensor(2);
  const work = r.savedTensor(3);
  const gStrides = r.attrs.reduction === 0 ? [...stridesOf(g), 0] : base.shape.map(() => 0);
  const targetStrides = base.probabilities ? classLast(stridesOf(target)) : [...stridesOf(target), 0];
  const gradient = (phase: NllPhase) => {
    const grad = allocate(op, shape, DType.F32, false, { scoped: true });
    const x = r.op === "CrossEntropy" ? r.savedTensor(0) : grad;
    weightOperand(op, weight, (w) =>
      kernels().nll(
        { ...base, phase },
        operandOf(x, op, classLast(stridesOf(x))),
        operandOf(target, op, targetStrides),
        w,
        operandOf(grad, op, classLast(stridesOf(grad))),
        operandOf(work, op, [1]),
        operandOf(g, op, gStrides),
        computeSettings(),
      ));
    return grad;
  };
  const dx = r.needsGrad(0) ? gradient(NllPhase.InputGrad) : null;
  if (r.inputs.length === 1) return [dx];
  return [dx, r.needsGrad(1) ? gradient(NllPhase.TargetGrad) : null];
}

/**
 * The negative log-likelihood loss of PyTorch's `nll_loss`: `input` holds log-probabilities [N, C] (or [C]
 * unbatched, or [N, C, d1, ...]), `target` class indices (I64 or I32) of the input's shape without the class
 * axis. Each loss is `−weight[t]·input[n, t]`, 0 where `t` is `ignoreIndex`; "mean" divides their sum by the
 * sum of the weights of the targets not ignored (NaN when all are). One native kernel call, which checks
 * every target first: one that is neither `ignoreIndex` nor in [0, C) is a `TensorShapeError` naming it, its
 * position and C. Records NllLoss (saved: target, weight, the kernel's work); the gradient is
 * `−g·weight[t]` (over the divisor for "mean") at each target.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DType, ops, Tensor } from "@zigtensor/zigtensor";
 * using logProbs = Tensor.from([[-1, -2, -3], [-4, -5, -6]]);
 * using targets = Tensor.from([2, 0], [2], { dtype: DType.I64 });
 * using loss = ops.nllLoss(logProbs, targets);
 * assert.equal(loss.item(), 3.5);
 * using weighted = ops.nllLoss(logProbs, targets, { weight: Tensor.from([1, 1, 3]), reduction: "sum" });
 * assert.equal(weighted.item(), 13);
 * ```
 */
export function nllLoss(input: Tensor, target: Tensor, options?: NllLossOptions): Tensor {
  return classLoss("nllLoss", input, target, options);
}

/**
 * Cross-entropy of logits with PyTorch's `cross_entropy`: `input` [N, C] (or [C], or [N, C, d1, ...]), and a
 * `target` of class indices (I64 or I32, the input's shape without the class axis) or of class
 * probabilities (F32, the input's shape). With indices, each loss is
 * `(1 − ε)·w[t]·(lse − x_t) + (ε/C)·Σ_c w[c]·(lse − x_c)` (lse = log Σ exp x over the classes, ε =
 * `labelSmoothing`), 0 for an ignored target, and "mean" divides by the sum of `w[t]` over the targets not
 * ignored; with probabilities y, each is `Σ_c w[c]·q_c·(lse − x_c)` with `q = (1 − ε)·y + ε/C`, and "mean"
 * divides by the number of rows. One fused native kernel call (log-softmax, pick, weight, smoothing and
 * reduction; it keeps each row's log-sum-exp for the backward, not the softmax); the gradient is one more
 * call, `g·(softmax·Σ_c w_c·q_c − w·q)` per row (q the target distribution), and for probability targets
 * also their own gradient `g·(1 − ε)·w·(lse − x)`. Records CrossEntropy (saved: input, target, weight,
 * work).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DType, ops, Tensor } from "@zigtensor/zigtensor";
 * using logits = Tensor.from([[0, 0], [0, 0]]);
 * using targets = Tensor.from([0, 1], [2], { dtype: DType.I32 });
 * using loss = ops.crossEntropy(logits, targets);
 * assert.ok(Math.abs((loss.item() as number) - Math.LN2) < 1e-6);
 * using soft = ops.crossEntropy(logits, Tensor.from([[0.5, 0.5], [1, 0]]), { labelSmoothing: 0.1 });
 * assert.ok(Math.abs((soft.item() as number) - Math.LN2) < 1e-6);
 * ```
 */
export function crossEntropy(input: Tensor, target: Tensor, options?: CrossEntropyOptions): Tensor {
  return classLoss("crossEntropy", input, target, options);
}

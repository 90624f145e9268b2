/**
 * Regression and probability losses with PyTorch's semantics: `mseLoss`, `l1Loss`, `smoothL1Loss`,
 * `binaryCrossEntropy`, `binaryCrossEntropyWithLogits` and `klDiv`. Each is a composition of differentiable
 * element-wise ops and one reduction, so its gradients come from their rules (every tie and kink gets PyTorch's
 * subgradient, noted per loss). Without a record the intermediates are freed by a scope.
 *
 * @module
 */
import { OptionError, TensorShapeError } from "../core/errors.ts";
import { checkBoolean, checkOptions, describe } from "../core/options.ts";
import { broadcastShapes, formatShape } from "../core/shape.ts";
import type { Tensor } from "../tensor.ts";
import { tidy } from "../memory/scope.ts";
import { shouldRecord } from "../autograd/record.ts";
import { abs, add, div, exp, log, maximum, minimum, mul, sub } from "./elementwise.ts";
import { mean, sum } from "./reduce.ts";
import { checkF32 } from "./common.ts";

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
  if (target.rank !== input.rank || target.shape.some((e, i) => e !== input.shape[i])) {
    throw new TensorShapeError(
      op,
      `the target ${formatShape(target.shape)} must have the input's shape ${formatShape(input.shape)}`,
      [input.shape, target.shape],
    );
  }
  for (const [name, w] of Object.entries(weights)) {
    if (w === undefined) continue;
    checkF32(op, w);
    const shape = broadcastShapes(op, input.shape, w.shape);
    if (shape.length !== input.rank || shape.some((e, i) => e !== input.shape[i])) {
      throw new TensorShapeError(
        op,
        `${name} ${formatShape(w.shape)} must broadcast to the input's shape ${formatShape(input.shape)}`,
        [input.shape, w.shape],
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
  if (reduction === "batchmean" && input.rank === 0) {
    throw new TensorShapeError(op, `"batchmean" needs a batch axis, got a scalar input`, [input.shape]);
  }
  const batch = input.rank === 0 ? 1 : input.shape[0];
  return reduce(reduction, shouldRecord(input, target), () => {
    if (logTarget) return mul(exp(target), sub(target, input));
    return sub(mul(target, log(maximum(target, 2 ** -126))), mul(target, input));
  }, batch);
}

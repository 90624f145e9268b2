/**
 * Neural-network operators: 2-D max pooling and the classification losses.
 *
 * @module
 */
import { DTypeError, TensorShapeError } from "../errors.ts";
import { dtypeInfo } from "../dtype.ts";
import { computeSettings, kernels } from "../context.ts";
import { formatShape } from "../shape.ts";
import { allocate, type Tensor } from "../tensor.ts";
import { record, shouldRecord } from "../autograd/record.ts";
import { checkF32, newOutput } from "./elementwise.ts";
import { logSoftmax } from "./reduce.ts";

/** Pooling options: a number or [h, w] for each. */
export interface Pool2dOptions {
  readonly kernel: number | readonly [number, number];
  /** @default kernel */
  readonly stride?: number | readonly [number, number];
  /** @default 0 */
  readonly padding?: number | readonly [number, number];
}

function pair(
  op: string,
  name: string,
  value: number | readonly [number, number],
  min: number,
): [number, number] {
  const [h, w] = typeof value === "number" ? [value, value] : value;
  for (const v of [h, w]) {
    if (!Number.isInteger(v) || v < min) {
      throw new TensorShapeError(
        op,
        `${name} must be an integer ≥ ${min} or a pair of them, got ${JSON.stringify(value)}`,
      );
    }
  }
  return [h, w];
}

/**
 * 2-D max pooling over an NCHW F32 tensor (spec 000 §9): the window starts at `o·stride − pad`, only in-bounds
 * positions count, the first element wins ties, a NaN wins (the first NaN); output extent
 * `floor((size + 2·pad − kernel)/stride) + 1`, with `pad < kernel`. Winner indices are computed only while
 * recording (saved as an owned Int32 slot).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([1, 5, 2, 4, 3, 0, 9, 8, 7, 6, 1, 2, 3, 4, 5, 6], [1, 1, 4, 4]);
 * using y = ops.maxPool2d(x, { kernel: 2 });
 * assert.ok(y.toArray().join() === "5,9,7,6");
 * ```
 */
export function maxPool2d(x: Tensor, options: Pool2dOptions): Tensor {
  const op = "maxPool2d";
  checkF32(op, x);
  if (x.rank !== 4) {
    throw new TensorShapeError(op, `maxPool2d takes an NCHW tensor, got shape ${formatShape(x.shape)}`, [
      x.shape,
    ]);
  }
  const kernel = pair(op, "kernel", options.kernel, 1);
  const stride = pair(op, "stride", options.stride ?? kernel, 1);
  const padding = pair(op, "padding", options.padding ?? 0, 0);
  const [n, c, h, w] = x.shape;
  const out: number[] = [];
  for (const [axis, size] of [[0, h], [1, w]] as const) {
    if (padding[axis] >= kernel[axis]) {
      throw new TensorShapeError(
        op,
        `padding ${padding[axis]} must be smaller than the kernel ${kernel[axis]}`,
        [x.shape],
      );
    }
    const extent = Math.floor((size + 2 * padding[axis] - kernel[axis]) / stride[axis]) + 1;
    if (extent < 1) {
      throw new TensorShapeError(
        op,
        `the input ${formatShape(x.shape)} is smaller than the kernel ${formatShape(kernel)} with padding ${
          formatShape(padding)
        }`,
        [x.shape],
      );
    }
    out.push(extent);
  }
  const y = newOutput(op, [n, c, out[0], out[1]]);
  const recording = shouldRecord(x);
  const indices = recording ? allocate(op, y.shape, 6, false, { scoped: true }) : null;
  kernels().maxPool2d(
    { input: [n, c, h, w], kernel, stride, padding },
    y.operand(op),
    x.operand(op),
    indices === null ? null : indices.operand(op),
    computeSettings(),
  );
  if (indices === null) return y;
  return record(y, "MaxPool2d", [x], {
    saved: [indices],
    ints: [...kernel, ...stride, ...padding],
    owned: [indices],
  });
}

/** The class of each row as integers, checked against the class count. */
function targetIndices(op: string, targets: Tensor, rows: number, classes: number): number[] {
  const info = dtypeInfo(targets.dtype);
  if (info.isFloat || info.name === "Bool") {
    throw new DTypeError(op, `targets must be an integer tensor of class indices, got ${info.name}`);
  }
  if (targets.rank !== 1 || targets.shape[0] !== rows) {
    throw new TensorShapeError(op, `targets must have shape [${rows}], got ${formatShape(targets.shape)}`, [
      targets.shape,
    ]);
  }
  const values = Array.from(targets.toArray() as ArrayLike<number | bigint>, Number);
  values.forEach((t, i) => {
    if (!Number.isInteger(t) || t < 0 || t >= classes) {
      throw new TensorShapeError(op, `target ${t} at row ${i} is not a class index in 0 to ${classes - 1}`, [
        targets.shape,
      ]);
    }
  });
  return values;
}

/**
 * The negative log-likelihood: −mean over rows of `logProbs[i, targets[i]]`, for [N, C] log-probabilities and
 * [N] integer targets. Saves the targets; the gradient is −1/N at each row's target.
 */
export function nllLoss(logProbs: Tensor, targets: Tensor): Tensor {
  const op = "nllLoss";
  checkF32(op, logProbs);
  if (logProbs.rank !== 2) {
    throw new TensorShapeError(op, `log-probabilities must be [N, C], got ${formatShape(logProbs.shape)}`, [
      logProbs.shape,
    ]);
  }
  const [rows, classes] = logProbs.shape;
  const picks = targetIndices(op, targets, rows, classes);
  let total = 0;
  picks.forEach((t, i) => (total += logProbs.get(i, t) as number));
  const loss = newOutput(op, []);
  (loss.data() as Float32Array)[0] = rows === 0 ? NaN : -total / rows;
  if (!shouldRecord(logProbs)) return loss;
  return record(loss, "NllLoss", [logProbs], { saved: [targets], ints: [-1] });
}

/**
 * Cross-entropy of [N, C] logits against [N] integer class targets: `nllLoss(logSoftmax(logits), targets)`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DType, ops, Tensor } from "@zigtensor/zigtensor";
 * using logits = Tensor.from([[0, 0], [0, 0]]);
 * using targets = Tensor.from([0, 1], [2], DType.I32);
 * using loss = ops.crossEntropy(logits, targets);
 * assert.ok(Math.abs((loss.item() as number) - Math.LN2) < 1e-6);
 * ```
 */
export function crossEntropy(logits: Tensor, targets: Tensor): Tensor {
  return nllLoss(logSoftmax(logits, -1), targets);
}

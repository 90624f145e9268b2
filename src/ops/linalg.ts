/**
 * The matrix product and the layers built on it. `matmul` follows NumPy: 1-D operands gain an axis that the
 * result drops again, batch axes broadcast; transposed and strided operands go to the kernel as strides (the
 * packing handles them, nothing is copied first).
 *
 * @module
 */
import { TensorShapeError } from "../core/errors.ts";
import { computeSettings, kernels } from "../context.ts";
import { broadcastShapes, formatShape } from "../core/shape.ts";
import type { Tensor } from "../tensor.ts";
import { expandView } from "../core/views.ts";
import { record, shouldRecord } from "../autograd/record.ts";
import { add } from "./elementwise.ts";
import { checkF32, newOutput } from "./common.ts";
import { squeeze, transpose, unsqueeze } from "./views.ts";
import { offsetOf, operandOf, rankOf, requiresGradOf, shapeOf, stridesOf } from "../tensor.ts";

/** The strides of `t` ([..., R, C]) read at the batch shape `batch`. */
function batchStrides(t: Tensor, batch: readonly number[], op: string): number[] {
  const leading = { shape: shapeOf(t).slice(0, -2), strides: stridesOf(t).slice(0, -2), offset: offsetOf(t) };
  return [...expandView(leading, batch, op).strides, ...stridesOf(t).slice(-2)];
}

/** a [..., M, K] @ b [..., K, N] for rank ≥ 2 operands. */
function matmul2(a: Tensor, b: Tensor): Tensor {
  const op = "matmul";
  const [m, k] = shapeOf(a).slice(-2);
  const [k2, n] = shapeOf(b).slice(-2);
  if (k !== k2) {
    throw new TensorShapeError(
      op,
      `cannot multiply ${formatShape(shapeOf(a))} by ${
        formatShape(shapeOf(b))
      }: the inner dimensions are ${k} and ${k2}`,
      [shapeOf(a), shapeOf(b)],
    );
  }
  const batch = broadcastShapes(op, shapeOf(a).slice(0, -2), shapeOf(b).slice(0, -2));
  const shape = [...batch, m, n];
  const out = newOutput(op, shape);
  kernels().matMul(
    shape,
    k,
    operandOf(out, op),
    operandOf(a, op, batchStrides(a, batch, op)),
    operandOf(b, op, batchStrides(b, batch, op)),
    computeSettings(),
  );
  return out;
}

/**
 * The matrix product, NumPy style: batched, broadcasting batch axes; 1-D operands are vectors, and two vectors
 * give their rank-0 dot product (0 when both are empty). Records MatMul (saved slot 0 = a when b needs a
 * gradient, slot 1 = b when a needs one).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using a = Tensor.from([[1, 2], [3, 4]]);
 * using b = Tensor.from([[5], [6]]);
 * using c = ops.matmul(a, b);
 * using dot = ops.matmul(Tensor.from([1, 2, 3]), Tensor.from([4, 5, 6]));
 * assert.ok(c.toArray().join() === "17,39" && dot.rank === 0 && dot.item() === 32);
 * ```
 */
export function matmul(a: Tensor, b: Tensor): Tensor {
  checkF32("matmul", a, b);
  if (rankOf(a) === 0 || rankOf(b) === 0) {
    throw new TensorShapeError(
      "matmul",
      `matmul needs operands of rank 1 or more, got ${formatShape(shapeOf(a))} and ${
        formatShape(shapeOf(b))
      }`,
      [shapeOf(a), shapeOf(b)],
    );
  }
  if (rankOf(a) === 1 || rankOf(b) === 1) {
    // A vector operand gains an axis for the product and loses it again, through recorded views.
    const a2 = rankOf(a) === 1 ? unsqueeze(a, 0) : a;
    const b2 = rankOf(b) === 1 ? unsqueeze(b, -1) : b;
    const product = matmul(a2, b2);
    const dropped = rankOf(b) === 1 ? squeeze(product, -1) : product;
    // Two vectors leave [1] here, whose one axis goes too: the rank-0 dot product (0 for empty vectors).
    return rankOf(a) === 1 ? squeeze(dropped, rankOf(b) === 1 ? -1 : -2) : dropped;
  }
  const out = matmul2(a, b);
  if (!shouldRecord(a, b)) return out;
  return record(out, "MatMul", [a, b], {
    saved: [requiresGradOf(b) ? a : null, requiresGradOf(a) ? b : null],
  });
}

/**
 * A fully connected layer, PyTorch style: x @ weightᵀ + bias, with `weight` of shape [out, in].
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[1, 2]]);
 * using w = Tensor.from([[1, 0], [0, 1], [1, 1]]);
 * using b = Tensor.from([0, 0, 10]);
 * using y = ops.linear(x, w, b);
 * assert.ok(y.toArray().join() === "1,2,13");
 * ```
 */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor): Tensor {
  checkF32("linear", x, weight);
  if (rankOf(weight) !== 2) {
    throw new TensorShapeError("linear", `weight must be [out, in], got ${formatShape(shapeOf(weight))}`, [
      shapeOf(x),
      shapeOf(weight),
    ]);
  }
  const product = matmul(x, transpose(weight, 0, 1));
  if (bias === undefined) return product;
  if (rankOf(bias) !== 1 || shapeOf(bias)[0] !== shapeOf(weight)[0]) {
    throw new TensorShapeError(
      "linear",
      `bias must be [${shapeOf(weight)[0]}], got ${formatShape(shapeOf(bias))}`,
      [shapeOf(weight), shapeOf(bias)],
    );
  }
  return add(product, bias);
}

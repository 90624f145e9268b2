/**
 * Quantized tensors: GGML's Q4_0 and Q8_0 blocks of 32 elements along the last axis.
 *
 * @module
 */
import { DType, dtypeInfo } from "../core/dtype.ts";
import { DTypeError, TensorShapeError } from "../core/errors.ts";
import { computeSettings, kernels } from "../context.ts";
import { formatShape } from "../core/shape.ts";
import {
  allocate,
  blockSizeOf,
  dtypeOf,
  isContiguousOf,
  offsetOf,
  operandOf,
  rankOf,
  shapeOf,
  sizeOf,
  stridesOf,
  type Tensor,
} from "../tensor.ts";
import { cast, contiguous } from "./copy.ts";

/**
 * Quantizes a float tensor into Q4_0 or Q8_0 blocks (the last axis must be a multiple of 32). The result is
 * scoped like an operation's output and is not differentiable.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dequantize, DType, quantize, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from(Float32Array.from({ length: 32 }, (_, i) => i - 16), [1, 32]);
 * using q = quantize(x, DType.Q8_0);
 * assert.equal(q.data().length, 34);
 * using back = dequantize(q);
 * assert.ok(Math.abs((back.get(0, 3) as number) + 13) < 0.1);
 * ```
 */
export function quantize(t: Tensor, format: typeof DType.Q4_0 | typeof DType.Q8_0): Tensor {
  const op = "quantize";
  const target = dtypeInfo(format, op);
  const source = dtypeInfo(dtypeOf(t), op);
  if (!target.isQuantized) {
    throw new DTypeError(op, `the format must be DType.Q4_0 or DType.Q8_0, got ${target.name}`);
  }
  if (!source.isFloat || source.isQuantized || blockSizeOf(t) > 0) {
    throw new DTypeError(
      op,
      `quantize takes a plain float tensor, got ${source.name}${blockSizeOf(t) ? " (blocked)" : ""}`,
    );
  }
  if (rankOf(t) === 0 || shapeOf(t)[rankOf(t) - 1] % 32 !== 0) {
    throw new TensorShapeError(
      op,
      `the last axis must be a multiple of 32 to quantize, got ${formatShape(shapeOf(t))}`,
      [shapeOf(t)],
    );
  }
  const values = dtypeOf(t) === DType.F32 ? contiguous(t) : cast(t, DType.F32);
  const out = allocate(op, shapeOf(t), format, false, { scoped: true });
  kernels().quantize(format, sizeOf(t) / 32, operandOf(out, op), operandOf(values, op), computeSettings());
  if (values !== t) values.dispose();
  return out;
}

/** Dequantizes a Q4_0 or Q8_0 tensor into F32 (its view must be contiguous). */
export function dequantize(q: Tensor): Tensor {
  const op = "dequantize";
  const info = dtypeInfo(dtypeOf(q), op);
  if (!info.isQuantized) throw new DTypeError(op, `dequantize takes a Q4_0 or Q8_0 tensor, got ${info.name}`);
  if (!isContiguousOf(q)) {
    throw new TensorShapeError(
      op,
      `dequantize needs a contiguous view, got strides ${formatShape(stridesOf(q))}`,
      [shapeOf(q)],
    );
  }
  const out = allocate(op, shapeOf(q), DType.F32, false, { scoped: true });
  kernels().dequantize(
    dtypeOf(q),
    sizeOf(q) / 32,
    operandOf(out, op),
    operandOf(q, op, stridesOf(q), offsetOf(q) / 32),
    computeSettings(),
  );
  return out;
}

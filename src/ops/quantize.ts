/**
 * Quantized tensors: GGML's Q4_0 and Q8_0 blocks of 32 elements along the last axis.
 *
 * @module
 */
import { DType, dtypeInfo } from "../core/dtype.ts";
import { DTypeError, TensorShapeError } from "../core/errors.ts";
import { computeSettings, kernels } from "../context.ts";
import { formatShape } from "../core/shape.ts";
import { allocate, shapeOf, stridesOf, type Tensor } from "../tensor.ts";
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
  const source = dtypeInfo(t.dtype, op);
  if (!target.isQuantized) {
    throw new DTypeError(op, `the format must be DType.Q4_0 or DType.Q8_0, got ${target.name}`);
  }
  if (!source.isFloat || source.isQuantized || t.blockSize > 0) {
    throw new DTypeError(
      op,
      `quantize takes a plain float tensor, got ${source.name}${t.blockSize ? " (blocked)" : ""}`,
    );
  }
  if (t.rank === 0 || shapeOf(t)[t.rank - 1] % 32 !== 0) {
    throw new TensorShapeError(
      op,
      `the last axis must be a multiple of 32 to quantize, got ${formatShape(shapeOf(t))}`,
      [shapeOf(t)],
    );
  }
  const values = t.dtype === DType.F32 ? contiguous(t) : cast(t, DType.F32);
  const out = allocate(op, shapeOf(t), format, false, { scoped: true });
  kernels().quantize(format, t.size / 32, out.operand(op), values.operand(op), computeSettings());
  if (values !== t) values.dispose();
  return out;
}

/** Dequantizes a Q4_0 or Q8_0 tensor into F32 (its view must be contiguous). */
export function dequantize(q: Tensor): Tensor {
  const op = "dequantize";
  const info = dtypeInfo(q.dtype, op);
  if (!info.isQuantized) throw new DTypeError(op, `dequantize takes a Q4_0 or Q8_0 tensor, got ${info.name}`);
  if (!q.isContiguous) {
    throw new TensorShapeError(
      op,
      `dequantize needs a contiguous view, got strides ${formatShape(stridesOf(q))}`,
      [shapeOf(q)],
    );
  }
  const out = allocate(op, shapeOf(q), DType.F32, false, { scoped: true });
  kernels().dequantize(
    q.dtype,
    q.size / 32,
    out.operand(op),
    q.operand(op, stridesOf(q), q.offset / 32),
    computeSettings(),
  );
  return out;
}

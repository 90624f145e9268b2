/**
 * The kernels of integer and Bool tensors (I8 I16 I32 I64 U8 U16 U32 U64, Bool): the binary ops add, sub and
 * mul (integers only), the comparisons and the logical ops, and the reductions sum, max, min, argmax and
 * argmin. `nativeIntegerKernels` runs `zt_binary_int` and `zt_reduce_int` (`zig/kernels/integer.zig`, the
 * f32 binary kernel instantiated over the element type); `referenceIntegerKernels` is plain TypeScript and
 * defines the bits, which are exact, so the native kernels give them on every ISA, mode and thread count.
 *
 * Meaning: add, sub and mul wrap around modulo 2^bits (two's complement, as PyTorch); a Bool element reads
 * any nonzero byte as true (1), so Bool compares as 0 < 1; the logical ops treat every nonzero value as true.
 * Sums add in i64 with wrap-around (an integer or Bool sum is I64, PyTorch's promotion; a U64 sum is the
 * bits of its sum modulo 2^64); max and min keep the element type (an empty Bool max is false and min true,
 * the identities of `any` and `all`); argmax and argmin give the row-major position of the first maximum or
 * minimum within the reduced axes.
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import { DType } from "../core/dtype.ts";
import { forEachOffset } from "./copy.ts";
import { BinaryOp, type ComputeSettings, type KernelOperand, MODE_CODE, ReduceOp } from "./types.ts";

/** The integer and Bool kernels of a kernel set. The callers validated operands, op and dtype. */
export interface IntegerKernels {
  /**
   * out = a (op) b over `shape`, both operands of `dtype` (an integer dtype, or Bool for the comparisons and
   * logical ops); `out` has `dtype` for add, sub and mul, Bool otherwise.
   */
  binaryInt(
    op: BinaryOp,
    dtype: DType,
    shape: readonly number[],
    out: KernelOperand,
    a: KernelOperand,
    b: KernelOperand,
    settings: ComputeSettings,
  ): void;

  /**
   * Reduces the last `reducedAxes` axes of `shape` (laid out as `TensorKernels.reduce`'s) of `a`, of `dtype`:
   * sum, argmax and argmin write I64, max and min `dtype`.
   */
  reduceInt(
    op: ReduceOp,
    dtype: DType,
    shape: readonly number[],
    reducedAxes: number,
    out: KernelOperand,
    a: KernelOperand,
    settings: ComputeSettings,
  ): void;
}

/**
 * The native integer kernels.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeIntegerKernels } from "./integer.ts";
 * import { BinaryOp } from "./types.ts";
 * import { DType } from "../core/dtype.ts";
 * import { ffi } from "../native/runtime.ts";
 * const x = new Int8Array([100, -3]);
 * const out = new Int8Array(2);
 * const view = (data: Int8Array) => ({ pointer: ffi.pointerOf(data), data, offset: 0, strides: [1] });
 * nativeIntegerKernels.binaryInt(BinaryOp.Add, DType.I8, [2], view(out), view(x), view(x), { mode: "exact", threads: 1 });
 * assert.ok(out.join() === "-56,-6");
 * ```
 */
export const nativeIntegerKernels: IntegerKernels = {
  binaryInt(op, dtype, shape, out, a, b, settings) {
    args.shape(shape)
      .operand(0, out.offset, out.strides)
      .operand(1, a.offset, a.strides)
      .operand(2, b.offset, b.strides)
      .op(op, MODE_CODE[settings.mode], settings.threads)
      .int(0, dtype);
    native.zt_binary_int(args.pointer, out.pointer, a.pointer, b.pointer);
  },

  reduceInt(op, dtype, shape, reducedAxes, out, a, settings) {
    args.shape(shape)
      .operand(0, out.offset, out.strides)
      .operand(1, a.offset, a.strides)
      .op(op, MODE_CODE[settings.mode], settings.threads)
      .int(0, reducedAxes)
      .int(1, dtype);
    native.zt_reduce_int(args.pointer, out.pointer, a.pointer);
  },
};

/** An element as read by the reference: a number, or a bigint for I64 and U64. */
type Element = number | bigint;

/** Integer multiplication that the store wraps exactly: `Math.imul` for 32-bit values, whose products exceed 2^53. */
function mulFor(dtype: DType): (x: Element, y: Element) => Element {
  if (dtype === DType.I32 || dtype === DType.U32) return (x, y) => Math.imul(x as number, y as number);
  return (x, y) => (x as number) * (y as number);
}

/** The reference function of `op` on elements of `dtype`; the typed-array store wraps add, sub and mul. */
function binaryFunction(op: BinaryOp, dtype: DType): (x: Element, y: Element) => Element {
  const bigint = dtype === DType.I64 || dtype === DType.U64;
  switch (op) {
    case BinaryOp.Add:
      return (x, y) => (x as number) + (y as number);
    case BinaryOp.Sub:
      return (x, y) => (x as number) - (y as number);
    case BinaryOp.Mul:
      return bigint ? (x, y) => (x as bigint) * (y as bigint) : mulFor(dtype);
    case BinaryOp.Eq:
      return (x, y) => x === y ? 1 : 0;
    case BinaryOp.Ne:
      return (x, y) => x !== y ? 1 : 0;
    case BinaryOp.Lt:
      return (x, y) => x < y ? 1 : 0;
    case BinaryOp.Le:
      return (x, y) => x <= y ? 1 : 0;
    case BinaryOp.Gt:
      return (x, y) => x > y ? 1 : 0;
    case BinaryOp.Ge:
      return (x, y) => x >= y ? 1 : 0;
    case BinaryOp.LogicalAnd:
      return (x, y) => x && y ? 1 : 0;
    case BinaryOp.LogicalOr:
      return (x, y) => x || y ? 1 : 0;
    case BinaryOp.LogicalXor:
      return (x, y) => !x !== !y ? 1 : 0;
    default:
      throw new Error(`binaryInt: op ${op} has no integer kernel`);
  }
}

/** Reads element `i` of `data`, a Bool as 0/1. */
function reader(dtype: DType): (data: ArrayLike<Element>, i: number) => Element {
  return dtype === DType.Bool ? (data, i) => data[i] ? 1 : 0 : (data, i) => data[i];
}

/** The smallest and largest values of `dtype` (0 and 1 for Bool). */
function extremes(dtype: DType, data: ArrayLike<Element>): [Element, Element] {
  if (dtype === DType.Bool) return [0, 1];
  if (dtype === DType.I64) return [-(2n ** 63n), 2n ** 63n - 1n];
  if (dtype === DType.U64) return [0n, 2n ** 64n - 1n];
  const bits = 8 * (data as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
  const signed = dtype === DType.I8 || dtype === DType.I16 || dtype === DType.I32;
  return signed ? [-(2 ** (bits - 1)), 2 ** (bits - 1) - 1] : [0, 2 ** bits - 1];
}

/**
 * One output of a reduction over the reduced elements at `base`: an i64 wrapped sum (as a bigint), the
 * maximum or minimum, or the position of the first maximum or minimum.
 */
function reduceOne(
  op: ReduceOp,
  dtype: DType,
  x: ArrayLike<Element>,
  base: number,
  reduced: readonly number[],
  strides: readonly number[],
): Element {
  const read = reader(dtype);
  const [lowest, highest] = extremes(dtype, x);
  const isMax = op === ReduceOp.Max || op === ReduceOp.ArgMax;
  let sum = 0n;
  let best = isMax ? lowest : highest;
  let index = 0;
  let position = 0;
  forEachOffset(reduced, [{ offset: base, strides }], ([j]) => {
    const v = read(x, j);
    if (op === ReduceOp.Sum) sum += BigInt(v);
    else if (isMax ? v > best : v < best) {
      best = v;
      index = position;
    }
    position++;
  });
  if (op === ReduceOp.Sum) return BigInt.asIntN(64, sum);
  return op === ReduceOp.Max || op === ReduceOp.Min ? best : BigInt(index);
}

/**
 * The reference integer kernels: scalar loops in row-major order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceIntegerKernels } from "./integer.ts";
 * import { ReduceOp } from "./types.ts";
 * import { DType } from "../core/dtype.ts";
 * import type { NativePointer } from "../native/symbols.ts";
 * const pointer = null as unknown as NativePointer;
 * const out = new BigInt64Array(1);
 * const a = { pointer, data: new Uint8Array([200, 100]), offset: 0, strides: [1] };
 * referenceIntegerKernels.reduceInt(ReduceOp.Sum, DType.U8, [2], 1, { pointer, data: out, offset: 0, strides: [] }, a, {
 *   mode: "exact",
 *   threads: 1,
 * });
 * assert.ok(out[0] === 300n);
 * ```
 */
export const referenceIntegerKernels: IntegerKernels = {
  binaryInt(op, dtype, shape, out, a, b) {
    const f = binaryFunction(op, dtype);
    const read = reader(dtype);
    const o = out.data as unknown as Element[];
    const x = a.data as ArrayLike<Element>;
    const y = b.data as ArrayLike<Element>;
    forEachOffset(shape, [out, a, b], ([i, j, k]) => {
      o[i] = f(read(x, j), read(y, k));
    });
  },

  reduceInt(op, dtype, shape, reducedAxes, out, a) {
    const kept = shape.length - reducedAxes;
    const reduced = shape.slice(kept);
    const strides = a.strides.slice(kept);
    const o = out.data as unknown as Element[];
    const x = a.data as ArrayLike<Element>;
    forEachOffset(
      shape.slice(0, kept),
      [out, { offset: a.offset, strides: a.strides.slice(0, kept) }],
      ([i, base]) => {
        o[i] = reduceOne(op, dtype, x, base, reduced, strides);
      },
    );
  },
};

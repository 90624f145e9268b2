/**
 * The helpers every op shares: input checks (`checkTensor`, `checkF32`, `checkParameter`), option pairs
 * (`pair`, `windowStride`, `checkPadded`), outputs (`newOutput`), broadcast strides, the one-call element-wise
 * kernels (`binaryKernel`, `unaryKernel`) and the one in-place accumulation (`addInto`).
 *
 * @module
 */
import { DTypeError, OptionError, StaleTensorError, TensorShapeError } from "../core/errors.ts";
import { checkInteger, describe, INT32_MAX } from "../core/options.ts";
import { DType, dtypeInfo } from "../core/dtype.ts";
import { computeSettings, computeSnapshot, kernels, kernelsOf } from "../context.ts";
import { broadcastShapes, formatShape } from "../core/shape.ts";
import {
  allocateOutput,
  blockSizeOf,
  dtypeOf,
  isReleasedOf,
  isTensor,
  operandOf,
  rankOf,
  shapeOf,
  storageOf,
  stridesOf,
  type Tensor,
} from "../tensor.ts";
import { expandView } from "../core/views.ts";
import { BinaryOp, type UnaryOp } from "../kernels/types.ts";
import { binaryWritesBool, DTYPE_RULES, type DTypeClass, type OpName, OPS } from "../core/op_table.ts";
import { bumpStorageVersion } from "../memory/storage.ts";

/**
 * `value` checked to be a live tensor: an `OptionError` for anything else, a `StaleTensorError` when its
 * storage was released (its view is checked again at the native boundary, `Tensor.operand`). Ops check their inputs with it before allocating, so a refused call leaves nothing
 * behind.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Tensor } from "@zigtensor/zigtensor";
 * import { checkTensor } from "./common.ts";
 * const t = Tensor.zeros([2]);
 * assert.equal(checkTensor("clone", "the input", t), t);
 * t.dispose();
 * assert.throws(() => checkTensor("clone", "the input", t));
 * ```
 */
export function checkTensor(op: string, name: string, value: unknown): Tensor {
  if (!isTensor(value)) {
    throw new OptionError(op, `${name} must be a Tensor, got ${describe(value)}`);
  }
  if (isReleasedOf(value)) throw new StaleTensorError(op);
  return value;
}

/** Eager arithmetic takes F32 tensors (integers are for indices and labels). */
export function checkF32(op: string, ...tensors: readonly Tensor[]): void {
  for (let i = 0; i < tensors.length; i++) checkF32Tensor(op, tensors[i]);
}

/**
 * `checkF32` of one operand, in a few comparisons (every element-wise op passes here); `notF32` throws the
 * error that names what is wrong.
 */
export function checkF32Tensor(op: string, t: Tensor): void {
  if (!isTensor(t) || isReleasedOf(t) || dtypeOf(t) !== DType.F32 || blockSizeOf(t) > 0) {
    notF32(op, t);
  }
}

/** Throws the error for an operand `checkF32Tensor` refused: not a tensor, released, or not plain F32. */
function notF32(op: string, t: unknown): never {
  checkTensor(op, "an operand", t);
  const tensor = t as Tensor;
  throw new DTypeError(
    op,
    `${op} computes on plain F32 tensors, got ${
      blockSizeOf(tensor) > 0 ? `a blocked NchwC(${blockSizeOf(tensor)})` : dtypeInfo(dtypeOf(tensor)).name
    } tensor; cast() it first`,
  );
}

/** The class of `dtype` in the op table's dtype rules: F32, an integer dtype, Bool, or none (other floats). */
function dtypeClass(dtype: DType): DTypeClass | null {
  switch (dtype) {
    case DType.F32:
      return "f32";
    case DType.Bool:
      return "bool";
    case DType.U8:
    case DType.I8:
    case DType.U16:
    case DType.I16:
    case DType.I32:
    case DType.I64:
    case DType.U32:
    case DType.U64:
      return "int";
    default:
      return null;
  }
}

const CLASS_NAMES: Record<DTypeClass, string> = {
  f32: "F32",
  int: "integer (I8 I16 I32 I64 U8 U16 U32 U64)",
  bool: "Bool",
};

/** What each op's dtype rule takes, by op name (a `Map`: ops look it up on every call, see `kernelCode`). */
const TAKES: ReadonlyMap<string, readonly DTypeClass[] | "any"> = new Map(
  Object.entries(OPS).map(([op, def]) => [op, DTYPE_RULES[def.dtypes].takes]),
);

/** Throws unless `t` is plain and of a dtype class in `takes`. */
function checkTaken(op: string, takes: readonly DTypeClass[] | "any", t: Tensor): void {
  const kind = dtypeClass(dtypeOf(t));
  if (blockSizeOf(t) === 0 && (takes === "any" || (kind !== null && takes.includes(kind)))) return;
  const names = takes === "any"
    ? "plain"
    : takes.map((c) => CLASS_NAMES[c]).join(", ").replace(/, ([^,]*)$/, " or $1");
  const got = blockSizeOf(t) > 0 ? `a blocked NchwC(${blockSizeOf(t)})` : article(dtypeInfo(dtypeOf(t)).name);
  throw new DTypeError(op, `${op} takes ${names} tensors, got ${got} tensor; cast() it first`);
}

/**
 * Checks `x` (and `y`, when given) against `op`'s dtype rule in the op table (`OPS[op].dtypes`): live, plain
 * (not blocked), of one dtype that the rule takes. Returns that dtype; a `DTypeError` names the op, the dtype
 * and what the rule takes otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Tensor } from "@zigtensor/zigtensor";
 * import { checkDTypes } from "./common.ts";
 * using labels = Tensor.from([1, 2], [2], { dtype: "int32" });
 * assert.equal(checkDTypes("sum", labels), labels.dtype);
 * assert.throws(() => checkDTypes("mean", labels), /mean takes F32 tensors, got an I32 tensor/);
 * ```
 */
export function checkDTypes(op: OpName, x: Tensor, y?: Tensor): DType {
  checkTensor(op, "an operand", x);
  const takes = TAKES.get(op)!;
  checkTaken(op, takes, x);
  if (y === undefined) return dtypeOf(x);
  checkTensor(op, "an operand", y);
  checkTaken(op, takes, y);
  if (dtypeOf(y) !== dtypeOf(x)) {
    throw new DTypeError(
      op,
      `${op} takes operands of one dtype, got ${dtypeInfo(dtypeOf(x)).name} and ${
        dtypeInfo(dtypeOf(y)).name
      } (zigtensor does not promote); cast() one of them`,
    );
  }
  return dtypeOf(x);
}

/** Whether `value` is a live, plain F32 tensor: the element-wise ops' fast path, decided in one test. */
export function isPlainF32(value: unknown): value is Tensor {
  return isTensor(value) && dtypeOf(value) === DType.F32 && blockSizeOf(value) === 0 &&
    !isReleasedOf(value);
}

/** "an I32", "a U8", "a Bool". */
function article(name: string): string {
  return `${/^[IF]/.test(name) ? "an" : "a"} ${name}`;
}

/** An optional F32 parameter (a weight, a bias, a state) must have exactly `shape` when given. */
export function checkParameter(
  op: string,
  name: string,
  t: Tensor | undefined,
  shape: readonly number[],
): void {
  if (t === undefined) return;
  checkF32(op, t);
  if (rankOf(t) !== shape.length || shapeOf(t).some((e, i) => e !== shape[i])) {
    throw new TensorShapeError(
      op,
      `${name} must have shape ${formatShape(shape)}, got ${formatShape(shapeOf(t))}`,
      [
        shape,
        shapeOf(t),
      ],
    );
  }
}

/** Strides that read `t` at the broadcast `shape` (stride 0 along stretched axes). */
export function broadcastStrides(t: Tensor, shape: readonly number[], op: string): readonly number[] {
  const own = shapeOf(t);
  return own === shape || sameExtents(own, shape) ? stridesOf(t) : expandView(t, shape, op).strides;
}

/** Whether two shapes have the same extents. */
function sameExtents(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * target += source in place, `source` broadcast to `target`'s shape; counts as a write to `target`. The one
 * in-place accumulation (convolution's fold, its bias, the engine's leaf gradients).
 */
export function addInto(op: string, target: Tensor, source: Tensor): void {
  const settings = computeSettings();
  const out = operandOf(target, op);
  kernels().binary(
    BinaryOp.Add,
    shapeOf(target),
    out,
    out,
    operandOf(source, op, broadcastStrides(source, shapeOf(target), op)),
    settings,
  );
  bumpStorageVersion(storageOf(target));
}

/** Allocates an F32 output of `shape` in the current scope. */
export function newOutput(
  op: string,
  shape: readonly number[],
  dtype: typeof DType.F32 | typeof DType.Bool = DType.F32,
): Tensor {
  return allocateOutput(op, shape, dtype);
}

/**
 * out = a (kind) b with broadcasting; the output is Bool for comparisons. The inputs' operands are made (and
 * their views checked) before the output is allocated, so a refused call leaves nothing behind.
 */
export function binaryKernel(op: string, kind: BinaryOp, a: Tensor, b: Tensor): Tensor {
  const aShape = shapeOf(a);
  const bShape = shapeOf(b);
  const shape = aShape === bShape || sameExtents(aShape, bShape)
    ? aShape
    : broadcastShapes(op, aShape, bShape);
  const aOperand = operandOf(a, op, broadcastStrides(a, shape, op));
  const bOperand = operandOf(b, op, broadcastStrides(b, shape, op));
  const out = newOutput(op, shape, binaryWritesBool(kind) ? DType.Bool : DType.F32);
  const compute = computeSnapshot();
  kernelsOf(compute).binary(kind, shapeOf(out), operandOf(out, op), aOperand, bOperand, compute);
  return out;
}

/** out = kind(a); `a`'s view is checked before the output is allocated. */
export function unaryKernel(op: string, kind: UnaryOp, a: Tensor): Tensor {
  const operand = operandOf(a, op);
  const out = newOutput(op, shapeOf(a));
  const compute = computeSnapshot();
  kernelsOf(compute).unary(kind, shapeOf(out), operandOf(out, op), operand, compute);
  return out;
}

/**
 * A number or `[h, w]` as a checked pair of integers from `min` to `max` (an `OptionError` for anything else,
 * a `TensorShapeError` naming the limit for an integer out of range).
 */
export function pair(
  op: string,
  name: string,
  value: number | readonly [number, number] | undefined,
  min: number,
  max: number = INT32_MAX,
): [number, number] {
  if (typeof value === "number") {
    const v = checkInteger(op, name, value, min, max);
    return [v, v];
  }
  if (!Array.isArray(value) || value.length !== 2) {
    throw new OptionError(
      op,
      `${name} must be an integer ≥ ${min} or a pair [h, w] of them, got ${describe(value)}`,
    );
  }
  return [checkInteger(op, name, value[0], min, max), checkInteger(op, name, value[1], min, max)];
}

/**
 * A window's stride, clamped: any stride at least the padded extent gives one output position, so a stride of
 * 2^31 or more (which PyTorch accepts) is computed as one of 2^31 − 1, never refused.
 */
export function windowStride(
  op: string,
  value: number | readonly [number, number] | undefined,
): [number, number] {
  const [h, w] = pair(op, "stride", value, 1, Number.MAX_SAFE_INTEGER);
  return [Math.min(h, INT32_MAX), Math.min(w, INT32_MAX)];
}

/** Throws unless an extent padded on both sides stays within what the native side indexes (2^31 − 1). */
export function checkPadded(op: string, shape: readonly number[], size: number, padding: number): number {
  const padded = size + 2 * padding;
  if (padded > INT32_MAX) {
    throw new TensorShapeError(
      op,
      `padding ${padding} makes an extent of ${padded}; a padded extent must be at most 2^31 − 1`,
      [shape],
    );
  }
  return padded;
}

/**
 * The output extents of a window sweep, by PyTorch's rule: `⌊(size + 2·pad − dilation·(kernel − 1) − 1)/stride⌋
 * + 1`, rounded up instead in ceil mode unless that last window would start past the input and its left
 * padding. Throws a `TensorShapeError` when the window does not fit or, with `needTap`, when a window holds
 * no in-bounds position (max pooling has nothing to pick there).
 */
export function sweepExtents(
  op: string,
  shape: readonly number[],
  kernel: readonly [number, number],
  stride: readonly [number, number],
  padding: readonly [number, number],
  dilation: readonly [number, number],
  ceilMode: boolean,
  needTap: boolean,
): [number, number] {
  const extents: number[] = [];
  for (const axis of [0, 1]) {
    const size = shape[2 + axis];
    const [k, s, p, d] = [kernel[axis], stride[axis], padding[axis], dilation[axis]];
    const room = checkPadded(op, shape, size, p) - (d * (k - 1) + 1);
    if (room < 0) {
      throw new TensorShapeError(
        op,
        `the input ${formatShape(shape)} padded by ${formatShape(padding)} is smaller than the kernel ${
          formatShape(kernel)
        }${d > 1 ? ` dilated by ${formatShape(dilation)}` : ""}`,
        [shape],
      );
    }
    let extent = (ceilMode ? Math.ceil(room / s) : Math.floor(room / s)) + 1;
    if (ceilMode && (extent - 1) * s >= size + p) extent--;
    for (let o = 0; needTap && o < extent; o++) {
      const start = o * s - p;
      const first = start >= 0 ? start : start + Math.ceil(-start / d) * d;
      if (first >= size || first > start + (k - 1) * d) {
        throw new TensorShapeError(
          op,
          `window ${o} of axis ${axis + 2} holds no position of the input ${formatShape(shape)} (padding ${
            formatShape(padding)
          }, dilation ${formatShape(dilation)})`,
          [shape],
        );
      }
    }
    extents.push(extent);
  }
  return [extents[0], extents[1]];
}

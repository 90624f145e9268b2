/**
 * Element-wise operators: `add sub mul div` (tensors or numbers on either side, broadcasting), comparisons,
 * `maximum minimum pow`, and the unary functions. Each validates, allocates its output in the current scope,
 * makes one kernel call through the seam, and records when gradients are wanted.
 *
 * @module
 */
import { DTypeError, OptionError, StaleTensorError, TensorShapeError } from "../core/errors.ts";
import { describe } from "../options.ts";
import { dtypeInfo } from "../core/dtype.ts";
import { computeSettings, GradMode, kernels } from "../context.ts";
import { broadcastShapes, formatShape } from "../core/shape.ts";
import { allocate, Tensor } from "../tensor.ts";
import { expandView } from "../core/views.ts";
import { BinaryOp, UnaryOp } from "../kernels/types.ts";
import { type OpKind, record, shouldRecord } from "../autograd/record.ts";

/** A tensor operand or a number (an F32 scalar). */
export type Operand = Tensor | number;

/**
 * `value` checked to be a live tensor: an `OptionError` for anything else, a `StaleTensorError` when its
 * storage was released (its view is checked again at the native boundary, `Tensor.operand`). Ops check their inputs with it before allocating, so a refused call leaves nothing
 * behind.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Tensor } from "@zigtensor/zigtensor";
 * import { checkTensor } from "./elementwise.ts";
 * const t = Tensor.zeros([2]);
 * assert.equal(checkTensor("clone", "the input", t), t);
 * t.dispose();
 * assert.throws(() => checkTensor("clone", "the input", t));
 * ```
 */
export function checkTensor(op: string, name: string, value: unknown): Tensor {
  if (!(value instanceof Tensor)) {
    throw new OptionError(op, `${name} must be a Tensor, got ${describe(value)}`);
  }
  if (value.storage.isReleased) throw new StaleTensorError(op);
  return value;
}

/** Eager arithmetic takes F32 tensors (integers are for indices and labels). */
export function checkF32(op: string, ...tensors: readonly Tensor[]): void {
  for (const t of tensors) {
    checkTensor(op, "an operand", t);
    if (t.dtype !== 1 || t.blockSize > 0) {
      throw new DTypeError(
        op,
        `${op} computes on plain F32 tensors, got ${
          t.blockSize > 0 ? `a blocked NchwC(${t.blockSize})` : dtypeInfo(t.dtype).name
        } tensor; cast() it first`,
      );
    }
  }
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
  if (t.rank !== shape.length || t.shape.some((e, i) => e !== shape[i])) {
    throw new TensorShapeError(
      op,
      `${name} must have shape ${formatShape(shape)}, got ${formatShape(t.shape)}`,
      [
        shape,
        t.shape,
      ],
    );
  }
}

/** A number as a rank-0 F32 tensor in the current scope. */
function scalarOperand(value: number): Tensor {
  const t = allocate("scalar", [], 1, false, { scoped: true });
  (t.data() as Float32Array)[0] = value;
  return t;
}

/** A checked operand as a tensor (the caller checked tensor operands with `checkF32` first). */
function asTensor(value: Operand): Tensor {
  return typeof value === "number" ? scalarOperand(value) : value;
}

/** Strides that read `t` at the broadcast `shape` (stride 0 along stretched axes). */
export function broadcastStrides(t: Tensor, shape: readonly number[], op: string): readonly number[] {
  if (t.rank === shape.length && t.shape.every((e, i) => e === shape[i])) return t.strides;
  return expandView(t, shape, op).strides;
}

/** Allocates an F32 output of `shape` in the current scope. */
export function newOutput(op: string, shape: readonly number[], dtype: 1 | 9 = 1): Tensor {
  return allocate(op, shape, dtype, false, { scoped: true });
}

/** out = a (kind) b with broadcasting; the output is Bool for comparisons. */
export function binaryKernel(op: string, kind: BinaryOp, a: Tensor, b: Tensor): Tensor {
  const shape = broadcastShapes(op, a.shape, b.shape);
  const out = newOutput(op, shape, kind >= BinaryOp.Eq ? 9 : 1);
  kernels().binary(
    kind,
    shape,
    out.operand(op),
    a.operand(op, broadcastStrides(a, shape, op)),
    b.operand(op, broadcastStrides(b, shape, op)),
    computeSettings(),
  );
  return out;
}

/** out = kind(a). */
export function unaryKernel(op: string, kind: UnaryOp, a: Tensor): Tensor {
  const out = newOutput(op, a.shape);
  kernels().unary(kind, a.shape, out.operand(op), a.operand(op), computeSettings());
  return out;
}

function arithmetic(op: string, kind: BinaryOp, recordAs: OpKind, x: Operand, y: Operand): Tensor {
  // Both operands are checked before either scalar is allocated, so a refused call allocates nothing.
  if (typeof x !== "number") checkF32(op, x);
  if (typeof y !== "number") checkF32(op, y);
  const a = asTensor(x);
  const b = asTensor(y);
  // Scalars made from numbers are temporaries: freed now, or owned by the record that may save them.
  const temporaries = [x === a ? null : a, y === b ? null : b].filter((t): t is Tensor => t !== null);
  const out = binaryKernel(op, kind, a, b);
  if (!shouldRecord(a, b)) {
    for (const t of temporaries) t.dispose();
    return out;
  }
  // Saved slots per spec 000 §8: Mul saves a for b's gradient and b for a's; Div saves a (if b needs a
  // gradient) and always b.
  const saved = recordAs === "Mul"
    ? [b.requiresGrad ? a : null, a.requiresGrad ? b : null]
    : recordAs === "Div"
    ? [b.requiresGrad ? a : null, b]
    : [];
  return record(out, recordAs, [a, b], { saved, owned: temporaries });
}

/**
 * a + b, broadcasting; either side may be a number.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using a = Tensor.from([[1, 2], [3, 4]]);
 * using b = Tensor.from([10, 20]);
 * using c = ops.add(a, b);
 * using d = ops.add(1, a);
 * assert.ok(c.toArray().join() === "11,22,13,24" && d.get(0, 0) === 2);
 * ```
 */
export function add(a: Operand, b: Operand): Tensor {
  return arithmetic("add", BinaryOp.Add, "Add", a, b);
}

/** a − b, broadcasting. */
export function sub(a: Operand, b: Operand): Tensor {
  return arithmetic("sub", BinaryOp.Sub, "Sub", a, b);
}

/** a · b element-wise, broadcasting. */
export function mul(a: Operand, b: Operand): Tensor {
  return arithmetic("mul", BinaryOp.Mul, "Mul", a, b);
}

/** a / b, broadcasting. */
export function div(a: Operand, b: Operand): Tensor {
  return arithmetic("div", BinaryOp.Div, "Div", a, b);
}

function notDifferentiable(op: string, kind: BinaryOp, x: Operand, y: Operand): Tensor {
  if (typeof x !== "number") checkF32(op, x);
  if (typeof y !== "number") checkF32(op, y);
  const a = asTensor(x);
  const b = asTensor(y);
  const out = binaryKernel(op, kind, a, b);
  if (a !== x) a.dispose();
  if (b !== y) b.dispose();
  return out;
}

/** Element-wise maximum (NaN if either is NaN); not differentiable. */
export function maximum(a: Operand, b: Operand): Tensor {
  return notDifferentiable("maximum", BinaryOp.Max, a, b);
}

/** Element-wise minimum (NaN if either is NaN); not differentiable. */
export function minimum(a: Operand, b: Operand): Tensor {
  return notDifferentiable("minimum", BinaryOp.Min, a, b);
}

/** a^b element-wise; not differentiable. */
export function pow(a: Operand, b: Operand): Tensor {
  return notDifferentiable("pow", BinaryOp.Pow, a, b);
}

/** a == b as Bool. */
export function eq(a: Operand, b: Operand): Tensor {
  return notDifferentiable("eq", BinaryOp.Eq, a, b);
}

/** a != b as Bool. */
export function ne(a: Operand, b: Operand): Tensor {
  return notDifferentiable("ne", BinaryOp.Ne, a, b);
}

/** a < b as Bool. */
export function lt(a: Operand, b: Operand): Tensor {
  return notDifferentiable("lt", BinaryOp.Lt, a, b);
}

/** a <= b as Bool. */
export function le(a: Operand, b: Operand): Tensor {
  return notDifferentiable("le", BinaryOp.Le, a, b);
}

/** a > b as Bool. */
export function gt(a: Operand, b: Operand): Tensor {
  return notDifferentiable("gt", BinaryOp.Gt, a, b);
}

/** a >= b as Bool. */
export function ge(a: Operand, b: Operand): Tensor {
  return notDifferentiable("ge", BinaryOp.Ge, a, b);
}

/** Saved slot 0 of each unary op: its output or its input (see the backward rules). */
const UNARY_SAVES: Partial<Record<OpKind, "output" | "input">> = {
  Relu: "output",
  Exp: "output",
  Sqrt: "output",
  Tanh: "output",
  Sigmoid: "output",
  Log: "input",
};

function unary(op: string, kind: UnaryOp, recordAs: OpKind | null, x: Tensor): Tensor {
  checkF32(op, x);
  const out = unaryKernel(op, kind, x);
  if (recordAs === null || !shouldRecord(x)) return out;
  const saves = UNARY_SAVES[recordAs];
  return record(out, recordAs, [x], { saved: saves === undefined ? [] : [saves === "output" ? out : x] });
}

/**
 * −x.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using a = Tensor.from([1, -2]);
 * using n = ops.neg(a);
 * assert.ok(n.toArray().join() === "-1,2");
 * ```
 */
export function neg(x: Tensor): Tensor {
  return unary("neg", UnaryOp.Neg, "Neg", x);
}

/** max(x, 0); saves its output. */
export function relu(x: Tensor): Tensor {
  return unary("relu", UnaryOp.Relu, "Relu", x);
}

/** e^x; saves its output. */
export function exp(x: Tensor): Tensor {
  return unary("exp", UnaryOp.Exp, "Exp", x);
}

/** ln x; saves its input. */
export function log(x: Tensor): Tensor {
  return unary("log", UnaryOp.Log, "Log", x);
}

/** √x; saves its output. */
export function sqrt(x: Tensor): Tensor {
  return unary("sqrt", UnaryOp.Sqrt, "Sqrt", x);
}

/** tanh x; saves its output. */
export function tanh(x: Tensor): Tensor {
  return unary("tanh", UnaryOp.Tanh, "Tanh", x);
}

/** 1 / (1 + e^−x); saves its output. */
export function sigmoid(x: Tensor): Tensor {
  return unary("sigmoid", UnaryOp.Sigmoid, "Sigmoid", x);
}

/** |x|; not differentiable. */
export function abs(x: Tensor): Tensor {
  return unary("abs", UnaryOp.Abs, null, x);
}

/** The error function; not differentiable. */
export function erf(x: Tensor): Tensor {
  return unary("erf", UnaryOp.Erf, null, x);
}

const GELU_C = Math.sqrt(2 / Math.PI);

/**
 * GELU, tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). `gelu(−∞)` is −0, the limit (PyTorch gives NaN
 * there, from 0·∞). Saves its input and, as an owned slot, the tanh of the inner term.
 */
export function gelu(x: Tensor): Tensor {
  checkF32("gelu", x);
  const out = unaryKernel("gelu", UnaryOp.Gelu, x);
  if (!shouldRecord(x)) return out;
  const inner = GradMode.noGrad(() => {
    using square = mul(x, x);
    using cube = mul(square, x);
    using scaled = mul(cube, 0.044715);
    using sum = add(x, scaled);
    using arg = mul(sum, GELU_C);
    return unaryKernel("gelu", UnaryOp.Tanh, arg);
  });
  return record(out, "Gelu", [x], { saved: [x, inner], owned: [inner] });
}

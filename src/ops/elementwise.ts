/**
 * Element-wise operators: `add sub mul div` (tensors or numbers on either side, broadcasting), comparisons,
 * `maximum minimum pow`, and the unary functions. Each validates, allocates its output in the current scope,
 * makes one kernel call through the seam, and records when gradients are wanted.
 *
 * @module
 */
import { DType } from "../core/dtype.ts";
import { GradMode } from "../context.ts";
import { allocate, type Tensor } from "../tensor.ts";
import { UnaryOp } from "../kernels/types.ts";
import { binaryKernel, checkF32, unaryKernel } from "./common.ts";
import { recordOp, shouldRecord } from "../autograd/record.ts";
import { type BinaryOpName, kernelCode, type UnaryOpName } from "../core/op_table.ts";

/** A tensor operand or a number (an F32 scalar). */
export type Operand = Tensor | number;

/** A number as a rank-0 F32 tensor in the current scope. */
function scalarOperand(value: number): Tensor {
  const t = allocate("scalar", [], DType.F32, false, { scoped: true });
  (t.data() as Float32Array)[0] = value;
  return t;
}

/** A checked operand as a tensor (the caller checked tensor operands with `checkF32` first). */
function asTensor(value: Operand): Tensor {
  return typeof value === "number" ? scalarOperand(value) : value;
}

/** The saved slots of each differentiable binary op (spec 000 §8), from its operands. */
function binarySaves(op: BinaryOpName, a: Tensor, b: Tensor): (Tensor | null)[] {
  switch (op) {
    // Mul saves a for b's gradient and b for a's; Div saves a (if b needs a gradient) and always b.
    case "mul":
      return [b.requiresGrad ? a : null, a.requiresGrad ? b : null];
    case "div":
      return [b.requiresGrad ? a : null, b];
    case "maximum":
    case "minimum":
    case "pow":
      return [a, b];
    default:
      return [];
  }
}

/** One binary op of the op table: its kernel through the seam, then its record as the table says. */
function binary(op: BinaryOpName, x: Operand, y: Operand): Tensor {
  // Both operands are checked before either scalar is allocated, so a refused call allocates nothing.
  if (typeof x !== "number") checkF32(op, x);
  if (typeof y !== "number") checkF32(op, y);
  const a = asTensor(x);
  const b = asTensor(y);
  const out = binaryKernel(op, kernelCode("binary", op), a, b);
  if (!shouldRecord(a, b)) {
    // The common untracked call builds no record parts; scalars made from numbers are freed now.
    if (a !== x) a.dispose();
    if (b !== y) b.dispose();
    return out;
  }
  // Scalars made from numbers are temporaries, owned by the record that may save them.
  const temporaries = [x === a ? null : a, y === b ? null : b].filter((t): t is Tensor => t !== null);
  return recordOp(op, out, [a, b], { saved: binarySaves(op, a, b), owned: temporaries });
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
  return binary("add", a, b);
}

/** a − b, broadcasting. */
export function sub(a: Operand, b: Operand): Tensor {
  return binary("sub", a, b);
}

/** a · b element-wise, broadcasting. */
export function mul(a: Operand, b: Operand): Tensor {
  return binary("mul", a, b);
}

/** a / b, broadcasting. */
export function div(a: Operand, b: Operand): Tensor {
  return binary("div", a, b);
}

/** Element-wise maximum (NaN if either is NaN); at a tie each side gets half the gradient, like PyTorch. */
export function maximum(a: Operand, b: Operand): Tensor {
  return binary("maximum", a, b);
}

/** Element-wise minimum (NaN if either is NaN); at a tie each side gets half the gradient, like PyTorch. */
export function minimum(a: Operand, b: Operand): Tensor {
  return binary("minimum", a, b);
}

/** a^b element-wise; differentiable in both (the exponent's gradient is 0 where a = 0 and b ≥ 0, like PyTorch). */
export function pow(a: Operand, b: Operand): Tensor {
  return binary("pow", a, b);
}

/** a == b as Bool. */
export function eq(a: Operand, b: Operand): Tensor {
  return binary("eq", a, b);
}

/** a != b as Bool. */
export function ne(a: Operand, b: Operand): Tensor {
  return binary("ne", a, b);
}

/** a < b as Bool. */
export function lt(a: Operand, b: Operand): Tensor {
  return binary("lt", a, b);
}

/** a <= b as Bool. */
export function le(a: Operand, b: Operand): Tensor {
  return binary("le", a, b);
}

/** a > b as Bool. */
export function gt(a: Operand, b: Operand): Tensor {
  return binary("gt", a, b);
}

/** a >= b as Bool. */
export function ge(a: Operand, b: Operand): Tensor {
  return binary("ge", a, b);
}

/** The unary ops of the op table that are one kernel call (`gelu` also saves an inner term). */
type UnaryName = Exclude<UnaryOpName, "gelu">;

/** Saved slot 0 of each unary op: its output or its input (see the backward rules). */
const UNARY_SAVES: Record<UnaryName, "output" | "input" | null> = {
  neg: null,
  relu: "output",
  exp: "output",
  sqrt: "output",
  tanh: "output",
  sigmoid: "output",
  log: "input",
  abs: "input",
  erf: "input",
};

/** One unary op of the op table: its kernel through the seam, then its record as the table says. */
function unary(op: UnaryName, x: Tensor): Tensor {
  checkF32(op, x);
  const out = unaryKernel(op, kernelCode("unary", op), x);
  if (!shouldRecord(x)) return out;
  const saves = UNARY_SAVES[op];
  return recordOp(op, out, [x], { saved: saves === null ? [] : [saves === "output" ? out : x] });
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
  return unary("neg", x);
}

/** max(x, 0); saves its output. */
export function relu(x: Tensor): Tensor {
  return unary("relu", x);
}

/** e^x; saves its output. */
export function exp(x: Tensor): Tensor {
  return unary("exp", x);
}

/** ln x; saves its input. */
export function log(x: Tensor): Tensor {
  return unary("log", x);
}

/** √x; saves its output. */
export function sqrt(x: Tensor): Tensor {
  return unary("sqrt", x);
}

/** tanh x; saves its output. */
export function tanh(x: Tensor): Tensor {
  return unary("tanh", x);
}

/** 1 / (1 + e^−x); saves its output. */
export function sigmoid(x: Tensor): Tensor {
  return unary("sigmoid", x);
}

/** |x|; its gradient is sign(x) (0 at 0, like PyTorch). */
export function abs(x: Tensor): Tensor {
  return unary("abs", x);
}

/** The error function; its gradient is (2/√π)·e^(−x²). */
export function erf(x: Tensor): Tensor {
  return unary("erf", x);
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
  return recordOp("gelu", out, [x], { saved: [x, inner], owned: [inner] });
}

/**
 * Element-wise operators: `add sub mul div` (tensors or numbers on either side, broadcasting), comparisons,
 * `maximum minimum pow`, and the unary functions. Each validates, allocates its output in the current scope,
 * makes one kernel call through the seam, and records when gradients are wanted.
 *
 * @module
 */
import { DTypeError, OptionError } from "../core/errors.ts";
import { checkOptions, describe } from "../core/options.ts";
import { DType, dtypeInfo } from "../core/dtype.ts";
import { encodeElement } from "../core/element.ts";
import { broadcastShapes } from "../core/shape.ts";
import { computeSettings, GradMode, kernels } from "../context.ts";
import {
  allocate,
  blockSizeOf,
  dtypeOf,
  isTensor,
  operandOf,
  requiresGradOf,
  shapeOf,
  type Tensor,
} from "../tensor.ts";
import { UnaryOp } from "../kernels/types.ts";
import {
  binaryKernel,
  broadcastStrides,
  checkDTypes,
  checkF32,
  checkF32Tensor,
  checkTensor,
  isPlainF32,
  newOutput,
  unaryKernel,
} from "./common.ts";
import { cast } from "./copy.ts";
import { type AttributesOf, recordOp, shouldRecord, shouldRecordOperands } from "../autograd/record.ts";
import {
  type BinaryOpName,
  DTYPE_RULES,
  kernelCode,
  type OpName,
  OPS,
  type UnaryOpName,
} from "../core/op_table.ts";

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
      return [requiresGradOf(b) ? a : null, requiresGradOf(a) ? b : null];
    case "div":
      return [requiresGradOf(b) ? a : null, b];
    case "maximum":
    case "minimum":
    case "pow":
      return [a, b];
    default:
      return [];
  }
}

/**
 * One binary op of the op table: its kernel through the seam, then its record as the table says (internal
 * kernels such as reluBackward are not ops: their rules call `binaryKernel`).
 */
function binary(op: BinaryOpName & OpName, x: Operand, y: Operand): Tensor {
  // The one dtype branch: integer and Bool operands go to `integerBinary`, and so does anything else, to be
  // refused there with a typed error. Both operands are checked before either scalar is allocated, so a
  // refused call allocates nothing.
  if (!(typeof x === "number" || isPlainF32(x)) || !(typeof y === "number" || isPlainF32(y))) {
    return integerBinary(op, x, y);
  }
  const a = asTensor(x);
  const b = asTensor(y);
  const out = binaryKernel(op, kernelCode("binary", op), a, b);
  if (!shouldRecordOperands(a, b)) {
    // The common untracked call builds no record parts; scalars made from numbers are freed now.
    if (a !== x) a.dispose();
    if (b !== y) b.dispose();
    return out;
  }
  // Scalars made from numbers are temporaries, owned by the record that may save them.
  const temporaries = [x === a ? null : a, y === b ? null : b].filter((t): t is Tensor => t !== null);
  return recordOp(op, out, [a, b], { saved: binarySaves(op, a, b), owned: temporaries });
}

/** Whether `op` writes Bool, by its dtype rule. */
function writesBool(op: BinaryOpName & OpName): boolean {
  return DTYPE_RULES[OPS[op].dtypes].gives === "bool";
}

/**
 * A number operand of an integer or Bool op as a rank-0 tensor of `dtype`: for a logical op, 1 when it is
 * nonzero (NaN included) and 0 otherwise; else a whole number, which add, sub and mul wrap into the dtype
 * as PyTorch does (`int8 + 300` adds 44) and which a comparison needs within the dtype's range (0 or 1 for
 * Bool). Anything else is a `DTypeError`: zigtensor does not promote an integer tensor to float.
 */
function integerScalar(op: BinaryOpName & OpName, dtype: DType, value: number): Tensor {
  const info = dtypeInfo(dtype);
  const bits = dtype === DType.Bool ? 1 : 8 * info.blockBytes;
  const signed = info.name.startsWith("I");
  let v = value !== 0 ? 1n : 0n;
  if (op !== "logicalAnd" && op !== "logicalOr" && op !== "logicalXor") {
    if (!Number.isInteger(value)) {
      throw new DTypeError(
        op,
        `${op} of a tensor of dtype ${info.name} and the number ${value}: a number with an integer or Bool tensor must ` +
          "be whole (PyTorch would promote to float; cast() the tensor to F32 first)",
      );
    }
    v = BigInt(value);
    const wrapped = signed ? BigInt.asIntN(bits, v) : BigInt.asUintN(bits, v);
    if (wrapped !== v && writesBool(op)) {
      throw new DTypeError(
        op,
        `${op} of a tensor of dtype ${info.name} and ${value}, which is outside ${info.name}'s range; cast() the tensor ` +
          "to a wider dtype first",
      );
    }
    v = wrapped;
  }
  const t = allocate("scalar", [], dtype, false, { scoped: true });
  const data = t.data() as { [index: number]: number | bigint };
  data[0] = info.isBigInt ? v : Number(v);
  return t;
}

/**
 * A binary op whose operands are not plain F32 tensors or numbers: integer or Bool tensors (the op table's
 * dtype rule says which ops take them) make one `binaryInt` kernel call, not differentiable; anything else is
 * refused by `checkDTypes` with a typed error. Integer division is true division, F32 as PyTorch's: both
 * sides cast to F32, then `div`.
 */
function integerBinary(op: BinaryOpName & OpName, x: Operand, y: Operand): Tensor {
  // Anything but a number or a live tensor (undefined, a string, a released tensor) is refused here, typed.
  if (typeof x !== "number") checkTensor(op, "an operand", x);
  if (typeof y !== "number") checkTensor(op, "an operand", y);
  const tensors = [x, y].filter((t): t is Tensor => typeof t !== "number");
  const dtype = checkDTypes(op, tensors[0], tensors[1]);
  if (op === "div") {
    using a = typeof x === "number" ? null : cast(x, DType.F32);
    using b = typeof y === "number" ? null : cast(y, DType.F32);
    return div(a ?? x, b ?? y);
  }
  const a = typeof x === "number" ? integerScalar(op, dtype, x) : x;
  using _a = a === x ? null : a;
  const b = typeof y === "number" ? integerScalar(op, dtype, y) : y;
  using _b = b === y ? null : b;
  const shape = broadcastShapes(op, shapeOf(a), shapeOf(b));
  const out = allocate(op, shape, writesBool(op) ? DType.Bool : dtype, false, { scoped: true });
  kernels().binaryInt(
    kernelCode("binary", op),
    dtype,
    shape,
    operandOf(out, op),
    operandOf(a, op, broadcastStrides(a, shape, op)),
    operandOf(b, op, broadcastStrides(b, shape, op)),
    computeSettings(),
  );
  return out;
}

/**
 * a + b, broadcasting; either side may be a number. F32, or one integer dtype on both sides (wrapping around
 * as PyTorch; a number must then be whole, and takes the tensor's dtype).
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

/** a − b, broadcasting; F32 or integers (wrapping), as `add`. */
export function sub(a: Operand, b: Operand): Tensor {
  return binary("sub", a, b);
}

/** a · b element-wise, broadcasting; F32 or integers (wrapping), as `add`. */
export function mul(a: Operand, b: Operand): Tensor {
  return binary("mul", a, b);
}

/**
 * a / b, broadcasting. Integer operands give PyTorch's true division: both sides cast to F32, an F32 result.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using counts = Tensor.from([7, -7], [2], { dtype: "int32" });
 * using half = ops.div(counts, 2);
 * assert.deepEqual(half.toNested(), [3.5, -3.5]);
 * ```
 */
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

/**
 * a == b as Bool. The comparisons take F32, integer (I8 … I64, U8 … U64) or Bool operands of one dtype, or a
 * number (whole and within the dtype's range for an integer tensor, 0 or 1 for Bool).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using labels = Tensor.from([2, 0, 2], [3], { dtype: "int64" });
 * using isTwo = ops.eq(labels, 2);
 * using count = isTwo.sum();
 * assert.ok(count.item() === 2n);
 * ```
 */
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

/**
 * a AND b as Bool, every nonzero value (NaN included) true, as `torch.logical_and`: F32, integer or Bool
 * operands of one dtype, or a number; broadcasting; not differentiable.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using valid = Tensor.from([true, true, false], [3], { dtype: "bool" });
 * using labels = Tensor.from([3, 0, 1], [3], { dtype: "int32" });
 * using known = ops.ne(labels, 0);
 * using keep = ops.logicalAnd(valid, known);
 * assert.deepEqual(keep.toNested(), [1, 0, 0]); // Bool reads as 0/1
 * ```
 */
export function logicalAnd(a: Operand, b: Operand): Tensor {
  return binary("logicalAnd", a, b);
}

/** a OR b as Bool, every nonzero value true (`torch.logical_or`); as `logicalAnd` otherwise. */
export function logicalOr(a: Operand, b: Operand): Tensor {
  return binary("logicalOr", a, b);
}

/** a XOR b as Bool, every nonzero value true (`torch.logical_xor`); as `logicalAnd` otherwise. */
export function logicalXor(a: Operand, b: Operand): Tensor {
  return binary("logicalXor", a, b);
}

/**
 * NOT x as Bool: true where x is zero (`torch.logical_not`; NaN is nonzero, so false), for F32, integer and
 * Bool tensors; computed as `eq(x, 0)`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using mask = Tensor.from([true, false], [2], { dtype: "bool" });
 * using flipped = ops.logicalNot(mask);
 * assert.deepEqual(flipped.toNested(), [0, 1]);
 * ```
 */
export function logicalNot(x: Tensor): Tensor {
  checkDTypes("logicalNot", x);
  return eq(x, 0);
}

/** The unary ops of the op table that are one kernel call without options. */
type UnaryName = Exclude<UnaryOpName, "gelu" | "softplus" | "leakyRelu" | "elu" | "clamp">;

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
  log1p: "input",
  expm1: "output",
  silu: "input",
  sign: null,
  reciprocal: "output",
  rsqrt: "output",
  square: "input",
};

/** One unary op of the op table: its kernel through the seam, then its record as the table says. */
function unary(op: UnaryName, x: Tensor): Tensor {
  checkF32Tensor(op, x);
  const out = unaryKernel(op, kernelCode("unary", op), x);
  if (!shouldRecordOperands(x)) return out;
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

/** The options of `gelu` (PyTorch's `approximate`). */
export interface GeluOptions {
  /** `"none"`: x·Φ(x) with the normal CDF Φ (erf); `"tanh"`: the tanh approximation. @default "none" */
  readonly approximate?: "none" | "tanh";
}

/**
 * GELU, as PyTorch's `F.gelu`: by default x·Φ(x) = 0.5·x·(1 + erf(x/√2)) (`approximate: "none"`), or the tanh
 * form 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (`approximate: "tanh"`). Both keep their relative accuracy for
 * negative x and give `gelu(−∞) = −0`, the limit (PyTorch gives NaN there, from 0·∞). Both forms save their
 * input. Gradients: Φ(x) + x·φ(x), and the tanh form's derivative (one kernel from g and x).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([-1, 0, 1]);
 * using exact = ops.gelu(x);
 * using tanh = ops.gelu(x, { approximate: "tanh" });
 * assert.ok(Math.abs((exact.get(2) as number) - 0.8413447) < 1e-6 && Math.abs((tanh.get(2) as number) - 0.8411920) < 1e-6);
 * ```
 */
export function gelu(x: Tensor, options?: GeluOptions): Tensor {
  const o = checkOptions("gelu", options, ["approximate"]);
  if (o.approximate !== undefined && o.approximate !== "none" && o.approximate !== "tanh") {
    throw new OptionError("gelu", `approximate must be "none" or "tanh", got ${describe(o.approximate)}`);
  }
  const approximate = o.approximate ?? "none";
  checkF32("gelu", x);
  const out = unaryKernel("gelu", approximate === "tanh" ? UnaryOp.Gelu : UnaryOp.GeluErf, x);
  if (!shouldRecord(x)) return out;
  return recordOp("gelu", out, [x], { saved: [x], attrs: { approximate } });
}

// --- Issue 12: more unary functions, with parameters where PyTorch has them ---

/** A number option: `fallback` when absent, else a number (an `OptionError` names the op otherwise). */
function numberOption(op: string, name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number") {
    throw new OptionError(op, `${name} must be a number, got ${describe(value)}`);
  }
  return value;
}

/**
 * One unary kernel call with two f32 parameters (rounded to f32 here, as PyTorch converts a number to the
 * tensor's type), then the record as the table says, under `kind`'s attributes.
 */
function unaryWith<K extends "Softplus" | "LeakyRelu" | "Elu" | "Clamp" | "Hardtanh">(
  op: "softplus" | "leakyRelu" | "elu" | "clamp" | "hardtanh",
  kernel: UnaryOp,
  x: Tensor,
  params: readonly [number, number],
  saved: "input" | "output",
  attrs: AttributesOf<K>,
): Tensor {
  checkF32(op, x);
  const out = newOutput(op, shapeOf(x));
  const p: [number, number] = [Math.fround(params[0]), Math.fround(params[1])];
  kernels().unary(kernel, shapeOf(x), operandOf(out, op), operandOf(x, op), computeSettings(), p);
  return recordOp(op, out, [x], { saved: [saved === "output" ? out : x], attrs });
}

/** ln(1 + x), accurate near 0; saves its input. */
export function log1p(x: Tensor): Tensor {
  return unary("log1p", x);
}

/** eˣ − 1, accurate near 0; saves its output. */
export function expm1(x: Tensor): Tensor {
  return unary("expm1", x);
}

/** SiLU (swish): x·σ(x) = x/(1 + e^−x); saves its input. */
export function silu(x: Tensor): Tensor {
  return unary("silu", x);
}

/** The options of `softplus` (PyTorch's `beta` and `threshold`). */
export interface SoftplusOptions {
  /** The sharpness: softplus is ln(1 + e^(beta·x))/beta. @default 1 */
  readonly beta?: number;
  /** Above this value of beta·x the op is x itself. @default 20 */
  readonly threshold?: number;
}

/**
 * softplus: ln(1 + e^(beta·x))/beta, and x where beta·x > threshold (PyTorch's `F.softplus`); saves its
 * input.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([0, 30]);
 * using y = ops.softplus(x);
 * assert.ok(Math.abs((y.get(0) as number) - Math.LN2) < 1e-7 && y.get(1) === 30);
 * ```
 */
export function softplus(x: Tensor, options?: SoftplusOptions): Tensor {
  const o = checkOptions("softplus", options, ["beta", "threshold"]);
  const beta = numberOption("softplus", "beta", o.beta, 1);
  const threshold = numberOption("softplus", "threshold", o.threshold, 20);
  return unaryWith<"Softplus">("softplus", UnaryOp.Softplus, x, [beta, threshold], "input", {
    beta: Math.fround(beta),
    threshold: Math.fround(threshold),
  });
}

/** The options of `leakyRelu` (PyTorch's `negative_slope`). */
export interface LeakyReluOptions {
  /** The slope for x ≤ 0. @default 0.01 */
  readonly negativeSlope?: number;
}

/** x for x > 0, x·negativeSlope otherwise (PyTorch's `F.leaky_relu`); saves its input. */
export function leakyRelu(x: Tensor, options?: LeakyReluOptions): Tensor {
  const o = checkOptions("leakyRelu", options, ["negativeSlope"], { negative_slope: "negativeSlope" });
  const slope = numberOption("leakyRelu", "negativeSlope", o.negativeSlope, 0.01);
  return unaryWith<"LeakyRelu">("leakyRelu", UnaryOp.LeakyRelu, x, [slope, 0], "input", {
    negativeSlope: Math.fround(slope),
  });
}

/** The options of `elu`. */
export interface EluOptions {
  /** The scale of the negative part. @default 1 */
  readonly alpha?: number;
}

/** x for x > 0, alpha·(eˣ − 1) otherwise (PyTorch's `F.elu`); saves its input. */
export function elu(x: Tensor, options?: EluOptions): Tensor {
  const o = checkOptions("elu", options, ["alpha"]);
  const alpha = numberOption("elu", "alpha", o.alpha, 1);
  return unaryWith<"Elu">("elu", UnaryOp.Elu, x, [alpha, 0], "input", { alpha: Math.fround(alpha) });
}

/** The options of `hardtanh` (PyTorch's `min_val` and `max_val`). */
export interface HardtanhOptions {
  /** The lower bound. @default -1 */
  readonly minVal?: number;
  /** The upper bound. @default 1 */
  readonly maxVal?: number;
}

/**
 * x clamped to [minVal, maxVal] (PyTorch's `F.hardtanh`). Its gradient passes where minVal < x < maxVal
 * strictly, and where x is NaN, like PyTorch's; saves its input.
 */
export function hardtanh(x: Tensor, options?: HardtanhOptions): Tensor {
  const o = checkOptions("hardtanh", options, ["minVal", "maxVal"], {
    min_val: "minVal",
    max_val: "maxVal",
  });
  const lo = numberOption("hardtanh", "minVal", o.minVal, -1);
  const hi = numberOption("hardtanh", "maxVal", o.maxVal, 1);
  return unaryWith<"Hardtanh">("hardtanh", UnaryOp.Clamp, x, [lo, hi], "input", {
    min: Math.fround(lo),
    max: Math.fround(hi),
  });
}

/** The bounds of `clamp`; either may be absent, either may be a tensor (broadcast with x). */
export interface ClampOptions {
  /** The lower bound. */
  readonly min?: number | Tensor;
  /** The upper bound. */
  readonly max?: number | Tensor;
}

/**
 * min(max(x, min), max), either bound optional (PyTorch's `torch.clamp`): NaN stays NaN, and where min > max
 * the result is max.
 *
 * With number bounds the clamp kernel runs, and the gradient passes where min < x < max strictly (0 at a
 * bound and at NaN), as PyTorch 2.15 computes it for number bounds; saves its input.
 *
 * With a tensor bound (`torch.clamp(x, min=t, max=u)`), x and the bounds broadcast together, the result is
 * `maximum(x, min)` then `minimum(…, max)` (NaN in x or a bound gives NaN; the sign of a zero tied with a zero
 * bound is not specified, as PyTorch's own depends on its vector or scalar loop), a number beside a tensor
 * bound acts as a rank-0 F32 tensor (PyTorch wants both tensors), and the gradients follow PyTorch 2.15's
 * rules for tensor bounds, which differ from the number form's: with one bound, PyTorch's `maximum`
 * (`minimum`) rule, g split in halves at a tie and given to both where either is NaN; with both, g goes to
 * whichever of x, min and max the result is: to max where min > max (and also to x where x is NaN), to x
 * where min ≤ x ≤ max or x is NaN (halved with the bound it ties when min < max), to min below it and to max
 * above it (all of it where min = max); a NaN bound passes g to x where x is on the other bound's side and
 * gives the bounds none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([-2, 0.5, 3]);
 * using y = ops.clamp(x, { min: 0, max: 1 });
 * using lo = Tensor.from([-3, 1, 0]);
 * using z = ops.clamp(x, { min: lo, max: 2 });
 * assert.deepEqual([...y.toArray()], [0, 0.5, 1]);
 * assert.deepEqual([...z.toArray()], [-2, 1, 2]);
 * ```
 */
export function clamp(x: Tensor, options: ClampOptions): Tensor {
  const o = checkOptions("clamp", options, ["min", "max"]);
  if (isTensor(o.min) || isTensor(o.max)) return clampTensors(x, o.min, o.max);
  const lo = numberOption("clamp", "min", o.min, -Infinity);
  const hi = numberOption("clamp", "max", o.max, Infinity);
  return unaryWith<"Clamp">("clamp", UnaryOp.Clamp, x, [lo, hi], "input", {
    min: Math.fround(lo),
    max: Math.fround(hi),
  });
}

/** A bound of the tensor form: a checked F32 tensor, a number (as a rank-0 tensor), or absent. */
function clampBound(name: string, value: unknown): Operand | undefined {
  if (value === undefined || isTensor(value)) {
    if (value !== undefined) checkF32("clamp", value);
    return value;
  }
  return numberOption("clamp", name, value, 0);
}

/** `clamp` with a tensor bound: maximum and minimum kernels, one `Clamp` record over x and the tensor bounds. */
function clampTensors(x: Tensor, min: unknown, max: unknown): Tensor {
  checkF32("clamp", x);
  const lo = clampBound("min", min);
  const hi = clampBound("max", max);
  const out = GradMode.noGrad(() => {
    if (lo === undefined) return minimum(x, hi!);
    if (hi === undefined) return maximum(x, lo);
    using low = maximum(x, lo);
    return minimum(low, hi);
  });
  if (!shouldRecord(x, ...[lo, hi].filter((v): v is Tensor => isTensor(v)))) return out;
  const bounds = lo === undefined ? "max" : hi === undefined ? "min" : "both";
  const l = lo === undefined ? null : asTensor(lo);
  const h = hi === undefined ? null : asTensor(hi);
  const inputs = [x, ...[l, h].filter((t): t is Tensor => t !== null)];
  const owned = [l === lo ? null : l, h === hi ? null : h].filter((t): t is Tensor => t !== null);
  return recordOp("clamp", out, inputs, {
    saved: inputs,
    owned,
    attrs: { min: -Infinity, max: Infinity, bounds },
  });
}

/** sign(x): 1, −1, and 0 for ±0 and NaN (PyTorch's); not differentiable (PyTorch's gradient is 0). */
export function sign(x: Tensor): Tensor {
  return unary("sign", x);
}

/** 1/x; saves its output. */
export function reciprocal(x: Tensor): Tensor {
  return unary("reciprocal", x);
}

/** 1/√x (an f32 square root, then an f32 division, as PyTorch); saves its output. */
export function rsqrt(x: Tensor): Tensor {
  return unary("rsqrt", x);
}

/** x·x; saves its input. */
export function square(x: Tensor): Tensor {
  return unary("square", x);
}

// --- Issue 12: selection ---

/** A number as a rank-0 tensor of `dtype` in the current scope (the caller checked that it fits). */
function scalarOf(value: number, dtype: DType): Tensor {
  const t = allocate("where", [], dtype, false, { scoped: true });
  t.fill(value);
  return t;
}

/** The name of a tensor's element type for messages (blocked layouts included). */
function typeName(t: Tensor): string {
  return blockSizeOf(t) > 0 ? `a blocked NchwC(${blockSizeOf(t)})` : dtypeInfo(dtypeOf(t)).name;
}

/**
 * The dtype of `where(cond, a, b)`: the tensors' one dtype, a tensor's beside a number, F32 for two numbers
 * (PyTorch's promotion, where it keeps a dtype); a `DTypeError` for two tensor dtypes and for a number that
 * the tensor's dtype would change (PyTorch promotes those: a fraction beside integers gives float32, any
 * number beside Bool gives int64; cast first).
 */
function whereDType(a: Operand, b: Operand): DType {
  const tensors = [a, b].filter((v): v is Tensor => isTensor(v));
  for (const t of tensors) {
    const info = dtypeInfo(dtypeOf(t));
    if (info.isQuantized || blockSizeOf(t) > 0) {
      throw new DTypeError(
        "where",
        `where takes plain tensors, got ${typeName(t)}; cast() or toLayout() it first`,
      );
    }
  }
  if (tensors.length === 0) return DType.F32;
  const dtype = dtypeOf(tensors[0]);
  if (tensors.length === 2 && dtypeOf(tensors[1]) !== dtype) {
    throw new DTypeError(
      "where",
      `a and b must have one dtype, got ${typeName(tensors[0])} and ${
        typeName(tensors[1])
      }; cast() one first`,
    );
  }
  const info = dtypeInfo(dtype);
  for (const v of [a, b]) {
    if (typeof v !== "number" || info.isFloat) continue;
    const fits = info.name !== "Bool" && Number.isSafeInteger(v) &&
      BigInt(v) === BigInt(encodeElement(info, v, "where"));
    if (!fits) {
      throw new DTypeError(
        "where",
        `the number ${v} does not keep the dtype ${info.name} of the tensor beside it (PyTorch would promote it); cast() the tensor first`,
      );
    }
  }
  return dtype;
}

/**
 * `a` where `condition` is true, `b` elsewhere (PyTorch's `torch.where(condition, a, b)`). `condition` is a
 * Bool tensor; `a` and `b` are tensors or numbers; the three broadcast together. The result has the dtype
 * of `a` and `b`, which may be any plain dtype (F32, F64, F16, BF16, the integers, Bool) and must be the same
 * for two tensors (mixed dtypes are a `DTypeError`: zigtensor does not promote, cast one first); a number
 * takes the tensor's dtype (two numbers give F32). Elements are copied bit for bit. Differentiable in F32
 * `a` and `b`: the gradient goes to `a` where the condition holds and to `b` elsewhere, each summed to its
 * shape.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DType, ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([-1, 2, -3]);
 * using positive = ops.gt(x, 0);
 * using y = ops.where(positive, x, 0);
 * using labels = Tensor.from([1, 2, 3], { dtype: DType.I32 });
 * using kept = ops.where(positive, labels, -1);
 * assert.ok(y.toArray().join() === "0,2,0" && kept.toArray().join() === "-1,2,-1" && kept.dtype === DType.I32);
 * ```
 */
export function where(condition: Tensor, a: Operand, b: Operand): Tensor {
  checkTensor("where", "the condition", condition);
  if (dtypeOf(condition) !== DType.Bool || blockSizeOf(condition) > 0) {
    throw new DTypeError(
      "where",
      `the condition must be a plain Bool tensor, got ${
        typeName(condition)
      }; compare (gt, eq, ...) or cast() it`,
    );
  }
  for (const [name, v] of [["a", a], ["b", b]] as const) {
    if (typeof v !== "number") checkTensor("where", name, v);
  }
  const dtype = whereDType(a, b);
  const shape = broadcastShapes(
    "where",
    broadcastShapes("where", shapeOf(condition), typeof a === "number" ? [] : shapeOf(a)),
    typeof b === "number" ? [] : shapeOf(b),
  );
  const grads = shouldRecord(...[a, b].filter((v): v is Tensor => isTensor(v)));
  if (grads && dtype !== DType.F32) {
    throw new DTypeError("where", `gradients flow through F32 tensors only, got ${dtypeInfo(dtype).name}`);
  }
  const x = typeof a === "number" ? scalarOf(a, dtype) : a;
  const y = typeof b === "number" ? scalarOf(b, dtype) : b;
  const out = allocate("where", shape, dtype, false, { scoped: true });
  kernels().select(
    dtypeInfo(dtype).blockBytes,
    shape,
    operandOf(out, "where"),
    operandOf(condition, "where", broadcastStrides(condition, shape, "where")),
    operandOf(x, "where", broadcastStrides(x, shape, "where")),
    operandOf(y, "where", broadcastStrides(y, shape, "where")),
    computeSettings(),
  );
  const temporaries = [x === a ? null : x, y === b ? null : y].filter((t): t is Tensor => t !== null);
  if (!grads) {
    for (const t of temporaries) t.dispose();
    return out;
  }
  return recordOp("where", out, [x, y], { saved: [condition], owned: temporaries });
}

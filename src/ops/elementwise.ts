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
import { computeSettings, GradMode, kernels } from "../context.ts";
import { broadcastShapes } from "../core/shape.ts";
import { allocate, freshOperand, type Tensor } from "../tensor.ts";
import { UnaryOp } from "../kernels/types.ts";
import {
  binaryKernel,
  broadcastStrides,
  checkDTypes,
  checkF32,
  isPlainF32,
  newOutput,
  unaryKernel,
} from "./common.ts";
import { cast } from "./copy.ts";
import { type AttributesOf, recordOp, shouldRecord } from "../autograd/record.ts";
import { type BinaryOpName, DTYPE_RULES, kernelCode, OPS, type UnaryOpName } from "../core/op_table.ts";

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
  // The one dtype branch: integer and Bool operands go to `integerBinary`, and so does anything else, to be
  // refused there with a typed error. Both operands are checked before either scalar is allocated, so a
  // refused call allocates nothing.
  if (!(typeof x === "number" || isPlainF32(x)) || !(typeof y === "number" || isPlainF32(y))) {
    return integerBinary(op, x, y);
  }
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

/** Whether `op` writes Bool, by its dtype rule. */
function writesBool(op: BinaryOpName): boolean {
  return DTYPE_RULES[OPS[op].dtypes].gives === "bool";
}

/**
 * A number operand of an integer or Bool op as a rank-0 tensor of `dtype`: for a logical op, 1 when it is
 * nonzero (NaN included) and 0 otherwise; else a whole number, which add, sub and mul wrap into the dtype
 * as PyTorch does (`int8 + 300` adds 44) and which a comparison needs within the dtype's range (0 or 1 for
 * Bool). Anything else is a `DTypeError`: zigtensor does not promote an integer tensor to float.
 */
function integerScalar(op: BinaryOpName, dtype: DType, value: number): Tensor {
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
function integerBinary(op: BinaryOpName, x: Operand, y: Operand): Tensor {
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
  const shape = broadcastShapes(op, a.shape, b.shape);
  const out = allocate(op, shape, writesBool(op) ? DType.Bool : dtype, false, { scoped: true });
  kernels().binaryInt(
    kernelCode("binary", op),
    dtype,
    shape,
    freshOperand(out, op),
    a.operand(op, broadcastStrides(a, shape, op)),
    b.operand(op, broadcastStrides(b, shape, op)),
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

/** The unary ops of the op table that are one kernel call without options (`gelu` also saves an inner term). */
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
  const out = newOutput(op, x.shape);
  const p: [number, number] = [Math.fround(params[0]), Math.fround(params[1])];
  kernels().unary(kernel, x.shape, out.operand(op), x.operand(op), computeSettings(), p);
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

/** The bounds of `clamp`; either may be absent. */
export interface ClampOptions {
  /** The lower bound. */
  readonly min?: number;
  /** The upper bound. */
  readonly max?: number;
}

/**
 * min(max(x, min), max) with number bounds, either optional (PyTorch's `torch.clamp`): NaN stays NaN, and
 * where min > max the result is max. Its gradient passes where min < x < max strictly (0 at a bound and at
 * NaN), as PyTorch 2.15 computes it for number bounds; saves its input.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([-2, 0.5, 3]);
 * using y = ops.clamp(x, { min: 0, max: 1 });
 * assert.deepEqual([...y.toArray()], [0, 0.5, 1]);
 * ```
 */
export function clamp(x: Tensor, options: ClampOptions): Tensor {
  const o = checkOptions("clamp", options, ["min", "max"]);
  const lo = numberOption("clamp", "min", o.min, -Infinity);
  const hi = numberOption("clamp", "max", o.max, Infinity);
  return unaryWith<"Clamp">("clamp", UnaryOp.Clamp, x, [lo, hi], "input", {
    min: Math.fround(lo),
    max: Math.fround(hi),
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

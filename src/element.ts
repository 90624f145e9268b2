/**
 * Reading and writing single elements of every dtype from JavaScript values, by the cast rules of spec 000
 * §10: a JS number is an f64, so writing one into an integer dtype truncates toward zero and saturates (NaN
 * becomes 0), into F16/BF16 it rounds through f32, into Bool it is "≠ 0" (NaN is true). I64/U64 read and
 * write as `bigint` (a number is accepted and converted the same way).
 *
 * @module
 */
import { DTypeError } from "./errors.ts";
import type { DTypeInfo, TypedArray } from "./dtype.ts";
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from "./movement/convert.ts";
import { roundInteger } from "./movement/cast.ts";

/** A JS value an element reads as: a number, or a bigint for I64/U64. */
export type ElementValue = number | bigint;

const INT_RANGES: Record<string, readonly [number, number]> = {
  U8: [0, 255],
  I8: [-128, 127],
  U16: [0, 65535],
  I16: [-32768, 32767],
  I32: [-(2 ** 31), 2 ** 31 - 1],
  U32: [0, 2 ** 32 - 1],
};

const BIGINT_RANGES: Record<string, readonly [bigint, bigint]> = {
  I64: [-(2n ** 63n), 2n ** 63n - 1n],
  U64: [0n, 2n ** 64n - 1n],
};

function saturate(value: number, low: number, high: number): number {
  if (Number.isNaN(value)) return 0;
  const t = Math.trunc(value);
  return t < low ? low : t > high ? high : t;
}

function toBigInt(info: DTypeInfo, value: ElementValue | boolean): bigint {
  const [low, high] = BIGINT_RANGES[info.name];
  if (typeof value === "bigint") {
    // An integer source wraps modulo 2^64, like an int → int cast.
    return info.name === "I64" ? BigInt.asIntN(64, value) : BigInt.asUintN(64, value);
  }
  const n = Number(value);
  if (Number.isNaN(n)) return 0n;
  if (n === Infinity) return high;
  if (n === -Infinity) return low;
  const t = BigInt(Math.trunc(n));
  return t < low ? low : t > high ? high : t;
}

/** The value stored for `value` in an element of `info` (raw bits for F16 and BF16). */
export function encodeElement(info: DTypeInfo, value: ElementValue | boolean, op: string): number | bigint {
  if (info.isQuantized) {
    throw new DTypeError(op, `${info.name} elements cannot be written one at a time; use quantize()`);
  }
  if (info.isBigInt) return toBigInt(info, value);
  if (typeof value === "bigint") {
    // An integer source wraps into integer dtypes and rounds to nearest into floats.
    if (info.name in INT_RANGES) return wrapInt(info, value);
    if (info.name === "Bool") return value !== 0n ? 1 : 0;
    // Integer → float rounds once, to nearest even at the target's precision.
    const rounded = roundInteger(value, FLOAT_PRECISION[info.name]);
    return info.name === "F16"
      ? f32ToF16Bits(rounded)
      : info.name === "BF16"
      ? f32ToBf16Bits(rounded)
      : rounded;
  }
  const n = typeof value === "boolean" ? (value ? 1 : 0) : value;
  switch (info.name) {
    case "F32":
    case "F64":
      return n;
    case "F16":
      return f32ToF16Bits(Math.fround(n));
    case "BF16":
      return f32ToBf16Bits(Math.fround(n));
    case "Bool":
      return n !== 0 ? 1 : 0;
    default: {
      const [low, high] = INT_RANGES[info.name];
      return saturate(n, low, high);
    }
  }
}

/** Significand bits of the float dtypes. */
const FLOAT_PRECISION: Record<string, number> = { F32: 24, F64: 53, F16: 11, BF16: 8 };

function wrapInt(info: DTypeInfo, value: bigint): number {
  const bits = 8 * info.blockBytes;
  const signed = info.name.startsWith("I");
  return Number(signed ? BigInt.asIntN(bits, value) : BigInt.asUintN(bits, value));
}

/** The JS value of a stored element. */
export function decodeElement(info: DTypeInfo, data: TypedArray, index: number): ElementValue {
  const raw = data[index];
  switch (info.name) {
    case "F16":
      return f16BitsToF32(raw as number);
    case "BF16":
      return bf16BitsToF32(raw as number);
    default:
      return raw;
  }
}

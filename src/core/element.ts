/**
 * Reading and writing single elements of every dtype from JavaScript values, by the cast rules of spec 000
 * §10: a JS number is an f64, so writing one into an integer dtype truncates toward zero and saturates (NaN
 * becomes 0), into F16/BF16 it rounds through f32, into Bool it is "≠ 0" (NaN is true). I64/U64 read and
 * write as `bigint` (a number is accepted and converted the same way).
 *
 * @module
 */
import { DTypeError, OptionError } from "./errors.ts";
import { describe } from "./options.ts";
import type { DTypeInfo, TypedArray } from "./dtype.ts";
import { bf16BitsToF32, f16BitsToF32 } from "./convert.ts";
import { encodeValue } from "./cast_rules.ts";

/** A JS value an element reads as: a number, or a bigint for I64/U64. */
export type ElementValue = number | bigint;

/** The value stored for `value` in an element of `info` (raw bits for F16 and BF16), by the cast rules. */
export function encodeElement(info: DTypeInfo, value: ElementValue | boolean, op: string): number | bigint {
  if (info.isQuantized) {
    throw new DTypeError(op, `${info.name} elements cannot be written one at a time; use quantize()`);
  }
  const kind = typeof value;
  if (kind !== "number" && kind !== "bigint" && kind !== "boolean") {
    throw new OptionError(op, `values must be numbers, bigints or booleans, got ${describe(value)}`);
  }
  return encodeValue(info.name, value);
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

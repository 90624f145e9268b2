/**
 * The per-element cast rules of spec 000 §10 as scalar functions (see `src/kernels/cast.ts` for the rules in
 * words): a normalized source element (`Scalar`) and its stored representation in each plain dtype. The
 * reference cast kernel applies them element by element; `encodeValue` applies them to one JavaScript value
 * (for `Tensor.set`, `from` and `full`). Plain functions: no FFI, no memory.
 *
 * @module
 */
import { f32Bits, f32BitsToBf16Bits, f32BitsToF16Bits, f32FromBits } from "./convert.ts";

/** A source element, normalized: an f32 bit pattern, an f64 (value and bits), or an exact integer. */
export type Scalar =
  | { readonly kind: "f32"; readonly bits: number }
  | { readonly kind: "f64"; readonly value: number; readonly hi: number; readonly lo: number }
  | { readonly kind: "int"; readonly value: bigint };

/**
 * `value` rounded once to `precision` significant bits, to nearest with ties to even (exact as a number for
 * precision ≤ 53).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { roundInteger } from "./cast_rules.ts";
 * assert.ok(roundInteger(16777217n, 24) === 16777216 && roundInteger(16777219n, 24) === 16777220);
 * ```
 */
export function roundInteger(value: bigint, precision: number): number {
  const negative = value < 0n;
  const magnitude = negative ? -value : value;
  const length = magnitude.toString(2).length;
  if (magnitude === 0n || length <= precision) return Number(value);
  const shift = BigInt(length - precision);
  let q = magnitude >> shift;
  const rest = magnitude - (q << shift);
  const half = 1n << (shift - 1n);
  if (rest > half || (rest === half && (q & 1n) === 1n)) q += 1n;
  const rounded = Number(q) * 2 ** Number(shift);
  return negative ? -rounded : rounded;
}

function isNaNBits32(bits: number): boolean {
  return (bits & 0x7fffffff) > 0x7f800000;
}

function isNaNBits64(hi: number, lo: number): boolean {
  const top = hi & 0x7fffffff;
  return top > 0x7ff00000 || (top === 0x7ff00000 && lo !== 0);
}

/** f64 → f32 bits: round to nearest even; NaN keeps its top 23 payload bits and is made quiet. */
function f64ToF32Bits(s: { value: number; hi: number; lo: number }): number {
  if (!isNaNBits64(s.hi, s.lo)) return f32Bits(s.value);
  return ((s.hi & 0x80000000) | 0x7fc00000 | ((s.hi & 0xfffff) << 3) | (s.lo >>> 29)) >>> 0;
}

/** f32 bits → f64 as [hi, lo] words: exact; NaN payload shifted left 29 with the quiet bit set. */
export function f32BitsToF64Words(bits: number): [number, number] {
  if (!isNaNBits32(bits)) return f64Words(f32FromBits(bits));
  const mant = bits & 0x7fffff;
  return [((bits & 0x80000000) | 0x7ff80000 | (mant >>> 3)) >>> 0, ((mant & 7) << 29) >>> 0];
}

/** The f32 bits of a float scalar (f64 rounds once). */
export function toF32Bits(s: Scalar): number {
  if (s.kind === "f32") return s.bits;
  if (s.kind === "f64") return f64ToF32Bits(s);
  throw new Error("unreachable: an integer scalar has no f32 bits");
}

/** The numeric value of a float scalar (NaN for NaN). */
function floatValue(s: Scalar): number {
  if (s.kind === "f32") return f32FromBits(s.bits);
  if (s.kind === "f64") return s.value;
  return Number(s.value);
}

const INT_BITS: Record<string, [bits: number, signed: boolean]> = {
  U8: [8, false],
  I8: [8, true],
  U16: [16, false],
  I16: [16, true],
  I32: [32, true],
  I64: [64, true],
  U32: [32, false],
  U64: [64, false],
};

/** Truncates toward zero and saturates to a `bits`-bit integer range; NaN → 0. */
function saturate(value: number, bits: number, signed: boolean): bigint {
  if (Number.isNaN(value)) return 0n;
  const low = signed ? -(2n ** BigInt(bits - 1)) : 0n;
  const high = signed ? 2n ** BigInt(bits - 1) - 1n : 2n ** BigInt(bits) - 1n;
  if (value === Infinity) return high;
  if (value === -Infinity) return low;
  const t = BigInt(Math.trunc(value));
  return t < low ? low : t > high ? high : t;
}

const f64Scratch = new Float64Array(1);
const f64ScratchWords = new Uint32Array(f64Scratch.buffer);

/** The words [hi, lo] of an f64 given as a number. */
export function f64Words(value: number): [number, number] {
  f64Scratch[0] = value;
  return [f64ScratchWords[1], f64ScratchWords[0]];
}

/**
 * The stored representation of scalar `s` in dtype `name` by the cast rules: f32 bits for F32, f16/bf16 bits
 * for F16/BF16, the integer (a bigint for 64-bit types) for the others. Not for F64, whose words carry NaN
 * payloads.
 */
export function storedValue(name: string, s: Scalar): number | bigint {
  switch (name) {
    case "F32":
      return s.kind === "int" ? f32Bits(roundInteger(s.value, 24)) : toF32Bits(s);
    case "F16":
      return s.kind === "int" ? intToF16Bits(s.value) : f32BitsToF16Bits(toF32Bits(s));
    case "BF16":
      // Rounded once to 8 bits, the value is a bfloat16 exactly: taking the top half only drops zeros.
      return s.kind === "int" ? f32Bits(roundInteger(s.value, 8)) >>> 16 : f32BitsToBf16Bits(toF32Bits(s));
    case "Bool": {
      const truthy = s.kind === "int" ? s.value !== 0n : floatValue(s) !== 0 || Number.isNaN(floatValue(s));
      return truthy ? 1 : 0;
    }
    default: {
      const [width, signed] = INT_BITS[name];
      const wide = s.kind === "int"
        ? (signed ? BigInt.asIntN(width, s.value) : BigInt.asUintN(width, s.value))
        : saturate(floatValue(s), width, signed);
      return width === 64 ? wide : Number(wide);
    }
  }
}

/**
 * The stored representation of a JavaScript value in dtype `name`, by the same rules as a cast: a number is
 * an f64 (so it truncates and saturates into integers and rounds through f32 into F16/BF16), a bigint an
 * integer (wrapping into integers, rounding once into floats), a boolean 0 or 1. F32 and F64 come back as
 * numbers, F16/BF16 as their bits, I64/U64 as bigints.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { encodeValue } from "./cast_rules.ts";
 * assert.equal(encodeValue("I8", 300.7), 127);
 * assert.equal(encodeValue("U8", -1n), 255);
 * assert.equal(encodeValue("F16", 1), 0x3c00);
 * assert.equal(encodeValue("F32", 2n ** 24n + 1n), 2 ** 24);
 * ```
 */
export function encodeValue(name: string, value: number | bigint | boolean): number | bigint {
  const s: Scalar = typeof value === "bigint"
    ? { kind: "int", value }
    : typeof value === "boolean"
    ? { kind: "int", value: value ? 1n : 0n }
    : { kind: "f64", value, hi: 0, lo: 0 };
  if (name === "F64") return s.kind === "int" ? roundInteger(s.value, 53) : s.value;
  if (name === "F32") return s.kind === "int" ? roundInteger(s.value, 24) : Math.fround(s.value);
  if (s.kind === "f64") {
    [scratchScalar.hi, scratchScalar.lo] = f64Words(s.value);
    scratchScalar.value = s.value;
    return storedValue(name, scratchScalar);
  }
  return storedValue(name, s);
}

const scratchScalar = { kind: "f64" as const, value: 0, hi: 0, lo: 0 };

/** An integer rounded once to binary16: 11 significant bits, infinite from 65520 up (ties to even). */
function intToF16Bits(value: bigint): number {
  const rounded = roundInteger(value, 11);
  if (Math.abs(rounded) >= 65536) return rounded < 0 ? 0xfc00 : 0x7c00;
  return f32BitsToF16Bits(f32Bits(rounded));
}

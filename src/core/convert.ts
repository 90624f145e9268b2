/**
 * Scalar conversions between f32 and the two 16-bit float formats, exactly as spec 000 §10 writes them:
 * integer operations on the f32 bits, round to nearest with ties to even, NaN payloads kept as the section
 * says. The native bulk conversions (`zig/kernels/movement.zig`) are tested bit for bit against these.
 *
 * The `...Bits` functions take and return raw bit patterns (unsigned integers), so NaN payloads survive; the
 * others take or return JavaScript numbers (a JS number cannot carry a NaN payload through every runtime).
 *
 * @module
 */

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/**
 * The bits of `x` rounded to f32 (to nearest even), as an unsigned integer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { f32Bits } from "./convert.ts";
 * assert.ok(f32Bits(1) === 0x3f800000 && f32Bits(-0) === 0x80000000);
 * ```
 */
export function f32Bits(x: number): number {
  scratchF32[0] = x;
  return scratchU32[0];
}

/**
 * The f32 value of a bit pattern (a NaN pattern gives NaN, without its payload).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { f32FromBits } from "./convert.ts";
 * assert.ok(f32FromBits(0x40490fdb) === Math.fround(Math.PI));
 * ```
 */
export function f32FromBits(bits: number): number {
  scratchU32[0] = bits;
  return scratchF32[0];
}

/**
 * f32 bits → binary16 bits (§10): NaN keeps the sign and the top nine payload bits with the quiet bit set;
 * |x| ≥ 65520 is infinite; normals round by `(m + 0xFFF + ((m >> 13) & 1)) >> 13`; |x| ≤ 2^−25 is zero;
 * subnormals shift the mantissa and round half to even.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { f32BitsToF16Bits } from "./convert.ts";
 * assert.ok(f32BitsToF16Bits(0x3f800000) === 0x3c00);   // 1
 * assert.ok(f32BitsToF16Bits(0x477ff000) === 0x7c00);   // 65520 ties to even: infinity
 * assert.ok(f32BitsToF16Bits(0x7f800001) === 0x7e00);   // a signalling NaN comes back quiet
 * ```
 */
export function f32BitsToF16Bits(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  const a = bits & 0x7fffffff;
  if (a > 0x7f800000) return sign | 0x7e00 | ((a >>> 13) & 0x1ff);
  if (a === 0x7f800000 || a >= 0x477ff000) return sign | 0x7c00;
  if (a >= 0x38800000) {
    const m = a - (112 << 23);
    return sign | ((m + 0xfff + ((m >>> 13) & 1)) >>> 13);
  }
  if (a <= 0x33000000) return sign;
  const e = a >>> 23;
  const mant = (a & 0x7fffff) | 0x800000;
  const shift = 126 - e;
  let r = mant >>> shift;
  const rem = mant & ((1 << shift) - 1);
  const half = 1 << (shift - 1);
  if (rem > half || (rem === half && (r & 1) === 1)) r += 1;
  return sign | r;
}

/**
 * An f32 value (a number is rounded to f32 first) → binary16 bits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { f32ToF16Bits } from "./convert.ts";
 * assert.ok(f32ToF16Bits(1.5) === 0x3e00 && f32ToF16Bits(-Infinity) === 0xfc00);
 * ```
 */
export function f32ToF16Bits(x: number): number {
  return f32BitsToF16Bits(f32Bits(x));
}

/**
 * binary16 bits → f32 bits, exact (§10): subnormals are man · 2^−24; a NaN keeps its payload shifted left
 * 13 with the quiet bit forced.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { f16BitsToF32Bits } from "./convert.ts";
 * assert.ok(f16BitsToF32Bits(0x3c00) === 0x3f800000);
 * assert.ok(f16BitsToF32Bits(0x7c01) === 0x7fc02000);
 * ```
 */
export function f16BitsToF32Bits(h: number): number {
  const sign = (h & 0x8000) << 16;
  const e = (h >>> 10) & 0x1f;
  const man = h & 0x3ff;
  if (e === 0x1f) return (man === 0 ? sign | 0x7f800000 : sign | 0x7fc00000 | (man << 13)) >>> 0;
  if (e === 0) return (sign | f32Bits(man * 2 ** -24)) >>> 0;
  return (sign | ((e + 112) << 23) | (man << 13)) >>> 0;
}

/**
 * binary16 bits → its value as a number (exact).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { f16BitsToF32 } from "./convert.ts";
 * assert.ok(f16BitsToF32(0x3555) === 0.333251953125 && f16BitsToF32(0x0001) === 2 ** -24);
 * ```
 */
export function f16BitsToF32(h: number): number {
  return f32FromBits(f16BitsToF32Bits(h));
}

/**
 * f32 bits → bfloat16 bits (§10): NaN → `(bits >> 16) | 0x40`, otherwise
 * `(bits + 0x7FFF + ((bits >> 16) & 1)) >> 16`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { f32BitsToBf16Bits } from "./convert.ts";
 * assert.ok(f32BitsToBf16Bits(0x3f808000) === 0x3f80);  // a tie goes to even
 * assert.ok(f32BitsToBf16Bits(0x7f800001) === 0x7fc0);  // NaN made quiet
 * ```
 */
export function f32BitsToBf16Bits(bits: number): number {
  if ((bits & 0x7fffffff) > 0x7f800000) return (bits >>> 16) | 0x40;
  return ((bits >>> 0) + 0x7fff + ((bits >>> 16) & 1)) >>> 16;
}

/**
 * An f32 value (a number is rounded to f32 first) → bfloat16 bits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { f32ToBf16Bits } from "./convert.ts";
 * assert.ok(f32ToBf16Bits(1) === 0x3f80 && f32ToBf16Bits(-2) === 0xc000);
 * ```
 */
export function f32ToBf16Bits(x: number): number {
  return f32BitsToBf16Bits(f32Bits(x));
}

/**
 * bfloat16 bits → f32 bits (§10): `bits << 16`, the quiet bit forced for NaN.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bf16BitsToF32Bits } from "./convert.ts";
 * assert.ok(bf16BitsToF32Bits(0x3f80) === 0x3f800000 && bf16BitsToF32Bits(0x7f81) === 0x7fc10000);
 * ```
 */
export function bf16BitsToF32Bits(b: number): number {
  const bits = (b << 16) >>> 0;
  return (bits & 0x7fffffff) > 0x7f800000 ? (bits | 0x400000) >>> 0 : bits;
}

/**
 * bfloat16 bits → its value as a number (exact).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bf16BitsToF32 } from "./convert.ts";
 * assert.ok(bf16BitsToF32(0x4049) === 3.140625);
 * ```
 */
export function bf16BitsToF32(b: number): number {
  return f32FromBits(bf16BitsToF32Bits(b));
}

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  bf16BitsToF32,
  bf16BitsToF32Bits,
  f16BitsToF32,
  f16BitsToF32Bits,
  f32BitsToBf16Bits,
  f32BitsToF16Bits,
  f32FromBits,
  f32ToBf16Bits,
  f32ToF16Bits,
} from "../src/core/convert.ts";
import { isaReports } from "./helpers/subprocess.ts";
import { decodeBf16, decodeF16, stressPatterns } from "./helpers/movement_operands.ts";
import { Rng } from "./helpers/operands.ts";

const f16round = (Math as { f16round?: (x: number) => number }).f16round;
const Float16 =
  (globalThis as { Float16Array?: new (buffer: ArrayBuffer) => ArrayLike<number> }).Float16Array;

function isNaN16(h: number): boolean {
  return (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
}

function isNaNBf16(b: number): boolean {
  return (b & 0x7f80) === 0x7f80 && (b & 0x7f) !== 0;
}

test("every f16 pattern converts to its value exactly and back to itself; NaNs keep their payload, made quiet", () => {
  const patterns = new Uint16Array(65536).map((_, i) => i);
  const native16 = Float16 === undefined ? null : new Float16(patterns.buffer);
  for (let h = 0; h < 65536; h++) {
    const bits = f16BitsToF32Bits(h);
    const sign = h & 0x8000 ? -1 : 1;
    if (isNaN16(h)) {
      assert.equal(bits, ((h & 0x8000) << 16 | 0x7fc00000 | (h & 0x3ff) << 13) >>> 0, `0x${h.toString(16)}`);
      assert.equal(f32BitsToF16Bits(bits), h | 0x200);
      continue;
    }
    const expected = (h & 0x7fff) === 0x7c00 ? sign * Infinity : sign * decodeF16(h & 0x7fff);
    assert.ok(Object.is(f16BitsToF32(h), expected), `0x${h.toString(16)}: ${f16BitsToF32(h)} vs ${expected}`);
    assert.equal(f32BitsToF16Bits(bits), h);
    if (native16 !== null) assert.ok(Object.is(native16[h], expected));
  }
});

test("every bf16 pattern converts to its value exactly and back to itself; NaNs come back quiet", () => {
  for (let b = 0; b < 65536; b++) {
    const bits = bf16BitsToF32Bits(b);
    if (isNaNBf16(b)) {
      assert.equal(bits, ((b << 16) | 0x400000) >>> 0);
      assert.equal(f32BitsToBf16Bits(bits), b | 0x40);
      continue;
    }
    const sign = b & 0x8000 ? -1 : 1;
    const expected = (b & 0x7fff) === 0x7f80 ? sign * Infinity : sign * decodeBf16(b & 0x7fff);
    assert.ok(Object.is(bf16BitsToF32(b), expected), `0x${b.toString(16)}`);
    assert.equal(f32BitsToBf16Bits(bits), b);
  }
});

/**
 * An independent f32 → 16-bit rounding: a binary search for the two neighbouring values of the format in a
 * table of every positive pattern's value, then the nearer one, the even pattern on a tie. The first
 * non-finite pattern `top` stands for the value one ulp past the largest finite one, so overflow rounds as
 * IEEE 754 says.
 */
function nearestEvenSearch(decode: (bits: number) => number, top: number): (x: number) => number {
  const values = new Float64Array(top + 1);
  for (let k = 0; k < top; k++) values[k] = decode(k);
  values[top] = 2 * values[top - 1] - values[top - 2];
  return (x) => {
    const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
    const a = Math.abs(x);
    if (a >= values[top]) return sign | top;
    let lo = 0;
    let hi = top;
    while (hi - lo > 1) {
      const mid = (lo + hi) >>> 1;
      if (values[mid] <= a) lo = mid;
      else hi = mid;
    }
    if (values[lo] === a) return sign | lo;
    const below = a - values[lo];
    const above = values[hi] - a;
    const k = below < above ? lo : above < below ? hi : (lo & 1) === 0 ? lo : hi;
    return sign | k;
  };
}

test("2 million random and tie-constructed f32 values round to f16 as a nearest-even search and Math.f16round do", () => {
  const search = nearestEvenSearch(decodeF16, 0x7c00);
  const patterns = stressPatterns(new Rng(16), 2_000_000, decodeF16, 0x7c00);
  let nans = 0;
  for (const bits of patterns) {
    const h = f32BitsToF16Bits(bits);
    if ((bits & 0x7fffffff) > 0x7f800000) {
      // A NaN stays a quiet NaN of the same sign whose low nine payload bits are the f32's bits 13 to 21.
      assert.ok(isNaN16(h) && (h & 0x200) !== 0 && (h >>> 15) === bits >>> 31);
      assert.equal(h & 0x1ff, (bits >>> 13) & 0x1ff);
      nans++;
      continue;
    }
    const x = f32FromBits(bits);
    const expected = search(x);
    if (h !== expected) {
      assert.fail(
        `f32 0x${bits.toString(16)} (${x}): 0x${h.toString(16)}, search 0x${expected.toString(16)}`,
      );
    }
    if (f16round !== undefined && !Object.is(f16round(x), f16BitsToF32(h))) {
      assert.fail(`f32 0x${bits.toString(16)}: Math.f16round ${f16round(x)} vs ${f16BitsToF32(h)}`);
    }
  }
  assert.ok(patterns.length >= 2_000_000 && nans > 1000);
});

test("2 million random and tie-constructed f32 values round to bf16 as a nearest-even search does", () => {
  const search = nearestEvenSearch(decodeBf16, 0x7f80);
  const patterns = stressPatterns(new Rng(17), 2_000_000, decodeBf16, 0x7f80);
  for (const bits of patterns) {
    const b = f32BitsToBf16Bits(bits);
    if ((bits & 0x7fffffff) > 0x7f800000) {
      assert.ok(
        isNaNBf16(b) && (b & 0x40) !== 0 && b >>> 15 === bits >>> 31 && (b & 0x3f) === ((bits >>> 16) & 0x3f),
      );
      continue;
    }
    const expected = search(f32FromBits(bits));
    if (b !== expected) {
      assert.fail(`f32 0x${bits.toString(16)}: 0x${b.toString(16)}, search 0x${expected.toString(16)}`);
    }
  }
});

test("hand-picked conversions from the rules of spec 000 section 10", () => {
  assert.equal(f32ToF16Bits(65504), 0x7bff);
  assert.equal(f32ToF16Bits(65519.99), 0x7bff);
  assert.equal(f32ToF16Bits(65520), 0x7c00);
  assert.equal(f32ToF16Bits(2 ** -24), 0x0001);
  assert.equal(f32ToF16Bits(2 ** -25), 0x0000);
  assert.equal(f32ToF16Bits(-(2 ** -25)), 0x8000);
  assert.equal(f32ToF16Bits(3 * 2 ** -25), 0x0002); // 1.5 · 2^-24 ties to even
  assert.equal(f32ToF16Bits(1 + 2 ** -11), 0x3c00);
  assert.equal(f32ToF16Bits(1 + 3 * 2 ** -11), 0x3c02);
  assert.equal(f32ToF16Bits(NaN), 0x7e00);
  assert.equal(f32BitsToF16Bits(0xffbfe000), 0xffff);
  assert.equal(f32ToBf16Bits(1 + 2 ** -8), 0x3f80);
  assert.equal(f32ToBf16Bits(1 + 3 * 2 ** -8), 0x3f82);
  assert.equal(f32BitsToBf16Bits(0x7f7fffff), 0x7f80);
  assert.equal(f32BitsToBf16Bits(0xff800001), 0xffc0);
  assert.equal(bf16BitsToF32Bits(0xff81), 0xffc10000);
  assert.equal(f16BitsToF32(0x7bff), 65504);
  assert.equal(f16BitsToF32(0x03ff), 1023 * 2 ** -24);
});

test("every host variant's bulk f16 and bf16 conversions equal the TypeScript rules bit for bit", () => {
  for (const { isa, report } of isaReports(new URL("./children/movement_child.ts", import.meta.url))) {
    assert.ok(Object.keys(report.mismatches).length === 8, JSON.stringify(report));
    for (const [name, count] of Object.entries(report.mismatches)) assert.equal(count, 0, `${isa} ${name}`);
  }
});

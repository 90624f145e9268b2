// Random strided layouts and value generators for the data movement tests (native blocks and the generator
// are in operands.ts).
import type { Rng } from "./operands.ts";

/** Strides and offset of a random view over `shape`, and the storage length it needs. */
export interface RandomLayout {
  readonly offset: number;
  readonly strides: number[];
  readonly capacity: number;
}

/**
 * A random strided layout of `shape`: axes in a random memory order, random signs, gaps between axes, a
 * random start; with `allowZero`, some axes broadcast (stride 0).
 */
export function randomLayout(random: Rng, shape: readonly number[], allowZero: boolean): RandomLayout {
  const strides = new Array<number>(shape.length).fill(0);
  let step = 1 + random.below(2);
  let low = 0;
  let high = 0;
  for (const axis of random.shuffle([...shape.keys()])) {
    if (allowZero && random.below(5) === 0) continue;
    const negative = random.bool();
    strides[axis] = negative ? -step : step;
    const reach = Math.max(shape[axis] - 1, 0) * step;
    if (negative) low -= reach;
    else high += reach;
    step *= Math.max(shape[axis], 1) + random.below(2);
  }
  const offset = -low + random.below(3);
  return { offset, strides, capacity: offset + high + 1 };
}

/** The number of elements of `shape`. */
export function sizeOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Index of the first differing byte of two views, or -1. */
export function firstDifference(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/**
 * f32 bit patterns that stress a conversion to a 16-bit format: every tie between two neighbouring values of
 * the format (`decode` gives the value of a positive finite pattern, `top` is the first non-finite one), the
 * f32 values one ulp either side of each tie, random patterns, patterns with exponents near the format's
 * range, and NaNs with random payloads; both signs. At least `count` patterns.
 */
export function stressPatterns(
  random: Rng,
  count: number,
  decode: (bits: number) => number,
  top: number,
): Uint32Array {
  const out: number[] = [];
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  for (let k = 0; k < top; k++) {
    const next = k + 1 === top ? 2 * decode(k) - decode(k - 1) : decode(k + 1);
    f32[0] = (decode(k) + next) / 2;
    const tie = u32[0];
    for (const bits of [tie, tie - 1, tie + 1]) out.push(bits >>> 0, (bits | 0x80000000) >>> 0);
  }
  while (out.length < count) {
    const r = random.u32();
    switch (out.length % 4) {
      case 0:
        out.push(r);
        break;
      case 1:
        // Exponents from 2^-30 to 2^20 (around the f16 range), random mantissa and sign.
        out.push(((r & 0x807fffff) | ((97 + random.below(51)) << 23)) >>> 0);
        break;
      case 2:
        // bf16-style near ties: the low 16 bits close to 0x8000.
        out.push(((r & 0xffff0000) | (0x7ffe + random.below(5))) >>> 0);
        break;
      default:
        out.push(random.below(64) === 0 ? ((r | 0x7f800001) >>> 0) : r);
    }
  }
  return Uint32Array.from(out);
}

/** The value of a positive finite binary16 pattern, decoded independently of the §10 code. */
export function decodeF16(h: number): number {
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  return e === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (e - 15);
}

/** The value of a positive finite bfloat16 pattern, decoded independently. */
export function decodeBf16(b: number): number {
  const e = (b >>> 7) & 0xff;
  const m = b & 0x7f;
  return e === 0 ? m * 2 ** -133 : (1 + m / 128) * 2 ** (e - 127);
}

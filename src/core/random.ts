/**
 * Seeded random numbers for `Tensor.rand` and `Tensor.randn`: Marsaglia's xorshift128 on 32-bit words, seeded
 * through an integer hash, so a seed gives the same values in every runtime.
 *
 * @module
 */

import { TensorShapeError } from "./errors.ts";
import { checkInteger } from "./options.ts";

function hash32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

/**
 * A stream of 32-bit words. The seed's low and high words map one to one onto the first two state words
 * (each step a bijection), so distinct seeds give distinct streams; the state is never all zero.
 */
export class Xorshift128 {
  #x: number;
  #y: number;
  #z: number;
  #w: number;

  constructor(low: number, high = 0) {
    this.#x = hash32(low ^ 0x9e3779b9);
    this.#y = hash32(((this.#x + 1) ^ high) >>> 0);
    this.#z = hash32(this.#y + 2);
    this.#w = hash32(this.#z + 3);
  }

  /** The next word, 0 … 2^32 − 1. */
  next(): number {
    const t = this.#x ^ (this.#x << 11);
    this.#x = this.#y;
    this.#y = this.#z;
    this.#z = this.#w;
    this.#w = (this.#w ^ (this.#w >>> 19) ^ (t ^ (t >>> 8))) >>> 0;
    return this.#w;
  }

  /** Uniform in [0, 1) with 24 random bits: exactly representable in f32. */
  uniform(): number {
    return (this.next() >>> 8) / 16777216;
  }
}

/** A seed: an integer from 0 to 2^53 − 1, or a bigint from 0 to 2^64 − 1 (the same value gives the same stream). */
export type Seed = number | bigint;

/**
 * The seed's two 32-bit words; every accepted seed has its own. An `OptionError` for a value that is not an
 * integer (a string, NaN, Infinity, 1.5), a `TensorShapeError` naming the limit for one out of range.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { seedWords } from "./random.ts";
 * assert.deepEqual(seedWords("rand", 2 ** 32 + 5), [5, 1]);
 * assert.deepEqual(seedWords("rand", 2n ** 32n + 5n), [5, 1]);
 * assert.throws(() => seedWords("rand", 1.5));
 * ```
 */
export function seedWords(op: string, seed: unknown): [number, number] {
  if (typeof seed === "bigint") {
    if (seed < 0n || seed >= 2n ** 64n) {
      throw new TensorShapeError(op, `seed must be from 0 to 2^64 − 1 as a bigint, got ${seed}n`);
    }
    return [Number(seed & 0xffffffffn), Number(seed >> 32n)];
  }
  const value = checkInteger(op, "seed", seed, 0, Number.MAX_SAFE_INTEGER);
  return [value % 2 ** 32, Math.floor(value / 2 ** 32)];
}

/** Fills `out` with uniform [0, 1) or standard normal (Box–Muller) values; a random seed when none is given. */
export function randomFill(out: Float32Array, kind: "uniform" | "normal", seed?: Seed): void {
  const [low, high] = seed === undefined
    ? [Math.floor(Math.random() * 2 ** 32), 0]
    : seedWords("random", seed);
  const rng = new Xorshift128(low, high);
  if (kind === "uniform") {
    for (let i = 0; i < out.length; i++) out[i] = rng.uniform();
    return;
  }
  for (let i = 0; i < out.length; i += 2) {
    const u = 1 - rng.uniform();
    const v = rng.uniform();
    const radius = Math.sqrt(-2 * Math.log(u));
    out[i] = radius * Math.cos(2 * Math.PI * v);
    if (i + 1 < out.length) out[i + 1] = radius * Math.sin(2 * Math.PI * v);
  }
}

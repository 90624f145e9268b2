/**
 * Seeded random numbers for `Tensor.rand` and `Tensor.randn`: Marsaglia's xorshift128 on 32-bit words, seeded
 * through an integer hash, so a seed gives the same values in every runtime.
 *
 * @module
 */

function hash32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

/** A stream of 32-bit words. */
export class Xorshift128 {
  #x: number;
  #y: number;
  #z: number;
  #w: number;

  constructor(seed: number) {
    this.#x = hash32(seed ^ 0x9e3779b9) | 1;
    this.#y = hash32(this.#x + 1);
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

/** Fills `out` with uniform [0, 1) or standard normal (Box–Muller) values; a random seed when none is given. */
export function randomFill(out: Float32Array, kind: "uniform" | "normal", seed?: number): void {
  const rng = new Xorshift128(seed ?? Math.floor(Math.random() * 2 ** 32));
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

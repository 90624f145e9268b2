/**
 * Parameter initialisation from one seeded generator (the library's xorshift128), in PyTorch's default
 * distributions: `nn.manualSeed(seed)` makes every module built afterwards the same in every runtime.
 *
 * @module
 */
import { Xorshift128 } from "../core/random.ts";
import { Tensor } from "../tensor.ts";

let generator = new Xorshift128(0);

/**
 * Reseeds the generator that initialises parameters and seeds dropout (PyTorch's `torch.manual_seed`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn } from "@zigtensor/zigtensor";
 * nn.manualSeed(7);
 * using a = new nn.Linear(3, 2);
 * nn.manualSeed(7);
 * using b = new nn.Linear(3, 2);
 * assert.deepEqual([...a.weight.toArray()], [...b.weight.toArray()]);
 * ```
 */
export function manualSeed(seed: number): void {
  generator = new Xorshift128(seed);
}

/** A fresh seed drawn from the generator (for a module's own random stream, e.g. dropout masks). */
export function drawSeed(): number {
  return generator.next();
}

/** A new F32 tensor (no scope owns it) filled by `next` in row-major order. */
function filled(shape: readonly number[], next: () => number): Tensor {
  const t = Tensor.empty(shape);
  const data = t.mutableData() as Float32Array;
  for (let i = 0; i < data.length; i++) data[i] = next();
  return t;
}

/** Uniform on [low, high). */
export function uniform(shape: readonly number[], low: number, high: number): Tensor {
  return filled(shape, () => low + (high - low) * generator.uniform());
}

/** Normal with `mean` and `std` (Box–Muller). */
export function normal(shape: readonly number[], mean = 0, std = 1): Tensor {
  return filled(shape, () => {
    const u = 1 - generator.uniform();
    const v = generator.uniform();
    return mean + std * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  });
}

/** PyTorch's default for Linear and Conv weights and biases (`kaiming_uniform_(a=√5)`): U(±1/√fanIn). */
export function fanInUniform(shape: readonly number[], fanIn: number): Tensor {
  const bound = fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
  return uniform(shape, -bound, bound);
}

/** Xavier/Glorot uniform: U(±√(6/(fanIn + fanOut))). */
export function xavierUniform(shape: readonly number[], fanIn: number, fanOut: number): Tensor {
  const bound = Math.sqrt(6 / (fanIn + fanOut));
  return uniform(shape, -bound, bound);
}

/**
 * Dropout: in training, each element is zeroed with probability `p` and the survivors scaled by `1/(1 − p)`, by
 * a mask drawn from the library's seeded uniform stream (`Tensor.rand`), so a seed gives the same mask in every
 * runtime; the output is `x · mask`, whose recorded product routes the gradient through the same mask.
 *
 * @module
 */
import { OptionError } from "../core/errors.ts";
import { checkBoolean, checkOptions, describe } from "../core/options.ts";
import type { Seed } from "../core/random.ts";
import { DType } from "../core/dtype.ts";
import { shapeOf, Tensor } from "../tensor.ts";
import { tidy } from "../memory/scope.ts";
import { shouldRecord } from "../autograd/record.ts";
import { ge, mul } from "./elementwise.ts";
import { cast } from "./copy.ts";
import { checkF32 } from "./common.ts";

/** Options of `dropout`. */
export interface DropoutOptions {
  /** The probability of zeroing an element, in [0, 1]. @default 0.5 */
  readonly p?: number;
  /** Drop only while training; otherwise `x` itself is returned. @default true */
  readonly training?: boolean;
  /** The seed of the mask (as `Tensor.rand`'s); a random one when absent. */
  readonly seed?: Seed;
}

/**
 * PyTorch's `F.dropout(x, p, training)`: while training, each element is kept with probability `1 − p` (where
 * the seeded uniform draw `u ≥ p`) and scaled by `1/(1 − p)`, the others are 0; `p = 1` gives zeros. When not
 * training, or with `p = 0`, it returns `x` itself (the same handle, as PyTorch returns its input). The
 * gradient is `g · mask`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.ones([1000]);
 * using y = ops.dropout(x, { p: 0.25, seed: 3 });
 * const kept = [...(y.toArray() as Float32Array)].filter((v) => v !== 0);
 * assert.ok(kept.every((v) => Math.abs(v - 4 / 3) < 1e-6) && kept.length > 700 && kept.length < 800);
 * assert.equal(ops.dropout(x, { training: false }), x);
 * ```
 */
export function dropout(x: Tensor, options?: DropoutOptions): Tensor {
  const op = "dropout";
  options = checkOptions(op, options, ["p", "training", "seed"]);
  checkF32(op, x);
  const p = options.p ?? 0.5;
  if (typeof p !== "number" || !(p >= 0 && p <= 1)) {
    throw new OptionError(op, `p must be a probability in [0, 1], got ${describe(options.p)}`);
  }
  const training = checkBoolean(op, "training", options.training, true);
  if (!training || p === 0) return x;
  if (p === 1) return mul(x, 0);
  const run = () => {
    const u = Tensor.rand(shapeOf(x), options.seed === undefined ? {} : { seed: options.seed });
    try {
      return mul(x, mul(cast(ge(u, p), DType.F32), 1 / (1 - p)));
    } finally {
      u.dispose();
    }
  };
  // Without a record nothing needs the mask afterwards: a scope frees it and keeps the result.
  return shouldRecord(x) ? run() : tidy(run);
}

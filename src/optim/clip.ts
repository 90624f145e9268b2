/**
 * Gradient clipping by the global norm, PyTorch's `torch.nn.utils.clip_grad_norm_`.
 *
 * @module
 */
import { GradMode } from "../context.ts";
import { tidy } from "../memory/scope.ts";
import { gradOf, type Tensor } from "../tensor.ts";
import { mul, sum } from "../ops/mod.ts";

/**
 * Scales the gradients of `params` in place so that their joint 2-norm is at most `maxNorm`: each by
 * `maxNorm / (norm + 1e-6)` when that is below 1. Parameters without a gradient are skipped. Returns the norm
 * before clipping.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { optim, Tensor } from "@zigtensor/zigtensor";
 * using w = Tensor.from([3, 4]).withRequiresGrad();
 * w.mul(w).mul(0.5).sum().backward(); // grad = w, norm 5
 * assert.equal(optim.clipGradNorm([w], 1), 5);
 * assert.ok(Math.abs((w.grad!.get(0) as number) - 0.6) < 1e-6);
 * ```
 */
export function clipGradNorm(params: Iterable<Tensor>, maxNorm: number): number {
  if (typeof maxNorm !== "number" || !(maxNorm >= 0)) {
    throw new RangeError(`clipGradNorm: maxNorm must be a number ≥ 0, got ${String(maxNorm)}`);
  }
  const grads: Tensor[] = [];
  for (const p of params) {
    const grad = gradOf(p);
    if (grad !== null) grads.push(grad);
  }
  return GradMode.noGrad(() =>
    tidy(() => {
      let squares = 0;
      for (const g of grads) squares += sum(mul(g, g)).item() as number;
      const norm = Math.sqrt(squares);
      const coefficient = maxNorm / (norm + 1e-6);
      if (coefficient < 1) { for (const g of grads) g.copyFrom(mul(g, coefficient)); }
      return norm;
    })
  );
}

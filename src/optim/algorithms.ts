/**
 * The optimizers: SGD, Adam, AdamW and RMSprop, with PyTorch's hyperparameters, defaults and update order
 * (its single-tensor CPU implementation), each step one fused kernel call per parameter.
 *
 * @module
 */
import { OptimAlgorithm, OptimFlags, type OptimizerStep } from "../kernels/optim.ts";
import { type Hyperparameters, Optimizer, type ParamsInput } from "./optimizer.ts";

/** Throws unless every named option is a finite number ≥ 0 (and `lr` given). */
function checkOptions(op: string, options: Hyperparameters, names: readonly string[]): void {
  for (const name of names) {
    const value = options[name];
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new RangeError(`${op}: ${name} must be a finite number ≥ 0, got ${String(value)}`);
    }
  }
}

/** Options of `SGD`. */
export interface SgdOptions extends Hyperparameters {
  /** @default 1e-3 */
  lr: number;
  /** @default 0 */
  momentum: number;
  /** @default 0 */
  dampening: number;
  /** L2 penalty added to the gradient. @default 0 */
  weightDecay: number;
  /** @default false */
  nesterov: boolean;
}

/**
 * Stochastic gradient descent, PyTorch's `torch.optim.SGD`: `g += wd·p`; with momentum `b = g` at the first
 * step and `b = μ·b + (1 − dampening)·g` after, `g = nesterov ? g + μ·b : b`; then `p −= lr·g`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { optim, Tensor } from "@zigtensor/zigtensor";
 * using w = Tensor.from([1, 2]).withRequiresGrad();
 * w.mul(w).sum().backward(); // grad = 2w
 * using opt = new optim.SGD([w], { lr: 0.25 });
 * opt.step();
 * assert.deepEqual([...w.toArray()], [0.5, 1]);
 * ```
 */
export class SGD extends Optimizer<SgdOptions> {
  constructor(params: ParamsInput<SgdOptions>, options: Partial<SgdOptions> = {}) {
    super("SGD", params, {
      lr: 1e-3,
      momentum: 0,
      dampening: 0,
      weightDecay: 0,
      nesterov: false,
      ...options,
    });
    for (const g of this.paramGroups) {
      checkOptions("SGD", g.options, ["lr", "momentum", "dampening", "weightDecay"]);
      if (g.options.nesterov && (g.options.momentum <= 0 || g.options.dampening !== 0)) {
        throw new RangeError("SGD: Nesterov momentum needs a momentum > 0 and zero dampening");
      }
    }
  }

  protected buffers(o: SgdOptions): string[] {
    return o.momentum !== 0 ? ["momentumBuffer"] : [];
  }

  protected update(o: SgdOptions, step: number): OptimizerStep {
    const flags = (o.weightDecay !== 0 ? OptimFlags.WeightDecay : 0) |
      (o.momentum !== 0 ? OptimFlags.MomentumOrDecoupled : 0) |
      (o.nesterov ? OptimFlags.Variant : 0) | (step === 1 ? OptimFlags.First : 0);
    return {
      algorithm: OptimAlgorithm.SGD,
      flags,
      coefficients: [o.lr, o.weightDecay, o.momentum, 1 - o.dampening],
    };
  }
}

/** Options of `Adam` and `AdamW`. */
export interface AdamOptions extends Hyperparameters {
  /** @default 1e-3 */
  lr: number;
  /** β1. @default 0.9 */
  beta1: number;
  /** β2. @default 0.999 */
  beta2: number;
  /** @default 1e-8 */
  eps: number;
  /** Adam: L2 penalty added to the gradient; AdamW: decoupled decay. @default 0 (Adam), 0.01 (AdamW) */
  weightDecay: number;
  /** Divide by the running maximum of the second moment. @default false */
  amsgrad: boolean;
}

/** Adam and AdamW: one class, the decay decoupled or not. */
class AdamBase extends Optimizer<AdamOptions> {
  readonly #decoupled: boolean;

  constructor(name: string, decoupled: boolean, params: ParamsInput<AdamOptions>, options: AdamOptions) {
    super(name, params, options);
    this.#decoupled = decoupled;
    for (const g of this.paramGroups) {
      checkOptions(name, g.options, ["lr", "beta1", "beta2", "eps", "weightDecay"]);
      if (g.options.beta1 >= 1 || g.options.beta2 >= 1) {
        throw new RangeError(`${name}: beta1 and beta2 must be below 1`);
      }
    }
  }

  protected buffers(o: AdamOptions): string[] {
    return o.amsgrad ? ["expAvg", "expAvgSq", "maxExpAvgSq"] : ["expAvg", "expAvgSq"];
  }

  protected update(o: AdamOptions, step: number): OptimizerStep {
    const decay = o.weightDecay !== 0;
    const flags = (decay && !this.#decoupled ? OptimFlags.WeightDecay : 0) |
      (decay && this.#decoupled ? OptimFlags.MomentumOrDecoupled : 0) | (o.amsgrad ? OptimFlags.Variant : 0);
    const correction1 = 1 - o.beta1 ** step;
    const correction2 = 1 - o.beta2 ** step;
    return {
      algorithm: OptimAlgorithm.Adam,
      flags,
      coefficients: [
        o.lr / correction1,
        o.weightDecay,
        1 - o.beta1,
        o.beta2,
        1 - o.beta2,
        o.eps,
        Math.sqrt(correction2),
        1 - o.lr * o.weightDecay,
      ],
    };
  }
}

/**
 * Adam, PyTorch's `torch.optim.Adam`: `g += wd·p`, `m += (1 − β1)(g − m)`, `v = β2·v + (1 − β2)·g²`,
 * `p −= lr/(1 − β1^t) · m / (√v / √(1 − β2^t) + eps)` (with amsgrad, v's running maximum in the root).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { optim, Tensor } from "@zigtensor/zigtensor";
 * using w = Tensor.from([1, -1]).withRequiresGrad();
 * w.mul(3).sum().backward();
 * using opt = new optim.Adam([w], { lr: 0.1 });
 * opt.step(); // the first step moves each weight by about lr against its gradient's sign
 * assert.ok(Math.abs((w.get(0) as number) - 0.9) < 1e-6 && Math.abs((w.get(1) as number) + 1.1) < 1e-6);
 * ```
 */
export class Adam extends AdamBase {
  constructor(params: ParamsInput<AdamOptions>, options: Partial<AdamOptions> = {}) {
    super("Adam", false, params, {
      lr: 1e-3,
      beta1: 0.9,
      beta2: 0.999,
      eps: 1e-8,
      weightDecay: 0,
      amsgrad: false,
      ...options,
    });
  }
}

/**
 * AdamW, PyTorch's `torch.optim.AdamW`: Adam with the weight decay decoupled, `p *= 1 − lr·wd` before the
 * update (default `weightDecay` 0.01).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { optim, Tensor } from "@zigtensor/zigtensor";
 * using w = Tensor.from([2]).withRequiresGrad();
 * w.mul(0).sum().backward(); // a zero gradient: only the decay acts
 * using opt = new optim.AdamW([w], { lr: 0.5, weightDecay: 0.1 });
 * opt.step();
 * assert.equal(w.item(), Math.fround(2 * Math.fround(0.95)));
 * ```
 */
export class AdamW extends AdamBase {
  constructor(params: ParamsInput<AdamOptions>, options: Partial<AdamOptions> = {}) {
    super("AdamW", true, params, {
      lr: 1e-3,
      beta1: 0.9,
      beta2: 0.999,
      eps: 1e-8,
      weightDecay: 0.01,
      amsgrad: false,
      ...options,
    });
  }
}

/** Options of `RMSprop`. */
export interface RmspropOptions extends Hyperparameters {
  /** @default 1e-2 */
  lr: number;
  /** Smoothing constant. @default 0.99 */
  alpha: number;
  /** @default 1e-8 */
  eps: number;
  /** @default 0 */
  weightDecay: number;
  /** @default 0 */
  momentum: number;
  /** Normalise by the estimated variance instead of the second moment. @default false */
  centered: boolean;
}

/**
 * RMSprop, PyTorch's `torch.optim.RMSprop`: `g += wd·p`, `s = α·s + (1 − α)·g²`, centered `a += (1 − α)(g − a)`
 * and `d = √(s − a²) + eps` (else `√s + eps`); with momentum `b = μ·b + g/d`, `p −= lr·b`, else `p −= lr·g/d`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { optim, Tensor } from "@zigtensor/zigtensor";
 * using w = Tensor.from([1]).withRequiresGrad();
 * w.mul(2).sum().backward();
 * using opt = new optim.RMSprop([w], { lr: 0.01, alpha: 0.75, eps: 0 });
 * opt.step(); // s = 0.25·4 = 1, so the step is lr·2/1
 * assert.equal(w.item(), Math.fround(1 - 0.02));
 * ```
 */
export class RMSprop extends Optimizer<RmspropOptions> {
  constructor(params: ParamsInput<RmspropOptions>, options: Partial<RmspropOptions> = {}) {
    super("RMSprop", params, {
      lr: 1e-2,
      alpha: 0.99,
      eps: 1e-8,
      weightDecay: 0,
      momentum: 0,
      centered: false,
      ...options,
    });
    for (const g of this.paramGroups) {
      checkOptions("RMSprop", g.options, ["lr", "alpha", "eps", "weightDecay", "momentum"]);
    }
  }

  protected buffers(o: RmspropOptions): (string | null)[] {
    return ["squareAvg", o.momentum > 0 ? "momentumBuffer" : null, o.centered ? "gradAvg" : null];
  }

  protected update(o: RmspropOptions): OptimizerStep {
    const flags = (o.weightDecay !== 0 ? OptimFlags.WeightDecay : 0) |
      (o.momentum > 0 ? OptimFlags.MomentumOrDecoupled : 0) | (o.centered ? OptimFlags.Variant : 0);
    return {
      algorithm: OptimAlgorithm.RMSprop,
      flags,
      coefficients: [o.lr, o.weightDecay, o.alpha, 1 - o.alpha, o.eps, o.momentum],
    };
  }
}

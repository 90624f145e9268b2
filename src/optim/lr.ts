/**
 * Learning-rate schedules, PyTorch's `torch.optim.lr_scheduler`: each sets `lr` in every parameter group of
 * its optimizer from the group's initial rate and the schedule's step count. Call `step()` once per epoch (or
 * per batch for `OneCycleLR`), after `optimizer.step()`.
 *
 * @module
 */
import type { Optimizer } from "./optimizer.ts";

/** The base of every schedule: remembers each group's initial rate and counts steps. */
export abstract class LRScheduler {
  /** The steps taken so far (PyTorch's `last_epoch`). */
  lastEpoch = 0;
  /** Each group's rate when the schedule was made. */
  readonly baseLrs: readonly number[];

  /** A schedule of `optimizer`'s learning rates. */
  protected constructor(readonly optimizer: Optimizer) {
    this.baseLrs = optimizer.paramGroups.map((g) => Number(g.options.initialLr ?? g.options.lr));
    optimizer.paramGroups.forEach((g, i) => g.options.initialLr = this.baseLrs[i]);
  }

  /** The rate of group `i` after `epoch` steps. */
  protected abstract rate(baseLr: number, epoch: number, group: number): number;

  /** Applies the rates of the current step count (subclasses call it at the end of their constructor). */
  protected apply(): void {
    this.optimizer.paramGroups.forEach((g, i) =>
      g.options.lr = this.rate(this.baseLrs[i], this.lastEpoch, i)
    );
  }

  /** Advances one step and sets the new rates. */
  step(): void {
    this.lastEpoch++;
    this.apply();
  }

  /** The rates set last, one per group. */
  getLastLr(): number[] {
    return this.optimizer.paramGroups.map((g) => g.options.lr as number);
  }

  /** The schedule's state: its step count. */
  stateDict(): { lastEpoch: number } {
    return { lastEpoch: this.lastEpoch };
  }

  /** Restores the step count and the rates it gives. */
  loadStateDict(state: { lastEpoch: number }): void {
    this.lastEpoch = state.lastEpoch;
    this.apply();
  }
}

function positiveInteger(op: string, name: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${op}: ${name} must be an integer ≥ 1, got ${String(value)}`);
  }
}

/**
 * Multiplies the rate by `gamma` every `stepSize` steps.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { optim, Tensor } from "@zigtensor/zigtensor";
 * using w = Tensor.zeros([1]).withRequiresGrad();
 * using opt = new optim.SGD([w], { lr: 1 });
 * const schedule = new optim.lr.StepLR(opt, { stepSize: 2, gamma: 0.5 });
 * for (let i = 0; i < 4; i++) schedule.step();
 * assert.deepEqual(schedule.getLastLr(), [0.25]);
 * ```
 */
export class StepLR extends LRScheduler {
  readonly #stepSize: number;
  readonly #gamma: number;

  /** Multiplies the rates by `gamma` every `stepSize` steps. */
  constructor(optimizer: Optimizer, options: { stepSize: number; gamma?: number }) {
    super(optimizer);
    positiveInteger("StepLR", "stepSize", options.stepSize);
    this.#stepSize = options.stepSize;
    this.#gamma = options.gamma ?? 0.1;
    this.apply();
  }

  /** The rate of a group whose initial rate is `baseLr`, after `epoch` steps. */
  protected rate(baseLr: number, epoch: number): number {
    return baseLr * this.#gamma ** Math.floor(epoch / this.#stepSize);
  }
}

/**
 * Cosine annealing from the initial rate to `etaMin` over `tMax` steps (then back up, as PyTorch's closed form).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { optim, Tensor } from "@zigtensor/zigtensor";
 * using w = Tensor.zeros([1]).withRequiresGrad();
 * using opt = new optim.SGD([w], { lr: 1 });
 * const schedule = new optim.lr.CosineAnnealingLR(opt, { tMax: 4 });
 * schedule.step();
 * schedule.step();
 * assert.ok(Math.abs(schedule.getLastLr()[0] - 0.5) < 1e-12);
 * ```
 */
export class CosineAnnealingLR extends LRScheduler {
  readonly #tMax: number;
  readonly #etaMin: number;

  /** Anneals the rates to `etaMin` over `tMax` steps along a cosine. */
  constructor(optimizer: Optimizer, options: { tMax: number; etaMin?: number }) {
    super(optimizer);
    positiveInteger("CosineAnnealingLR", "tMax", options.tMax);
    this.#tMax = options.tMax;
    this.#etaMin = options.etaMin ?? 0;
    this.apply();
  }

  /** The rate of a group whose initial rate is `baseLr`, after `epoch` steps. */
  protected rate(baseLr: number, epoch: number): number {
    return this.#etaMin + (baseLr - this.#etaMin) * (1 + Math.cos(Math.PI * epoch / this.#tMax)) / 2;
  }
}

/**
 * Linear warm-up (PyTorch's `LinearLR`): the rate goes from `startFactor`·lr to `endFactor`·lr over
 * `totalIters` steps, then stays.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { optim, Tensor } from "@zigtensor/zigtensor";
 * using w = Tensor.zeros([1]).withRequiresGrad();
 * using opt = new optim.SGD([w], { lr: 1 });
 * const warmup = new optim.lr.LinearLR(opt, { startFactor: 0.25, totalIters: 3 });
 * assert.deepEqual(warmup.getLastLr(), [0.25]);
 * for (let i = 0; i < 5; i++) warmup.step();
 * assert.deepEqual(warmup.getLastLr(), [1]);
 * ```
 */
export class LinearLR extends LRScheduler {
  readonly #start: number;
  readonly #end: number;
  readonly #total: number;

  /** Scales the rates linearly from `startFactor` to `endFactor` over `totalIters` steps. */
  constructor(
    optimizer: Optimizer,
    options: { startFactor?: number; endFactor?: number; totalIters?: number } = {},
  ) {
    super(optimizer);
    this.#start = options.startFactor ?? 1 / 3;
    this.#end = options.endFactor ?? 1;
    this.#total = options.totalIters ?? 5;
    positiveInteger("LinearLR", "totalIters", this.#total);
    if (!(this.#start > 0 && this.#start <= 1 && this.#end >= 0 && this.#end <= 1)) {
      throw new RangeError("LinearLR: startFactor must be in (0, 1] and endFactor in [0, 1]");
    }
    this.apply();
  }

  /** The rate of a group whose initial rate is `baseLr`, after `epoch` steps. */
  protected rate(baseLr: number, epoch: number): number {
    const t = Math.min(epoch, this.#total);
    return baseLr * (this.#start + (this.#end - this.#start) * t / this.#total);
  }
}

/** Options of `OneCycleLR`. */
export interface OneCycleOptions {
  /** The peak rate (one per group, or one for all). */
  readonly maxLr: number | readonly number[];
  /** The number of steps in the cycle. */
  readonly totalSteps: number;
  /** The fraction of the cycle spent increasing the rate. @default 0.3 */
  readonly pctStart?: number;
  /** How the rate falls after its peak. @default "cos" */
  readonly annealStrategy?: "cos" | "linear";
  /** The initial rate is maxLr / divFactor. @default 25 */
  readonly divFactor?: number;
  /** The final rate is the initial rate / finalDivFactor. @default 1e4 */
  readonly finalDivFactor?: number;
  /** Cycle `momentum` (SGD, RMSprop) or `beta1` (Adam) inversely between the two bounds. @default true */
  readonly cycleMomentum?: boolean;
  /** The lower momentum (or beta1) bound. @default 0.85 */
  readonly baseMomentum?: number;
  /** The upper momentum (or beta1) bound. @default 0.95 */
  readonly maxMomentum?: number;
}

/**
 * The one-cycle policy (PyTorch's `OneCycleLR`, two phases): the rate rises from maxLr/divFactor to maxLr over
 * `pctStart` of the steps, then anneals to the initial rate / finalDivFactor; momentum moves the other way.
 * Call `step()` after every batch.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { optim, Tensor } from "@zigtensor/zigtensor";
 * using w = Tensor.zeros([1]).withRequiresGrad();
 * using opt = new optim.Adam([w]);
 * const schedule = new optim.lr.OneCycleLR(opt, { maxLr: 1, totalSteps: 12, pctStart: 0.5 });
 * assert.ok(Math.abs(schedule.getLastLr()[0] - 1 / 25) < 1e-12); // starts at maxLr / divFactor
 * for (let i = 0; i < 5; i++) schedule.step();
 * assert.ok(Math.abs(schedule.getLastLr()[0] - 1) < 1e-12 && opt.paramGroups[0].options.beta1 === 0.85);
 * ```
 */
export class OneCycleLR extends LRScheduler {
  readonly #options: Required<Omit<OneCycleOptions, "maxLr">>;
  readonly #maxLrs: readonly number[];
  readonly #momentumKey: "beta1" | "momentum" | null;

  /** One cycle of `options.totalSteps` steps up to `maxLr` and down again. */
  constructor(optimizer: Optimizer, options: OneCycleOptions) {
    const groups = optimizer.paramGroups.length;
    const maxLrs = typeof options.maxLr === "number" ? Array(groups).fill(options.maxLr) : [...options.maxLr];
    if (maxLrs.length !== groups) {
      throw new RangeError(`OneCycleLR: ${maxLrs.length} maxLr values for ${groups} parameter groups`);
    }
    const divFactor = options.divFactor ?? 25;
    optimizer.paramGroups.forEach((g, i) => g.options.initialLr = maxLrs[i] / divFactor);
    super(optimizer);
    positiveInteger("OneCycleLR", "totalSteps", options.totalSteps);
    this.#maxLrs = maxLrs;
    this.#options = {
      totalSteps: options.totalSteps,
      pctStart: options.pctStart ?? 0.3,
      annealStrategy: options.annealStrategy ?? "cos",
      divFactor,
      finalDivFactor: options.finalDivFactor ?? 1e4,
      cycleMomentum: options.cycleMomentum ?? true,
      baseMomentum: options.baseMomentum ?? 0.85,
      maxMomentum: options.maxMomentum ?? 0.95,
    };
    const first = optimizer.paramGroups[0]?.options ?? {};
    this.#momentumKey = !this.#options.cycleMomentum
      ? null
      : "beta1" in first
      ? "beta1"
      : "momentum" in first
      ? "momentum"
      : null;
    this.apply();
  }

  /** The phase of step `epoch` (warm-up 0 or annealing 1) and how far into it, from 0 to 1. */
  #phase(epoch: number): { phase: 0 | 1; pct: number } {
    const end1 = this.#options.pctStart * this.#options.totalSteps - 1;
    const end2 = this.#options.totalSteps - 1;
    if (epoch <= end1) return { phase: 0, pct: epoch / end1 };
    return { phase: 1, pct: (epoch - end1) / (end2 - end1) };
  }

  #anneal(start: number, end: number, pct: number): number {
    return this.#options.annealStrategy === "cos"
      ? end + (start - end) / 2 * (Math.cos(Math.PI * pct) + 1)
      : (end - start) * pct + start;
  }

  /** The rate of a group whose initial rate is `baseLr`, after `epoch` steps. */
  protected rate(baseLr: number, epoch: number, group: number): number {
    if (epoch > this.#options.totalSteps) {
      throw new RangeError(`OneCycleLR: stepped ${epoch} times, past totalSteps ${this.#options.totalSteps}`);
    }
    const { phase, pct } = this.#phase(epoch);
    const maxLr = this.#maxLrs[group];
    const minLr = baseLr / this.#options.finalDivFactor;
    if (this.#momentumKey !== null) {
      const { baseMomentum, maxMomentum } = this.#options;
      this.optimizer.paramGroups[group].options[this.#momentumKey] = phase === 0
        ? this.#anneal(maxMomentum, baseMomentum, pct)
        : this.#anneal(baseMomentum, maxMomentum, pct);
    }
    return phase === 0 ? this.#anneal(baseLr, maxLr, pct) : this.#anneal(maxLr, minLr, pct);
  }
}

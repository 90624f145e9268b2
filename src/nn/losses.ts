/**
 * The loss modules over `ops`' losses (`src/ops/losses.ts`): CrossEntropyLoss, NLLLoss, MSELoss, L1Loss,
 * SmoothL1Loss, BCELoss, BCEWithLogitsLoss and KLDivLoss. A weight given to a loss is copied into a buffer
 * named as PyTorch names it (`weight`, `pos_weight`), so state dicts match.
 *
 * @module
 */
import type { Tensor } from "../tensor.ts";
import * as ops from "../ops/mod.ts";
import type {
  CrossEntropyOptions,
  KlDivOptions,
  LossOptions,
  LossReduction,
  NllLossOptions,
} from "../ops/losses.ts";
import { Module } from "./module.ts";

/**
 * Cross-entropy of logits against class indices or probabilities (`ops.crossEntropy`, with its options); a
 * `weight` is copied into buffer `weight`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using loss = new nn.CrossEntropyLoss().forward(Tensor.zeros([2, 4]), Tensor.from(new Int32Array([1, 3])));
 * assert.ok(Math.abs((loss.item() as number) - Math.log(4)) < 1e-6);
 * const smoothed = new nn.CrossEntropyLoss({ weight: Tensor.from([1, 2, 1, 1]), labelSmoothing: 0.1 });
 * assert.deepEqual(smoothed.weight?.shape, [4]);
 * ```
 */
export class CrossEntropyLoss extends Module<[Tensor, Tensor]> {
  /** The class weight, or null. */
  readonly weight: Tensor | null;
  /** The other options, as `ops.crossEntropy` takes them. */
  readonly options: Omit<CrossEntropyOptions, "weight">;

  constructor(options: CrossEntropyOptions = {}) {
    super();
    const { weight, ...rest } = options;
    this.weight = weight === undefined ? null : this.buffer("weight", weight.clone());
    this.options = rest;
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return ops.crossEntropy(input, target, {
      ...this.options,
      ...(this.weight === null ? {} : { weight: this.weight }),
    });
  }
}

/**
 * The negative log-likelihood of log-probabilities against class indices (`ops.nllLoss`, with its options);
 * a `weight` is copied into buffer `weight`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DType, nn, Tensor } from "@zigtensor/zigtensor";
 * const loss = new nn.NLLLoss({ reduction: "sum", ignoreIndex: 0 });
 * using value = loss.forward(Tensor.from([[-1, -2], [-3, -4]]), Tensor.from([1, 0], [2], { dtype: DType.I64 }));
 * assert.equal(value.item(), 2);
 * ```
 */
export class NLLLoss extends Module<[Tensor, Tensor]> {
  /** The class weight, or null. */
  readonly weight: Tensor | null;
  /** The other options, as `ops.nllLoss` takes them. */
  readonly options: Omit<NllLossOptions, "weight">;

  constructor(options: NllLossOptions = {}) {
    super();
    const { weight, ...rest } = options;
    this.weight = weight === undefined ? null : this.buffer("weight", weight.clone());
    this.options = rest;
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return ops.nllLoss(input, target, {
      ...this.options,
      ...(this.weight === null ? {} : { weight: this.weight }),
    });
  }
}

/**
 * The mean squared error (`ops.mseLoss`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using loss = new nn.MSELoss({ reduction: "sum" }).forward(Tensor.from([1, 2]), Tensor.from([0, 0]));
 * assert.equal(loss.item(), 5);
 * ```
 */
export class MSELoss extends Module<[Tensor, Tensor]> {
  constructor(readonly options: LossOptions = {}) {
    super();
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return ops.mseLoss(input, target, this.options);
  }
}

/**
 * The mean absolute error (`ops.l1Loss`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using loss = new nn.L1Loss().forward(Tensor.from([1, -3]), Tensor.from([0, 0]));
 * assert.equal(loss.item(), 2);
 * ```
 */
export class L1Loss extends Module<[Tensor, Tensor]> {
  constructor(readonly options: LossOptions = {}) {
    super();
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return ops.l1Loss(input, target, this.options);
  }
}

/**
 * The smooth L1 (Huber-like) loss (`ops.smoothL1Loss`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using loss = new nn.SmoothL1Loss({ beta: 2 }).forward(Tensor.from([1]), Tensor.from([0]));
 * assert.equal(loss.item(), 0.25);
 * ```
 */
export class SmoothL1Loss extends Module<[Tensor, Tensor]> {
  constructor(readonly options: { reduction?: LossReduction; beta?: number } = {}) {
    super();
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return ops.smoothL1Loss(input, target, this.options);
  }
}

/**
 * Binary cross-entropy of probabilities (`ops.binaryCrossEntropy`); a `weight` is copied into buffer `weight`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using loss = new nn.BCELoss().forward(Tensor.from([0.5]), Tensor.from([1]));
 * assert.ok(Math.abs((loss.item() as number) - Math.LN2) < 1e-6);
 * ```
 */
export class BCELoss extends Module<[Tensor, Tensor]> {
  /** The element weight, or null. */
  readonly weight: Tensor | null;
  /** How the losses are reduced. */
  readonly reduction: LossReduction | undefined;

  constructor(options: { weight?: Tensor; reduction?: LossReduction } = {}) {
    super();
    this.weight = options.weight === undefined ? null : this.buffer("weight", options.weight.clone());
    this.reduction = options.reduction;
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return ops.binaryCrossEntropy(input, target, {
      reduction: this.reduction,
      ...(this.weight === null ? {} : { weight: this.weight }),
    });
  }
}

/**
 * Binary cross-entropy of logits (`ops.binaryCrossEntropyWithLogits`); `weight` and `posWeight` are copied into
 * buffers `weight` and `pos_weight`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using loss = new nn.BCEWithLogitsLoss().forward(Tensor.from([0]), Tensor.from([1]));
 * assert.ok(Math.abs((loss.item() as number) - Math.LN2) < 1e-6);
 * ```
 */
export class BCEWithLogitsLoss extends Module<[Tensor, Tensor]> {
  /** The element weight, or null. */
  readonly weight: Tensor | null;
  /** The weight of the positive term, or null. */
  readonly posWeight: Tensor | null;
  /** How the losses are reduced. */
  readonly reduction: LossReduction | undefined;

  constructor(options: { weight?: Tensor; posWeight?: Tensor; reduction?: LossReduction } = {}) {
    super();
    this.weight = options.weight === undefined ? null : this.buffer("weight", options.weight.clone());
    this.posWeight = options.posWeight === undefined
      ? null
      : this.buffer("pos_weight", options.posWeight.clone());
    this.reduction = options.reduction;
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return ops.binaryCrossEntropyWithLogits(input, target, {
      reduction: this.reduction,
      ...(this.weight === null ? {} : { weight: this.weight }),
      ...(this.posWeight === null ? {} : { posWeight: this.posWeight }),
    });
  }
}

/**
 * The Kullback–Leibler divergence of log-probabilities from a target (`ops.klDiv`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using kl = new nn.KLDivLoss({ reduction: "batchmean" });
 * using loss = kl.forward(Tensor.from([[Math.log(0.5), Math.log(0.5)]]), Tensor.from([[0.5, 0.5]]));
 * assert.ok(Math.abs(loss.item() as number) < 1e-7);
 * ```
 */
export class KLDivLoss extends Module<[Tensor, Tensor]> {
  constructor(readonly options: KlDivOptions = {}) {
    super();
  }

  forward(input: Tensor, target: Tensor): Tensor {
    return ops.klDiv(input, target, this.options);
  }
}

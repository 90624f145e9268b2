/**
 * The layers: Linear, Conv1d, Conv2d, BatchNorm1d/2d, LayerNorm, Embedding, Dropout, pooling, Flatten,
 * Sequential and the activations, each with PyTorch's parameter names, shapes and default initialisation.
 *
 * @module
 */
import { TensorShapeError } from "../core/errors.ts";
import { Xorshift128 } from "../core/random.ts";
import { formatShape } from "../core/shape.ts";
import { rankOf, shapeOf, Tensor } from "../tensor.ts";
import * as ops from "../ops/mod.ts";
import { pair } from "../ops/common.ts";
import { drawSeed, fanInUniform, normal } from "./init.ts";
import { Module } from "./module.ts";

type Pair = number | readonly [number, number];

function checkRank(op: string, x: Tensor, ranks: readonly number[], what: string): void {
  if (!ranks.includes(rankOf(x))) {
    throw new TensorShapeError(op, `expects ${what}, got ${formatShape(shapeOf(x))}`, [shapeOf(x)]);
  }
}

function checkSize(op: string, name: string, value: number): void {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${op}: ${name} must be an integer ≥ 1, got ${String(value)}`);
  }
}

/**
 * `y = x·Wᵀ + b` over the last axis: `weight` [out, in] and `bias` [out], both U(±1/√in).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using fc = new nn.Linear(3, 2);
 * using y = fc.forward(Tensor.ones([5, 3]));
 * assert.deepEqual(y.shape, [5, 2]);
 * assert.deepEqual(fc.weight.shape, [2, 3]);
 * ```
 */
export class Linear extends Module {
  readonly weight: Tensor;
  readonly bias: Tensor | undefined;

  constructor(readonly inFeatures: number, readonly outFeatures: number, options: { bias?: boolean } = {}) {
    super();
    checkSize("Linear", "inFeatures", inFeatures);
    checkSize("Linear", "outFeatures", outFeatures);
    this.weight = this.parameter("weight", fanInUniform([outFeatures, inFeatures], inFeatures));
    this.bias = options.bias ?? true
      ? this.parameter("bias", fanInUniform([outFeatures], inFeatures))
      : undefined;
  }

  forward(x: Tensor): Tensor {
    return ops.linear(x, this.weight, this.bias);
  }
}

/** Options of `Conv1d` and `Conv2d`. */
export interface ConvOptions<P> {
  /** @default 1 */
  readonly stride?: P;
  /** @default 0 */
  readonly padding?: P;
  /** @default 1 */
  readonly dilation?: P;
  /** @default 1 */
  readonly groups?: number;
  /** @default true */
  readonly bias?: boolean;
}

function checkGroups(op: string, inChannels: number, outChannels: number, groups: number): void {
  checkSize(op, "inChannels", inChannels);
  checkSize(op, "outChannels", outChannels);
  checkSize(op, "groups", groups);
  if (inChannels % groups !== 0 || outChannels % groups !== 0) {
    throw new RangeError(
      `${op}: groups ${groups} must divide inChannels ${inChannels} and outChannels ${outChannels}`,
    );
  }
}

/**
 * 2-D convolution over NCHW: `weight` [out, in/groups, kh, kw] and `bias` [out], U(±1/√(in/groups·kh·kw)).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using conv = new nn.Conv2d(1, 4, 3, { padding: 1 });
 * using y = conv.forward(Tensor.ones([2, 1, 8, 8]));
 * assert.deepEqual(y.shape, [2, 4, 8, 8]);
 * ```
 */
export class Conv2d extends Module {
  readonly weight: Tensor;
  readonly bias: Tensor | undefined;
  readonly #options: ConvOptions<Pair>;

  constructor(inChannels: number, outChannels: number, kernelSize: Pair, options: ConvOptions<Pair> = {}) {
    super();
    const groups = options.groups ?? 1;
    checkGroups("Conv2d", inChannels, outChannels, groups);
    const [kh, kw] = pair("Conv2d", "kernelSize", kernelSize, 1);
    const fanIn = (inChannels / groups) * kh * kw;
    this.weight = this.parameter("weight", fanInUniform([outChannels, inChannels / groups, kh, kw], fanIn));
    this.bias = options.bias ?? true ? this.parameter("bias", fanInUniform([outChannels], fanIn)) : undefined;
    this.#options = options;
  }

  forward(x: Tensor): Tensor {
    const { stride, padding, dilation, groups } = this.#options;
    return ops.conv2d(x, this.weight, { bias: this.bias, stride, padding, dilation, groups });
  }
}

/**
 * 1-D convolution over [N, C, L], computed as a 2-D convolution of height 1: `weight` [out, in/groups, k] and
 * `bias` [out], U(±1/√(in/groups·k)).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using conv = new nn.Conv1d(2, 3, 5, { stride: 2 });
 * using y = conv.forward(Tensor.ones([1, 2, 11]));
 * assert.deepEqual(y.shape, [1, 3, 4]);
 * ```
 */
export class Conv1d extends Module {
  readonly weight: Tensor;
  readonly bias: Tensor | undefined;
  readonly #options: ConvOptions<number>;

  constructor(
    inChannels: number,
    outChannels: number,
    kernelSize: number,
    options: ConvOptions<number> = {},
  ) {
    super();
    const groups = options.groups ?? 1;
    checkGroups("Conv1d", inChannels, outChannels, groups);
    checkSize("Conv1d", "kernelSize", kernelSize);
    const fanIn = (inChannels / groups) * kernelSize;
    this.weight = this.parameter(
      "weight",
      fanInUniform([outChannels, inChannels / groups, kernelSize], fanIn),
    );
    this.bias = options.bias ?? true ? this.parameter("bias", fanInUniform([outChannels], fanIn)) : undefined;
    this.#options = options;
  }

  forward(x: Tensor): Tensor {
    checkRank("Conv1d", x, [3], "[N, C, L]");
    const { stride = 1, padding = 0, dilation = 1, groups } = this.#options;
    const y = ops.conv2d(x.unsqueeze(2), this.weight.unsqueeze(2), {
      bias: this.bias,
      stride: [1, stride],
      padding: [0, padding],
      dilation: [1, dilation],
      groups,
    });
    return y.squeeze(2);
  }
}

/** Options of `ConvTranspose2d`: those of `Conv2d` and the output padding. */
export interface ConvTransposeOptions extends ConvOptions<Pair> {
  /** Extra rows/columns on the bottom/right of the output. @default 0 */
  readonly outputPadding?: Pair;
}

/**
 * 2-D transposed convolution over NCHW (`ops.convTranspose2d`): `weight` [in, out/groups, kh, kw] and `bias`
 * [out], U(±1/√(out/groups·kh·kw)) as in PyTorch (whose fan-in is taken from weight dimension 1).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using up = new nn.ConvTranspose2d(4, 2, 3, { stride: 2, padding: 1, outputPadding: 1 });
 * using y = up.forward(Tensor.ones([1, 4, 5, 5]));
 * assert.deepEqual(y.shape, [1, 2, 10, 10]);
 * ```
 */
export class ConvTranspose2d extends Module {
  readonly weight: Tensor;
  readonly bias: Tensor | undefined;
  readonly #options: ConvTransposeOptions;

  constructor(inChannels: number, outChannels: number, kernelSize: Pair, options: ConvTransposeOptions = {}) {
    super();
    const groups = options.groups ?? 1;
    checkGroups("ConvTranspose2d", inChannels, outChannels, groups);
    const [kh, kw] = pair("ConvTranspose2d", "kernelSize", kernelSize, 1);
    const fanIn = (outChannels / groups) * kh * kw;
    this.weight = this.parameter("weight", fanInUniform([inChannels, outChannels / groups, kh, kw], fanIn));
    this.bias = options.bias ?? true ? this.parameter("bias", fanInUniform([outChannels], fanIn)) : undefined;
    this.#options = options;
  }

  forward(x: Tensor): Tensor {
    const { stride, padding, outputPadding, dilation, groups } = this.#options;
    return ops.convTranspose2d(x, this.weight, {
      bias: this.bias,
      stride,
      padding,
      outputPadding,
      dilation,
      groups,
    });
  }
}

/** Options of the batch norms. */
export interface BatchNormOptions {
  /** @default 1e-5 */
  readonly eps?: number;
  /** The running statistics' update factor. @default 0.1 */
  readonly momentum?: number;
  /** Learnable `weight` (ones) and `bias` (zeros). @default true */
  readonly affine?: boolean;
  /** Keep `running_mean`, `running_var` and `num_batches_tracked`. @default true */
  readonly trackRunningStats?: boolean;
}

/** The batch norm shared by the 1-D and 2-D layers. */
abstract class BatchNorm extends Module {
  readonly weight: Tensor | undefined;
  readonly bias: Tensor | undefined;
  readonly runningMean: Tensor | null;
  readonly runningVar: Tensor | null;
  readonly numBatchesTracked: Tensor | null;
  readonly #eps: number;
  readonly #momentum: number;

  constructor(readonly name: string, numFeatures: number, options: BatchNormOptions) {
    super();
    checkSize(name, "numFeatures", numFeatures);
    const affine = options.affine ?? true;
    this.weight = affine ? this.parameter("weight", Tensor.ones([numFeatures])) : undefined;
    this.bias = affine ? this.parameter("bias", Tensor.zeros([numFeatures])) : undefined;
    const track = options.trackRunningStats ?? true;
    this.runningMean = track ? this.buffer("running_mean", Tensor.zeros([numFeatures])) : null;
    this.runningVar = track ? this.buffer("running_var", Tensor.ones([numFeatures])) : null;
    this.numBatchesTracked = track
      ? this.buffer("num_batches_tracked", Tensor.zeros([], { dtype: "int64" }))
      : null;
    this.#eps = options.eps ?? 1e-5;
    this.#momentum = options.momentum ?? 0.1;
  }

  protected abstract checkInput(x: Tensor): void;

  forward(x: Tensor): Tensor {
    this.checkInput(x);
    const batchStats = this.training || this.runningMean === null;
    if (this.training && this.numBatchesTracked !== null) {
      this.numBatchesTracked.set((this.numBatchesTracked.item() as bigint) + 1n);
    }
    return ops.batchNorm(x, this.runningMean, this.runningVar, {
      weight: this.weight,
      bias: this.bias,
      training: batchStats,
      momentum: this.#momentum,
      eps: this.#eps,
    });
  }
}

/**
 * Batch normalization over [N, C] or [N, C, L]: `weight`, `bias`, `running_mean`, `running_var` [C] and
 * `num_batches_tracked` (I64 scalar).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using bn = new nn.BatchNorm1d(2);
 * using y = bn.forward(Tensor.from([[1, 10], [3, 30]]));
 * assert.ok(Math.abs((y.get(0, 0) as number) + 1) < 1e-3);
 * assert.ok(Math.abs((bn.runningMean!.get(1) as number) - 2) < 1e-6);
 * ```
 */
export class BatchNorm1d extends BatchNorm {
  constructor(numFeatures: number, options: BatchNormOptions = {}) {
    super("BatchNorm1d", numFeatures, options);
  }

  protected checkInput(x: Tensor): void {
    checkRank(this.name, x, [2, 3], "[N, C] or [N, C, L]");
  }
}

/**
 * Batch normalization over NCHW, with BatchNorm1d's parameters and buffers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using bn = new nn.BatchNorm2d(3).eval();
 * using y = bn.forward(Tensor.ones([1, 3, 2, 2]));
 * assert.ok(Math.abs((y.get(0, 0, 0, 0) as number) - 1) < 1e-4); // running stats: mean 0, var 1
 * ```
 */
export class BatchNorm2d extends BatchNorm {
  constructor(numFeatures: number, options: BatchNormOptions = {}) {
    super("BatchNorm2d", numFeatures, options);
  }

  protected checkInput(x: Tensor): void {
    checkRank(this.name, x, [4], "[N, C, H, W]");
  }
}

/**
 * Layer normalization over the trailing `normalizedShape` axes: `weight` (ones) and `bias` (zeros) of that shape.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using norm = new nn.LayerNorm(2, { eps: 0 });
 * using y = norm.forward(Tensor.from([[1, 3]]));
 * assert.deepEqual(y.toNested(), [[-1, 1]]);
 * ```
 */
export class LayerNorm extends Module {
  readonly weight: Tensor | undefined;
  readonly bias: Tensor | undefined;
  readonly normalizedShape: readonly number[];
  readonly #eps: number;

  constructor(
    normalizedShape: number | readonly number[],
    options: { eps?: number; elementwiseAffine?: boolean; bias?: boolean } = {},
  ) {
    super();
    this.normalizedShape = typeof normalizedShape === "number" ? [normalizedShape] : [...normalizedShape];
    for (const e of this.normalizedShape) checkSize("LayerNorm", "normalizedShape", e);
    const affine = options.elementwiseAffine ?? true;
    this.weight = affine ? this.parameter("weight", Tensor.ones(this.normalizedShape)) : undefined;
    this.bias = affine && (options.bias ?? true)
      ? this.parameter("bias", Tensor.zeros(this.normalizedShape))
      : undefined;
    this.#eps = options.eps ?? 1e-5;
  }

  forward(x: Tensor): Tensor {
    return ops.layerNorm(x, this.normalizedShape, { weight: this.weight, bias: this.bias, eps: this.#eps });
  }
}

/**
 * A lookup table: `weight` [num, dim] from N(0, 1), the `paddingIdx` row zero (and given no gradient).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using table = new nn.Embedding(10, 4, { paddingIdx: 0 });
 * using y = table.forward(Tensor.from(new Int32Array([0, 3, 3])));
 * assert.deepEqual(y.shape, [3, 4]);
 * assert.equal(y.get(0, 2), 0);
 * ```
 */
export class Embedding extends Module {
  readonly weight: Tensor;
  readonly paddingIdx: number | undefined;
  /** The bound on looked-up rows' norms (`ops.embedding`'s `maxNorm`), if any. */
  readonly maxNorm: number | undefined;
  /** The p of that norm. */
  readonly normType: number | undefined;

  constructor(
    numEmbeddings: number,
    embeddingDim: number,
    options: { paddingIdx?: number; maxNorm?: number; normType?: number } = {},
  ) {
    super();
    checkSize("Embedding", "numEmbeddings", numEmbeddings);
    checkSize("Embedding", "embeddingDim", embeddingDim);
    const weight = normal([numEmbeddings, embeddingDim]);
    let padding = options.paddingIdx;
    if (padding !== undefined) {
      if (!Number.isInteger(padding) || padding < -numEmbeddings || padding >= numEmbeddings) {
        throw new RangeError(
          `Embedding: paddingIdx ${padding} is outside [-${numEmbeddings}, ${numEmbeddings})`,
        );
      }
      if (padding < 0) padding += numEmbeddings;
      (weight.mutableData() as Float32Array).fill(0, padding * embeddingDim, (padding + 1) * embeddingDim);
    }
    this.paddingIdx = padding;
    this.maxNorm = options.maxNorm;
    this.normType = options.normType;
    this.weight = this.parameter("weight", weight);
  }

  forward(indices: Tensor): Tensor {
    const { paddingIdx, maxNorm, normType } = this;
    return ops.embedding(indices, this.weight, {
      paddingIdx,
      ...(maxNorm === undefined ? {} : { maxNorm }),
      ...(normType === undefined ? {} : { normType }),
    });
  }
}

/**
 * Dropout (`ops.dropout`): in training mode zeroes each element with probability `p` and scales the rest by
 * 1/(1 − p); the identity in evaluation mode. Each mask's seed comes from the module's own generator, seeded from
 * `nn.manualSeed`'s stream or by `seed`, so a seeded module repeats its sequence of masks.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using drop = new nn.Dropout(0.5, { seed: 1 });
 * using y = drop.forward(Tensor.ones([1000]));
 * const kept = [...y.toArray()].filter((v) => v === 2).length;
 * assert.ok(kept > 400 && kept < 600);
 * drop.eval();
 * assert.equal(drop.forward(y), y);
 * ```
 */
export class Dropout extends Module {
  readonly #random: Xorshift128;

  constructor(readonly p: number = 0.5, options: { seed?: number } = {}) {
    super();
    if (typeof p !== "number" || !(p >= 0 && p <= 1)) {
      throw new RangeError(`Dropout: p must be in [0, 1], got ${String(p)}`);
    }
    this.#random = new Xorshift128(options.seed ?? drawSeed());
  }

  forward(x: Tensor): Tensor {
    if (!this.training) return x;
    // Each forward pass draws its mask's seed from the module's stream, so a seeded module repeats its masks.
    return ops.dropout(x, { p: this.p, seed: this.#random.next() });
  }
}

/**
 * Modules applied in order; the children are named "0", "1", ... as in PyTorch.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using model = new nn.Sequential(new nn.Linear(4, 8), new nn.ReLU(), new nn.Linear(8, 3));
 * using y = model.forward(Tensor.ones([2, 4]));
 * assert.deepEqual(y.shape, [2, 3]);
 * assert.ok(model.stateDict().has("2.bias"));
 * ```
 */
export class Sequential extends Module {
  readonly layers: readonly Module[];

  constructor(...layers: Module[]) {
    super();
    this.layers = layers.map((m, i) => this.module(String(i), m));
  }

  forward(x: Tensor): Tensor {
    let y = x;
    for (const layer of this.layers) y = layer.forward(y);
    return y;
  }
}

/**
 * `max(x, 0)`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using y = new nn.ReLU().forward(Tensor.from([-1, 2]));
 * assert.deepEqual([...y.toArray()], [0, 2]);
 * ```
 */
export class ReLU extends Module {
  forward(x: Tensor): Tensor {
    return ops.relu(x);
  }
}

/**
 * GELU, as PyTorch's `nn.GELU(approximate=...)`: x·Φ(x) by default, the tanh form with
 * `{ approximate: "tanh" }` (`ops.gelu` checks the option at the first forward pass, as PyTorch's `F.gelu`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([0, 1, 10]);
 * using exact = new nn.GELU().forward(x);
 * using tanh = new nn.GELU({ approximate: "tanh" }).forward(x);
 * assert.ok(exact.get(0) === 0 && exact.get(2) === 10 && exact.get(1) !== tanh.get(1));
 * ```
 */
export class GELU extends Module {
  constructor(readonly options: ops.GeluOptions = {}) {
    super();
  }

  forward(x: Tensor): Tensor {
    return ops.gelu(x, this.options);
  }
}

/**
 * `tanh x`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using y = new nn.Tanh().forward(Tensor.from([0]));
 * assert.equal(y.item(), 0);
 * ```
 */
export class Tanh extends Module {
  forward(x: Tensor): Tensor {
    return ops.tanh(x);
  }
}

/**
 * `1 / (1 + e^−x)`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using y = new nn.Sigmoid().forward(Tensor.from([0]));
 * assert.equal(y.item(), 0.5);
 * ```
 */
export class Sigmoid extends Module {
  forward(x: Tensor): Tensor {
    return ops.sigmoid(x);
  }
}

/**
 * Softmax along `dim`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using y = new nn.Softmax(1).forward(Tensor.from([[1, 1]]));
 * assert.deepEqual([...y.toArray()], [0.5, 0.5]);
 * ```
 */
export class Softmax extends Module {
  constructor(readonly dim: number = -1) {
    super();
  }

  forward(x: Tensor): Tensor {
    return ops.softmax(x, this.dim);
  }
}

/**
 * Log-softmax along `dim`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using y = new nn.LogSoftmax(1).forward(Tensor.from([[2, 2]]));
 * assert.ok(Math.abs((y.get(0, 0) as number) + Math.LN2) < 1e-6);
 * ```
 */
export class LogSoftmax extends Module {
  constructor(readonly dim: number = -1) {
    super();
  }

  forward(x: Tensor): Tensor {
    return ops.logSoftmax(x, this.dim);
  }
}

/**
 * The input itself.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([1]);
 * assert.equal(new nn.Identity().forward(x), x);
 * ```
 */
export class Identity extends Module {
  forward(x: Tensor): Tensor {
    return x;
  }
}

/**
 * Merges axes `startDim` … `endDim` into one (PyTorch's `Flatten`, defaults 1 and −1).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using y = new nn.Flatten().forward(Tensor.zeros([2, 3, 4, 5]));
 * assert.deepEqual(y.shape, [2, 60]);
 * ```
 */
export class Flatten extends Module {
  constructor(readonly startDim: number = 1, readonly endDim: number = -1) {
    super();
  }

  forward(x: Tensor): Tensor {
    const rank = rankOf(x);
    const start = this.startDim < 0 ? this.startDim + rank : this.startDim;
    const end = this.endDim < 0 ? this.endDim + rank : this.endDim;
    if (!(start >= 0 && start <= end && end < rank)) {
      throw new TensorShapeError(
        "Flatten",
        `axes ${this.startDim} … ${this.endDim} do not fit ${formatShape(shapeOf(x))}`,
        [shapeOf(x)],
      );
    }
    const merged = shapeOf(x).slice(start, end + 1).reduce((a, b) => a * b, 1);
    return x.reshape([...shapeOf(x).slice(0, start), merged, ...shapeOf(x).slice(end + 1)]);
  }
}

/**
 * 2-D max pooling (`ops.maxPool2d`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using y = new nn.MaxPool2d(2).forward(Tensor.from([1, 2, 3, 4], [1, 1, 2, 2]));
 * assert.equal(y.item(), 4);
 * ```
 */
export class MaxPool2d extends Module {
  constructor(
    readonly kernelSize: Pair,
    readonly options: { stride?: Pair; padding?: Pair; dilation?: Pair; ceilMode?: boolean } = {},
  ) {
    super();
  }

  forward(x: Tensor): Tensor {
    return ops.maxPool2d(x, { kernel: this.kernelSize, ...this.options });
  }
}

/**
 * 2-D average pooling (`ops.avgPool2d`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using y = new nn.AvgPool2d(2).forward(Tensor.from([1, 2, 3, 4], [1, 1, 2, 2]));
 * assert.equal(y.item(), 2.5);
 * ```
 */
export class AvgPool2d extends Module {
  constructor(
    readonly kernelSize: Pair,
    readonly options: {
      stride?: Pair;
      padding?: Pair;
      ceilMode?: boolean;
      countIncludePad?: boolean;
      divisorOverride?: number;
    } = {},
  ) {
    super();
  }

  forward(x: Tensor): Tensor {
    return ops.avgPool2d(x, { kernel: this.kernelSize, ...this.options });
  }
}

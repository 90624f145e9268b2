/**
 * Attention layers: `MultiheadAttention` and `TransformerEncoderLayer` with PyTorch's parameter names
 * (`in_proj_weight`, `in_proj_bias`, `out_proj.weight`, ..., `self_attn.*`, `linear1.*`, `norm1.*`, ...),
 * initialisation and mask conventions (a Bool mask is true where attention is NOT allowed).
 *
 * @module
 */
import { DTypeError, TensorShapeError } from "../core/errors.ts";
import { DType, dtypeInfo } from "../core/dtype.ts";
import { Xorshift128 } from "../core/random.ts";
import { formatShape } from "../core/shape.ts";
import { dtypeOf, rankOf, shapeOf, Tensor } from "../tensor.ts";
import * as ops from "../ops/mod.ts";
import { additiveMask, causalAllowed } from "../ops/nn.ts";
import { drawSeed, xavierUniform } from "./init.ts";
import { Dropout, LayerNorm, Linear } from "./layers.ts";
import { Module } from "./module.ts";

/** Masks of an attention call, in PyTorch's conventions. */
export interface AttentionMasks {
  /**
   * [L, S] or [N·heads, L, S]: Bool (true: not allowed) or F32 (added to the scores, and differentiable).
   */
  readonly attnMask?: Tensor;
  /** [N, S]: Bool (true: this key is padding, ignored) or F32 (added). */
  readonly keyPaddingMask?: Tensor;
  /** Position i attends only to j ≤ i. @default false */
  readonly isCausal?: boolean;
}

/** A PyTorch-style mask as additive F32 scores (Bool true, not allowed, → −∞; false → 0); an F32 mask as is. */
function additive(op: string, name: string, mask: Tensor): Tensor {
  if (dtypeOf(mask) === DType.F32) return mask;
  if (dtypeOf(mask) !== DType.Bool) {
    throw new DTypeError(op, `${name} must be a Bool or F32 tensor, got ${dtypeInfo(dtypeOf(mask)).name}`);
  }
  return additiveMask(ops.sub(1, mask.cast(DType.F32)));
}

/**
 * One additive F32 mask that broadcasts to the scores [N, heads, L, S], the sum of the PyTorch-style masks
 * given (by native element-wise ops), or undefined when there is none. An F32 `attnMask` stays
 * differentiable.
 */
function combinedMask(
  n: number,
  heads: number,
  l: number,
  s: number,
  masks: AttentionMasks,
): Tensor | undefined {
  const { attnMask, keyPaddingMask } = masks;
  const op = "MultiheadAttention";
  if (attnMask !== undefined) {
    const ok = (rankOf(attnMask) === 2 && shapeOf(attnMask)[0] === l && shapeOf(attnMask)[1] === s) ||
      (rankOf(attnMask) === 3 && shapeOf(attnMask).join() === [n * heads, l, s].join());
    if (!ok) {
      throw new TensorShapeError(
        op,
        `attnMask must be [${l}, ${s}] or [${n * heads}, ${l}, ${s}], got ${formatShape(shapeOf(attnMask))}`,
        [shapeOf(attnMask)],
      );
    }
  }
  if (keyPaddingMask !== undefined && shapeOf(keyPaddingMask).join() !== [n, s].join()) {
    throw new TensorShapeError(
      op,
      `keyPaddingMask must be [${n}, ${s}], got ${formatShape(shapeOf(keyPaddingMask))}`,
      [shapeOf(keyPaddingMask)],
    );
  }
  const parts: Tensor[] = [];
  if (masks.isCausal === true) parts.push(additiveMask(causalAllowed(l, s)));
  if (attnMask !== undefined) {
    const values = additive(op, "attnMask", attnMask);
    parts.push(rankOf(attnMask) === 3 ? values.reshape([n, heads, l, s]) : values);
  }
  if (keyPaddingMask !== undefined) {
    parts.push(additive(op, "keyPaddingMask", keyPaddingMask).reshape([n, 1, 1, s]));
  }
  return parts.length === 0 ? undefined : parts.reduce((sum, t) => ops.add(sum, t));
}

/** Options of `MultiheadAttention`. */
export interface MultiheadAttentionOptions {
  /** Dropout on the attention weights in training mode (`ops.attention`'s `dropout`). @default 0 */
  readonly dropout?: number;
  /** The seed of the dropout masks' stream (each training forward pass draws one); random when absent. */
  readonly seed?: number;
  /** @default true */
  readonly bias?: boolean;
  /** Inputs and output are [N, L, E] instead of PyTorch's default [L, N, E]. @default false */
  readonly batchFirst?: boolean;
}

/**
 * Multi-head attention (PyTorch's `nn.MultiheadAttention` with equal query, key and value sizes):
 * `in_proj_weight` [3E, E] (Xavier uniform), `in_proj_bias` [3E] (zeros) and `out_proj` (a Linear whose bias
 * starts at zero). `forward(query, key, value, masks)` returns the attention output only (PyTorch's first
 * result; no averaged weights).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using mha = new nn.MultiheadAttention(8, 2, { batchFirst: true });
 * using x = Tensor.randn([3, 5, 8], { seed: 1 });
 * using y = mha.forward(x, x, x, { isCausal: true });
 * assert.deepEqual(y.shape, [3, 5, 8]);
 * ```
 */
export class MultiheadAttention extends Module<[Tensor, Tensor, Tensor, AttentionMasks?]> {
  readonly inProjWeight: Tensor;
  readonly inProjBias: Tensor | undefined;
  readonly outProj: Linear;
  readonly batchFirst: boolean;
  /** The attention-weight dropout probability, applied in training mode. */
  readonly dropout: number;
  readonly #random: Xorshift128;

  constructor(readonly embedDim: number, readonly numHeads: number, options: MultiheadAttentionOptions = {}) {
    super();
    if (
      !Number.isInteger(embedDim) || !Number.isInteger(numHeads) || numHeads < 1 || embedDim % numHeads !== 0
    ) {
      throw new RangeError(
        `MultiheadAttention: embedDim ${embedDim} must be divisible by numHeads ${numHeads}`,
      );
    }
    const bias = options.bias ?? true;
    this.inProjWeight = this.parameter(
      "in_proj_weight",
      xavierUniform([3 * embedDim, embedDim], embedDim, 3 * embedDim),
    );
    this.inProjBias = bias ? this.parameter("in_proj_bias", Tensor.zeros([3 * embedDim])) : undefined;
    this.outProj = this.module("out_proj", new Linear(embedDim, embedDim, { bias }));
    this.outProj.bias?.fill(0);
    this.batchFirst = options.batchFirst ?? false;
    this.dropout = options.dropout ?? 0;
    if (typeof this.dropout !== "number" || !(this.dropout >= 0 && this.dropout <= 1)) {
      throw new RangeError(`MultiheadAttention: dropout must be in [0, 1], got ${String(this.dropout)}`);
    }
    this.#random = new Xorshift128(options.seed ?? drawSeed());
  }

  forward(query: Tensor, key: Tensor, value: Tensor, masks: AttentionMasks = {}): Tensor {
    const e = this.embedDim;
    const heads = this.numHeads;
    for (const t of [query, key, value]) {
      if (rankOf(t) !== 3 || shapeOf(t)[2] !== e) {
        throw new TensorShapeError(
          "MultiheadAttention",
          `query, key and value must be ${this.batchFirst ? "[N, L, E]" : "[L, N, E]"} with E = ${e}, got ${
            formatShape(shapeOf(t))
          }`,
          [shapeOf(query), shapeOf(key), shapeOf(value)],
        );
      }
    }
    const major = (t: Tensor) => (this.batchFirst ? t : t.transpose(0, 1));
    const [q0, k0, v0] = [query, key, value].map(major);
    const [n, l] = shapeOf(q0);
    const s = shapeOf(k0)[1];
    const d = e / heads;
    // [N, len, E] → [N, heads, len, d] through the i-th block of the stacked projection.
    const project = (x: Tensor, i: number, len: number) =>
      ops.linear(
        x,
        this.inProjWeight.slice(0, i * e, (i + 1) * e),
        this.inProjBias?.slice(0, i * e, (i + 1) * e),
      )
        .reshape([n, len, heads, d]).permute([0, 2, 1, 3]);
    const q = project(q0, 0, l);
    const k = project(k0, 1, s);
    const v = project(v0, 2, s);
    const mask = combinedMask(n, heads, l, s, masks);
    // In training, each forward pass draws its dropout seed from the module's stream (as nn.Dropout does).
    const dropout = this.training && this.dropout > 0
      ? { dropout: this.dropout, seed: this.#random.next() }
      : {};
    const attended = ops.attention(q, k, v, { mask, ...dropout });
    const merged = attended.permute([0, 2, 1, 3]).reshape([n, l, e]);
    return major(this.outProj.forward(merged));
  }
}

/** Options of `TransformerEncoderLayer`. */
export interface TransformerEncoderLayerOptions {
  /** @default 2048 */
  readonly dimFeedforward?: number;
  /** @default 0.1 */
  readonly dropout?: number;
  /** The feed-forward activation ("gelu" is GELU's tanh form; PyTorch's "gelu" is the erf form). @default "relu" */
  readonly activation?: "relu" | "gelu";
  /** @default 1e-5 */
  readonly layerNormEps?: number;
  /** @default false */
  readonly batchFirst?: boolean;
  /** Normalise before attention and feed-forward instead of after. @default false */
  readonly normFirst?: boolean;
  /** @default true */
  readonly bias?: boolean;
}

/**
 * A transformer encoder layer (PyTorch's `nn.TransformerEncoderLayer`): self-attention and a feed-forward
 * block, each with a residual connection, dropout and layer normalization. `forward(src, masks)` takes
 * `attnMask` (PyTorch's `src_mask`), `keyPaddingMask` (`src_key_padding_mask`) and `isCausal`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using layer = new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, batchFirst: true });
 * using x = Tensor.randn([2, 4, 8], { seed: 3 });
 * using y = layer.eval().forward(x);
 * assert.deepEqual(y.shape, [2, 4, 8]);
 * assert.ok(layer.stateDict().has("self_attn.out_proj.bias") && layer.stateDict().has("norm2.weight"));
 * ```
 */
export class TransformerEncoderLayer extends Module<[Tensor, AttentionMasks?]> {
  readonly selfAttn: MultiheadAttention;
  readonly linear1: Linear;
  readonly dropout: Dropout;
  readonly linear2: Linear;
  readonly norm1: LayerNorm;
  readonly norm2: LayerNorm;
  readonly dropout1: Dropout;
  readonly dropout2: Dropout;
  readonly #normFirst: boolean;
  readonly #activation: (x: Tensor) => Tensor;

  constructor(dModel: number, nhead: number, options: TransformerEncoderLayerOptions = {}) {
    super();
    const p = options.dropout ?? 0.1;
    const bias = options.bias ?? true;
    const ff = options.dimFeedforward ?? 2048;
    const eps = options.layerNormEps ?? 1e-5;
    this.selfAttn = this.module(
      "self_attn",
      new MultiheadAttention(dModel, nhead, { dropout: p, bias, batchFirst: options.batchFirst }),
    );
    this.linear1 = this.module("linear1", new Linear(dModel, ff, { bias }));
    this.dropout = this.module("dropout", new Dropout(p));
    this.linear2 = this.module("linear2", new Linear(ff, dModel, { bias }));
    this.norm1 = this.module("norm1", new LayerNorm(dModel, { eps, bias }));
    this.norm2 = this.module("norm2", new LayerNorm(dModel, { eps, bias }));
    this.dropout1 = this.module("dropout1", new Dropout(p));
    this.dropout2 = this.module("dropout2", new Dropout(p));
    this.#normFirst = options.normFirst ?? false;
    this.#activation = (options.activation ?? "relu") === "relu"
      ? ops.relu
      : (x: Tensor) => ops.gelu(x, { approximate: "tanh" });
  }

  forward(src: Tensor, masks: AttentionMasks = {}): Tensor {
    const attend = (x: Tensor) => this.dropout1.forward(this.selfAttn.forward(x, x, x, masks));
    const feed = (x: Tensor) =>
      this.dropout2.forward(
        this.linear2.forward(this.dropout.forward(this.#activation(this.linear1.forward(x)))),
      );
    if (this.#normFirst) {
      const x = ops.add(src, attend(this.norm1.forward(src)));
      return ops.add(x, feed(this.norm2.forward(x)));
    }
    const x = this.norm1.forward(ops.add(src, attend(src)));
    return this.norm2.forward(ops.add(x, feed(x)));
  }
}

/**
 * Neural-network operators: concatenation, embedding lookup and scaled dot-product attention (the
 * classification losses are in `losses.ts`).
 *
 * @module
 */
import { DTypeError, OptionError, TensorShapeError } from "../core/errors.ts";
import { checkBoolean, checkOptions, describe } from "../core/options.ts";
import { DType, dtypeInfo } from "../core/dtype.ts";
import { computeSettings, GradMode, kernels } from "../context.ts";
import { broadcastShapes, formatShape, normalizeAxis } from "../core/shape.ts";
import {
  allocate,
  blockSizeOf,
  dtypeOf,
  isContiguousOf,
  isTensor,
  operandOf,
  rankOf,
  shapeOf,
  sizeOf,
  stridesOf,
  Tensor,
} from "../tensor.ts";
import { tidy } from "../memory/scope.ts";
import { type BackwardRecord, record, shouldRecord } from "../autograd/record.ts";
import { abs, add, div, gt, le, maximum, mul, pow, sub } from "./elementwise.ts";
import { checkF32, checkTensor, newOutput } from "./common.ts";
import { matmul } from "./linalg.ts";
import { max, softmax, sum } from "./reduce.ts";
import { expand, reshape, slice, transpose, unsqueeze, viewOf } from "./views.ts";
import { scatterAdd } from "./indexing.ts";
import { IndexOp } from "../kernels/indexing.ts";
import { dropout } from "./dropout.ts";
import type { Seed } from "../core/random.ts";
import { cast, contiguous, copyElements, copyInto } from "./copy.ts";
import {
  attentionBackwardWorkspace,
  type AttentionOperands,
  type AttentionParams,
  attentionWorkspace,
} from "../kernels/attention.ts";

/** Plain tensors of one dtype that the copy kernel can move (not quantized, not blocked). */
function checkConcatInputs(op: string, tensors: readonly Tensor[]): void {
  if (!Array.isArray(tensors) || tensors.length === 0) {
    throw new TensorShapeError(op, "concat needs a non-empty array of tensors");
  }
  for (const t of tensors) {
    checkTensor(op, "each entry of the array of Tensors", t);
    const info = dtypeInfo(t.dtype);
    if (info.isQuantized || t.blockSize > 0) {
      throw new DTypeError(
        op,
        `concat works on plain tensors, got ${t.blockSize > 0 ? "a blocked" : info.name} one`,
      );
    }
    if (t.dtype !== tensors[0].dtype) {
      throw new DTypeError(
        op,
        `every tensor must have the same dtype, got ${dtypeInfo(tensors[0].dtype).name} and ${info.name}`,
      );
    }
  }
}

/**
 * Joins tensors along `axis` (negative counts from the end): every tensor has the same rank and dtype, and the
 * same extents except along `axis`. Records Concat (attributes: the axis and each input's extent along it); the
 * gradient of each input is a slice of the output's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using a = Tensor.from([[1, 2], [3, 4]]);
 * using b = Tensor.from([[5], [6]]);
 * using c = ops.concat([a, b], 1);
 * assert.deepEqual(c.toNested(), [[1, 2, 5], [3, 4, 6]]);
 * ```
 */
export function concat(tensors: readonly Tensor[], axis = 0): Tensor {
  const op = "concat";
  checkConcatInputs(op, tensors);
  const first = tensors[0];
  const a = normalizeAxis(op, axis, rankOf(first), shapeOf(first));
  for (const t of tensors) {
    if (rankOf(t) !== rankOf(first) || shapeOf(t).some((e, d) => d !== a && e !== shapeOf(first)[d])) {
      throw new TensorShapeError(
        op,
        `cannot concatenate ${formatShape(shapeOf(first))} and ${formatShape(shapeOf(t))} along axis ${a}: ` +
          "the other extents must match",
        tensors.map((x) => shapeOf(x)),
      );
    }
  }
  const sizes = tensors.map((t) => shapeOf(t)[a]);
  const shape = [...shapeOf(first)];
  shape[a] = sizes.reduce((s, e) => s + e, 0);
  const out = allocate(op, shape, dtypeOf(first), false, { scoped: true });
  let start = 0;
  for (const t of tensors) {
    const part = { shape: shapeOf(t), strides: stridesOf(out), offset: start * stridesOf(out)[a] };
    if (sizeOf(t) > 0) copyElements(op, viewOf(out, part), t);
    start += shapeOf(t)[a];
  }
  if (!shouldRecord(...tensors)) return out;
  return record(out, "Concat", tensors, { attrs: { axis: a, sizes } });
}

/** Options of `embedding`. */
export interface EmbeddingOptions {
  /** A row whose lookups get no gradient (negative counts from the end), like PyTorch's `padding_idx`. */
  readonly paddingIdx?: number;
  /**
   * Each looked-up row whose `normType`-norm exceeds this is scaled in place, before the lookup, to norm
   * `maxNorm` (by `maxNorm/(norm + 1e-7)`, PyTorch's `max_norm`).
   */
  readonly maxNorm?: number;
  /** The p of the p-norm `maxNorm` bounds. @default 2 */
  readonly normType?: number;
}

/** The lookups as a flat I32 or I64 index for the native gather (other integer dtypes cast to I64). */
function lookupIndex(op: string, indices: Tensor): Tensor {
  if (!isTensor(indices)) {
    throw new OptionError(op, `indices must be a Tensor, got ${String(indices)}`);
  }
  const info = dtypeInfo(dtypeOf(indices));
  if (info.isFloat || info.isQuantized || info.name === "Bool" || blockSizeOf(indices) > 0) {
    throw new DTypeError(op, `indices must be an integer tensor, got ${info.name}`);
  }
  const typed = dtypeOf(indices) === DType.I32 || dtypeOf(indices) === DType.I64
    ? indices
    : cast(indices, DType.I64);
  return reshape(typed, [sizeOf(indices)]);
}

/**
 * Row `ids[i]` of the [rows, dim] table into row i of `out` (contiguous, [...indices.shape, dim]), by the
 * native gather kernel (`zig/kernels/index.zig`), which checks every index before writing; false when one is
 * outside the rows.
 */
function gatherRows(op: string, weight: Tensor, ids: Tensor, out: Tensor): boolean {
  const [rows, dim] = shapeOf(weight);
  const shape = [sizeOf(ids), dim];
  const spread = expand(reshape(ids, [sizeOf(ids), 1]), shape);
  return kernels().index(
    IndexOp.Gather,
    shape,
    0,
    rows,
    operandOf(weight, op, stridesOf(weight)),
    operandOf(out, op, [dim, 1]),
    operandOf(spread, op, stridesOf(spread)),
    computeSettings(),
  );
}

/** The error for a lookup outside the table; reads the indices only on this error path, to name the value. */
function lookupOutOfRange(op: string, indices: Tensor, weight: Tensor): never {
  const values = Array.from(indices.toArray() as ArrayLike<number | bigint>, Number);
  const rows = shapeOf(weight)[0];
  const position = values.findIndex((v) => v < 0 || v >= rows);
  throw new TensorShapeError(
    op,
    `index ${values[position]} at position ${position} is outside the ${rows} rows of weight ${
      formatShape(shapeOf(weight))
    }`,
    [shapeOf(indices), shapeOf(weight)],
  );
}

/** The checked `maxNorm` and `normType` options. */
function checkNorm(op: string, maxNorm: number, normType: number): void {
  if (typeof maxNorm !== "number" || !(maxNorm >= 0) || maxNorm === Infinity) {
    throw new OptionError(op, `maxNorm must be a finite number ≥ 0, got ${describe(maxNorm)}`);
  }
  if (typeof normType !== "number" || !(normType > 0) || normType === Infinity) {
    throw new OptionError(op, `normType must be a finite number > 0, got ${describe(normType)}`);
  }
}

/**
 * PyTorch's `embedding_renorm_`: each row of `weight` that `ids` (checked) looks up and whose p-norm exceeds
 * `maxNorm` is scaled in place by `maxNorm/(norm + 1e-7)`, with recording off, by element-wise ops over all
 * rows and a 0/1 mask of the looked-up ones (a native scatter-add of the lookups).
 */
function renormRows(weight: Tensor, ids: Tensor, maxNorm: number, normType: number): void {
  const rows = shapeOf(weight)[0];
  GradMode.noGrad(() =>
    tidy(() => {
      const norms = pow(sum(pow(abs(weight), normType), 1, { keepDims: true }), 1 / normType);
      const lookups = scatterAdd(
        Tensor.zeros([rows, 1]),
        0,
        reshape(ids, [sizeOf(ids), 1]),
        Tensor.ones([sizeOf(ids), 1]),
      );
      const apply = mul(cast(gt(norms, maxNorm), DType.F32), cast(gt(lookups, 0), DType.F32));
      // apply is 0 or 1, so the factor is exactly maxNorm/(norm + 1e-7) or exactly 1.
      const factor = add(mul(apply, div(maxNorm, add(norms, 1e-7))), sub(1, apply));
      copyInto(weight, mul(weight, factor));
    })
  );
}

/**
 * The gradient of an embedding table [rows, dim] from the output's gradient `g` [...indices.shape, dim]: each
 * lookup's gradient row is added to its table row, in lookup order, by the seam's `indexAdd` kernel; the
 * padding row (`paddingIdx` ≥ 0) is then zeroed.
 */
export function embeddingBackward(
  g: Tensor,
  indices: Tensor,
  weightShape: readonly number[],
  paddingIdx: number,
): Tensor {
  const op = "backward";
  const [rows, dim] = weightShape;
  const count = sizeOf(indices);
  const grad = allocate(op, [rows, dim], DType.F32, true, { scoped: true });
  const ids = cast(indices, DType.I32);
  const source = contiguous(g);
  try {
    kernels().indexAdd(
      { groups: 1, count, width: dim, rows, flat: false },
      operandOf(grad, op, [rows * dim, dim, 1]),
      operandOf(source, op, [count * dim, dim, 1]),
      operandOf(ids, op, [count, 1]),
      computeSettings(),
    );
  } finally {
    ids.dispose();
    if (source !== g) source.dispose();
  }
  if (paddingIdx >= 0) slice(grad, 0, paddingIdx, paddingIdx + 1).fill(0);
  return grad;
}

/**
 * Looks up rows of `weight` [rows, dim] at integer `indices` of any shape: the result has shape
 * `[...indices.shape, dim]`. Lookups of `paddingIdx` give no gradient; with `maxNorm`, the looked-up rows
 * are first renormalised in place as PyTorch does. Records Embedding over the table
 * (saved slot 0: the indices; attribute paddingIdx: the padding row, or −1).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DType, ops, Tensor } from "@zigtensor/zigtensor";
 * using table = Tensor.from([[0, 0], [1, 10], [2, 20]]);
 * using ids = Tensor.from([[2, 1], [1, 0]], { dtype: DType.I32 });
 * using rows = ops.embedding(ids, table);
 * assert.deepEqual(rows.toNested(), [[[2, 20], [1, 10]], [[1, 10], [0, 0]]]);
 * ```
 */
export function embedding(indices: Tensor, weight: Tensor, options?: EmbeddingOptions): Tensor {
  const op = "embedding";
  options = checkOptions(op, options, ["paddingIdx", "maxNorm", "normType"]);
  checkF32(op, weight);
  if (rankOf(weight) !== 2) {
    throw new TensorShapeError(op, `weight must be [rows, dim], got ${formatShape(shapeOf(weight))}`, [
      shapeOf(weight),
    ]);
  }
  const [rows, dim] = shapeOf(weight);
  const padding = options.paddingIdx;
  if (padding !== undefined && (!Number.isInteger(padding) || padding < -rows || padding >= rows)) {
    throw new TensorShapeError(
      op,
      `paddingIdx must be an integer in ${-rows} to ${rows - 1}, got ${String(padding)}`,
      [shapeOf(weight)],
    );
  }
  const maxNorm = options.maxNorm;
  const normType = options.normType ?? 2;
  if (maxNorm !== undefined) checkNorm(op, maxNorm, normType);
  const out = newOutput(op, [...shapeOf(indices), dim]);
  GradMode.noGrad(() =>
    tidy(() => {
      const ids = lookupIndex(op, indices);
      if (!gatherRows(op, weight, ids, out)) {
        out.dispose();
        lookupOutOfRange(op, indices, weight);
      }
      // The lookups are checked: renormalise the rows they touch, then look them up again.
      if (maxNorm !== undefined) {
        renormRows(weight, ids, maxNorm, normType);
        gatherRows(op, weight, ids, out);
      }
    })
  );
  if (!shouldRecord(weight)) return out;
  const skip = padding === undefined ? -1 : padding < 0 ? padding + rows : padding;
  return record(out, "Embedding", [weight], { saved: [indices], attrs: { paddingIdx: skip } });
}

/** Options of `attention`. */
export interface AttentionOptions {
  /**
   * Broadcast to the scores [..., L, S]: a Bool mask (true takes part in attention, false is excluded), or an
   * F32 mask added to the scores (differentiable).
   */
  readonly mask?: Tensor;
  /** Position i attends only to positions j ≤ i (combined with `mask` when both are given). @default false */
  readonly causal?: boolean;
  /** The factor of the scores. @default 1/√E */
  readonly scale?: number;
  /**
   * The probability of zeroing each attention weight, PyTorch's `dropout_p`: the kept weights are scaled by
   * `1/(1 − p)`, by `ops.dropout`'s seeded mask over the scores [..., L, S]. @default 0
   */
  readonly dropout?: number;
  /** Apply `dropout` (false: inference, deterministic, no draw). @default true */
  readonly training?: boolean;
  /** The seed of the dropout mask (as `ops.dropout`'s); a random one when absent. */
  readonly seed?: Seed;
  /**
   * Grouped-query attention, PyTorch's `enable_gqa`: k and v [..., Hkv, S, ·] have fewer heads (axis −3)
   * than q [..., H, L, E], Hkv dividing H; kv head h serves the H/Hkv consecutive query heads from h·H/Hkv,
   * as PyTorch's `repeat_interleave` of k and v along axis −3. @default false
   */
  readonly enableGqa?: boolean;
}

/** The constant part of the attention mask: additive (0 or −∞) and the rows left with something to attend to. */
interface ConstantMask {
  /** 0 where attention is allowed, −∞ where not, except 0 across rows that allow nothing. */
  readonly additive: Tensor;
  /** [..., rows, 1]: 1 for rows that allow something, 0 for the others; null without a Bool mask. */
  readonly alive: Tensor | null;
}

/** `allowed` (F32: 1 where attention is allowed, else 0) as additive scores: `(allowed − 1)/allowed`, 0 or −∞. */
export function additiveMask(allowed: Tensor): Tensor {
  return div(sub(allowed, 1), allowed);
}

/** The causal rule as an F32 [l, s] tensor: 1 where key j ≤ query i, else 0 (`tril` of ones, top-left aligned). */
export function causalAllowed(l: number, s: number): Tensor {
  using rows = Tensor.arange(l).reshape([l, 1]);
  using cols = Tensor.arange(s).reshape([1, s]);
  return cast(le(cols, rows), DType.F32);
}

/**
 * Combines a Bool mask and the causal rule into one additive F32 tensor of their broadcast shape, by native
 * element-wise ops (no loop over elements in JS). Rows that exclude every key get 0 instead of −∞ (finite
 * scores, no NaN) and a 0 in `alive`, which zeros their probabilities afterwards, as PyTorch's safe softmax
 * does. The causal rule alone leaves every row key 0, so only a Bool mask needs `alive`.
 */
function constantMask(mask: Tensor | undefined, causal: boolean, l: number, s: number): ConstantMask {
  let allowed = mask === undefined ? null : cast(mask, DType.F32);
  if (causal) allowed = allowed === null ? causalAllowed(l, s) : mul(allowed, causalAllowed(l, s));
  let alive: Tensor | null = null;
  if (mask !== undefined && s > 0) {
    alive = max(allowed!, -1, { keepDims: true });
    allowed = maximum(allowed!, sub(1, alive));
  }
  return { additive: additiveMask(allowed!), alive };
}

/** The checked shape of attention's inputs: the scores [...batch, L, S] and the query heads per kv head. */
interface AttentionShape {
  readonly scores: number[];
  readonly groups: number;
}

/** With `enableGqa`, the query heads per kv head (1 when the head counts are equal); k and v must agree. */
function gqaGroups(op: string, q: Tensor, k: Tensor, v: Tensor): number {
  const shapes = [shapeOf(q), shapeOf(k), shapeOf(v)];
  const heads = shapeOf(q)[rankOf(q) - 3];
  const kvHeads = shapeOf(k)[rankOf(k) - 3];
  if (
    rankOf(q) < 3 || rankOf(k) < 3 || rankOf(v) < 3 || shapeOf(v)[rankOf(v) - 3] !== kvHeads ||
    kvHeads === 0 ||
    heads % kvHeads !== 0
  ) {
    throw new TensorShapeError(
      op,
      `with enableGqa, q [..., H, L, E], k [..., Hkv, S, E] and v [..., Hkv, S, Ev] need k and v to have the ` +
        `same head count Hkv (axis −3), dividing H; got ${shapes.map(formatShape).join(", ")}`,
      shapes,
    );
  }
  return heads / kvHeads;
}

/** The checked shapes of attention (see `AttentionShape`). */
function attentionShape(
  op: string,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  mask: Tensor | undefined,
  gqa: boolean,
): AttentionShape {
  checkF32(op, q, k, v);
  const shapes = [shapeOf(q), shapeOf(k), shapeOf(v)];
  if (rankOf(q) < 2 || rankOf(k) < 2 || rankOf(v) < 2) {
    throw new TensorShapeError(
      op,
      `q, k and v must be [..., L, E], got ${shapes.map(formatShape).join(", ")}`,
      shapes,
    );
  }
  const [l, e] = shapeOf(q).slice(-2);
  const [s, ek] = shapeOf(k).slice(-2);
  if (ek !== e || shapeOf(v)[rankOf(v) - 2] !== s) {
    throw new TensorShapeError(
      op,
      `q [..., L, E], k [..., S, E] and v [..., S, Ev] must agree on E and S, got ${
        shapes.map(formatShape).join(", ")
      }`,
      shapes,
    );
  }
  const groups = gqa ? gqaGroups(op, q, k, v) : 1;
  // Grouped heads broadcast as one head axis of H: the batch axes are those before it.
  const lead = groups > 1 ? 3 : 2;
  const batch = broadcastShapes(
    op,
    broadcastShapes(op, shapeOf(q).slice(0, -lead), shapeOf(k).slice(0, -lead)),
    shapeOf(v).slice(0, -lead),
  );
  const scores = [...batch, ...(groups > 1 ? [shapeOf(q)[rankOf(q) - 3]] : []), l, s];
  if (mask === undefined) return { scores, groups };
  if (
    !isTensor(mask) || (dtypeOf(mask) !== DType.F32 && dtypeOf(mask) !== DType.Bool) ||
    blockSizeOf(mask) > 0
  ) {
    throw new DTypeError(
      op,
      "mask must be a Bool tensor (true attends) or an F32 tensor added to the scores",
    );
  }
  const joined = broadcastShapes(op, shapeOf(mask), scores);
  if (joined.length !== scores.length || joined.some((x, i) => x !== scores[i])) {
    throw new TensorShapeError(
      op,
      `the mask ${formatShape(shapeOf(mask))} must broadcast to the scores ${formatShape(scores)}`,
      [shapeOf(mask), scores],
    );
  }
  return { scores, groups };
}

/** The checked dropout probability of attention's weights. */
function attentionDropout(op: string, p: unknown): number {
  if (p === undefined) return 0;
  if (typeof p !== "number" || !(p >= 0 && p <= 1)) {
    throw new OptionError(op, `dropout must be a probability in [0, 1], got ${describe(p)}`);
  }
  return p;
}

/**
 * Scaled dot-product attention, PyTorch's `scaled_dot_product_attention`:
 * `dropout(softmax(q·kᵀ·scale + mask)) · v` for q [..., L, E], k [..., S, E], v [..., S, Ev] (batch axes
 * broadcast), giving [..., L, Ev]. A Bool `mask` excludes positions where it is false; an F32 mask is
 * added. A query row that a Bool mask and `causal` leave with no key gives zeros and no gradient, like
 * PyTorch's safe softmax (a row that an F32 mask fills with −∞ gives NaN). `dropout` zeros attention weights
 * with `ops.dropout` (seeded by `seed`, skipped when `training` is false); `enableGqa` lets k and v have fewer
 * heads than q, each kv head serving a group of consecutive query heads (no copy of k or v). One fused kernel
 * call (`src/kernels/attention.ts`: key blocks with an online softmax, no L×S scores) recording Attention,
 * whose backward is one kernel call too; with dropout in training, or when an F32 mask needs a gradient, it is
 * built from matmul, mul, add, softmax and dropout's product, whose records carry the gradient.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using q = Tensor.from([[1, 0], [0, 1]]);
 * using k = Tensor.from([[1, 0], [0, 1]]);
 * using v = Tensor.from([[10, 0], [0, 10]]);
 * using y = ops.attention(q, k, v, { causal: true });
 * assert.deepEqual([...y.toArray().slice(0, 2)], [10, 0]); // row 0 sees only position 0
 * // Four query heads share two kv heads: heads 0, 1 use kv head 0 and heads 2, 3 kv head 1.
 * using qh = Tensor.randn([4, 3, 2], { seed: 1 });
 * using kh = Tensor.randn([2, 5, 2], { seed: 2 });
 * using vh = Tensor.randn([2, 5, 2], { seed: 3 });
 * using grouped = ops.attention(qh, kh, vh, { enableGqa: true, dropout: 0.1, training: false });
 * using head3 = ops.attention(qh.slice(0, 3, 4), kh.slice(0, 1, 2), vh.slice(0, 1, 2));
 * assert.deepEqual([...grouped.slice(0, 3, 4).toArray()], [...head3.toArray()]);
 * ```
 */
export function attention(q: Tensor, k: Tensor, v: Tensor, options?: AttentionOptions): Tensor {
  const op = "attention";
  options = checkOptions(op, options, [
    "mask",
    "causal",
    "scale",
    "dropout",
    "training",
    "seed",
    "enableGqa",
  ]);
  const mask = options.mask;
  const gqa = checkBoolean(op, "enableGqa", options.enableGqa, false);
  const { scores, groups } = attentionShape(op, q, k, v, mask, gqa);
  const scale = options.scale ?? 1 / Math.sqrt(shapeOf(q)[rankOf(q) - 1]);
  if (typeof scale !== "number" || !Number.isFinite(scale)) {
    throw new OptionError(op, `scale must be a finite number, got ${String(scale)}`);
  }
  const p = attentionDropout(op, options.dropout);
  const training = checkBoolean(op, "training", options.training, true);
  const [l, s] = scores.slice(-2);
  const bool = mask !== undefined && dtypeOf(mask) === DType.Bool ? mask : undefined;
  const causal = checkBoolean(op, "causal", options.causal, false);
  // Grouped heads: q [..., H, L, E] as [..., Hkv, G, L, E] against k and v [..., Hkv, 1, S, ·].
  const grouped = (x: Tensor, kv: boolean) => {
    if (groups === 1) return x;
    if (kv) return unsqueeze(x, -3);
    const [heads, rows, width] = shapeOf(x).slice(-3);
    return reshape(x, [...shapeOf(x).slice(0, -3), heads / groups, groups, rows, width]);
  };
  const run = () => {
    const product = matmul(grouped(q, false), transpose(grouped(k, true), -1, -2));
    let logits = mul(groups === 1 ? product : reshape(product, scores), scale);
    const constant = bool !== undefined || causal ? constantMask(bool, causal, l, s) : null;
    if (constant !== null) logits = add(logits, constant.additive);
    if (mask !== undefined && bool === undefined) logits = add(logits, mask);
    let probabilities = softmax(logits, -1);
    if (constant?.alive) probabilities = mul(probabilities, constant.alive);
    const seed = options.seed === undefined ? {} : { seed: options.seed };
    probabilities = dropout(probabilities, { p, training, ...seed });
    const out = matmul(grouped(probabilities, false), grouped(v, true));
    return groups === 1 ? out : reshape(out, [...scores.slice(0, -1), shapeOf(out).at(-1)!]);
  };
  const recording = shouldRecord(q, k, v, ...(mask === undefined ? [] : [mask]));
  // The fused kernel: without dropout, and without a gradient to an F32 mask (the composition gives that).
  if ((p === 0 || !training) && !(mask !== undefined && bool === undefined && shouldRecord(mask))) {
    const o = { mask, bool: bool !== undefined, causal, scale, groups, scores };
    const fused = fusedAttention(op, q, k, v, o);
    if (fused !== null) {
      if (!recording) {
        fused.lse.dispose();
        return fused.out;
      }
      return record(fused.out, "Attention", [q, k, v], {
        saved: [q, k, v, mask ?? null, fused.flat, fused.lse],
        attrs: {
          scale,
          causal,
          groups,
          mask: mask === undefined ? "none" : bool !== undefined ? "bool" : "f32",
        },
        owned: [fused.lse],
      });
    }
  }
  // Without a record nothing needs the intermediates: a scope frees them and keeps the result.
  return recording ? run() : tidy(run);
}

/** The batch axes the fused kernel takes (the native argument block's rank, less the two matrix axes). */
const FUSED_BATCH_RANK = 6;

/** `t` itself when its rows are contiguous (last stride 1, row stride ≥ 0), else a contiguous copy without a record. */
function rowMajor(t: Tensor): Tensor {
  const n = rankOf(t);
  const rowsOk = (stridesOf(t)[n - 1] === 1 || shapeOf(t)[n - 1] === 1) &&
    (stridesOf(t)[n - 2] >= 0 || shapeOf(t)[n - 2] === 1);
  return rowsOk ? t : GradMode.noGrad(() => contiguous(t));
}

/** Strides of `t` over `shape` (right-aligned; 0 where `t` lacks the axis or has extent 1 there). */
function alignedStrides(t: Tensor, shape: readonly number[]): number[] {
  return shape.map((_, d) => {
    const at = d - (shape.length - rankOf(t));
    return at < 0 || shapeOf(t)[at] === 1 ? 0 : stridesOf(t)[at];
  });
}

/** Query rows per work item and the task count of a fused call over `count` batch entries. */
function fusedTasks(
  count: number,
  l: number,
  work: number,
  threads: number,
): { rows: number; tasks: number } {
  let chunks = Math.ceil(l / 256);
  if (threads > 1) chunks = Math.max(chunks, Math.min(Math.ceil(l / 16), Math.ceil((4 * threads) / count)));
  const rows = Math.ceil(l / chunks);
  const items = count * Math.ceil(l / rows);
  return { rows, tasks: work < 1 << 18 ? 1 : Math.min(threads, items) };
}

/** What the fused kernel needs of an attention call besides q, k and v. */
interface FusedOptions {
  readonly mask: Tensor | undefined;
  readonly bool: boolean;
  readonly causal: boolean;
  readonly scale: number;
  readonly groups: number;
  readonly scores: readonly number[];
}

/** The fused kernel's parameters and operands for q, k, v and the mask, and the copies made for it. */
interface FusedCall {
  readonly params: AttentionParams;
  readonly operands: Omit<AttentionOperands, "out" | "lse" | "work">;
  readonly copies: Tensor[];
}

/**
 * The batch extents of a fused call (grouped heads as [..., Hkv, G]), or null where the kernel does not
 * apply (an empty extent, more batch axes than it takes).
 */
function fusedBatch(q: Tensor, v: Tensor, o: FusedOptions): number[] | null {
  const { groups, scores } = o;
  const [l, s] = scores.slice(-2);
  if (l === 0 || s === 0 || shapeOf(q)[rankOf(q) - 1] === 0 || shapeOf(v)[rankOf(v) - 1] === 0) return null;
  const batch = groups === 1
    ? scores.slice(0, -2)
    : [...scores.slice(0, -3), scores[scores.length - 3] / groups, groups];
  return batch.length > FUSED_BATCH_RANK || batch.includes(0) ? null : batch;
}

/** Lays out q, k, v and the mask for the fused kernel; `perEntry`: one work item per batch entry (backward). */
function fusedCall(
  op: string,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  o: FusedOptions,
  batch: number[],
  perEntry: boolean,
): FusedCall {
  const { mask, groups, scores } = o;
  const [l, s] = scores.slice(-2);
  const e = shapeOf(q)[rankOf(q) - 1];
  const ev = shapeOf(v)[rankOf(v) - 1];
  const count = batch.reduce((a, b) => a * b, 1);
  const threads = computeSettings().threads;
  const work = count * l * s * (e + ev);
  const { rows, tasks } = perEntry
    ? { rows: l, tasks: work < 1 << 18 ? 1 : Math.min(threads, count) }
    : fusedTasks(count, l, work, threads);
  const params = { batch, l, s, e, ev, scale: o.scale, causal: o.causal, rows, tasks };
  // Contiguous copies made for the kernel (views share their storage with the inputs and are not freed).
  const copies: Tensor[] = [];
  const group = (t: Tensor, kv: boolean) => {
    if (groups === 1) return t;
    if (kv) return unsqueeze(t, -3);
    const [heads, r, w] = shapeOf(t).slice(-3);
    return reshape(t, [...shapeOf(t).slice(0, -3), heads / groups, groups, r, w]);
  };
  const [qd, kd, vd] = [group(q, false), group(k, true), group(v, true)].map((t) => {
    const d = rowMajor(t);
    if (d !== t) copies.push(d);
    return d;
  });
  let maskOperand = null;
  if (mask !== undefined) {
    let strides = alignedStrides(mask, scores);
    if (groups > 1) {
      const h = strides.length - 3;
      strides = [...strides.slice(0, h), strides[h] * groups, strides[h], ...strides.slice(h + 1)];
    }
    maskOperand = operandOf(mask, op, strides);
  }
  return {
    params,
    operands: {
      q: operandOf(qd, op, alignedStrides(qd, [...batch, l, e]).slice(0, -1)),
      k: operandOf(kd, op, alignedStrides(kd, [...batch, s, e]).slice(0, -1)),
      v: operandOf(vd, op, alignedStrides(vd, [...batch, s, ev]).slice(0, -1)),
      mask: maskOperand,
      boolMask: o.bool,
    },
    copies,
  };
}

/**
 * Attention by the fused kernel (`src/kernels/attention.ts`): the output [..., L, Ev], the kernel's
 * contiguous output [batch, L, Ev] (the same storage) and each row's log-sum-exp [batch·L], or null where
 * the kernel does not apply.
 */
function fusedAttention(
  op: string,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  o: FusedOptions,
): { out: Tensor; flat: Tensor; lse: Tensor } | null {
  const batch = fusedBatch(q, v, o);
  if (batch === null) return null;
  const { params, operands, copies } = fusedCall(op, q, k, v, o, batch, false);
  try {
    const count = batch.reduce((a, b) => a * b, 1);
    const flat = newOutput(op, [...batch, params.l, params.ev]);
    const lse = allocate(op, [count * params.l], DType.F32, false, { scoped: true });
    const work = allocate(op, [attentionWorkspace(params)], DType.F32, false, { scoped: true });
    try {
      kernels().attention(params, {
        ...operands,
        out: operandOf(flat, op),
        lse: operandOf(lse, op),
        work: operandOf(work, op),
      }, computeSettings());
    } finally {
      work.dispose();
    }
    const out = o.groups === 1 ? flat : reshape(flat, [...o.scores.slice(0, -1), params.ev]);
    return { out, flat, lse };
  } finally {
    for (const t of copies) t.dispose();
  }
}

/** `t` summed down to `shape` (the axes it was broadcast along), without a record of its own. */
function reduceTo(t: Tensor, shape: readonly number[]): Tensor {
  const lead = rankOf(t) - shape.length;
  const axes = shapeOf(t).map((_, d) => d).filter((d) =>
    d < lead || (shape[d - lead] === 1 && shapeOf(t)[d] !== 1)
  );
  if (axes.length === 0) return t;
  return reshape(sum(t, axes, { keepDims: true }), shape);
}

/**
 * The Attention rule: dq, dk and dv by one backward kernel call (`src/kernels/attention.ts`) from the saved
 * q, k, v, mask, output and log-sum-exp, each summed down to its input's shape (broadcast batch axes, and the
 * query heads of a kv head with `enableGqa`).
 */
export function attentionBackward(r: BackwardRecord<"Attention">, g: Tensor): (Tensor | null)[] {
  const op = "attention backward";
  const { scale, causal, groups, mask: maskKind } = r.attrs;
  const [q, k, v] = [0, 1, 2].map((i) => r.savedTensor(i));
  const mask = maskKind === "none" ? undefined : r.savedTensor(3);
  const flat = r.savedTensor(4);
  const lse = r.savedTensor(5);
  const l = shapeOf(q)[rankOf(q) - 2];
  const s = shapeOf(k)[rankOf(k) - 2];
  const scores = [...shapeOf(g).slice(0, -1), s];
  const o = { mask, bool: maskKind === "bool", causal, scale, groups, scores };
  const batch = fusedBatch(q, v, o)!;
  const { params, operands, copies } = fusedCall(op, q, k, v, o, batch, true);
  const gd = isContiguousOf(g) ? g : GradMode.noGrad(() => contiguous(g));
  try {
    const dq = newOutput(op, [...batch, l, params.e]);
    const dk = newOutput(op, [...batch, s, params.e]);
    const dv = newOutput(op, [...batch, s, params.ev]);
    const work = allocate(op, [attentionBackwardWorkspace(params)], DType.F32, false, { scoped: true });
    try {
      kernels().attentionBackward(
        params,
        { ...operands, out: operandOf(flat, op), lse: operandOf(lse, op), work: operandOf(work, op) },
        { g: operandOf(gd, op), dq: operandOf(dq, op), dk: operandOf(dk, op), dv: operandOf(dv, op) },
        computeSettings(),
      );
    } finally {
      work.dispose();
    }
    // Grouped heads: [..., Hkv, G, ·, ·] back to q's [..., H, ·, ·]; k and v sum over G.
    const heads = (t: Tensor) =>
      groups === 1 ? t : reshape(t, [...batch.slice(0, -2), batch.at(-2)! * groups, ...shapeOf(t).slice(-2)]);
    const kv = (t: Tensor) => groups === 1 ? t : sum(t, rankOf(t) - 3);
    return [
      r.needsGrad(0) ? reduceTo(heads(dq), r.inputShape(0)) : null,
      r.needsGrad(1) ? reduceTo(kv(dk), r.inputShape(1)) : null,
      r.needsGrad(2) ? reduceTo(kv(dv), r.inputShape(2)) : null,
    ];
  } finally {
    if (gd !== g) gd.dispose();
    for (const t of copies) t.dispose();
  }
}

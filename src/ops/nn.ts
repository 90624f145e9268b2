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
import { allocate, Tensor } from "../tensor.ts";
import { tidy } from "../memory/scope.ts";
import { record, shouldRecord } from "../autograd/record.ts";
import { abs, add, div, gt, mul, pow, sub } from "./elementwise.ts";
import { checkF32, checkTensor, newOutput } from "./common.ts";
import { matmul } from "./linalg.ts";
import { softmax, sum } from "./reduce.ts";
import { slice, transpose, viewOf } from "./views.ts";
import { cast, contiguous, copyElements, copyInto } from "./copy.ts";

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
  const a = normalizeAxis(op, axis, first.rank, first.shape);
  for (const t of tensors) {
    if (t.rank !== first.rank || t.shape.some((e, d) => d !== a && e !== first.shape[d])) {
      throw new TensorShapeError(
        op,
        `cannot concatenate ${formatShape(first.shape)} and ${formatShape(t.shape)} along axis ${a}: ` +
          "the other extents must match",
        tensors.map((x) => x.shape),
      );
    }
  }
  const sizes = tensors.map((t) => t.shape[a]);
  const shape = [...first.shape];
  shape[a] = sizes.reduce((s, e) => s + e, 0);
  const out = allocate(op, shape, first.dtype, false, { scoped: true });
  let start = 0;
  for (const t of tensors) {
    const part = { shape: t.shape, strides: out.strides, offset: start * out.strides[a] };
    if (t.size > 0) copyElements(op, viewOf(out, part), t);
    start += t.shape[a];
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

/** The values of an integer tensor, row-major, as numbers. */
function integerValues(op: string, name: string, t: Tensor): number[] {
  if (!(t instanceof Tensor)) throw new OptionError(op, `${name} must be a Tensor, got ${String(t)}`);
  const info = dtypeInfo(t.dtype);
  if (info.isFloat || info.isQuantized || info.name === "Bool" || t.blockSize > 0) {
    throw new DTypeError(op, `${name} must be an integer tensor, got ${info.name}`);
  }
  return Array.from(t.toArray() as ArrayLike<number | bigint>, Number);
}

/** Copies row `ids[i]` of the [rows, dim] table into row i of `out`. */
function gatherRows(weight: Tensor, ids: readonly number[], out: Tensor): void {
  const dim = weight.shape[1];
  const table = weight.isContiguous ? weight : GradMode.noGrad(() => contiguous(weight));
  try {
    const source = table.data() as Float32Array;
    const target = out.data() as Float32Array;
    ids.forEach((id, i) => target.set(source.subarray(id * dim, (id + 1) * dim), i * dim));
  } finally {
    if (table !== weight) table.dispose();
  }
}

/**
 * PyTorch's `embedding_renorm_`: each row of `weight` that `ids` looks up and whose p-norm exceeds `maxNorm` is
 * scaled in place by `maxNorm/(norm + 1e-7)`, with recording off, by element-wise ops over all rows and a 0/1
 * mask of the looked-up ones.
 */
function renormRows(
  op: string,
  weight: Tensor,
  ids: readonly number[],
  maxNorm: number,
  normType: number,
): void {
  if (typeof maxNorm !== "number" || !(maxNorm >= 0) || maxNorm === Infinity) {
    throw new OptionError(op, `maxNorm must be a finite number ≥ 0, got ${describe(maxNorm)}`);
  }
  if (typeof normType !== "number" || !(normType > 0) || normType === Infinity) {
    throw new OptionError(op, `normType must be a finite number > 0, got ${describe(normType)}`);
  }
  const rows = weight.shape[0];
  const looked = new Float32Array(rows);
  for (const id of ids) looked[id] = 1;
  GradMode.noGrad(() =>
    tidy(() => {
      const norms = pow(sum(pow(abs(weight), normType), 1, { keepDims: true }), 1 / normType);
      using mask = Tensor.from(looked, [rows, 1]);
      const apply = mul(cast(gt(norms, maxNorm), DType.F32), mask);
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
  const count = indices.size;
  const grad = allocate(op, [rows, dim], DType.F32, true, { scoped: true });
  const ids = cast(indices, DType.I32);
  const source = contiguous(g);
  try {
    kernels().indexAdd(
      { groups: 1, count, width: dim, rows, flat: false },
      grad.operand(op, [rows * dim, dim, 1]),
      source.operand(op, [count * dim, dim, 1]),
      ids.operand(op, [count, 1]),
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
  if (weight.rank !== 2) {
    throw new TensorShapeError(op, `weight must be [rows, dim], got ${formatShape(weight.shape)}`, [
      weight.shape,
    ]);
  }
  const rows = weight.shape[0];
  const ids = integerValues(op, "indices", indices);
  ids.forEach((id, i) => {
    if (id < 0 || id >= rows) {
      throw new TensorShapeError(
        op,
        `index ${id} at position ${i} is outside the ${rows} rows of weight ${formatShape(weight.shape)}`,
        [indices.shape, weight.shape],
      );
    }
  });
  const padding = options.paddingIdx;
  if (padding !== undefined && (!Number.isInteger(padding) || padding < -rows || padding >= rows)) {
    throw new TensorShapeError(
      op,
      `paddingIdx must be an integer in ${-rows} to ${rows - 1}, got ${String(padding)}`,
      [weight.shape],
    );
  }
  if (options.maxNorm !== undefined) renormRows(op, weight, ids, options.maxNorm, options.normType ?? 2);
  const out = newOutput(op, [...indices.shape, weight.shape[1]]);
  gatherRows(weight, ids, out);
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
}

/** The constant part of the attention mask: additive (0 or −∞) and the rows left with something to attend to. */
interface ConstantMask {
  /** 0 where attention is allowed, −∞ where not, except 0 across rows that allow nothing. */
  readonly additive: Tensor;
  /** [..., rows, 1]: 1 for rows that allow something, 0 for the others; null when every row does. */
  readonly alive: Tensor | null;
}

/**
 * Combines a Bool mask and the causal rule into one additive F32 tensor of their broadcast shape. Rows that
 * exclude every key get 0 instead of −∞ (finite scores, no NaN) and a 0 in `alive`, which zeros their
 * probabilities afterwards, as PyTorch's safe softmax does.
 */
function constantMask(
  op: string,
  mask: Tensor | undefined,
  causal: boolean,
  l: number,
  s: number,
): ConstantMask {
  const shape = mask === undefined
    ? [l, s]
    : causal
    ? broadcastShapes(op, mask.shape, [l, s])
    : [...mask.shape];
  const rank = shape.length;
  const bits = mask === undefined ? null : (mask.toArray() as Uint8Array);
  const lead = mask === undefined ? 0 : rank - mask.rank;
  const maskStrides = mask === undefined
    ? []
    : mask.shape.map((_, d) => mask.shape.slice(d + 1).reduce((a, b) => a * b, 1));
  const width = shape[rank - 1] ?? 1;
  const additive = newOutput(op, shape);
  const values = additive.data() as Float32Array;
  const rowCount = values.length / Math.max(width, 1);
  const alive = new Float32Array(rowCount).fill(1);
  const index = new Array<number>(rank).fill(0);
  for (let flat = 0; flat < values.length; flat++) {
    let allowed = true;
    if (bits !== null) {
      let at = 0;
      for (let d = lead; d < rank; d++) {
        at += (mask!.shape[d - lead] === 1 ? 0 : index[d]) * maskStrides[d - lead];
      }
      allowed = bits[at] !== 0;
    }
    if (causal && index[rank - 1] > index[rank - 2]) allowed = false;
    values[flat] = allowed ? 0 : -Infinity;
    for (let d = rank - 1; d >= 0 && ++index[d] === shape[d]; d--) index[d] = 0;
  }
  let dead = false;
  for (let row = 0; row < rowCount; row++) {
    const cells = values.subarray(row * width, (row + 1) * width);
    if (width > 0 && cells.every((v) => v === -Infinity)) {
      cells.fill(0);
      alive[row] = 0;
      dead = true;
    }
  }
  if (!dead) return { additive, alive: null };
  const rows = newOutput(op, [...shape.slice(0, -1), 1]);
  (rows.data() as Float32Array).set(alive);
  return { additive, alive: rows };
}

/** The checked shape of the scores [...batch, L, S]. */
function attentionScores(op: string, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | undefined): number[] {
  checkF32(op, q, k, v);
  const shapes = [q.shape, k.shape, v.shape];
  if (q.rank < 2 || k.rank < 2 || v.rank < 2) {
    throw new TensorShapeError(
      op,
      `q, k and v must be [..., L, E], got ${shapes.map(formatShape).join(", ")}`,
      shapes,
    );
  }
  const [l, e] = q.shape.slice(-2);
  const [s, ek] = k.shape.slice(-2);
  if (ek !== e || v.shape[v.rank - 2] !== s) {
    throw new TensorShapeError(
      op,
      `q [..., L, E], k [..., S, E] and v [..., S, Ev] must agree on E and S, got ${
        shapes.map(formatShape).join(", ")
      }`,
      shapes,
    );
  }
  const batch = broadcastShapes(
    op,
    broadcastShapes(op, q.shape.slice(0, -2), k.shape.slice(0, -2)),
    v.shape.slice(0, -2),
  );
  const scores = [...batch, l, s];
  if (mask === undefined) return scores;
  if (
    !(mask instanceof Tensor) || (mask.dtype !== DType.F32 && mask.dtype !== DType.Bool) || mask.blockSize > 0
  ) {
    throw new DTypeError(
      op,
      "mask must be a Bool tensor (true attends) or an F32 tensor added to the scores",
    );
  }
  const joined = broadcastShapes(op, mask.shape, scores);
  if (joined.length !== scores.length || joined.some((x, i) => x !== scores[i])) {
    throw new TensorShapeError(
      op,
      `the mask ${formatShape(mask.shape)} must broadcast to the scores ${formatShape(scores)}`,
      [mask.shape, scores],
    );
  }
  return scores;
}

/**
 * Scaled dot-product attention, PyTorch's `scaled_dot_product_attention` without dropout:
 * `softmax(q·kᵀ·scale + mask) · v` for q [..., L, E], k [..., S, E], v [..., S, Ev] (batch axes broadcast),
 * giving [..., L, Ev]. A Bool `mask` excludes positions where it is false; an F32 mask is added. A query row
 * that a Bool mask and `causal` leave with no key gives zeros and no gradient, like PyTorch's safe softmax
 * (a row that an F32 mask fills with −∞ gives NaN). Built from matmul, mul, add and softmax, whose records
 * carry the gradient (to q, k, v and an F32 mask).
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
 * ```
 */
export function attention(q: Tensor, k: Tensor, v: Tensor, options?: AttentionOptions): Tensor {
  const op = "attention";
  options = checkOptions(op, options, ["mask", "causal", "scale"]);
  const mask = options.mask;
  const scores = attentionScores(op, q, k, v, mask);
  const scale = options.scale ?? 1 / Math.sqrt(q.shape[q.rank - 1]);
  if (typeof scale !== "number" || !Number.isFinite(scale)) {
    throw new OptionError(op, `scale must be a finite number, got ${String(scale)}`);
  }
  const [l, s] = scores.slice(-2);
  const bool = mask !== undefined && mask.dtype === DType.Bool ? mask : undefined;
  const causal = checkBoolean(op, "causal", options.causal, false);
  const run = () => {
    let logits = mul(matmul(q, transpose(k, -1, -2)), scale);
    const constant = bool !== undefined || causal ? constantMask(op, bool, causal, l, s) : null;
    if (constant !== null) logits = add(logits, constant.additive);
    if (mask !== undefined && bool === undefined) logits = add(logits, mask);
    const probabilities = softmax(logits, -1);
    return matmul(constant?.alive ? mul(probabilities, constant.alive) : probabilities, v);
  };
  // Without a record nothing needs the intermediates: a scope frees them and keeps the result.
  return shouldRecord(q, k, v, ...(mask === undefined ? [] : [mask])) ? run() : tidy(run);
}

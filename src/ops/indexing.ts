/**
 * Indexing along one axis (`gather`, `scatterAdd`, `indexSelect`), the running sum (`cumsum`) and the
 * reductions that return their indices (`maxWithIndices`, `minWithIndices`), as PyTorch's `torch.gather`,
 * `scatter_add`, `index_select`, `cumsum` and `torch.max(x, dim)`. One native call each
 * (`zig/kernels/index.zig`); indices are I64 or I32, and one outside the axis is a `TensorShapeError` that
 * names the op, the index and the bound, raised before anything is written.
 *
 * @module
 */
import { DType, dtypeInfo } from "../core/dtype.ts";
import { DTypeError, OptionError, TensorShapeError } from "../core/errors.ts";
import { formatShape, normalizeAxis } from "../core/shape.ts";
import { computeSettings, kernels } from "../context.ts";
import {
  allocate,
  blockSizeOf,
  dtypeOf,
  operandOf,
  rankOf,
  shapeOf,
  sizeOf,
  stridesOf,
  Tensor,
} from "../tensor.ts";
import { IndexOp } from "../kernels/indexing.ts";
import { recordOp } from "../autograd/record.ts";
import { add, eq, ge, le, mul, sub } from "./elementwise.ts";
import { checkOptions, describe } from "../core/options.ts";
import { cast, clone } from "./copy.ts";
import { expand, flip, reshape, slice, squeeze, unsqueeze } from "./views.ts";
import { concat } from "./nn.ts";
import { argmax, argmin, keepDimsOf, max, min, type ReduceOptions } from "./reduce.ts";
import { checkF32, checkTensor, newOutput } from "./common.ts";

/** `index` checked to be a plain I64 or I32 tensor. */
function checkIndex(op: string, index: Tensor): void {
  checkTensor(op, "index", index);
  if ((dtypeOf(index) !== DType.I64 && dtypeOf(index) !== DType.I32) || blockSizeOf(index) > 0) {
    throw new DTypeError(op, `index must be an I64 or I32 tensor, got ${dtypeInfo(dtypeOf(index)).name}`);
  }
}

/** The error for an index outside [0, bound); reads the index only on this error path, to name the value. */
function outOfRange(op: string, index: Tensor, bound: number, axis: number, shape: readonly number[]): never {
  const values = Array.from(index.toArray() as ArrayLike<number | bigint>, Number);
  const position = values.findIndex((v) => v < 0 || v >= bound);
  throw new TensorShapeError(
    op,
    `index ${values[position]} at position ${position} is out of range for axis ${axis} of extent ${bound} ` +
      `(shape ${formatShape(shape)}); indices must lie in [0, ${bound})`,
    [shape, shapeOf(index)],
  );
}

/** Every axis but `axis` of `index` must fit in `t` (PyTorch's rule for gather and scatter). */
function checkFits(op: string, name: string, t: Tensor, index: Tensor, axis: number): void {
  if (rankOf(index) !== rankOf(t) || shapeOf(index).some((e, d) => d !== axis && e > shapeOf(t)[d])) {
    throw new TensorShapeError(
      op,
      `index ${formatShape(shapeOf(index))} must have the rank of ${name} ${
        formatShape(shapeOf(t))
      } and no larger ` +
        `extent on any axis but ${axis}`,
      [shapeOf(t), shapeOf(index)],
    );
  }
}

function gatherAs(op: string, x: Tensor, axis: number, index: Tensor): Tensor {
  checkF32(op, x);
  checkIndex(op, index);
  const a = normalizeAxis(op, axis, rankOf(x), shapeOf(x));
  checkFits(op, "the input", x, index, a);
  const out = newOutput(op, shapeOf(index));
  const ok = kernels().index(
    IndexOp.Gather,
    shapeOf(index),
    a,
    shapeOf(x)[a],
    operandOf(x, op, stridesOf(x)),
    operandOf(out, op, stridesOf(out)),
    operandOf(index, op, stridesOf(index)),
    computeSettings(),
  );
  if (!ok) outOfRange(op, index, shapeOf(x)[a], a, shapeOf(x));
  return recordOp("gather", out, [x], { saved: [index], attrs: { axis: a } });
}

/**
 * `out[i][j][k] = x[i][index[i][j][k]][k]` for `axis` 1 (and so on), as `torch.gather`: `index` (I64 or I32) has
 * the rank of `x`, no larger extent on the other axes, and gives the output its shape. The gradient adds `g`
 * into the gathered positions.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DType, ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[1, 2], [3, 4]]);
 * using index = Tensor.from([[0, 0], [1, 0]], { dtype: DType.I64 });
 * using out = ops.gather(x, 1, index);
 * assert.deepEqual(out.toNested(), [[1, 1], [4, 3]]);
 * ```
 */
export function gather(x: Tensor, axis: number, index: Tensor): Tensor {
  return gatherAs("gather", x, axis, index);
}

/**
 * The slices of `x` at the positions `index` (a 1-D I64 or I32 tensor) along `axis`, as `torch.index_select`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DType, ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[1, 2, 3], [4, 5, 6]]);
 * using cols = x.indexSelect(1, Tensor.from([2, 0], { dtype: DType.I32 }));
 * assert.deepEqual(cols.toNested(), [[3, 1], [6, 4]]);
 * ```
 */
export function indexSelect(x: Tensor, axis: number, index: Tensor): Tensor {
  checkF32("indexSelect", x);
  checkIndex("indexSelect", index);
  if (rankOf(index) !== 1) {
    throw new TensorShapeError("indexSelect", `index must be 1-D, got ${formatShape(shapeOf(index))}`, [
      shapeOf(index),
    ]);
  }
  const a = normalizeAxis("indexSelect", axis, rankOf(x), shapeOf(x));
  const shape = shapeOf(x).map((e, d) => (d === a ? shapeOf(index)[0] : e));
  // The index along `axis`, broadcast over the other axes: a gather.
  const spread = expand(reshape(index, shapeOf(x).map((_, d) => (d === a ? shapeOf(index)[0] : 1))), shape);
  return gatherAs("indexSelect", x, a, spread);
}

/**
 * A copy of `x` with `src[i][j][k]` added at `[i][index[i][j][k]][k]` for `axis` 1 (and so on), as
 * `Tensor.scatter_add`: `index` has the shape of `src` and no larger extent than `x` on the other axes;
 * repeated indices add up, in row-major order of `index`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DType, ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.zeros([3]);
 * using index = Tensor.from([0, 2, 0], { dtype: DType.I64 });
 * using out = ops.scatterAdd(x, 0, index, Tensor.from([1, 2, 3]));
 * assert.deepEqual(out.toNested(), [4, 0, 2]);
 * ```
 */
export function scatterAdd(x: Tensor, axis: number, index: Tensor, src: Tensor): Tensor {
  const op = "scatterAdd";
  checkF32(op, x, src);
  checkIndex(op, index);
  const a = normalizeAxis(op, axis, rankOf(x), shapeOf(x));
  checkFits(op, "the input", x, index, a);
  if (rankOf(src) !== rankOf(index) || shapeOf(src).some((e, d) => e !== shapeOf(index)[d])) {
    throw new TensorShapeError(
      op,
      `src ${formatShape(shapeOf(src))} must have the shape of index ${formatShape(shapeOf(index))}`,
      [shapeOf(src), shapeOf(index)],
    );
  }
  const out = allocate(op, shapeOf(x), DType.F32, false, { scoped: true });
  const settings = computeSettings();
  kernels().copy(4, shapeOf(x), operandOf(out, op, stridesOf(out)), operandOf(x, op, stridesOf(x)), settings);
  const ok = kernels().index(
    IndexOp.ScatterAdd,
    shapeOf(index),
    a,
    shapeOf(x)[a],
    operandOf(out, op, stridesOf(out)),
    operandOf(src, op, stridesOf(src)),
    operandOf(index, op, stridesOf(index)),
    settings,
  );
  if (!ok) {
    out.dispose();
    outOfRange(op, index, shapeOf(x)[a], a, shapeOf(x));
  }
  return recordOp(op, out, [x, src], { saved: [index], attrs: { axis: a } });
}

/**
 * The running sum along `axis`, as `torch.cumsum`: each output adds in f64 in ascending order and rounds once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[1, 2, 3], [4, 5, 6]]);
 * using c = x.cumsum(1);
 * assert.deepEqual(c.toNested(), [[1, 3, 6], [4, 9, 15]]);
 * ```
 */
export function cumsum(x: Tensor, axis: number): Tensor {
  checkF32("cumsum", x);
  // A rank-0 tensor is its own running sum (axis 0 or −1), as PyTorch.
  if (rankOf(x) === 0) return reshape(cumsum(reshape(x, [1]), normalizeAxis("cumsum", axis, 1, [1])), []);
  const a = normalizeAxis("cumsum", axis, rankOf(x), shapeOf(x));
  const out = newOutput("cumsum", shapeOf(x));
  kernels().index(
    IndexOp.CumSum,
    shapeOf(x),
    a,
    0,
    operandOf(x, "cumsum", stridesOf(x)),
    operandOf(out, "cumsum", stridesOf(out)),
    null,
    computeSettings(),
  );
  return recordOp("cumsum", out, [x], { attrs: { axis: a } });
}

/** The values and I64 indices of a reduction along one axis (PyTorch's `torch.max(x, dim)` result). */
export interface ValuesAndIndices {
  /** The maxima (or minima). */
  readonly values: Tensor;
  /** Their positions along the axis: the first maximum, or the first NaN. */
  readonly indices: Tensor;
}

function extremeWithIndices(
  op: "maxWithIndices" | "minWithIndices",
  x: Tensor,
  axis: number,
  options: ReduceOptions | boolean | undefined,
): ValuesAndIndices {
  checkF32(op, x);
  const keepDims = keepDimsOf(op, options);
  const a = normalizeAxis(op, axis, rankOf(x), shapeOf(x));
  const indices = (op === "maxWithIndices" ? argmax : argmin)(x, a, { keepDims: true });
  const values = gatherAs(op, x, a, indices);
  return keepDims ? { values, indices } : { values: squeeze(values, a), indices: squeeze(indices, a) };
}

/**
 * The maximum along `axis` with its index, as `torch.max(x, dim)`: `{ values, indices }` (I64, the first
 * maximum or the first NaN). The gradient goes to that one position only, as PyTorch's.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[1, 5, 5], [7, 0, 2]]);
 * const { values, indices } = ops.maxWithIndices(x, 1);
 * assert.deepEqual(values.toNested(), [5, 7]);
 * assert.deepEqual([...(indices.toArray() as BigInt64Array)], [1n, 0n]);
 * values.dispose();
 * indices.dispose();
 * ```
 */
export function maxWithIndices(x: Tensor, axis: number, options?: ReduceOptions | boolean): ValuesAndIndices {
  return extremeWithIndices("maxWithIndices", x, axis, options);
}

/** The minimum along `axis` with its index, as `torch.min(x, dim)` (see `maxWithIndices`). */
export function minWithIndices(x: Tensor, axis: number, options?: ReduceOptions | boolean): ValuesAndIndices {
  return extremeWithIndices("minWithIndices", x, axis, options);
}

/**
 * Joins tensors of one shape along a new axis `axis` (0 by default; negative counts from the end of the
 * result), as `torch.stack`: a concatenation of their `unsqueeze`d views, so it passes gradients back.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using a = Tensor.from([1, 2]);
 * using b = Tensor.from([3, 4]);
 * using rows = ops.stack([a, b]);
 * using cols = ops.stack([a, b], -1);
 * assert.deepEqual([rows.toNested(), cols.toNested()], [[[1, 2], [3, 4]], [[1, 3], [2, 4]]]);
 * ```
 */
export function stack(tensors: readonly Tensor[], axis = 0): Tensor {
  if (!Array.isArray(tensors) || tensors.length === 0) {
    throw new TensorShapeError("stack", "stack needs a non-empty array of tensors");
  }
  tensors.forEach((t) => checkTensor("stack", "each entry of the array of Tensors", t));
  const list: readonly Tensor[] = tensors;
  const shape = shapeOf(list[0]);
  for (const t of list) {
    if (rankOf(t) !== shape.length || shapeOf(t).some((e, d) => e !== shape[d])) {
      throw new TensorShapeError(
        "stack",
        `every tensor must have the same shape, got ${formatShape(shape)} and ${formatShape(shapeOf(t))}`,
        [shape, shapeOf(t)],
      );
    }
  }
  const a = normalizeAxis("stack", axis, shape.length + 1, [...shape, 1]);
  return concat(list.map((t) => unsqueeze(t, a)), a);
}

/**
 * `x` tiled `reps[i]` times along each axis, as `Tensor.repeat`: `reps` has at least `x`'s rank (extra entries
 * add leading axes). An expand and a reshape (a copy), so it passes gradients back (summed over the copies).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[1, 2]]);
 * using r = x.repeat([2, 2]);
 * assert.deepEqual(r.toNested(), [[1, 2, 1, 2], [1, 2, 1, 2]]);
 * ```
 */
export function repeat(x: Tensor, reps: readonly number[]): Tensor {
  checkTensor("repeat", "the input", x);
  if (!Array.isArray(reps) || reps.some((r) => !Number.isInteger(r) || r < 0) || reps.length < rankOf(x)) {
    throw new TensorShapeError(
      "repeat",
      `reps must be non-negative integers, at least one per axis of ${formatShape(shapeOf(x))}, got ` +
        JSON.stringify(reps),
      [shapeOf(x)],
    );
  }
  const shape = [...Array(reps.length - rankOf(x)).fill(1), ...shapeOf(x)];
  // [1, s0, 1, s1, ...] expanded to [r0, s0, r1, s1, ...], then merged pairwise.
  const spread = reshape(x, shape.flatMap((s) => [1, s]));
  const tiled = expand(spread, shape.flatMap((s, i) => [reps[i], s]));
  return reshape(tiled, shape.map((s, i) => s * reps[i]));
}

/**
 * I64 one-hot rows: `out[..., c]` is 1 where `labels[...]` is c, as `F.one_hot`. `labels` is I64 or I32 in
 * [0, numClasses); `numClasses` −1 (the default, as PyTorch) takes the largest label + 1. At most 2^24 classes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DType, ops, Tensor } from "@zigtensor/zigtensor";
 * using labels = Tensor.from([2, 0], { dtype: DType.I64 });
 * using hot = ops.oneHot(labels, 3);
 * assert.equal(hot.dtype, DType.I64);
 * assert.deepEqual(hot.toNested(), [[0n, 0n, 1n], [1n, 0n, 0n]]);
 * ```
 */
export function oneHot(labels: Tensor, numClasses = -1): Tensor {
  const op = "oneHot";
  checkIndex(op, labels);
  if (!Number.isInteger(numClasses) || numClasses < -1 || numClasses > 2 ** 24) {
    throw new TensorShapeError(
      op,
      `numClasses must be −1 or an integer in [0, 2^24], got ${String(numClasses)}`,
    );
  }
  // As F32 the labels are exact below 2^24, and any larger one stays ≥ 2^24 ≥ numClasses: the check is exact.
  const values = cast(labels, DType.F32);
  if (sizeOf(labels) > 0) {
    const low = min(values).item() as number;
    const high = max(values).item() as number;
    const classes = numClasses === -1 ? high + 1 : numClasses;
    if (low < 0 || high >= classes) {
      throw new TensorShapeError(
        op,
        `label ${
          low < 0 ? low : high
        } is out of range for ${classes} classes; labels must lie in [0, ${classes})`,
        [shapeOf(labels)],
      );
    }
    numClasses = classes;
  } else if (numClasses === -1) {
    throw new TensorShapeError(op, "numClasses −1 needs at least one label to infer it from", [
      shapeOf(labels),
    ]);
  }
  using classes = Tensor.arange(numClasses);
  return cast(eq(unsqueeze(values, -1), classes), DType.I64);
}

/** Options of `tril` and `triu`. */
export interface TriangleOptions {
  /** The diagonal kept as the edge: 0 the main one, k > 0 above it, k < 0 below it. @default 0 */
  readonly diagonal?: number;
}

function triangle(op: "tril" | "triu", x: Tensor, options: TriangleOptions | undefined): Tensor {
  checkF32(op, x);
  const diagonal = checkOptions(op, options, ["diagonal"]).diagonal ?? 0;
  if (!Number.isInteger(diagonal)) {
    throw new OptionError(op, `diagonal must be an integer, got ${describe(diagonal)}`);
  }
  if (rankOf(x) < 2) {
    throw new TensorShapeError(op, `${op} needs at least 2 axes, got ${formatShape(shapeOf(x))}`, [
      shapeOf(x),
    ]);
  }
  const [n, m] = shapeOf(x).slice(-2);
  // Column j of row i where kept, else column m: a zero column appended to x. A gather, so inf and NaN outside
  // the triangle give 0 as in PyTorch, and the gradient flows to the kept elements only.
  using rows = Tensor.arange(n).reshape([n, 1]);
  using cols = Tensor.arange(m).reshape([1, m]);
  const offset = sub(cols, rows);
  const keep = cast(op === "tril" ? le(offset, diagonal) : ge(offset, diagonal), DType.F32);
  const column = add(mul(cols, keep), mul(sub(1, keep), m));
  const index = expand(
    reshape(cast(column, DType.I64), [...shapeOf(x).slice(0, -2).map(() => 1), n, m]),
    shapeOf(x),
  );
  const zeros = allocate(op, [...shapeOf(x).slice(0, -1), 1], DType.F32, true, { scoped: true });
  return gatherAs(op, concat([x, zeros], -1), rankOf(x) - 1, index);
}

/**
 * The lower triangle of the last two axes (the rest 0), as `torch.tril`: elements with column − row ≤
 * `diagonal` are kept.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[1, 2, 3], [4, 5, 6]]);
 * using lower = ops.tril(x);
 * using upper = x.triu({ diagonal: 1 });
 * assert.deepEqual([lower.toNested(), upper.toNested()], [[[1, 0, 0], [4, 5, 0]], [[0, 2, 3], [0, 0, 6]]]);
 * ```
 */
export function tril(x: Tensor, options?: TriangleOptions): Tensor {
  return triangle("tril", x, options);
}

/** The upper triangle of the last two axes (the rest 0), as `torch.triu`: column − row ≥ `diagonal` is kept. */
export function triu(x: Tensor, options?: TriangleOptions): Tensor {
  return triangle("triu", x, options);
}

/** Options of `pad`. */
export interface PadOptions {
  /** `"constant"` fills with `value`, `"reflect"` mirrors without the edge, `"replicate"` repeats the edge. */
  readonly mode?: "constant" | "reflect" | "replicate";
  /** The fill of `"constant"`. @default 0 */
  readonly value?: number;
}

/**
 * `x` padded as `F.pad(x, pads, mode, value)`: `pads` lists (before, after) pairs from the last axis backwards
 * (`[left, right, top, bottom]` pads the last two axes). A concatenation of `x` with constant blocks, mirrored
 * slices or expanded edges, so it passes gradients back. Pads are non-negative (no cropping); reflect needs
 * pads smaller than the axis.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[1, 2, 3]]);
 * using c = ops.pad(x, [1, 2], { value: 9 });
 * using r = x.pad([2, 1], { mode: "reflect" });
 * using e = x.pad([1, 1], { mode: "replicate" });
 * assert.deepEqual(c.toNested(), [[9, 1, 2, 3, 9, 9]]);
 * assert.deepEqual(r.toNested(), [[3, 2, 1, 2, 3, 2]]);
 * assert.deepEqual(e.toNested(), [[1, 1, 2, 3, 3]]);
 * ```
 */
export function pad(x: Tensor, pads: readonly number[], options?: PadOptions): Tensor {
  const op = "pad";
  checkF32(op, x);
  const checked = checkOptions(op, options, ["mode", "value"]);
  const mode = checked.mode ?? "constant";
  const value = checked.value ?? 0;
  if (mode !== "constant" && mode !== "reflect" && mode !== "replicate") {
    throw new OptionError(op, `mode must be "constant", "reflect" or "replicate", got ${describe(mode)}`);
  }
  if (typeof value !== "number") throw new OptionError(op, `value must be a number, got ${describe(value)}`);
  if (
    !Array.isArray(pads) || pads.length % 2 !== 0 || pads.length > 2 * rankOf(x) ||
    pads.some((p) => !Number.isInteger(p) || p < 0)
  ) {
    throw new TensorShapeError(
      op,
      `pads must be pairs of non-negative integers, at most one pair per axis of ${
        formatShape(shapeOf(x))
      }, got ` +
        JSON.stringify(pads),
      [shapeOf(x)],
    );
  }
  let out = x;
  for (let k = 0; k < pads.length / 2; k++) {
    const axis = rankOf(x) - 1 - k;
    const [before, after] = [pads[2 * k], pads[2 * k + 1]];
    if (before === 0 && after === 0) continue;
    const n = shapeOf(out)[axis];
    if ((mode === "reflect" && (before >= n || after >= n)) || (mode === "replicate" && n === 0)) {
      throw new TensorShapeError(
        op,
        `${mode} padding of ${before} and ${after} needs ${
          mode === "reflect" ? "pads smaller than" : "a non-empty"
        } axis ${axis} (extent ${n}) of ${formatShape(shapeOf(x))}`,
        [shapeOf(x)],
      );
    }
    const sized = (extent: number) => shapeOf(out).map((e, d) => (d === axis ? extent : e));
    const side = (extent: number, start: number): Tensor => {
      if (mode === "constant") return Tensor.full(sized(extent), value);
      if (mode === "replicate") return expand(slice(out, axis, start, start + 1), sized(extent));
      // Reflect: the `extent` elements next to the edge at `start` (excluded), mirrored.
      return start === 0
        ? flip(slice(out, axis, 1, extent + 1), axis)
        : flip(slice(out, axis, n - 1 - extent, n - 1), axis);
    };
    const parts = [...(before > 0 ? [side(before, 0)] : []), out, ...(after > 0 ? [side(after, n - 1)] : [])];
    out = concat(parts, axis);
  }
  return out === x ? clone(x) : out;
}

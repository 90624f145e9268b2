/**
 * View operations on tensors: the pure rules of `src/core/views.ts` applied to a handle, plus their backward
 * records (Permute, Slice, Select, Flip, Expand and the Reshape family of spec 000 §8). No data moves, except
 * in `reshape`'s fallback, which copies.
 *
 * @module
 */
import { OptionError, TensorShapeError } from "../core/errors.ts";
import { describe } from "../core/options.ts";
import { dtypeInfo } from "../core/dtype.ts";
import { formatShape, normalizeAxis } from "../core/shape.ts";
import {
  blockSizeOf,
  dtypeOf,
  offsetOf,
  rankOf,
  shapeOf,
  sizeOf,
  storageOf,
  stridesOf,
  Tensor,
} from "../tensor.ts";
import {
  expandView,
  flipView,
  inferShape,
  permuteView,
  selectView,
  sliceView,
  squeezeView,
  transposeView,
  tryReshapeView,
  unsqueezeView,
  type ViewMeta,
} from "../core/views.ts";
import { record, shouldRecord } from "../autograd/record.ts";
import { contiguous } from "./copy.ts";

/** Blocked tensors are opaque: views refuse them. */
function checkPlain(op: string, t: Tensor): void {
  if (blockSizeOf(t) > 0) {
    throw new TensorShapeError(
      op,
      `a blocked NchwC(${blockSizeOf(t)}) tensor has no views; convert it with toLayout() first`,
      [shapeOf(t)],
    );
  }
}

/** A target shape must be an array (its extents are checked by the view rules). */
function checkShapeArgument(op: string, shape: unknown): void {
  if (!Array.isArray(shape)) {
    throw new OptionError(op, `shape must be an array of extents, got ${describe(shape)}`);
  }
}

/** Quantized tensors keep whole blocks along the last axis in every view. */
function checkBlocks(op: string, t: Tensor, view: ViewMeta): void {
  const info = dtypeInfo(dtypeOf(t));
  if (!info.isQuantized) return;
  const rank = view.shape.length;
  const b = info.blockElements;
  const whole = rank > 0 && view.strides[rank - 1] === 1 && view.shape[rank - 1] % b === 0 &&
    view.offset % b === 0 &&
    view.strides.slice(0, -1).every((s) => s % b === 0);
  if (!whole) {
    throw new TensorShapeError(
      op,
      `${info.name} views must keep whole blocks of ${b} along the last axis; the result would have shape ` +
        `${formatShape(view.shape)}, strides ${formatShape(view.strides)} and offset ${view.offset}`,
      [shapeOf(t)],
    );
  }
}

/** A handle over `t`'s storage with `view`'s metadata. */
export function viewOf(t: Tensor, view: ViewMeta): Tensor {
  return new Tensor({
    storage: storageOf(t),
    dtype: dtypeOf(t),
    shape: view.shape,
    strides: view.strides,
    offset: view.offset,
  });
}

function meta(t: Tensor): ViewMeta {
  return { shape: shapeOf(t), strides: stridesOf(t), offset: offsetOf(t) };
}

function makeView(op: string, t: Tensor, view: ViewMeta): Tensor {
  checkBlocks(op, t, view);
  return viewOf(t, view);
}

/** Dimension i of the result is dimension `dims[i]` of `t`. Records Permute (attributes: the permutation). */
export function permute(t: Tensor, dims: readonly number[]): Tensor {
  checkPlain("permute", t);
  const view = permuteView(meta(t), dims);
  const result = makeView("permute", t, view);
  if (!shouldRecord(t)) return result;
  const rank = rankOf(t);
  return record(result, "Permute", [t], { attrs: { dims: dims.map((d) => (d < 0 ? d + rank : d)) } });
}

/** Swaps two axes (a Permute). */
export function transpose(t: Tensor, a: number, b: number): Tensor {
  checkPlain("transpose", t);
  const view = transposeView(meta(t), a, b);
  const result = makeView("transpose", t, view);
  if (!shouldRecord(t)) return result;
  const dims = Array.from({ length: rankOf(t) }, (_, i) => i);
  const x = a < 0 ? a + rankOf(t) : a;
  const y = b < 0 ? b + rankOf(t) : b;
  dims[x] = y;
  dims[y] = x;
  return record(result, "Permute", [t], { attrs: { dims } });
}

/** Elements start, start + step, … below end along `axis`. Records Slice (attributes: axis, start, end, step). */
export function slice(t: Tensor, axis: number, start: number, end: number, step = 1): Tensor {
  checkPlain("slice", t);
  const view = sliceView(meta(t), axis, start, end, step);
  const result = makeView("slice", t, view);
  if (!shouldRecord(t)) return result;
  const a = axis < 0 ? axis + rankOf(t) : axis;
  const size = shapeOf(t)[a];
  return record(result, "Slice", [t], {
    attrs: { axis: a, start: start < 0 ? start + size : start, end: end < 0 ? end + size : end, step },
  });
}

/** The sub-tensor at `index` along `axis`. Records Select (attributes: axis, index). */
export function select(t: Tensor, axis: number, index: number): Tensor {
  checkPlain("select", t);
  const view = selectView(meta(t), axis, index);
  const result = makeView("select", t, view);
  if (!shouldRecord(t)) return result;
  const a = axis < 0 ? axis + rankOf(t) : axis;
  return record(result, "Select", [t], {
    attrs: { axis: a, index: index < 0 ? index + shapeOf(t)[a] : index },
  });
}

/** Reverses `axis`. Records Flip (attributes: axis). */
export function flip(t: Tensor, axis: number): Tensor {
  checkPlain("flip", t);
  const view = flipView(meta(t), axis);
  const result = makeView("flip", t, view);
  if (!shouldRecord(t)) return result;
  return record(result, "Flip", [t], { attrs: { axis: axis < 0 ? axis + rankOf(t) : axis } });
}

/** Records the Reshape family (no saved slots, no attributes: the input shape says it all). */
function reshapeRecord(result: Tensor, t: Tensor): Tensor {
  return shouldRecord(t) ? record(result, "Reshape", [t]) : result;
}

/** Inserts an extent-1 axis. Records Reshape. */
export function unsqueeze(t: Tensor, axis: number): Tensor {
  checkPlain("unsqueeze", t);
  return reshapeRecord(makeView("unsqueeze", t, unsqueezeView(meta(t), axis)), t);
}

/** Removes one or all extent-1 axes. Records Reshape. */
export function squeeze(t: Tensor, axis?: number): Tensor {
  checkPlain("squeeze", t);
  return reshapeRecord(makeView("squeeze", t, squeezeView(meta(t), axis)), t);
}

/** Broadcasts to `shape`. Records Expand. */
export function expand(t: Tensor, shape: readonly number[]): Tensor {
  checkPlain("expand", t);
  checkShapeArgument("expand", shape);
  const result = makeView("expand", t, expandView(meta(t), shape));
  return shouldRecord(t) ? record(result, "Expand", [t]) : result;
}

/** A view with `shape` (one −1), or null when the strides allow none. Records Reshape. */
export function tryReshape(t: Tensor, shape: readonly number[]): Tensor | null {
  checkPlain("tryReshape", t);
  checkShapeArgument("tryReshape", shape);
  const target = inferShape("tryReshape", sizeOf(t), shape, shapeOf(t));
  const view = tryReshapeView(meta(t), target);
  if (view === null) return null;
  return reshapeRecord(makeView("tryReshape", t, view), t);
}

/** A view with `shape` when possible, else a contiguous copy viewed with it. Records Reshape. */
export function reshape(t: Tensor, shape: readonly number[]): Tensor {
  checkPlain("reshape", t);
  checkShapeArgument("reshape", shape);
  const target = inferShape("reshape", sizeOf(t), shape, shapeOf(t));
  const view = tryReshapeView(meta(t), target);
  if (view !== null) return reshapeRecord(makeView("reshape", t, view), t);
  const packed = contiguous(t);
  const result = makeView("reshape", packed, tryReshapeView(meta(packed), target)!);
  return reshapeRecord(result, t);
}

// --- split and chunk (issue 12): views along one axis ---

/**
 * Views of `t` along `axis` (0 by default), as `torch.split`: a number gives pieces of that extent (the last
 * may be shorter), an array gives the extents, which must add up to the axis. Each piece is a `slice`, so it
 * shares `t`'s storage and passes gradients back.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using t = Tensor.from([1, 2, 3, 4, 5]);
 * const pieces = ops.split(t, 2);
 * assert.deepEqual(pieces.map((p) => p.toNested()), [[1, 2], [3, 4], [5]]);
 * const [a, b] = ops.split(t, [1, 4]);
 * assert.deepEqual([a.toNested(), b.toNested()], [[1], [2, 3, 4, 5]]);
 * ```
 */
export function split(t: Tensor, sizeOrSizes: number | readonly number[], axis = 0): Tensor[] {
  checkPlain("split", t);
  const a = normalizeAxis("split", axis, rankOf(t), shapeOf(t));
  const extent = shapeOf(t)[a];
  let sizes: number[];
  if (typeof sizeOrSizes === "number") {
    if (!Number.isInteger(sizeOrSizes) || sizeOrSizes < 1) {
      throw new OptionError(
        "split",
        `the piece size must be a positive integer, got ${describe(sizeOrSizes)}`,
      );
    }
    sizes = [];
    for (let start = 0; start < extent; start += sizeOrSizes) {
      sizes.push(Math.min(sizeOrSizes, extent - start));
    }
    if (extent === 0) sizes.push(0);
  } else {
    if (!Array.isArray(sizeOrSizes) || sizeOrSizes.some((s) => !Number.isInteger(s) || s < 0)) {
      throw new OptionError("split", `sizes must be non-negative integers, got ${describe(sizeOrSizes)}`);
    }
    sizes = [...sizeOrSizes];
    const total = sizes.reduce((n, s) => n + s, 0);
    if (total !== extent) {
      throw new TensorShapeError(
        "split",
        `sizes ${JSON.stringify(sizes)} add up to ${total}, not to the extent ${extent} of axis ${a} of ` +
          formatShape(shapeOf(t)),
        [shapeOf(t)],
      );
    }
  }
  let start = 0;
  return sizes.map((size) => {
    const piece = slice(t, a, start, start + size);
    start += size;
    return piece;
  });
}

/**
 * `n` views of `t` along `axis` (0 by default) of ⌈extent / n⌉ each, as `torch.chunk` (fewer when the extent
 * runs out first).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using t = Tensor.from([[1, 2, 3], [4, 5, 6]]);
 * const [left, right] = ops.chunk(t, 2, 1);
 * assert.deepEqual([left.toNested(), right.toNested()], [[[1, 2], [4, 5]], [[3], [6]]]);
 * ```
 */
export function chunk(t: Tensor, n: number, axis = 0): Tensor[] {
  if (!Number.isInteger(n) || n < 1) {
    throw new OptionError("chunk", `the number of chunks must be a positive integer, got ${describe(n)}`);
  }
  checkPlain("chunk", t);
  const a = normalizeAxis("chunk", axis, rankOf(t), shapeOf(t));
  return split(t, Math.max(1, Math.ceil(shapeOf(t)[a] / n)), a);
}

/**
 * Shape rules (spec 000 §3): ranks 0–8, 32-bit extents, the element-count limit on every left-to-right prefix
 * product, the byte limit, contiguity, NumPy broadcasting, axis normalization and the view validity check.
 * Violations throw `TensorShapeError` before anything is allocated.
 *
 * @module
 */
import { TensorShapeError } from "./errors.ts";

/** The largest rank. */
export const MAX_RANK = 8;
/** The largest element count and the largest byte size of a buffer: 2^31 − 1. */
export const MAX_ELEMENTS = 2 ** 31 - 1;
export const MAX_BYTES = 2 ** 31 - 1;

/** "[2, 3]". */
export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(", ")}]`;
}

/**
 * Checks a shape given by a user and returns its element count: an array of at most 8 integer extents in
 * 0 … 2^31 − 1 whose every left-to-right prefix product is at most 2^31 − 1 (so `[100000, 100000, 0]` fails).
 */
export function checkShape(op: string, shape: readonly number[]): number {
  // The common case in a few comparisons per axis (every op's output passes here); `shapeFailure` names the
  // rule that a refused shape breaks.
  if (!Array.isArray(shape) || shape.length > MAX_RANK) shapeFailure(op, shape);
  let count = 1;
  for (let i = 0; i < shape.length; i++) {
    const extent = shape[i];
    if (
      !Number.isInteger(extent) || extent < 0 || extent > MAX_ELEMENTS || (count *= extent) > MAX_ELEMENTS
    ) {
      shapeFailure(op, shape);
    }
  }
  return count;
}

/** Throws the `TensorShapeError` that names the first rule `shape` breaks (`checkShape` found one). */
function shapeFailure(op: string, shape: readonly number[]): never {
  if (!Array.isArray(shape)) {
    throw new TensorShapeError(op, `a shape must be an array of extents, got ${String(shape)}`);
  }
  if (shape.length > MAX_RANK) {
    throw new TensorShapeError(
      op,
      `rank ${shape.length} exceeds the maximum rank ${MAX_RANK} (shape ${formatShape(shape)})`,
      [shape],
    );
  }
  let count = 1;
  for (let i = 0; i < shape.length; i++) {
    const extent = shape[i];
    if (!Number.isInteger(extent) || extent < 0 || extent > MAX_ELEMENTS) {
      throw new TensorShapeError(
        op,
        `extent ${String(extent)} at dimension ${i} of ${
          formatShape(shape)
        } is not an integer in 0 to 2^31 - 1`,
        [shape],
      );
    }
    count *= extent;
    if (count > MAX_ELEMENTS) {
      throw new TensorShapeError(
        op,
        `shape ${formatShape(shape)} has more than 2^31 - 1 elements (the product of its first ${
          i + 1
        } extents is ${count})`,
        [shape],
      );
    }
  }
  // Not reached: checkShape calls this only for a shape that breaks one of the rules above.
  throw new TensorShapeError(op, `shape ${formatShape(shape)} is not a valid shape`, [shape]);
}

/** Checks that `count` elements of `bytesPerElement` (or blocks) fit in one buffer. */
export function checkBytes(op: string, shape: readonly number[], bytes: number): void {
  if (bytes > MAX_BYTES) {
    throw new TensorShapeError(
      op,
      `shape ${formatShape(shape)} needs ${bytes} bytes, more than a buffer's 2^31 - 1`,
      [shape],
    );
  }
}

/** The product of the extents. Assumes a checked shape. */
export function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const extent of shape) count *= extent;
  return count;
}

/** Row-major strides in elements. */
export function contiguousStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let step = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    strides[i] = step;
    step *= shape[i];
  }
  return strides;
}

/**
 * Contiguous means the stride of every dimension with extent ≠ 1 equals the product of the extents to its
 * right; extent-1 strides are ignored and empty tensors are contiguous.
 */
export function isContiguous(shape: readonly number[], strides: readonly number[]): boolean {
  let step = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    const extent = shape[i];
    if (extent === 0) return true;
    if (extent !== 1 && strides[i] !== step) {
      for (let j = 0; j < i; j++) if (shape[j] === 0) return true;
      return false;
    }
    step *= extent;
  }
  return true;
}

/** An axis in −rank … rank − 1 as 0 … rank − 1; `rank` is the number of valid positions. */
export function normalizeAxis(op: string, axis: number, rank: number, shape: readonly number[] = []): number {
  if (!Number.isInteger(axis) || axis < -rank || axis >= rank) {
    throw new TensorShapeError(
      op,
      rank === 0
        ? `axis ${String(axis)} is out of range for a rank-0 tensor, which has no axes`
        : `axis ${String(axis)} is out of range for rank ${rank} (valid: ${-rank} to ${rank - 1}) of shape ${
          formatShape(shape)
        }`,
      [shape],
    );
  }
  return axis < 0 ? axis + rank : axis;
}

/** NumPy's multidirectional broadcast: right-aligned, each pair equal or one of them 1. */
export function broadcastShapes(op: string, a: readonly number[], b: readonly number[]): number[] {
  const rank = Math.max(a.length, b.length);
  const result = new Array<number>(rank);
  for (let i = 0; i < rank; i++) {
    const ea = i < rank - a.length ? 1 : a[i - (rank - a.length)];
    const eb = i < rank - b.length ? 1 : b[i - (rank - b.length)];
    if (ea !== eb && ea !== 1 && eb !== 1) {
      throw new TensorShapeError(
        op,
        `cannot broadcast shapes ${formatShape(a)} and ${
          formatShape(b)
        }: dimension ${i} of the result is ${ea} in one and ${eb} in the other`,
        [a, b],
      );
    }
    result[i] = ea === 1 ? eb : ea;
  }
  checkShape(op, result);
  return result;
}

/**
 * The view validity check: for a non-empty view, the lowest reachable element offset is ≥ 0 and the highest
 * is below the buffer's element count.
 */
export function checkViewBounds(
  op: string,
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
  bufferElements: number,
): void {
  let low = offset;
  let high = offset;
  for (let i = 0; i < shape.length; i++) {
    if (shape[i] === 0) return;
    const reach = (shape[i] - 1) * strides[i];
    if (reach < 0) low += reach;
    else high += reach;
  }
  if (low < 0 || high >= bufferElements) {
    throw new TensorShapeError(
      op,
      `a view with shape ${formatShape(shape)}, strides ${
        formatShape(strides)
      } and offset ${offset} reaches elements ` +
        `${low} to ${high}, outside its buffer of ${bufferElements} elements`,
      [shape],
    );
  }
}

/**
 * The view rules of spec 000 §4 as pure functions over view metadata (shape, strides in elements, offset):
 * nothing here touches storage. Every tensor view method and the autograd records build on these.
 *
 * @module
 */
import { TensorShapeError } from "./errors.ts";
import { checkShape, contiguousStrides, elementCount, formatShape, normalizeAxis } from "./shape.ts";

/** Where a view's elements live: element `(i0, …, ik)` is at `offset + Σ i_d · strides[d]`. */
export interface ViewMeta {
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
}

/** Dimension `i` of the result is dimension `dims[i]` of the source. */
export function permuteView(view: ViewMeta, dims: readonly number[], op = "permute"): ViewMeta {
  const rank = view.shape.length;
  if (!Array.isArray(dims) || dims.length !== rank) {
    throw new TensorShapeError(
      op,
      `the permutation ${
        Array.isArray(dims) ? formatShape(dims) : String(dims)
      } must be an array of ${rank} axes for shape ${formatShape(view.shape)}`,
      [view.shape],
    );
  }
  const seen = new Array<boolean>(rank).fill(false);
  const shape = new Array<number>(rank);
  const strides = new Array<number>(rank);
  for (let i = 0; i < rank; i++) {
    const axis = normalizeAxis(op, dims[i], rank, view.shape);
    if (seen[axis]) {
      throw new TensorShapeError(op, `the permutation ${formatShape(dims)} names axis ${axis} twice`, [
        view.shape,
      ]);
    }
    seen[axis] = true;
    shape[i] = view.shape[axis];
    strides[i] = view.strides[axis];
  }
  return { shape, strides, offset: view.offset };
}

/** Swaps two axes. */
export function transposeView(view: ViewMeta, a: number, b: number, op = "transpose"): ViewMeta {
  const rank = view.shape.length;
  const dims = Array.from({ length: rank }, (_, i) => i);
  const x = normalizeAxis(op, a, rank, view.shape);
  const y = normalizeAxis(op, b, rank, view.shape);
  dims[x] = y;
  dims[y] = x;
  return permuteView(view, dims, op);
}

function checkIndexInteger(op: string, name: string, value: number): void {
  if (!Number.isInteger(value)) {
    throw new TensorShapeError(op, `${name} must be an integer, got ${String(value)}`);
  }
}

/**
 * `0 ≤ start ≤ end ≤ size` (negative start and end count from the end), `step ≥ 1`; extent
 * `ceil((end − start)/step)`; offset += `start·stride` only if the result is non-empty; stride ×= step.
 */
export function sliceView(
  view: ViewMeta,
  axis: number,
  start: number,
  end: number,
  step = 1,
  op = "slice",
): ViewMeta {
  const rank = view.shape.length;
  const a = normalizeAxis(op, axis, rank, view.shape);
  const size = view.shape[a];
  checkIndexInteger(op, "start", start);
  checkIndexInteger(op, "end", end);
  checkIndexInteger(op, "step", step);
  const s = start < 0 ? start + size : start;
  const e = end < 0 ? end + size : end;
  if (s < 0 || s > e || e > size) {
    throw new TensorShapeError(
      op,
      `slice ${start}:${end} of axis ${a} (extent ${size}) of ${
        formatShape(view.shape)
      } must satisfy 0 <= start <= end <= ${size}`,
      [view.shape],
    );
  }
  if (step < 1) throw new TensorShapeError(op, `step must be at least 1, got ${step}`, [view.shape]);
  const extent = Math.ceil((e - s) / step);
  const shape = [...view.shape];
  const strides = [...view.strides];
  shape[a] = extent;
  const offset = extent > 0 && elementCount(shape) > 0 ? view.offset + s * view.strides[a] : view.offset;
  strides[a] = view.strides[a] * step;
  return { shape, strides, offset };
}

/** Removes the axis; offset += `index·stride` (a negative index counts from the end). */
export function selectView(view: ViewMeta, axis: number, index: number, op = "select"): ViewMeta {
  const rank = view.shape.length;
  const a = normalizeAxis(op, axis, rank, view.shape);
  checkIndexInteger(op, "index", index);
  const size = view.shape[a];
  const i = index < 0 ? index + size : index;
  if (i < 0 || i >= size) {
    throw new TensorShapeError(
      op,
      `index ${index} is out of range for axis ${a} of extent ${size} in ${formatShape(view.shape)}`,
      [view.shape],
    );
  }
  return {
    shape: view.shape.filter((_, d) => d !== a),
    strides: view.strides.filter((_, d) => d !== a),
    offset: view.offset + i * view.strides[a],
  };
}

/** Stride negated; offset += `(extent − 1)·stride` when the extent is positive. */
export function flipView(view: ViewMeta, axis: number, op = "flip"): ViewMeta {
  const a = normalizeAxis(op, axis, view.shape.length, view.shape);
  const strides = [...view.strides];
  strides[a] = -view.strides[a];
  const extent = view.shape[a];
  return {
    shape: view.shape,
    strides,
    offset: extent > 0 ? view.offset + (extent - 1) * view.strides[a] : view.offset,
  };
}

/** Inserts an extent-1 axis at `axis` (0 … rank); its stride is `extent·stride` of the axis it precedes, or 1 at the end. */
export function unsqueezeView(view: ViewMeta, axis: number, op = "unsqueeze"): ViewMeta {
  const rank = view.shape.length;
  const a = normalizeAxis(op, axis, rank + 1, view.shape);
  if (rank + 1 > 8) {
    throw new TensorShapeError(op, `unsqueeze of ${formatShape(view.shape)} would exceed rank 8`, [
      view.shape,
    ]);
  }
  const stride = a < rank ? view.shape[a] * view.strides[a] : 1;
  const shape = [...view.shape];
  const strides = [...view.strides];
  shape.splice(a, 0, 1);
  strides.splice(a, 0, stride);
  return { shape, strides, offset: view.offset };
}

/** Removes one extent-1 axis, or every extent-1 axis when `axis` is undefined. */
export function squeezeView(view: ViewMeta, axis?: number, op = "squeeze"): ViewMeta {
  if (axis === undefined) {
    const keep = view.shape.map((extent) => extent !== 1);
    return {
      shape: view.shape.filter((_, d) => keep[d]),
      strides: view.strides.filter((_, d) => keep[d]),
      offset: view.offset,
    };
  }
  const a = normalizeAxis(op, axis, view.shape.length, view.shape);
  if (view.shape[a] !== 1) {
    throw new TensorShapeError(
      op,
      `axis ${a} of ${formatShape(view.shape)} has extent ${view.shape[a]}, not 1`,
      [view.shape],
    );
  }
  return {
    shape: view.shape.filter((_, d) => d !== a),
    strides: view.strides.filter((_, d) => d !== a),
    offset: view.offset,
  };
}

/**
 * Right-aligned broadcast to `target`: an extent-1 axis or a missing leading axis gets stride 0 and the
 * target's extent; −1 in the target keeps the source's extent.
 */
export function expandView(view: ViewMeta, target: readonly number[], op = "expand"): ViewMeta {
  const rank = target.length;
  const offsetRank = rank - view.shape.length;
  if (offsetRank < 0) {
    throw new TensorShapeError(
      op,
      `cannot expand ${formatShape(view.shape)} to the lower rank ${formatShape(target)}`,
      [view.shape, target],
    );
  }
  const shape = new Array<number>(rank);
  const strides = new Array<number>(rank);
  for (let i = 0; i < rank; i++) {
    const want = target[i];
    if (i < offsetRank) {
      if (want === -1) {
        throw new TensorShapeError(
          op,
          `-1 is not allowed for the new leading dimension ${i} of ${formatShape(target)}`,
          [view.shape, target],
        );
      }
      shape[i] = want;
      strides[i] = 0;
      continue;
    }
    const have = view.shape[i - offsetRank];
    if (want === -1 || want === have) {
      shape[i] = have;
      strides[i] = view.strides[i - offsetRank];
    } else if (have === 1) {
      shape[i] = want;
      strides[i] = 0;
    } else {
      throw new TensorShapeError(
        op,
        `cannot expand ${formatShape(view.shape)} to ${
          formatShape(target)
        }: dimension ${i} is ${have}, which is neither 1 nor ${want}`,
        [view.shape, target],
      );
    }
  }
  checkShape(op, shape);
  return { shape, strides, offset: view.offset };
}

/**
 * Resolves one −1 in a requested shape from the element count and checks the counts agree.
 */
export function inferShape(
  op: string,
  count: number,
  requested: readonly number[],
  source: readonly number[],
): number[] {
  const shape = [...requested];
  let inferred = -1;
  let known = 1;
  for (let i = 0; i < shape.length; i++) {
    if (shape[i] === -1) {
      if (inferred >= 0) {
        throw new TensorShapeError(op, `only one dimension may be -1, got ${formatShape(requested)}`, [
          source,
          requested,
        ]);
      }
      inferred = i;
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0) {
    if (known === 0 || count % known !== 0) {
      throw new TensorShapeError(
        op,
        `cannot infer the -1 in ${formatShape(requested)} for ${count} elements of ${formatShape(source)}`,
        [source, requested],
      );
    }
    shape[inferred] = count / known;
  }
  checkShape(op, shape);
  if (elementCount(shape) !== count) {
    throw new TensorShapeError(
      op,
      `cannot reshape ${formatShape(source)} (${count} elements) into ${formatShape(requested)} (${
        elementCount(shape)
      } elements)`,
      [source, requested],
    );
  }
  return shape;
}

/**
 * Reshape viewability (spec 000 §4): drop source axes of extent 1; merge neighbours into runs while
 * `stride[i] == stride[i+1]·extent[i+1]`; the new shape is viewable iff its axes, left to right, partition into
 * groups whose extent products equal the run lengths in order, followed only by extent-1 axes. Inside a group
 * strides are contiguous from the run's inner stride; trailing extent-1 axes take the last run's inner stride.
 * Empty tensors are always viewable with contiguous strides. Returns null when not viewable.
 */
export function tryReshapeView(view: ViewMeta, shape: readonly number[]): ViewMeta | null {
  const count = elementCount(view.shape);
  if (count === 0) return { shape, strides: contiguousStrides(shape), offset: view.offset };
  const runs: { length: number; inner: number }[] = [];
  for (let i = 0; i < view.shape.length; i++) {
    const extent = view.shape[i];
    if (extent === 1) continue;
    const last = runs.at(-1);
    if (last !== undefined && last.inner === view.strides[i] * extent) {
      last.length *= extent;
      last.inner = view.strides[i];
    } else {
      runs.push({ length: extent, inner: view.strides[i] });
    }
  }
  if (runs.length === 0) return { shape, strides: contiguousStrides(shape), offset: view.offset };
  const strides = new Array<number>(shape.length);
  let run = 0;
  let groupStart = 0;
  let product = 1;
  for (let j = 0; j < shape.length; j++) {
    if (run === runs.length) {
      if (shape[j] !== 1) return null;
      strides[j] = runs[runs.length - 1].inner;
      continue;
    }
    product *= shape[j];
    if (product > runs[run].length || runs[run].length % product !== 0) return null;
    if (product === runs[run].length) {
      let step = runs[run].inner;
      for (let d = j; d >= groupStart; d--) {
        strides[d] = step;
        step *= shape[d];
      }
      run++;
      groupStart = j + 1;
      product = 1;
    }
  }
  return run === runs.length ? { shape, strides, offset: view.offset } : null;
}

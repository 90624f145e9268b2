// Property tests of the view rules (spec 000 §3–4) against an index-to-offset oracle: every view is also
// tracked as the explicit list of buffer offsets of its elements in row-major order, transformed by the
// obvious list operation, and the two must agree element by element.
import { test } from "node:test";
import assert from "node:assert/strict";
import { TensorShapeError } from "../src/core/errors.ts";
import {
  broadcastShapes,
  checkShape,
  checkViewBounds,
  contiguousStrides,
  elementCount,
  isContiguous,
} from "../src/core/shape.ts";
import {
  expandView,
  flipView,
  permuteView,
  selectView,
  sliceView,
  squeezeView,
  tryReshapeView,
  unsqueezeView,
  type ViewMeta,
} from "../src/core/views.ts";
import { detectLayout, Layout, nhwcStrides } from "../src/core/layout.ts";
import { Xorshift128 } from "../src/core/random.ts";

/** A view as the list of its elements' buffer offsets, row-major. */
interface Oracle {
  shape: number[];
  offsets: number[];
}

function offsetsOf(view: ViewMeta): number[] {
  const out: number[] = [];
  const rank = view.shape.length;
  const count = elementCount(view.shape);
  const index = new Array<number>(rank).fill(0);
  for (let n = 0; n < count; n++) {
    let at = view.offset;
    for (let d = 0; d < rank; d++) at += index[d] * view.strides[d];
    out.push(at);
    for (let d = rank - 1; d >= 0; d--) {
      if (++index[d] < view.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

/** The flat position of a multi-index in row-major order. */
function flat(shape: readonly number[], index: readonly number[]): number {
  let at = 0;
  for (let d = 0; d < shape.length; d++) at = at * shape[d] + index[d];
  return at;
}

function indices(shape: readonly number[]): number[][] {
  const out: number[][] = [];
  const count = elementCount(shape);
  const index = new Array<number>(shape.length).fill(0);
  for (let n = 0; n < count; n++) {
    out.push([...index]);
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

/** Applies a list operation that maps each result index to a source index. */
function gather(source: Oracle, shape: number[], pick: (index: number[]) => number[]): Oracle {
  return { shape, offsets: indices(shape).map((i) => source.offsets[flat(source.shape, pick(i))]) };
}

function randomInt(rng: Xorshift128, n: number): number {
  return rng.next() % n;
}

type Step = (view: ViewMeta, oracle: Oracle) => [ViewMeta, Oracle] | null;

function steps(rng: Xorshift128): Step[] {
  return [
    (view, oracle) => {
      const rank = view.shape.length;
      const dims = Array.from({ length: rank }, (_, i) => i);
      for (let i = rank - 1; i > 0; i--) {
        const j = randomInt(rng, i + 1);
        [dims[i], dims[j]] = [dims[j], dims[i]];
      }
      const shape = dims.map((d) => oracle.shape[d]);
      return [permuteView(view, dims), gather(oracle, shape, (i) => dims.map((_, k) => i[dims.indexOf(k)]))];
    },
    (view, oracle) => {
      if (view.shape.length === 0) return null;
      const axis = randomInt(rng, view.shape.length);
      const size = view.shape[axis];
      const start = randomInt(rng, size + 1);
      const end = start + randomInt(rng, size - start + 1);
      const step = 1 + randomInt(rng, 3);
      const shape = [...oracle.shape];
      shape[axis] = Math.ceil((end - start) / step);
      const result = sliceView(view, axis, start, end, step);
      return [result, gather(oracle, shape, (i) => i.map((v, d) => (d === axis ? start + v * step : v)))];
    },
    (view, oracle) => {
      if (view.shape.length === 0) return null;
      const axis = randomInt(rng, view.shape.length);
      const size = view.shape[axis];
      if (size === 0) return null;
      const index = randomInt(rng, size);
      const shape = oracle.shape.filter((_, d) => d !== axis);
      return [
        selectView(view, axis, index),
        gather(oracle, shape, (i) => [...i.slice(0, axis), index, ...i.slice(axis)]),
      ];
    },
    (view, oracle) => {
      if (view.shape.length === 0) return null;
      const axis = randomInt(rng, view.shape.length);
      const size = view.shape[axis];
      return [
        flipView(view, axis),
        gather(oracle, [...oracle.shape], (i) => i.map((v, d) => (d === axis ? size - 1 - v : v))),
      ];
    },
    (view, oracle) => {
      if (view.shape.length >= 8) return null;
      const axis = randomInt(rng, view.shape.length + 1);
      const shape = [...oracle.shape];
      shape.splice(axis, 0, 1);
      return [unsqueezeView(view, axis), { shape, offsets: oracle.offsets }];
    },
    (view, oracle) => {
      const shape = oracle.shape.filter((e) => e !== 1);
      return [squeezeView(view), { shape, offsets: oracle.offsets }];
    },
    (view, oracle) => {
      if (view.shape.length >= 8) return null;
      const lead = randomInt(rng, Math.min(2, 8 - view.shape.length) + 1);
      const target = [
        ...Array.from({ length: lead }, () => 1 + randomInt(rng, 3)),
        ...view.shape.map((e) => (e === 1 ? 1 + randomInt(rng, 3) : e)),
      ];
      return [
        expandView(view, target),
        gather(oracle, target, (i) => i.slice(lead).map((v, d) => (view.shape[d] === 1 ? 0 : v))),
      ];
    },
  ];
}

function randomShape(rng: Xorshift128, maxRank: number): number[] {
  const rank = randomInt(rng, maxRank + 1);
  return Array.from({ length: rank }, () => randomInt(rng, 5));
}

test("every view agrees with the index-to-offset oracle on thousands of random chains", () => {
  const rng = new Xorshift128(2024);
  const ops = steps(rng);
  let checked = 0;
  for (let trial = 0; trial < 3000; trial++) {
    const shape = randomShape(rng, 6);
    const count = elementCount(shape);
    let view: ViewMeta = { shape, strides: contiguousStrides(shape), offset: 0 };
    let oracle: Oracle = { shape: [...shape], offsets: Array.from({ length: count }, (_, i) => i) };
    for (let s = 0; s < 6; s++) {
      const next = ops[randomInt(rng, ops.length)](view, oracle);
      if (next === null) continue;
      [view, oracle] = next;
      assert.deepEqual([...view.shape], oracle.shape);
      assert.deepEqual(offsetsOf(view), oracle.offsets);
      checkViewBounds("test", view.shape, view.strides, view.offset, Math.max(count, 1));
      checked++;
    }
  }
  assert.ok(checked > 10000);
});

/** Brute force: strides that reproduce `offsets` over `shape`, or null when none exist. */
function bruteForceReshape(offsets: number[], shape: number[]): number[] | null {
  if (offsets.length === 0) return contiguousStrides(shape);
  const unit = contiguousStrides(shape);
  const strides = shape.map((extent, d) => (extent > 1 ? offsets[unit[d]] - offsets[0] : 0));
  const candidate = offsetsOf({ shape, strides, offset: offsets[0] });
  return candidate.every((v, i) => v === offsets[i]) ? strides : null;
}

function factorizations(n: number, rng: Xorshift128): number[] {
  const dims: number[] = [];
  let rest = n;
  while (rest > 1 && dims.length < 6) {
    const divisors = Array.from({ length: rest }, (_, i) => i + 1).filter((d) => rest % d === 0 && d > 1);
    const d = divisors[randomInt(rng, divisors.length)];
    dims.push(d);
    rest /= d;
    if (randomInt(rng, 4) === 0) dims.push(1);
  }
  if (rest > 1) dims.push(rest);
  return dims.length === 0 ? [n] : dims;
}

test("reshape viewability agrees with a brute-force search on random strided inputs", () => {
  const rng = new Xorshift128(77);
  const ops = steps(rng);
  let viewable = 0;
  let refused = 0;
  for (let trial = 0; trial < 4000; trial++) {
    const shape = randomShape(rng, 5).map((e) => e + (randomInt(rng, 3) === 0 ? 0 : 1));
    let view: ViewMeta = { shape, strides: contiguousStrides(shape), offset: 0 };
    let oracle: Oracle = {
      shape: [...shape],
      offsets: Array.from({ length: elementCount(shape) }, (_, i) => i),
    };
    for (let s = 0; s < 3; s++) {
      const next = ops[randomInt(rng, ops.length)](view, oracle);
      if (next !== null) [view, oracle] = next;
    }
    const count = elementCount(view.shape);
    const target = count === 0
      ? [0, ...factorizations(1 + randomInt(rng, 4), rng)]
      : factorizations(count, rng);
    const result = tryReshapeView(view, target);
    const expected = bruteForceReshape(oracle.offsets, target);
    if (result === null) {
      assert.equal(expected, null, `rule refused ${JSON.stringify(view)} -> ${JSON.stringify(target)}`);
      refused++;
    } else {
      assert.notEqual(expected, null);
      assert.deepEqual(offsetsOf(result), oracle.offsets);
      viewable++;
    }
  }
  assert.ok(viewable > 500 && refused > 200, `${viewable} viewable, ${refused} refused`);
});

test("reshape of a contiguous tensor keeps contiguous strides, extent-1 axes included", () => {
  const view = { shape: [2, 3, 4], strides: [12, 4, 1], offset: 5 };
  assert.deepEqual(tryReshapeView(view, [6, 1, 4]), { shape: [6, 1, 4], strides: [4, 4, 1], offset: 5 });
  assert.deepEqual(tryReshapeView(view, [24, 1]), { shape: [24, 1], strides: [1, 1], offset: 5 });
  const transposed = permuteView({ shape: [2, 3], strides: [3, 1], offset: 0 }, [1, 0]);
  assert.equal(tryReshapeView(transposed, [6]), null);
  assert.deepEqual(tryReshapeView({ shape: [0, 3], strides: [3, 1], offset: 0 }, [3, 0, 2]), {
    shape: [3, 0, 2],
    strides: [0, 2, 1],
    offset: 0,
  });
});

test("view rules at their edges: slice offsets, flip of empty axes, unsqueeze strides", () => {
  const base = { shape: [4, 5], strides: [5, 1], offset: 0 };
  assert.deepEqual(sliceView(base, 1, 1, 5, 2), { shape: [4, 2], strides: [5, 2], offset: 1 });
  assert.deepEqual(sliceView(base, 0, 4, 4), { shape: [0, 5], strides: [5, 1], offset: 0 });
  assert.deepEqual(sliceView(base, -1, -3, -1), { shape: [4, 2], strides: [5, 1], offset: 2 });
  assert.deepEqual(flipView({ shape: [0, 2], strides: [2, 1], offset: 3 }, 0), {
    shape: [0, 2],
    strides: [-2, 1],
    offset: 3,
  });
  assert.deepEqual(unsqueezeView(base, 1), { shape: [4, 1, 5], strides: [5, 5, 1], offset: 0 });
  assert.deepEqual(unsqueezeView(base, 2), { shape: [4, 5, 1], strides: [5, 1, 1], offset: 0 });
  assert.deepEqual(unsqueezeView(base, -1), { shape: [4, 5, 1], strides: [5, 1, 1], offset: 0 });
  assert.deepEqual(selectView(base, 1, -1), { shape: [4], strides: [5], offset: 4 });
  assert.throws(() => sliceView(base, 1, 3, 2), /0 <= start <= end <= 5/);
  assert.throws(() => sliceView(base, 1, 0, 2, 0), /step must be at least 1/);
  assert.throws(
    () => selectView(base, 0, 4),
    (e: Error) => e instanceof TensorShapeError && /index 4 is out of range for axis 0/.test(e.message),
  );
  assert.throws(() => squeezeView(base, 0), /axis 0 of \[4, 5\] has extent 4, not 1/);
  assert.throws(() => expandView(base, [4, 6]), /dimension 1 is 5, which is neither 1 nor 6/);
  assert.throws(() => permuteView(base, [0, 0]), /names axis 0 twice/);
  assert.throws(() => permuteView(base, [0, 2]), /axis 2 is out of range for rank 2/);
});

test("shape limits: rank, extents, every prefix product, broadcasting", () => {
  assert.equal(checkShape("t", []), 1);
  assert.equal(checkShape("t", [2 ** 31 - 1]), 2 ** 31 - 1);
  assert.throws(() => checkShape("t", new Array(9).fill(1)), /rank 9 exceeds the maximum rank 8/);
  assert.throws(() => checkShape("t", [100000, 100000, 0]), /product of its first 2 extents is 10000000000/);
  assert.throws(() => checkShape("t", [2 ** 31]), /not an integer in 0 to 2\^31 - 1/);
  assert.throws(() => checkShape("t", [-1]), TensorShapeError);
  assert.throws(() => checkShape("t", [1.5]), TensorShapeError);
  assert.deepEqual(broadcastShapes("add", [2, 1, 3], [4, 1]), [2, 4, 3]);
  assert.deepEqual(broadcastShapes("add", [], [3]), [3]);
  assert.deepEqual(broadcastShapes("add", [0, 1], [1, 5]), [0, 5]);
  assert.throws(
    () => broadcastShapes("add", [2, 3], [4]),
    /cannot broadcast shapes \[2, 3\] and \[4\]: dimension 1 of the result is 3 in one and 4 in the other/,
  );
  assert.throws(() => broadcastShapes("add", [65536, 1], [1, 65536]), /more than 2\^31 - 1 elements/);
});

test("contiguity ignores extent-1 strides and treats empty tensors as contiguous", () => {
  assert.equal(isContiguous([2, 3], [3, 1]), true);
  assert.equal(isContiguous([2, 1, 3], [3, 99, 1]), true);
  assert.equal(isContiguous([3, 2], [1, 3]), false);
  assert.equal(isContiguous([0, 2], [7, 9]), true);
  assert.equal(isContiguous([2, 0], [1, 1]), true);
  assert.equal(isContiguous([], []), true);
});

test("view bounds: the lowest and highest reachable offsets must lie in the buffer", () => {
  checkViewBounds("t", [2, 3], [-3, 1], 3, 6);
  assert.throws(() => checkViewBounds("t", [2, 3], [-3, 1], 2, 6), /reaches elements -1 to 4/);
  assert.throws(() => checkViewBounds("t", [2, 3], [3, 1], 1, 6), /reaches elements 1 to 6/);
  checkViewBounds("t", [0, 3], [100, 1], 50, 6);
});

test("layout detection: NCHW wins ties, extent-1 axes ignored, other ranks are Strided", () => {
  assert.equal(detectLayout([2, 3, 4, 5], contiguousStrides([2, 3, 4, 5])), Layout.Nchw);
  assert.equal(detectLayout([2, 3, 4, 5], nhwcStrides([2, 3, 4, 5])), Layout.Nhwc);
  assert.equal(detectLayout([2, 1, 4, 5], nhwcStrides([2, 1, 4, 5])), Layout.Nchw);
  assert.equal(detectLayout([2, 3, 1, 1], nhwcStrides([2, 3, 1, 1])), Layout.Nchw);
  assert.equal(detectLayout([2, 3, 4, 5], [60, 1, 3, 12]), Layout.Strided);
  assert.equal(detectLayout([2, 3, 4], [12, 4, 1]), Layout.Strided);
  assert.equal(Layout.nchwc(8), Layout.nchwc(8));
  assert.equal(String(Layout.nchwc(16)), "NchwC(16)");
  assert.throws(() => Layout.nchwc(257), /block size must be an integer in 1 to 256/);
});

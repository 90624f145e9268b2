import { test } from "node:test";
import assert from "node:assert/strict";
import { nativeKernels } from "../src/kernels/native.ts";
import { poolExtent, poolOutput, referenceKernels } from "../src/kernels/reference.ts";
import type { ComputeSettings, KernelOperand, Pool2dParams, TensorKernels } from "../src/kernels/types.ts";
import {
  newTally,
  poolBackwardCase,
  poolCase,
  type PoolForce,
  sameOutputs,
} from "./helpers/kernels_conformance.ts";
import { contiguousView, OperandPool } from "./helpers/operands.ts";

const FAST: ComputeSettings = { mode: "fast", threads: 1 };
const EXACT: ComputeSettings = { mode: "exact", threads: 1 };

interface Pooled {
  values: number[];
  indices: number[] | null;
  shape: number[];
}

/** Pools one NCHW plane set given row-major, with both kernel sets, and checks they agree. */
function maxPool(
  input: readonly number[],
  dims: [number, number, number, number],
  geometry: Omit<Pool2dParams, "input">,
  wantIndices = true,
  settings = FAST,
): Pooled {
  const pool = new OperandPool();
  try {
    const params: Pool2dParams = { input: dims, ...geometry };
    const shape = [
      dims[0],
      dims[1],
      poolExtent(dims[2], geometry.kernel[0], geometry.stride[0], geometry.padding[0]),
      poolExtent(dims[3], geometry.kernel[1], geometry.stride[1], geometry.padding[1]),
    ];
    const x = pool.operand("f32", contiguousView(dims));
    (x.data as Float32Array).set(input);
    const results = ([referenceKernels, nativeKernels] as TensorKernels[]).map((kernels) => {
      const out = pool.operand("f32", contiguousView(shape));
      const indices: KernelOperand | null = wantIndices ? pool.operand("i32", contiguousView(shape)) : null;
      if (indices !== null) (indices.data as Int32Array).fill(-9);
      kernels.maxPool2d(params, out, x, indices, settings);
      return { values: [...out.data] as number[], indices: indices && [...indices.data] as number[], shape };
    });
    assert.deepEqual(results[1], results[0], "native and reference differ");
    return results[1];
  } finally {
    pool.release();
  }
}

test("output extents follow floor((size + 2·pad − kernel)/stride) + 1", () => {
  assert.equal(poolExtent(5, 2, 2, 0), 2);
  assert.equal(poolExtent(5, 2, 2, 1), 3);
  assert.equal(poolExtent(4, 3, 1, 2), 6);
  assert.equal(poolExtent(1, 1, 3, 0), 1);
  const r = maxPool(Array.from({ length: 35 }, (_, i) => i), [1, 1, 5, 7], {
    kernel: [2, 3],
    stride: [2, 3],
    padding: [1, 2],
  });
  assert.deepEqual(r.shape, [1, 1, 3, 3]);
  // Rows: {0}, {1,2}, {3,4}; columns: {0}, {1,2,3}, {4,5,6}: each window's maximum is its last element.
  assert.deepEqual(r.values, [0, 3, 6, 14, 17, 20, 28, 31, 34]);
  assert.deepEqual(r.indices, r.values);
});

test("padding never wins: an all-negative input pools to negative values, not to a padded zero", () => {
  const input = Array.from({ length: 9 }, (_, i) => -1 - i);
  const r = maxPool(input, [1, 1, 3, 3], { kernel: [3, 3], stride: [1, 1], padding: [2, 2] });
  assert.deepEqual(r.shape, [1, 1, 5, 5]);
  assert.ok(r.values.every((v) => v < 0), r.values.join());
  // The corner window holds only (0, 0).
  assert.equal(r.values[0], -1);
  assert.equal(r.indices![0], 0);
  assert.equal(r.values[24], -9);
  assert.equal(r.indices![24], 8);
});

test("the first of equal maxima wins, in row-major window order, and -0 before +0 counts as first", () => {
  // deno-fmt-ignore
  const input = [
    1, 5, 5, 2,
    5, 5, 0, 0,
    -0, 0, 0, -0,
    0, -0, -0, 0,
  ];
  const r = maxPool(input, [1, 1, 4, 4], { kernel: [2, 2], stride: [2, 2], padding: [0, 0] });
  assert.deepEqual(r.indices, [1, 2, 8, 10]);
  assert.ok(Object.is(r.values[2], -0) && Object.is(r.values[3], 0));
});

test("a NaN wins its window and the first NaN is the one reported", () => {
  // deno-fmt-ignore
  const input = [
    9, NaN, 9, 1,
    NaN, 9, 2, NaN,
    3, 4, 5, 6,
  ];
  const r = maxPool(input, [1, 1, 3, 4], { kernel: [2, 2], stride: [1, 2], padding: [0, 0] });
  assert.deepEqual(r.shape, [1, 1, 2, 2]);
  assert.ok(Number.isNaN(r.values[0]) && Number.isNaN(r.values[1]) && Number.isNaN(r.values[2]));
  assert.deepEqual(r.indices, [1, 7, 4, 7]);
  assert.equal(r.values[3], Number.NaN);
});

test("strides larger than the kernel skip elements; batches and channels index the logical NCHW input", () => {
  const input = Array.from({ length: 2 * 3 * 4 * 6 }, (_, i) => (i * 37) % 101);
  const r = maxPool(input, [2, 3, 4, 6], { kernel: [1, 2], stride: [3, 4], padding: [0, 1] }, true, EXACT);
  assert.deepEqual(r.shape, [2, 3, 2, 2]);
  for (let i = 0; i < r.values.length; i++) assert.equal(r.values[i], input[r.indices![i]]);
  // Output (n=1, c=2, oy=1, ox=1) reads rows {3} and columns {3, 4}.
  const base = (1 * 3 + 2) * 24 + 3 * 6;
  assert.equal(r.values[r.values.length - 1], Math.max(input[base + 3], input[base + 4]));
});

test("indices are written only when asked for", () => {
  const pool = new OperandPool();
  try {
    const params: Pool2dParams = { input: [1, 1, 2, 2], kernel: [2, 2], stride: [1, 1], padding: [0, 0] };
    const x = pool.operand("f32", contiguousView([1, 1, 2, 2]));
    (x.data as Float32Array).set([1, 4, 3, 2]);
    const out = pool.operand("f32", contiguousView([1, 1, 1, 1]));
    nativeKernels.maxPool2d(params, out, x, null, FAST);
    assert.equal(out.data[0], 4);
    const indices = pool.operand("i32", contiguousView([1, 1, 1, 1]));
    nativeKernels.maxPool2d(params, out, x, indices, FAST);
    assert.equal(indices.data[0], 1);
  } finally {
    pool.release();
  }
});

test("max pooling matches the reference bitwise on random geometry, layouts and data, indices included", () => {
  matchesOverRandomCases(poolCase, 700_000);
});

/** 400 random cases of `run` from seed `first` on, each bitwise equal to the reference. */
function matchesOverRandomCases(run: typeof poolCase, first: number): void {
  const tally = newTally();
  const pool = new OperandPool();
  try {
    for (let i = 0; i < 400; i++) {
      run(pool, tally, first + i);
      if (i % 32 === 31) pool.release();
    }
  } finally {
    pool.release();
  }
  assert.deepEqual(tally.failures, []);
  assert.equal(tally.cases, 400);
}

/** The outputs of one large case of `run` at 1, 2, 3 and 4 threads, which must be the same bits. */
function sameForThreads(run: typeof poolCase, force: PoolForce): void {
  const at = (threads: number) => {
    const tally = newTally();
    const pool = new OperandPool();
    try {
      const out = run(pool, tally, 42, { ...force, mode: "exact", threads });
      assert.deepEqual(tally.failures, []);
      return out;
    } finally {
      pool.release();
    }
  };
  const one = at(1);
  assert.ok(one.length > 1000);
  for (const threads of [2, 3, 4]) assert.ok(sameOutputs(one, at(threads)), `${threads} threads`);
}

test("max pooling gives the same bits for 1, 2, 3 and 4 threads on work split across the pool", () => {
  sameForThreads(poolCase, { input: [4, 16, 67, 70], pairs: false });
  sameForThreads(poolCase, { input: [4, 16, 67, 70], pairs: true });
});

/** The input gradient of both kernel sets (which must agree) for one row-major case. */
function maxPoolBackward(
  dims: [number, number, number, number],
  geometry: Omit<Pool2dParams, "input">,
  indices: readonly number[],
  g: readonly number[],
): number[] {
  const pool = new OperandPool();
  try {
    const params: Pool2dParams = { input: dims, ...geometry, localIndices: true };
    const [oh, ow] = poolOutput(params);
    const outShape = [dims[0], dims[1], oh, ow];
    const winners = pool.operand("i32", contiguousView(outShape));
    (winners.data as Int32Array).set(indices);
    const gradient = pool.operand("f32", contiguousView(outShape));
    (gradient.data as Float32Array).set(g);
    const results = ([referenceKernels, nativeKernels] as TensorKernels[]).map((kernels) => {
      const grad = pool.operand("f32", contiguousView(dims));
      (grad.data as Float32Array).fill(7);
      kernels.maxPool2dBackward(params, grad, gradient, winners, FAST);
      return [...grad.data] as number[];
    });
    assert.deepEqual(results[1], results[0], "native and reference differ");
    return results[1];
  } finally {
    pool.release();
  }
}

test("the backward pass writes each winner's gradient once, +0 elsewhere and for a −0 gradient", () => {
  // A 3x5 plane, 2x2 windows of stride 2: windows cover rows 0-1 and columns 0-3; row 2 and column 4 are +0.
  const grad = maxPoolBackward([1, 1, 3, 5], { kernel: [2, 2], stride: [2, 2], padding: [0, 0] }, [6, 2], [
    -0,
    3,
  ]);
  // deno-fmt-ignore
  assert.deepEqual(grad, [
    0, 0, 3, 0, 0,
    0, 0, 0, 0, 0,
    0, 0, 0, 0, 0,
  ]);
  assert.ok(grad.every((v) => !Object.is(v, -0)));
  // Windows smaller than their stride, with padding: 1x2 windows of stride 2x3, padding [0, 1].
  const spaced = maxPoolBackward([1, 1, 3, 4], { kernel: [1, 2], stride: [2, 3], padding: [0, 1] }, [
    0,
    2,
    8,
    10,
  ], [
    1,
    2,
    3,
    4,
  ]);
  assert.deepEqual(spaced, [1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4, 0]);
});

test("overlapping windows add the gradients of every output an element won, in output order", () => {
  // A 1x4 row, windows of 3 with stride 1: both windows pick element 2; f32 sums 2^24 + 1 + 1 in order.
  const grad = maxPoolBackward([1, 1, 1, 4], { kernel: [1, 3], stride: [1, 1], padding: [0, 0] }, [2, 2], [
    2 ** 24,
    1,
  ]);
  assert.deepEqual(grad, [0, 0, 2 ** 24, 0]);
  // A dilated 2-tap window of stride 2 reaches past its stride: windows {0, 2} and {2, 4} share element 2.
  const dilated = maxPoolBackward([1, 1, 1, 5], {
    kernel: [1, 2],
    stride: [1, 2],
    padding: [0, 0],
    dilation: [1, 2],
  }, [
    2,
    2,
  ], [1.5, 2]);
  assert.deepEqual(dilated, [0, 0, 3.5, 0, 0]);
});

test("max pooling backward matches the reference bitwise on random geometry, layouts and data", () => {
  matchesOverRandomCases(poolBackwardCase, 900_000);
});

test("max pooling backward gives the same bits for 1, 2, 3 and 4 threads", () => {
  sameForThreads(poolBackwardCase, { input: [4, 16, 67, 70], pairs: false });
  sameForThreads(poolBackwardCase, { input: [4, 16, 66, 70], pairs: true });
});

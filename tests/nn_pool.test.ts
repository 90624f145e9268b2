// maxPool2d and avgPool2d options (src/ops/pool.ts) and embedding options: values against hand-computed windows and rows, unbatched CHW
// inputs, and errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { DType, ops, OptionError, Tensor, TensorShapeError } from "../mod.ts";

test("maxPool2d takes one CHW image as a batch of one and returns CHW", () => {
  using x = Tensor.from([1, 5, 2, 4, 3, 0, 9, 8, 7, 6, 1, 2, 3, 4, 5, 6], [1, 4, 4]);
  using y = ops.maxPool2d(x, { kernel: 2 });
  assert.deepEqual([...y.shape], [1, 2, 2]);
  assert.deepEqual([...y.toArray()], [5, 9, 7, 6]);
  assert.throws(() => ops.maxPool2d(Tensor.zeros([4, 4]), { kernel: 2 }), /NCHW tensor \(or one CHW image\)/);
});

test("maxPool2d with ceilMode adds a last window only where it starts inside the input or its left padding", () => {
  using x = Tensor.arange(25).reshape([1, 1, 5, 5]);
  using floor = ops.maxPool2d(x, { kernel: 2, stride: 2 });
  using ceil = ops.maxPool2d(x, { kernel: 2, stride: 2, ceilMode: true });
  assert.deepEqual([...floor.shape], [1, 1, 2, 2]);
  assert.deepEqual([...ceil.shape], [1, 1, 3, 3]);
  assert.deepEqual([...ceil.toArray()], [6, 8, 9, 16, 18, 19, 21, 23, 24]);
  // Size 4, kernel 2, stride 2, padding 1: ceil gives 3 windows, and a 4th would start at 5 ≥ 4 + 1.
  using padded = ops.maxPool2d(Tensor.zeros([1, 1, 4, 4]), {
    kernel: 2,
    stride: 2,
    padding: 1,
    ceilMode: true,
  });
  assert.deepEqual([...padded.shape], [1, 1, 3, 3]);
});

test("maxPool2d returnIndices gives PyTorch's plane-local I64 indices, and the gradient goes to the winners", () => {
  using x = Tensor.from([1, 9, 2, 3, 4, 5, 6, 7, 8, 0, 8, 1, 2, 3, 4, 5], [2, 1, 2, 4]).withRequiresGrad();
  const { values, indices } = ops.maxPool2d(x, { kernel: 2, returnIndices: true });
  assert.deepEqual([...values.toArray()], [9, 7, 8, 8]);
  assert.equal(indices.dtype, DType.I64);
  assert.deepEqual([...indices.toArray()], [1n, 7n, 0n, 2n]);
  values.backward(Tensor.from([1, 2, 3, 4], [2, 1, 1, 2]));
  assert.deepEqual([...x.grad!.toArray()], [0, 1, 0, 0, 0, 0, 0, 2, 3, 0, 4, 0, 0, 0, 0, 0]);
});

test("maxPool2d with dilation reads taps dilation apart; a window without an input tap is refused", () => {
  using x = Tensor.arange(16).reshape([1, 1, 4, 4]);
  using y = ops.maxPool2d(x, { kernel: 2, stride: 1, dilation: [2, 3] });
  assert.deepEqual([...y.shape], [1, 1, 2, 1]);
  assert.deepEqual([...y.toArray()], [11, 15]);
  assert.throws(
    () => ops.maxPool2d(Tensor.zeros([1, 1, 1, 1]), { kernel: 2, padding: 1, dilation: 3 }),
    (e) => e instanceof TensorShapeError && /maxPool2d/.test(e.message),
  );
  assert.throws(() => ops.maxPool2d(x, { kernel: 2, ceil_mode: true } as never), OptionError);
  assert.throws(() => ops.maxPool2d(x, { kernel: 2, dilation: 0 }), /dilation/);
});

test("embedding's backward adds repeated rows in order and leaves the padding row at zero", () => {
  using w = Tensor.from([[1, 2], [3, 4], [5, 6]]).withRequiresGrad();
  using ids = Tensor.from([[2, 0], [2, 1]], [2, 2], { dtype: DType.I32 });
  using e = ops.embedding(ids, w, { paddingIdx: -2 });
  e.backward(Tensor.from([1, 2, 3, 4, 5, 6, 7, 8], [2, 2, 2]));
  assert.deepEqual([...w.grad!.toArray()], [3, 4, 0, 0, 6, 8]);
});

test("embedding maxNorm renormalises only the looked-up rows, in place, as PyTorch", () => {
  using w = Tensor.from([[3, 4], [6, 8], [0.3, 0.4]]);
  using ids = Tensor.from([0, 2], [2], { dtype: DType.I32 });
  using e = ops.embedding(ids, w, { maxNorm: 2 });
  const scale = Math.fround(2 / Math.fround(5 + 1e-7));
  assert.deepEqual(
    [...w.toArray()],
    [3, 4, 6, 8, 0.3, 0.4].map((v, i) => Math.fround(i < 2 ? v * scale : v)),
  );
  assert.deepEqual([...e.toArray()], [w.toArray()[0], w.toArray()[1], Math.fround(0.3), Math.fround(0.4)]);
  using l1 = Tensor.from([[3, 4]]);
  using _renormed = ops.embedding(Tensor.from([0], [1], { dtype: DType.I32 }), l1, {
    maxNorm: 1,
    normType: 1,
  });
  assert.ok(Math.abs((l1.toArray()[0] as number) - 3 / 7) < 1e-6);
  assert.throws(() => ops.embedding(ids, w, { maxNorm: -1 }), /maxNorm must be/);
});

test("avgPool2d: ceil-mode windows divide by their clipped extent; countIncludePad false and divisorOverride", () => {
  using x = Tensor.arange(1, 17).reshape([1, 1, 4, 4]);
  using ceil = ops.avgPool2d(x, { kernel: 3, stride: 2, ceilMode: true });
  // Windows rows {0,1,2} and {2,3}, columns likewise: the last ones average 2 positions, not 3.
  assert.deepEqual([...ceil.toArray()], [6, 7.5, 12, 13.5]);
  using excluded = ops.avgPool2d(x, { kernel: 2, stride: 2, padding: 1, countIncludePad: false });
  assert.deepEqual([...excluded.toArray()], [1, 2.5, 4, 7, 8.5, 10, 13, 14.5, 16]);
  using included = ops.avgPool2d(x, { kernel: 2, stride: 2, padding: 1 });
  assert.deepEqual([...included.toArray()].slice(0, 2), [0.25, 1.25]);
  using override = ops.avgPool2d(x, { kernel: 2, divisorOverride: 2 });
  assert.deepEqual([...override.toArray()], [7, 11, 23, 27]);
  assert.throws(() => ops.avgPool2d(x, { kernel: 2, divisorOverride: 0 }), /divisorOverride/);
});

test("adaptiveAvgPool2d averages PyTorch's uneven windows and keeps a null extent", () => {
  using x = Tensor.arange(10).reshape([1, 2, 5]);
  using y = ops.adaptiveAvgPool2d(x, [1, 3]);
  // Columns [0, 2), [1, 4), [3, 5) of both rows.
  assert.deepEqual([...y.shape], [1, 1, 3]);
  assert.deepEqual([...y.toArray()], [3, 4.5, 6]);
  using same = ops.adaptiveAvgPool2d(x, [1, null]);
  assert.deepEqual([...same.toArray()], [2.5, 3.5, 4.5, 5.5, 6.5]);
  assert.throws(() => ops.adaptiveAvgPool2d(x, [1, 0]), /outputSize/);
});

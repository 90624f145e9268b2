// Indexing along an axis (issue 12): gather, indexSelect, scatterAdd, cumsum, maxWithIndices, minWithIndices.
// The native kernel against the reference (bitwise, random strides; the ISA test runs the same cases under
// every variant through conformanceRun), then the ops' errors and edges beyond the PyTorch fixtures
// (tests/fixtures/cases/indexing.py) and the gradient checks (tests/helpers/op_registry.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { DType, ops, Tensor, TensorShapeError } from "../mod.ts";
import { IndexOp } from "../src/kernels/indexing.ts";
import { indexCase, newTally } from "./helpers/kernels_conformance.ts";
import { OperandPool } from "./helpers/operands.ts";
import { native } from "../src/native/library.ts";

test("gather, scatter-add and cumsum match the reference bitwise, and refuse the same bad indices", () => {
  const tally = newTally();
  const pool = new OperandPool();
  try {
    for (let i = 0; i < 3 * 120; i++) {
      indexCase(pool, tally, 800_000 + i, { op: (i % 3) as IndexOp });
      if (i % 32 === 31) pool.release();
    }
  } finally {
    pool.release();
  }
  assert.deepEqual(tally.failures, []);
  assert.equal(tally.cases, 360);
  assert.ok(tally.elements > 3_000, `${tally.elements} outputs`);
});

test("a gather big enough to split across threads is the reference's bits for 1 to 4 threads", () => {
  const pool = new OperandPool();
  try {
    for (const threads of [1, 2, 3, 4]) {
      for (const [i, shape] of [[64, 4097], [3, 300, 301], [9000, 37]].entries()) {
        const tally = newTally();
        const before = native.zt_thread_jobs();
        // Random strides and axes: some cases take the whole-row copy (an index constant along the last
        // axis), the others the element walk.
        indexCase(pool, tally, 810_000 + 10 * threads + i, {
          op: IndexOp.Gather,
          shape,
          threads,
          inRange: true,
        });
        const jobs = native.zt_thread_jobs() - before;
        assert.deepEqual(tally.failures, []);
        if (threads === 1) assert.equal(jobs, 0, `${shape}: one thread ran a pool job`);
        else assert.ok(jobs >= 1, `${shape}: no pool job with ${threads} threads`);
        pool.release();
      }
    }
  } finally {
    pool.release();
  }
});

test("an index out of range is a TensorShapeError naming the op, the index and the bound; nothing is read", () => {
  using x = Tensor.from([[1, 2, 3], [4, 5, 6]]);
  using bad = Tensor.from([[0, 3]], { dtype: DType.I64 });
  assert.throws(
    () => ops.gather(x, 1, bad),
    (e: Error) =>
      e instanceof TensorShapeError && /gather/.test(e.message) && /index 3/.test(e.message) &&
      /extent 3/.test(e.message),
  );
  using negative = Tensor.from([-1], { dtype: DType.I32 });
  assert.throws(() => x.indexSelect(0, negative), /indexSelect.*index -1 .*extent 2/);
  using src = Tensor.from([[1, 1]]);
  assert.throws(() => x.scatterAdd(1, bad, src), /scatterAdd.*index 3/);
  using floats = Tensor.from([0]);
  assert.throws(() => ops.gather(x, 0, floats), /index must be an I64 or I32 tensor/);
  using tall = Tensor.from([[0], [0], [0]], { dtype: DType.I64 });
  assert.throws(() => ops.gather(x, 1, tall), TensorShapeError);
  using matrix = Tensor.from([[0]], { dtype: DType.I64 });
  assert.throws(() => ops.indexSelect(x, 0, matrix), /index must be 1-D/);
});

test("scatterAdd adds repeated indices in order and leaves its input alone; its gradients", () => {
  const x = Tensor.from([[1, 2], [3, 4]]).withRequiresGrad();
  const src = Tensor.from([[10, 20], [30, 40], [50, 60]]).withRequiresGrad();
  using index = Tensor.from([[1, 0], [1, 1], [0, 1]], { dtype: DType.I32 });
  using out = ops.scatterAdd(x, 0, index, src);
  assert.deepEqual(out.toNested(), [[51, 22], [43, 104]]);
  assert.deepEqual(x.toNested(), [[1, 2], [3, 4]]);
  using weights = Tensor.from([[1, 2], [3, 4]]);
  ops.sum(ops.mul(out, weights)).backward();
  assert.deepEqual(x.grad!.toNested(), [[1, 2], [3, 4]]);
  assert.deepEqual(src.grad!.toNested(), [[3, 2], [3, 4], [1, 4]]);
  x.dispose();
  src.dispose();
});

test("maxWithIndices sends the gradient to the first maximum only (PyTorch's rule), max shares it", () => {
  const x = Tensor.from([[1, 5, 5], [7, 0, 7]]).withRequiresGrad();
  const { values, indices } = x.maxWithIndices(1);
  assert.deepEqual(values.toNested(), [5, 7]);
  assert.deepEqual([...(indices.toArray() as BigInt64Array)], [1n, 0n]);
  values.sum().backward();
  assert.deepEqual(x.grad!.toNested(), [[0, 1, 0], [1, 0, 0]]);
  const kept = ops.minWithIndices(x, 0, { keepDims: true });
  assert.deepEqual(kept.values.toNested(), [[1, 0, 5]]);
  assert.deepEqual(kept.indices.shape, [1, 3]);
  for (const t of [values, indices, kept.values, kept.indices, x]) t.dispose();
});

test("cumsum: f64 running sums rounded once, any axis, a rank-0 tensor is its own sum", () => {
  using x = Tensor.from([2 ** 24, 1, 1, 2]);
  using c = x.cumsum(0);
  assert.deepEqual(c.toNested(), [2 ** 24, 2 ** 24, 2 ** 24 + 2, 2 ** 24 + 4]);
  using m = Tensor.from([[1, 2], [3, 4]]);
  using down = ops.cumsum(m, -2);
  assert.deepEqual(down.toNested(), [[1, 2], [4, 6]]);
  using s = Tensor.from([3], []);
  using same = s.cumsum(0);
  assert.equal(same.item(), 3);
  assert.throws(() => m.cumsum(2), TensorShapeError);
});

test("split and chunk are views that cover the axis; stack adds an axis; bad sizes are refused", () => {
  using t = Tensor.from([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]);
  const pieces = t.split(2, 1);
  assert.deepEqual(pieces.map((p) => p.shape), [[2, 2], [2, 2], [2, 1]]);
  assert.ok(pieces.every((p) => p.storage === t.storage));
  const chunks = t.chunk(3, -1);
  assert.deepEqual(chunks.map((p) => p.toNested()), [[[1, 2], [6, 7]], [[3, 4], [8, 9]], [[5], [10]]]);
  // torch.chunk(5 elements, 4) gives 3 chunks of 2, 2, 1.
  assert.equal(ops.chunk(t, 4, 1).length, 3);
  assert.throws(() => t.split([2, 2], 1), /add up to 4, not to the extent 5/);
  assert.throws(() => t.split(0), /positive integer/);
  assert.throws(() => t.chunk(0), /positive integer/);
  using s = ops.stack([t, t], 1);
  assert.deepEqual(s.shape, [2, 2, 5]);
  using other = Tensor.zeros([2, 4]);
  assert.throws(() => ops.stack([t, other]), /same shape/);
  assert.throws(() => ops.stack([]), TensorShapeError);
});

test("repeat tiles with leading axes; oneHot checks its labels and infers numClasses", () => {
  using x = Tensor.from([[1, 2]]);
  using r = x.repeat([2, 1, 2]);
  assert.deepEqual(r.toNested(), [[[1, 2, 1, 2]], [[1, 2, 1, 2]]]);
  assert.throws(() => x.repeat([2]), /at least one per axis/);
  using labels = Tensor.from([[1, 0], [3, 1]], { dtype: DType.I32 });
  using hot = labels.oneHot();
  assert.equal(hot.dtype, DType.I64);
  assert.deepEqual(hot.shape, [2, 2, 4]);
  assert.deepEqual([...(hot.toArray() as BigInt64Array)].slice(8, 12), [0n, 0n, 0n, 1n]);
  assert.throws(() => labels.oneHot(3), /oneHot.*label 3 is out of range for 3 classes/);
  using negative = Tensor.from([-2], { dtype: DType.I64 });
  assert.throws(() => ops.oneHot(negative, 4), /label -2/);
  using floats = Tensor.from([1]);
  assert.throws(() => ops.oneHot(floats, 2), /I64 or I32/);
});

test("tril and triu give 0 outside the triangle even for inf and NaN, and take only diagonal", () => {
  using x = Tensor.from([[Infinity, NaN], [1, -Infinity]]);
  using lower = x.tril();
  assert.deepEqual(lower.toNested(), [[Infinity, 0], [1, -Infinity]]);
  using upper = ops.triu(x, { diagonal: 1 });
  assert.ok(Number.isNaN((upper.toArray() as Float32Array)[1]));
  assert.deepEqual((upper.toArray() as Float32Array)[2], 0);
  assert.throws(() => x.tril({ k: 1 } as never), /unknown option k/);
  assert.throws(() => x.triu({ diagonal: 0.5 }), /diagonal must be an integer/);
  using v = Tensor.from([1, 2]);
  assert.throws(() => v.tril(), /at least 2 axes/);
});

test("pad: PyTorch's pad order, three modes, and refused pads", () => {
  using x = Tensor.from([[1, 2], [3, 4]]);
  using c = x.pad([0, 1, 1, 0]);
  assert.deepEqual(c.toNested(), [[0, 0, 0], [1, 2, 0], [3, 4, 0]]);
  using same = x.pad([]);
  assert.ok(same.storage !== x.storage);
  assert.deepEqual(same.toNested(), x.toNested());
  assert.throws(
    () => x.pad([2, 0], { mode: "reflect" }),
    /reflect padding of 2 and 0 needs pads smaller than/,
  );
  assert.throws(() => x.pad([1]), /pairs of non-negative integers/);
  assert.throws(() => x.pad([-1, 0]), /pairs of non-negative integers/);
  assert.throws(() => x.pad([1, 1], { mode: "circular" as never }), /mode must be/);
  assert.throws(() => x.pad([1, 1], { fill: 1 } as never), /unknown option fill/);
});

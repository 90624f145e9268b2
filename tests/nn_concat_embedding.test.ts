// concat and embedding: values (strided, empty and integer inputs), gradients against central differences,
// the Concat and Embedding records, padding rows, errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ActivationScope,
  DType,
  DTypeError,
  ops,
  quantize,
  Tensor,
  TensorCompute,
  TensorShapeError,
} from "../mod.ts";
import * as R from "./helpers/f64.ts";

test("concat joins along any axis, reading strided and empty inputs", () => {
  using _ = new ActivationScope();
  const a = Tensor.arange(6).reshape([2, 3]);
  const b = Tensor.from([[10, 11, 12]]);
  assert.deepEqual(ops.concat([a, b]).toNested(), [[0, 1, 2], [3, 4, 5], [10, 11, 12]]);
  const t = a.T; // [3, 2], strided
  const flipped = ops.flip(Tensor.from([[7], [8], [9]]), 0);
  assert.deepEqual(ops.concat([t, flipped, Tensor.zeros([3, 0])], -1).toNested(), [[0, 3, 9], [1, 4, 8], [
    2,
    5,
    7,
  ]]);
  assert.deepEqual(ops.concat([b]).toNested(), [[10, 11, 12]]);
  const ints = ops.concat([
    Tensor.from([1, 2], [2], { dtype: DType.I32 }),
    Tensor.from([3], [1], { dtype: DType.I32 }),
  ]);
  assert.equal(ints.dtype, DType.I32);
  assert.deepEqual([...ints.toArray()], [1, 2, 3]);
  const x = Tensor.randn([2, 3, 4], { seed: 1 });
  const y = Tensor.randn([2, 5, 4], { seed: 2 });
  const joined = ops.concat([x, y], 1);
  const expected = R.concat([x, y].map((v) => R.f64(v.shape, v.toArray() as Float32Array)), 1);
  assert.deepEqual([...joined.toArray()], [...Float32Array.from(expected.data)]);
});

const concatCases: R.GradCase[] = [
  {
    name: "concat (axis 1, three inputs)",
    shapes: [[2, 3, 2], [2, 1, 2], [2, 4, 2]],
    f32: (xs) => ops.concat(xs, 1),
    f64: (xs) => R.concat(xs, 1),
  },
  {
    name: "concat (strided leaves, last axis)",
    shapes: [[3, 2], [3, 4]],
    f32: (xs) => ops.concat(xs, -1),
    f64: (xs) => R.concat(xs, 1),
    strided: true,
  },
  {
    name: "embedding (repeated and padding rows)",
    shapes: [[5, 3]],
    f32: ([w]) =>
      ops.embedding(Tensor.from([[4, 1, 4], [0, 2, 1]], { dtype: DType.I64 }), w, { paddingIdx: -1 }),
    // The padding row (4) is looked up but is a constant for the gradient: zeros here, whose derivative is 0.
    f64: ([w]) =>
      R.embedding([4, 1, 4, 0, 2, 1], [2, 3], R.f64(w.shape, w.data.map((v, i) => (i >= 12 ? 0 : v)))),
  },
  {
    name: "embedding (strided table)",
    shapes: [[4, 6]],
    f32: ([w]) => ops.embedding(Tensor.from([1, 3, 1, 0], [4], { dtype: DType.I32 }), w),
    f64: ([w]) => R.embedding([1, 3, 1, 0], [4], w),
    strided: true,
  },
];

for (const mode of ["exact", "fast"] as const) {
  test(`concat and embedding gradients match central differences of the f64 reference (${mode})`, () => {
    for (const c of concatCases) R.checkGradients(c, mode);
  });
}

test("the Concat record keeps the axis and each input's extent; inputs without gradients get none", () => {
  using _ = new ActivationScope();
  const a = Tensor.ones([2, 2]).withRequiresGrad();
  const b = Tensor.ones([2, 3]);
  const c = Tensor.ones([2, 1]).withRequiresGrad();
  const y = ops.concat([a, b, c], -1);
  const r = y.gradFn!;
  assert.equal(r.op, "Concat");
  assert.deepEqual(r.attrs, { axis: 1, sizes: [2, 3, 1] });
  assert.deepEqual(r.saved, []);
  assert.deepEqual(r.inputs.map((i) => i.node), [a.leaf, null, c.leaf]);
  ops.sum(ops.mul(y, Tensor.from([1, 2, 3, 4, 5, 6]))).backward();
  assert.deepEqual(a.grad!.toNested(), [[1, 2], [1, 2]]);
  assert.deepEqual(c.grad!.toNested(), [[6], [6]]);
  assert.equal(ops.concat([b, b]).gradFn, null);
});

test("embedding looks rows up for any integer index dtype and shape, from a strided table", () => {
  using _ = new ActivationScope();
  const table = Tensor.arange(12).reshape([4, 3]);
  for (const dtype of [DType.I32, DType.I64, DType.U8, DType.I16, DType.U64]) {
    const ids = Tensor.from([[3, 0], [1, 3]], { dtype: dtype });
    const rows = ops.embedding(ids, table);
    assert.deepEqual(rows.toNested(), [[[9, 10, 11], [0, 1, 2]], [[3, 4, 5], [9, 10, 11]]], `dtype ${dtype}`);
  }
  const strided = table.T; // [3, 4]: rows are the columns of `table`
  assert.deepEqual(ops.embedding(Tensor.from([2], [1], { dtype: DType.I32 }), strided).toNested(), [[
    2,
    5,
    8,
    11,
  ]]);
  assert.deepEqual([...ops.embedding(Tensor.scalar(3, { dtype: DType.I32 }), table).shape], [3]);
  assert.deepEqual([...ops.embedding(Tensor.zeros([0], { dtype: DType.I32 }), table).shape], [0, 3]);
});

test("a lookup big enough to split across threads copies the same rows for 1 to 4 threads, from a strided table too", () => {
  using _ = new ActivationScope();
  const [rows, dim, count] = [300, 520, 1100];
  const table = Tensor.randn([rows, dim], { seed: 5 });
  const values = new Int32Array(count);
  for (let i = 0; i < count; i++) values[i] = (i * 7919 + 13) % rows;
  const ids = Tensor.from(values);
  const data = table.toArray() as Float32Array;
  const expected = new Float32Array(count * dim);
  for (let i = 0; i < count; i++) {
    expected.set(data.subarray(values[i] * dim, (values[i] + 1) * dim), i * dim);
  }
  const strided = table.T.contiguous().T; // the same values, column-major: the element walk
  for (const threads of [1, 2, 3, 4]) {
    for (const source of [table, strided]) {
      const out = TensorCompute.run({ threads }, () => ops.embedding(ids, source)).toArray() as Float32Array;
      assert.equal(out.length, expected.length);
      assert.equal(out.findIndex((v, i) => v !== expected[i]), -1, `${threads} threads: a row differs`);
    }
  }
});

test("the Embedding record saves the indices and the padding row; lookups of it get no gradient", () => {
  using _ = new ActivationScope();
  const w = Tensor.ones([4, 2]).withRequiresGrad();
  const ids = Tensor.from([1, 3, 1, 0], [4], { dtype: DType.I32 });
  const y = ops.embedding(ids, w, { paddingIdx: -3 });
  const r = y.gradFn!;
  assert.equal(r.op, "Embedding");
  assert.deepEqual(r.attrs, { paddingIdx: 1 });
  assert.equal(r.savedTensor(0).storage, ids.storage);
  assert.deepEqual(r.inputs.map((i) => [...i.shape]), [[4, 2]]);
  assert.equal(r.inputs[0].node, w.leaf);
  ops.sum(ops.mul(y, Tensor.from([[1, 2], [3, 4], [5, 6], [7, 8]]))).backward();
  assert.deepEqual(w.grad!.toNested(), [[7, 8], [0, 0], [0, 0], [3, 4]]);
  assert.deepEqual(ops.embedding(ids, w).gradFn!.attrs, { paddingIdx: -1 });
  assert.equal(ops.embedding(ids, Tensor.ones([4, 2])).gradFn, null);
});

test("concat and embedding refuse bad input with typed errors naming the rule", () => {
  using _ = new ActivationScope();
  const a = Tensor.zeros([2, 3]);
  const w = Tensor.zeros([4, 2]);
  const cases: [() => unknown, new (...a: never[]) => Error, RegExp][] = [
    [() => ops.concat([]), TensorShapeError, /non-empty/],
    [() => ops.concat([a, Tensor.zeros([2, 3, 1])]), TensorShapeError, /other extents must match/],
    [() => ops.concat([a, Tensor.zeros([2, 4])], 0), TensorShapeError, /\[2, 3\] and \[2, 4\] along axis 0/],
    [() => ops.concat([a, a], 2), TensorShapeError, /out of range/],
    [() => ops.concat([a, a.cast(DType.F64)]), DTypeError, /same dtype/],
    [() => ops.concat([quantize(Tensor.zeros([32]), DType.Q8_0)]), DTypeError, /plain tensors/],
    [() => ops.concat([a, 1 as unknown as Tensor]), TypeError, /array of Tensors/],
    [() => ops.embedding(Tensor.from([0.5]), w), DTypeError, /integer tensor/],
    [() => ops.embedding(Tensor.from([true]), w), DTypeError, /integer tensor/],
    [
      () => ops.embedding(Tensor.from([4], [1], { dtype: DType.I32 }), w),
      TensorShapeError,
      /index 4 at position 0/,
    ],
    [
      () => ops.embedding(Tensor.from([-1], [1], { dtype: DType.I32 }), w),
      TensorShapeError,
      /outside the 4 rows/,
    ],
    [
      () => ops.embedding(Tensor.from([0], [1], { dtype: DType.I32 }), Tensor.zeros([4])),
      TensorShapeError,
      /\[rows, dim\]/,
    ],
    [() => ops.embedding(Tensor.from([0], [1], { dtype: DType.I32 }), w.cast(DType.F64)), DTypeError, /F32/],
    [
      () => ops.embedding(Tensor.from([0], [1], { dtype: DType.I32 }), w, { paddingIdx: 4 }),
      TensorShapeError,
      /paddingIdx/,
    ],
  ];
  for (const [fn, type, message] of cases) {
    assert.throws(fn, (e: Error) => e instanceof type && message.test(e.message), String(message));
  }
});

test("embedding checks every lookup before it renormalises or writes anything; empty lookups give [..., 0, dim]", () => {
  using _ = new ActivationScope();
  const w = Tensor.from([[3, 4], [6, 8]]);
  const before = [...w.toArray()];
  assert.throws(
    () => ops.embedding(Tensor.from([0, 1, 2], [3], { dtype: DType.I64 }), w, { maxNorm: 1 }),
    (e: Error) =>
      e instanceof TensorShapeError && /index 2 at position 2 is outside the 2 rows/.test(e.message),
  );
  assert.deepEqual([...w.toArray()], before, "the table is untouched");
  const none = ops.embedding(Tensor.zeros([2, 0], { dtype: DType.U8 }), w);
  assert.deepEqual(none.shape, [2, 0, 2]);
  // A U16 index (cast to I64 for the gather) with repeats and a strided view of the lookups.
  const ids = Tensor.from([[1, 0], [1, 1]], { dtype: DType.U16 }).transpose(0, 1);
  assert.deepEqual(ops.embedding(ids, w).toNested(), [[[6, 8], [6, 8]], [[3, 4], [6, 8]]]);
});

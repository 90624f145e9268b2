// The reductions added with issue 12 (argmin, prod, var, std, logsumexp, norm): edge cases and errors beyond
// the PyTorch fixtures (tests/fixtures/cases/reduce.py) and the gradient checks (tests/helpers/op_registry.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { DType, ops, OptionError, Tensor, TensorShapeError } from "../mod.ts";

test("argmin takes the first minimum, or the first NaN, and writes I64", () => {
  using x = Tensor.from([[3, 1, 1, 2], [0, NaN, -1, NaN]]);
  using i = x.argmin(1);
  assert.equal(i.dtype, DType.I64);
  assert.deepEqual([...(i.toArray() as BigInt64Array)], [1n, 1n]);
  using kept = ops.argmin(x, 0, { keepDims: true });
  assert.deepEqual(kept.shape, [1, 4]);
  using empty = Tensor.zeros([2, 0]);
  assert.throws(() => ops.argmin(empty, 1), TensorShapeError);
});

test("prod: an empty product is 1, and the gradient is exact at zeros", () => {
  using empty = Tensor.zeros([3, 0]);
  using ones = empty.prod(1);
  assert.deepEqual(ones.toNested(), [1, 1, 1]);
  using x = Tensor.from([[2, 0, 3], [0, 4, 0], [1, 2, 4]]).withRequiresGrad();
  using p = x.prod(1);
  assert.deepEqual(p.toNested(), [0, 0, 8]);
  p.sum().backward();
  // Row 0: one zero, its gradient is 2·3; row 1: two zeros, all 0; row 2: out/x.
  assert.deepEqual(x.grad!.toNested(), [[0, 6, 0], [0, 0, 0], [8, 4, 2]]);
});

test("var and std take correction (default 1) and keepDims; other keys are refused with PyTorch's spelling", () => {
  using x = Tensor.from([[1, 2, 3, 4], [2, 2, 2, 2]]);
  using v = x.var(1);
  assert.deepEqual(v.toNested(), [5 / 3, 0].map(Math.fround));
  using s = ops.std(x, 1, { correction: 0, keepDims: true });
  assert.deepEqual(s.toNested(), [[Math.fround(Math.sqrt(1.25))], [0]]);
  // N − correction ≤ 0 divides by zero, as PyTorch: inf, or NaN for 0/0.
  using one = Tensor.from([[5], [6]]);
  using nan = one.var(1);
  assert.ok((nan.toArray() as Float32Array).every(Number.isNaN));
  assert.throws(() => ops.var(x, 1, { unbiased: false } as never), /unknown option unbiased; use correction/);
  assert.throws(() => ops.std(x, 1, { keepdim: true } as never), /zigtensor spells it keepDims/);
  assert.throws(() => ops.var(x, 1, { correction: "1" } as never), OptionError);
});

test("logsumexp is stable for large values; norm takes p 2, 1 and Infinity only", () => {
  using x = Tensor.from([[1000, 1000, -1000], [-5, 0, 5]]);
  using l = ops.logsumexp(x, 1, { keepDims: true });
  const [a, b] = l.toArray() as Float32Array;
  assert.equal(a, Math.fround(1000 + Math.log(2)));
  assert.ok(Math.abs(b - Math.log(Math.exp(-5) + 1 + Math.exp(5))) < 1e-5);
  using y = Tensor.from([[3, -4], [-6, 8]]);
  using two = y.norm({ axis: 1 });
  using one = y.norm({ p: 1 });
  using inf = y.norm({ p: Infinity, axis: 0, keepDims: true });
  assert.deepEqual(two.toNested(), [5, 10]);
  assert.equal(one.item(), 21);
  assert.deepEqual(inf.toNested(), [[6, 8]]);
  assert.throws(() => y.norm({ p: 3 }), /p must be 2, 1 or Infinity, got number 3/);
  assert.throws(() => y.norm({ ord: 2 } as never), /zigtensor spells it p/);
  assert.throws(() => y.norm({ dim: 1 } as never), /zigtensor spells it axis/);
});

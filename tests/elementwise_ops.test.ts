// Issue 12's element-wise ops: the edge cases the random conformance and the oracle fixtures do not reach
// (PyTorch 2.15's gradients at clamp's bounds and at NaN, sign's zeros and NaN, option checks).
import { test } from "node:test";
import assert from "node:assert/strict";
import { ops, OptionError, Tensor, TensorCompute } from "../mod.ts";

function values(t: Tensor): number[] {
  return Array.from(t.toArray() as Float32Array);
}

/** The gradient of Σ f(x) at `xs`. */
function gradient(xs: number[], f: (x: Tensor) => Tensor): number[] {
  const x = Tensor.from(xs).withRequiresGrad();
  ops.sum(f(x)).backward();
  const g = values(x.grad!);
  x.dispose();
  return g;
}

test("clamp with number bounds: values, NaN, min > max, and PyTorch 2.15's strict gradient at the bounds", () => {
  using x = Tensor.from([0, 1, 2, 3, 4, NaN]);
  using y = ops.clamp(x, { min: 1, max: 3 });
  assert.deepEqual(values(y), [1, 1, 2, 3, 3, NaN]);
  using swapped = x.clamp({ min: 3, max: 1 });
  assert.deepEqual(values(swapped), [1, 1, 1, 1, 1, NaN]);
  // torch.clamp(x, 1., 3.).sum().backward() gives [0, 0, 1, 0, 0, 0] in PyTorch 2.15.
  assert.deepEqual(gradient([0, 1, 2, 3, 4, NaN], (t) => ops.clamp(t, { min: 1, max: 3 })), [
    0,
    0,
    1,
    0,
    0,
    0,
  ]);
  assert.deepEqual(gradient([0, 1, 2, NaN], (t) => ops.clamp(t, { min: 1 })), [0, 0, 1, 0]);
  assert.deepEqual(gradient([2, 3, 4, -Infinity], (t) => ops.clamp(t, { max: 3 })), [1, 0, 0, 1]);
});

test("hardtanh passes the gradient strictly inside its bounds and at NaN, like PyTorch's hardtanh_backward", () => {
  assert.deepEqual(gradient([-2, -1, 0, 1, 2, NaN], (t) => ops.hardtanh(t)), [0, 0, 1, 0, 0, 1]);
  using y = ops.hardtanh(Tensor.from([NaN, -0, 5]), { minVal: 0, maxVal: 1 });
  assert.deepEqual(values(y), [NaN, -0, 1]);
});

test("sign is 0 at ±0 and NaN; leakyRelu and elu take their parameters; rsqrt, reciprocal, square", () => {
  using s = ops.sign(Tensor.from([NaN, -0, 0, -2, 3]));
  assert.ok(Object.is(values(s)[1], 0));
  assert.deepEqual(values(s), [0, 0, 0, -1, 1]);
  using l = ops.leakyRelu(Tensor.from([-2, 3]), { negativeSlope: 0.25 });
  assert.deepEqual(values(l), [-0.5, 3]);
  assert.deepEqual(gradient([-2, 3, NaN], (t) => t.leakyRelu({ negativeSlope: 0.25 })), [0.25, 1, 0.25]);
  using e = ops.elu(Tensor.from([-1, 2]), { alpha: 2 });
  assert.deepEqual(values(e), [Math.fround(2 * Math.expm1(-1)), 2]);
  assert.deepEqual(gradient([-1, 2, 100], (t) => t.elu({ alpha: 2 })), [Math.fround(2 * Math.exp(-1)), 1, 1]);
  using r = ops.rsqrt(Tensor.from([4, 0, -1]));
  assert.deepEqual(values(r), [0.5, Infinity, NaN]);
  using q = Tensor.from([2, -3]).reciprocal().square();
  assert.deepEqual(values(q), [0.25, Math.fround(Math.fround(1 / -3) ** 2)]);
  using lp = Tensor.from([1e-10, -1]).log1p();
  assert.deepEqual(values(lp), [Math.fround(1e-10), -Infinity]);
  using em = Tensor.from([1e-10]).expm1();
  assert.deepEqual(values(em), [Math.fround(1e-10)]);
});

test("options are checked: unknown keys name PyTorch's spelling, and parameters must be numbers", () => {
  using x = Tensor.from([1]);
  assert.throws(
    () => ops.leakyRelu(x, { negative_slope: 0.1 } as never),
    (e) => e instanceof OptionError && /negativeSlope/.test(e.message),
  );
  assert.throws(
    () => ops.softplus(x, { beta: "2" } as never),
    (e) => e instanceof OptionError && /beta must be a number/.test(e.message),
  );
  assert.throws(() => ops.hardtanh(x, { min_val: 0 } as never), /minVal/);
  assert.throws(() => ops.clamp(x, { lo: 0 } as never), OptionError);
});

test("fast-mode pow with a whole exponent is exact where the result is (5² = 25, not 25.0000019)", () => {
  using x = Tensor.from([5, 3, 2, 10, 1.1, -3]);
  for (const mode of ["fast", "exact"] as const) {
    TensorCompute.run({ mode }, () => {
      using sq = ops.pow(x, 2);
      assert.deepEqual(values(sq), [25, 9, 4, 100, Math.fround(Math.fround(1.1) ** 2), 9], mode);
      using cube = ops.pow(x, 3);
      assert.deepEqual(values(cube), [125, 27, 8, 1000, Math.fround(Math.fround(1.1) ** 3), -27], mode);
      using inv = ops.pow(x, -2);
      assert.deepEqual(values(inv).slice(0, 4), [0.04, 1 / 9, 0.25, 0.01].map(Math.fround), mode);
    });
  }
});

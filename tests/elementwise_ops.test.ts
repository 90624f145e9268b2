// Issue 12's element-wise ops: the edge cases the random conformance and the oracle fixtures do not reach
// (PyTorch 2.15's gradients at clamp's bounds and at NaN, sign's zeros and NaN, option checks).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DType,
  DTypeError,
  GradMode,
  Layout,
  ops,
  OptionError,
  StaleTensorError,
  Tensor,
  TensorCompute,
  TensorShapeError,
} from "../mod.ts";

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

test("where keeps every plain dtype bit for bit, broadcasts its three operands, and takes numbers", () => {
  using cond = Tensor.from([true, false, true]);
  const dtypes = [
    "F32",
    "F64",
    "F16",
    "BF16",
    "U8",
    "I8",
    "U16",
    "I16",
    "I32",
    "U32",
    "I64",
    "U64",
    "Bool",
  ] as const;
  for (const name of dtypes) {
    const dtype = DType[name];
    using a = Tensor.from([1, 0, 1], { dtype });
    using b = Tensor.from([0, 1], [2, 1], { dtype });
    using y = ops.where(cond, a, b);
    assert.equal(y.dtype, dtype, name);
    assert.deepEqual(y.shape, [2, 3], name);
    assert.deepEqual(
      y.toNested(),
      dtype === DType.I64 || dtype === DType.U64 ? [[1n, 0n, 1n], [1n, 1n, 1n]] : [[1, 0, 1], [1, 1, 1]],
      name,
    );
  }
  // NaN payloads and −0 pass unchanged (the kernel moves bits).
  const words = new Uint32Array([0x7fc01234, 0x80000000]);
  using bits = Tensor.from(new Float32Array(words.buffer));
  using picked = ops.where(Tensor.from([true, true]), bits, 0);
  const out = picked.toArray() as Float32Array;
  assert.deepEqual([...new Uint32Array(out.buffer, out.byteOffset, 2)], [...words]);
  // A number takes the tensor's dtype; two numbers give F32; the method is PyTorch's x.where(cond, y).
  using ints = Tensor.from([5, 6, 7], { dtype: DType.I16 });
  using kept = ops.where(cond, ints, -1);
  assert.ok(kept.dtype === DType.I16 && kept.toArray().join() === "5,-1,7");
  using halves = ops.where(cond, 0.1, Tensor.from([2, 2, 2], { dtype: DType.F16 }));
  assert.ok(
    halves.dtype === DType.F16 && halves.get(0) === Tensor.scalar(0.1, { dtype: DType.F16 }).item() &&
      halves.get(1) === 2,
  );
  using numbers = ops.where(cond, 1, 2);
  assert.ok(numbers.dtype === DType.F32 && numbers.toArray().join() === "1,2,1");
  using method = ints.where(cond, 0);
  assert.equal(method.toArray().join(), "5,0,7");
});

test("where refuses what PyTorch would promote or reject, naming the rule", () => {
  using cond = Tensor.from([true, false]);
  using f = Tensor.from([1, 2]);
  using i = Tensor.from([1, 2], { dtype: DType.I32 });
  using flags = Tensor.from([true, true]);
  const refuses = (fn: () => unknown, type: new (...a: never[]) => Error, pattern: RegExp) =>
    assert.throws(fn, (e) => e instanceof type && pattern.test((e as Error).message));
  refuses(() => ops.where(f, f, f), DTypeError, /condition must be a plain Bool tensor, got F32/);
  refuses(() => ops.where(cond, f, i), DTypeError, /one dtype, got F32 and I32/);
  refuses(() => ops.where(cond, i, 1.5), DTypeError, /1\.5 does not keep the dtype I32/);
  refuses(() => ops.where(cond, Tensor.from([1], { dtype: DType.I8 }), 300), DTypeError, /300/);
  refuses(() => ops.where(cond, flags, 1), DTypeError, /dtype Bool/);
  refuses(() => ops.where(cond, f, Tensor.zeros([3])), TensorShapeError, /where/);
  refuses(() => ops.where(cond, "1" as never, f), OptionError, /a must be a Tensor/);
  refuses(() => ops.where([true] as never, f, f), OptionError, /condition must be a Tensor/);
  using nchw = Tensor.zeros([1, 4, 1, 1]);
  using blocked = nchw.toLayout(Layout.nchwc(4));
  refuses(() => ops.where(Tensor.from([true]), blocked, 0), DTypeError, /blocked/);
  using f64 = Tensor.from([1, 2], { dtype: DType.F64 }).withRequiresGrad();
  refuses(() => ops.where(cond, f64, 0), DTypeError, /gradients flow through F32/);
  GradMode.noGrad(() => ops.where(cond, f64, 0).dispose());
  const stale = Tensor.from([1, 2]);
  stale.dispose();
  assert.throws(() => ops.where(cond, stale, 0), StaleTensorError);
});

test("where's gradient goes to a where the condition holds and to b elsewhere, summed to each shape", () => {
  using cond = Tensor.from([true, false, false, true], [2, 2]);
  using a = Tensor.from([1, 2, 3, 4], [2, 2]).withRequiresGrad();
  using b = Tensor.from([5, 6]).withRequiresGrad();
  using y = ops.where(cond, a, b);
  using w = Tensor.from([1, 10, 100, 1000], [2, 2]);
  ops.sum(ops.mul(y, w)).backward();
  assert.deepEqual(values(a.grad!), [1, 0, 0, 1000]);
  assert.deepEqual(values(b.grad!), [100, 10]);
});

test("clamp with tensor bounds: broadcasting, NaN from any operand, a number beside a tensor, checked bounds", () => {
  using x = Tensor.from([-2, 0.5, 3, NaN]);
  using lo = Tensor.from([0, 1], [2, 1]);
  using y = ops.clamp(x, { min: lo, max: 2 });
  assert.deepEqual(y.shape, [2, 4]);
  assert.deepEqual(values(y), [0, 0.5, 2, NaN, 1, 1, 2, NaN]);
  using nanBound = ops.clamp(Tensor.from([1, 1]), { min: Tensor.from([NaN, 0]), max: Tensor.from([5, NaN]) });
  assert.ok(values(nanBound).every(Number.isNaN));
  using swapped = x.clamp({ min: Tensor.scalar(3), max: Tensor.scalar(1) });
  assert.deepEqual(values(swapped), [1, 1, 1, NaN]);
  assert.throws(() => ops.clamp(x, { min: Tensor.from([1], { dtype: DType.F64 }) }), DTypeError);
  assert.throws(() => ops.clamp(x, { min: lo, max: "2" as never }), /max must be a number/);
  assert.throws(() => ops.clamp(x, { min: Tensor.zeros([3]) }), TensorShapeError);
});

test("gelu's two forms: the erf one by default, checked options, the gradient Φ(x) + x·φ(x)", () => {
  using x = Tensor.from([-3, -0.5, 0, 1, 2.5]);
  using exact = ops.gelu(x);
  using none = ops.gelu(x, { approximate: "none" });
  using tanh = x.gelu({ approximate: "tanh" });
  const phi = (v: number) => 0.5 * (1 + erfOf(v / Math.SQRT2));
  values(exact).forEach((v, i) => {
    const t = (x.toArray() as Float32Array)[i];
    assert.ok(Math.abs(v - t * phi(t)) <= 2e-7 * Math.max(1, Math.abs(t)), `${t}: ${v}`);
  });
  assert.deepEqual(values(none), values(exact));
  assert.notDeepEqual(values(tanh), values(exact));
  assert.throws(
    () => ops.gelu(x, { approximate: "erf" } as never),
    (e) => e instanceof OptionError && /"none" or "tanh"/.test(e.message),
  );
  assert.throws(() => ops.gelu(x, { approx: "tanh" } as never), OptionError);
  const g = gradient([-3, -0.5, 0, 1, 2.5], (t) => ops.gelu(t));
  [-3, -0.5, 0, 1, 2.5].forEach((t, i) => {
    const want = phi(t) + t * Math.exp(-t * t / 2) / Math.sqrt(2 * Math.PI);
    assert.ok(Math.abs(g[i] - want) < 1e-6, `${t}: ${g[i]} vs ${want}`);
  });
});

/** erf by its Maclaurin series (independent of the library's f64 erf), for |x| < 3. */
function erfOf(x: number): number {
  let term = x;
  let sum = x;
  for (let n = 1; n < 80; n++) {
    term *= -x * x / n;
    sum += term / (2 * n + 1);
  }
  return 2 / Math.sqrt(Math.PI) * sum;
}

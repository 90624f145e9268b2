// The Tensor API: creating, reading and writing every dtype, views through handles, lifetime, versions,
// layouts, quantized views, casts, operator errors, and the reference kernel set running ops end to end.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ActivationScope,
  Arena,
  dequantize,
  DType,
  DTypeError,
  GradMode,
  Layout,
  ops,
  quantize,
  referenceKernels,
  StaleTensorError,
  Tensor,
  TensorCompute,
  TensorShapeError,
} from "../mod.ts";

test("from takes every typed array with its dtype, nested arrays, booleans and bigints", () => {
  const cases: [ArrayBufferView, number][] = [
    [new Float32Array([1.5, -2]), DType.F32],
    [new Float64Array([1e300, -0]), DType.F64],
    [new Int8Array([-128, 127]), DType.I8],
    [new Uint8Array([0, 255]), DType.U8],
    [new Int16Array([-32768, 5]), DType.I16],
    [new Uint16Array([65535, 1]), DType.U16],
    [new Int32Array([-(2 ** 31), 7]), DType.I32],
    [new Uint32Array([2 ** 32 - 1, 0]), DType.U32],
    [new BigInt64Array([-(2n ** 63n), 1n]), DType.I64],
    [new BigUint64Array([2n ** 64n - 1n, 2n]), DType.U64],
  ];
  for (const [values, dtype] of cases) {
    using t = Tensor.from(values as Float32Array);
    assert.equal(t.dtype, dtype);
    assert.deepEqual([...t.toArray()], [...(values as Float32Array)]);
    assert.equal(t.get(0), (values as Float32Array)[0]);
  }
  using nested = Tensor.from([[1, 2, 3], [4, 5, 6]]);
  assert.deepEqual(nested.shape, [2, 3]);
  assert.deepEqual(nested.toNested(), [[1, 2, 3], [4, 5, 6]]);
  using flags = Tensor.from([true, false, true]);
  assert.equal(flags.dtype, DType.Bool);
  assert.deepEqual([...flags.toArray()], [1, 0, 1]);
  using big = Tensor.from([3n, -4n]);
  assert.equal(big.dtype, DType.I64);
  assert.equal(big.get(1), -4n);
  using bits = Tensor.from(new Uint16Array([0x3c00, 0xc000]), [2], { dtype: DType.F16 });
  assert.deepEqual([bits.get(0), bits.get(1)], [1, -2]);
  assert.throws(() => Tensor.from([[1, 2], [3]]), /ragged/);
  assert.throws(() => Tensor.from([1, 2, 3], [2, 2]), /3 values cannot fill shape \[2, 2\] \(4 elements\)/);
});

test("writes convert by the cast rules: truncation, saturation, NaN to 0, wrapping bigints, rounding through f32", () => {
  using i32 = Tensor.zeros([4], { dtype: DType.I32 });
  i32.set(2.9, 0);
  i32.set(-1e12, 1);
  i32.set(NaN, 2);
  i32.set(2n ** 40n + 5n, 3);
  assert.deepEqual([...i32.toArray()], [2, -(2 ** 31), 0, 5]);
  using u8 = Tensor.zeros([3], { dtype: DType.U8 });
  u8.set(-3, 0);
  u8.set(300, 1);
  u8.set(-1n, 2);
  assert.deepEqual([...u8.toArray()], [0, 255, 255]);
  using b = Tensor.zeros([3], { dtype: DType.Bool });
  b.set(NaN, 0);
  b.set(0.1, 1);
  b.set(-0, 2);
  assert.deepEqual([...b.toArray()], [1, 1, 0]);
  using h = Tensor.zeros([2], { dtype: DType.F16 });
  h.set(65520, 0); // rounds to infinity in f16
  h.set(1 + 2 ** -11, 1); // a tie: rounds to even (1)
  assert.deepEqual([h.get(0), h.get(1)], [Infinity, 1]);
  using bf = Tensor.zeros([1], { dtype: DType.BF16 });
  bf.set(1.00390625, 0); // 1 + 2^-8, a tie: rounds to even (1)
  assert.equal(bf.get(0), 1);
  using i64 = Tensor.zeros([2], { dtype: DType.I64 });
  i64.set(1e30, 0);
  i64.set(-7.9, 1);
  assert.deepEqual([i64.get(0), i64.get(1)], [2n ** 63n - 1n, -7n]);
  using f32 = Tensor.zeros([1]);
  f32.set(2n ** 24n + 1n, 0); // integer → float rounds once, ties to even
  assert.equal(f32.get(0), 2 ** 24);
});

test("data() is a zero-copy view of contiguous tensors; strided ones refuse with a clear message", () => {
  using t = Tensor.zeros([2, 3]);
  const data = t.data() as Float32Array;
  data[4] = 9;
  assert.equal(t.get(1, 1), 9);
  assert.throws(
    () => t.T.data(),
    /data\(\) needs a contiguous tensor; this one has shape \[3, 2\] and strides \[1, 3\]/,
  );
  using h = Tensor.ones([2], { dtype: DType.F16 });
  const halves = h.data();
  assert.ok(halves.constructor.name === "Float16Array" ? halves[0] === 1 : halves[0] === 0x3c00);
  using bf = Tensor.ones([2], { dtype: DType.BF16 });
  assert.ok(bf.data() instanceof Uint16Array && bf.data()[0] === 0x3f80);
});

test("the version counter counts set, fill, copyFrom and mutableData on every view of a storage", () => {
  using t = Tensor.zeros([4]);
  const view = t.slice(0, 1, 3);
  assert.equal(t.storage.version, 0);
  t.set(1, 0);
  view.fill(2);
  using src = Tensor.from([5, 6]);
  view.copyFrom(src);
  t.mutableData();
  t.data();
  assert.equal(view.storage.version, 4);
  assert.deepEqual([...t.toArray()], [1, 5, 6, 0]);
});

test("one dispose releases every handle and view; stale access throws naming the operation", () => {
  const t = Tensor.from([1, 2, 3, 4], [2, 2]);
  const views = [t.T, t.slice(0, 0, 1), t.reshape([4]), t.detach(), t.expand([3, 2, 2])];
  views[2].dispose();
  views[2].dispose();
  assert.equal(t.isReleased, true);
  for (const v of views) {
    assert.equal(v.isReleased, true);
    assert.throws(
      () => v.get(...new Array(v.rank).fill(0)),
      (e: Error) => e instanceof StaleTensorError && /get:/.test(e.message),
    );
  }
  assert.throws(() => t.toArray(), (e: Error) => e instanceof StaleTensorError && e instanceof TypeError);
  assert.throws(() => ops.add(t, 1), StaleTensorError);
});

test("reshape returns a view when the strides allow and a copy otherwise; contiguous returns itself", () => {
  using t = Tensor.arange(6).reshape([2, 3]);
  const view = t.reshape([3, 2]);
  assert.equal(view.storage, t.storage);
  using copy = t.T.reshape([6]);
  assert.notEqual(copy.storage, t.storage);
  assert.deepEqual([...copy.toArray()], [0, 3, 1, 4, 2, 5]);
  assert.equal(t.contiguous(), t);
  assert.equal(t.T.tryReshape([6]), null);
  assert.throws(() => t.reshape([4, -1]), /cannot infer the -1 in \[4, -1\] for 6 elements/);
  assert.throws(() => t.reshape([-1, -1]), /only one dimension may be -1/);
});

test("writes through broadcast views are refused", () => {
  using t = Tensor.zeros([3]);
  const wide = t.expand([2, 3]);
  assert.throws(() => wide.fill(1), /cannot write through a broadcast view/);
  assert.throws(() => wide.set(1, 0, 0), /cannot write through a broadcast view/);
});

test("casts between dtypes follow section 10: f64 to f16 rounds twice, floats to ints saturate", () => {
  using x = Tensor.from(new Float64Array([1.5, -300.7, NaN, 1e10]));
  using i8 = x.cast(DType.I8);
  assert.deepEqual([...i8.toArray()], [1, -128, 0, 127]);
  // 1 + 2^-11 + 2^-30: nearest f16 is 1 + 2^-10, but through f32 it becomes the tie 1 + 2^-11, which rounds to 1.
  using d = Tensor.from(new Float64Array([1 + 2 ** -11 + 2 ** -30]));
  using h = d.cast(DType.F16);
  assert.equal(h.get(0), 1);
  using back = i8.cast(DType.F32);
  assert.deepEqual([...back.toArray()], [1, -128, 0, 127]);
  using flags = Tensor.from([0, -0, NaN, 2]).cast(DType.Bool);
  assert.deepEqual([...flags.toArray()], [0, 0, 1, 1]);
});

test("layouts: NHWC strides, blocked NchwC(B) round trips, blocked tensors only convert", () => {
  using x = Tensor.arange(2 * 5 * 3 * 2).reshape([2, 5, 3, 2]);
  using nhwc = x.toLayout(Layout.Nhwc);
  assert.equal(nhwc.layout, Layout.Nhwc);
  assert.deepEqual([...nhwc.strides], [30, 1, 10, 5]);
  assert.deepEqual([...nhwc.contiguous().toArray()], [...x.toArray()]);
  assert.equal(x.toLayout(Layout.Nchw), x);
  for (const b of [1, 3, 4, 8, 256]) {
    using blocked = nhwc.toLayout(Layout.nchwc(b));
    assert.equal(blocked.layout, Layout.nchwc(b));
    assert.equal(blocked.data().length, 2 * Math.ceil(5 / b) * 3 * 2 * b);
    using back = blocked.toLayout(Layout.Nchw);
    assert.deepEqual([...back.toArray()], [...x.toArray()]);
    using again = blocked.toLayout(Layout.Nhwc);
    assert.deepEqual([...again.strides], [30, 1, 10, 5]);
  }
  using blocked = x.toLayout(Layout.nchwc(4));
  const padded = [...blocked.data()].slice(4 * 3 * 2 + 1, 4 * 3 * 2 + 4);
  assert.deepEqual(padded, [0, 0, 0]); // lanes past C are zero
  assert.throws(() => blocked.get(0, 0, 0, 0), /only supports toLayout\(\), data\(\) and metadata/);
  assert.throws(() => blocked.slice(1, 0, 1), /blocked NchwC\(4\) tensor has no views/);
  assert.throws(() => blocked.withRequiresGrad(), DTypeError);
  assert.throws(() => ops.add(blocked, 1), DTypeError);
  using leaf = Tensor.zeros([1, 2, 2, 2]).withRequiresGrad();
  assert.throws(() => leaf.toLayout(Layout.nchwc(2)), /cannot require gradients/);
  assert.throws(() => Tensor.zeros([2, 2]).toLayout(Layout.Nhwc), /rank-4 NCHW tensors/);
});

test("quantized tensors keep whole blocks of 32 along the last axis in every view", () => {
  using x = Tensor.rand([4, 64], { seed: 9 });
  using q = quantize(x, DType.Q4_0);
  assert.equal(q.data().length, 4 * 2 * 18);
  const rows = q.slice(0, 1, 3);
  const half = q.slice(1, 32, 64);
  using rowsBack = dequantize(rows.contiguous());
  assert.deepEqual(rowsBack.shape, [2, 64]);
  assert.equal(half.shape[1], 32);
  assert.throws(
    () => q.slice(1, 0, 16),
    (e: Error) => e instanceof TensorShapeError && /whole blocks of 32/.test(e.message),
  );
  assert.throws(() => q.T, /whole blocks/);
  assert.throws(() => q.get(0, 0), /not addressable one at a time/);
  assert.throws(
    () => Tensor.zeros([3, 40], { dtype: DType.Q8_0 }),
    /keep whole blocks of 32 along the last axis/,
  );
  assert.throws(() => quantize(Tensor.zeros([2, 31]), DType.Q8_0), /multiple of 32/);
  using deq = dequantize(q);
  const original = x.toArray() as Float32Array;
  const restored = deq.toArray() as Float32Array;
  for (let i = 0; i < original.length; i++) assert.ok(Math.abs(original[i] - restored[i]) < 0.07);
});

test("creators take an arena; its reset makes them stale", () => {
  using arena = new Arena();
  const a = Tensor.ones([100], { dtype: DType.F32, arena });
  const b = Tensor.arange(10, { dtype: DType.I32, arena });
  assert.equal(a.get(99), 1);
  arena.reset();
  assert.equal(a.isReleased && b.isReleased, true);
  assert.throws(() => b.get(0), StaleTensorError);
});

test("operators name the operation, the shapes and the rule when they refuse input", () => {
  using a = Tensor.zeros([2, 3]);
  using b = Tensor.zeros([4]);
  using i = Tensor.zeros([3], { dtype: DType.I32 });
  assert.throws(
    () => ops.add(a, b),
    (e: Error) =>
      e instanceof TensorShapeError && /^add: cannot broadcast shapes \[2, 3\] and \[4\]/.test(e.message),
  );
  assert.throws(
    () => ops.mul(a, i),
    (e: Error) =>
      e instanceof DTypeError && /^mul: mul takes operands of one dtype, got F32 and I32/.test(e.message),
  );
  assert.throws(
    () => ops.pow(i, 2),
    (e: Error) => e instanceof DTypeError && /^pow: pow takes F32 tensors, got an I32 tensor/.test(e.message),
  );
  assert.throws(
    () => ops.matmul(a, a),
    /matmul: cannot multiply \[2, 3\] by \[2, 3\]: the inner dimensions are 3 and 2/,
  );
  assert.throws(() => ops.sum(a, 2), /axis 2 is out of range for rank 2/);
  assert.throws(() => ops.max(Tensor.zeros([0])), /has no identity/);
  assert.throws(
    () => ops.maxPool2d(Tensor.zeros([1, 1, 4, 4]), { kernel: 2, padding: 2 }),
    /padding 2 must be smaller than the kernel 2/,
  );
  assert.throws(() => ops.softmax(Tensor.scalar(1)), /at least one axis/);
  assert.throws(() => Tensor.zeros([2 ** 16, 2 ** 16]), /more than 2\^31 - 1 elements/);
  assert.throws(
    () => Tensor.zeros([2 ** 29], { dtype: DType.F64 }),
    /needs 4294967296 bytes, more than a buffer's 2\^31 - 1/,
  );
});

test("the reference kernel set runs every op end to end with the native set's exact bits", () => {
  const run = (kernels?: typeof referenceKernels) =>
    TensorCompute.run({ mode: "exact", threads: 2, ...(kernels ? { kernels } : {}) }, () => {
      using _ = new ActivationScope();
      const x = Tensor.randn([3, 4, 8, 8], { seed: 5 });
      const w = Tensor.randn([8, 16], { seed: 6 }).withRequiresGrad();
      const pooled = ops.maxPool2d(x.toLayout(Layout.Nhwc), { kernel: 2 });
      const h = ops.gelu(ops.matmul(pooled.reshape([12, 16]), w.T));
      const y = ops.softmax(ops.add(h.cast(DType.F16).cast(DType.F32), ops.mean(h, 0)), -1);
      const loss = ops.sum(ops.mul(ops.log(ops.add(y, 1)), ops.sqrt(ops.exp(ops.tanh(y)))));
      loss.backward();
      const out = [...(loss.toArray() as Float32Array), ...(w.grad!.toArray() as Float32Array)];
      x.dispose();
      w.dispose();
      return out;
    });
  const native = run();
  const reference = run(referenceKernels);
  assert.equal(native.length, 1 + 128);
  // Transcendentals are within 1 ulp of the reference by design; here every value agrees bit for bit or to 1e-6.
  native.forEach((v, i) =>
    assert.ok(
      v === reference[i] || Math.abs(v - reference[i]) <= 1e-6 * Math.abs(v),
      `${i}: ${v} vs ${reference[i]}`,
    )
  );
});

test("compute settings of two interleaved async jobs stay their own", async () => {
  const seen: string[] = [];
  const job = (mode: "fast" | "exact", threads: number) =>
    TensorCompute.run({ mode, threads }, async () => {
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 1));
        seen.push(`${mode}/${threads}=${TensorCompute.mode}/${TensorCompute.threads}`);
      }
    });
  const defaults = `${TensorCompute.mode}/${TensorCompute.threads}`;
  await Promise.all([job("exact", 1), job("fast", 3)]);
  assert.equal(seen.length, 6);
  for (const entry of seen) {
    const [want, got] = entry.split("=");
    assert.equal(got, want);
  }
  assert.equal(`${TensorCompute.mode}/${TensorCompute.threads}`, defaults);
  assert.throws(() => TensorCompute.run({ threads: 0 }, () => 0), /threads must be an integer in 1 to 256/);
  assert.equal(GradMode.noGrad(() => 42), 42);
});

test("copyFrom a view of the same storage copies as if through a temporary", () => {
  using t = Tensor.arange(6);
  t.copyFrom(t.flip(0));
  assert.deepEqual([...t.toArray()], [5, 4, 3, 2, 1, 0]);
  using m = Tensor.arange(9).reshape([3, 3]);
  m.copyFrom(m.T);
  assert.deepEqual([...m.toArray()], [0, 3, 6, 1, 4, 7, 2, 5, 8]);
});

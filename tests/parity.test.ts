// PyTorch parity where zigtensor used to be silently wrong (issue 12): arange and dtypes by option, the dot
// product of two vectors, F16/BF16 toNested, gelu at ±∞; and what people look at: printing, toJSON, assertClose
// and the methods.
import assert from "node:assert/strict";
import { test } from "node:test";
import { inspect } from "node:util";
import {
  ActivationScope,
  assertClose,
  DType,
  DTypeError,
  ops,
  referenceKernels,
  Tensor,
  TensorCompute,
  TensorShapeError,
} from "../mod.ts";

test("arange takes PyTorch's (end), (start, end) and (start, end, step); a number is never a dtype", () => {
  using _ = new ActivationScope();
  const cases: [Tensor, number[]][] = [
    [Tensor.arange(4), [0, 1, 2, 3]],
    [Tensor.arange(2, 10), [2, 3, 4, 5, 6, 7, 8, 9]],
    [Tensor.arange(1, 0, -0.25), [1, 0.75, 0.5, 0.25]],
    [Tensor.arange(-3, 3, 2), [-3, -1, 1]],
    [Tensor.arange(0, 1, 0.3), [0, 0.3, 0.6, 0.9].map(Math.fround)],
    [Tensor.arange(5, 5), []],
  ];
  for (const [t, want] of cases) {
    assert.equal(t.dtype, DType.F32);
    assert.deepEqual([...t.toArray()], want);
  }
  // PyTorch's count ⌈(end − start)/step⌉: 0.1·10 rounds to 1 exactly, so [0, 1) by 0.1 has 10 elements.
  assert.equal(Tensor.arange(0, 1, 0.1).size, 10);
  const ints = Tensor.arange(2, 10, 3, { dtype: "int64" });
  assert.deepEqual([ints.dtype, ...ints.toArray()], [DType.I64, 2n, 5n, 8n]);
  assert.deepEqual([...Tensor.arange(3, { dtype: DType.I32 }).toArray()], [0, 1, 2]);
  assert.deepEqual([...Tensor.arange(1, 3, { dtype: "float64" }).toArray()], [1, 2]);
  assert.throws(() => Tensor.arange(0, 1, 0), /step must not be 0/);
  assert.throws(() => Tensor.arange(0, 3, -1), /step -1 moves away from end 3/);
  assert.throws(() => Tensor.arange(0, Infinity), /end must be a finite number/);
  assert.throws(() => Tensor.arange(NaN), /end must be a finite number/);
  const misplaced = Tensor.arange as unknown as (...args: unknown[]) => Tensor;
  assert.throws(() => misplaced(3, { dtype: "int32" }, 2), TypeError);
});

test("every creator takes its dtype as { dtype }: a DType value or a PyTorch/NumPy/zigtensor name", () => {
  using _ = new ActivationScope();
  const names: [string, DType][] = [
    ["float32", DType.F32],
    ["float", DType.F32],
    ["float64", DType.F64],
    ["double", DType.F64],
    ["float16", DType.F16],
    ["half", DType.F16],
    ["bfloat16", DType.BF16],
    ["int8", DType.I8],
    ["uint8", DType.U8],
    ["int16", DType.I16],
    ["short", DType.I16],
    ["uint16", DType.U16],
    ["int32", DType.I32],
    ["int", DType.I32],
    ["uint32", DType.U32],
    ["int64", DType.I64],
    ["long", DType.I64],
    ["uint64", DType.U64],
    ["bool", DType.Bool],
    ["F16", DType.F16],
    ["I64", DType.I64],
  ];
  for (const [name, dtype] of names) {
    const options = { dtype: name as never };
    const made = [
      Tensor.zeros([2], options),
      Tensor.ones([2], options),
      Tensor.empty([2], options),
      Tensor.full([2], 1, options),
      Tensor.scalar(1, options),
      Tensor.from([1, 0], options),
      Tensor.from([1, 0], [2, 1], options),
      Tensor.arange(2, options),
      Tensor.from([1, 2]).cast(name as never),
    ];
    for (const t of made) assert.equal(t.dtype, dtype, `${name}`);
  }
  assert.deepEqual(Tensor.ones([2], { dtype: DType.F16 }).toNested(), [1, 1]);
  assert.equal(Tensor.full([1], 7n, { dtype: "int64" }).item(), 7n);
  assert.equal(Tensor.scalar(2.5).dtype, DType.F32);
  assert.equal(Tensor.scalar(2n).dtype, DType.I64);
  assert.throws(() => Tensor.zeros([2], { dtype: "float8" as never }), (e: unknown) => {
    return e instanceof DTypeError && /"float8" is not a dtype name; use one of .*"float32"/.test(e.message);
  });
  assert.throws(() => Tensor.zeros([2], { dtype: 99 as never }), DTypeError);
  // The old positional form is refused, not read as "no options" (which would be F32).
  const positional = /options object such as \{ dtype: DType\.I32 \}, got 6; a dtype is never a positional/;
  assert.throws(() => Tensor.zeros([2], DType.I32 as never), positional);
  assert.throws(() => Tensor.full([2], 1, DType.I32 as never), positional);
  assert.throws(() => Tensor.from([1, 2], [2], DType.I32 as never), positional);
  assert.throws(() => Tensor.scalar(1, DType.I32 as never), positional);
  assert.throws(() => Tensor.from([1]).cast("complex64" as never), DTypeError);
});

test("matmul of two vectors is their rank-0 dot product, 0 for empty vectors, with gradients", () => {
  using _ = new ActivationScope();
  const a = Tensor.from([1, 2, 3]).withRequiresGrad();
  const b = Tensor.from([4, -5, 6]).withRequiresGrad();
  const dot = ops.matmul(a, b);
  assert.deepEqual([dot.rank, dot.item()], [0, 12]);
  dot.backward();
  assert.deepEqual([...a.grad!.toArray()], [4, -5, 6]);
  assert.deepEqual([...b.grad!.toArray()], [1, 2, 3]);
  const empty = Tensor.zeros([0]).matmul(Tensor.zeros([0]));
  assert.deepEqual([empty.rank, empty.item()], [0, 0]);
  assert.throws(() => ops.matmul(Tensor.zeros([3]), Tensor.zeros([4])), TensorShapeError);
});

test("toNested reads F16 and BF16 as values, through any strides", () => {
  using _ = new ActivationScope();
  assert.deepEqual(Tensor.from([1.5, 2.25], { dtype: "float16" }).toNested(), [1.5, 2.25]);
  assert.deepEqual(Tensor.from([1.5, 2.25], { dtype: "bfloat16" }).toNested(), [1.5, 2.25]);
  const h = Tensor.from([[1, 2, 3], [4, 5, 6]], { dtype: DType.F16 });
  assert.deepEqual(h.T.toNested(), [[1, 4], [2, 5], [3, 6]]);
  assert.deepEqual(h.flip(1).select(0, 1).toNested(), [6, 5, 4]);
  assert.deepEqual(Tensor.from([1n, -2n], { dtype: "int64" }).toNested(), [1n, -2n]);
  assert.deepEqual(Tensor.scalar(true).toNested(), 1);
});

test("gelu(−∞) is −0, the limit, in both forms, every kernel and mode (PyTorch: NaN, from 0·∞ in its formula)", () => {
  const variants = [{ mode: "exact" as const }, { mode: "fast" as const }, { kernels: referenceKernels }];
  for (const settings of variants) {
    for (const approximate of ["none", "tanh"] as const) {
      TensorCompute.run(settings, () => {
        using _ = new ActivationScope();
        const y = ops.gelu(Tensor.from([-Infinity, -1e30, -20, Infinity, NaN]), { approximate }).toArray();
        assert.ok(
          Object.is(y[0], -0) && Object.is(y[1], -0) && Object.is(y[2], -0),
          `${approximate}: ${[...y]}`,
        );
        assert.equal(y[3], Infinity);
        assert.ok(Number.isNaN(y[4]));
      });
    }
  }
});

test("tensors print like PyTorch's repr, with dtype and shape, one column width, … beyond 1000 elements", () => {
  using _ = new ActivationScope();
  const expectations: [Tensor, string][] = [
    [
      Tensor.from([[1, -2.5], [3, 4]]),
      "Tensor([[ 1.0000, -2.5000],\n        [ 3.0000,  4.0000]], dtype=F32, shape=[2, 2])",
    ],
    [Tensor.from([1, 2, 30]), "Tensor([ 1.,  2., 30.], dtype=F32, shape=[3])"],
    [Tensor.from([1e-5, 1, NaN]), "Tensor([1.0000e-05, 1.0000e+00,        nan], dtype=F32, shape=[3])"],
    [Tensor.from([-Infinity, 0.5]), "Tensor([  -inf, 0.5000], dtype=F32, shape=[2])"],
    [Tensor.from([true, false]), "Tensor([ true, false], dtype=Bool, shape=[2])"],
    [Tensor.from([-1n, 100n]), "Tensor([ -1, 100], dtype=I64, shape=[2])"],
    [Tensor.scalar(2.5), "Tensor(2.5000, dtype=F32, shape=[])"],
    [Tensor.zeros([0, 3]), "Tensor([], dtype=F32, shape=[0, 3])"],
    [Tensor.from([1.5], { dtype: "bfloat16" }), "Tensor([1.5000], dtype=BF16, shape=[1])"],
    [
      Tensor.arange(8, { dtype: "int32" }).reshape([2, 2, 2]),
      "Tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]], dtype=I32, shape=[2, 2, 2])",
    ],
    [
      Tensor.arange(30),
      "Tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n" +
      "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n" +
      "        28., 29.], dtype=F32, shape=[30])",
    ],
    [
      Tensor.arange(2000, { dtype: "int32" }),
      "Tensor([   0,    1,    2,  …, 1997, 1998, 1999], dtype=I32, shape=[2000])",
    ],
  ];
  for (const [t, want] of expectations) assert.equal(t.toString(), want);
  // The layout of larger and summarised tensors is checked against PyTorch's repr in torch_oracle.test.ts.
  const x = Tensor.from([1, 2]).withRequiresGrad();
  assert.equal(String(x), "Tensor([1., 2.], dtype=F32, shape=[2], requiresGrad=true)");
  assert.equal(String(x.mul(x)), "Tensor([1., 4.], dtype=F32, shape=[2], gradFn=Mul)");
  const released = Tensor.zeros([2]);
  released.dispose();
  assert.equal(String(released), "Tensor(<released>, dtype=F32, shape=[2])");
});

test("console.log, Deno.inspect, Bun.inspect and node:util inspect show toString()", () => {
  using t = Tensor.from([[1, 2], [3, 4]]);
  assert.equal(inspect(t), t.toString());
  assert.match(inspect({ t }), /t: Tensor\(\[\[1\., 2\.\],/);
  const runtime = globalThis as {
    Deno?: { inspect(v: unknown): string };
    Bun?: { inspect(v: unknown): string };
  };
  if (runtime.Deno) assert.equal(runtime.Deno.inspect(t), t.toString());
  if (runtime.Bun) assert.equal(runtime.Bun.inspect(t), t.toString());
});

test("toJSON gives { dtype, shape, data } that Tensor.from reads back", () => {
  using _ = new ActivationScope();
  const t = Tensor.from([[1.5, -2], [NaN, Infinity]]);
  assert.equal(JSON.stringify(t), '{"dtype":"F32","shape":[2,2],"data":[1.5,-2,"NaN","Infinity"]}');
  const back = JSON.parse(JSON.stringify(Tensor.from([[1, 2], [3, 4]], { dtype: "int32" })));
  const copy = Tensor.from(back.data, back.shape, { dtype: back.dtype });
  assert.deepEqual([copy.dtype, copy.toNested()], [DType.I32, [[1, 2], [3, 4]]]);
  assert.deepEqual(Tensor.from([1n, 2n ** 60n]).toJSON().data, [1, "1152921504606846976"]);
  assert.deepEqual(Tensor.from([true, false]).toJSON(), { dtype: "Bool", shape: [2], data: [true, false] });
  assert.deepEqual(Tensor.from([0.5, 2], { dtype: "float16" }).T.toJSON().data, [0.5, 2]);
});

test("assertClose passes within rtol/atol and otherwise names the worst element", () => {
  using _ = new ActivationScope();
  const t = Tensor.from([[1, 2, 3], [4, 5, 6]]);
  assertClose(t, [[1, 2, 3], [4, 5, 6.000001]]);
  assertClose(t.reshape([6]), new Float32Array([1, 2, 3, 4, 5, 6]));
  assertClose(Tensor.scalar(1), 1.0001, { rtol: 1e-3 });
  assert.throws(
    () => assertClose(t, [[1, 2.5, 3], [4, 5, 9]], { atol: 0.1 }),
    (e: unknown) =>
      e instanceof Error && e.name === "AssertionError" &&
      e.message.startsWith(
        "assertClose: 2 of 6 elements are not close (rtol 0.0000013, atol 0.1); the worst at [1, 2]: " +
          "actual 6, expected 9, |difference| 3 > allowed 0.1000117",
      ),
  );
  assert.throws(() => assertClose(t, [1, 2, 3]), /shapes differ: actual \[2, 3\], expected \[3\]/);
  assert.throws(() => assertClose(Tensor.from([NaN]), [NaN]), /actual NaN, expected NaN/);
  assertClose(Tensor.from([NaN, Infinity]), [NaN, Infinity], { equalNan: true });
  assert.throws(() => assertClose(Tensor.from([1, 2], { dtype: "int32" }), [1, 3]), /rtol 0, atol 0/);
  assert.throws(() => assertClose([1], [1.01], { message: "loss" }), /loss: assertClose: 1 of 1 elements/);
  // F16 tolerances by default: 1e-3 relative.
  assertClose(Tensor.from([1000], { dtype: "float16" }), [1000.5]);
});

test("every op with a tensor first argument is also a Tensor method", () => {
  // Not methods: concat and stack take an array; copyInto and fillStrided are the methods copyFrom and fill.
  const notMethods = new Set(["concat", "stack", "copyInto", "fillStrided"]);
  const functions = Object.entries(ops).filter(([, v]) => typeof v === "function").map(([k]) => k);
  const proto = Tensor.prototype as unknown as Record<string, unknown>;
  const missing = functions.filter((name) => !notMethods.has(name) && typeof proto[name] !== "function");
  assert.deepEqual(missing, []);
  using _ = new ActivationScope();
  const x = Tensor.from([[1, 4, 2], [3, 0, 5]]);
  assertClose(x.pow(2), [[1, 16, 4], [9, 0, 25]]);
  assert.deepEqual(x.argmax(1).toNested(), [1n, 2n]);
  assert.deepEqual(x.min(0).toNested(), [1, 0, 2]);
  assert.deepEqual(x.gt(2).toNested(), [[0, 1, 0], [1, 0, 1]]);
  assert.deepEqual(x.linear(Tensor.from([[1, 1, 1]])).toNested(), [[7], [8]]);
});

test("T reverses every axis, mT transposes each matrix of a batch", () => {
  using _ = new ActivationScope();
  const x = Tensor.arange(24).reshape([2, 3, 4]);
  assert.deepEqual([...x.T.shape], [4, 3, 2]);
  assert.equal(x.T.get(3, 2, 1), x.get(1, 2, 3));
  assert.deepEqual([...x.mT.shape], [2, 4, 3]);
  assert.equal(x.mT.get(1, 3, 2), x.get(1, 2, 3));
  assert.deepEqual(x.mT.mT.toNested(), x.toNested());
  const v = Tensor.from([1, 2]);
  assert.deepEqual(v.T.toNested(), [1, 2]);
  assert.throws(() => v.mT, /mT needs a tensor of rank 2 or more/);
  assert.deepEqual(ops.matmul(x, x.mT).shape, [2, 3, 3]);
});

// Issue 10, holes 3 and 4 and the bad-input list: frozen, validated tensor metadata read once; integers the native side
// cannot represent refused in TypeScript (merely large ones computed); typed errors naming the rule for bad
// values, unknown option keys and seeds; ops that throw leave nothing rented; keepDims as a bare boolean.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ActivationScope,
  Arena,
  BufferPool,
  DType,
  nativeKernels,
  ops,
  OptionError,
  referenceKernels,
  StaleTensorError,
  Tensor,
  TensorCompute,
  TensorShapeError,
} from "../mod.ts";
import { UnaryOp } from "../src/kernels/types.ts";
import { lengthening, shifty } from "./helpers/hostile_arrays.ts";

function throwsTyped(fn: () => unknown, type: new (...args: never[]) => Error, message: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof type && message.test((e as Error).message), String(message));
}

test("tensor fields are read-only; shape and strides are frozen copies of what the ops read", () => {
  using t = Tensor.from([1, 2, 3, 4]);
  assert.throws(() => ((t as { offset: number }).offset = 1 << 28), TypeError);
  assert.throws(() => ((t as unknown as { shape: number[] }).shape = [20]), TypeError);
  assert.throws(() => ((t as { dtype: number }).dtype = DType.F64), TypeError);
  assert.throws(() => ((t.storage as { byteLength: number }).byteLength = 1 << 30), TypeError);
  // Frozen: a write, an accessor on an element, a longer length all throw; the same array at every read.
  assert.ok(Object.isFrozen(t.shape) && Object.isFrozen(t.strides) && t.shape === t.shape);
  assert.throws(() => ((t.shape as number[])[0] = 20), TypeError);
  assert.throws(() => ((t.strides as number[])[0] = 1 << 20), TypeError);
  assert.throws(() => ((t.shape as number[]).length = 2), TypeError);
  assert.throws(() => Object.defineProperty(t.strides, 0, { get: () => 1 << 26 }), TypeError);
  using sum = t.add(0);
  assert.deepEqual([...sum.toArray()], [1, 2, 3, 4]);
  const parts = { storage: t.storage, dtype: DType.F32, shape: [4], strides: [1], offset: 0 };
  throwsTyped(
    () => new Tensor({ ...parts, shape: [1 << 20] }),
    TensorShapeError,
    /reaches elements 0 to 1048575; its storage holds 4/,
  );
  throwsTyped(() => new Tensor({ ...parts, offset: 1 << 28 }), TensorShapeError, /storage holds 4/);
  throwsTyped(() => new Tensor({ ...parts, strides: [-1] }), TensorShapeError, /reaches elements -3 to 0/);
  throwsTyped(() => new Tensor({ ...parts, strides: [1.5] }), TensorShapeError, /stride 1.5/);
  throwsTyped(() => new Tensor({ ...parts, offset: -1 }), TensorShapeError, /offset -1/);
  throwsTyped(() => new Tensor({ ...parts, shape: [2, 2] }), TensorShapeError, /one integer per axis/);
  throwsTyped(
    () => new Tensor({ ...parts, shape: [2 ** 20, 2 ** 20], strides: [0, 0] }),
    TensorShapeError,
    /2\^31 - 1/,
  );
  assert.throws(() => new Tensor({ ...parts, storage: {} as never }), OptionError);
  assert.throws(
    () => new Tensor({ ...parts, storage: Object.create(t.storage.constructor.prototype) }),
    OptionError,
  );
  // The graph fields are the ops' and withRequiresGrad's.
  using w = Tensor.from([1, 2]).withRequiresGrad();
  throwsTyped(() => new Tensor({ ...parts, leaf: w.leaf } as never), OptionError, /gradFn and leaf/);
});

test("arrays that read differently at each access are read once: what was checked is what the kernel gets", () => {
  using t = Tensor.from([1, 2, 3, 4]);
  const parts = { storage: t.storage, dtype: DType.F32, offset: 0 };
  // The check sees the first read; a later read (another value, past the storage) never reaches a kernel.
  using view = new Tensor({ ...parts, shape: [4], strides: shifty([0], 0, 1, 1 << 26) });
  assert.deepEqual([...view.add(1).toArray()], [2, 3, 4, 5]);
  using narrow = new Tensor({ ...parts, shape: shifty([0], 0, 4, 1 << 20), strides: [1] });
  assert.deepEqual(narrow.shape, [4]);
  using zeros = Tensor.zeros(shifty([0, 2], 0, 3, 1 << 20));
  assert.deepEqual(zeros.shape, [3, 2]);
  assert.equal(zeros.add(1).sum().item(), 6);
  using reshaped = t.reshape(shifty([0, 2], 0, 2, 1 << 20));
  assert.deepEqual(reshaped.shape, [2, 2]);
  // A proxy that lies about its length is read once, too.
  using proxied = new Tensor({ ...parts, shape: lengthening([4], 7), strides: [1] });
  assert.deepEqual(proxied.shape, [4]);
});

test("no subclass, own property or prototype change can alter what the ops read behind the bounds check", () => {
  using t = Tensor.from(new Float32Array(16));
  const parts = { storage: t.storage, dtype: DType.F32, shape: [16], strides: [1], offset: 0 };
  class Wide extends Tensor {
    override get shape(): readonly number[] {
      return [4096];
    }
  }
  throwsTyped(() => new Wide(parts), OptionError, /cannot be subclassed/);
  // Own properties and another prototype change what code outside reads; the ops read the private fields.
  using u = Tensor.from(new Float32Array(16).fill(2));
  Object.defineProperty(u, "shape", { get: () => [4096] });
  Object.defineProperty(u, "strides", { value: [1 << 26] });
  Object.defineProperty(u, "offset", { value: 1 << 28 });
  Object.defineProperty(u, "dtype", { value: DType.F64 });
  Object.defineProperty(u, "isContiguous", { value: true });
  Object.setPrototypeOf(u, Object.create(Tensor.prototype));
  using doubled = ops.add(u, u);
  assert.deepEqual([doubled.shape, [...doubled.toArray()].every((v) => v === 4)], [[16], true]);
  Object.setPrototypeOf(u, null);
  assert.equal(ops.sum(u).item(), 32);
  // A fake made from the prototype is not a tensor: a typed error, not an engine one.
  throwsTyped(() => ops.add(Object.create(Tensor.prototype), 1), OptionError, /Tensor/);
  // The classes and prototypes the ops call into are frozen.
  for (const name of ["offset", "strides", "storage", "dtype", "operand"]) {
    assert.throws(
      () => Object.defineProperty(Tensor.prototype, name, { get: () => 1 << 28 }),
      TypeError,
      name,
    );
  }
  const storage = t.storage.constructor as { prototype: object };
  assert.throws(() => Object.defineProperty(storage.prototype, "pointer", { value: () => null }), TypeError);
  assert.throws(() => ((Tensor as { zeros: unknown }).zeros = () => t), TypeError);
  // An own property on a storage does not reach native code: the ops read its private fields.
  Object.defineProperty(t.storage, "pointer", { value: () => Tensor.from([1]).storage.pointer("x") });
  Object.defineProperty(t.storage, "byteLength", { value: 1 << 30 });
  Object.defineProperty(t.storage, "isReleased", { value: false });
  using sum = t.add(t);
  assert.deepEqual(sum.shape, [16]);
  assert.equal(sum.sum().item(), 0);
  const big = { ...parts, shape: [1 << 20] };
  throwsTyped(() => new Tensor(big), TensorShapeError, /storage holds 16/);
});

test("a gradient is checked like any handle; a leaf takes only a gradient of its own shape; records are read-only", () => {
  using w = Tensor.from([1, 2, 3]).withRequiresGrad();
  {
    using _ = new ActivationScope();
    ops.sum(ops.mul(w, w)).backward();
  }
  assert.deepEqual([...w.grad!.toArray()], [2, 4, 6]);
  assert.throws(() => ((w.grad!.strides as number[])[0] = 16), TypeError);
  throwsTyped(() => (w.grad = Tensor.zeros([5])), TensorShapeError, /leaf's dtype and shape \[3\]/);
  assert.throws(() => ((w.leaf as { grad: unknown }).grad = Tensor.zeros([5])), TypeError);
  assert.throws(() => ((w.leaf!.shape as number[])[0] = 5), TypeError);
  assert.deepEqual([...w.grad!.toArray()], [2, 4, 6]);
  // A record handed out is frozen, with the records it reaches: no shape or attribute can be changed.
  using _ = new ActivationScope();
  const y = ops.sum(ops.permute(ops.mul(w.reshape([3, 1]), 2), [1, 0]));
  const record = y.gradFn!;
  assert.ok(Object.isFrozen(record) && Object.isFrozen(record.inputs[0]));
  assert.throws(() => ((record.inputs[0].shape as number[])[0] = 100), TypeError);
  const permute = record.inputs[0].node as typeof record;
  assert.equal(permute.op, "Permute");
  assert.throws(() => ((permute.attrs as { dims: number[] }).dims[0] = 5), TypeError);
  assert.throws(() => ((permute as { inputs: unknown }).inputs = []), TypeError);
  y.backward();
  assert.deepEqual([...w.grad!.toArray()], [4, 6, 8]);
});

test("the native kernels are reachable only through the ops, which check their operands", () => {
  using t = Tensor.from([1, 2, 3, 4]);
  const operand = {
    pointer: t.storage.pointer("x"),
    data: new Float32Array(4),
    offset: 1 << 28,
    strides: [1],
  };
  const settings = { mode: "fast" as const, threads: 1 };
  throwsTyped(
    () => nativeKernels.unary(UnaryOp.Neg, [1 << 20], operand, operand, settings),
    OptionError,
    /nativeKernels.unary: a native kernel runs only inside the ops/,
  );
  // The set (or its functions in a set of one's own) still selects them.
  let seen: unknown = null;
  const mine = {
    ...referenceKernels,
    binary: nativeKernels.binary,
    unary: (...args: Parameters<typeof referenceKernels.unary>) => {
      seen = (args[4] as { kernels?: unknown }).kernels;
      referenceKernels.unary(...args);
    },
  };
  using sum = TensorCompute.run({ kernels: mine }, () => ops.neg(ops.add(t, t)));
  assert.deepEqual([...sum.toArray()], [-2, -4, -6, -8]);
  // What a kernel (or a record) is handed names the set as given, never the native functions behind it.
  assert.equal(seen, mine);
  using w = Tensor.from([1]).withRequiresGrad();
  using y = TensorCompute.run({ kernels: nativeKernels }, () => ops.mul(w, w));
  assert.equal(y.gradFn!.settings.kernels, nativeKernels);
  y.backward();
  assert.equal(w.grad!.item(), 2);
});

test("integers beyond 32 bits are refused in TypeScript, naming the parameter and its limit", () => {
  using x = Tensor.rand([1, 1, 4, 4], { seed: 3 });
  throwsTyped(
    () => ops.maxPool2d(x, { kernel: 2 ** 31 + 2, padding: 2 ** 31, stride: 2 ** 32 }),
    TensorShapeError,
    /kernel must be from 1 to 2\^31 − 1/,
  );
  throwsTyped(
    () => ops.maxPool2d(x, { kernel: 2 ** 31 - 1, padding: 2 ** 31 - 2, stride: 2 ** 32 }),
    TensorShapeError,
    /a padded extent must be at most 2\^31 − 1/,
  );
  throwsTyped(() => ops.avgPool2d(x, { kernel: 2, padding: 2 ** 53 }), TensorShapeError, /padding must be/);
  throwsTyped(
    () => ops.conv2d(x, Tensor.ones([1, 1, 1, 1]), { dilation: 2 ** 32 }),
    TensorShapeError,
    /dilation/,
  );
  throwsTyped(() => Tensor.zeros([2 ** 31]), TensorShapeError, /2\^31 - 1/);
  throwsTyped(() => x.get(0, 0, 0, 2 ** 32), TensorShapeError, /out of range/);
});

test("merely large strides and steps are computed as PyTorch does: one element", () => {
  using t = Tensor.from([5, 6, 7, 8]);
  using s = t.slice(0, 0, 4, 2 ** 31);
  assert.deepEqual([...s.shape], [1]);
  assert.equal(s.get(0), 5);
  using s2 = t.slice(0, 1, 4, 2 ** 40);
  assert.deepEqual([...s2.contiguous().toArray()], [6]);
  using x = Tensor.from([1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 1, 3, 3]);
  using w = Tensor.from([[[[1, 1], [1, 1]]]]);
  using y = ops.conv2d(x, w, { stride: 2 ** 31 });
  assert.deepEqual([...y.shape], [1, 1, 1, 1]);
  assert.equal(y.item(), 1 + 2 + 4 + 5);
  using p = ops.maxPool2d(x, { kernel: 2, stride: 2 ** 32 });
  assert.equal(p.item(), 5);
  using a = ops.avgPool2d(x, { kernel: 2, stride: [2 ** 31, 2 ** 53 - 1] });
  assert.equal(a.item(), 3);
});

test("set, fill and full take the values from() takes: numbers, bigints, booleans", () => {
  using t = Tensor.zeros([2]);
  for (const bad of ["abc", {}, undefined, [5], "1", null]) {
    throwsTyped(() => t.set(bad as never, 0), OptionError, /values must be numbers, bigints or booleans/);
    throwsTyped(() => t.fill(bad as never), OptionError, /values must be numbers, bigints or booleans/);
    throwsTyped(
      () => Tensor.full([2], bad as never),
      OptionError,
      /values must be numbers, bigints or booleans/,
    );
    if (!Array.isArray(bad)) {
      throwsTyped(
        () => Tensor.from([bad] as never),
        OptionError,
        /values must be numbers, bigints or booleans/,
      );
    }
  }
  assert.deepEqual([...t.toArray()], [0, 0]);
  t.set(true, 1);
  assert.equal(t.get(1), 1);
});

test("bad arguments get typed errors naming the rule", () => {
  using _ = new ActivationScope();
  const x = Tensor.rand([1, 2, 4, 4], { seed: 1 });
  const w = Tensor.rand([3, 2, 3, 3], { seed: 2 });
  throwsTyped(() => x.permute(1 as never), TensorShapeError, /permutation 1 must be an array of 4 axes/);
  throwsTyped(() => x.sum(null as never), OptionError, /axis must be an integer or an array of integers/);
  throwsTyped(
    () => ops.conv2d(x, w, { stride: {} as never }),
    OptionError,
    /stride must be an integer ≥ 1 or a pair/,
  );
  throwsTyped(() => ops.conv2d(x, w, null as never), OptionError, /options must be an object/);
  throwsTyped(() => ops.maxPool2d(x, undefined as never), OptionError, /kernel must be an integer ≥ 1/);
  throwsTyped(() => x.copyFrom([1, 2, 3] as never), OptionError, /the source must be a Tensor/);
  throwsTyped(() => x.toLayout({ kind: "bogus" } as never), OptionError, /layout must be Layout.Nchw/);
  throwsTyped(
    () => ops.conv2d(Tensor.zeros([1, 0, 4, 4]), Tensor.zeros([2, 0, 3, 3])),
    TensorShapeError,
    /no input channels/,
  );
  throwsTyped(() => x.reshape(6 as never), OptionError, /shape must be an array/);
  throwsTyped(() => ops.layerNorm(x, "4" as never), OptionError, /normalizedShape/);
});

test("unknown option keys are refused everywhere, naming the key, the accepted ones and zigtensor's spelling", () => {
  using _ = new ActivationScope();
  const x = Tensor.rand([1, 1, 4, 4], { seed: 1 });
  throwsTyped(
    () => x.sum(0, { keepdim: true } as never),
    OptionError,
    /unknown option keepdim; zigtensor spells it keepDims \(accepted: keepDims\)/,
  );
  throwsTyped(
    () => ops.mean(x, undefined, { dim: 1 } as never),
    OptionError,
    /unknown option dim; the axis is the argument/,
  );
  throwsTyped(
    () => ops.maxPool2d(x, { kernel_size: 2 } as never),
    OptionError,
    /kernel_size; zigtensor spells it kernel/,
  );
  throwsTyped(
    () => ops.conv2d(x, Tensor.ones([1, 1, 1, 1]), { bogus: 1 } as never),
    OptionError,
    /accepted: bias, stride, padding, dilation, groups/,
  );
  throwsTyped(
    () => ops.avgPool2d(x, { kernel: 2, count_include_pad: false } as never),
    OptionError,
    /count_include_pad; zigtensor spells it countIncludePad/,
  );
  throwsTyped(
    () => Tensor.zeros([2], { dtype: DType.F32, device: "cpu" } as never),
    OptionError,
    /device; zigtensor spells it arena/,
  );
  throwsTyped(
    () => Tensor.rand([2], { generator: 1 } as never),
    OptionError,
    /generator; zigtensor spells it seed/,
  );
  throwsTyped(
    () => Tensor.from([1], undefined, { arena: {} } as never),
    OptionError,
    /arena must be an Arena/,
  );
  throwsTyped(
    () =>
      ops.attention(
        Tensor.zeros([1, 2, 2]),
        Tensor.zeros([1, 2, 2]),
        Tensor.zeros([1, 2, 2]),
        { is_causal: true } as never,
      ),
    OptionError,
    /is_causal; zigtensor spells it causal/,
  );
  throwsTyped(
    () =>
      ops.embedding(
        Tensor.from([0], [1], { dtype: DType.I32 }),
        Tensor.zeros([2, 2]),
        { padding_idx: 0 } as never,
      ),
    OptionError,
    /padding_idx; zigtensor spells it paddingIdx/,
  );
  throwsTyped(
    () => ops.layerNorm(x, 4, { elementwise_affine: false } as never),
    OptionError,
    /elementwise_affine/,
  );
  throwsTyped(
    () => ops.batchNorm(x, null, null, { training: true, track_running_stats: 1 } as never),
    OptionError,
    /track_running_stats/,
  );
  throwsTyped(
    () => new Arena({ chunk_bytes: 4096 } as never),
    OptionError,
    /chunk_bytes; zigtensor spells it chunkBytes \(accepted: chunkBytes\)/,
  );
  throwsTyped(() => TensorCompute.run({ mode: "exact", thread: 2 } as never, () => 0), OptionError, /thread/);
});

test("reductions take keepDims as an option or as a bare boolean (PyTorch's x.sum(1, true)), nothing else", () => {
  using x = Tensor.from([[1, 2, 3], [4, 5, 6]]);
  using kept = x.sum(1, true);
  assert.deepEqual([...kept.shape], [2, 1]);
  assert.deepEqual([...kept.toArray()], [6, 15]);
  using dropped = x.sum(1, false);
  assert.deepEqual([...dropped.shape], [2]);
  using mean = x.mean(0, true);
  assert.deepEqual([...mean.shape], [1, 3]);
  using max = ops.max(x, 1, true);
  assert.deepEqual([...max.toArray()], [3, 6]);
  throwsTyped(() => x.sum(1, "yes" as never), OptionError, /options must be an object/);
  throwsTyped(() => x.sum(1, { keepDims: 1 } as never), OptionError, /keepDims must be a boolean/);
});

test("seeds: exactly the integers and bigints that name distinct streams", () => {
  const values = (seed: unknown) => [...Tensor.rand([4], { seed: seed as never }).toArray()].join();
  for (const bad of ["a", NaN, Infinity, 1.5, null, {}]) {
    throwsTyped(() => Tensor.rand([2], { seed: bad as never }), OptionError, /seed must be an integer/);
    throwsTyped(() => Tensor.randn([2], { seed: bad as never }), OptionError, /seed must be an integer/);
  }
  throwsTyped(
    () => Tensor.rand([2], { seed: 2 ** 53 }),
    TensorShapeError,
    /seed must be from 0 to 2\^53 − 1/,
  );
  throwsTyped(() => Tensor.rand([2], { seed: -1 }), TensorShapeError, /seed must be from 0/);
  throwsTyped(() => Tensor.rand([2], { seed: 2n ** 64n }), TensorShapeError, /2\^64 − 1/);
  assert.equal(values(1), values(1n));
  assert.equal(values(2 ** 32 + 5), values(2n ** 32n + 5n));
  assert.equal(values(2 ** 53 - 1), values(2n ** 53n - 1n));
  const distinct = [0, 1, 2, 2 ** 31, 2 ** 32, 2 ** 32 + 1, 2 ** 53 - 1, 2n ** 63n, 2n ** 64n - 1n].map(
    values,
  );
  assert.equal(new Set(distinct).size, distinct.length);
});

test("an op that throws outside any scope leaves nothing rented", () => {
  const pool = BufferPool.default;
  const stale = Tensor.rand([2, 2], { seed: 1 });
  stale.dispose();
  using live = Tensor.rand([2, 2], { seed: 2 });
  const before = pool.stats().rentedBlocks;
  const attempts: [string, () => unknown][] = [
    ["add(stale, 1)", () => ops.add(stale, 1)],
    ["add(1, stale)", () => ops.add(1, stale)],
    ["add(live, stale)", () => ops.add(live, stale)],
    ["clone", () => stale.clone()],
    ["cast", () => stale.cast(DType.F64)],
    ["matmul", () => ops.matmul(live, stale)],
    ["softmax", () => ops.softmax(stale)],
    ["conv2d", () => ops.conv2d(stale.reshape([1, 1, 2, 2]), live.reshape([1, 1, 2, 2]))],
    ["concat", () => ops.concat([live, stale])],
  ];
  for (const [name, attempt] of attempts) {
    assert.throws(attempt, StaleTensorError, name);
    assert.equal(pool.stats().rentedBlocks, before, name);
  }
});

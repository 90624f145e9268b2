// The backward records of spec 000 §8, row by row: op kind, per-input nodes, shapes and dtypes, positional saved
// slots (sharing storage, version-checked), ints; plus the engine's behaviour and the guide's examples.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ActivationScope,
  BufferPool,
  DType,
  GradMode,
  Layout,
  ops,
  referenceKernels,
  Tensor,
  TensorCompute,
  TensorVersionError,
} from "../mod.ts";
import type { BackwardRecord } from "../src/autograd/record.ts";

/** The record's saved slots as the storage each shares, or null for an empty slot. */
function slots(record: BackwardRecord) {
  return record.saved.map((s) => (s === null ? null : s.unpack(record.op).storage));
}

function leaf(values: number[], shape: number[]): Tensor {
  return Tensor.from(values, shape).withRequiresGrad();
}

test("Add and Sub save nothing; an input that needs no gradient has a null node", () => {
  using _ = new ActivationScope();
  const a = leaf([1, 2, 3], [3]);
  const b = Tensor.from([4, 5, 6]);
  for (const [name, out] of [["Add", ops.add(a, b)], ["Sub", ops.sub(a, b)]] as const) {
    const r = out.gradFn!;
    assert.equal(r.op, name);
    assert.deepEqual(r.saved, []);
    assert.equal(r.inputs[0].node, a.leaf);
    assert.equal(r.inputs[1].node, null);
    assert.deepEqual(r.inputs.map((i) => [...i.shape]), [[3], [3]]);
    assert.deepEqual(r.inputs.map((i) => i.dtype), [DType.F32, DType.F32]);
  }
});

test("Mul saves a only when b needs a gradient and b only when a does; Div always saves b", () => {
  using _ = new ActivationScope();
  const a = leaf([1, 2], [2]);
  const b = Tensor.from([3, 4]);
  assert.deepEqual(slots(ops.mul(a, b).gradFn!), [null, b.storage]);
  assert.deepEqual(slots(ops.mul(b, a).gradFn!), [b.storage, null]);
  const c = leaf([5, 6], [2]);
  assert.deepEqual(slots(ops.mul(a, c).gradFn!), [a.storage, c.storage]);
  assert.deepEqual(slots(ops.div(a, b).gradFn!), [null, b.storage]);
  assert.deepEqual(slots(ops.div(b, a).gradFn!), [b.storage, a.storage]);
});

test("Neg saves nothing; Relu saves its output", () => {
  using _ = new ActivationScope();
  const a = leaf([-1, 2], [2]);
  assert.deepEqual(ops.neg(a).gradFn!.saved, []);
  const r = ops.relu(a);
  assert.equal(r.gradFn!.op, "Relu");
  assert.deepEqual(slots(r.gradFn!), [r.storage]);
});

test("the ReLU gradient is g where the output is not ≤ 0 and +0 elsewhere (PyTorch's threshold_backward), one kernel call", () => {
  for (const mode of ["exact", "fast"] as const) {
    TensorCompute.run({ mode }, () => {
      using _ = new ActivationScope();
      // -0 and 0 give output +0 (no gradient); NaN gives NaN, which passes the gradient as in PyTorch.
      const x = leaf([-2, -0, 0, 1e-40, 3, NaN, 5], [7]);
      ops.sum(ops.mul(ops.relu(x), Tensor.from([-1, -2, -3, -4, 5, 6, Infinity]))).backward();
      const grad = [...x.grad!.toArray()];
      assert.ok(Object.is(grad[0], 0) && Object.is(grad[1], 0) && Object.is(grad[2], 0), grad.join());
      assert.deepEqual(grad.slice(3), [-4, 5, 6, Infinity]);
    });
  }
});

test("the tanh-form GELU gradient (one GeluBackward kernel, f64) is its limit where x² overflows f32, NaN at ±∞ and NaN", () => {
  for (const mode of ["exact", "fast"] as const) {
    TensorCompute.run({ mode }, () => {
      using _ = new ActivationScope();
      const x = leaf([-Infinity, -1e20, 0, 1, 1e20, Infinity, NaN], [7]);
      ops.sum(ops.gelu(x, { approximate: "tanh" })).backward();
      const grad = [...(x.grad!.toArray() as Float32Array)];
      // d gelu(1) = 0.5·(1 + t) + 0.5·(1 − t²)·c·(1 + 3a), t = tanh(c·1.044715) (t as the kernel computes it: within an ulp).
      const t = Math.tanh(Math.sqrt(2 / Math.PI) * (1 + 0.044715));
      const one = (t + 1) * 0.5 + (0.5 * (1 - t * t)) * ((3 * 0.044715 + 1) * Math.sqrt(2 / Math.PI));
      assert.deepEqual([grad[1], grad[2], grad[4]], [0, 0.5, 1], grad.join());
      assert.ok(Math.abs(grad[3] - one) < 1e-6, `${grad[3]} vs ${one}`);
      assert.ok(Number.isNaN(grad[0]) && Number.isNaN(grad[5]) && Number.isNaN(grad[6]));
    });
  }
});

test("MatMul saves a for b's gradient and b for a's", () => {
  using _ = new ActivationScope();
  const a = leaf([1, 2, 3, 4], [2, 2]);
  const b = Tensor.from([1, 0, 0, 1], [2, 2]);
  const out = ops.matmul(a, b);
  assert.equal(out.gradFn!.op, "MatMul");
  assert.deepEqual(slots(out.gradFn!), [null, b.storage]);
  const both = ops.matmul(a, leaf([1, 1, 1, 1], [2, 2]));
  assert.equal(slots(both.gradFn!)[0], a.storage);
});

test("MaxPool2d saves Int32 winner indices as an owned slot, with kernel, stride, padding and dilation as attributes", () => {
  using _ = new ActivationScope();
  const x = Tensor.from([1, 5, 2, 4, 3, 0, 9, 8, 7, 6, 1, 2, 3, 4, 5, 6], [1, 1, 4, 4]).withRequiresGrad();
  const y = ops.maxPool2d(x, { kernel: [2, 2], stride: [2, 2], padding: [0, 0] });
  const r = y.gradFn!;
  assert.equal(r.op, "MaxPool2d");
  assert.deepEqual(r.attrs, { kernel: [2, 2], stride: [2, 2], padding: [0, 0], dilation: [1, 1] });
  const indices = r.saved[0]!.unpack("MaxPool2d");
  assert.equal(indices.dtype, DType.I32);
  assert.deepEqual([...indices.toArray()], [1, 6, 8, 15]);
  assert.equal(r.owned[0].storage, indices.storage);
});

test("Cast, Permute, Slice, Flip, Select, Expand and the Reshape family keep their attributes and no slots", () => {
  using _ = new ActivationScope();
  const x = leaf([1, 2, 3, 4, 5, 6], [2, 3]);
  const rows: [Tensor, string, object][] = [
    [ops.cast(x, DType.F64), "Cast", {}],
    [ops.permute(x, [1, 0]), "Permute", { dims: [1, 0] }],
    [x.T, "Permute", { dims: [1, 0] }],
    [ops.slice(x, 1, 0, 3, 2), "Slice", { axis: 1, start: 0, end: 3, step: 2 }],
    [ops.slice(x, -1, -2, 3), "Slice", { axis: 1, start: 1, end: 3, step: 1 }],
    [ops.flip(x, -1), "Flip", { axis: 1 }],
    [ops.select(x, 0, -1), "Select", { axis: 0, index: 1 }],
    [ops.expand(x, [4, 2, 3]), "Expand", {}],
    [ops.unsqueeze(x, 0), "Reshape", {}],
    [ops.squeeze(ops.unsqueeze(x, 2)), "Reshape", {}],
    [ops.reshape(x, [3, 2]), "Reshape", {}],
    [ops.reshape(x.T, [6]), "Reshape", {}],
    [ops.contiguous(x.T), "Reshape", {}],
  ];
  for (const [out, op, attrs] of rows) {
    assert.equal(out.gradFn!.op, op);
    assert.deepEqual(out.gradFn!.attrs, attrs, op);
    assert.ok(out.gradFn!.saved.every((s) => s === null));
  }
  using image = Tensor.zeros([1, 2, 2, 2]).withRequiresGrad();
  assert.equal(image.toLayout(Layout.Nhwc).gradFn!.op, "Reshape");
});

test("nothing records without an input that requires gradients, or with gradients off", () => {
  using _ = new ActivationScope();
  const a = Tensor.from([1, 2]);
  assert.equal(ops.mul(a, a).gradFn, null);
  const b = leaf([1, 2], [2]);
  assert.equal(GradMode.noGrad(() => ops.mul(b, b)).gradFn, null);
  {
    using _off = GradMode.disable();
    assert.equal(ops.relu(b).gradFn, null);
  }
  assert.notEqual(ops.relu(b).gradFn, null);
});

test("maxPool2d computes no winner indices when it does not record (pool stats prove it)", () => {
  using x = Tensor.rand([2, 3, 8, 8], { seed: 3 });
  const rentedAfter = (fn: () => Tensor) => {
    using _ = new ActivationScope();
    const before = BufferPool.default.stats().rentedBlocks;
    fn();
    return BufferPool.default.stats().rentedBlocks - before;
  };
  const plain = rentedAfter(() => ops.maxPool2d(x, { kernel: 2 }));
  using g = x.withRequiresGrad();
  const recorded = rentedAfter(() => ops.maxPool2d(g, { kernel: 2 }));
  const noGrad = rentedAfter(() => GradMode.noGrad(() => ops.maxPool2d(g, { kernel: 2 })));
  assert.equal(plain, 1);
  assert.equal(noGrad, 1);
  assert.equal(recorded, 2);
});

test("the guide's example: Sum(w*w*0.5 - w) gives the gradient w - 1", () => {
  using w = Tensor.from([1, 2, 3, 4], [2, 2]).withRequiresGrad();
  {
    using _ = new ActivationScope();
    const loss = ops.sum(ops.sub(ops.mul(ops.mul(w, w), 0.5), w));
    loss.backward();
    assert.equal(loss.item(), 5);
  }
  assert.deepEqual([...w.grad!.toArray()], [0, 1, 2, 3]);
});

test("the guide's keep example: keep(relu(a + a)) survives its scope", () => {
  using a = Tensor.from([1, -2]);
  let kept: Tensor;
  {
    using _ = new ActivationScope();
    const scratch = ops.add(a, a);
    kept = ActivationScope.keep(ops.relu(scratch));
    assert.equal(scratch.isReleased, false);
  }
  assert.deepEqual([...kept.toArray()], [2, 0]);
  kept.dispose();
});

test("backward accumulates into leaves over passes and releases the records it consumed", () => {
  using x = leaf([1, 2, 3], [3]);
  for (let pass = 1; pass <= 3; pass++) {
    using _ = new ActivationScope();
    const y = ops.sum(ops.mul(x, x));
    const record = y.gradFn!;
    y.backward();
    assert.equal(record.isReleased, true);
    assert.deepEqual([...x.grad!.toArray()], [2, 4, 6].map((v) => v * pass));
    assert.throws(() => y.backward(), /already consumed/);
  }
});

test("backward(grad) takes a gradient of the output's shape and refuses another", () => {
  using _ = new ActivationScope();
  const x = leaf([1, 2], [2]);
  const y = ops.mul(x, 3);
  assert.throws(() => y.backward(), /needs a one-element tensor/);
  assert.throws(
    () => y.backward(Tensor.from([1, 1, 1])),
    /the gradient has shape \[3\] but the tensor has \[2\]/,
  );
  y.backward(Tensor.from([1, 10]));
  assert.deepEqual([...x.grad!.toArray()], [3, 30]);
  assert.throws(() => Tensor.from([1]).backward(), /does not require gradients/);
});

test("an in-place write to a saved tensor makes backward throw TensorVersionError", () => {
  using _ = new ActivationScope();
  const a = leaf([1, 2], [2]);
  const b = Tensor.from([3, 4]);
  const y = ops.sum(ops.mul(a, b));
  b.set(10, 0);
  assert.throws(
    () => y.backward(),
    (e: Error) =>
      e instanceof TensorVersionError && e.message.includes("Mul") &&
      e.message.includes("saved at version 0, now 1"),
  );
});

test("copyFrom into a tensor that requires gradients throws while recording, and works under noGrad", () => {
  using w = leaf([1, 2], [2]);
  using src = Tensor.from([5, 6]);
  assert.throws(() => w.copyFrom(src), /requires gradients while gradients are recorded/);
  GradMode.noGrad(() => w.copyFrom(src));
  assert.deepEqual([...w.toArray()], [5, 6]);
});

test("only floating-point tensors can require gradients", () => {
  using i = Tensor.from([1, 2], [2], { dtype: DType.I32 });
  assert.throws(
    () => i.withRequiresGrad(),
    /only plain floating-point tensors can require gradients, got I32 tensor/,
  );
});

test("gradients run under the forward pass's compute settings", () => {
  using x = leaf([1, 2, 3], [3]);
  using _ = new ActivationScope();
  const y = TensorCompute.run({ mode: "exact", threads: 1 }, () => ops.sum(ops.mul(x, x)));
  assert.deepEqual(y.gradFn!.settings.mode, "exact");
  assert.equal(y.gradFn!.settings.threads, 1);
  y.backward();
  assert.deepEqual([...x.grad!.toArray()], [2, 4, 6]);
});

test("each rule of one pass runs under its own record's settings where the records' settings differ", () => {
  // A kernel set that notes the settings of every element-wise call it serves.
  const seen: string[] = [];
  const noting = {
    ...referenceKernels,
    binary: (...args: Parameters<typeof referenceKernels.binary>) => {
      seen.push(`${args[5].mode}/${args[5].threads}/${TensorCompute.mode}`);
      return referenceKernels.binary(...args);
    },
  };
  using x = leaf([1, 2, 3], [3]);
  using _ = new ActivationScope();
  const y = TensorCompute.run({ mode: "exact", threads: 1, kernels: noting }, () => ops.mul(x, x));
  const z = TensorCompute.run({ mode: "fast", threads: 2 }, () => ops.mul(y, 3));
  const w = TensorCompute.run({ mode: "exact", threads: 1, kernels: noting }, () => ops.sum(ops.mul(z, 0.5)));
  seen.length = 0;
  w.backward();
  // Mul(z, 0.5) and Mul(x, x) (g·x for each side, then their sum) under the noting set; Mul(y, 3) not.
  assert.deepEqual(seen, new Array(4).fill("exact/1/exact"));
  assert.deepEqual([...x.grad!.toArray()], [3, 6, 9]);
});

test("a training step of a two-layer perceptron obtains no new native memory after the first steps", () => {
  using w1 = Tensor.randn([16, 4], { seed: 1 }).withRequiresGrad();
  using b1 = Tensor.zeros([16]).withRequiresGrad();
  using w2 = Tensor.randn([3, 16], { seed: 2 }).withRequiresGrad();
  using b2 = Tensor.zeros([3]).withRequiresGrad();
  using x = Tensor.randn([32, 4], { seed: 3 });
  using targets = Tensor.from(Int32Array.from({ length: 32 }, (_, i) => i % 3));
  const params = [w1, b1, w2, b2];
  let osBytes = 0;
  const losses: number[] = [];
  for (let step = 0; step < 30; step++) {
    using _ = new ActivationScope();
    const loss = ops.crossEntropy(ops.linear(ops.relu(ops.linear(x, w1, b1)), w2, b2), targets);
    loss.backward();
    losses.push(loss.item() as number);
    GradMode.noGrad(() => {
      for (const p of params) {
        p.copyFrom(ops.sub(p, ops.mul(p.grad!, 0.1)));
        p.grad!.fill(0);
      }
    });
    if (step === 3) osBytes = BufferPool.default.stats().osBytes;
  }
  assert.equal(BufferPool.default.stats().osBytes, osBytes);
  assert.ok(losses[29] < losses[0], `loss went from ${losses[0]} to ${losses[29]}`);
});

test("a leaf takes its first gradient without a copy only when nothing else holds it; values stay independent", () => {
  const a = Tensor.from([1, 2, 3]).withRequiresGrad();
  const b = Tensor.from([4, 5, 6]).withRequiresGrad();
  {
    using _ = new ActivationScope();
    // One gradient for both leaves: each needs its own, and a + a accumulates twice.
    ops.sum(ops.add(ops.add(a, b), a)).backward();
  }
  assert.deepEqual([...a.grad!.toArray()], [2, 2, 2]);
  assert.deepEqual([...b.grad!.toArray()], [1, 1, 1]);
  assert.ok(a.grad!.storage !== b.grad!.storage);
  {
    using _ = new ActivationScope();
    // A fresh gradient of its own (mul makes it) is taken, survives the scope and then accumulates in place.
    ops.sum(ops.mul(a, b)).backward();
  }
  assert.deepEqual([...a.grad!.toArray()], [6, 7, 8]);
  assert.deepEqual([...b.grad!.toArray()], [2, 3, 4]);
  a.grad = null;
  b.grad = null;
  // The caller's gradient is copied, never taken: writing it afterwards leaves the leaf's alone.
  using seed = Tensor.from([1, 1, 1]);
  ops.mul(a, 2).backward(seed);
  seed.fill(9);
  assert.deepEqual([...a.grad!.toArray()], [2, 2, 2]);
  // A linear layer's weight gradient (through the transpose) has the weight's layout and values.
  using x = Tensor.from([1, 2, 3, 4, 5, 6], [2, 3]);
  const w = Tensor.from([1, 0, 0, 0, 1, 0], [2, 3]).withRequiresGrad();
  ops.sum(ops.linear(x, w)).backward();
  assert.deepEqual([...w.grad!.toArray()], [5, 7, 9, 5, 7, 9]);
  assert.deepEqual([...w.grad!.strides], [3, 1]);
  for (const t of [a, b, w]) t.dispose();
});

test("a matrix weight against a batched input gets the summed gradient of all the batch's rows", () => {
  using x = Tensor.from([1, 2, 3, 4, 5, 6, 7, 8], [2, 2, 2]);
  const w = Tensor.from([1, 2, 3, 4], [2, 2]).withRequiresGrad();
  const v = Tensor.from([1, 2, 3, 4], [2, 2]).withRequiresGrad();
  using _ = new ActivationScope();
  ops.sum(ops.matmul(x, w)).backward();
  ops.sum(ops.matmul(x, ops.transpose(v, 0, 1))).backward();
  // d/dW Σ x·W: row k of dW is Σ over rows of x[.., k]: 1+3+5+7 = 16, 2+4+6+8 = 20.
  assert.deepEqual([...w.grad!.toArray()], [16, 16, 20, 20]);
  assert.deepEqual([...v.grad!.toArray()], [16, 20, 16, 20]);
  w.dispose();
  v.dispose();
});

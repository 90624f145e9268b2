// layerNorm and batchNorm: values against f64 references, the running-statistics update, exact mode equal to
// the reference kernel set, gradients of x, weight and bias against central differences, records, errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ActivationScope,
  DType,
  DTypeError,
  GradMode,
  ops,
  referenceKernels,
  Tensor,
  TensorCompute,
  TensorShapeError,
} from "../mod.ts";
import * as R from "./helpers/f64.ts";

test("layerNorm matches the f64 reference over one or more trailing axes, with and without weight and bias", () => {
  using _ = new ActivationScope();
  const x = ops.add(ops.mul(Tensor.randn([3, 4, 5], { seed: 1 }), 3), 7);
  const w = Tensor.randn([4, 5], { seed: 2 });
  const b = Tensor.randn([4, 5], { seed: 3 });
  for (const mode of ["exact", "fast"] as const) {
    TensorCompute.run({ mode }, () => {
      R.assertClose(
        ops.layerNorm(x, [4, 5], { weight: w, bias: b }),
        R.layerNorm(R.toF64(x), 2, R.toF64(w), R.toF64(b), 1e-5),
        1e-5,
        mode,
      );
      R.assertClose(
        ops.layerNorm(x, 5, { eps: 0.1 }),
        R.layerNorm(R.toF64(x), 1, null, null, 0.1),
        1e-5,
        mode,
      );
      const w5 = ops.select(w, 0, 1);
      R.assertClose(
        ops.layerNorm(x, [5], { weight: w5 }),
        R.layerNorm(R.toF64(x), 1, R.toF64(w5), null, 1e-5),
        1e-5,
        mode,
      );
    });
  }
  const t = ops.transpose(x, 0, 2); // [5, 4, 3], strided
  R.assertClose(ops.layerNorm(t, [4, 3]), R.layerNorm(R.toF64(t), 2, null, null, 1e-5), 1e-5, "strided");
});

test("batchNorm normalizes per channel with batch statistics in training and running ones in evaluation", () => {
  using _ = new ActivationScope();
  for (const shape of [[6, 3], [4, 3, 5], [2, 3, 4, 5]]) {
    const x = ops.add(Tensor.randn(shape, { seed: shape.length }), 2);
    const w = Tensor.randn([3], { seed: 9 });
    const b = Tensor.randn([3], { seed: 10 });
    const mean = Tensor.from([0.5, -1, 2]);
    const variance = Tensor.from([1, 4, 0.25]);
    for (const mode of ["exact", "fast"] as const) {
      TensorCompute.run({ mode }, () => {
        const trained = ops.batchNorm(x, null, null, { training: true, weight: w, bias: b });
        R.assertClose(
          trained,
          R.batchNorm(R.toF64(x), null, R.toF64(w), R.toF64(b), 1e-5),
          1e-5,
          `${shape} train`,
        );
        const evaluated = ops.batchNorm(x, mean, variance, { weight: w, bias: b, eps: 1e-3 });
        const running = { mean: R.toF64(mean), variance: R.toF64(variance) };
        R.assertClose(
          evaluated,
          R.batchNorm(R.toF64(x), running, R.toF64(w), R.toF64(b), 1e-3),
          1e-5,
          `${shape} eval`,
        );
      });
    }
  }
});

test("batchNorm in training updates the running mean and unbiased variance in place, without a record", () => {
  using _ = new ActivationScope();
  // Channel 0 holds 1, 3, 5, 7 (mean 4, biased variance 5, unbiased 20/3); channel 1 holds 0, 0, 2, 2.
  const x = Tensor.from([[[1, 3], [0, 0]], [[5, 7], [2, 2]]]).withRequiresGrad(); // [2, 2, 2]
  const runningMean = Tensor.from([1, 1]);
  const runningVar = Tensor.from([2, 2]);
  const versions = [runningMean.storage.version, runningVar.storage.version];
  const y = ops.batchNorm(x, runningMean, runningVar, { training: true, momentum: 0.25 });
  assert.equal(y.gradFn!.op, "BatchNorm");
  const f = Math.fround;
  const expectMean = [0.75 * 1 + f(0.25) * 4, 0.75 * 1 + 0.25 * 1];
  const expectVar = [f(f(0.75 * 2) + f(f(f(5 * f(4 / 3)) * 0.25))), f(0.75 * 2 + f(f(1 * f(4 / 3)) * 0.25))];
  assert.deepEqual([...runningMean.toArray()], expectMean.map(f));
  assert.deepEqual([...runningVar.toArray()], expectVar);
  assert.ok(runningMean.storage.version > versions[0] && runningVar.storage.version > versions[1]);
  assert.equal(runningMean.requiresGrad, false);
  // Evaluation mode reads the running statistics and leaves them alone.
  const before = [...runningMean.toArray()];
  ops.batchNorm(x, runningMean, runningVar);
  assert.deepEqual([...runningMean.toArray()], before);
  // Running statistics that require gradients are still updated (under no-grad, like PyTorch buffers).
  const tracked = Tensor.from([0, 0]).withRequiresGrad();
  ops.batchNorm(x, tracked, Tensor.from([1, 1]), { training: true, momentum: 1 });
  assert.deepEqual([...tracked.toArray()], [4, 1]);
});

test("layerNorm and batchNorm in exact mode equal the reference kernel set bit for bit, for every thread count", () => {
  // 2^16 elements and more: large enough for the kernels to split work over threads.
  const run = (settings: { threads?: number; kernels?: typeof referenceKernels }) =>
    TensorCompute.run({ mode: "exact", ...settings }, () => {
      using _ = new ActivationScope();
      const x = Tensor.randn([64, 3, 400], { seed: 21 }).withRequiresGrad();
      const w = Tensor.randn([400], { seed: 22 }).withRequiresGrad();
      const wc = Tensor.randn([3], { seed: 23 }).withRequiresGrad();
      const ln = ops.layerNorm(x, 400, { weight: w });
      const bn = ops.batchNorm(ln, null, null, { training: true, weight: wc, bias: wc });
      ops.sum(ops.mul(bn, bn)).backward();
      return [bn.toArray(), x.grad!.toArray(), w.grad!.toArray(), wc.grad!.toArray()].map((a) => [...a]);
    });
  const reference = run({ kernels: referenceKernels });
  assert.deepEqual(run({ threads: 1 }), reference);
  assert.deepEqual(run({ threads: 4 }), reference);
});

const gradCases: R.GradCase[] = [
  {
    name: "layerNorm (weight, bias, two axes)",
    shapes: [[3, 4, 5], [4, 5], [4, 5]],
    f32: ([x, w, b]) => ops.layerNorm(x, [4, 5], { weight: w, bias: b }),
    f64: ([x, w, b]) => R.layerNorm(x, 2, w, b, 1e-5),
  },
  {
    name: "layerNorm (no affine part)",
    shapes: [[4, 6]],
    f32: ([x]) => ops.layerNorm(x, 6),
    f64: ([x]) => R.layerNorm(x, 1, null, null, 1e-5),
  },
  {
    name: "layerNorm (strided leaves, bias only)",
    shapes: [[3, 5], [5]],
    f32: ([x, b]) => ops.layerNorm(x, [5], { bias: b, eps: 0.01 }),
    f64: ([x, b]) => R.layerNorm(x, 1, null, b, 0.01),
    strided: true,
  },
  {
    name: "layerNorm (every axis)",
    shapes: [[2, 3], [2, 3]],
    f32: ([x, w]) => ops.layerNorm(x, [2, 3], { weight: w }),
    f64: ([x, w]) => R.layerNorm(x, 2, w, null, 1e-5),
  },
  {
    name: "batchNorm (training, NCHW)",
    shapes: [[3, 2, 3, 2], [2], [2]],
    f32: ([x, w, b]) => ops.batchNorm(x, null, null, { training: true, weight: w, bias: b }),
    f64: ([x, w, b]) => R.batchNorm(x, null, w, b, 1e-5),
  },
  {
    name: "batchNorm (training, [N, C], strided)",
    shapes: [[5, 3], [3]],
    f32: ([x, w]) => ops.batchNorm(x, Tensor.zeros([3]), Tensor.ones([3]), { training: true, weight: w }),
    f64: ([x, w]) => R.batchNorm(x, null, w, null, 1e-5),
    strided: true,
  },
  {
    name: "batchNorm (evaluation)",
    shapes: [[2, 3, 4], [3], [3]],
    f32: ([x, w, b]) =>
      ops.batchNorm(x, Tensor.from([0.5, -1, 0]), Tensor.from([2, 0.5, 1]), { weight: w, bias: b }),
    f64: ([x, w, b]) =>
      R.batchNorm(x, { mean: R.f64([3], [0.5, -1, 0]), variance: R.f64([3], [2, 0.5, 1]) }, w, b, 1e-5),
  },
  {
    name: "batchNorm (training, no affine part)",
    shapes: [[4, 2, 3]],
    f32: ([x]) => ops.batchNorm(x, null, null, { training: true }),
    f64: ([x]) => R.batchNorm(x, null, null, null, 1e-5),
  },
];

for (const mode of ["exact", "fast"] as const) {
  test(`layerNorm and batchNorm gradients match central differences of the f64 reference (${mode})`, () => {
    for (const c of gradCases) R.checkGradients(c, mode);
  });
}

test("the LayerNorm record saves x̂ and rstd as owned slots plus the weight, eps as an attribute", () => {
  using _ = new ActivationScope();
  const x = Tensor.randn([2, 3], { seed: 1 }).withRequiresGrad();
  const w = Tensor.randn([3], { seed: 2 });
  const b = Tensor.zeros([3]).withRequiresGrad();
  const y = ops.layerNorm(x, [3], { weight: w, bias: b, eps: 0.5 });
  const r = y.gradFn!;
  assert.equal(r.op, "LayerNorm");
  assert.deepEqual(r.attrs, { normalizedAxes: 1, hasWeight: true, hasBias: true, eps: 0.5 });
  assert.deepEqual(r.inputs.map((i) => i.node), [x.leaf, null, b.leaf]);
  const [xhat, rstd, weight] = [0, 1, 2].map((i) => r.savedTensor(i));
  assert.deepEqual(r.owned.map((t) => t.storage), [xhat.storage, rstd.storage]);
  assert.equal(weight.storage, w.storage);
  assert.deepEqual([...rstd.shape], [2, 1]);
  const x64 = R.toF64(x);
  R.assertClose(xhat, R.layerNorm(x64, 1, null, null, 0.5), 1e-6, "x̂");
  ops.sum(y).backward();
  assert.ok(r.owned.every((t) => t.isReleased), "backward frees the owned slots");
  // Without an affine part the output itself is slot 0 (not owned); without x needing a gradient, no weight.
  const plain = ops.layerNorm(x, 3).gradFn!;
  assert.equal(plain.owned.length, 1);
  assert.equal(plain.saved[2], null);
  const onlyBias = ops.layerNorm(Tensor.randn([2, 3], { seed: 3 }), 3, { weight: w, bias: b }).gradFn!;
  assert.equal(onlyBias.saved[2], null);
  assert.equal(ops.layerNorm(Tensor.randn([2, 3], { seed: 3 }), 3).gradFn, null);
});

test("the output of a normalization without weight and bias is slot 0 and survives backward", () => {
  using _ = new ActivationScope();
  const x = Tensor.randn([3, 4], { seed: 4 }).withRequiresGrad();
  const y = ops.layerNorm(x, 4);
  assert.equal(y.gradFn!.savedTensor(0).storage, y.storage);
  ops.sum(ops.mul(y, y)).backward();
  assert.equal(y.isReleased, false);
  const z = ops.batchNorm(x, null, null, { training: true });
  assert.equal(z.gradFn!.savedTensor(0).storage, z.storage);
  z.set(1, 0, 0); // an in-place write to the saved output is caught at backward time
  assert.throws(() => ops.sum(z).backward(), (e: Error) => e.name === "TensorVersionError");
});

test("the BatchNorm record keeps training, weight and bias flags, eps and momentum as attributes", () => {
  using _ = new ActivationScope();
  const x = Tensor.randn([4, 2, 3], { seed: 5 }).withRequiresGrad();
  const w = Tensor.ones([2]).withRequiresGrad();
  const train = ops.batchNorm(x, Tensor.zeros([2]), Tensor.ones([2]), {
    training: true,
    weight: w,
    momentum: 0.3,
  })
    .gradFn!;
  assert.equal(train.op, "BatchNorm");
  assert.deepEqual(train.attrs, {
    training: true,
    hasWeight: true,
    hasBias: false,
    eps: 1e-5,
    momentum: 0.3,
  });
  assert.deepEqual(train.inputs.map((i) => i.node), [x.leaf, w.leaf]);
  assert.deepEqual([...train.savedTensor(1).shape], [1, 2, 1]);
  assert.equal(train.savedTensor(2).storage, w.storage);
  assert.equal(train.owned.length, 2);
  const evaluation = ops.batchNorm(x, Tensor.zeros([2]), Tensor.ones([2]), { eps: 0.1 }).gradFn!;
  assert.deepEqual(evaluation.attrs, {
    training: false,
    hasWeight: false,
    hasBias: false,
    eps: 0.1,
    momentum: 0.1,
  });
  const rstd = evaluation.savedTensor(1).toArray() as Float32Array;
  // rstd = 1/√(var + eps) in f64 from the f32 running variance, rounded once (src/kernels/norm.ts).
  const expected = Math.fround(1 / Math.sqrt(1 + 0.1));
  assert.deepEqual([...rstd], [expected, expected]);
  const none = GradMode.noGrad(() => ops.batchNorm(x, null, null, { training: true }));
  assert.equal(none.gradFn, null);
});

test("layerNorm and batchNorm refuse bad input with typed errors naming the rule", () => {
  using _ = new ActivationScope();
  const x = Tensor.zeros([2, 3, 4]);
  const c3 = Tensor.zeros([3]);
  const cases: [() => unknown, new (...a: never[]) => Error, RegExp][] = [
    [() => ops.layerNorm(x, [3]), TensorShapeError, /last extents/],
    [() => ops.layerNorm(x, [2, 3, 4, 5]), TensorShapeError, /last extents/],
    [() => ops.layerNorm(x, []), TensorShapeError, /last extents/],
    [
      () => ops.layerNorm(x, 4, { weight: Tensor.zeros([3]) }),
      TensorShapeError,
      /weight must have shape \[4\]/,
    ],
    [() => ops.layerNorm(x, 4, { bias: Tensor.zeros([1, 4]) }), TensorShapeError, /bias/],
    [() => ops.layerNorm(x, 4, { eps: -1 }), TypeError, /eps/],
    [() => ops.layerNorm(x.cast(DType.F64), 4), DTypeError, /F32/],
    [() => ops.batchNorm(Tensor.zeros([3]), c3, c3), TensorShapeError, /\[N, C, \.\.\.\]/],
    [() => ops.batchNorm(x, Tensor.zeros([4]), c3), TensorShapeError, /runningMean must have shape \[3\]/],
    [() => ops.batchNorm(x, c3, null), TypeError, /both running statistics/],
    [() => ops.batchNorm(x, null, null), TypeError, /evaluation mode/],
    [() => ops.batchNorm(x, c3, c3, { weight: Tensor.zeros([2]) }), TensorShapeError, /weight/],
    [
      () => ops.batchNorm(Tensor.zeros([1, 3]), null, null, { training: true }),
      TensorShapeError,
      /more than one/,
    ],
    [() => ops.batchNorm(x, c3, c3, { momentum: NaN }), TypeError, /momentum/],
    [() => ops.batchNorm(x, c3.cast(DType.F64), c3), DTypeError, /F32/],
  ];
  for (const [fn, type, message] of cases) {
    assert.throws(fn, (e: Error) => e instanceof type && message.test(e.message), String(message));
  }
});

// lstm, gru and ctcLoss: values against f64 references (the CTC one by brute force over every alignment),
// exact mode equal to the reference kernel set, gradients of every input against central differences, the
// CtcLoss record, memory, errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ActivationScope,
  DType,
  DTypeError,
  ops,
  referenceKernels,
  Tensor,
  TensorCompute,
  TensorShapeError,
} from "../mod.ts";
import * as R from "./helpers/f64.ts";

function rnnParameters(gates: number, inputs: number, hidden: number, seed: number) {
  return {
    weightIh: Tensor.randn([gates * hidden, inputs], { seed }),
    weightHh: Tensor.randn([gates * hidden, hidden], { seed: seed + 1 }),
    biasIh: Tensor.randn([gates * hidden], { seed: seed + 2 }),
    biasHh: Tensor.randn([gates * hidden], { seed: seed + 3 }),
  };
}

function f64Parameters(p: ReturnType<typeof rnnParameters>) {
  return {
    wIh: R.toF64(p.weightIh),
    wHh: R.toF64(p.weightHh),
    bIh: R.toF64(p.biasIh),
    bHh: R.toF64(p.biasHh),
  };
}

/** [1, N, H] as the reference's [N, H]. */
function state(t: Tensor): R.F64 {
  return R.f64(t.shape.slice(1), Float64Array.from(t.toArray() as Float32Array));
}

test("lstm and gru match the f64 reference, with and without initial states and biases, in both modes", () => {
  using _ = new ActivationScope();
  const x = Tensor.randn([3, 5, 4], { seed: 1 });
  const lstmP = rnnParameters(4, 4, 6, 10);
  const gruP = rnnParameters(3, 4, 6, 20);
  const h0 = Tensor.randn([1, 3, 6], { seed: 30 });
  const c0 = Tensor.randn([1, 3, 6], { seed: 31 });
  const zeros = R.f64([3, 6], new Float64Array(18));
  for (const mode of ["exact", "fast"] as const) {
    TensorCompute.run({ mode }, () => {
      const l = ops.lstm(x, lstmP, { h0, c0 });
      const lr = R.lstm(R.toF64(x), f64Parameters(lstmP), state(h0), state(c0));
      R.assertClose(l.output, lr.output, 1e-5, `${mode} lstm output`);
      R.assertClose(l.h, R.f64([1, 3, 6], lr.h.data), 1e-5, `${mode} lstm h`);
      R.assertClose(l.c, R.f64([1, 3, 6], lr.c.data), 1e-5, `${mode} lstm c`);
      const bare = ops.lstm(x, { weightIh: lstmP.weightIh, weightHh: lstmP.weightHh });
      const bareRef = R.lstm(R.toF64(x), { ...f64Parameters(lstmP), bIh: null, bHh: null }, zeros, zeros);
      R.assertClose(bare.output, bareRef.output, 1e-5, `${mode} lstm without biases and states`);
      const g = ops.gru(x, gruP, { h0 });
      const gr = R.gru(R.toF64(x), f64Parameters(gruP), state(h0));
      R.assertClose(g.output, gr.output, 1e-5, `${mode} gru output`);
      R.assertClose(g.h, R.f64([1, 3, 6], gr.h.data), 1e-5, `${mode} gru h`);
      const gBare = ops.gru(x, { weightIh: gruP.weightIh, weightHh: gruP.weightHh, biasHh: gruP.biasHh });
      const gBareRef = R.gru(R.toF64(x), { ...f64Parameters(gruP), bIh: null }, zeros);
      R.assertClose(gBare.output, gBareRef.output, 1e-5, `${mode} gru without input bias and state`);
    });
  }
});

test("lstm and gru in exact mode give the same bits for every thread count and agree with the reference set", () => {
  // 64 sequences with 256 hidden units: the gate tensors have 2^16 elements, enough to split over threads.
  const run = (settings: { threads?: number; kernels?: typeof referenceKernels }) =>
    TensorCompute.run({ mode: "exact", ...settings }, () => {
      using _ = new ActivationScope();
      const x = Tensor.randn([64, 3, 8], { seed: 40 }).withRequiresGrad();
      const p = rnnParameters(4, 8, 256, 41);
      const q = rnnParameters(3, 256, 8, 45);
      const weightIh = p.weightIh.withRequiresGrad();
      const l = ops.lstm(x, { ...p, weightIh });
      const g = ops.gru(l.output, q);
      ops.sum(ops.mul(g.output, g.output)).backward();
      return [g.output, x.grad!, weightIh.grad!].map((t) => t.toArray() as Float32Array);
    });
  const one = run({ threads: 1 });
  assert.deepEqual(run({ threads: 4 }), one);
  // tanh and sigmoid are within 1 ulp of the reference's Math functions: close, not bit for bit.
  const reference = run({ kernels: referenceKernels });
  reference.forEach((values, i) =>
    values.forEach((v, j) => assert.ok(Math.abs(v - one[i][j]) <= 1e-4 * (1 + Math.abs(v)), `${i}[${j}]`))
  );
});

test("lstm and gru read a strided x as its contiguous copy, bit for bit, and an input of width 0 as zeros", () => {
  // One thread projects step by step, more threads every step at once.
  for (const threads of [1, 2]) {
    TensorCompute.run({ mode: "exact", threads }, () => {
      using _ = new ActivationScope();
      // x[:, t] of a transposed view: rows 5·4 apart, columns 1 apart, the step 5 apart.
      const x = ops.transpose(Tensor.randn([3, 4, 5], { seed: 50 }), 0, 1);
      const dense = ops.contiguous(x);
      const bits = (t: Tensor) => [...t.toArray() as Float32Array];
      const [p, q] = [rnnParameters(4, 5, 6, 51), rnnParameters(3, 5, 6, 55)];
      assert.deepEqual(bits(ops.lstm(x, p).output), bits(ops.lstm(dense, p).output));
      assert.deepEqual(bits(ops.gru(x, q).output), bits(ops.gru(dense, q).output));
      // I = 0 projects to zeros: the same bits as a zero input through a zero weight.
      const empty = { ...p, weightIh: Tensor.zeros([24, 0]) };
      const zero = { ...p, weightIh: Tensor.zeros([24, 1]) };
      assert.deepEqual(
        bits(ops.lstm(Tensor.zeros([4, 3, 0]), empty).output),
        bits(ops.lstm(Tensor.zeros([4, 3, 1]), zero).output),
      );
    });
  }
});

const flat = (ts: Tensor[]) => ops.concat(ts.map((t) => ops.reshape(t, [-1])));
const [n, steps, inputs, hidden] = [2, 3, 3, 2];

const rnnCases: R.GradCase[] = [
  {
    name: "lstm (x, weights, biases, h0, c0)",
    shapes: [[n, steps, inputs], [4 * hidden, inputs], [4 * hidden, hidden], [4 * hidden], [4 * hidden], [
      1,
      n,
      hidden,
    ], [1, n, hidden]],
    f32: ([x, weightIh, weightHh, biasIh, biasHh, h0, c0]) => {
      const r = ops.lstm(x, { weightIh, weightHh, biasIh, biasHh }, { h0, c0 });
      return flat([r.output, r.h, r.c]);
    },
    f64: ([x, wIh, wHh, bIh, bHh, h0, c0]) => {
      const r = R.lstm(x, { wIh, wHh, bIh, bHh }, R.f64([n, hidden], h0.data), R.f64([n, hidden], c0.data));
      return R.flatJoin([r.output, r.h, r.c]);
    },
  },
  {
    name: "gru (x, weights, biases, h0)",
    shapes: [[n, steps, inputs], [3 * hidden, inputs], [3 * hidden, hidden], [3 * hidden], [3 * hidden], [
      1,
      n,
      hidden,
    ]],
    f32: ([x, weightIh, weightHh, biasIh, biasHh, h0]) => {
      const r = ops.gru(x, { weightIh, weightHh, biasIh, biasHh }, { h0 });
      return flat([r.output, r.h]);
    },
    f64: ([x, wIh, wHh, bIh, bHh, h0]) => {
      const r = R.gru(x, { wIh, wHh, bIh, bHh }, R.f64([n, hidden], h0.data));
      return R.flatJoin([r.output, r.h]);
    },
  },
  {
    name: "lstm and gru (strided leaves, no biases or states)",
    shapes: [[n, steps, inputs], [4 * hidden, inputs], [4 * hidden, hidden], [3 * hidden, hidden], [
      3 * hidden,
      hidden,
    ]],
    f32: ([x, wIh, wHh, gIh, gHh]) => {
      const l = ops.lstm(x, { weightIh: wIh, weightHh: wHh });
      return ops.gru(l.output, { weightIh: gIh, weightHh: gHh }).output;
    },
    f64: ([x, wIh, wHh, gIh, gHh]) => {
      const zeros = R.f64([n, hidden], new Float64Array(n * hidden));
      const l = R.lstm(x, { wIh, wHh, bIh: null, bHh: null }, zeros, zeros);
      return R.gru(l.output, { wIh: gIh, wHh: gHh, bIh: null, bHh: null }, zeros).output;
    },
    strided: true,
  },
];

for (const mode of ["exact", "fast"] as const) {
  test(`lstm and gru gradients match central differences of the f64 reference (${mode})`, () => {
    for (const c of rnnCases) R.checkGradients(c, mode);
  });
}

test("lstm and gru without a record leave only their results behind", () => {
  using scope = new ActivationScope();
  const x = Tensor.randn([2, 6, 3], { seed: 50 });
  const p = rnnParameters(4, 3, 4, 51);
  const before = scope.size;
  const { output, h, c } = ops.lstm(x, p);
  // One buffer holds output and the cell states; h and c are views of it.
  assert.equal(scope.size, before + 1);
  assert.deepEqual([output.shape, h.shape, c.shape].map((s) => [...s]), [[2, 6, 4], [1, 2, 4], [1, 2, 4]]);
  assert.equal(output.gradFn, null);
  const g = ops.gru(x, rnnParameters(3, 3, 4, 55));
  assert.equal(scope.size, before + 2);
  assert.deepEqual([...g.h.toArray()], [...ops.select(g.output, 1, 5).toArray()]);
});

// --- CTC ---

/** The reference loss by brute force: per sequence over every path, then reduced like PyTorch. */
function ctcReference(
  lp: R.F64,
  labels: number[][],
  inputLengths: number[],
  reduction: "mean" | "sum" | "none",
  blank = 0,
): R.F64 {
  const [, batch, classes] = lp.shape;
  const losses = labels.map((target, b) => {
    const rows = Array.from(
      { length: inputLengths[b] },
      (_, t) => Array.from({ length: classes }, (_, c) => lp.data[(t * batch + b) * classes + c]),
    );
    return R.ctcBruteForce(rows, target, blank);
  });
  if (reduction === "none") return R.f64([batch], losses);
  if (reduction === "sum") return R.f64([], [losses.reduce((s, l) => s + l, 0)]);
  return R.f64([], [losses.reduce((s, l, b) => s + l / Math.max(labels[b].length, 1), 0) / batch]);
}

const ctcLabels = [[1, 2, 2], [2], [], [3, 1]];
const ctcInputs = [6, 4, 3, 5];

function logSoftmax64(x: R.F64): R.F64 {
  return R.softmax(x, x.shape.length - 1, true);
}

test("ctcLoss matches the brute-force sum over alignments, for every reduction and both target layouts", () => {
  using _ = new ActivationScope();
  const logits = Tensor.randn([6, 4, 4], { seed: 60 });
  const lp = ops.logSoftmax(logits);
  const lp64 = R.toF64(lp);
  const padded = Tensor.from(ctcLabels.map((l) => [...l, 0, 0, 0].slice(0, 3)), { dtype: DType.I64 });
  const concatenated = Tensor.from(ctcLabels.flat(), [ctcLabels.flat().length], { dtype: DType.I32 });
  const lengths = Tensor.from(ctcLabels.map((l) => l.length), [4], { dtype: DType.I32 });
  for (const reduction of ["mean", "sum", "none"] as const) {
    const expected = ctcReference(lp64, ctcLabels, ctcInputs, reduction);
    R.assertClose(ops.ctcLoss(lp, padded, ctcInputs, lengths, { reduction }), expected, 1e-6, reduction);
    R.assertClose(
      ops.ctcLoss(lp, concatenated, Tensor.from(ctcInputs, [4], { dtype: DType.I64 }), lengths, {
        reduction,
      }),
      expected,
      1e-6,
      `${reduction}, concatenated`,
    );
  }
  // Another blank: class 3 is blank, so the labels use 0 to 2.
  const other = [[0, 2], [1, 1]];
  const targets = Tensor.from([[0, 2], [1, 1]], { dtype: DType.I32 });
  const lp2 = ops.slice(lp, 1, 0, 2);
  R.assertClose(
    ops.ctcLoss(lp2, targets, [6, 4], [2, 2], { blank: 3, reduction: "none" }),
    ctcReference(R.toF64(lp2), other, [6, 4], "none", 3),
    1e-6,
    "blank 3",
  );
});

test("ctcLoss is infinite for unreachable targets, and 0 with zero gradient under zeroInfinity", () => {
  using _ = new ActivationScope();
  const lp = ops.logSoftmax(Tensor.randn([3, 2, 3], { seed: 61 })).detach().withRequiresGrad();
  // "1 1" needs a blank between the repeats: 3 labels in 2 steps is impossible.
  const targets = Tensor.from([[1, 1], [2, 0]], { dtype: DType.I32 });
  const none = ops.ctcLoss(lp, targets, [2, 3], [2, 1], { reduction: "none" });
  const values = none.toArray() as Float32Array;
  assert.equal(values[0], Infinity);
  assert.ok(Number.isFinite(values[1]));
  const zeroed = ops.ctcLoss(lp, targets, [2, 3], [2, 1], { reduction: "sum", zeroInfinity: true });
  assert.ok(Math.abs((zeroed.item() as number) - values[1]) < 1e-6);
  zeroed.backward();
  const grad = lp.grad!.toArray() as Float32Array;
  for (let t = 0; t < 3; t++) {
    for (let c = 0; c < 3; c++) assert.equal(grad[(t * 2 + 0) * 3 + c], 0, `sequence 0, step ${t}`);
  }
  assert.ok(grad.some((g) => g !== 0));
});

const ctcCases: R.GradCase[] = (["mean", "sum", "none"] as const).map((reduction) => ({
  name: `ctcLoss of raw log-probabilities (${reduction})`,
  shapes: [[6, 4, 4]],
  f32: ([lp]: Tensor[]) =>
    ops.ctcLoss(
      lp,
      Tensor.from(ctcLabels.flat(), [6], { dtype: DType.I32 }),
      ctcInputs,
      ctcLabels.map((l) => l.length),
      { reduction },
    ),
  f64: ([lp]: R.F64[]) => ctcReference(lp, ctcLabels, ctcInputs, reduction),
}));
ctcCases.push({
  name: "ctcLoss after logSoftmax (strided logits)",
  shapes: [[5, 2, 3]],
  f32: ([logits]) =>
    ops.ctcLoss(ops.logSoftmax(logits), Tensor.from([[1, 2], [2, 2]], { dtype: DType.I32 }), [5, 5], [2, 2]),
  f64: ([logits]) => ctcReference(logSoftmax64(logits), [[1, 2], [2, 2]], [5, 5], "mean"),
  strided: true,
});

for (const mode of ["exact", "fast"] as const) {
  test(`ctcLoss gradients match central differences of the brute-force reference (${mode})`, () => {
    for (const c of ctcCases) R.checkGradients(c, mode);
  });
}

test("the CtcLoss record saves the gradient computed with the loss, scaled by the reduction, and owns it", () => {
  using _ = new ActivationScope();
  const lp = Tensor.zeros([4, 2, 3]).withRequiresGrad();
  const targets = Tensor.from([[1, 2], [2, 0]], { dtype: DType.I32 });
  const y = ops.ctcLoss(lp, targets, [4, 3], [2, 1], { blank: 0, reduction: "sum", zeroInfinity: true });
  const r = y.gradFn!;
  assert.equal(r.op, "CtcLoss");
  assert.deepEqual(r.attrs, { reduction: 2 });
  assert.deepEqual(r.inputs.map((i) => i.node), [lp.leaf]);
  const saved = r.savedTensor(0);
  assert.deepEqual([...saved.shape], [4, 2, 3]);
  const expected = [...(saved.toArray() as Float32Array)].map((v) => Math.fround(v * 3));
  // Every step of sequence 1 past its input length (3) has no gradient.
  assert.deepEqual([...saved.toArray() as Float32Array].slice((3 * 2 + 1) * 3, 4 * 2 * 3), [0, 0, 0]);
  // The gradient is the one at the forward pass's values: a later write to lp does not change it.
  lp.set(1, 0, 0, 0);
  y.backward(Tensor.full([], 3));
  assert.deepEqual([...lp.grad!.toArray() as Float32Array], expected);
  assert.equal(
    ops.ctcLoss(lp.detach(), Tensor.from([1], [1], { dtype: DType.I32 }), [4, 3], [1, 0]).gradFn,
    null,
  );
});

test("lstm, gru and ctcLoss refuse bad input with typed errors naming the rule", () => {
  using _ = new ActivationScope();
  const x = Tensor.zeros([2, 3, 4]);
  const w = { weightIh: Tensor.zeros([8, 4]), weightHh: Tensor.zeros([8, 2]) };
  const lp = Tensor.zeros([4, 2, 3]);
  const t = Tensor.from([[1, 2], [2, 1]], { dtype: DType.I32 });
  const cases: [() => unknown, new (...a: never[]) => Error, RegExp][] = [
    [() => ops.lstm(Tensor.zeros([3, 4]), w), TensorShapeError, /\[N, T, I\]/],
    [() => ops.lstm(Tensor.zeros([2, 0, 4]), w), TensorShapeError, /T ≥ 1/],
    [
      () => ops.lstm(x, { ...w, weightIh: Tensor.zeros([6, 4]) }),
      TensorShapeError,
      /weightIh must be \[4·hidden, 4\]/,
    ],
    [
      () => ops.lstm(x, { ...w, weightIh: Tensor.zeros([8, 3]) }),
      TensorShapeError,
      /weightIh must have shape \[8, 4\]/,
    ],
    [() => ops.lstm(x, { ...w, weightHh: Tensor.zeros([8, 3]) }), TensorShapeError, /weightHh/],
    [() => ops.lstm(x, { ...w, biasIh: Tensor.zeros([4]) }), TensorShapeError, /biasIh/],
    [
      () => ops.lstm(x, w, { h0: Tensor.zeros([2, 2]) }),
      TensorShapeError,
      /initial state must have shape \[1, 2, 2\]/,
    ],
    [() => ops.lstm(x.cast(DType.F64), w), DTypeError, /F32/],
    [() => ops.gru(x, w), TensorShapeError, /3·hidden/],
    [() => ops.ctcLoss(Tensor.zeros([4, 3]), t, [4, 4], [2, 2]), TensorShapeError, /\[T, N, C\]/],
    [() => ops.ctcLoss(lp, t, [4, 5], [2, 2]), TensorShapeError, /exceeds the 4 steps/],
    [() => ops.ctcLoss(lp, t, [4], [2, 2]), TensorShapeError, /inputLengths must hold 2/],
    [() => ops.ctcLoss(lp, t, [4, 4], [2, 3]), TensorShapeError, /targets must be \[N, S\]/],
    [() => ops.ctcLoss(lp, t, [4, 4], [2, -1]), TensorShapeError, /targetLengths/],
    [() => ops.ctcLoss(lp, t, [4, 4], [2, 2], { blank: 1 }), TensorShapeError, /other than the blank 1/],
    [() => ops.ctcLoss(lp, t, [4, 4], [2, 2], { blank: 3 }), TensorShapeError, /blank must be a class/],
    [
      () => ops.ctcLoss(lp, Tensor.from([[1, 3], [1, 1]], { dtype: DType.I32 }), [4, 4], [2, 2]),
      TensorShapeError,
      /label 3/,
    ],
    [() => ops.ctcLoss(lp, t.cast(DType.F32), [4, 4], [2, 2]), DTypeError, /integer tensor/],
    [() => ops.ctcLoss(lp, t, Tensor.from([4, 4]), [2, 2]), DTypeError, /inputLengths/],
    [() => ops.ctcLoss(lp, t, [4, 4], [2, 2], { reduction: "max" as "sum" }), TypeError, /reduction/],
  ];
  for (const [fn, type, message] of cases) {
    assert.throws(fn, (e: Error) => e instanceof type && message.test(e.message), String(message));
  }
});

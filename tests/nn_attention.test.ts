// attention: values against the f64 reference (batch broadcast, Bool and additive masks, causal, scale),
// exact mode equal to the reference kernel set, gradients of q, k, v and an additive mask, memory, errors.
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

/** A Bool mask as the reference's additive one. */
function additive(mask: Tensor): R.F64 {
  return R.f64(mask.shape, Array.from(mask.toArray() as Uint8Array, (b) => (b === 0 ? -Infinity : 0)));
}

test("attention matches the f64 reference with broadcast batches, masks, causal and scale, in both modes", () => {
  using _ = new ActivationScope();
  const q = Tensor.randn([2, 3, 4, 8], { seed: 1 });
  const k = Tensor.randn([3, 5, 8], { seed: 2 }); // batch broadcasts over q's leading 2
  const v = Tensor.randn([1, 3, 5, 6], { seed: 3 });
  const bool = Tensor.from(Array.from({ length: 4 * 5 }, (_, i) => i % 3 !== 1), [4, 5], {
    dtype: DType.Bool,
  });
  const float = Tensor.randn([3, 1, 5], { seed: 4 });
  const [q64, k64, v64] = [q, k, v].map(R.toF64);
  const s = 1 / Math.sqrt(8);
  for (const mode of ["exact", "fast"] as const) {
    TensorCompute.run({ mode }, () => {
      R.assertClose(
        ops.attention(q, k, v),
        R.attention(q64, k64, v64, null, false, s),
        1e-5,
        `${mode} plain`,
      );
      R.assertClose(
        ops.attention(q, k, v, { mask: bool }),
        R.attention(q64, k64, v64, additive(bool), false, s),
        1e-5,
        `${mode} bool`,
      );
      R.assertClose(
        ops.attention(q, k, v, { mask: float, scale: 0.3 }),
        R.attention(q64, k64, v64, R.toF64(float), false, 0.3),
        1e-5,
        `${mode} additive`,
      );
      R.assertClose(
        ops.attention(q, k, v, { causal: true, mask: float }),
        R.attention(q64, k64, v64, R.toF64(float), true, s),
        1e-5,
        `${mode} causal`,
      );
    });
  }
});

test("attention by hand: causal rows see their prefix; a row with nothing to attend to gives zeros", () => {
  using _ = new ActivationScope();
  const q = Tensor.zeros([3, 2]);
  const v = Tensor.from([[3, 0], [0, 3], [6, 6]]);
  const mask = Tensor.from(
    [[false, false, false], [true, false, true], [true, true, true]],
    { dtype: DType.Bool },
  );
  // Equal scores: each row averages the values it may see (exact mode: one rounding per dot product).
  TensorCompute.run({ mode: "exact" }, () => {
    assert.deepEqual(ops.attention(q, q, v, { causal: true }).toNested(), [[3, 0], [1.5, 1.5], [3, 3]]);
    assert.deepEqual(ops.attention(q, q, v, { mask }).toNested(), [[0, 0], [4.5, 3], [3, 3]]);
    // Causal and a Bool mask that excludes key 0 combine: row 0 keeps nothing, row 1 key 1, row 2 keys 1, 2.
    const row0 = Tensor.from([false, true, true], [3], { dtype: DType.Bool });
    const combined = ops.attention(q, q, v, { mask: row0, causal: true });
    assert.deepEqual(combined.toNested(), [[0, 0], [0, 3], [3, 4.5]]);
    // An F32 mask of −∞ across a row is not caught: that row is NaN.
    const float = Tensor.from([[-Infinity, -Infinity, -Infinity], [0, 0, 0], [0, 0, 0]]);
    const rows = ops.attention(q, q, v, { mask: float }).toNested() as number[][];
    assert.ok(rows[0].every(Number.isNaN) && rows[1].every((x) => !Number.isNaN(x)));
  });
});

test("a fully masked row passes no gradient and no NaN to q, k and v", () => {
  using _ = new ActivationScope();
  const q = Tensor.randn([2, 3, 4], { seed: 11 }).withRequiresGrad();
  const k = Tensor.randn([2, 5, 4], { seed: 12 }).withRequiresGrad();
  const v = Tensor.randn([2, 5, 2], { seed: 13 }).withRequiresGrad();
  const mask = Tensor.from(
    Array.from({ length: 2 * 3 * 5 }, (_, i) => i >= 5), // batch 0, row 0 sees nothing
    [2, 3, 5],
    { dtype: DType.Bool },
  );
  const y = ops.attention(q, k, v, { mask });
  assert.deepEqual([...y.toArray().slice(0, 2)], [0, 0]);
  ops.sum(ops.mul(y, y)).backward();
  const gq = q.grad!.toArray() as Float32Array;
  assert.deepEqual([...gq.slice(0, 4)], [0, 0, 0, 0]);
  for (const g of [gq, k.grad!.toArray(), v.grad!.toArray()] as Float32Array[]) {
    assert.ok(g.every(Number.isFinite));
  }
  assert.ok(gq.slice(4).some((x) => x !== 0));
});

test("attention in exact mode gives the same bits for every thread count and agrees with the reference set", () => {
  // Large enough for the kernels to split work over threads (2^16 scores).
  const run = (settings: { threads?: number; kernels?: typeof referenceKernels }) =>
    TensorCompute.run({ mode: "exact", ...settings }, () => {
      using _ = new ActivationScope();
      const q = Tensor.randn([4, 128, 32], { seed: 5 }).withRequiresGrad();
      const k = Tensor.randn([4, 128, 32], { seed: 6 }).withRequiresGrad();
      const v = Tensor.randn([4, 128, 16], { seed: 7 }).withRequiresGrad();
      const y = ops.attention(q, k, v, { causal: true });
      ops.sum(ops.mul(y, y)).backward();
      return [y, q.grad!, k.grad!, v.grad!].map((t) => t.toArray() as Float32Array);
    });
  const one = run({ threads: 1 });
  assert.deepEqual(run({ threads: 4 }), one);
  // exp is within 1 ulp of the reference's Math.exp, so the reference set agrees closely, not bit for bit.
  const reference = run({ kernels: referenceKernels });
  reference.forEach((values, i) =>
    values.forEach((v, j) => assert.ok(Math.abs(v - one[i][j]) <= 1e-5 * (1 + Math.abs(v)), `${i}[${j}]`))
  );
});

const maskValues = Tensor.from([[true, false, true, true], [true, true, false, true], [
  false,
  true,
  true,
  true,
]], [
  3,
  4,
], { dtype: DType.Bool });

// Causal lets row 0 see key 0 only, which the mask excludes: row 0 has nothing to attend to.
const deadRow = Tensor.from([false, true, true, true], [4], { dtype: DType.Bool });

const gradCases: R.GradCase[] = [
  {
    name: "attention (q, k, v)",
    shapes: [[2, 3, 4], [2, 4, 4], [2, 4, 5]],
    f32: ([q, k, v]) => ops.attention(q, k, v),
    f64: ([q, k, v]) => R.attention(q, k, v, null, false, 0.5),
  },
  {
    name: "attention (Bool mask, causal, scale, broadcast k and v)",
    shapes: [[2, 3, 2], [4, 2], [4, 3]],
    f32: ([q, k, v]) => ops.attention(q, k, v, { mask: maskValues, scale: 0.8 }),
    f64: ([q, k, v]) => R.attention(q, k, v, additive(maskValues), false, 0.8),
  },
  {
    name: "attention (additive mask is differentiable, causal)",
    shapes: [[3, 3], [3, 3], [3, 2], [3, 3]],
    f32: ([q, k, v, m]) => ops.attention(q, k, v, { mask: m, causal: true }),
    f64: ([q, k, v, m]) => R.attention(q, k, v, m, true, 1 / Math.sqrt(3)),
  },
  {
    name: "attention (a query row with no key left, causal and Bool mask)",
    shapes: [[3, 2], [4, 2], [4, 3]],
    f32: ([q, k, v]) => ops.attention(q, k, v, { mask: deadRow, causal: true }),
    f64: ([q, k, v]) => R.attention(q, k, v, additive(deadRow), true, 1 / Math.sqrt(2)),
  },
  {
    name: "attention (strided leaves)",
    shapes: [[3, 2, 4], [3, 5, 4], [3, 5, 2]],
    f32: ([q, k, v]) => ops.attention(q, k, v),
    f64: ([q, k, v]) => R.attention(q, k, v, null, false, 0.5),
    strided: true,
  },
];

for (const mode of ["exact", "fast"] as const) {
  test(`attention gradients match central differences of the f64 reference (${mode})`, () => {
    for (const c of gradCases) R.checkGradients(c, mode);
  });
}

test("attention records through its parts and, without a record, leaves only its result behind", () => {
  using scope = new ActivationScope();
  const q = Tensor.randn([2, 3], { seed: 8 });
  const k = Tensor.randn([4, 3], { seed: 9 });
  const v = Tensor.randn([4, 2], { seed: 10 });
  const before = scope.size;
  const y = ops.attention(q, k, v, { causal: true, mask: Tensor.ones([2, 4], { dtype: DType.Bool }) });
  assert.equal(scope.size, before + 1, "the result only");
  assert.equal(y.gradFn, null);
  const tracked = ops.attention(q.withRequiresGrad(), k, v);
  assert.equal(tracked.gradFn!.op, "MatMul");
  const parts = GradMode.noGrad(() => ops.attention(q.withRequiresGrad(), k, v));
  assert.equal(parts.gradFn, null);
});

test("attention refuses bad input with typed errors naming the rule", () => {
  using _ = new ActivationScope();
  const q = Tensor.zeros([2, 3, 4]);
  const k = Tensor.zeros([2, 5, 4]);
  const v = Tensor.zeros([2, 5, 6]);
  const cases: [() => unknown, new (...a: never[]) => Error, RegExp][] = [
    [() => ops.attention(Tensor.zeros([4]), k, v), TensorShapeError, /\[\.\.\., L, E\]/],
    [() => ops.attention(q, Tensor.zeros([2, 5, 3]), v), TensorShapeError, /agree on E and S/],
    [() => ops.attention(q, k, Tensor.zeros([2, 4, 6])), TensorShapeError, /agree on E and S/],
    [() => ops.attention(q, Tensor.zeros([3, 5, 4]), v), TensorShapeError, /cannot broadcast/],
    [() => ops.attention(q, k, v, { mask: Tensor.zeros([3, 5], { dtype: DType.I32 }) }), DTypeError, /Bool/],
    [
      () => ops.attention(q, k, v, { mask: Tensor.zeros([4, 5], { dtype: DType.Bool }) }),
      TensorShapeError,
      /broadcast/,
    ],
    [
      () => ops.attention(q, k, v, { mask: Tensor.zeros([1, 2, 3, 5]) }),
      TensorShapeError,
      /must broadcast to/,
    ],
    [() => ops.attention(q, k, v, { scale: NaN }), TypeError, /scale/],
    [() => ops.attention(q.cast(DType.F64), k, v), DTypeError, /F32/],
  ];
  for (const [fn, type, message] of cases) {
    assert.throws(fn, (e: Error) => e instanceof type && message.test(e.message), String(message));
  }
});

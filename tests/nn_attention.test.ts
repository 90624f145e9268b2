// attention: values against the f64 reference (batch broadcast, Bool and additive masks, causal, scale),
// exact mode equal to the reference kernel set, gradients of q, k, v and an additive mask, memory, errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ActivationScope,
  DType,
  DTypeError,
  GradMode,
  nn,
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

test("attention records one fused Attention record (its parts with dropout in training) and, without a record, leaves only its result behind", () => {
  using scope = new ActivationScope();
  const q = Tensor.randn([2, 3], { seed: 8 });
  const k = Tensor.randn([4, 3], { seed: 9 });
  const v = Tensor.randn([4, 2], { seed: 10 });
  const before = scope.size;
  const y = ops.attention(q, k, v, { causal: true, mask: Tensor.ones([2, 4], { dtype: DType.Bool }) });
  assert.equal(scope.size, before + 1, "the result only");
  assert.equal(y.gradFn, null);
  const tracked = ops.attention(q.withRequiresGrad(), k, v);
  assert.equal(tracked.gradFn!.op, "Attention");
  const dropped = ops.attention(q.withRequiresGrad(), k, v, { dropout: 0.5, seed: 1 });
  assert.equal(dropped.gradFn!.op, "MatMul");
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

test("grouped-query attention equals attention over repeated kv heads, bit for bit in exact mode", () => {
  using _ = new ActivationScope();
  const q = Tensor.randn([2, 6, 3, 4], { seed: 21 });
  const k = Tensor.randn([2, 2, 5, 4], { seed: 22 });
  const v = Tensor.randn([2, 2, 5, 3], { seed: 23 });
  // Heads 0–2 use kv head 0 and 3–5 kv head 1: an index_select along axis −3.
  const heads = Tensor.from([0, 0, 0, 1, 1, 1], { dtype: DType.I32 });
  const [kr, vr] = [k, v].map((t) => ops.indexSelect(t, -3, heads));
  const bool = Tensor.from(Array.from({ length: 3 * 5 }, (_, i) => i % 4 !== 2), [3, 5], {
    dtype: DType.Bool,
  });
  const perHead = Tensor.randn([6, 1, 5], { seed: 24 });
  TensorCompute.run({ mode: "exact" }, () => {
    for (
      const options of [{}, { causal: true }, { mask: bool, causal: true }, { mask: perHead, scale: 0.7 }]
    ) {
      const grouped = ops.attention(q, k, v, { ...options, enableGqa: true });
      assert.deepEqual(grouped.shape, [2, 6, 3, 3]);
      assert.deepEqual(
        grouped.toArray(),
        ops.attention(q, kr, vr, options).toArray(),
        JSON.stringify(options),
      );
    }
    // Equal head counts with enableGqa are plain attention.
    assert.deepEqual(
      ops.attention(q, kr, vr, { enableGqa: true }).toArray(),
      ops.attention(q, kr, vr).toArray(),
    );
  });
  R.assertClose(
    ops.attention(q, k, v, { enableGqa: true }),
    R.attention(R.toF64(q), R.repeatHeads(R.toF64(k), 3), R.repeatHeads(R.toF64(v), 3), null, false, 0.5),
    1e-5,
    "against the f64 reference",
  );
});

test("grouped-query attention refuses head counts that do not divide, and needs enableGqa", () => {
  using _ = new ActivationScope();
  const q = Tensor.zeros([6, 3, 4]);
  const cases: [() => unknown, RegExp][] = [
    [
      () => ops.attention(q, Tensor.zeros([4, 5, 4]), Tensor.zeros([4, 5, 4]), { enableGqa: true }),
      /dividing H/,
    ],
    [
      () => ops.attention(q, Tensor.zeros([2, 5, 4]), Tensor.zeros([3, 5, 4]), { enableGqa: true }),
      /same head/,
    ],
    [
      () =>
        ops.attention(Tensor.zeros([3, 4]), Tensor.zeros([5, 4]), Tensor.zeros([5, 4]), { enableGqa: true }),
      /Hkv/,
    ],
    [() => ops.attention(q, Tensor.zeros([2, 5, 4]), Tensor.zeros([2, 5, 4])), /cannot broadcast/],
  ];
  for (const [fn, message] of cases) {
    assert.throws(
      fn,
      (e: Error) => e instanceof TensorShapeError && message.test(e.message),
      String(message),
    );
  }
  assert.throws(() => ops.attention(q, q, q, { enableGqa: 1 as unknown as boolean }), TypeError);
});

test("attention dropout is ops.dropout's seeded mask on the weights, scaled by 1/(1 − p)", () => {
  using _ = new ActivationScope();
  const q = Tensor.randn([2, 4, 3], { seed: 31 });
  const k = Tensor.randn([2, 5, 3], { seed: 32 });
  const v = Tensor.randn([2, 5, 2], { seed: 33 });
  const p = 0.3;
  TensorCompute.run({ mode: "exact" }, () => {
    const y = ops.attention(q, k, v, { dropout: p, seed: 7, causal: true });
    // The same computation spelled out: the mask is (u ≥ p)/(1 − p) for u from Tensor.rand over the scores.
    const scores = ops.add(
      ops.mul(ops.matmul(q, ops.transpose(k, -1, -2)), 1 / Math.sqrt(3)),
      Tensor.from(Array.from({ length: 20 }, (_, i) => (i % 5 > Math.floor(i / 5) ? -Infinity : 0)), [4, 5]),
    );
    const u = Tensor.rand([2, 4, 5], { seed: 7 });
    const keep = ops.mul(ops.cast(ops.ge(u, p), DType.F32), 1 / (1 - p));
    const explicit = ops.matmul(ops.mul(ops.softmax(scores, -1), keep), v);
    assert.deepEqual(y.toArray(), explicit.toArray());
    // The same seed repeats the mask; another seed changes it; inference and p = 0 are deterministic.
    assert.deepEqual(ops.attention(q, k, v, { dropout: p, seed: 7, causal: true }).toArray(), y.toArray());
    assert.notDeepEqual(ops.attention(q, k, v, { dropout: p, seed: 8, causal: true }).toArray(), y.toArray());
    const plain = ops.attention(q, k, v, { causal: true }).toArray();
    assert.deepEqual(ops.attention(q, k, v, { dropout: p, training: false, causal: true }).toArray(), plain);
    assert.deepEqual(ops.attention(q, k, v, { dropout: 0, causal: true }).toArray(), plain);
    assert.deepEqual([...ops.attention(q, k, v, { dropout: 1 }).toArray()], new Array(16).fill(0));
  });
});

test("attention dropout drops a fraction p of the weights and keeps the rest scaled by 1/(1 − p)", () => {
  using _ = new ActivationScope();
  // Equal scores (q = 0) give weights 1/S; v = I shows each weight: the output row is the dropped weight row.
  const [l, s, p] = [400, 50, 0.25];
  const q = Tensor.zeros([l, 4]);
  const k = Tensor.randn([s, 4], { seed: 41 });
  const v = Tensor.from(Array.from({ length: s * s }, (_, i) => (i % (s + 1) === 0 ? 1 : 0)), [s, s]);
  const weights = ops.attention(q, k, v, { dropout: p, seed: 5 }).toArray() as Float32Array;
  const zeros = weights.filter((w) => w === 0).length;
  const n = l * s;
  // Binomial(n, p): within 5 standard deviations of n·p.
  assert.ok(Math.abs(zeros - n * p) < 5 * Math.sqrt(n * p * (1 - p)), `${zeros} of ${n} dropped`);
  const scaled = 1 / s / (1 - p);
  assert.ok(
    weights.every((w) => w === 0 || Math.abs(w - scaled) < 1e-6 * scaled),
    "kept weights are 1/(S(1 − p))",
  );
  // Each row's expected sum stays 1: the mean over rows of the row sums is near 1.
  let total = 0;
  weights.forEach((w) => (total += w));
  assert.ok(Math.abs(total / l - 1) < 0.02, `mean row sum ${total / l}`);
});

test("attention refuses bad dropout options", () => {
  using _ = new ActivationScope();
  const q = Tensor.zeros([2, 3]);
  for (const dropout of [-0.1, 1.5, NaN, "0.5"]) {
    assert.throws(
      () => ops.attention(q, q, q, { dropout: dropout as number }),
      (e: Error) => e instanceof TypeError && /dropout must be a probability/.test(e.message),
      String(dropout),
    );
  }
  assert.throws(
    () => ops.attention(q, q, q, { dropout: 0.5, training: "yes" as unknown as boolean }),
    TypeError,
  );
  assert.throws(() => ops.attention(q, q, q, { dropOut: 0.5 } as never), TypeError);
});

const keep = (shape: number[], p: number, seed: number) => {
  const u = Tensor.rand(shape, { seed });
  return R.f64(shape, Array.from(u.toArray() as Float32Array, (x) => (x >= p ? 1 / (1 - p) : 0)));
};

const gqaDropoutCases: R.GradCase[] = [
  {
    name: "attention (grouped-query heads, causal)",
    shapes: [[4, 3, 2], [2, 3, 2], [2, 3, 3]],
    f32: ([q, k, v]) => ops.attention(q, k, v, { enableGqa: true, causal: true }),
    f64: ([q, k, v]) =>
      R.attention(q, R.repeatHeads(k, 2), R.repeatHeads(v, 2), null, true, 1 / Math.sqrt(2)),
  },
  {
    name: "attention (grouped-query heads, batch and additive mask)",
    shapes: [[2, 3, 2, 2], [2, 1, 3, 2], [2, 1, 3, 2], [3, 1, 3]],
    f32: ([q, k, v, m]) => ops.attention(q, k, v, { enableGqa: true, mask: m }),
    f64: ([q, k, v, m]) =>
      R.attention(q, R.repeatHeads(k, 3), R.repeatHeads(v, 3), m, false, 1 / Math.sqrt(2)),
  },
  {
    name: "attention (dropout, seeded)",
    shapes: [[2, 3, 2], [2, 4, 2], [2, 4, 3]],
    f32: ([q, k, v]) => ops.attention(q, k, v, { dropout: 0.4, seed: 9 }),
    f64: ([q, k, v]) => R.droppedAttention(q, k, v, keep([2, 3, 4], 0.4, 9), 1 / Math.sqrt(2)),
  },
  {
    name: "attention (dropout and grouped-query heads)",
    shapes: [[2, 3, 2], [1, 4, 2], [1, 4, 3]],
    f32: ([q, k, v]) => ops.attention(q, k, v, { dropout: 0.5, seed: 3, enableGqa: true }),
    f64: ([q, k, v]) =>
      R.droppedAttention(
        q,
        R.repeatHeads(k, 2),
        R.repeatHeads(v, 2),
        keep([2, 3, 4], 0.5, 3),
        1 / Math.sqrt(2),
      ),
  },
];

for (const mode of ["exact", "fast"] as const) {
  test(`grouped-query and dropout attention gradients match central differences (${mode})`, () => {
    for (const c of gqaDropoutCases) R.checkGradients(c, mode);
  });
}

test("MultiheadAttention applies its dropout to the attention weights in training mode only", () => {
  using _ = new ActivationScope();
  const x = Tensor.randn([2, 4, 8], { seed: 51 });
  const make = (dropout: number, seed: number) => {
    const mha = new nn.MultiheadAttention(8, 2, { batchFirst: true, dropout, seed });
    mha.loadStateDict(reference.stateDict());
    return mha;
  };
  const reference = new nn.MultiheadAttention(8, 2, { batchFirst: true });
  const eval0 = reference.eval().forward(x, x, x).toArray();
  const a = make(0.5, 1);
  const b = make(0.5, 1);
  const first = a.forward(x, x, x, { isCausal: true }).toArray();
  // Same seed, same masks; the stream moves on at each pass; eval mode is the dropout-free module.
  assert.deepEqual(b.forward(x, x, x, { isCausal: true }).toArray(), first);
  assert.notDeepEqual(a.forward(x, x, x, { isCausal: true }).toArray(), first);
  assert.notDeepEqual(make(0.5, 2).forward(x, x, x, { isCausal: true }).toArray(), first);
  assert.deepEqual(a.eval().forward(x, x, x).toArray(), eval0);
  assert.equal(a.dropout, 0.5);
  assert.throws(() => new nn.MultiheadAttention(8, 2, { dropout: 2 }), RangeError);
});

test("MultiheadAttention sums its masks: causal, a Bool key padding mask and a Bool attnMask as one F32 mask", () => {
  using _ = new ActivationScope();
  const [n, heads, l] = [2, 2, 4];
  const x = Tensor.randn([n, l, 8], { seed: 61 });
  using mha = new nn.MultiheadAttention(8, heads, { batchFirst: true });
  const padding = Tensor.from([[false, false, true, false], [false, false, false, true]], {
    dtype: DType.Bool,
  });
  const attn = Tensor.from(Array.from({ length: l * l }, (_, i) => i === 9), [l, l], { dtype: DType.Bool });
  // The same rule written out per element: −∞ where causal, the padding or attnMask excludes a key.
  const paddingBits = padding.toArray() as Uint8Array;
  const additive = Tensor.from(
    Array.from({ length: n * heads * l * l }, (_, flat) => {
      const [b, i, j] = [Math.floor(flat / (heads * l * l)), Math.floor(flat / l) % l, flat % l];
      return j > i || paddingBits[b * l + j] !== 0 || i * l + j === 9 ? -Infinity : 0;
    }),
    [n * heads, l, l],
  );
  TensorCompute.run({ mode: "exact" }, () => {
    const combined = mha.forward(x, x, x, { isCausal: true, keyPaddingMask: padding, attnMask: attn });
    assert.deepEqual(combined.toArray(), mha.forward(x, x, x, { attnMask: additive }).toArray());
  });
  assert.throws(
    () =>
      mha.forward(x, x, x, { keyPaddingMask: Tensor.zeros([n, l], { dtype: DType.I32 }), isCausal: true }),
    (e: Error) => e instanceof DTypeError && /keyPaddingMask must be a Bool or F32/.test(e.message),
  );
});

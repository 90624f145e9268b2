import { test } from "node:test";
import assert from "node:assert/strict";
import { FAST_ERROR_BOUNDS, nativeKernels } from "../src/kernels/native.ts";
import {
  erf64,
  gelu64,
  geluErf64,
  geluSlope,
  geluTanhArgument,
  referenceKernels,
} from "../src/kernels/reference.ts";
import { BinaryOp, type ComputeSettings, type KernelOperand, UnaryOp } from "../src/kernels/types.ts";
import {
  BINARY_COUNT,
  binaryCase,
  bitwise,
  compareOutputs,
  newTally,
  type Outputs,
  sameOutputs,
  selectCase,
  ulp,
  UNARY_COUNT,
  unaryCase,
} from "./helpers/kernels_conformance.ts";
import { contiguousView, OperandPool, Rng } from "./helpers/operands.ts";

const EXACT: ComputeSettings = { mode: "exact", threads: 1 };
const FAST: ComputeSettings = { mode: "fast", threads: 1 };

/** Runs `run(pool, i)` `count` times, releasing the operands now and then, and returns the tally. */
function cases(
  count: number,
  run: (pool: OperandPool, tally: ReturnType<typeof newTally>, i: number) => void,
) {
  const tally = newTally();
  const pool = new OperandPool();
  try {
    for (let i = 0; i < count; i++) {
      run(pool, tally, i);
      if (i % 32 === 31) pool.release();
    }
  } finally {
    pool.release();
  }
  return tally;
}

test("every binary op matches the reference in both modes on random strided, flipped, broadcast and empty operands", () => {
  const tally = cases(BINARY_COUNT * 2 * 24, (pool, tally, i) => {
    const op = (i % BINARY_COUNT) as BinaryOp;
    const mode = Math.floor(i / BINARY_COUNT) % 2 === 0 ? "exact" : "fast";
    binaryCase(pool, tally, 100_000 + i, { op, mode });
  });
  assert.deepEqual(tally.failures, []);
  // The logical ops (issue 12) included.
  assert.ok(BINARY_COUNT >= 16);
  assert.equal(tally.cases, BINARY_COUNT * 48);
  assert.ok(tally.elements > 100_000, `${tally.elements} elements`);
  // Exact pow and GeluBackward's tanh differ from Math's by an f64 ulp at most, which rarely reaches f32.
  assert.ok(tally.offByOne <= tally.elements * 1e-4, `${tally.offByOne} results 1 ulp off`);
});

test("every unary op matches the reference: IEEE ops bitwise, exact transcendentals within 1 ulp, fast within bounds", () => {
  const tally = cases(UNARY_COUNT * 2 * 30, (pool, tally, i) => {
    const op = (i % UNARY_COUNT) as UnaryOp;
    const mode = Math.floor(i / UNARY_COUNT) % 2 === 0 ? "exact" : "fast";
    unaryCase(pool, tally, 200_000 + i, { op, mode });
  });
  assert.deepEqual(tally.failures, []);
  assert.equal(tally.cases, UNARY_COUNT * 60);
  assert.ok(UNARY_COUNT >= 21);
  assert.ok(tally.elements > 100_000, `${tally.elements} elements`);
  // The f64 algorithms differ from Math's by an f64 ulp at most, which reaches the f32 result very rarely.
  assert.ok(tally.offByOne <= tally.elements * 1e-4, `${tally.offByOne} results 1 ulp off`);
});

test("exact-mode element-wise results are the same bits for 1, 2, 3 and 4 threads on outputs split across the pool", () => {
  const runs: [string, (threads: number) => Outputs][] = [];
  for (const op of [BinaryOp.Add, BinaryOp.Max, BinaryOp.Pow, BinaryOp.Lt]) {
    runs.push([`binary ${op}`, (threads) => {
      const pool = new OperandPool();
      try {
        const tally = newTally();
        const out = binaryCase(pool, tally, 300 + op, { shape: [97, 1031], mode: "exact", op, threads });
        assert.deepEqual(tally.failures, []);
        return out;
      } finally {
        pool.release();
      }
    }]);
  }
  for (
    const op of [
      UnaryOp.Exp,
      UnaryOp.Tanh,
      UnaryOp.Gelu,
      UnaryOp.GeluErf,
      UnaryOp.Erf,
      UnaryOp.Relu,
      UnaryOp.Softplus,
      UnaryOp.Expm1,
    ]
  ) {
    runs.push([`unary ${op}`, (threads) => {
      const pool = new OperandPool();
      try {
        const tally = newTally();
        const out = unaryCase(pool, tally, 400 + op, { shape: [3, 65_537], mode: "exact", op, threads });
        assert.deepEqual(tally.failures, []);
        return out;
      } finally {
        pool.release();
      }
    }]);
  }
  for (const [name, run] of runs) {
    const one = run(1);
    assert.ok(one.length > 65_536);
    for (const threads of [2, 3, 4]) {
      assert.ok(sameOutputs(one, run(threads)), `${name} with ${threads} threads`);
    }
  }
});

/** A contiguous f32 operand over a fresh native block holding `values`. */
function f32Operand(pool: OperandPool, values: readonly number[]): KernelOperand {
  const operand = pool.operand("f32", contiguousView([values.length]));
  (operand.data as Float32Array).set(values);
  return operand;
}

test("max and min propagate NaN and order the zeros; comparisons treat NaN as unordered, in both modes", () => {
  const pool = new OperandPool();
  try {
    const a = f32Operand(pool, [NaN, 1, 0, -0, -0, 3, 2]);
    const b = f32Operand(pool, [1, NaN, -0, 0, -0, 3, 5]);
    for (const settings of [EXACT, FAST]) {
      const out = f32Operand(pool, new Array(7).fill(9));
      nativeKernels.binary(BinaryOp.Max, [7], out, a, b, settings);
      assert.deepEqual([...out.data], [NaN, NaN, 0, 0, -0, 3, 5]);
      nativeKernels.binary(BinaryOp.Min, [7], out, a, b, settings);
      assert.deepEqual([...out.data], [NaN, NaN, -0, -0, -0, 3, 2]);
      const bools = pool.operand("u8", contiguousView([7]));
      nativeKernels.binary(BinaryOp.Eq, [7], bools, a, b, settings);
      assert.deepEqual([...bools.data], [0, 0, 1, 1, 1, 1, 0]);
      nativeKernels.binary(BinaryOp.Ne, [7], bools, a, b, settings);
      assert.deepEqual([...bools.data], [1, 1, 0, 0, 0, 0, 1]);
      nativeKernels.binary(BinaryOp.Ge, [7], bools, a, b, settings);
      assert.deepEqual([...bools.data], [0, 0, 1, 1, 1, 1, 0]);
    }
  } finally {
    pool.release();
  }
});

test("pow follows the C99 special cases in both modes, and relu, abs and sqrt handle zeros and NaN", () => {
  const pool = new OperandPool();
  try {
    const x = f32Operand(pool, [NaN, 1, -1, 0.5, 0.5, -0, -0, -Infinity, -2, -2, 2, 0]);
    const y = f32Operand(pool, [0, NaN, Infinity, Infinity, -Infinity, -3, -2, 3, 0.5, 3, 10, -1]);
    const want = [1, 1, 1, 0, Infinity, -Infinity, Infinity, -Infinity, NaN, -8, 1024, Infinity];
    for (const settings of [EXACT, FAST]) {
      const out = f32Operand(pool, new Array(12).fill(7));
      nativeKernels.binary(BinaryOp.Pow, [12], out, x, y, settings);
      assert.deepEqual([...out.data], want, settings.mode);
    }
    const ref = f32Operand(pool, new Array(12).fill(7));
    referenceKernels.binary(BinaryOp.Pow, [12], ref, x, y, EXACT);
    assert.deepEqual([...ref.data], want);
    const v = f32Operand(pool, [-0, 0, -2, NaN, 4]);
    const out = f32Operand(pool, [9, 9, 9, 9, 9]);
    nativeKernels.unary(UnaryOp.Relu, [5], out, v, FAST);
    assert.deepEqual([...out.data], [0, 0, 0, NaN, 4]);
    nativeKernels.unary(UnaryOp.Sqrt, [5], out, v, FAST);
    assert.deepEqual([...out.data], [-0, 0, NaN, NaN, 2]);
    nativeKernels.unary(UnaryOp.Abs, [5], out, v, EXACT);
    assert.deepEqual([...out.data], [0, 0, 2, NaN, 4]);
  } finally {
    pool.release();
  }
});

test("GeluBackward(g, x) is g·slope(x, t) with the mode's tanh kernel's t: bitwise in both modes", () => {
  const pool = new OperandPool();
  try {
    const rng = new Rng(17);
    const n = 4099;
    const x = f32Operand(
      pool,
      Array.from({ length: n }, (_, i) => [0, -0, 1e20, -1e20, 30, -30][i] ?? rng.uniform(-12, 12)),
    );
    const g = f32Operand(pool, Array.from({ length: n }, () => rng.uniform(-3, 3)));
    const [xs, gs] = [[...x.data as Float32Array], [...g.data as Float32Array]];
    // The tanh of each element's argument by the unary kernel of the same mode.
    const u = f32Operand(pool, xs.map(geluTanhArgument));
    for (const settings of [EXACT, FAST]) {
      const t = f32Operand(pool, new Array(n).fill(7));
      nativeKernels.unary(UnaryOp.Tanh, [n], t, u, settings);
      const out = f32Operand(pool, new Array(n).fill(7));
      nativeKernels.binary(BinaryOp.GeluBackward, [n], out, g, x, settings);
      const want = xs.map((v, i) => Math.fround(gs[i] * geluSlope(v, t.data[i] as number)));
      const tally = newTally();
      compareOutputs(
        tally,
        `GeluBackward ${settings.mode}`,
        [n],
        f32Operand(pool, want),
        out,
        bitwise,
        false,
      );
      assert.deepEqual(tally.failures, [], settings.mode);
    }
  } finally {
    pool.release();
  }
});

test("the reference's erf and gelu match known values, and exact mode follows them", () => {
  // A few f64 ulps from the true values: far below what an f32 result can show.
  assert.ok(Math.abs(erf64(0.5) - 0.5204998778130465) < 1e-15);
  assert.ok(Math.abs(erf64(-2.5) + 0.999593047982555) < 1e-15);
  assert.ok(Math.abs(gelu64(-3) + 0.0036373920817730188) < 1e-17);
  assert.ok(Object.is(gelu64(-Infinity), -0) && gelu64(Infinity) === Infinity);
  const pool = new OperandPool();
  try {
    const x = f32Operand(pool, [0.5, -2.5, -3, -Infinity, Infinity, 1e-40, 4.5]);
    const out = f32Operand(pool, new Array(7).fill(0));
    nativeKernels.unary(UnaryOp.Erf, [7], out, x, EXACT);
    assert.deepEqual(
      [...out.data],
      [
        0.5204998778130465,
        -0.999593047982555,
        -0.9999779095030014,
        -1,
        1,
        Math.fround(1e-40) * 1.1283791670955126,
        1,
      ].map(Math.fround),
    );
    nativeKernels.unary(UnaryOp.Gelu, [7], out, x, EXACT);
    assert.deepEqual([...out.data].slice(2, 5), [Math.fround(-0.0036373920817730188), -0, Infinity]);
  } finally {
    pool.release();
  }
});

test("the erf form of GELU is x·Φ(x) into its tail (0.5·x·erfc(−x/√2) by libm), and exact mode follows it", () => {
  const libm: [number, number][] = [
    [-13, -7.952313719414897e-38],
    [-8, -4.9767684594174555e-15],
    [-5.5, -1.0444259356238256e-7],
    [-3, -0.004049694094890287],
    [-0.7, -0.16937455655615113],
    [2.5, 2.4844758366855597],
  ];
  // Within 2^-26 of the true values: the erf series cancels a little just above s = −4 (x ≈ −5.66).
  for (const [x, want] of libm) {
    assert.ok(Math.abs(geluErf64(x) / want - 1) < 2 ** -26, `${x}: ${geluErf64(x)}`);
  }
  assert.ok(
    Object.is(geluErf64(-Infinity), -0) && geluErf64(Infinity) === Infinity && Number.isNaN(geluErf64(NaN)),
  );
  const pool = new OperandPool();
  try {
    const xs = [...libm.map(([x]) => x), -1e30, -Infinity, Infinity, NaN, -0];
    const x = f32Operand(pool, xs);
    const out = f32Operand(pool, new Array(xs.length).fill(1));
    for (const settings of [EXACT, FAST]) {
      nativeKernels.unary(UnaryOp.GeluErf, [xs.length], out, x, settings);
      libm.forEach(([, want], i) => {
        const got = out.data[i] as number;
        assert.ok(
          Math.abs(got - want) <= FAST_ERROR_BOUNDS.geluErf.ulps * ulp(want),
          `${settings.mode} ${xs[i]}: ${got}`,
        );
      });
      const tail = [...out.data].slice(libm.length);
      assert.ok(Object.is(tail[0], -0) && Object.is(tail[1], -0) && tail[2] === Infinity, `${tail}`);
      assert.ok(Number.isNaN(tail[3]) && Object.is(tail[4], -0));
    }
  } finally {
    pool.release();
  }
});

test("the select kernel (where's) gives the reference's bits for 1-, 2-, 4- and 8-byte elements, any strides", () => {
  const tally = cases(
    1200,
    (pool, tally, i) => selectCase(pool, tally, 900_000 + i, { bytes: [1, 2, 4, 8][i % 4] }),
  );
  assert.deepEqual(tally.failures, []);
  assert.ok(tally.elements > 100_000, `${tally.elements} elements`);
  for (const bytes of [1, 2, 4, 8]) {
    const run = (threads: number) => {
      const pool = new OperandPool();
      try {
        const tally = newTally();
        const out = selectCase(pool, tally, 950 + bytes, { bytes, shape: [5, 65_537], threads });
        assert.deepEqual(tally.failures, []);
        return out;
      } finally {
        pool.release();
      }
    };
    const one = run(1);
    for (const threads of [2, 4]) {
      assert.ok(sameOutputs(one, run(threads)), `${bytes} bytes, ${threads} threads`);
    }
  }
});

test("fast transcendental functions stay within FAST_ERROR_BOUNDS on dense grids", () => {
  const grids: [UnaryOp, keyof typeof FAST_ERROR_BOUNDS, number, number][] = [
    [UnaryOp.Exp, "exp", -104, 89],
    [UnaryOp.Log, "log", 0, 50],
    [UnaryOp.Tanh, "tanh", -10, 10],
    [UnaryOp.Sigmoid, "sigmoid", -105, 105],
    [UnaryOp.Gelu, "gelu", -12, 12],
    [UnaryOp.GeluErf, "geluErf", -12, 12],
    [UnaryOp.Erf, "erf", -4.5, 4.5],
    [UnaryOp.Log1p, "log1p", -0.999, 50],
    [UnaryOp.Expm1, "expm1", -20, 80],
    [UnaryOp.Silu, "silu", -80, 80],
    [UnaryOp.Softplus, "softplus", -80, 30],
    [UnaryOp.Elu, "elu", -20, 5],
  ];
  const n = 1 << 16;
  const pool = new OperandPool();
  try {
    for (const [op, name, lo, hi] of grids) {
      const bound = FAST_ERROR_BOUNDS[name];
      const x = f32Operand(pool, Array.from({ length: n }, (_, i) => lo + (hi - lo) * i / n));
      const fast = f32Operand(pool, new Array(n).fill(0));
      const ref = f32Operand(pool, new Array(n).fill(0));
      nativeKernels.unary(op, [n], fast, x, FAST, [1, 20]);
      referenceKernels.unary(op, [n], ref, x, EXACT, [1, 20]);
      let worst = 0;
      for (let i = 0; i < n; i++) {
        const r = ref.data[i] as number;
        const f = fast.data[i] as number;
        if (r === f) continue;
        const arg = op === UnaryOp.Gelu
          ? Math.abs(2 * 0.7978845608028654 * ((x.data[i] as number) + 0.044715 * (x.data[i] as number) ** 3))
          : 0;
        worst = Math.max(worst, Math.abs(f - r) / ulp(r) / (1 + bound.slope * arg));
      }
      assert.ok(worst <= bound.ulps, `${name}: ${worst} ulps, bound ${bound.ulps}`);
      assert.ok(worst > 0, `${name}: fast mode should not be exact`);
    }
  } finally {
    pool.release();
  }
});

test("a fast transcendental result is the same bits wherever its element sits: vector body, tail, alone or strided", () => {
  // 37 elements: a contiguous row runs them as full-width vectors (16 f32 on AVX-512), then its element-wise
  // vectors, then a gathered tail; one element alone and a row with stride 2 take the gathered path only.
  const n = 37;
  const rng = new Rng(2026);
  const values = Array.from(
    { length: n },
    (_, i) => i === 0 ? -100 : i === 1 ? 1e-3 : (rng.next() - 0.5) * 24,
  );
  const ops = {
    sigmoid: UnaryOp.Sigmoid,
    tanh: UnaryOp.Tanh,
    gelu: UnaryOp.Gelu,
    silu: UnaryOp.Silu,
    exp: UnaryOp.Exp,
    log1p: UnaryOp.Log1p,
  };
  const pool = new OperandPool();
  try {
    const row = f32Operand(pool, values);
    const strided = pool.operand("f32", { offset: 1, strides: [2], elements: 2 * n + 1 });
    values.forEach((v, i) => (strided.data[1 + 2 * i] = v));
    for (const [name, op] of Object.entries(ops)) {
      const whole = f32Operand(pool, new Array(n).fill(0));
      nativeKernels.unary(op, [n], whole, row, FAST, [1, 20]);
      const everyOther = f32Operand(pool, new Array(n).fill(0));
      nativeKernels.unary(op, [n], everyOther, strided, FAST, [1, 20]);
      for (let i = 0; i < n; i++) {
        const one = f32Operand(pool, [values[i]]);
        const alone = f32Operand(pool, [0]);
        nativeKernels.unary(op, [1], alone, one, FAST, [1, 20]);
        assert.ok(Object.is(whole.data[i], alone.data[0]), `${name}(${values[i]}) at ${i}`);
        assert.ok(Object.is(whole.data[i], everyOther.data[i]), `${name} strided at ${i}`);
      }
    }
  } finally {
    pool.release();
  }
});

test("the comparison catches a wrong bit and a write outside the output view", () => {
  const pool = new OperandPool();
  try {
    const view = { offset: 1, strides: [2], elements: 7 };
    const ref = pool.operand("f32", view);
    const nat = pool.twin(ref);
    (nat.data as Float32Array)[3] = Math.fround(1 + 2 ** -23);
    (ref.data as Float32Array)[3] = 1;
    const tally = newTally();
    compareOutputs(tally, "changed bit", [3], ref, nat, bitwise, false);
    assert.equal(tally.failures.length, 1);
    const gap = pool.twin(ref);
    (gap.data as Float32Array)[2] = 5;
    compareOutputs(tally, "gap", [3], ref, gap, bitwise, false);
    assert.match(tally.failures[1], /position 2 outside the view was written/);
    assert.ok(new Rng(1).next() !== new Rng(2).next());
  } finally {
    pool.release();
  }
});

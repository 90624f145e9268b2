import { test } from "node:test";
import assert from "node:assert/strict";
import { nativeKernels } from "../src/kernels/native.ts";
import { referenceKernels } from "../src/kernels/reference.ts";
import { type ComputeSettings, type KernelOperand, ReduceOp, SoftmaxOp } from "../src/kernels/types.ts";
import {
  newTally,
  type Outputs,
  reduceCase,
  sameOutputs,
  softmaxCase,
} from "./helpers/kernels_conformance.ts";
import { contiguousView, fillF32, OperandPool, Rng } from "./helpers/operands.ts";

const EXACT: ComputeSettings = { mode: "exact", threads: 1 };
const FAST: ComputeSettings = { mode: "fast", threads: 1 };

function withPool<T>(run: (pool: OperandPool) => T): T {
  const pool = new OperandPool();
  try {
    return run(pool);
  } finally {
    pool.release();
  }
}

function f32Operand(pool: OperandPool, values: readonly number[]): KernelOperand {
  const operand = pool.operand("f32", contiguousView([values.length]));
  (operand.data as Float32Array).set(values);
  return operand;
}

test("every reduction matches the reference bitwise (fast sums within their reordering bound) over random axes and layouts", () => {
  const tally = newTally();
  withPool((pool) => {
    for (let i = 0; i < 7 * 2 * 40; i++) {
      const op = (i % 7) as ReduceOp;
      const mode = Math.floor(i / 7) % 2 === 0 ? "exact" : "fast";
      reduceCase(pool, tally, 500_000 + i, { op, mode });
      if (i % 32 === 31) pool.release();
    }
  });
  assert.deepEqual(tally.failures, []);
  assert.equal(tally.cases, 560);
  assert.ok(tally.elements > 5_000, `${tally.elements} outputs`);
});

test("softmax and log-softmax match the reference: within 1 ulp in exact mode, within their bounds in fast mode", () => {
  const tally = newTally();
  withPool((pool) => {
    for (let i = 0; i < 2 * 2 * 60; i++) {
      const op = (i % 2) as SoftmaxOp;
      const mode = Math.floor(i / 2) % 2 === 0 ? "exact" : "fast";
      softmaxCase(pool, tally, 600_000 + i, { op, mode });
      if (i % 32 === 31) pool.release();
    }
  });
  assert.deepEqual(tally.failures, []);
  assert.equal(tally.cases, 240);
  assert.ok(tally.offByOne <= tally.elements * 1e-4, `${tally.offByOne} results 1 ulp off`);
});

test("a leading-axis reduction (reduced in vector groups) gives the reference's bits for every op", () => {
  withPool((pool) => {
    const rng = new Rng(5);
    // 300 outputs: several strips of vector groups and a scalar remainder on every ISA.
    const [n, m] = [203, 300];
    const a = pool.operand("f32", contiguousView([n, m]));
    fillF32(rng, a.data as Float32Array, "mixed");
    // Reduce axis 0: the view [m, n] with strides [1, m].
    const view = { ...a, strides: [1, m] };
    for (const op of Object.values(ReduceOp)) {
      for (const settings of [EXACT, FAST, { mode: "exact", threads: 3 } as const]) {
        const type = op === ReduceOp.ArgMax || op === ReduceOp.ArgMin ? "i64" : "f32";
        const ref = pool.operand(type, contiguousView([m]));
        const nat = pool.operand(type, contiguousView([m]));
        referenceKernels.reduce(op, [m, n], 1, ref, view, settings);
        nativeKernels.reduce(op, [m, n], 1, nat, view, settings);
        assert.deepEqual([...nat.data], [...ref.data], `op ${op}`);
      }
    }
  });
});

test("sums accumulate in f64 in order and round once; empty sums are 0 and empty means NaN", () => {
  withPool((pool) => {
    const a = f32Operand(pool, [2 ** 24, 1, 1, 1, -0.5]);
    for (const settings of [EXACT, FAST]) {
      const out = f32Operand(pool, [9]);
      nativeKernels.reduce(ReduceOp.Sum, [5], 1, out, a, settings);
      // f32 steps would stay at 2^24; f64 reaches 2^24 + 2.5, which rounds to 2^24 + 2.
      assert.equal(out.data[0], 2 ** 24 + 2);
      nativeKernels.reduce(ReduceOp.Mean, [5], 1, out, a, settings);
      assert.equal(out.data[0], Math.fround((2 ** 24 + 2.5) / 5));
      const sums = f32Operand(pool, [7, 7, 7]);
      nativeKernels.reduce(
        ReduceOp.Sum,
        [3, 0],
        1,
        { ...sums, strides: [1] },
        { ...a, strides: [0, 1] },
        settings,
      );
      assert.deepEqual([...sums.data], [0, 0, 0]);
      nativeKernels.reduce(
        ReduceOp.Mean,
        [3, 0],
        1,
        { ...sums, strides: [1] },
        { ...a, strides: [0, 1] },
        settings,
      );
      assert.deepEqual([...sums.data], [NaN, NaN, NaN]);
    }
  });
});

test("max, min and argmax keep the first of equal values and report the first NaN", () => {
  withPool((pool) => {
    const values = new Array(70).fill(-1);
    values[10] = -0;
    values[20] = 0;
    const a = f32Operand(pool, values);
    const out = f32Operand(pool, [9]);
    const index = pool.operand("i64", contiguousView([1]));
    nativeKernels.reduce(ReduceOp.Max, [70], 1, out, a, FAST);
    assert.ok(Object.is(out.data[0], -0));
    nativeKernels.reduce(ReduceOp.ArgMax, [70], 1, index, a, FAST);
    assert.equal(index.data[0], 10n);
    (a.data as Float32Array)[40] = NaN;
    (a.data as Float32Array)[50] = NaN;
    (a.data as Float32Array)[60] = 5;
    nativeKernels.reduce(ReduceOp.Min, [70], 1, out, a, EXACT);
    assert.ok(Number.isNaN(out.data[0]));
    nativeKernels.reduce(ReduceOp.ArgMax, [70], 1, index, a, EXACT);
    assert.equal(index.data[0], 40n);
    // Two reduced axes, element (i, j) at 10i + 2j: the NaN at 40 is (4, 0), row-major position 20.
    nativeKernels.reduce(ReduceOp.ArgMax, [7, 5], 2, index, { ...a, strides: [10, 2] }, EXACT);
    assert.equal(index.data[0], 20n);
  });
});

test("fast softmax and log-softmax on long rows (the wide contiguous loops) stay within their bounds", () => {
  const tally = newTally();
  withPool((pool) => {
    for (let i = 0; i < 16; i++) {
      const op = (i % 2) as SoftmaxOp;
      const shape = [[3, 1000], [2, 4099], [1, 50257], [4, 33]][(i >> 1) % 4];
      softmaxCase(pool, tally, 610_000 + i, { op, mode: "fast", shape });
      pool.release();
    }
  });
  assert.deepEqual(tally.failures, []);
  assert.equal(tally.cases, 16);
});

test("softmax follows its f64 definition and a NaN row stays NaN", () => {
  withPool((pool) => {
    const a = f32Operand(pool, [1, 2, 3, -1000, 5, NaN, 0, 1]);
    const out = f32Operand(pool, new Array(8).fill(9));
    nativeKernels.softmax(
      SoftmaxOp.Softmax,
      [2, 4],
      { ...out, strides: [4, 1] },
      { ...a, strides: [4, 1] },
      EXACT,
    );
    const s = Math.exp(-2) + Math.exp(-1) + 1 + Math.exp(-1003);
    assert.deepEqual(
      [...out.data].slice(0, 4),
      [Math.exp(-2) / s, Math.exp(-1) / s, 1 / s, 0].map(Math.fround),
    );
    assert.ok([...out.data].slice(4).every(Number.isNaN));
    nativeKernels.softmax(SoftmaxOp.LogSoftmax, [2, 4], { ...out, strides: [4, 1] }, {
      ...a,
      strides: [4, 1],
    }, FAST);
    assert.ok(Math.abs((out.data[2] as number) + Math.log(s)) < 1e-6);
  });
});

test("exact reductions and softmax are the same bits for 1, 2, 3 and 4 threads on work split across the pool", () => {
  const runs: [string, (threads: number) => Outputs][] = [
    [
      "sum over the last axis",
      (t) =>
        run((p, y) =>
          reduceCase(p, y, 7, { shape: [300, 401], reduced: 1, mode: "exact", op: ReduceOp.Sum, threads: t })
        ),
    ],
    [
      "mean over two axes",
      (t) =>
        run((p, y) =>
          reduceCase(p, y, 8, {
            shape: [64, 33, 65],
            reduced: 2,
            mode: "exact",
            op: ReduceOp.Mean,
            threads: t,
          })
        ),
    ],
    [
      "a full sum over several blocks of 65536, split across the threads",
      (t) =>
        run((p, y) =>
          reduceCase(p, y, 13, {
            shape: [3 * 65536 + 77],
            reduced: 1,
            mode: "exact",
            op: ReduceOp.Sum,
            threads: t,
          })
        ),
    ],
    [
      "means of two outputs over several blocks each",
      (t) =>
        run((p, y) =>
          reduceCase(p, y, 14, {
            shape: [2, 97, 1801],
            reduced: 2,
            mode: "exact",
            op: ReduceOp.Mean,
            threads: t,
          })
        ),
    ],
    [
      "max over the leading axis",
      (t) =>
        run((p, y) =>
          reduceCase(p, y, 9, { shape: [20_000, 9], reduced: 1, mode: "exact", op: ReduceOp.Max, threads: t })
        ),
    ],
    [
      "argmax",
      (t) =>
        run((p, y) =>
          reduceCase(p, y, 10, {
            shape: [1000, 129],
            reduced: 1,
            mode: "exact",
            op: ReduceOp.ArgMax,
            threads: t,
          })
        ),
    ],
    [
      "softmax",
      (t) =>
        run((p, y) =>
          softmaxCase(p, y, 11, { shape: [700, 129], mode: "exact", op: SoftmaxOp.Softmax, threads: t })
        ),
    ],
    [
      "log-softmax",
      (t) =>
        run((p, y) =>
          softmaxCase(p, y, 12, { shape: [33, 3001], mode: "exact", op: SoftmaxOp.LogSoftmax, threads: t })
        ),
    ],
  ];
  for (const [name, go] of runs) {
    const one = go(1);
    assert.ok(one.length > 0);
    for (const threads of [2, 3, 4]) {
      assert.ok(sameOutputs(one, go(threads)), `${name} with ${threads} threads`);
    }
  }
});

function run(kernelCase: (pool: OperandPool, tally: ReturnType<typeof newTally>) => Outputs): Outputs {
  const tally = newTally();
  const out = withPool((pool) => kernelCase(pool, tally));
  assert.deepEqual(tally.failures, []);
  return out;
}

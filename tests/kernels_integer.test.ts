// The integer and Bool kernels against their TypeScript reference, exactly, on random dtypes, shapes and views
// (strided, flipped, broadcast, empty) and thread counts; the native ones run the ISA variant selected at load
// (tests/kernels_isa.test.ts reruns the element-wise suites on every variant the CPU has).
import { test } from "node:test";
import assert from "node:assert/strict";
import { BinaryOp, ReduceOp } from "../src/kernels/types.ts";
import { DType } from "../src/core/dtype.ts";
import { nativeIntegerKernels, referenceIntegerKernels } from "../src/kernels/integer.ts";
import { newTally, type Outputs } from "./helpers/kernels_conformance.ts";
import {
  INTEGER_BINARY_OPS,
  INTEGER_DTYPES,
  INTEGER_REDUCE_OPS,
  integerBinaryCase,
  integerReduceCase,
} from "./helpers/integer_conformance.ts";
import { OperandPool, Rng } from "./helpers/operands.ts";

const BOOL = INTEGER_DTYPES.findIndex((d) => d.dtype === DType.Bool);

/** Runs `run` on a fresh pool for every (op, dtype) pair it accepts, `count` times each. */
function everyPair<Op extends number>(
  opsList: readonly Op[],
  accepts: (op: Op, which: number) => boolean,
  count: number,
  run: (pool: OperandPool, tally: ReturnType<typeof newTally>, rng: Rng, op: Op, which: number) => void,
) {
  const tally = newTally();
  const rng = new Rng(20_260_512);
  let pairs = 0;
  for (const op of opsList) {
    for (let which = 0; which < INTEGER_DTYPES.length; which++) {
      if (!accepts(op, which)) continue;
      pairs++;
      using pool = new OperandPool();
      for (let i = 0; i < count; i++) run(pool, tally, rng, op, which);
    }
  }
  return { tally, pairs };
}

test("every integer and Bool binary op matches the reference exactly on random strided, flipped, broadcast and empty operands", () => {
  const arithmetic = (op: BinaryOp) => op === BinaryOp.Add || op === BinaryOp.Sub || op === BinaryOp.Mul;
  const { tally, pairs } = everyPair(
    INTEGER_BINARY_OPS,
    (op, which) => which !== BOOL || !arithmetic(op),
    12,
    (pool, tally, rng, op, which) => integerBinaryCase(pool, tally, rng, op, which),
  );
  assert.deepEqual(tally.failures, []);
  assert.equal(pairs, 12 * 9 - 3);
  assert.equal(tally.cases, pairs * 12);
  assert.ok(tally.elements > 100_000, `${tally.elements} elements`);
});

test("every integer and Bool reduction matches the reference exactly over any trailing axes", () => {
  const arg = (op: ReduceOp) => op === ReduceOp.ArgMax || op === ReduceOp.ArgMin;
  const { tally, pairs } = everyPair(
    INTEGER_REDUCE_OPS,
    (op, which) => which !== BOOL || !arg(op),
    16,
    (pool, tally, rng, op, which) => integerReduceCase(pool, tally, rng, op, which),
  );
  assert.deepEqual(tally.failures, []);
  assert.equal(pairs, 5 * 9 - 2);
  assert.equal(tally.cases, pairs * 16);
  assert.ok(tally.elements > 5_000, `${tally.elements} elements`);
});

test("integer results are the same for 1, 2, 3 and 4 threads on work split across the pool", () => {
  const runs: [string, (threads: number) => Outputs][] = [];
  const run = (
    name: string,
    body: (pool: OperandPool, tally: ReturnType<typeof newTally>, rng: Rng) => Outputs,
  ) =>
    runs.push([name, (threads) => {
      using pool = new OperandPool();
      const tally = newTally();
      const out = body(pool, tally, new Rng(77));
      assert.deepEqual(tally.failures, [], `${name} with ${threads} threads`);
      return out;
    }]);
  // Streaming binary ops split from 2^18 elements, reductions from 2^16 reduced elements in all.
  for (const which of [3, BOOL]) {
    run(
      `lt of dtype ${which}`,
      (pool, tally, rng) => integerBinaryCase(pool, tally, rng, BinaryOp.Lt, which, { shape: [260, 1031] }),
    );
  }
  run(
    "mul of I32",
    (pool, tally, rng) => integerBinaryCase(pool, tally, rng, BinaryOp.Mul, 2, { shape: [260, 1031] }),
  );
  run(
    "sum of I8",
    (pool, tally, rng) =>
      integerReduceCase(pool, tally, rng, ReduceOp.Sum, 0, { shape: [20_000, 7], reduced: 1 }),
  );
  run(
    "argmax of I16",
    (pool, tally, rng) =>
      integerReduceCase(pool, tally, rng, ReduceOp.ArgMax, 1, { shape: [20_000, 5], reduced: 1 }),
  );
  for (const [name, body] of runs) {
    const one = body(1);
    assert.ok(one.length >= 20_000, name);
    for (const threads of [2, 3, 4]) assert.deepEqual(body(threads), one, `${name} with ${threads} threads`);
  }
});

test("integer arithmetic wraps in two's complement and sums wrap in i64, in both kernel sets", () => {
  for (const kernels of [nativeIntegerKernels, referenceIntegerKernels]) {
    using pool = new OperandPool();
    const settings = { mode: "exact", threads: 1 } as const;
    const view = (type: "i32" | "u8" | "i64" | "u64", values: (number | bigint)[]) => {
      const operand = pool.operand(type, { offset: 0, strides: [1], elements: values.length });
      values.forEach((v, i) => (operand.data as unknown as (number | bigint)[])[i] = v);
      return operand;
    };
    const i32 = view("i32", [2 ** 31 - 1, -(2 ** 31), 46341]);
    const out = view("i32", [0, 0, 0]);
    kernels.binaryInt(BinaryOp.Add, DType.I32, [3], out, i32, view("i32", [1, -1, 46341]), settings);
    assert.deepEqual(
      [...out.data],
      [-(2 ** 31), 2 ** 31 - 1, 92682],
      kernels === nativeIntegerKernels ? "native" : "reference",
    );
    // 46341² = 2147488281 wraps to 2147488281 − 2^32.
    kernels.binaryInt(BinaryOp.Mul, DType.I32, [3], out, i32, i32, settings);
    assert.equal(out.data[2], 46341 * 46341 - 2 ** 32);
    const u8 = view("u8", [250, 3]);
    const u8out = view("u8", [0, 0]);
    kernels.binaryInt(BinaryOp.Sub, DType.U8, [2], u8out, view("u8", [5, 3]), u8, settings);
    assert.deepEqual([...u8out.data], [11, 0]);
    const sum = view("i64", [0n]);
    kernels.reduceInt(
      ReduceOp.Sum,
      DType.U64,
      [2],
      1,
      { ...sum, strides: [] },
      view("u64", [2n ** 64n - 1n, 5n]),
      settings,
    );
    assert.equal(sum.data[0], 4n);
    kernels.reduceInt(
      ReduceOp.Sum,
      DType.I64,
      [2],
      1,
      { ...sum, strides: [] },
      view("i64", [2n ** 63n - 1n, 1n]),
      settings,
    );
    assert.equal(sum.data[0], -(2n ** 63n));
  }
});

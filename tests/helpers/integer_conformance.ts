// Conformance of the native integer and Bool kernels (`zt_binary_int`, `zt_reduce_int`) to the reference ones
// (src/kernels/integer.ts): random dtypes, shapes, strided, flipped and broadcast views, values at the ends of
// each dtype's range and ties, every element compared exactly (integers are exact on every ISA), gaps included.
import { nativeIntegerKernels, referenceIntegerKernels } from "../../src/kernels/integer.ts";
import { BinaryOp, type ComputeSettings, ReduceOp } from "../../src/kernels/types.ts";
import { DType } from "../../src/core/dtype.ts";
import { compareOutputs, type Judge, newTally, type Outputs, type Tally } from "./kernels_conformance.ts";
import { type ElementType, OperandPool, randomShape, randomView, Rng } from "./operands.ts";

/** The integer and Bool dtypes, with the storage element type of each and its range. */
export const INTEGER_DTYPES: readonly { dtype: DType; type: ElementType; bits: number; signed: boolean }[] = [
  { dtype: DType.I8, type: "i8", bits: 8, signed: true },
  { dtype: DType.I16, type: "i16", bits: 16, signed: true },
  { dtype: DType.I32, type: "i32", bits: 32, signed: true },
  { dtype: DType.I64, type: "i64", bits: 64, signed: true },
  { dtype: DType.U8, type: "u8", bits: 8, signed: false },
  { dtype: DType.U16, type: "u16", bits: 16, signed: false },
  { dtype: DType.U32, type: "u32", bits: 32, signed: false },
  { dtype: DType.U64, type: "u64", bits: 64, signed: false },
  { dtype: DType.Bool, type: "u8", bits: 1, signed: false },
];

/** The binary ops of the integer kernel; add, sub and mul are not Bool's. */
export const INTEGER_BINARY_OPS: readonly BinaryOp[] = [
  BinaryOp.Add,
  BinaryOp.Sub,
  BinaryOp.Mul,
  BinaryOp.Eq,
  BinaryOp.Ne,
  BinaryOp.Lt,
  BinaryOp.Le,
  BinaryOp.Gt,
  BinaryOp.Ge,
  BinaryOp.LogicalAnd,
  BinaryOp.LogicalOr,
  BinaryOp.LogicalXor,
];

/** The reductions of the integer kernel; argmax and argmin are not Bool's. */
export const INTEGER_REDUCE_OPS: readonly ReduceOp[] = [
  ReduceOp.Sum,
  ReduceOp.Max,
  ReduceOp.Min,
  ReduceOp.ArgMax,
  ReduceOp.ArgMin,
];

/** Integers compare exactly (the f32 judges would round values above 2^24). */
const exactly: Judge = (r, n) => r === n ? null : "values differ";

/**
 * Fills `data` with values of `bits` bits: the range's ends and its neighbours, 0 and ±1, uniform words, or
 * (for ties) a handful of small values; Bool bytes are any byte, mostly 0 and 1 (any nonzero one reads true).
 */
function fillInteger(rng: Rng, data: ArrayLike<unknown>, bits: number, signed: boolean): void {
  const out = data as unknown as { [i: number]: number | bigint; length: number };
  const big = bits === 64;
  const ties = rng.chance(0.4);
  const low = signed ? -(2n ** BigInt(bits - 1)) : 0n;
  const high = signed ? 2n ** BigInt(bits - 1) - 1n : 2n ** BigInt(bits) - 1n;
  const edges = [low, low + 1n, high, high - 1n, 0n, 1n, signed ? -1n : 2n];
  for (let i = 0; i < out.length; i++) {
    let v: bigint;
    if (bits === 1) v = BigInt(rng.chance(0.05) ? rng.int(256) : rng.int(2));
    else if (ties) v = BigInt(rng.int(5)) - (signed ? 2n : 0n);
    else if (rng.chance(0.2)) v = rng.pick(edges);
    else {
      v = (BigInt(rng.u32()) << 32n) | BigInt(rng.u32());
      v = signed ? BigInt.asIntN(bits, v) : BigInt.asUintN(bits, v);
    }
    out[i] = big ? v : Number(v);
  }
}

function settingsFor(rng: Rng): ComputeSettings {
  return { mode: rng.pick(["fast", "exact"] as const), threads: 1 + rng.int(4) };
}

/** One random binary case of `op` on dtype number `which` of `INTEGER_DTYPES`. */
export function integerBinaryCase(
  pool: OperandPool,
  tally: Tally,
  rng: Rng,
  op: BinaryOp,
  which: number,
  force: { shape?: number[]; threads?: number } = {},
): Outputs {
  const { dtype, type, bits, signed } = INTEGER_DTYPES[which];
  const shape = force.shape ?? randomShape(rng, { allowEmpty: true });
  const settings = { ...settingsFor(rng), ...(force.threads ? { threads: force.threads } : {}) };
  const a = pool.operand(type, randomView(rng, shape, { broadcast: true }));
  const b = pool.operand(type, randomView(rng, shape, { broadcast: true }));
  fillInteger(rng, a.data, bits, signed);
  fillInteger(rng, b.data, bits, signed);
  const bool = op >= BinaryOp.Eq;
  const outRef = pool.operand(bool ? "u8" : type, randomView(rng, shape));
  fillInteger(rng, outRef.data, bool ? 8 : bits, signed);
  const outNat = pool.twin(outRef);
  referenceIntegerKernels.binaryInt(op, dtype, shape, outRef, a, b, settings);
  nativeIntegerKernels.binaryInt(op, dtype, shape, outNat, a, b, settings);
  tally.cases++;
  const label = `binaryInt op ${op} dtype ${dtype} shape [${shape.join(", ")}] ${settings.threads} threads`;
  return compareOutputs(tally, label, shape, outRef, outNat, exactly, true);
}

/** One random reduction case of `op` on dtype number `which` of `INTEGER_DTYPES`. */
export function integerReduceCase(
  pool: OperandPool,
  tally: Tally,
  rng: Rng,
  op: ReduceOp,
  which: number,
  force: { shape?: number[]; reduced?: number; threads?: number } = {},
): Outputs {
  const { dtype, type, bits, signed } = INTEGER_DTYPES[which];
  // Sums, and Bool max and min (any and all), have a value over nothing.
  const empty = op === ReduceOp.Sum || (dtype === DType.Bool && (op === ReduceOp.Max || op === ReduceOp.Min));
  const shape = force.shape ?? randomShape(rng, { allowEmpty: empty });
  const reduced = force.reduced ?? rng.int(shape.length + 1);
  const settings = { ...settingsFor(rng), ...(force.threads ? { threads: force.threads } : {}) };
  const kept = shape.slice(0, shape.length - reduced);
  const a = pool.operand(type, randomView(rng, shape, { broadcast: true }));
  fillInteger(rng, a.data, bits, signed);
  const same = op === ReduceOp.Max || op === ReduceOp.Min;
  const outRef = pool.operand(same ? type : "i64", randomView(rng, kept));
  fillInteger(rng, outRef.data, same ? bits : 64, signed || !same);
  const outNat = pool.twin(outRef);
  referenceIntegerKernels.reduceInt(op, dtype, shape, reduced, outRef, a, settings);
  nativeIntegerKernels.reduceInt(op, dtype, shape, reduced, outNat, a, settings);
  tally.cases++;
  const label = `reduceInt op ${op} dtype ${dtype} shape [${
    shape.join(", ")
  }] (${reduced} axes) ${settings.threads} threads`;
  return compareOutputs(tally, label, kept, outRef, outNat, exactly, true);
}

/**
 * `count` random binary and `count` random reduction cases of the integer kernels, each of a random op and
 * dtype that the kernels take (tests/kernels_isa.test.ts runs them under every variant the host runs).
 */
export function integerConformanceRun(seed: number, count: number): Tally {
  const tally = newTally();
  const rng = new Rng(seed);
  const bool = INTEGER_DTYPES.length - 1;
  using pool = new OperandPool();
  for (let i = 0; i < count; i++) {
    const op = rng.pick(INTEGER_BINARY_OPS);
    integerBinaryCase(pool, tally, rng, op, op >= BinaryOp.Eq ? rng.int(bool + 1) : rng.int(bool));
    const reduction = rng.pick(INTEGER_REDUCE_OPS);
    const arg = reduction === ReduceOp.ArgMax || reduction === ReduceOp.ArgMin;
    integerReduceCase(pool, tally, rng, reduction, arg ? rng.int(bool) : rng.int(bool + 1));
    if (i % 16 === 15) pool.release();
  }
  return tally;
}

import { test } from "node:test";
import assert from "node:assert/strict";
import { ALL_DTYPES, DType, dtypeInfo } from "../src/core/dtype.ts";
import { nativeCast, referenceCast } from "../src/kernels/cast.ts";
import { roundInteger } from "../src/core/cast_rules.ts";
import { firstDifference, sizeOf } from "./helpers/movement_operands.ts";
import { NativeBlock, Rng } from "./helpers/operands.ts";

const PLAIN: readonly DType[] = ALL_DTYPES.filter((d) => !dtypeInfo(d).isQuantized);

const INT_EDGES: readonly bigint[] = [
  0n,
  1n,
  -1n,
  2n,
  7n,
  127n,
  128n,
  -128n,
  -129n,
  255n,
  256n,
  300n,
  32767n,
  32768n,
  -32768n,
  65504n,
  65519n,
  65520n,
  65535n,
  65536n,
  2n ** 24n,
  2n ** 24n + 1n,
  2n ** 24n + 3n,
  2n ** 25n + 2n ** 17n,
  2n ** 25n + 2n ** 17n + 1n,
  2n ** 31n - 1n,
  -(2n ** 31n),
  2n ** 31n,
  2n ** 32n - 1n,
  2n ** 53n + 1n,
  2n ** 63n - 1n,
  -(2n ** 63n),
  2n ** 64n - 1n,
  2n ** 62n + 2n ** 38n,
  -(2n ** 40n) - 12345n,
];

const FLOAT_EDGES: readonly number[] = [
  0,
  -0,
  1,
  -1,
  0.5,
  -0.5,
  0.9999,
  -0.9999,
  1.5,
  2.5,
  -2.5,
  -2.7,
  127.9,
  128,
  255.5,
  256,
  -129,
  32767.5,
  65504,
  65519,
  65520,
  2 ** 24,
  2 ** 24 + 2,
  2 ** 31,
  -(2 ** 31),
  -(2 ** 31) - 1,
  2 ** 32,
  2 ** 32 - 1,
  2 ** 63,
  -(2 ** 63),
  2 ** 64,
  3e38,
  1e300,
  -1e300,
  Infinity,
  -Infinity,
  NaN,
  2 ** -24,
  2 ** -25,
  1e-40,
  1 + 2 ** -11,
  1 + 2 ** -8,
  1 + 2 ** -11 + 2 ** -40,
  4294967295.5,
  -0.25,
];

/** Bit patterns with NaN payloads, signalling NaNs and subnormals, per float width. */
const F32_BITS = [
  0x7fc00000,
  0x7f800001,
  0xffc00001,
  0x7fbfe000,
  0x00000001,
  0x807fffff,
  0x7f7fffff,
  0x3f801000,
];
const F16_BITS = [
  0x0000,
  0x8000,
  0x0001,
  0x03ff,
  0x0400,
  0x3c00,
  0x3c01,
  0x7bff,
  0x7c00,
  0xfc00,
  0x7c01,
  0x7e00,
  0xfe01,
  0x7fff,
  0x5bff,
  0xd800,
];
const BF16_BITS = [
  0x0000,
  0x8000,
  0x0001,
  0x3f80,
  0x3f81,
  0x7f7f,
  0x7f80,
  0xff80,
  0x7f81,
  0x7fc0,
  0xffff,
  0x4f00,
  0xdf00,
  0x5f80,
  0x4b80,
];

/** Fills `count` elements of dtype `dtype` in `block`: edge values first, then random bytes. */
function fillEdges(block: NativeBlock, dtype: DType, count: number, random: Rng): void {
  const bytes = block.bytesView();
  for (let i = 0; i < bytes.length; i++) bytes[i] = random.u32() & 0xff;
  const info = dtypeInfo(dtype);
  switch (info.name) {
    case "F32":
    case "F64": {
      const view = new (info.name === "F32" ? Float32Array : Float64Array)(block.buffer);
      FLOAT_EDGES.forEach((x, i) => (view[i] = x));
      INT_EDGES.forEach((big, i) => (view[FLOAT_EDGES.length + i] = Number(big)));
      const words = new Uint32Array(block.buffer);
      const at = FLOAT_EDGES.length + INT_EDGES.length;
      if (info.name === "F32") F32_BITS.forEach((b, i) => (words[at + i] = b));
      else {
        [[0x7ff00000, 0x20000000], [0xfff80000, 1], [0x7ff7ffff, 0xffffffff], [0, 1], [
          0x3ff00001,
          0x10000000,
        ]]
          .forEach(([hi, lo], i) => {
            words[2 * (at + i) + 1] = hi;
            words[2 * (at + i)] = lo;
          });
      }
      return;
    }
    case "F16":
    case "BF16": {
      const view = new Uint16Array(block.buffer);
      (info.name === "F16" ? F16_BITS : BF16_BITS).forEach((b, i) => (view[i] = b));
      return;
    }
    case "Bool":
      new Uint8Array(block.buffer).set([0, 1, 2, 255, 0, 1], 0);
      for (let i = 6; i < count; i++) bytes[i] = random.below(3) === 0 ? random.u32() & 0xff : i & 1;
      return;
    default: {
      const view = new info.array(block.buffer) as unknown as { [i: number]: number | bigint };
      INT_EDGES.forEach((v, i) => (view[i] = info.isBigInt ? v : Number(BigInt.asIntN(32, v))));
    }
  }
}

/** Runs the native and the reference cast into two blocks and returns the first differing byte (or -1). */
function compareCast(
  dst: DType,
  src: DType,
  source: NativeBlock,
  shape: readonly number[],
  srcLayout: { offset: number; strides: readonly number[] },
  dstStrides: readonly number[],
  threads: number,
): number {
  const to = dtypeInfo(dst);
  const from = dtypeInfo(src);
  const bytes = sizeOf(shape) * to.blockBytes + 64;
  using a = new NativeBlock(bytes);
  using b = new NativeBlock(bytes);
  const s = source.operand(from.array, srcLayout.offset, srcLayout.strides);
  nativeCast(dst, src, shape, a.operand(to.array, 0, dstStrides), s, threads);
  referenceCast(dst, src, shape, b.operand(to.array, 0, dstStrides), s);
  return firstDifference(a.bytesView(), b.bytesView());
}

test("casts between every pair of dtypes match the reference on edge values, contiguous and strided", () => {
  const random = new Rng(99);
  const count = 96;
  let pairs = 0;
  for (const src of PLAIN) {
    using source = new NativeBlock(count * 8);
    fillEdges(source, src, count, random);
    for (const dst of PLAIN) {
      const name = `${DType.name(src)} → ${DType.name(dst)}`;
      assert.equal(compareCast(dst, src, source, [count], { offset: 0, strides: [1] }, [1], 1), -1, name);
      // A reversed, transposed view: [16, 6] reading the source backwards, written column-major.
      const strided = compareCast(dst, src, source, [16, 6], { offset: 95, strides: [-1, -16] }, [1, 16], 2);
      assert.equal(strided, -1, `${name} strided`);
      pairs++;
    }
  }
  assert.equal(pairs, 169);
});

test("large casts take the threaded (and bulk) paths and still match the reference bit for bit", () => {
  const random = new Rng(5);
  const n = 70_001;
  const pairs: [DType, DType][] = [
    [DType.F16, DType.F32],
    [DType.F32, DType.F16],
    [DType.BF16, DType.F32],
    [DType.F32, DType.BF16],
    [DType.F16, DType.F64],
    [DType.I32, DType.F32],
    [DType.U8, DType.F64],
    [DType.BF16, DType.I64],
    [DType.F32, DType.U64],
    [DType.I8, DType.I64],
    [DType.Bool, DType.F16],
  ];
  for (const [dst, src] of pairs) {
    using source = new NativeBlock(n * 8);
    fillEdges(source, src, n, random);
    for (const threads of [1, 4]) {
      const diff = compareCast(dst, src, source, [n], { offset: 0, strides: [1] }, [1], threads);
      assert.equal(diff, -1, `${DType.name(src)} → ${DType.name(dst)} on ${threads} threads`);
    }
    // Two rows, each chunked across threads.
    const diff = compareCast(
      dst,
      src,
      source,
      [2, 35_000],
      { offset: 0, strides: [35_000, 1] },
      [35_000, 1],
      3,
    );
    assert.equal(diff, -1, `${DType.name(src)} → ${DType.name(dst)} in rows`);
  }
});

/** Casts one value natively and by the reference; asserts they agree and returns the result's raw element. */
function castOne(dst: DType, src: DType, write: (view: DataView) => void): number | bigint {
  using source = new NativeBlock(8);
  write(new DataView(source.buffer));
  const to = dtypeInfo(dst);
  using a = new NativeBlock(8);
  using b = new NativeBlock(8);
  const s = source.operand(dtypeInfo(src).array, 0, []);
  nativeCast(dst, src, [], a.operand(to.array, 0, []), s);
  referenceCast(dst, src, [], b.operand(to.array, 0, []), s);
  assert.equal(firstDifference(a.bytesView(), b.bytesView()), -1);
  const view = new DataView(a.buffer);
  switch (to.blockBytes) {
    case 1:
      return to.name === "I8" ? view.getInt8(0) : view.getUint8(0);
    case 2:
      return to.name === "I16" ? view.getInt16(0, true) : view.getUint16(0, true);
    case 4:
      return to.name === "I32" ? view.getInt32(0, true) : view.getUint32(0, true);
    default:
      return to.name === "I64" ? view.getBigInt64(0, true) : view.getBigUint64(0, true);
  }
}

const f32 = (x: number) => (v: DataView) => v.setFloat32(0, x, true);
const f64 = (x: number) => (v: DataView) => v.setFloat64(0, x, true);
const u16 = (x: number) => (v: DataView) => v.setUint16(0, x, true);
const i32 = (x: number) => (v: DataView) => v.setInt32(0, x, true);
const i64 = (x: bigint) => (v: DataView) => v.setBigInt64(0, x, true);
const u64 = (x: bigint) => (v: DataView) => v.setBigUint64(0, x, true);
const u8 = (x: number) => (v: DataView) => v.setUint8(0, x);
const bits32 = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0];

test("the cast rules on values worked out by hand", () => {
  // float → int: truncate toward zero, saturate, NaN → 0.
  assert.equal(castOne(DType.I32, DType.F32, f32(NaN)), 0);
  assert.equal(castOne(DType.I32, DType.F32, f32(-2.7)), -2);
  assert.equal(castOne(DType.I32, DType.F32, f32(3e9)), 2 ** 31 - 1);
  assert.equal(castOne(DType.I32, DType.F64, f64(-1e300)), -(2 ** 31));
  assert.equal(castOne(DType.U8, DType.F32, f32(-0.9)), 0);
  assert.equal(castOne(DType.U8, DType.F32, f32(-7)), 0);
  assert.equal(castOne(DType.U8, DType.F64, f64(255.99)), 255);
  assert.equal(castOne(DType.U64, DType.F32, f32(Infinity)), 2n ** 64n - 1n);
  assert.equal(castOne(DType.I64, DType.F64, f64(-(2 ** 63))), -(2n ** 63n));
  assert.equal(castOne(DType.I64, DType.F64, f64(2 ** 63)), 2n ** 63n - 1n);
  assert.equal(castOne(DType.I16, DType.F16, u16(0x7bff)), 32767); // 65504 saturates
  assert.equal(castOne(DType.I16, DType.BF16, u16(0xc2f7)), -123); // -123.5 truncates
  // int → int wraps modulo 2^bits.
  assert.equal(castOne(DType.U8, DType.I32, i32(300)), 44);
  assert.equal(castOne(DType.I8, DType.I32, i32(200)), -56);
  assert.equal(castOne(DType.U64, DType.I64, i64(-1n)), 2n ** 64n - 1n);
  assert.equal(castOne(DType.I16, DType.U64, u64(2n ** 64n - 1n)), -1);
  assert.equal(castOne(DType.U32, DType.I64, i64(2n ** 40n + 5n)), 5);
  // any → bool is ≠ 0, NaN true; bool → number is 0 or 1.
  assert.equal(castOne(DType.Bool, DType.F32, f32(NaN)), 1);
  assert.equal(castOne(DType.Bool, DType.F32, f32(-0)), 0);
  assert.equal(castOne(DType.Bool, DType.F16, u16(0x0001)), 1);
  assert.equal(castOne(DType.Bool, DType.I64, i64(2n ** 40n)), 1);
  assert.equal(castOne(DType.F32, DType.Bool, u8(7)), bits32(1));
  assert.equal(castOne(DType.I64, DType.Bool, u8(1)), 1n);
  // int → float rounds once to nearest even.
  assert.equal(castOne(DType.F32, DType.I32, i32(16777217)), bits32(16777216));
  assert.equal(castOne(DType.F32, DType.I32, i32(16777219)), bits32(16777220));
  assert.equal(castOne(DType.F32, DType.I64, i64(2n ** 62n + 2n ** 38n)), bits32(2 ** 62)); // a tie: even
  assert.equal(castOne(DType.F32, DType.I64, i64(2n ** 62n + 2n ** 38n + 1n)), bits32(2 ** 62 + 2 ** 39));
  assert.equal(castOne(DType.F16, DType.I32, i32(65519)), 0x7bff);
  assert.equal(castOne(DType.F16, DType.I32, i32(65520)), 0x7c00);
  assert.equal(castOne(DType.F16, DType.I32, i32(2049)), 0x6800); // 2049 ties to 2048
  assert.equal(castOne(DType.F16, DType.I32, i32(2051)), 0x6802); // 2051 ties to 2052
  // 2^25 + 2^17 + 1 rounds once to bf16 (up); through f32 it would tie and go down.
  assert.equal(castOne(DType.BF16, DType.I32, i32(2 ** 25 + 2 ** 17 + 1)), 0x4c01);
  assert.equal(castOne(DType.BF16, DType.I32, i32(2 ** 25 + 2 ** 17)), 0x4c00);
  assert.equal(castOne(DType.BF16, DType.U64, u64(2n ** 64n - 1n)), 0x5f80);
  assert.equal(castOne(DType.F64, DType.U64, u64(2n ** 64n - 1n)), 0x43f0000000000000n); // 2^64
  // float → float: f64 → 16-bit rounds twice, through f32.
  assert.equal(castOne(DType.F16, DType.F64, f64(1 + 2 ** -11 + 2 ** -40)), 0x3c00);
  assert.equal(castOne(DType.F16, DType.F32, f32(1 + 2 ** -11 + 2 ** -20)), 0x3c01);
  assert.equal(castOne(DType.BF16, DType.F16, u16(0x7c01)), 0x7fc0); // NaN through f32 0x7fc02000
  assert.equal(castOne(DType.F16, DType.BF16, u16(0x7f81)), 0x7e08); // NaN through f32 0x7fc10000
  // NaN payloads between f32 and f64: top bits kept, quiet bit set.
  assert.equal(
    castOne(DType.F32, DType.F64, (v) => v.setBigUint64(0, 0x7ff0000020000000n, true)),
    0x7fc00001,
  );
  assert.equal(castOne(DType.F64, DType.F32, (v) => v.setUint32(0, 0xff800001, true)), 0xfff8000020000000n);
});

test("roundInteger rounds to nearest with ties to even at any precision", () => {
  assert.equal(roundInteger(0n, 8), 0);
  assert.equal(roundInteger(-255n, 8), -255);
  assert.equal(roundInteger(257n, 8), 256);
  assert.equal(roundInteger(259n, 8), 260);
  assert.equal(roundInteger(2n ** 64n - 1n, 53), 2 ** 64);
  assert.equal(roundInteger(2n ** 53n + 1n, 53), 2 ** 53);
  assert.equal(roundInteger(2n ** 53n + 3n, 53), 2 ** 53 + 4);
  assert.equal(roundInteger(-(2n ** 53n + 3n), 53), -(2 ** 53 + 4));
});

test("bad arguments never reach native code", () => {
  using block = new NativeBlock(64);
  const op = block.operand(Float32Array, 0, [1]);
  assert.throws(() => nativeCast(DType.F32, DType.Q8_0, [4], op, op), /quantized/);
  assert.throws(
    () => nativeCast(DType.F32, DType.F32, [17], op, block.operand(Float32Array, 0, [1])),
    /reaches elements/,
  );
  assert.throws(() => nativeCast(DType.F32, DType.F32, [2, 2], op, op), /strides for rank 2/);
  assert.throws(() => nativeCast(DType.F32, DType.F32, new Array(9).fill(1), op, op), /rank 9/);
  assert.throws(
    () => nativeCast(DType.F32, DType.F32, [2], block.operand(Float32Array, -1, [1]), op),
    /reaches/,
  );
});

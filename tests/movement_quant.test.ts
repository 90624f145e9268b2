import { test } from "node:test";
import assert from "node:assert/strict";
import { DType } from "../src/core/dtype.ts";
import {
  blockBytes,
  nativeDequantize,
  nativeQuantize,
  type QuantFormat,
  referenceDequantize,
  referenceQuantize,
} from "../src/kernels/quant.ts";
import { nativeCopy, referenceCopy } from "../src/kernels/copy.ts";
import { f16BitsToF32 } from "../src/core/convert.ts";
import { firstDifference } from "./helpers/movement_operands.ts";
import { NativeBlock, Rng } from "./helpers/operands.ts";

/** Quantizes `values` (a multiple of 32) natively and by the reference; asserts equal bytes; returns them. */
function quantizeBoth(format: QuantFormat, values: Float32Array, threads = 1): Uint8Array {
  const blocks = values.length / 32;
  const bytes = blocks * blockBytes(format);
  using src = new NativeBlock(values.byteLength);
  new Float32Array(src.buffer).set(values);
  using a = new NativeBlock(bytes);
  using b = new NativeBlock(bytes);
  nativeQuantize(format, blocks, a.operand(Uint8Array), src.operand(Float32Array), threads);
  referenceQuantize(format, blocks, b.operand(Uint8Array), src.operand(Float32Array));
  const diff = firstDifference(a.bytesView().subarray(0, bytes), b.bytesView().subarray(0, bytes));
  assert.equal(diff, -1, `native and reference quantization differ at byte ${diff}`);
  return a.bytesView().slice(0, bytes);
}

/** Dequantizes natively and by the reference; asserts equal bits; returns the values. */
function dequantizeBoth(format: QuantFormat, blocks: Uint8Array, threads = 1): Float32Array {
  const count = blocks.length / blockBytes(format);
  using src = new NativeBlock(blocks.length);
  src.bytesView().set(blocks);
  using a = new NativeBlock(count * 128);
  using b = new NativeBlock(count * 128);
  nativeDequantize(format, count, a.operand(Float32Array), src.operand(Uint8Array), threads);
  referenceDequantize(format, count, b.operand(Float32Array), src.operand(Uint8Array));
  assert.equal(firstDifference(a.bytesView(), b.bytesView()), -1);
  return new Float32Array(a.buffer).slice(0, count * 32);
}

test("Q8_0: a block worked out by hand (amax 254, so d = 2 and q = round-half-away(x / 2))", () => {
  const x = new Float32Array(32);
  x.set([254, -254, 3, -3, 1, -1, 5, 0.5, 100, -101]);
  const block = quantizeBoth(DType.Q8_0, x);
  const q = new Int8Array(block.buffer, 2, 32);
  assert.deepEqual([block[0], block[1]], [0x00, 0x40]); // d = 2.0 as f16 0x4000, little-endian
  assert.deepEqual([...q.subarray(0, 10)], [127, -127, 2, -2, 1, -1, 3, 0, 50, -51]);
  assert.ok(q.subarray(10).every((v) => v === 0));
  const y = dequantizeBoth(DType.Q8_0, block);
  assert.deepEqual([...y.subarray(0, 10)], [254, -254, 4, -4, 2, -2, 6, 0, 100, -102]);
});

test("Q4_0: blocks worked out by hand (d = max / -8, q = min(15, trunc(x / d + 8.5)), nibbles low then high)", () => {
  // The value of largest magnitude is -16, the first of ±16: d = 2.
  const x = new Float32Array(64);
  x.set([-16, 16, 3]);
  x.set([-3, 1], 16);
  // Second block: the largest magnitude is +8, so d = -1 and the scale stores -1.
  x.set([8, -8, 3, -2.4, 0], 32);
  x.set([7.9], 48);
  const blocks = quantizeBoth(DType.Q4_0, x);
  assert.deepEqual([...blocks.subarray(0, 6)], [
    0x00,
    0x40,
    0 | 7 << 4,
    15 | 9 << 4,
    10 | 8 << 4,
    8 | 8 << 4,
  ]);
  // -8·(-1) + 8.5 = 16.5 → 16 → clamped to 15; 3·(-1) + 8.5 = 5.5 → 5; 2.4 + 8.5 = 10.9 → 10; 7.9 → 0.6 → 0.
  assert.deepEqual([...blocks.subarray(18, 24)], [
    0x00,
    0xbc,
    0 | 0 << 4,
    15 | 8 << 4,
    5 | 8 << 4,
    10 | 8 << 4,
  ]);
  const y = dequantizeBoth(DType.Q4_0, blocks);
  assert.deepEqual([...y.subarray(0, 3)], [-16, 14, 4]);
  assert.deepEqual([...y.subarray(16, 18)], [-2, 2]);
  assert.deepEqual([...y.subarray(32, 37)], [8, -7, 3, -2, -0]); // (8 - 8) · (-1) is -0
  assert.equal(y[48], 8);
});

test("all-zero and non-finite blocks follow GGML (d = +0 for Q8_0, -0 for Q4_0) and the cast rule for NaN", () => {
  const x = new Float32Array(32);
  assert.ok(quantizeBoth(DType.Q8_0, x).every((b) => b === 0));
  const q4 = quantizeBoth(DType.Q4_0, x);
  assert.deepEqual([q4[0], q4[1], q4[2]], [0x00, 0x80, 0x88]);
  x[3] = NaN;
  x[4] = Infinity;
  const q8 = quantizeBoth(DType.Q8_0, x);
  assert.deepEqual([q8[0], q8[1]], [0x00, 0x7c]); // d = +inf (as f16)
  quantizeBoth(DType.Q4_0, x);
});

test("random blocks: native and reference agree on bytes and dequantized bits, threaded and at offsets", () => {
  const random = new Rng(40);
  const blocks = 5000;
  const values = new Float32Array(blocks * 32);
  for (let b = 0; b < blocks; b++) {
    const scale = 2 ** (random.below(40) - 20);
    for (let j = 0; j < 32; j++) {
      values[b * 32 + j] = random.below(50) === 0 ? 0 : ((random.u32() / 2 ** 32) - 0.5) * scale;
    }
    if (b % 97 === 0) values[b * 32 + random.below(32)] = -values[b * 32]; // ties of magnitude
  }
  for (const format of [DType.Q4_0, DType.Q8_0] as const) {
    for (const threads of [1, 4]) {
      const q = quantizeBoth(format, values, threads);
      const y = dequantizeBoth(format, q, threads);
      // The round trip stays within half a step (Q8_0) or one step (Q4_0, whose largest element of the
      // other sign clamps) of d, plus what rounding d to f16 costs; checked where d is a normal f16.
      const bound = format === DType.Q8_0 ? 0.57 : 1.01;
      let checked = 0;
      for (let b = 0; b < blocks; b++) {
        const d = Math.abs(f16BitsToF32(new DataView(q.buffer).getUint16(b * blockBytes(format), true)));
        if (d < 2 ** -14) continue;
        checked++;
        for (let j = b * 32; j < b * 32 + 32; j++) {
          if (!(Math.abs(values[j] - y[j]) <= bound * d)) {
            assert.fail(`block ${b}: ${values[j]} came back as ${y[j]}, d ${d}`);
          }
        }
      }
      assert.ok(checked > blocks / 2);
    }
  }
  // Offsets: quantize blocks 3..9 of the values into blocks 1..7 of the output.
  using src = new NativeBlock(values.byteLength);
  new Float32Array(src.buffer).set(values);
  using a = new NativeBlock(10 * 34);
  using b = new NativeBlock(10 * 34);
  nativeQuantize(DType.Q8_0, 7, a.operand(Uint8Array, 1), src.operand(Float32Array, 96));
  referenceQuantize(DType.Q8_0, 7, b.operand(Uint8Array, 1), src.operand(Float32Array, 96));
  assert.equal(firstDifference(a.bytesView(), b.bytesView()), -1);
  assert.ok(a.bytesView().subarray(0, 34).every((v) => v === 0));
});

test("quantized data copies row by row with the block as the element", () => {
  const random = new Rng(8);
  for (const format of [DType.Q4_0, DType.Q8_0] as const) {
    const size = blockBytes(format);
    // A [6, 4-block] source; copy rows 5, 3, 1 (reversed, every other row) into a contiguous [3, 4] target.
    using src = new NativeBlock(24 * size);
    const s = src.bytesView();
    for (let i = 0; i < s.length; i++) s[i] = random.u32() & 0xff;
    using a = new NativeBlock(12 * size);
    using b = new NativeBlock(12 * size);
    const source = src.operand(Uint8Array, 20, [-8, 1]);
    nativeCopy(size, [3, 4], a.operand(Uint8Array, 0, [4, 1]), source);
    referenceCopy(size, [3, 4], b.operand(Uint8Array, 0, [4, 1]), source);
    assert.equal(firstDifference(a.bytesView(), b.bytesView()), -1);
    assert.deepEqual(a.bytesView().subarray(0, 4 * size), s.subarray(20 * size, 24 * size));
  }
});

test("bad arguments never reach native code", () => {
  using block = new NativeBlock(64);
  assert.throws(
    () => nativeQuantize(DType.Q8_0, 2, block.operand(Uint8Array), block.operand(Float32Array)),
    /needs/,
  );
  assert.throws(
    () => nativeQuantize(DType.F32 as QuantFormat, 1, block.operand(Uint8Array), block.operand(Float32Array)),
    /not a quantized format/,
  );
  assert.throws(
    () => nativeDequantize(DType.Q4_0, 1.5, block.operand(Float32Array), block.operand(Uint8Array)),
    /block count/,
  );
});

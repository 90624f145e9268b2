/**
 * GGML's Q8_0 and Q4_0 blocks: 32 consecutive elements of a row with one f16 scale `d` (little-endian, the
 * block's first two bytes). Q8_0 (34 bytes): then 32 signed bytes, x ≈ d·q. Q4_0 (18 bytes): then 16
 * bytes, byte j holding element j in its low nibble and element j + 16 in its high nibble, x ≈ d·(q − 8).
 *
 * Quantization follows GGML's reference functions operation for operation in f32:
 * - Q8_0: amax = max |x| (C's `MAX` macro), d = amax / 127, id = 1/d (0 when d is 0),
 *   q = round-half-away-from-zero(x · id);
 * - Q4_0: max = the value of largest magnitude (the first wins), d = max / −8, id = 1/d (0 when d is 0),
 *   q = min(15, trunc(x · id + 8.5)).
 * The stored scale is d rounded to f16 (nearest even); q uses the f32 d, as in GGML. Where C leaves the
 * integer conversion undefined (NaN inputs) the cast rule applies: NaN → 0, out of range saturates.
 * Dequantization is one f32 multiply per element.
 *
 * Native calls (`zt_quantize`, `zt_dequantize`) take contiguous f32 values and contiguous blocks; offsets
 * count f32 elements on the value side and blocks on the block side. Copies of quantized data go through
 * `nativeCopy` with the block as the element (18 or 34 bytes), row by row.
 *
 * @module
 */
import { DType } from "../core/dtype.ts";
import { DTypeError } from "../core/errors.ts";
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { KernelOperand, SpanOperand } from "./types.ts";
import { f16BitsToF32, f32ToF16Bits } from "../core/convert.ts";
import { capacityOf } from "./copy.ts";

/** A quantized block format: `DType.Q4_0` or `DType.Q8_0`. */
export type QuantFormat = typeof DType.Q4_0 | typeof DType.Q8_0;

/**
 * Elements per block of both formats.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BLOCK_ELEMENTS } from "./quant.ts";
 * assert.ok(BLOCK_ELEMENTS === 32);
 * ```
 */
export const BLOCK_ELEMENTS = 32;

/**
 * Bytes per block of a format.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { blockBytes } from "./quant.ts";
 * import { DType } from "../core/dtype.ts";
 * assert.ok(blockBytes(DType.Q4_0) === 18 && blockBytes(DType.Q8_0) === 34);
 * ```
 */
export function blockBytes(format: QuantFormat): number {
  if (format === DType.Q4_0) return 18;
  if (format === DType.Q8_0) return 34;
  throw new DTypeError(
    "quantize",
    `${String(format)} is not a quantized format; use DType.Q4_0 or DType.Q8_0`,
  );
}

function assertBlocks(
  op: string,
  format: QuantFormat,
  blocks: number,
  blockSide: Pick<KernelOperand, "data" | "offset" | "byteLength">,
  valueSide: Pick<KernelOperand, "data" | "offset" | "byteLength">,
): void {
  const bytes = blockBytes(format);
  if (!Number.isInteger(blocks) || blocks < 0 || blocks * BLOCK_ELEMENTS > 2 ** 31 - 1) {
    throw new RangeError(`${op}: the block count must be an integer from 0 to 2^26, got ${blocks}`);
  }
  const check = (name: string, offset: number, needed: number, capacity: number) => {
    if (!Number.isInteger(offset) || offset < 0 || offset > 2 ** 31 - 1 || offset + needed > capacity) {
      throw new RangeError(
        `${op}: the ${name} needs ${needed} units from ${offset}, its storage holds ${capacity}`,
      );
    }
  };
  check("blocks", blockSide.offset, blocks, capacityOf(blockSide, bytes));
  check("values", valueSide.offset, blocks * BLOCK_ELEMENTS, capacityOf(valueSide, 4));
}

/**
 * Quantizes `blocks` blocks of contiguous f32 values (`src`, offset in elements) into `dst` (offset in
 * blocks), natively, on up to `threads` threads.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeQuantize } from "./quant.ts";
 * import { DType } from "../core/dtype.ts";
 * import { ffi } from "../native/runtime.ts";
 * const values = new Float32Array(32).fill(1);
 * const block = new Uint8Array(34);
 * nativeQuantize(DType.Q8_0, 1, { pointer: ffi.pointerOf(block), data: block, offset: 0 },
 *   { pointer: ffi.pointerOf(values), data: values, offset: 0 });
 * assert.ok(block[0] === 0x08 && block[1] === 0x20 && block[2] === 127);   // d = 1/127 as f16 0x2008
 * ```
 */
export function nativeQuantize(
  format: QuantFormat,
  blocks: number,
  dst: SpanOperand,
  src: SpanOperand,
  threads = 1,
): void {
  assertBlocks("quantize", format, blocks, dst, src);
  args.shape([]).operand(0, dst.offset, []).operand(1, src.offset, []).op(0, 0, Math.max(1, threads | 0))
    .int(0, format).int(1, blocks);
  native.zt_quantize(args.pointer, dst.pointer, src.pointer);
}

/**
 * Dequantizes `blocks` blocks (`src`, offset in blocks) into contiguous f32 values (`dst`, offset in
 * elements), natively, on up to `threads` threads.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeDequantize } from "./quant.ts";
 * import { DType } from "../core/dtype.ts";
 * import { ffi } from "../native/runtime.ts";
 * const block = new Uint8Array(18);
 * block[1] = 0x40;                  // d = 2 (f16 0x4000)
 * block[2] = 0x9f;                  // element 0: q = 15 → 14, element 16: q = 9 → 2
 * const values = new Float32Array(32);
 * nativeDequantize(DType.Q4_0, 1, { pointer: ffi.pointerOf(values), data: values, offset: 0 },
 *   { pointer: ffi.pointerOf(block), data: block, offset: 0 });
 * assert.ok(values[0] === 14 && values[16] === 2 && values[1] === -16);
 * ```
 */
export function nativeDequantize(
  format: QuantFormat,
  blocks: number,
  dst: SpanOperand,
  src: SpanOperand,
  threads = 1,
): void {
  assertBlocks("dequantize", format, blocks, src, dst);
  args.shape([]).operand(0, dst.offset, []).operand(1, src.offset, []).op(0, 0, Math.max(1, threads | 0))
    .int(0, format).int(1, blocks);
  native.zt_dequantize(args.pointer, dst.pointer, src.pointer);
}

function f32View(operand: Pick<KernelOperand, "data">): Float32Array {
  const { buffer, byteOffset, byteLength } = operand.data;
  return new Float32Array(buffer, byteOffset, byteLength >>> 2);
}

function byteView(operand: Pick<KernelOperand, "data">): Uint8Array {
  const { buffer, byteOffset, byteLength } = operand.data;
  return new Uint8Array(buffer, byteOffset, byteLength);
}

/** Round half away from zero (C's `roundf`). */
function roundHalfAway(x: number): number {
  return Math.sign(x) * Math.floor(Math.abs(x) + 0.5);
}

/** The cast rule to a signed byte: truncate, saturate, NaN → 0. */
function toI8(x: number): number {
  if (Number.isNaN(x)) return 0;
  return Math.max(-128, Math.min(127, Math.trunc(x)));
}

function quantizeQ8(x: Float32Array, at: number, out: Uint8Array, to: number): void {
  let amax = 0;
  for (let j = 0; j < 32; j++) {
    const a = Math.abs(x[at + j]);
    amax = amax > a ? amax : a;
  }
  const d = Math.fround(amax / 127);
  const id = d !== 0 ? Math.fround(1 / d) : 0;
  const h = f32ToF16Bits(d);
  out[to] = h & 0xff;
  out[to + 1] = h >>> 8;
  for (let j = 0; j < 32; j++) out[to + 2 + j] = toI8(roundHalfAway(Math.fround(x[at + j] * id))) & 0xff;
}

function quantizeQ4(x: Float32Array, at: number, out: Uint8Array, to: number): void {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < 32; j++) {
    const v = x[at + j];
    if (amax < Math.abs(v)) {
      amax = Math.abs(v);
      max = v;
    }
  }
  const d = Math.fround(max / -8);
  const id = d !== 0 ? Math.fround(1 / d) : 0;
  const h = f32ToF16Bits(d);
  out[to] = h & 0xff;
  out[to + 1] = h >>> 8;
  const nibble = (v: number) => Math.min(15, toI8(Math.fround(Math.fround(v * id) + 8.5)));
  for (let j = 0; j < 16; j++) {
    out[to + 2 + j] = (nibble(x[at + j]) & 0xf) | ((nibble(x[at + j + 16]) & 0xf) << 4);
  }
}

/**
 * The reference quantization (plain TypeScript, GGML's formulas as above); same operands as
 * `nativeQuantize`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceQuantize } from "./quant.ts";
 * import { DType } from "../core/dtype.ts";
 * import type { KernelOperand } from "./types.ts";
 * const values = new Float32Array(32);
 * values[0] = -16;                  // the largest magnitude: d = -16 / -8 = 2
 * values[16] = 3;                   // q = trunc(3 / 2 + 8.5) = 10
 * const block = new Uint8Array(18);
 * const operand = (data: ArrayBufferView) => ({ data, offset: 0 }) as unknown as KernelOperand;
 * referenceQuantize(DType.Q4_0, 1, operand(block), operand(values));
 * assert.ok(block[1] === 0x40 && block[2] === (0 | 10 << 4));
 * ```
 */
export function referenceQuantize(
  format: QuantFormat,
  blocks: number,
  dst: Pick<KernelOperand, "data" | "offset">,
  src: Pick<KernelOperand, "data" | "offset">,
): void {
  assertBlocks("quantize", format, blocks, dst, src);
  const bytes = blockBytes(format);
  const x = f32View(src);
  const out = byteView(dst);
  for (let i = 0; i < blocks; i++) {
    const at = src.offset + i * BLOCK_ELEMENTS;
    const to = (dst.offset + i) * bytes;
    if (format === DType.Q8_0) quantizeQ8(x, at, out, to);
    else quantizeQ4(x, at, out, to);
  }
}

/**
 * The reference dequantization: x = d·q (Q8_0) or d·(q − 8) (Q4_0), one f32 multiply each.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceDequantize } from "./quant.ts";
 * import { DType } from "../core/dtype.ts";
 * import type { KernelOperand } from "./types.ts";
 * const block = new Uint8Array(34);
 * block[1] = 0x38;                  // d = 0.5 (f16 0x3800)
 * block[2] = 0xfd;                  // q = -3
 * const values = new Float32Array(32);
 * const operand = (data: ArrayBufferView) => ({ data, offset: 0 }) as unknown as KernelOperand;
 * referenceDequantize(DType.Q8_0, 1, operand(values), operand(block));
 * assert.ok(values[0] === -1.5 && values[1] === 0);
 * ```
 */
export function referenceDequantize(
  format: QuantFormat,
  blocks: number,
  dst: Pick<KernelOperand, "data" | "offset">,
  src: Pick<KernelOperand, "data" | "offset">,
): void {
  assertBlocks("dequantize", format, blocks, src, dst);
  const bytes = blockBytes(format);
  const y = f32View(dst);
  const input = byteView(src);
  for (let i = 0; i < blocks; i++) {
    const from = (src.offset + i) * bytes;
    const at = dst.offset + i * BLOCK_ELEMENTS;
    const d = f16BitsToF32(input[from] | (input[from + 1] << 8));
    for (let j = 0; j < 16; j++) {
      if (format === DType.Q8_0) {
        y[at + j] = Math.fround(((input[from + 2 + j] << 24) >> 24) * d);
        y[at + j + 16] = Math.fround(((input[from + 18 + j] << 24) >> 24) * d);
      } else {
        const q = input[from + 2 + j];
        y[at + j] = Math.fround(((q & 0xf) - 8) * d);
        y[at + j + 16] = Math.fround(((q >>> 4) - 8) * d);
      }
    }
  }
}

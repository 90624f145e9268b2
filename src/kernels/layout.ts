/**
 * The blocked image layout NchwC(B) (spec 000 §5): storage `[N][ceil(C/B)][H][W][B]`, channel c at block
 * c / B and lane c % B, lanes past C in the last block zero, B from 1 to 256. Conversions are pure data
 * movement: `nativeToBlocked` / `nativeFromBlocked` run `zt_to_blocked` / `zt_from_blocked` (strided copies
 * of the full blocks, the live lanes of the last block and a zero fill of its dead lanes); the logical side
 * may have any strides (NCHW, NHWC or a view), the blocked side is always its dense physical span, so a
 * blocked tensor converts straight to NHWC (or any view) in one call. `Tensor.toLayout` calls them through
 * the kernel seam.
 *
 * @module
 */
import { TensorShapeError } from "../core/errors.ts";
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { KernelOperand, SpanOperand } from "./types.ts";
import { assertOperand, capacityOf, rawView } from "./copy.ts";

/**
 * The largest block size B of NchwC(B).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MAX_BLOCK_SIZE } from "./layout.ts";
 * assert.ok(MAX_BLOCK_SIZE === 256);
 * ```
 */
export const MAX_BLOCK_SIZE = 256;

/**
 * The physical extents `[N, ceil(C/B), H, W, B]` of an NchwC(B) tensor of logical shape `[N, C, H, W]`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { blockedShape } from "./layout.ts";
 * assert.ok(blockedShape([2, 5, 3, 4], 4).join() === "2,2,3,4,4");
 * ```
 */
export function blockedShape(shape: readonly number[], blockSize: number): number[] {
  const [n, c, h, w] = shape;
  return [n, Math.ceil(c / blockSize), h, w, blockSize];
}

function assertLayout(
  op: string,
  shape: readonly number[],
  blockSize: number,
  elementBytes: number,
  logical: KernelOperand,
  blocked: SpanOperand,
): void {
  if (shape.length !== 4 || !shape.every((e) => Number.isInteger(e) && e >= 0 && e <= 2 ** 31 - 1)) {
    throw new TensorShapeError(
      op,
      `a layout conversion needs a logical [N, C, H, W] shape, got [${shape.join(", ")}]`,
      [shape],
    );
  }
  if (!Number.isInteger(blockSize) || blockSize < 1 || blockSize > MAX_BLOCK_SIZE) {
    throw new RangeError(
      `${op}: the block size must be an integer from 1 to ${MAX_BLOCK_SIZE}, got ${blockSize}`,
    );
  }
  if (![1, 2, 4, 8].includes(elementBytes)) {
    throw new RangeError(`${op}: blocked layouts hold elements of 1, 2, 4 or 8 bytes, got ${elementBytes}`);
  }
  assertOperand(op, "the logical tensor", shape, logical, capacityOf(logical, elementBytes));
  const physical = blockedShape(shape, blockSize).reduce((a, b) => a * b, 1);
  const capacity = capacityOf(blocked, elementBytes);
  if (
    physical > 2 ** 31 - 1 || !Number.isInteger(blocked.offset) || blocked.offset < 0 ||
    blocked.offset + physical > capacity
  ) {
    throw new RangeError(
      `${op}: the blocked span of ${physical} elements from ${blocked.offset} does not fit a storage of ${capacity}`,
    );
  }
}

function setArgs(shape: readonly number[], blockSize: number, elementBytes: number, threads: number) {
  return args.shape(shape).op(0, 0, Math.max(1, threads | 0)).int(0, blockSize).int(1, elementBytes);
}

/**
 * Writes the logical NCHW tensor `src` (any strides) into the blocked span at `dst`, natively.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeToBlocked } from "./layout.ts";
 * import { ffi } from "../native/runtime.ts";
 * const nchw = new Float32Array([1, 2, 3, 4, 5, 6]);          // N=1, C=3, H=1, W=2
 * const blocked = new Float32Array(8).fill(-1);               // B=2: 2 blocks × 2 pixels × 2 lanes
 * nativeToBlocked([1, 3, 1, 2], 2, 4, { pointer: ffi.pointerOf(blocked), data: blocked, offset: 0 },
 *   { pointer: ffi.pointerOf(nchw), data: nchw, offset: 0, strides: [6, 2, 2, 1] });
 * assert.ok(blocked.join() === "1,3,2,4,5,0,6,0");
 * ```
 */
export function nativeToBlocked(
  shape: readonly number[],
  blockSize: number,
  elementBytes: number,
  dst: SpanOperand,
  src: KernelOperand,
  threads = 1,
): void {
  assertLayout("toLayout", shape, blockSize, elementBytes, src, dst);
  setArgs(shape, blockSize, elementBytes, threads).operand(0, dst.offset, []).operand(
    1,
    src.offset,
    src.strides,
  );
  native.zt_to_blocked(args.pointer, dst.pointer, src.pointer);
}

/**
 * Writes the blocked span at `src` into the logical NCHW tensor `dst` (any strides without overlap), natively.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeFromBlocked } from "./layout.ts";
 * import { ffi } from "../native/runtime.ts";
 * const blocked = new Float32Array([1, 3, 2, 4, 5, 0, 6, 0]);
 * const nhwc = new Float32Array(6);                           // written as NHWC: strides (6, 1, 6, 3)
 * nativeFromBlocked([1, 3, 1, 2], 2, 4, { pointer: ffi.pointerOf(nhwc), data: nhwc, offset: 0, strides: [6, 1, 6, 3] },
 *   { pointer: ffi.pointerOf(blocked), data: blocked, offset: 0 });
 * assert.ok(nhwc.join() === "1,3,5,2,4,6");
 * ```
 */
export function nativeFromBlocked(
  shape: readonly number[],
  blockSize: number,
  elementBytes: number,
  dst: KernelOperand,
  src: SpanOperand,
  threads = 1,
): void {
  assertLayout("toLayout", shape, blockSize, elementBytes, dst, src);
  setArgs(shape, blockSize, elementBytes, threads).operand(0, dst.offset, dst.strides).operand(
    1,
    src.offset,
    [],
  );
  native.zt_from_blocked(args.pointer, dst.pointer, src.pointer);
}

/** Calls `visit(blockedIndex, channel)` for every physical element, channel ≥ C for dead lanes. */
function forEachBlocked(
  shape: readonly number[],
  blockSize: number,
  visit: (blockedIndex: number, n: number, c: number, h: number, w: number) => void,
): void {
  const [n, , h, w] = shape;
  const blocks = blockedShape(shape, blockSize)[1];
  let at = 0;
  for (let i = 0; i < n; i++) {
    for (let cb = 0; cb < blocks; cb++) {
      for (let y = 0; y < h; y++) {
        for (let x = 0; x < w; x++) {
          for (let lane = 0; lane < blockSize; lane++) visit(at++, i, cb * blockSize + lane, y, x);
        }
      }
    }
  }
}

function units(elementBytes: number): [1 | 2 | 4, number] {
  const unit: 1 | 2 | 4 = elementBytes % 4 === 0 ? 4 : elementBytes % 2 === 0 ? 2 : 1;
  return [unit, elementBytes / unit];
}

/**
 * The reference of `nativeToBlocked` in plain TypeScript (raw bytes, index by index).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceToBlocked } from "./layout.ts";
 * import type { SpanOperand, KernelOperand } from "./types.ts";
 * const nchw = new Uint8Array([1, 2, 3]);                     // N=1, C=3, H=W=1
 * const blocked = new Uint8Array(4).fill(9);
 * const operand = (data: Uint8Array, strides: number[]) => ({ data, offset: 0, strides }) as unknown as KernelOperand;
 * referenceToBlocked([1, 3, 1, 1], 4, 1, operand(blocked, []), operand(nchw, [3, 1, 1, 1]));
 * assert.ok(blocked.join() === "1,2,3,0");
 * ```
 */
export function referenceToBlocked(
  shape: readonly number[],
  blockSize: number,
  elementBytes: number,
  dst: SpanOperand,
  src: KernelOperand,
): void {
  assertLayout("toLayout", shape, blockSize, elementBytes, src, dst);
  const [unit, count] = units(elementBytes);
  const out = rawView(dst as KernelOperand, unit);
  const input = rawView(src, unit);
  const channels = shape[1];
  const s = src.strides;
  forEachBlocked(shape, blockSize, (at, n, c, h, w) => {
    const d = (dst.offset + at) * count;
    const from = (src.offset + n * s[0] + c * s[1] + h * s[2] + w * s[3]) * count;
    for (let u = 0; u < count; u++) out[d + u] = c < channels ? input[from + u] : 0;
  });
}

/**
 * The reference of `nativeFromBlocked` in plain TypeScript.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceFromBlocked } from "./layout.ts";
 * import type { SpanOperand, KernelOperand } from "./types.ts";
 * const blocked = new Uint8Array([1, 2, 3, 0]);
 * const nchw = new Uint8Array(3);
 * const operand = (data: Uint8Array, strides: number[]) => ({ data, offset: 0, strides }) as unknown as KernelOperand;
 * referenceFromBlocked([1, 3, 1, 1], 4, 1, operand(nchw, [3, 1, 1, 1]), operand(blocked, []));
 * assert.ok(nchw.join() === "1,2,3");
 * ```
 */
export function referenceFromBlocked(
  shape: readonly number[],
  blockSize: number,
  elementBytes: number,
  dst: KernelOperand,
  src: SpanOperand,
): void {
  assertLayout("toLayout", shape, blockSize, elementBytes, dst, src);
  const [unit, count] = units(elementBytes);
  const out = rawView(dst, unit);
  const input = rawView(src as KernelOperand, unit);
  const channels = shape[1];
  const s = dst.strides;
  forEachBlocked(shape, blockSize, (at, n, c, h, w) => {
    if (c >= channels) return;
    const to = (dst.offset + n * s[0] + c * s[1] + h * s[2] + w * s[3]) * count;
    for (let u = 0; u < count; u++) out[to + u] = input[(src.offset + at) * count + u];
  });
}

/**
 * Strided copy: the native call (`zt_copy`: axis coalescing, memcpy rows, broadcast fills, tiled strided
 * blocks, threads from 2^16 elements) and a plain TypeScript reference that copies element by element at
 * `offset + Σ index·stride`. Elements are moved as raw bytes, so NaN payloads and every dtype survive.
 *
 * The caller (the tensor layer) validates shapes and views; these functions still assert what the native
 * side needs so that no bad call reaches it: rank ≤ 8, one stride per axis, 32-bit integers, and every
 * reachable element inside each operand's storage. Overlapping destination and source elements are not
 * supported (copy through a temporary).
 *
 * @module
 */
import { args, MAX_RANK } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { KernelOperand } from "./types.ts";

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

function isInt32(x: number): boolean {
  return Number.isInteger(x) && x >= INT32_MIN && x <= INT32_MAX;
}

/**
 * Number of elements of `shape`, after asserting rank ≤ 8 and non-negative 32-bit extents.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assertShape } from "./copy.ts";
 * assert.ok(assertShape("copy", [2, 3, 0]) === 0 && assertShape("copy", []) === 1);
 * ```
 */
export function assertShape(op: string, shape: readonly number[]): number {
  if (shape.length > MAX_RANK) {
    throw new RangeError(`${op}: rank ${shape.length} exceeds the native limit of ${MAX_RANK}`);
  }
  let count = 1;
  for (const extent of shape) {
    if (!isInt32(extent) || extent < 0) {
      throw new RangeError(`${op}: extents must be non-negative 32-bit integers, got [${shape.join(", ")}]`);
    }
    count *= extent;
  }
  return count;
}

/**
 * Asserts that `operand` fits `shape`: one 32-bit stride per axis, a 32-bit offset, and (for a non-empty
 * shape) every reachable element inside its storage, which holds `capacity` elements.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assertOperand } from "./copy.ts";
 * assertOperand("copy", "the source", [2, 3], { offset: 2, strides: [-1, 2] }, 7);   // reaches 1 to 6
 * let threw = false;
 * try {
 *   assertOperand("copy", "the source", [2, 3], { offset: 0, strides: [-1, 2] }, 7);
 * } catch {
 *   threw = true;
 * }
 * assert.ok(threw);
 * ```
 */
export function assertOperand(
  op: string,
  name: string,
  shape: readonly number[],
  operand: Pick<KernelOperand, "offset" | "strides">,
  capacity: number,
): void {
  const { offset, strides } = operand;
  if (strides.length !== shape.length) {
    throw new RangeError(`${op}: ${name} has ${strides.length} strides for rank ${shape.length}`);
  }
  if (!isInt32(offset) || !strides.every(isInt32)) {
    throw new RangeError(`${op}: ${name} offset and strides must be 32-bit integers`);
  }
  if (shape.some((extent) => extent === 0)) return;
  let low = offset;
  let high = offset;
  for (let axis = 0; axis < shape.length; axis++) {
    const reach = (shape[axis] - 1) * strides[axis];
    if (reach < 0) low += reach;
    else high += reach;
  }
  if (low < 0 || high >= capacity) {
    throw new RangeError(
      `${op}: ${name} reaches elements ${low} to ${high} but its storage holds ${capacity} elements`,
    );
  }
}

/**
 * Elements of `elementBytes` bytes that an operand's storage holds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { capacityOf } from "./copy.ts";
 * import type { KernelOperand } from "./types.ts";
 * const operand = { data: new Uint8Array(40) } as unknown as KernelOperand;
 * assert.ok(capacityOf(operand, 18) === 2 && capacityOf(operand, 4) === 10);
 * ```
 */
export function capacityOf(
  operand: Pick<KernelOperand, "data" | "byteLength">,
  elementBytes: number,
): number {
  return Math.floor(storageBytes(operand) / elementBytes);
}

/** Bytes an operand's storage holds, without creating its typed array when the operand says. */
export function storageBytes(operand: Pick<KernelOperand, "data" | "byteLength">): number {
  return operand.byteLength ?? operand.data.byteLength;
}

function assertElementBytes(op: string, elementBytes: number): void {
  if (!Number.isInteger(elementBytes) || elementBytes < 1 || elementBytes > 1024) {
    throw new RangeError(
      `${op}: the element size must be an integer from 1 to 1024 bytes, got ${elementBytes}`,
    );
  }
}

/**
 * Copies `shape` elements of `elementBytes` bytes (1, 2, 4, 8, or a quantized block's 18 or 34) from `src`
 * to `dst` natively, on up to `threads` threads. Offsets and strides count elements of that size.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeCopy } from "./copy.ts";
 * import { ffi } from "../native/runtime.ts";
 * const src = new Float32Array([1, 2, 3, 4, 5, 6]);
 * const dst = new Float32Array(6);
 * const operand = (data: Float32Array, strides: number[]) => ({ pointer: ffi.pointerOf(data), data, offset: 0, strides });
 * nativeCopy(4, [3, 2], operand(dst, [2, 1]), operand(src, [1, 3]));   // the transpose of a 2×3 matrix
 * assert.ok(dst.join() === "1,4,2,5,3,6");
 * ```
 */
export function nativeCopy(
  elementBytes: number,
  shape: readonly number[],
  dst: KernelOperand,
  src: KernelOperand,
  threads = 1,
): void {
  assertElementBytes("copy", elementBytes);
  assertShape("copy", shape);
  assertOperand("copy", "the destination", shape, dst, capacityOf(dst, elementBytes));
  assertOperand("copy", "the source", shape, src, capacityOf(src, elementBytes));
  args.shape(shape).operand(0, dst.offset, dst.strides).operand(1, src.offset, src.strides)
    .op(0, 0, Math.max(1, threads | 0)).int(0, elementBytes);
  native.zt_copy(args.pointer, dst.pointer, src.pointer);
}

/**
 * Calls `visit(offsets)` for every index of `shape` in row-major order, with each operand's element
 * offset `offset + Σ index·stride`. Nothing for an empty shape; once for rank 0.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { forEachOffset } from "./copy.ts";
 * const seen: number[] = [];
 * forEachOffset([2, 2], [{ offset: 1, strides: [1, 2] }], ([o]) => seen.push(o));
 * assert.ok(seen.join() === "1,3,2,4");
 * ```
 */
export function forEachOffset(
  shape: readonly number[],
  operands: readonly Pick<KernelOperand, "offset" | "strides">[],
  visit: (offsets: readonly number[]) => void,
): void {
  if (shape.some((extent) => extent === 0)) return;
  const rank = shape.length;
  const index = new Array<number>(rank).fill(0);
  const offsets = operands.map((o) => o.offset);
  while (true) {
    visit(offsets);
    let axis = rank - 1;
    while (axis >= 0) {
      index[axis]++;
      for (let k = 0; k < operands.length; k++) offsets[k] += operands[k].strides[axis];
      if (index[axis] < shape[axis]) break;
      for (let k = 0; k < operands.length; k++) offsets[k] -= shape[axis] * operands[k].strides[axis];
      index[axis] = 0;
      axis--;
    }
    if (axis < 0) return;
  }
}

/**
 * A raw view of an operand's storage in units of 1, 2 or 4 bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { rawView } from "./copy.ts";
 * import type { KernelOperand } from "./types.ts";
 * const operand = { data: new Float32Array([1]) } as unknown as KernelOperand;
 * assert.ok(rawView(operand, 4)[0] === 0x3f800000);
 * ```
 */
export function rawView(
  operand: KernelOperand,
  unitBytes: 1 | 2 | 4,
): Uint8Array | Uint16Array | Uint32Array {
  const { buffer, byteOffset, byteLength } = operand.data;
  if (unitBytes === 1) return new Uint8Array(buffer, byteOffset, byteLength);
  if (unitBytes === 2) return new Uint16Array(buffer, byteOffset, byteLength >>> 1);
  return new Uint32Array(buffer, byteOffset, byteLength >>> 2);
}

/**
 * The reference copy: element by element, in row-major order, as raw bytes (single-threaded TypeScript).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceCopy } from "./copy.ts";
 * import type { KernelOperand } from "./types.ts";
 * const src = new Uint8Array([7, 8, 9]);
 * const dst = new Uint8Array(6);
 * const operand = (data: Uint8Array, offset: number, strides: number[]) =>
 *   ({ pointer: null, data, offset, strides }) as unknown as KernelOperand;
 * referenceCopy(1, [2, 3], operand(dst, 0, [3, 1]), operand(src, 2, [0, -1]));   // reversed, broadcast
 * assert.ok(dst.join() === "9,8,7,9,8,7");
 * ```
 */
export function referenceCopy(
  elementBytes: number,
  shape: readonly number[],
  dst: KernelOperand,
  src: KernelOperand,
): void {
  assertElementBytes("copy", elementBytes);
  assertShape("copy", shape);
  assertOperand("copy", "the destination", shape, dst, capacityOf(dst, elementBytes));
  assertOperand("copy", "the source", shape, src, capacityOf(src, elementBytes));
  // Whole elements move as 1, 2 or 4-byte units; 8-byte and odd-sized elements as several units.
  const unit: 1 | 2 | 4 = elementBytes % 4 === 0 ? 4 : elementBytes % 2 === 0 ? 2 : 1;
  const units = elementBytes / unit;
  const out = rawView(dst, unit);
  const input = rawView(src, unit);
  forEachOffset(shape, [dst, src], ([d, s]) => {
    for (let u = 0; u < units; u++) out[d * units + u] = input[s * units + u];
  });
}

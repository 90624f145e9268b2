/**
 * The select kernel behind `where`: `out = cond ? a : b` over one broadcast shape, for elements of 1, 2, 4 or
 * 8 bytes (every plain dtype). `nativeSelect` runs `zt_select` (`zig/kernels/select.zig`, one loop per element
 * size, threads from 2^18 elements); `referenceSelect` is the same in plain TypeScript and defines its bits:
 * elements are moved as raw bytes (NaN payloads and signed zeros pass unchanged), and any nonzero Bool byte
 * of `cond` picks `a`. The same bits in both modes, on every ISA and thread count.
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import { assertOperand, assertShape, capacityOf, forEachOffset, rawView } from "./copy.ts";
import type { ComputeSettings, KernelOperand } from "./types.ts";

/**
 * `out = cond ? a : b` over `shape`: `out`, `a` and `b` hold elements of `elementBytes` bytes (1, 2, 4 or 8),
 * `cond` Bool bytes; offsets and strides count elements of each operand (stride 0 broadcasts).
 */
export type SelectKernel = (
  elementBytes: number,
  shape: readonly number[],
  out: KernelOperand,
  cond: KernelOperand,
  a: KernelOperand,
  b: KernelOperand,
  settings: ComputeSettings,
) => void;

/** Asserts what both kernels need: a supported element size, a native shape, operands inside their storage. */
function check(
  elementBytes: number,
  shape: readonly number[],
  out: KernelOperand,
  cond: KernelOperand,
  a: KernelOperand,
  b: KernelOperand,
): void {
  if (elementBytes !== 1 && elementBytes !== 2 && elementBytes !== 4 && elementBytes !== 8) {
    throw new RangeError(`select: the element size must be 1, 2, 4 or 8 bytes, got ${elementBytes}`);
  }
  assertShape("select", shape);
  assertOperand("select", "the output", shape, out, capacityOf(out, elementBytes));
  assertOperand("select", "the condition", shape, cond, capacityOf(cond, 1));
  assertOperand("select", "a", shape, a, capacityOf(a, elementBytes));
  assertOperand("select", "b", shape, b, capacityOf(b, elementBytes));
}

/**
 * The native kernel (`zt_select`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeSelect } from "./select.ts";
 * import { ffi } from "../native/runtime.ts";
 * const operand = (data: Uint8Array | Float64Array, strides: number[]) => ({ pointer: ffi.pointerOf(data), data, offset: 0, strides });
 * const out = new Float64Array(3);
 * nativeSelect(8, [3], operand(out, [1]), operand(new Uint8Array([1, 0, 1]), [1]),
 *   operand(new Float64Array([1, 2, 3]), [1]), operand(new Float64Array([-1]), [0]), { mode: "exact", threads: 1 });
 * assert.ok(out.join() === "1,-1,3");
 * ```
 */
export const nativeSelect: SelectKernel = (elementBytes, shape, out, cond, a, b, settings) => {
  check(elementBytes, shape, out, cond, a, b);
  args.shape(shape)
    .operand(0, out.offset, out.strides)
    .operand(1, cond.offset, cond.strides)
    .operand(2, a.offset, a.strides)
    .operand(3, b.offset, b.strides)
    .op(0, 0, Math.max(1, settings.threads | 0))
    .int(0, elementBytes);
  native.zt_select(args.pointer, out.pointer, cond.pointer, a.pointer, b.pointer);
};

/**
 * The reference kernel: element by element in row-major order, as raw bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceSelect } from "./select.ts";
 * import type { KernelOperand } from "./types.ts";
 * const operand = (data: Uint8Array | Int16Array, strides: number[]) => ({ data, offset: 0, strides }) as unknown as KernelOperand;
 * const out = new Int16Array(4);
 * referenceSelect(2, [2, 2], operand(out, [2, 1]), operand(new Uint8Array([0, 3]), [0, 1]),
 *   operand(new Int16Array([7, 8]), [1, 0]), operand(new Int16Array([-5]), [0, 0]), { mode: "exact", threads: 1 });
 * assert.ok(out.join() === "-5,7,-5,8");
 * ```
 */
export const referenceSelect: SelectKernel = (elementBytes, shape, out, cond, a, b) => {
  check(elementBytes, shape, out, cond, a, b);
  // Whole elements move as 1, 2 or 4-byte units; 8-byte ones as two units.
  const unit: 1 | 2 | 4 = elementBytes >= 4 ? 4 : elementBytes === 2 ? 2 : 1;
  const units = elementBytes / unit;
  const o = rawView(out, unit);
  const c = rawView(cond, 1);
  const x = rawView(a, unit);
  const y = rawView(b, unit);
  forEachOffset(shape, [out, cond, a, b], ([oi, ci, ai, bi]) => {
    const from = c[ci] !== 0 ? x : y;
    const at = c[ci] !== 0 ? ai : bi;
    for (let u = 0; u < units; u++) o[oi * units + u] = from[at * units + u];
  });
};

/**
 * The grouped index add (scatter-add) kernel of the seam, the backward pass of lookups (`embedding`) and of max
 * pooling: for each group b and column d, `out[b, index[b, k] − base(b), d] += src[b, k, d]` for k = 0, 1, ...
 * in order, with base(b) = b·M when the indices are flat over every group's rows, else 0. The native kernel
 * (`zt_index_add_f32`, zig/kernels/scatter.zig) splits the work over (b, d) only, so each element takes its
 * additions in the same order as here: the same bits in both modes and for any thread count.
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { ComputeSettings, IndexAddParams, KernelOperand } from "./types.ts";

/**
 * The reference: scalar loops, one rounding per addition (`Math.fround`), in k order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceIndexAdd } from "./scatter.ts";
 * const out = new Float32Array(3);
 * const operand = (data: Float32Array | Int32Array, strides: number[]) =>
 *   ({ pointer: null as never, data, offset: 0, strides });
 * referenceIndexAdd(
 *   { groups: 1, count: 3, width: 1, rows: 3, flat: false },
 *   operand(out, [3, 1, 1]),
 *   operand(Float32Array.from([1, 2, 4]), [3, 1, 1]),
 *   operand(Int32Array.from([2, 0, 2]), [3, 1]),
 * );
 * assert.deepEqual([...out], [2, 0, 5]);
 * ```
 */
export function referenceIndexAdd(
  params: IndexAddParams,
  out: KernelOperand,
  src: KernelOperand,
  index: KernelOperand,
): void {
  const { groups, count, width, rows, flat } = params;
  const o = out.data as Float32Array;
  const s = src.data as Float32Array;
  const ix = index.data as Int32Array;
  for (let b = 0; b < groups; b++) {
    const base = flat ? b * rows : 0;
    for (let k = 0; k < count; k++) {
      const row = ix[index.offset + b * index.strides[0] + k * index.strides[1]] - base;
      const outRow = out.offset + b * out.strides[0] + row * out.strides[1];
      const srcRow = src.offset + b * src.strides[0] + k * src.strides[1];
      for (let d = 0; d < width; d++) {
        const at = outRow + d * out.strides[2];
        o[at] = Math.fround(o[at] + s[srcRow + d * src.strides[2]]);
      }
    }
  }
}

const indexAddShape = [0, 0, 0, 0];

/** The native kernel (`zt_index_add_f32`), on the thread count of `settings`. */
export function nativeIndexAdd(
  params: IndexAddParams,
  out: KernelOperand,
  src: KernelOperand,
  index: KernelOperand,
  settings: ComputeSettings,
): void {
  indexAddShape[0] = params.groups;
  indexAddShape[1] = params.count;
  indexAddShape[2] = params.width;
  indexAddShape[3] = params.rows;
  args.shape(indexAddShape)
    .operand(0, out.offset, out.strides)
    .operand(1, src.offset, src.strides)
    .operand(2, index.offset, index.strides)
    .op(0, settings.mode === "exact" ? 1 : 0, settings.threads)
    .int(0, params.flat ? 1 : 0);
  native.zt_index_add_f32(args.pointer, out.pointer, src.pointer, index.pointer);
}

/**
 * The indexing kernels: gather and scatter-add along one axis, and the running sum (`zig/kernels/index.zig`
 * documents the operands). `nativeIndex` runs `zt_index_f32`; `referenceIndex` is the same in plain
 * TypeScript and defines the bits the native kernel must give in both modes: gather copies, scatter-add adds
 * one f32 at a time in row-major order of the iteration shape, cumsum adds in f64 in ascending order and rounds
 * each output once. Both check every index against [0, bound) before writing and return false, having
 * written nothing, when one is outside.
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { NativePointer } from "../native/symbols.ts";
import { kernelCodes } from "../core/op_table.ts";
import type { KernelCode, KernelCodes } from "../core/op_table.ts";
import { type ComputeSettings, type KernelOperand, MODE_CODE } from "./types.ts";

/** The indexing operations by kernel name (from the op table). */
export const IndexOp: KernelCodes["index"] = kernelCodes("index");
/** An indexing kernel's operation code. */
export type IndexOp = KernelCode<"index">;

/**
 * One indexing call over the iteration shape `shape`: `table` is indexed along `axis` (its stride there is
 * applied to the index; its extent there is `bound`), `flat` and `index` (I32 or I64; null for cumsum) follow
 * the iteration shape. Returns false, writing nothing, when an index is outside [0, bound).
 */
export type IndexKernel = (
  op: IndexOp,
  shape: readonly number[],
  axis: number,
  bound: number,
  table: KernelOperand,
  flat: KernelOperand,
  index: KernelOperand | null,
  settings: ComputeSettings,
) => boolean;

const NULL = null as unknown as NativePointer;

/** The native kernel (`zt_index_f32`); assumes operands validated by the op. */
export const nativeIndex: IndexKernel = (op, shape, axis, bound, table, flat, index, settings) => {
  args.shape(shape)
    .operand(0, table.offset, table.strides)
    .operand(1, flat.offset, flat.strides)
    .operand(2, index?.offset ?? 0, index?.strides ?? shape.map(() => 0))
    .op(op, MODE_CODE[settings.mode], settings.threads)
    .int(0, axis)
    .int(1, bound)
    .int(2, index === null ? 0 : index.data.BYTES_PER_ELEMENT);
  return native.zt_index_f32(args.pointer, table.pointer, flat.pointer, index?.pointer ?? NULL) === 0;
};

/** Calls `fn` with the offsets of each operand at every position of `shape`, in row-major order. */
function walk(
  shape: readonly number[],
  operands: readonly { readonly offset: number; readonly strides: readonly number[] }[],
  fn: (offsets: number[]) => void,
): void {
  if (shape.some((e) => e === 0)) return;
  const coord = shape.map(() => 0);
  const offsets = operands.map((o) => o.offset);
  for (;;) {
    fn(offsets);
    let d = shape.length - 1;
    for (; d >= 0; d--) {
      coord[d]++;
      operands.forEach((o, k) => (offsets[k] += o.strides[d]));
      if (coord[d] < shape[d]) break;
      operands.forEach((o, k) => (offsets[k] -= shape[d] * o.strides[d]));
      coord[d] = 0;
    }
    if (d < 0) return;
  }
}

/** The reference kernel: the native kernel's meaning in plain TypeScript. */
export const referenceIndex: IndexKernel = (op, shape, axis, bound, table, flat, index) => {
  const t = table.data as Float32Array;
  const f = flat.data as Float32Array;
  if (op === IndexOp.CumSum) {
    const outer = shape.map((e, d) => (d === axis ? Math.min(e, 1) : e));
    walk(outer, [table, flat], ([ai, oi]) => {
      let sum = 0;
      for (let k = 0; k < shape[axis]; k++) {
        sum += t[ai + k * table.strides[axis]];
        f[oi + k * flat.strides[axis]] = sum;
      }
    });
    return true;
  }
  const ids = index!.data as Int32Array | BigInt64Array;
  let inRange = true;
  walk(shape, [index!], ([ii]) => {
    const v = Number(ids[ii]);
    if (v < 0 || v >= bound) inRange = false;
  });
  if (!inRange) return false;
  const step = table.strides[axis];
  const base = { offset: table.offset, strides: table.strides.map((s, d) => (d === axis ? 0 : s)) };
  walk(shape, [base, flat, index!], ([ti, fi, ii]) => {
    const at = ti + Number(ids[ii]) * step;
    if (op === IndexOp.Gather) f[fi] = t[at];
    else t[at] = t[at] + f[fi];
  });
  return true;
};

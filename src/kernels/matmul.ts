/**
 * The matrix product kernels: `referenceMatMul`, plain TypeScript that defines the meaning of both arithmetic
 * modes (f64 sums in ascending k, rounded to f32 once), and `nativeMatMul`, the packed and cache-blocked GEMM
 * of `zig/kernels/gemm.zig`. Exact mode is bitwise equal to the reference on every ISA and thread count;
 * fast mode (f32 FMA, blocked summation) is within `fastMatMulBound` of it.
 *
 * Both take the output's shape `[...batch, M, N]`, the inner extent K, and three strided operands: `out`
 * over `[...batch, M, N]`, `a` over `[...batch, M, K]` and `b` over `[...batch, K, N]`. A broadcast batch axis
 * has stride 0; a transposed operand is only a swap of its strides, never a copy.
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import { Status } from "../native/symbols.ts";
import { type ComputeSettings, type KernelOperand, MODE_CODE } from "./types.ts";

/**
 * The error bound of fast mode for one output element, given `Σ_k |a[m,k]·b[k,n]|` (`absSum`) and K: the
 * f32 sum in any order of K products, each FMA rounding once, differs from the exactly rounded sum by at
 * most `K·2^-23·absSum` (γ_K from Higham's bound, with room for the final rounding).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fastMatMulBound } from "./matmul.ts";
 * assert.ok(fastMatMulBound(1024, 2) === 1024 * 2 ** -23 * 2);
 * ```
 */
export function fastMatMulBound(k: number, absSum: number): number {
  return Math.max(k, 1) * 2 ** -23 * absSum;
}

/**
 * The reference matrix product: for every output element, an f64 sum of `a[m,k]·b[k,n]` in ascending k
 * (each product of two f32 values is exact in f64), rounded to f32 once. No threads; `settings` is ignored,
 * because this defines the meaning of both modes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceMatMul } from "./matmul.ts";
 * import type { KernelOperand } from "./types.ts";
 * import type { NativePointer } from "../native/symbols.ts";
 * const operand = (data: Float32Array, strides: number[]): KernelOperand =>
 *   ({ pointer: null as unknown as NativePointer, data, offset: 0, strides });
 * // [[1, 2], [3, 4]] · [[5, 6], [7, 8]]
 * const out = new Float32Array(4);
 * referenceMatMul(
 *   [2, 2],
 *   2,
 *   operand(out, [2, 1]),
 *   operand(new Float32Array([1, 2, 3, 4]), [2, 1]),
 *   operand(new Float32Array([5, 6, 7, 8]), [2, 1]),
 *   { mode: "exact", threads: 1 },
 * );
 * assert.ok(out.join() === "19,22,43,50");
 * ```
 */
export function referenceMatMul(
  shape: readonly number[],
  k: number,
  out: KernelOperand,
  a: KernelOperand,
  b: KernelOperand,
  _settings: ComputeSettings,
): void {
  const batchRank = shape.length - 2;
  const m = shape[batchRank];
  const n = shape[batchRank + 1];
  let batch = 1;
  for (let axis = 0; axis < batchRank; axis++) batch *= shape[axis];
  const o = out.data as Float32Array;
  const x = a.data as Float32Array;
  const y = b.data as Float32Array;
  const [rsC, csC] = [out.strides[batchRank], out.strides[batchRank + 1]];
  const [rsA, csA] = [a.strides[batchRank], a.strides[batchRank + 1]];
  const [rsB, csB] = [b.strides[batchRank], b.strides[batchRank + 1]];
  for (let index = 0; index < batch; index++) {
    let offC = out.offset;
    let offA = a.offset;
    let offB = b.offset;
    let rest = index;
    for (let axis = batchRank - 1; axis >= 0; axis--) {
      const i = rest % shape[axis];
      rest = Math.floor(rest / shape[axis]);
      offC += i * out.strides[axis];
      offA += i * a.strides[axis];
      offB += i * b.strides[axis];
    }
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let sum = 0;
        for (let p = 0; p < k; p++) sum += x[offA + i * rsA + p * csA] * y[offB + p * rsB + j * csB];
        // A Float32Array store rounds to nearest, like Math.fround.
        o[offC + i * rsC + j * csC] = sum;
      }
    }
  }
}

/**
 * The native matrix product (`zt_matmul_f32`): writes the argument block and makes one call; no allocation on
 * the JavaScript side. Exact mode gives the reference's bits; fast mode is within `fastMatMulBound`. Assumes
 * validated operands (rank ≤ the native maximum, in-bounds strides, f32 storage); throws a `RangeError` only
 * when the native side cannot allocate its packing buffers, before it writes anything.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeMatMul } from "./matmul.ts";
 * import { native } from "../native/library.ts";
 * import { ffi } from "../native/runtime.ts";
 * import type { KernelOperand } from "./types.ts";
 * // One native block holds a = [[1, 2], [3, 4]], b = [[5, 6], [7, 8]] and the output, at offsets 0, 4, 8.
 * const pointer = native.zt_pool_rent(48, 0)!;
 * const data = new Float32Array(ffi.arrayBuffer(pointer, 48));
 * data.set([1, 2, 3, 4, 5, 6, 7, 8]);
 * const at = (offset: number): KernelOperand => ({ pointer, data, offset, strides: [2, 1] });
 * nativeMatMul([2, 2], 2, at(8), at(0), at(4), { mode: "exact", threads: 1 });
 * assert.ok(data.subarray(8).join() === "19,22,43,50");
 * native.zt_pool_release(pointer, 48);
 * ```
 */
export function nativeMatMul(
  shape: readonly number[],
  k: number,
  out: KernelOperand,
  a: KernelOperand,
  b: KernelOperand,
  settings: ComputeSettings,
): void {
  args.shape(shape)
    .operand(0, out.offset, out.strides)
    .operand(1, a.offset, a.strides)
    .operand(2, b.offset, b.strides)
    .op(0, settings.mode === "exact" ? 1 : 0, settings.threads)
    .int(0, k);
  const status = native.zt_matmul_f32(args.pointer, out.pointer, a.pointer, b.pointer);
  if (status !== Status.ok) {
    throw new RangeError(
      `matMul: out of native memory for the packing buffers of a [${shape.join(", ")}] product with K = ${k}`,
    );
  }
}

/**
 * A B operand [K, N] prepared once for many products (a recurrent layer's W_hh, used at every time step):
 * `packedSize` f32 elements of storage, `pack` fills it from b, `multiply` computes out [M, N] = a [M, K] · B
 * from it, the bits `matMul` gives in exact mode. The layout is the kernel set's own: the reference keeps b
 * as a row-major f32 copy; the native set keeps the GEMM's KC×NR panels of the variant (f64 values in exact
 * mode), so the products skip packing B.
 */
export interface PackedMatMulKernel {
  /** f32 elements of the packed storage for b [K, N] in `settings.mode`. */
  readonly packedSize: (k: number, n: number, settings: ComputeSettings) => number;
  /** Packs b [K, N] (two strides) into `packed` (contiguous, at offset 0 of a 64-byte aligned block). */
  readonly pack: (
    k: number,
    n: number,
    packed: KernelOperand,
    b: KernelOperand,
    settings: ComputeSettings,
  ) => void;
  /**
   * out [M, N] = a [M, K] · B (out and a with two strides each), from a `packed` filled by `pack` with the
   * same K, N and mode. M, N, K ≥ 1.
   */
  readonly multiply: (
    m: number,
    n: number,
    k: number,
    out: KernelOperand,
    a: KernelOperand,
    packed: KernelOperand,
    settings: ComputeSettings,
  ) => void;
}

/**
 * The reference packed product: the packed storage is b copied row-major, and the product `referenceMatMul`
 * over it.
 */
export const referencePackedMatMul: PackedMatMulKernel = {
  packedSize: (k, n) => k * n,
  pack: (k, n, packed, b) => {
    const [dst, src] = [packed.data as Float32Array, b.data as Float32Array];
    for (let p = 0; p < k; p++) {
      for (let j = 0; j < n; j++) {
        dst[packed.offset + p * n + j] = src[b.offset + p * b.strides[0] + j * b.strides[1]];
      }
    }
  },
  multiply: (m, n, k, out, a, packed, settings) => {
    // An operand's data may be a getter (made lazily), which a spread would not copy.
    const b = { pointer: packed.pointer, data: packed.data, offset: packed.offset, strides: [n, 1] };
    referenceMatMul([m, n], k, out, a, b, settings);
  },
};

/** The native packed product (`zt_matmul_pack_b_f32`, `zt_matmul_packed_f32`, zig/kernels/gemm.zig). */
export const nativePackedMatMul: PackedMatMulKernel = {
  packedSize: (k, n, settings) => {
    const nr = native.zt_matmul_packed_panel(MODE_CODE[settings.mode]);
    return Math.ceil(n / nr) * nr * k * (settings.mode === "exact" ? 2 : 1);
  },
  pack: (k, n, packed, b, settings) => {
    args.shape([k, n])
      .operand(0, b.offset, b.strides)
      .op(0, MODE_CODE[settings.mode], settings.threads);
    native.zt_matmul_pack_b_f32(args.pointer, packed.pointer, b.pointer);
  },
  multiply: (m, n, k, out, a, packed, settings) => {
    args.shape([m, n])
      .operand(0, out.offset, out.strides)
      .operand(1, a.offset, a.strides)
      .op(0, MODE_CODE[settings.mode], settings.threads)
      .int(0, k);
    const status = native.zt_matmul_packed_f32(args.pointer, out.pointer, a.pointer, packed.pointer);
    if (status !== Status.ok) {
      throw new RangeError(
        `matMul: out of native memory for the packing buffers of a [${m}, ${n}] product with K = ${k}`,
      );
    }
  },
};

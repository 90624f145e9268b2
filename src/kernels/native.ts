/**
 * The native kernel set: each method writes the argument block and makes one FFI call into libzigtensor's
 * kernels (`zt_binary_f32`, `zt_unary_f32`, `zt_reduce_f32`, `zt_softmax_f32`, `zt_maxpool2d_f32` and
 * `zt_matmul_f32`), which run the SIMD variant selected at load, across the thread pool when the work is
 * large. No JavaScript allocation per call. The methods assume validated operands (the Tensor layer checks
 * shapes, strides, dtypes and pooling geometry first).
 *
 * Exact mode gives the reference kernels' bits for every IEEE operation (`+ − × ÷`, sqrt, neg, abs, relu,
 * max, min, comparisons, sums, max/min/argmax reductions, pooling) and, for the transcendental functions
 * (exp, log, tanh, sigmoid, both forms of gelu, erf, pow, softmax), results within 1 ulp of the reference that are the same
 * bits on every ISA and every thread count. Fast mode gives the same bits for the IEEE operations and keeps
 * the transcendental ones within `FAST_ERROR_BOUNDS`.
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { NativePointer } from "../native/symbols.ts";
import { nativeMatMul } from "./matmul.ts";
import { poolOutput } from "./reference.ts";
import {
  type BinaryOp,
  type ComputeSettings,
  type KernelOperand,
  MODE_CODE,
  type Pool2dParams,
  type ReduceOp,
  type SoftmaxOp,
  type TensorKernels,
  type UnaryOp,
} from "./types.ts";

/**
 * The error bound of one fast-mode transcendental result against the reference: it passes when
 * `|fast − ref| ≤ ulps · ulp(ref) · (1 + slope · arg) + abs`, where `ulp(ref)` is the spacing of f32 values
 * at `ref` (at least 2^-149) and `arg` is the quantity named by the op's entry. NaN and infinite references
 * are matched exactly, zero ones within `abs` or one subnormal step.
 */
export interface FastErrorBound {
  readonly ulps: number;
  readonly slope: number;
  readonly abs: number;
}

/**
 * The documented error bounds of fast mode, the same as `fast_bounds` in `zig/kernels/math.zig` (checked
 * there on dense grids and in `tests/kernels_elementwise.test.ts` against the reference). For gelu `arg` is
 * `|2u|`, `u = √(2/π)·(x + 0.044715·x³)`, the exponent whose f32 rounding the result inherits; for pow it is
 * `|y·ln|x||`; for the others the bound is a plain ulp count (plus an absolute part for log-softmax).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FAST_ERROR_BOUNDS } from "./native.ts";
 * assert.ok(FAST_ERROR_BOUNDS.exp.ulps === 3 && FAST_ERROR_BOUNDS.gelu.slope === 1);
 * ```
 */
export const FAST_ERROR_BOUNDS = {
  exp: { ulps: 3, slope: 0, abs: 0 },
  log: { ulps: 3, slope: 0, abs: 0 },
  tanh: { ulps: 4, slope: 0, abs: 0 },
  sigmoid: { ulps: 4, slope: 0, abs: 0 },
  gelu: { ulps: 6, slope: 1, abs: 0 },
  erf: { ulps: 4, slope: 0, abs: 0 },
  /**
   * GELU's erf form: Φ = 0.5 + 0.5·erf(s) just above s = −1 multiplies erf's error by up to 5; a subnormal
   * result inherits exp's subnormal rounding times |x| (up to 15): 2^-140 absolute.
   */
  geluErf: { ulps: 16, slope: 0, abs: 2 ** -140 },
  pow: { ulps: 4, slope: 2, abs: 0 },
  softmax: { ulps: 6, slope: 0, abs: 0 },
  log1p: { ulps: 6, slope: 0, abs: 0 },
  expm1: { ulps: 12, slope: 0, abs: 0 },
  /** A subnormal result inherits sigmoid's subnormal rounding times |x| (up to 104): 2^-140 absolute. */
  silu: { ulps: 6, slope: 0, abs: 2 ** -140 },
  softplus: { ulps: 12, slope: 0, abs: 0 },
  elu: { ulps: 12, slope: 0, abs: 0 },
  /** log s inherits the exponentials' f32 error: up to 2^-22 absolute, whatever the result's size. */
  logSoftmax: { ulps: 6, slope: 0, abs: 2 ** -21 },
} as const satisfies Record<string, FastErrorBound>;

/** The pooling shape, reused by every call. */
const poolShape = [0, 0, 0, 0];

/** The argument block of `zt_maxpool2d_f32` (args.op `op`) with its shape and geometry; operands are the caller's. */
function poolArgs(params: Pool2dParams, op: number, settings: ComputeSettings): typeof args {
  const [n, c, h, w] = params.input;
  const [oh, ow] = poolOutput(params);
  const [dh, dw] = params.dilation ?? [1, 1];
  poolShape[0] = n;
  poolShape[1] = c;
  poolShape[2] = oh;
  poolShape[3] = ow;
  return args.shape(poolShape)
    .op(op, MODE_CODE[settings.mode], settings.threads)
    .int(0, params.kernel[0])
    .int(1, params.kernel[1])
    .int(2, params.stride[0])
    .int(3, params.stride[1])
    .int(4, params.padding[0])
    .int(5, params.padding[1])
    .int(6, h)
    .int(7, w)
    .int(9, dh)
    .int(10, dw);
}

/**
 * The native kernel set.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeKernels } from "./native.ts";
 * import { UnaryOp } from "./types.ts";
 * import { native } from "../native/library.ts";
 * import { ffi } from "../native/runtime.ts";
 * // One block: the input [1, 4, 9, 16] at offset 0 and the output at offset 4.
 * const pointer = native.zt_pool_rent(32, 0)!;
 * const data = new Float32Array(ffi.arrayBuffer(pointer, 32));
 * data.set([1, 4, 9, 16]);
 * const view = (offset: number) => ({ pointer, data, offset, strides: [1] });
 * nativeKernels.unary(UnaryOp.Sqrt, [4], view(4), view(0), { mode: "fast", threads: 1 });
 * assert.ok(data.subarray(4).join() === "1,2,3,4");
 * native.zt_pool_release(pointer, 32);
 * ```
 */
export const nativeKernels: TensorKernels = {
  name: "native",

  binary(
    op: BinaryOp,
    shape: readonly number[],
    out: KernelOperand,
    a: KernelOperand,
    b: KernelOperand,
    settings: ComputeSettings,
  ): void {
    args.shape(shape)
      .operand(0, out.offset, out.strides)
      .operand(1, a.offset, a.strides)
      .operand(2, b.offset, b.strides)
      .op(op, MODE_CODE[settings.mode], settings.threads);
    native.zt_binary_f32(args.pointer, out.pointer, a.pointer, b.pointer);
  },

  unary(
    op: UnaryOp,
    shape: readonly number[],
    out: KernelOperand,
    a: KernelOperand,
    settings: ComputeSettings,
    params?: readonly [number, number],
  ): void {
    args.shape(shape)
      .operand(0, out.offset, out.strides)
      .operand(1, a.offset, a.strides)
      .op(op, MODE_CODE[settings.mode], settings.threads);
    if (params !== undefined) args.float(0, params[0]).float(1, params[1]);
    native.zt_unary_f32(args.pointer, out.pointer, a.pointer);
  },

  reduce(
    op: ReduceOp,
    shape: readonly number[],
    reducedAxes: number,
    out: KernelOperand,
    a: KernelOperand,
    settings: ComputeSettings,
  ): void {
    args.shape(shape)
      .operand(0, out.offset, out.strides)
      .operand(1, a.offset, a.strides)
      .op(op, MODE_CODE[settings.mode], settings.threads)
      .int(0, reducedAxes);
    native.zt_reduce_f32(args.pointer, out.pointer, a.pointer);
  },

  softmax(
    op: SoftmaxOp,
    shape: readonly number[],
    out: KernelOperand,
    a: KernelOperand,
    settings: ComputeSettings,
  ): void {
    args.shape(shape)
      .operand(0, out.offset, out.strides)
      .operand(1, a.offset, a.strides)
      .op(op, MODE_CODE[settings.mode], settings.threads);
    native.zt_softmax_f32(args.pointer, out.pointer, a.pointer);
  },

  matMul(
    shape: readonly number[],
    k: number,
    out: KernelOperand,
    a: KernelOperand,
    b: KernelOperand,
    settings: ComputeSettings,
  ): void {
    nativeMatMul(shape, k, out, a, b, settings);
  },

  maxPool2d(
    params: Pool2dParams,
    out: KernelOperand,
    x: KernelOperand,
    indices: KernelOperand | null,
    settings: ComputeSettings,
  ): void {
    poolArgs(params, 0, settings)
      .operand(0, out.offset, out.strides)
      .operand(1, x.offset, x.strides)
      .int(8, indices === null ? 0 : 1)
      .int(11, params.localIndices === true ? 1 : 0);
    if (indices !== null) args.operand(2, indices.offset, indices.strides);
    native.zt_maxpool2d_f32(
      args.pointer,
      out.pointer,
      x.pointer,
      indices?.pointer ?? (null as unknown as NativePointer),
    );
  },

  maxPool2dBackward(
    params: Pool2dParams,
    grad: KernelOperand,
    g: KernelOperand,
    indices: KernelOperand,
    settings: ComputeSettings,
  ): void {
    poolArgs(params, 1, settings)
      .operand(0, grad.offset, grad.strides)
      .operand(1, g.offset, g.strides)
      .operand(2, indices.offset, indices.strides);
    native.zt_maxpool2d_f32(args.pointer, grad.pointer, g.pointer, indices.pointer);
  },
};

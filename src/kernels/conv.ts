/**
 * The window movements of convolution over NCHW images: im2col writes the windows of an image as columns
 * [N, C, KH, KW, OH, OW] (zeros where a tap falls in the padding), col2im sums columns back into an image (the
 * adjoint). Tap (ky, kx) of output (oy, ox) reads image position (oy·strideH − padH + ky·dilationH,
 * ox·strideW − padW + kx·dilationW). `referenceIm2col`/`referenceCol2im` define them: im2col only moves
 * values; col2im starts every image element at +0 and adds its taps in ascending (ky, kx) order, one f32
 * addition each, so the native kernels (`zt_conv_fold_f32`, `zig/kernels/conv.zig`) give the same bits in both
 * modes, on every ISA and thread count.
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import { Status } from "../native/symbols.ts";
import { type ComputeSettings, type KernelOperand, MODE_CODE } from "./types.ts";

/** The geometry of a convolution's window sweep over an NCHW image; strides and dilations are positive. */
export interface ConvWindowParams {
  /** Image extents [N, C, H, W]. */
  readonly input: readonly [number, number, number, number];
  /** Taps [KH, KW]. */
  readonly kernel: readonly [number, number];
  /** Steps between outputs [SH, SW]. */
  readonly stride: readonly [number, number];
  /** Zeros on the top and left [PH, PW] (the bottom and right need none: the output extents bound the reads). */
  readonly padding: readonly [number, number];
  /** Spacing between taps [DH, DW]. */
  readonly dilation: readonly [number, number];
  /** Output extents [OH, OW]. */
  readonly output: readonly [number, number];
}

/** A convolution's product: the window geometry, the channel groups and the output channels O. */
export interface ConvProductParams extends ConvWindowParams {
  /** Input and output channels split into this many independent groups (dividing C and O). */
  readonly groups: number;
  /** Output channels O. */
  readonly outChannels: number;
}

/**
 * Which product `convProduct` computes: `"forward"`, out [N, O, OH, OW] = the weights [O, C/groups, KH, KW]
 * times the windows (a convolution); `"weight"`, out [N, O, C/groups, KH, KW] = the output gradient
 * [N, O, OH, OW] times the windows' transpose (each image's weight gradient).
 */
export type ConvProductKind = "forward" | "weight";

/** im2col, col2im and the implicit convolution products through the kernel seam. */
export interface ConvKernels {
  /** columns [N, C, KH, KW, OH, OW] = the windows of `image` [N, C, H, W]; zeros outside the image. */
  im2col(
    params: ConvWindowParams,
    columns: KernelOperand,
    image: KernelOperand,
    settings: ComputeSettings,
  ): void;
  /** image [N, C, H, W] = the sum of the columns' taps over each position (+0 where none lands). */
  col2im(
    params: ConvWindowParams,
    image: KernelOperand,
    columns: KernelOperand,
    settings: ComputeSettings,
  ): void;
  /**
   * A convolution's product with the columns of `image` [N, C, H, W] (see `ConvProductKind`): each element the
   * matmul's sum (f64 in ascending order, rounded once, in exact mode) over (c, ky, kx) for `"forward"` or
   * (oy, ox) for `"weight"`, as `im2col` followed by `matMul` would give it. `a` is the weights or the output
   * gradient; `out` and, for `"weight"`, `a` must have their trailing axes (OH, OW or C/groups, KH, KW)
   * flatten to one stride.
   */
  convProduct(
    params: ConvProductParams,
    kind: ConvProductKind,
    out: KernelOperand,
    a: KernelOperand,
    image: KernelOperand,
    settings: ComputeSettings,
  ): void;
}

function offsetOf(operand: KernelOperand, index: readonly number[]): number {
  let offset = operand.offset;
  for (let axis = 0; axis < index.length; axis++) offset += index[axis] * operand.strides[axis];
  return offset;
}

/** Visits every (image index or -1, column index) pair in the order [N, C, KH, KW, OH, OW]. */
function sweep(
  params: ConvWindowParams,
  columns: KernelOperand,
  image: KernelOperand,
  visit: (imageAt: number, columnAt: number) => void,
): void {
  const [n, c, h, w] = params.input;
  const [kh, kw] = params.kernel;
  const [oh, ow] = params.output;
  for (let ni = 0; ni < n; ni++) {
    for (let ci = 0; ci < c; ci++) {
      for (let ky = 0; ky < kh; ky++) {
        for (let kx = 0; kx < kw; kx++) {
          for (let oy = 0; oy < oh; oy++) {
            const y = oy * params.stride[0] - params.padding[0] + ky * params.dilation[0];
            for (let ox = 0; ox < ow; ox++) {
              const x = ox * params.stride[1] - params.padding[1] + kx * params.dilation[1];
              const inside = y >= 0 && y < h && x >= 0 && x < w;
              visit(
                inside ? offsetOf(image, [ni, ci, y, x]) : -1,
                offsetOf(columns, [ni, ci, ky, kx, oy, ox]),
              );
            }
          }
        }
      }
    }
  }
}

/**
 * The reference im2col: plain loops; `settings` is ignored (data movement is the same in both modes).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceIm2col } from "./conv.ts";
 * import type { KernelOperand } from "./types.ts";
 * import type { NativePointer } from "../native/symbols.ts";
 * const operand = (data: Float32Array, strides: number[]): KernelOperand =>
 *   ({ pointer: null as unknown as NativePointer, data, offset: 0, strides });
 * // A 1x2 image [5, 6], a 1x2 kernel, padding 1 on the left and right: three windows.
 * const columns = new Float32Array(6);
 * const params = { input: [1, 1, 1, 2], kernel: [1, 2], stride: [1, 1], padding: [0, 1], dilation: [1, 1], output: [1, 3] } as const;
 * referenceIm2col(params, operand(columns, [6, 6, 6, 3, 3, 1]), operand(new Float32Array([5, 6]), [2, 2, 2, 1]), { mode: "exact", threads: 1 });
 * assert.ok(columns.join() === "0,5,6,5,6,0");
 * ```
 */
export function referenceIm2col(
  params: ConvWindowParams,
  columns: KernelOperand,
  image: KernelOperand,
  _settings: ComputeSettings,
): void {
  const cd = columns.data as Float32Array;
  const xd = image.data as Float32Array;
  sweep(params, columns, image, (imageAt, columnAt) => {
    cd[columnAt] = imageAt < 0 ? 0 : xd[imageAt];
  });
}

/**
 * The reference col2im: every image element starts at +0, then each tap adds in the order [KH, KW, OH, OW]
 * (ascending (ky, kx) for any one element), each sum rounded to f32; `settings` is ignored.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceCol2im } from "./conv.ts";
 * import type { KernelOperand } from "./types.ts";
 * import type { NativePointer } from "../native/symbols.ts";
 * const operand = (data: Float32Array, strides: number[]): KernelOperand =>
 *   ({ pointer: null as unknown as NativePointer, data, offset: 0, strides });
 * // Three 1x2 windows over a padded 1x2 image: each pixel is in two windows.
 * const image = new Float32Array(2);
 * const params = { input: [1, 1, 1, 2], kernel: [1, 2], stride: [1, 1], padding: [0, 1], dilation: [1, 1], output: [1, 3] } as const;
 * referenceCol2im(params, operand(image, [2, 2, 2, 1]), operand(new Float32Array([1, 2, 3, 10, 20, 30]), [6, 6, 6, 3, 3, 1]), { mode: "exact", threads: 1 });
 * assert.ok(image.join() === "12,23");
 * ```
 */
export function referenceCol2im(
  params: ConvWindowParams,
  image: KernelOperand,
  columns: KernelOperand,
  _settings: ComputeSettings,
): void {
  const [n, c, h, w] = params.input;
  const xd = image.data as Float32Array;
  const cd = columns.data as Float32Array;
  for (let ni = 0; ni < n; ni++) {
    for (let ci = 0; ci < c; ci++) {
      for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) xd[offsetOf(image, [ni, ci, y, x])] = 0;
    }
  }
  // The sweep runs N, C, KH, KW outermost, so each element's taps arrive in ascending (ky, kx).
  sweep(params, columns, image, (imageAt, columnAt) => {
    if (imageAt >= 0) xd[imageAt] = xd[imageAt] + cd[columnAt];
  });
}

function nativeFold(
  op: 0 | 1,
  params: ConvWindowParams,
  out: KernelOperand,
  a: KernelOperand,
  settings: ComputeSettings,
): void {
  const [n, c, h, w] = params.input;
  args.shape([n, c, params.kernel[0], params.kernel[1], params.output[0], params.output[1]])
    .operand(0, out.offset, out.strides)
    .operand(1, a.offset, a.strides)
    .op(op, 1, settings.threads)
    .int(0, params.stride[0])
    .int(1, params.stride[1])
    .int(2, params.padding[0])
    .int(3, params.padding[1])
    .int(4, params.dilation[0])
    .int(5, params.dilation[1])
    .int(6, h)
    .int(7, w);
  native.zt_conv_fold_f32(args.pointer, out.pointer, a.pointer);
}

/**
 * The native im2col (`zt_conv_fold_f32`, op 0): the reference's values, threaded over (n, c, ky, kx) rows.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeIm2col } from "./conv.ts";
 * import { native } from "../native/library.ts";
 * import { ffi } from "../native/runtime.ts";
 * import type { KernelOperand } from "./types.ts";
 * // One native block: the image [5, 6] at 0, three 1x2 windows (6 values) at 2.
 * const pointer = native.zt_pool_rent(32, 0)!;
 * const data = new Float32Array(ffi.arrayBuffer(pointer, 32));
 * data.set([5, 6]);
 * const at = (offset: number, strides: number[]): KernelOperand => ({ pointer, data, offset, strides });
 * const params = { input: [1, 1, 1, 2], kernel: [1, 2], stride: [1, 1], padding: [0, 1], dilation: [1, 1], output: [1, 3] } as const;
 * nativeIm2col(params, at(2, [6, 6, 6, 3, 3, 1]), at(0, [2, 2, 2, 1]), { mode: "exact", threads: 1 });
 * assert.ok(data.subarray(2).join() === "0,5,6,5,6,0");
 * native.zt_pool_release(pointer, 32);
 * ```
 */
export function nativeIm2col(
  params: ConvWindowParams,
  columns: KernelOperand,
  image: KernelOperand,
  settings: ComputeSettings,
): void {
  nativeFold(0, params, columns, image, settings);
}

/**
 * The native col2im (`zt_conv_fold_f32`, op 1): the reference's bits, threaded over (n, c) planes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeCol2im } from "./conv.ts";
 * import { native } from "../native/library.ts";
 * import { ffi } from "../native/runtime.ts";
 * import type { KernelOperand } from "./types.ts";
 * // One native block: the image at 0, three 1x2 windows at 2.
 * const pointer = native.zt_pool_rent(32, 0)!;
 * const data = new Float32Array(ffi.arrayBuffer(pointer, 32));
 * data.set([1, 2, 3, 10, 20, 30], 2);
 * const at = (offset: number, strides: number[]): KernelOperand => ({ pointer, data, offset, strides });
 * const params = { input: [1, 1, 1, 2], kernel: [1, 2], stride: [1, 1], padding: [0, 1], dilation: [1, 1], output: [1, 3] } as const;
 * nativeCol2im(params, at(0, [2, 2, 2, 1]), at(2, [6, 6, 6, 3, 3, 1]), { mode: "exact", threads: 1 });
 * assert.ok(data.subarray(0, 2).join() === "12,23");
 * native.zt_pool_release(pointer, 32);
 * ```
 */
export function nativeCol2im(
  params: ConvWindowParams,
  image: KernelOperand,
  columns: KernelOperand,
  settings: ComputeSettings,
): void {
  nativeFold(1, params, image, columns, settings);
}

/**
 * The reference convolution product: the reference im2col of `image` into a scratch column matrix, then for
 * every output element an f64 sum of products in ascending order (each product of two f32 values is exact in
 * f64), rounded to f32 once; `settings` is ignored, as for the reference matmul.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceConvProduct } from "./conv.ts";
 * import type { KernelOperand } from "./types.ts";
 * import type { NativePointer } from "../native/symbols.ts";
 * const operand = (data: Float32Array, strides: number[]): KernelOperand =>
 *   ({ pointer: null as unknown as NativePointer, data, offset: 0, strides });
 * // The image [1, 2, 3] by the kernel [1, 10]: two windows.
 * const out = new Float32Array(2);
 * const params = { input: [1, 1, 1, 3], kernel: [1, 2], stride: [1, 1], padding: [0, 0], dilation: [1, 1], output: [1, 2], groups: 1, outChannels: 1 } as const;
 * referenceConvProduct(params, "forward", operand(out, [2, 2, 2, 1]), operand(new Float32Array([1, 10]), [2, 2, 2, 1]), operand(new Float32Array([1, 2, 3]), [3, 3, 3, 1]), { mode: "exact", threads: 1 });
 * assert.ok(out.join() === "21,32");
 * ```
 */
export function referenceConvProduct(
  params: ConvProductParams,
  kind: ConvProductKind,
  out: KernelOperand,
  a: KernelOperand,
  image: KernelOperand,
  settings: ComputeSettings,
): void {
  const [n, c] = params.input;
  const [kh, kw] = params.kernel;
  const [oh, ow] = params.output;
  const { groups, outChannels } = params;
  const cg = c / groups;
  const og = outChannels / groups;
  const taps = cg * kh * kw;
  const positions = oh * ow;
  const columns = new Float32Array(n * c * kh * kw * positions);
  const columnStrides = [c * kh * kw * positions, kh * kw * positions, kw * positions, positions, ow, 1];
  const scratch = { pointer: image.pointer, data: columns, offset: 0, strides: columnStrides };
  referenceIm2col(params, scratch, image, settings);
  const od = out.data as Float32Array;
  const ad = a.data as Float32Array;
  for (let ni = 0; ni < n; ni++) {
    for (let oc = 0; oc < outChannels; oc++) {
      // The group's columns [K, P] of image ni, K = (c, ky, kx) over its channels.
      const block = ni * columnStrides[0] + Math.floor(oc / og) * cg * columnStrides[1];
      if (kind === "forward") {
        for (let p = 0; p < positions; p++) {
          let sum = 0;
          for (let k = 0; k < taps; k++) {
            const [ci, ky, kx] = [Math.floor(k / (kh * kw)), Math.floor(k / kw) % kh, k % kw];
            sum += ad[offsetOf(a, [oc, ci, ky, kx])] * columns[block + k * positions + p];
          }
          od[offsetOf(out, [ni, oc, Math.floor(p / ow), p % ow])] = sum;
        }
      } else {
        for (let k = 0; k < taps; k++) {
          let sum = 0;
          for (let p = 0; p < positions; p++) {
            sum += ad[offsetOf(a, [ni, oc, Math.floor(p / ow), p % ow])] * columns[block + k * positions + p];
          }
          const [ci, ky, kx] = [Math.floor(k / (kh * kw)), Math.floor(k / kw) % kh, k % kw];
          od[offsetOf(out, [ni, oc, ci, ky, kx])] = sum;
        }
      }
    }
  }
}

/** Whether axes of `extents` and `strides` read as one flat axis (extent-1 axes skipped). */
function flattens(extents: readonly number[], strides: readonly number[]): boolean {
  let step: number | undefined;
  let span = 1;
  for (let axis = extents.length - 1; axis >= 0; axis--) {
    if (extents[axis] === 1) continue;
    if (step !== undefined && strides[axis] !== step * span) return false;
    step ??= strides[axis];
    span *= extents[axis];
  }
  return true;
}

/**
 * The native convolution product (`zt_conv_product_f32`): the windows are packed from the image straight into
 * the GEMM's panels, so no column matrix is written (stride 1: from a zero-padded copy of the image, one image
 * group per thread, whose rows pack as plain vector copies); exact mode gives the reference's bits on every ISA and
 * thread count, fast mode is within `fastMatMulBound` of it (K the sum's length). Throws a `RangeError` when
 * `out` or `a` does not flatten as `convProduct` requires, or when the panels cannot be allocated, before
 * writing anything.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeConvProduct } from "./conv.ts";
 * import { native } from "../native/library.ts";
 * import { ffi } from "../native/runtime.ts";
 * import type { KernelOperand } from "./types.ts";
 * // One native block: the image [1, 2, 3] at 0, the kernel [1, 10] at 4, two outputs at 8.
 * const pointer = native.zt_pool_rent(48, 0)!;
 * const data = new Float32Array(ffi.arrayBuffer(pointer, 48));
 * data.set([1, 2, 3, 0, 1, 10]);
 * const at = (offset: number, strides: number[]): KernelOperand => ({ pointer, data, offset, strides });
 * const params = { input: [1, 1, 1, 3], kernel: [1, 2], stride: [1, 1], padding: [0, 0], dilation: [1, 1], output: [1, 2], groups: 1, outChannels: 1 } as const;
 * nativeConvProduct(params, "forward", at(8, [2, 2, 2, 1]), at(4, [2, 2, 2, 1]), at(0, [3, 3, 3, 1]), { mode: "exact", threads: 1 });
 * assert.ok(data.subarray(8, 10).join() === "21,32");
 * native.zt_pool_release(pointer, 48);
 * ```
 */
export function nativeConvProduct(
  params: ConvProductParams,
  kind: ConvProductKind,
  out: KernelOperand,
  a: KernelOperand,
  image: KernelOperand,
  settings: ComputeSettings,
): void {
  const [n, c, h, w] = params.input;
  const [kh, kw] = params.kernel;
  const output = params.output;
  const forward = kind === "forward";
  const flat = forward
    ? flattens(output, out.strides.slice(2, 4))
    : flattens([c / params.groups, kh, kw], out.strides.slice(2, 5)) &&
      flattens(output, a.strides.slice(2, 4));
  if (!flat) {
    throw new RangeError(`convProduct (${kind}): the output's or gradient's trailing axes do not flatten`);
  }
  args.shape([n, c, kh, kw, output[0], output[1]])
    .operand(0, out.offset, out.strides)
    .operand(1, a.offset, a.strides)
    .operand(2, image.offset, image.strides)
    .op(forward ? 0 : 1, MODE_CODE[settings.mode], settings.threads)
    .int(0, params.stride[0])
    .int(1, params.stride[1])
    .int(2, params.padding[0])
    .int(3, params.padding[1])
    .int(4, params.dilation[0])
    .int(5, params.dilation[1])
    .int(6, h)
    .int(7, w)
    .int(8, params.groups)
    .int(9, params.outChannels);
  if (native.zt_conv_product_f32(args.pointer, out.pointer, a.pointer, image.pointer) !== Status.ok) {
    throw new RangeError(`convProduct (${kind}): out of native memory for the packing buffers`);
  }
}

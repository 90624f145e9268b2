/**
 * 2-D pooling over NCHW tensors (or one CHW image). Max pooling runs the seam's `maxPool2d` kernel (spec 000
 * §9); average pooling is a mean over a strided window view, so it accumulates in f64 like every reduction.
 *
 * @module
 */
import { DType } from "../core/dtype.ts";
import { OptionError, TensorShapeError } from "../core/errors.ts";
import { checkBoolean, checkInteger, checkOptions, describe } from "../core/options.ts";
import { computeSettings, GradMode, kernels } from "../context.ts";
import { formatShape } from "../core/shape.ts";
import { allocate, isTensor, operandOf, rankOf, shapeOf, stridesOf, Tensor } from "../tensor.ts";
import { ReduceOp } from "../kernels/types.ts";
import { record, shouldRecord } from "../autograd/record.ts";
import type { RecordAttributes } from "../autograd/record.ts";
import { div } from "./elementwise.ts";
import { slice, squeeze, unsqueeze, viewOf } from "./views.ts";
import { mean } from "./reduce.ts";
import { tidy } from "../memory/scope.ts";
import { cast, copyElements } from "./copy.ts";
import { checkImage } from "./conv.ts";
import { concat } from "./nn.ts";
import { checkF32, newOutput, pair, sweepExtents, windowStride } from "./common.ts";

/** Options of `maxPool2d`: a number or [h, w] for each pair. */
export interface Pool2dOptions {
  /** The window's extents. */
  readonly kernel: number | readonly [number, number];
  /** The step between windows. @default kernel */
  readonly stride?: number | readonly [number, number];
  /** −∞ added on both sides of each spatial axis; smaller than the kernel. @default 0 */
  readonly padding?: number | readonly [number, number];
  /** The spacing between the window's taps. @default 1 */
  readonly dilation?: number | readonly [number, number];
  /** Round the output extent up, as PyTorch's `ceil_mode` (a last window must start inside). @default false */
  readonly ceilMode?: boolean;
  /** Also return each winner's position `y·W + x` within its plane, as I64 (`{ values, indices }`). */
  readonly returnIndices?: boolean;
}

/** What `maxPool2d` returns with `returnIndices: true`: the maxima, and where each was (PyTorch's indices). */
export interface MaxPool2dResult {
  /** The pooled values. */
  readonly values: Tensor;
  /** I64, the values' shape: each winner's position `y·W + x` within its (n, c) plane. */
  readonly indices: Tensor;
}

/** Options of `avgPool2d`: a number or `[h, w]` for each pair. */
export interface AvgPool2dOptions {
  /** The window's extents. */
  readonly kernel: number | readonly [number, number];
  /** The step between windows. @default kernel */
  readonly stride?: number | readonly [number, number];
  /** Zeros added on both sides; at most half the kernel. @default 0 */
  readonly padding?: number | readonly [number, number];
  /** Round the output extent up, as PyTorch's `ceil_mode`. @default false */
  readonly ceilMode?: boolean;
  /** Count the padding's zeros in each window's divisor (PyTorch's `count_include_pad`). @default true */
  readonly countIncludePad?: boolean;
  /** Divide every window's sum by this instead (PyTorch's `divisor_override`). */
  readonly divisorOverride?: number;
}

/**
 * 2-D max pooling over an NCHW F32 tensor (or one CHW image) by spec 000 §9: the window of output o starts at
 * `o·stride − pad`, its taps `dilation` apart, only in-bounds taps count, the first element wins ties, a NaN
 * wins (the first NaN); output extent `⌊(size + 2·pad − dilation·(kernel − 1) − 1)/stride⌋ + 1` (rounded up
 * with `ceilMode`, PyTorch's rule), with `pad < kernel`. Winner indices are computed only while recording (saved
 * as an owned Int32 slot) or when `returnIndices` asks for them; the backward pass adds each output's gradient
 * at its winner with the seam's `indexAdd` kernel.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([1, 5, 2, 4, 3, 0, 9, 8, 7, 6, 1, 2, 3, 4, 5, 6], [1, 1, 4, 4]);
 * using y = ops.maxPool2d(x, { kernel: 2 });
 * assert.ok(y.toArray().join() === "5,9,7,6");
 * const { values, indices } = ops.maxPool2d(x, { kernel: 3, stride: 2, ceilMode: true, returnIndices: true });
 * assert.ok(values.toArray().join() === "9,9,7,6" && indices.toArray().join() === "6,6,8,15");
 * ```
 */
export function maxPool2d(
  x: Tensor,
  options: Pool2dOptions & { readonly returnIndices: true },
): MaxPool2dResult;
export function maxPool2d(x: Tensor, options: Pool2dOptions): Tensor;
export function maxPool2d(x: Tensor, options: Pool2dOptions): Tensor | MaxPool2dResult {
  const op = "maxPool2d";
  checkF32(op, x);
  checkImage(op, x);
  options = checkOptions(op, options, [
    "kernel",
    "stride",
    "padding",
    "dilation",
    "ceilMode",
    "returnIndices",
  ]);
  const returnIndices = checkBoolean(op, "returnIndices", options.returnIndices, false);
  if (rankOf(x) === 3) {
    const pool = maxPool2d as (x: Tensor, options: Pool2dOptions) => Tensor | MaxPool2dResult;
    const batched = pool(unsqueeze(x, 0), options);
    if (isTensor(batched)) return squeeze(batched, 0);
    return { values: squeeze(batched.values, 0), indices: squeeze(batched.indices, 0) };
  }
  const kernel = pair(op, "kernel", options.kernel, 1);
  const stride = windowStride(op, options.stride ?? kernel);
  const padding = pair(op, "padding", options.padding ?? 0, 0);
  const dilation = pair(op, "dilation", options.dilation ?? 1, 1);
  const ceilMode = checkBoolean(op, "ceilMode", options.ceilMode, false);
  for (const axis of [0, 1]) {
    if (padding[axis] >= kernel[axis]) {
      throw new TensorShapeError(
        op,
        `padding ${padding[axis]} must be smaller than the kernel ${kernel[axis]}`,
        [shapeOf(x)],
      );
    }
  }
  const output = sweepExtents(op, shapeOf(x), kernel, stride, padding, dilation, ceilMode, true);
  const [n, c, h, w] = shapeOf(x);
  const y = newOutput(op, [n, c, output[0], output[1]]);
  const recording = shouldRecord(x);
  const indices = recording || returnIndices
    ? allocate(op, shapeOf(y), DType.I32, false, { scoped: true })
    : null;
  kernels().maxPool2d(
    { input: [n, c, h, w], kernel, stride, padding, dilation, output, localIndices: true },
    operandOf(y, op),
    operandOf(x, op),
    indices === null ? null : operandOf(indices, op),
    computeSettings(),
  );
  const values = recording
    ? record(y, "MaxPool2d", [x], {
      saved: [indices],
      attrs: { kernel, stride, padding, dilation },
      owned: [indices!],
    })
    : y;
  if (!returnIndices) return values;
  const wide = cast(indices!, DType.I64);
  if (!recording) indices!.dispose();
  return { values, indices: wide };
}

/**
 * The gradient of a max pooling's input [N, C, H, W] from the output's gradient `g` [N, C, OH, OW] and the
 * winners' positions within each plane (Int32, contiguous), by the seam's `maxPool2dBackward` kernel: each
 * element +0 plus the gradients of the outputs it won, in output order.
 */
export function maxPool2dBackward(
  g: Tensor,
  indices: Tensor,
  inputShape: readonly number[],
  attrs: RecordAttributes["MaxPool2d"],
): Tensor {
  const op = "backward";
  const [n, c, h, w] = inputShape;
  const [, , oh, ow] = shapeOf(g);
  const grad = allocate(op, inputShape, DType.F32, false, { scoped: true });
  kernels().maxPool2dBackward(
    { input: [n, c, h, w], ...attrs, output: [oh, ow] },
    operandOf(grad, op),
    operandOf(g, op),
    operandOf(indices, op),
    computeSettings(),
  );
  return grad;
}

/**
 * 2-D average pooling of `x` [N, C, H, W] (or [C, H, W]) with PyTorch's options and defaults: by default the
 * padding counts as zeros in each window's average (`countIncludePad`), so each output divides by KH·KW and is
 * a mean over a strided window view (accumulated in f64, one rounding). With `ceilMode`, a last window may
 * reach past the padding and divides by its extent clipped to the padded input; without `countIncludePad` each
 * window divides by its in-bounds extent; `divisorOverride` replaces every divisor. Those cases sum the window
 * (f64, one rounding) and divide by the divisor (a second rounding), as PyTorch's f32 kernel divides its sum.
 * Records AvgPool2d (attributes kernel, stride, padding and the extra right padding of ceil mode; saved: the
 * divisors [OH, OW] when they are not all KH·KW).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], [1, 1, 4, 4]);
 * using y = ops.avgPool2d(x, { kernel: 2 });
 * assert.deepEqual([...y.toArray()], [3.5, 5.5, 11.5, 13.5]);
 * using edge = ops.avgPool2d(x, { kernel: 3, stride: 2, ceilMode: true });
 * assert.deepEqual([...edge.toArray()], [6, 7.5, 12, 13.5]);
 * ```
 */
export function avgPool2d(x: Tensor, options: AvgPool2dOptions): Tensor {
  const op = "avgPool2d";
  options = checkOptions(op, options, [
    "kernel",
    "stride",
    "padding",
    "ceilMode",
    "countIncludePad",
    "divisorOverride",
  ]);
  checkF32(op, x);
  checkImage(op, x);
  if (rankOf(x) === 3) return squeeze(avgPool2d(unsqueeze(x, 0), options), 0);
  const kernel = pair(op, "kernel", options.kernel, 1);
  const stride = windowStride(op, options.stride ?? kernel);
  const padding = pair(op, "padding", options.padding ?? 0, 0);
  const ceilMode = checkBoolean(op, "ceilMode", options.ceilMode, false);
  const includePad = checkBoolean(op, "countIncludePad", options.countIncludePad, true);
  const override = options.divisorOverride;
  if (override !== undefined) checkInteger(op, "divisorOverride", override, 1);
  for (const axis of [0, 1]) {
    if (2 * padding[axis] > kernel[axis]) {
      throw new TensorShapeError(
        op,
        `padding ${formatShape(padding)} must be at most half the kernel ${formatShape(kernel)}`,
        [shapeOf(x)],
      );
    }
  }
  const output = sweepExtents(op, shapeOf(x), kernel, stride, padding, [1, 1], ceilMode, false);
  const [n, c, h, w] = shapeOf(x);
  const extra = [0, 1].map((axis) =>
    Math.max(0, (output[axis] - 1) * stride[axis] + kernel[axis] - (shapeOf(x)[2 + axis] + 2 * padding[axis]))
  ) as [number, number];
  // Each window's divisor along one axis, as PyTorch computes it.
  const divisors = [0, 1].map((axis) =>
    Array.from({ length: output[axis] }, (_, o) => {
      const size = shapeOf(x)[2 + axis];
      const start = o * stride[axis] - padding[axis];
      const end = Math.min(start + kernel[axis], size + padding[axis]);
      return includePad ? end - start : Math.min(end, size) - Math.max(start, 0);
    })
  );
  const uniform = override === undefined && divisors.every((d, axis) => d.every((v) => v === kernel[axis]));
  const padded = allocate(
    op,
    [n, c, h + 2 * padding[0] + extra[0], w + 2 * padding[1] + extra[1]],
    DType.F32,
    true,
    {
      scoped: true,
    },
  );
  let divisor: Tensor | null = null;
  let y: Tensor;
  try {
    const s = stridesOf(padded);
    copyElements(
      op,
      viewOf(padded, { shape: shapeOf(x), strides: s, offset: padding[0] * s[2] + padding[1] * s[3] }),
      x,
    );
    const shape = [n, c, output[0], output[1], kernel[0], kernel[1]];
    const windows = [s[0], s[1], stride[0] * s[2], stride[1] * s[3], s[2], s[3]];
    const sums = newOutput(op, [n, c, output[0], output[1]]);
    const kind = uniform ? ReduceOp.Mean : ReduceOp.Sum;
    kernels().reduce(kind, shape, 2, operandOf(sums, op), operandOf(padded, op, windows), computeSettings());
    if (uniform) {
      y = sums;
    } else {
      const [dh, dw] = divisors;
      const values = Float32Array.from(
        { length: output[0] * output[1] },
        (_, i) => override ?? dh[Math.floor(i / output[1])] * dw[i % output[1]],
      );
      divisor = Tensor.from(values, [output[0], output[1]]);
      y = GradMode.noGrad(() => div(sums, divisor!));
      sums.dispose();
    }
  } finally {
    padded.dispose();
  }
  if (!shouldRecord(x)) {
    divisor?.dispose();
    return y;
  }
  return record(y, "AvgPool2d", [x], {
    saved: divisor === null ? [] : [divisor],
    attrs: extra[0] === 0 && extra[1] === 0
      ? { kernel, stride, padding }
      : { kernel, stride, padding, extra },
    owned: divisor === null ? [] : [divisor],
  });
}

/**
 * PyTorch's `adaptive_avg_pool2d`: `x` [N, C, H, W] (or [C, H, W]) averaged to `outputSize` [OH, OW] (a number
 * for both; `null` keeps that extent), output (i, j) averaging rows `⌊i·H/OH⌋` to `⌈(i + 1)·H/OH⌉` and the
 * same for columns. Where the extents divide, it is `avgPool2d` with kernel = stride = H/OH; otherwise a
 * composition of slices, means and one concatenation per axis (rows first, then columns), so its rule is
 * theirs; the two-stage mean rounds twice.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.arange(6).reshape([1, 1, 2, 3]);
 * using y = ops.adaptiveAvgPool2d(x, [1, 2]);
 * assert.deepEqual([...y.toArray()], [2, 3]);
 * ```
 */
export function adaptiveAvgPool2d(
  x: Tensor,
  outputSize: number | null | readonly [number | null, number | null],
): Tensor {
  const op = "adaptiveAvgPool2d";
  checkF32(op, x);
  checkImage(op, x);
  if (rankOf(x) === 3) return squeeze(adaptiveAvgPool2d(unsqueeze(x, 0), outputSize), 0);
  const sizes = Array.isArray(outputSize) ? outputSize : [outputSize, outputSize];
  if (sizes.length !== 2) {
    throw new OptionError(
      op,
      `outputSize must be a number, null or a pair [h, w], got ${describe(outputSize)}`,
    );
  }
  const output = [0, 1].map((axis) =>
    sizes[axis] === null ? shapeOf(x)[2 + axis] : checkInteger(op, "outputSize", sizes[axis], 1)
  ) as [number, number];
  const [h, w] = [shapeOf(x)[2], shapeOf(x)[3]];
  if (h === 0 || w === 0) {
    throw new TensorShapeError(op, `the input ${formatShape(shapeOf(x))} has an empty spatial axis`, [
      shapeOf(x),
    ]);
  }
  if (h % output[0] === 0 && w % output[1] === 0) {
    const kernel: [number, number] = [h / output[0], w / output[1]];
    return avgPool2d(x, { kernel, stride: kernel });
  }
  const run = () => {
    let t = x;
    for (const axis of [2, 3]) {
      const size = shapeOf(x)[axis];
      const count = output[axis - 2];
      const parts = Array.from({ length: count }, (_, i) => {
        const start = Math.floor((i * size) / count);
        const end = Math.ceil(((i + 1) * size) / count);
        return mean(slice(t, axis, start, end), axis, { keepDims: true });
      });
      t = concat(parts, axis);
    }
    return t;
  };
  return shouldRecord(x) ? run() : tidy(run);
}

/**
 * 2-D pooling over NCHW tensors (or one CHW image). Max pooling runs the seam's `maxPool2d` kernel (spec 000
 * §9); average pooling is a mean over a strided window view, so it accumulates in f64 like every reduction.
 *
 * @module
 */
import { DType } from "../core/dtype.ts";
import { TensorShapeError } from "../core/errors.ts";
import { checkOptions } from "../core/options.ts";
import { computeSettings, kernels } from "../context.ts";
import { formatShape } from "../core/shape.ts";
import { allocate, type Tensor } from "../tensor.ts";
import { ReduceOp } from "../kernels/types.ts";
import { record, shouldRecord } from "../autograd/record.ts";
import { checkF32, newOutput } from "./elementwise.ts";
import { squeeze, unsqueeze } from "./views.ts";
import { checkImage, outputExtents, padSpatial, type WindowGeometry } from "./conv.ts";
import { checkPadded, pair, windowStride } from "./nn.ts";

/** Pooling options: a number or [h, w] for each. */
export interface Pool2dOptions {
  /** The window's extents. */
  readonly kernel: number | readonly [number, number];
  /** The step between windows. @default kernel */
  readonly stride?: number | readonly [number, number];
  /** −∞ added on both sides of each spatial axis; smaller than the kernel. @default 0 */
  readonly padding?: number | readonly [number, number];
}

/** Options of `avgPool2d`: a number or `[h, w]` for each. */
export interface AvgPool2dOptions {
  /** The window's extents. */
  readonly kernel: number | readonly [number, number];
  /** The step between windows. @default kernel */
  readonly stride?: number | readonly [number, number];
  /** Zeros added on both sides, counted in every window's average; at most half the kernel. @default 0 */
  readonly padding?: number | readonly [number, number];
}

const POOL_KEYS = ["kernel", "stride", "padding"] as const;

/**
 * 2-D max pooling over an NCHW F32 tensor (or one CHW image) (spec 000 §9): the window starts at `o·stride − pad`, only in-bounds
 * positions count, the first element wins ties, a NaN wins (the first NaN); output extent
 * `floor((size + 2·pad − kernel)/stride) + 1`, with `pad < kernel`. Winner indices are computed only while
 * recording (saved as an owned Int32 slot).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([1, 5, 2, 4, 3, 0, 9, 8, 7, 6, 1, 2, 3, 4, 5, 6], [1, 1, 4, 4]);
 * using y = ops.maxPool2d(x, { kernel: 2 });
 * assert.ok(y.toArray().join() === "5,9,7,6");
 * ```
 */
export function maxPool2d(x: Tensor, options: Pool2dOptions): Tensor {
  const op = "maxPool2d";
  checkF32(op, x);
  checkImage(op, x);
  if (x.rank === 3) return squeeze(maxPool2d(unsqueeze(x, 0), options), 0);
  const { kernel: kernelOption, stride: strideOption, padding: paddingOption } = checkOptions(
    op,
    options,
    POOL_KEYS,
  );
  const kernel = pair(op, "kernel", kernelOption, 1);
  const stride = windowStride(op, strideOption ?? kernel);
  const padding = pair(op, "padding", paddingOption ?? 0, 0);
  const [n, c, h, w] = x.shape;
  const out: number[] = [];
  for (const [axis, size] of [[0, h], [1, w]] as const) {
    checkPadded(op, x.shape, size, padding[axis]);
    if (padding[axis] >= kernel[axis]) {
      throw new TensorShapeError(
        op,
        `padding ${padding[axis]} must be smaller than the kernel ${kernel[axis]}`,
        [x.shape],
      );
    }
    const extent = Math.floor((size + 2 * padding[axis] - kernel[axis]) / stride[axis]) + 1;
    if (extent < 1) {
      throw new TensorShapeError(
        op,
        `the input ${formatShape(x.shape)} is smaller than the kernel ${formatShape(kernel)} with padding ${
          formatShape(padding)
        }`,
        [x.shape],
      );
    }
    out.push(extent);
  }
  const y = newOutput(op, [n, c, out[0], out[1]]);
  const recording = shouldRecord(x);
  const indices = recording ? allocate(op, y.shape, DType.I32, false, { scoped: true }) : null;
  kernels().maxPool2d(
    { input: [n, c, h, w], kernel, stride, padding },
    y.operand(op),
    x.operand(op),
    indices === null ? null : indices.operand(op),
    computeSettings(),
  );
  if (indices === null) return y;
  return record(y, "MaxPool2d", [x], {
    saved: [indices],
    attrs: { kernel, stride, padding },
    owned: [indices],
  });
}

/** The checked window of an average pooling. */
function poolGeometry(op: string, x: Tensor, options: AvgPool2dOptions): WindowGeometry {
  const kernel = pair(op, "kernel", options.kernel, 1);
  const stride = windowStride(op, options.stride ?? kernel);
  const padding = pair(op, "padding", options.padding ?? 0, 0);
  for (const axis of [0, 1]) {
    if (2 * padding[axis] > kernel[axis]) {
      throw new TensorShapeError(
        op,
        `padding ${formatShape(padding)} must be at most half the kernel ${formatShape(kernel)}`,
        [x.shape],
      );
    }
  }
  const dilation: [number, number] = [1, 1];
  return {
    kernel,
    stride,
    padding,
    dilation,
    output: outputExtents(op, x.shape, kernel, stride, padding, dilation),
  };
}

/**
 * 2-D average pooling of `x` [N, C, H, W] (or [C, H, W]) with PyTorch's defaults: padding counts as zeros in
 * every window's average (`count_include_pad`), so each output divides by KH·KW; output extent
 * `floor((size + 2·padding − kernel)/stride) + 1`. Records AvgPool2d (attributes kernel, stride, padding; nothing
 * saved).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], [1, 1, 4, 4]);
 * using y = ops.avgPool2d(x, { kernel: 2 });
 * assert.deepEqual([...y.toArray()], [3.5, 5.5, 11.5, 13.5]);
 * ```
 */
export function avgPool2d(x: Tensor, options: AvgPool2dOptions): Tensor {
  const op = "avgPool2d";
  options = checkOptions(op, options, ["kernel", "stride", "padding"]);
  checkF32(op, x);
  checkImage(op, x);
  if (x.rank === 3) return squeeze(avgPool2d(unsqueeze(x, 0), options), 0);
  const geometry = poolGeometry(op, x, options);
  const { kernel, stride, padding, output } = geometry;
  const [n, c] = x.shape;
  const y = newOutput(op, [n, c, output[0], output[1]]);
  const padded = padSpatial(op, x, padding);
  try {
    const s = padded.strides;
    const shape = [n, c, output[0], output[1], kernel[0], kernel[1]];
    const windows = [s[0], s[1], stride[0] * s[2], stride[1] * s[3], s[2], s[3]];
    kernels().reduce(ReduceOp.Mean, shape, 2, y.operand(op), padded.operand(op, windows), computeSettings());
  } finally {
    if (padded !== x) padded.dispose();
  }
  if (!shouldRecord(x)) return y;
  return record(y, "AvgPool2d", [x], { attrs: { kernel, stride, padding } });
}

/**
 * 2-D convolution over NCHW tensors (and conv1d, convTranspose2d on top of it), built from the seam's kernels
 * only, so the reference kernel set runs them too. Convolution and its weight gradient are implicit GEMMs (one
 * `convProduct` call each, the windows packed straight from the image into the product's panels); the input
 * gradient is one too at stride 1 with one group (the output gradient convolved with the flipped, transposed
 * weights), and otherwise multiplies by the transposed weights and folds the columns back (col2im).
 *
 * @module
 */
import { DType } from "../core/dtype.ts";
import { OptionError, TensorShapeError } from "../core/errors.ts";
import { checkInteger, checkOptions } from "../core/options.ts";
import { computeSettings, GradMode, kernels } from "../context.ts";
import { formatShape } from "../core/shape.ts";
import {
  allocate,
  allocateOutput,
  operandOf,
  rankOf,
  requiresGradOf,
  shapeOf,
  type Tensor,
} from "../tensor.ts";
import type { ConvProductParams, ConvWindowParams } from "../kernels/conv.ts";
import { record, shouldRecord } from "../autograd/record.ts";
import { addInto, checkF32, pair, sweepExtents, windowStride } from "./common.ts";
import { matmul } from "./linalg.ts";
import { reshape, squeeze, transpose, unsqueeze } from "./views.ts";

/** Options of `conv2d`: a number or `[h, w]` for each of stride, padding and dilation. */
export interface Conv2dOptions {
  /** A bias of shape [out channels], added to every output position. */
  readonly bias?: Tensor;
  /** The step between output positions. @default 1 */
  readonly stride?: number | readonly [number, number];
  /**
   * Zeros added on both sides of each spatial axis; `"valid"` for none, `"same"` (stride 1 only) for an output
   * of the input's extent, with the odd one of an odd total on the bottom/right as in PyTorch. @default 0
   */
  readonly padding?: number | readonly [number, number] | "same" | "valid";
  /** The spacing between kernel taps. @default 1 */
  readonly dilation?: number | readonly [number, number];
  /** Input and output channels split into this many independent groups. @default 1 */
  readonly groups?: number;
}

/** Options of `conv1d`: each a number, over the one spatial axis. */
export interface Conv1dOptions {
  /** A bias of shape [out channels], added to every output position. */
  readonly bias?: Tensor;
  /** The step between output positions. @default 1 */
  readonly stride?: number;
  /** Zeros added on both ends, or `"valid"` (none) or `"same"` (stride 1 only; as for `conv2d`). @default 0 */
  readonly padding?: number | "same" | "valid";
  /** The spacing between kernel taps. @default 1 */
  readonly dilation?: number;
  /** Input and output channels split into this many independent groups. @default 1 */
  readonly groups?: number;
}

/** Where a window sweep reads a padded NCHW input: the spatial pairs and the output extent. */
export interface WindowGeometry {
  readonly kernel: readonly [number, number];
  readonly stride: readonly [number, number];
  readonly padding: readonly [number, number];
  readonly dilation: readonly [number, number];
  readonly output: readonly [number, number];
}

/** The seam's window parameters of `geometry` over an image of `shape` [N, C, H, W]. */
function windowParams(shape: readonly number[], geometry: WindowGeometry): ConvWindowParams {
  const [n, c, h, w] = shape;
  const { kernel, stride, padding, dilation, output } = geometry;
  return { input: [n, c, h, w], kernel, stride, padding, dilation, output };
}

/**
 * The windows of `x` [N, C, H, W] as columns [N, C, KH, KW, OH, OW] (im2col) in a new scoped tensor: one
 * kernel call, zeros where a tap falls in the padding.
 */
export function unfold(op: string, x: Tensor, geometry: WindowGeometry): Tensor {
  const { kernel, output } = geometry;
  const [n, c] = shapeOf(x);
  const columns = allocate(op, [n, c, kernel[0], kernel[1], output[0], output[1]], DType.F32, false, {
    scoped: true,
  });
  kernels().im2col(
    windowParams(shapeOf(x), geometry),
    operandOf(columns, op),
    operandOf(x, op),
    computeSettings(),
  );
  return columns;
}

/**
 * The adjoint of `unfold` (col2im): columns [N, C, KH, KW, OH, OW] (any strides, 0 included) summed back into a
 * new scoped input-shaped tensor by one kernel call; taps in the padding are dropped.
 */
export function fold(
  op: string,
  columns: Tensor,
  geometry: WindowGeometry,
  inputShape: readonly number[],
): Tensor {
  const image = allocate(op, inputShape, DType.F32, false, { scoped: true });
  kernels().col2im(
    windowParams(inputShape, geometry),
    operandOf(image, op),
    operandOf(columns, op),
    computeSettings(),
  );
  return image;
}

/** The checked geometry of a convolution of `x` [N, C, H, W] by `weight` [O, C/groups, KH, KW]. */
function convGeometry(op: string, x: Tensor, weight: Tensor, options: Conv2dOptions): WindowGeometry {
  if (rankOf(weight) !== 4) {
    throw new TensorShapeError(
      op,
      `weight must be [out channels, in channels / groups, kH, kW], got ${formatShape(shapeOf(weight))}`,
      [shapeOf(x), shapeOf(weight)],
    );
  }
  const groups = checkInteger(op, "groups", options.groups ?? 1, 1);
  const [o, cg, kh, kw] = shapeOf(weight);
  if (cg === 0) {
    throw new TensorShapeError(
      op,
      `the weight ${formatShape(shapeOf(weight))} has no input channels; each group needs at least one`,
      [shapeOf(x), shapeOf(weight)],
    );
  }
  const c = shapeOf(x)[1];
  if (cg * groups !== c || o % groups !== 0) {
    throw new TensorShapeError(
      op,
      `with ${groups} group(s), the input's ${c} channels must equal weight dimension 1 (${cg}) × groups and ` +
        `the ${o} output channels must divide by groups; got input ${formatShape(shapeOf(x))} and weight ${
          formatShape(shapeOf(weight))
        }`,
      [shapeOf(x), shapeOf(weight)],
    );
  }
  if (kh === 0 || kw === 0) {
    throw new TensorShapeError(op, `the kernel ${formatShape([kh, kw])} is empty`, [shapeOf(weight)]);
  }
  const bias = options.bias;
  if (bias !== undefined && (rankOf(bias) !== 1 || shapeOf(bias)[0] !== o)) {
    throw new TensorShapeError(op, `bias must be [${o}], got ${formatShape(shapeOf(bias))}`, [
      shapeOf(weight),
      shapeOf(bias),
    ]);
  }
  const kernel: [number, number] = [kh, kw];
  const stride = windowStride(op, options.stride ?? 1);
  const dilation = pair(op, "dilation", options.dilation ?? 1, 1);
  const spec = options.padding ?? 0;
  if (spec === "same") {
    if (stride[0] !== 1 || stride[1] !== 1) {
      throw new OptionError(
        op,
        `padding "same" needs stride 1 (as in PyTorch), got stride ${formatShape(stride)}`,
      );
    }
    // The total dilation·(k − 1) per axis; an odd one puts its extra zero on the bottom/right, which the
    // kernels read as outside the image (only the top/left padding is an offset).
    const padding: [number, number] = [
      Math.floor((dilation[0] * (kh - 1)) / 2),
      Math.floor((dilation[1] * (kw - 1)) / 2),
    ];
    return { kernel, stride, padding, dilation, output: [shapeOf(x)[2], shapeOf(x)[3]] };
  }
  const padding = spec === "valid" ? [0, 0] as [number, number] : pair(op, "padding", spec, 0);
  const output = sweepExtents(op, shapeOf(x), kernel, stride, padding, dilation, false, false);
  return { kernel, stride, padding, dilation, output };
}

/** The checked rank: 4 (NCHW) or 3 (one unbatched CHW image). */
export function checkImage(op: string, x: Tensor): void {
  if (rankOf(x) !== 3 && rankOf(x) !== 4) {
    throw new TensorShapeError(
      op,
      `${op} takes an NCHW tensor (or one CHW image), got shape ${formatShape(shapeOf(x))}`,
      [shapeOf(x)],
    );
  }
}

/** The seam's product parameters of a convolution of `shape` [N, C, H, W] into `outChannels` channels. */
export function productParams(
  shape: readonly number[],
  geometry: WindowGeometry,
  groups: number,
  outChannels: number,
): ConvProductParams {
  return { ...windowParams(shape, geometry), groups, outChannels };
}

/**
 * The convolution proper: one implicit-GEMM kernel call (the windows packed straight from `x`, no column
 * matrix) gives [N, O, OH, OW]; the bias is added in place.
 */
function convolve(
  op: string,
  x: Tensor,
  weight: Tensor,
  bias: Tensor | undefined,
  geometry: WindowGeometry,
): Tensor {
  const groups = shapeOf(x)[1] / shapeOf(weight)[1];
  const [n] = shapeOf(x);
  const [o] = shapeOf(weight);
  const [oh, ow] = geometry.output;
  return GradMode.noGrad(() => {
    const y = allocateOutput(op, [n, o, oh, ow], DType.F32);
    kernels().convProduct(
      productParams(shapeOf(x), geometry, groups, o),
      "forward",
      operandOf(y, op),
      operandOf(weight, op),
      operandOf(x, op),
      computeSettings(),
    );
    if (bias !== undefined) addInto(op, y, reshape(bias, [o, 1, 1]));
    return y;
  });
}

/**
 * 2-D convolution (cross-correlation, as in PyTorch) of `x` [N, C, H, W] (or one image [C, H, W]) by `weight`
 * [O, C/groups, KH, KW], with an optional `bias` [O]. Output [N, O, OH, OW] with
 * `OH = floor((H + 2·padding − dilation·(KH − 1) − 1)/stride) + 1`. Records Conv2d: slot 0 the input (when
 * the weight needs a gradient), slot 1 the weight (when the input needs one); attributes kernel, stride, padding,
 * dilation (each h, w) and groups.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.arange(9).reshape([1, 1, 3, 3]);
 * using w = Tensor.from([[[[1, 0], [0, 1]]]]); // adds each pixel to its lower-right neighbour
 * using y = ops.conv2d(x, w, { bias: Tensor.from([10]) });
 * assert.deepEqual([...y.shape], [1, 1, 2, 2]);
 * assert.deepEqual([...y.toArray()], [14, 16, 20, 22]);
 * ```
 */
export function conv2d(x: Tensor, weight: Tensor, options?: Conv2dOptions): Tensor {
  const op = "conv2d";
  options = checkOptions(op, options, ["bias", "stride", "padding", "dilation", "groups"]);
  checkF32(op, x, weight);
  if (options.bias !== undefined) checkF32(op, options.bias);
  checkImage(op, x);
  // One image is a batch of one, so errors name the batched shape [1, C, H, W].
  if (rankOf(x) === 3) return squeeze(conv2d(unsqueeze(x, 0), weight, options), 0);
  const geometry = convGeometry(op, x, weight, options);
  const bias = options.bias;
  const y = convolve(op, x, weight, bias, geometry);
  const inputs = bias === undefined ? [x, weight] : [x, weight, bias];
  if (!shouldRecord(...inputs)) return y;
  const { kernel, stride, padding, dilation } = geometry;
  return record(y, "Conv2d", inputs, {
    saved: [requiresGradOf(weight) ? x : null, requiresGradOf(x) ? weight : null],
    attrs: { kernel, stride, padding, dilation, groups: shapeOf(x)[1] / shapeOf(weight)[1] },
  });
}

/**
 * 1-D convolution (cross-correlation) of `x` [N, C, L] (or one sequence [C, L]) by `weight` [O, C/groups, K],
 * with an optional `bias` [O]: a `conv2d` over a height-1 image (views, no copies), so its gradients are
 * conv2d's. Output [N, O, OL] with `OL = floor((L + 2·padding − dilation·(K − 1) − 1)/stride) + 1`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[[1, 2, 3, 4]]]);
 * using w = Tensor.from([[[1, -1]]]);
 * using y = ops.conv1d(x, w, { padding: "same" });
 * assert.deepEqual([...y.toArray()], [-1, -1, -1, 4]);
 * ```
 */
export function conv1d(x: Tensor, weight: Tensor, options?: Conv1dOptions): Tensor {
  const op = "conv1d";
  options = checkOptions(op, options, ["bias", "stride", "padding", "dilation", "groups"]);
  checkF32(op, x, weight);
  if ((rankOf(x) !== 2 && rankOf(x) !== 3) || rankOf(weight) !== 3) {
    throw new TensorShapeError(
      op,
      `conv1d takes an NCL tensor (or one CL sequence) and a weight [out channels, in channels / groups, k], ` +
        `got ${formatShape(shapeOf(x))} and ${formatShape(shapeOf(weight))}`,
      [shapeOf(x), shapeOf(weight)],
    );
  }
  const one = (name: string, value: number | undefined, fallback: number, min: number) =>
    checkInteger(op, name, value ?? fallback, min);
  const spec = options.padding ?? 0;
  if (typeof spec === "string" && spec !== "same" && spec !== "valid") {
    throw new OptionError(op, `padding must be an integer ≥ 0, "same" or "valid", got "${spec}"`);
  }
  const padding = typeof spec === "string" ? spec : [0, one("padding", spec, 0, 0)] as const;
  const stride = one("stride", options.stride, 1, 1);
  if (spec === "same" && stride !== 1) {
    throw new OptionError(op, `padding "same" needs stride 1 (as in PyTorch), got stride ${stride}`);
  }
  const y = conv2d(unsqueeze(x, -2), unsqueeze(weight, 2), {
    bias: options.bias,
    groups: options.groups,
    stride: [1, stride],
    dilation: [1, one("dilation", options.dilation, 1, 1)],
    padding,
  });
  return squeeze(y, -2);
}

/** Options of `convTranspose2d`: a number or `[h, w]` for each of stride, padding, outputPadding and dilation. */
export interface ConvTranspose2dOptions {
  /** A bias of shape [out channels], added to every output position. */
  readonly bias?: Tensor;
  /** The step between the input's positions in the output. @default 1 */
  readonly stride?: number | readonly [number, number];
  /** `dilation·(kernel − 1) − padding` zeros around the input, as the conv2d whose input gradient this is. @default 0 */
  readonly padding?: number | readonly [number, number];
  /** Extra rows/columns on the bottom/right of the output; less than the stride or the dilation. @default 0 */
  readonly outputPadding?: number | readonly [number, number];
  /** Input and output channels split into this many independent groups. @default 1 */
  readonly groups?: number;
  /** The spacing between kernel taps. @default 1 */
  readonly dilation?: number | readonly [number, number];
}

/**
 * The checked geometry of a transposed convolution of `x` [N, C, H, W] by `weight` [C, O/groups, KH, KW]: that of
 * the conv2d from the output [N, O, OH, OW] back to `x`, so `output` is [H, W].
 */
function transposeGeometry(op: string, x: Tensor, weight: Tensor, options: ConvTranspose2dOptions): {
  geometry: WindowGeometry;
  groups: number;
  outShape: [number, number, number, number];
} {
  const [n, c, h, w] = shapeOf(x);
  const groups = checkInteger(op, "groups", options.groups ?? 1, 1);
  if (
    rankOf(weight) !== 4 || shapeOf(weight)[0] !== c || c % groups !== 0 || shapeOf(weight)[2] === 0 ||
    shapeOf(weight)[3] === 0
  ) {
    throw new TensorShapeError(
      op,
      `weight must be [in channels (${c}, divisible by groups ${groups}), out channels / groups, kH, kW] with a ` +
        `non-empty kernel, got ${formatShape(shapeOf(weight))} for input ${formatShape(shapeOf(x))}`,
      [shapeOf(x), shapeOf(weight)],
    );
  }
  const o = shapeOf(weight)[1] * groups;
  const kernel: [number, number] = [shapeOf(weight)[2], shapeOf(weight)[3]];
  const stride = pair(op, "stride", options.stride ?? 1, 1);
  const padding = pair(op, "padding", options.padding ?? 0, 0);
  const outputPadding = pair(op, "outputPadding", options.outputPadding ?? 0, 0);
  const dilation = pair(op, "dilation", options.dilation ?? 1, 1);
  const size = [h, w].map((extent, axis) => {
    if (outputPadding[axis] >= Math.max(stride[axis], dilation[axis])) {
      throw new OptionError(
        op,
        `outputPadding ${formatShape(outputPadding)} must be smaller than the stride ${
          formatShape(stride)
        } or ` +
          `the dilation ${formatShape(dilation)}`,
      );
    }
    return (extent - 1) * stride[axis] - 2 * padding[axis] + dilation[axis] * (kernel[axis] - 1) +
      outputPadding[axis] + 1;
  });
  if (size[0] < 1 || size[1] < 1) {
    throw new TensorShapeError(
      op,
      `the output extents ${formatShape(size)} ((size − 1)·stride − 2·padding + dilation·(kernel − 1) + ` +
        `outputPadding + 1) must be positive`,
      [shapeOf(x), shapeOf(weight)],
    );
  }
  const bias = options.bias;
  if (bias !== undefined && (rankOf(bias) !== 1 || shapeOf(bias)[0] !== o)) {
    throw new TensorShapeError(op, `bias must be [${o}], got ${formatShape(shapeOf(bias))}`, [
      shapeOf(weight),
      shapeOf(bias),
    ]);
  }
  return {
    geometry: { kernel, stride, padding, dilation, output: [h, w] },
    groups,
    outShape: [n, o, size[0], size[1]],
  };
}

/**
 * 2-D transposed convolution of `x` [N, C, H, W] (or [C, H, W]) by `weight` [C, O/groups, KH, KW], with an
 * optional `bias` [O], as PyTorch's `conv_transpose2d`: the input gradient of the conv2d with the same options
 * (one batched matmul and one col2im). Output [N, O, OH, OW] with
 * `OH = (H − 1)·stride − 2·padding + dilation·(KH − 1) + outputPadding + 1`. Records ConvTranspose2d: slot 0
 * the input (when the weight needs a gradient), slot 1 the weight (when the input needs one); its input gradient
 * is conv2d's forward, its weight gradient a matmul against the unfolded output gradient.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.from([[[[1, 2]]]]);
 * using w = Tensor.from([[[[1, 10]]]]);
 * using y = ops.convTranspose2d(x, w, { stride: 2 });
 * assert.deepEqual([...y.toArray()], [1, 10, 2, 20]);
 * ```
 */
export function convTranspose2d(x: Tensor, weight: Tensor, options?: ConvTranspose2dOptions): Tensor {
  const op = "convTranspose2d";
  options = checkOptions(op, options, ["bias", "stride", "padding", "outputPadding", "groups", "dilation"]);
  checkF32(op, x, weight);
  if (options.bias !== undefined) checkF32(op, options.bias);
  checkImage(op, x);
  if (rankOf(x) === 3) return squeeze(convTranspose2d(unsqueeze(x, 0), weight, options), 0);
  const { geometry, groups, outShape } = transposeGeometry(op, x, weight, options);
  const [n, c, h, w] = shapeOf(x);
  const [, og, kh, kw] = shapeOf(weight);
  const bias = options.bias;
  const y = GradMode.noGrad(() => {
    const weightT = transpose(reshape(weight, [groups, c / groups, og * kh * kw]), -1, -2);
    const columns = matmul(weightT, reshape(x, [n, groups, c / groups, h * w]));
    const image = fold(op, reshape(columns, [n, outShape[1], kh, kw, h, w]), geometry, outShape);
    columns.dispose();
    if (bias !== undefined) addInto(op, image, reshape(bias, [outShape[1], 1, 1]));
    return image;
  });
  const inputs = bias === undefined ? [x, weight] : [x, weight, bias];
  if (!shouldRecord(...inputs)) return y;
  const { kernel, stride, padding, dilation } = geometry;
  return record(y, "ConvTranspose2d", inputs, {
    saved: [requiresGradOf(weight) ? x : null, requiresGradOf(x) ? weight : null],
    attrs: { kernel, stride, padding, dilation, groups },
  });
}

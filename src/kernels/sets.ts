/**
 * The two complete kernel sets: compute kernels plus data movement. `nativeKernels` runs the Zig kernels of the
 * selected ISA; `referenceKernels` is plain TypeScript and defines what every native kernel must compute.
 *
 * @module
 */
import type { KernelSet } from "./types.ts";
import { nativeKernels as nativeCompute } from "./native.ts";
import { referenceKernels as referenceCompute } from "./reference.ts";
import { nativeCopy, referenceCopy } from "./copy.ts";
import { nativeCast, referenceCast } from "./cast.ts";
import { nativeFromBlocked, nativeToBlocked, referenceFromBlocked, referenceToBlocked } from "./layout.ts";
import {
  nativeDequantize,
  nativeQuantize,
  type QuantFormat,
  referenceDequantize,
  referenceQuantize,
} from "./quant.ts";
import { nativeOptimizerStep, referenceOptimizerStep } from "./optim.ts";
import { nativeIndexAdd, referenceIndexAdd } from "./scatter.ts";
import { nativeIndex, referenceIndex } from "./indexing.ts";
import { nativeCtc, referenceCtc } from "./ctc.ts";
import { nativeNll, referenceNll } from "./nll.ts";
import { nativeRnnCell, referenceRnnCell } from "./rnn.ts";
import { nativeCol2im, nativeIm2col, referenceCol2im, referenceIm2col } from "./conv.ts";
import { nativeSelect, referenceSelect } from "./select.ts";
import { nativeNorm, nativeNormBackward, referenceNorm, referenceNormBackward } from "./norm.ts";
import { nativeIntegerKernels, referenceIntegerKernels } from "./integer.ts";
import {
  nativeAttention,
  nativeAttentionBackward,
  referenceAttention,
  referenceAttentionBackward,
} from "./attention.ts";

/**
 * The native kernels (the default set).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeKernels } from "@zigtensor/zigtensor";
 * assert.equal(nativeKernels.name, "native");
 * ```
 */
export const nativeKernels: KernelSet = {
  name: "native",
  binary: nativeCompute.binary,
  unary: nativeCompute.unary,
  reduce: nativeCompute.reduce,
  softmax: nativeCompute.softmax,
  matMul: nativeCompute.matMul,
  maxPool2d: nativeCompute.maxPool2d,
  copy: (elementBytes, shape, out, a, settings) => nativeCopy(elementBytes, shape, out, a, settings.threads),
  cast: (outDType, aDType, shape, out, a, settings) =>
    nativeCast(outDType, aDType, shape, out, a, settings.threads),
  toBlocked: (shape, b, bytes, out, a, settings) =>
    nativeToBlocked(shape, b, bytes, out, a, settings.threads),
  fromBlocked: (shape, b, bytes, out, a, settings) =>
    nativeFromBlocked(shape, b, bytes, out, a, settings.threads),
  quantize: (format, blocks, out, a, settings) =>
    nativeQuantize(format as QuantFormat, blocks, out, a, settings.threads),
  dequantize: (format, blocks, out, a, settings) =>
    nativeDequantize(format as QuantFormat, blocks, out, a, settings.threads),
  optimizerStep: nativeOptimizerStep,
  indexAdd: nativeIndexAdd,
  index: nativeIndex,
  ctc: nativeCtc,
  nll: nativeNll,
  rnnCell: nativeRnnCell,
  im2col: nativeIm2col,
  col2im: nativeCol2im,
  select: nativeSelect,
  norm: nativeNorm,
  normBackward: nativeNormBackward,
  attention: nativeAttention,
  attentionBackward: nativeAttentionBackward,
  ...nativeIntegerKernels,
};

/**
 * The reference kernels: scalar TypeScript loops, f64 accumulation, no threads.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceKernels, Tensor, TensorCompute } from "@zigtensor/zigtensor";
 * using a = Tensor.from([1, 2, 3]);
 * using s = TensorCompute.run({ kernels: referenceKernels }, () => a.sum());
 * assert.equal(s.item(), 6);
 * ```
 */
export const referenceKernels: KernelSet = {
  name: "reference",
  binary: referenceCompute.binary,
  unary: referenceCompute.unary,
  reduce: referenceCompute.reduce,
  softmax: referenceCompute.softmax,
  matMul: referenceCompute.matMul,
  maxPool2d: referenceCompute.maxPool2d,
  copy: (elementBytes, shape, out, a) => referenceCopy(elementBytes, shape, out, a),
  cast: (outDType, aDType, shape, out, a) => referenceCast(outDType, aDType, shape, out, a),
  toBlocked: (shape, b, bytes, out, a) => referenceToBlocked(shape, b, bytes, out, a),
  fromBlocked: (shape, b, bytes, out, a) => referenceFromBlocked(shape, b, bytes, out, a),
  quantize: (format, blocks, out, a) => referenceQuantize(format as QuantFormat, blocks, out, a),
  dequantize: (format, blocks, out, a) => referenceDequantize(format as QuantFormat, blocks, out, a),
  optimizerStep: referenceOptimizerStep,
  indexAdd: (params, out, src, index) => referenceIndexAdd(params, out, src, index),
  index: referenceIndex,
  ctc: referenceCtc,
  nll: referenceNll,
  rnnCell: referenceRnnCell,
  im2col: referenceIm2col,
  col2im: referenceCol2im,
  select: referenceSelect,
  norm: referenceNorm,
  normBackward: referenceNormBackward,
  attention: referenceAttention,
  attentionBackward: referenceAttentionBackward,
  ...referenceIntegerKernels,
};

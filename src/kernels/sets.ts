/**
 * The two complete kernel sets: compute kernels plus data movement. `nativeKernels` runs the Zig kernels of the
 * selected ISA; `referenceKernels` is plain TypeScript and defines what every native kernel must compute.
 *
 * @module
 */
import type { KernelSet } from "./types.ts";
import { OptionError } from "../core/errors.ts";
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
import {
  nativeRnnBackward,
  nativeRnnCell,
  nativeRnnForward,
  referenceRnnBackward,
  referenceRnnCell,
  referenceRnnForward,
} from "./rnn.ts";
import { nativePackedMatMul, referencePackedMatMul } from "./matmul.ts";
import {
  nativeCol2im,
  nativeConvProduct,
  nativeIm2col,
  referenceCol2im,
  referenceConvProduct,
  referenceIm2col,
} from "./conv.ts";
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
  maxPool2dBackward: nativeCompute.maxPool2dBackward,
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
  rnnForward: nativeRnnForward,
  rnnBackward: nativeRnnBackward,
  packedMatMul: nativePackedMatMul,
  im2col: nativeIm2col,
  col2im: nativeCol2im,
  convProduct: nativeConvProduct,
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
  maxPool2dBackward: referenceCompute.maxPool2dBackward,
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
  rnnForward: referenceRnnForward,
  rnnBackward: referenceRnnBackward,
  packedMatMul: referencePackedMatMul,
  im2col: referenceIm2col,
  col2im: referenceCol2im,
  convProduct: referenceConvProduct,
  select: referenceSelect,
  norm: referenceNorm,
  normBackward: referenceNormBackward,
  attention: referenceAttention,
  attentionBackward: referenceAttentionBackward,
  ...referenceIntegerKernels,
};

/** The kernel each public stand-in runs when its set is given to `TensorCompute.run` or `setDefaultKernels`. */
const NATIVE_BEHIND = new Map<unknown, unknown>();

/**
 * The native kernels as code outside the library sees them: the same set, to give to
 * `TensorCompute.run({ kernels })` or `setDefaultKernels` (alone, or spread into a set of one's own), whose
 * functions throw `OptionError` when called directly. A native kernel trusts its operands (their addresses,
 * offsets and strides: the ops check them against the tensors' storage first), so no code outside the
 * library calls one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeKernels, OptionError, referenceKernels, Tensor, TensorCompute } from "@zigtensor/zigtensor";
 * using a = Tensor.from([1, 2, 3]);
 * using s = TensorCompute.run({ kernels: { ...referenceKernels, binary: nativeKernels.binary } }, () => a.add(a));
 * assert.equal(s.get(2), 6);
 * assert.throws(() => nativeKernels.copy(4, [1], null as never, null as never, null as never), OptionError);
 * ```
 */
export const publicNativeKernels: KernelSet = Object.freeze(
  Object.fromEntries(
    Object.entries(nativeKernels).map(([key, value]) => {
      if (typeof value !== "function") return [key, value];
      const standIn = () => {
        throw new OptionError(
          `nativeKernels.${key}`,
          "a native kernel runs only inside the ops, which check its operands against their storage; give the " +
            "set to TensorCompute.run({ kernels }) or setDefaultKernels(), or call the op",
        );
      };
      NATIVE_BEHIND.set(standIn, value);
      return [key, standIn];
    }),
  ),
) as unknown as KernelSet;

/** The set each resolved one was made from (what code outside the library gave, and sees again). */
const GIVEN = new WeakMap<KernelSet, KernelSet>([[nativeKernels, publicNativeKernels]]);

/**
 * Internal: the set the ops call for `set` (one given to `TensorCompute.run` or `setDefaultKernels`): `set`
 * itself unless it holds stand-ins of `publicNativeKernels`, which become the native kernels they name.
 */
export function resolveKernelSet(set: KernelSet): KernelSet {
  if (set === publicNativeKernels) return nativeKernels;
  const entries = Object.entries(set);
  if (!entries.some(([, value]) => NATIVE_BEHIND.has(value))) return set;
  const resolved = Object.fromEntries(
    entries.map(([key, value]) => [key, NATIVE_BEHIND.get(value) ?? value]),
  ) as unknown as KernelSet;
  GIVEN.set(resolved, set);
  return resolved;
}

/** Internal: the set code outside the library gave for a resolved one (never the native kernels themselves). */
export function givenKernelSet(set: KernelSet): KernelSet {
  return GIVEN.get(set) ?? set;
}

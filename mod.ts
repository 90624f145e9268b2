/**
 * zigtensor: tensors with autograd for Deno and Bun. The memory and the kernels live in a Zig shared library
 * (`libzigtensor`): strided zero-copy views, the ONNX element types, a pooled 64-byte aligned allocator with
 * arenas, use after free that throws, and SIMD kernels (AVX2, AVX-512, NEON) picked at startup.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ActivationScope, ops, Tensor } from "@zigtensor/zigtensor";
 * using w = Tensor.from([1, 2, 3, 4], [2, 2]).withRequiresGrad();
 * {
 *   using _scope = new ActivationScope();
 *   const loss = ops.sum(w.mul(w).mul(0.5).sub(w));
 *   loss.backward();
 * }
 * assert.ok(w.grad!.toArray().join() === "0,1,2,3");
 * ```
 *
 * @module
 */
export { Tensor } from "./src/tensor.ts";
export type { CreateOptions, TensorValues } from "./src/tensor.ts";
export { DType } from "./src/core/dtype.ts";
export type { DTypeApi, TypedArray } from "./src/core/dtype.ts";
export { Layout } from "./src/core/layout.ts";
export type { LayoutApi } from "./src/core/layout.ts";
export * as ops from "./src/ops/mod.ts";
export { ActivationScope, tidy } from "./src/memory/scope.ts";
export { GradMode, setDefaultKernels, TensorCompute } from "./src/context.ts";
export type { GradModeApi, TensorComputeApi } from "./src/context.ts";
export { Arena, BufferPool } from "./src/memory/pool.ts";
export type { PoolStats } from "./src/memory/pool.ts";
export { type KernelInfo, kernelInfo } from "./src/native/kernel_info.ts";
export type { IsaName } from "./src/native/library.ts";
export { nativeKernels, referenceKernels } from "./src/kernels/sets.ts";
export type { ArithmeticMode, ComputeSettings, KernelOperand, KernelSet } from "./src/kernels/types.ts";
export { dequantize, quantize } from "./src/ops/quantize.ts";
export type { BackwardRecord, OpKind, SavedTensor } from "./src/autograd/record.ts";
export {
  BackwardNotImplementedError,
  BufferOverrunError,
  DTypeError,
  NativeLibraryError,
  StaleTensorError,
  TensorShapeError,
  TensorVersionError,
} from "./src/core/errors.ts";

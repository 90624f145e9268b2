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
export type {
  CreateOptions,
  Float16ArrayLike,
  NestedArray,
  TensorOptions,
  TensorValues,
} from "./src/tensor.ts";
export type { ElementValue } from "./src/core/element.ts";
export type { Storage } from "./src/memory/storage.ts";
export type {
  AttentionOptions,
  AvgPool2dOptions,
  BatchNormOptions,
  BinaryCrossEntropyOptions,
  BinaryCrossEntropyWithLogitsOptions,
  Conv1dOptions,
  Conv2dOptions,
  ConvTranspose2dOptions,
  CrossEntropyOptions,
  CtcLossOptions,
  DropoutOptions,
  EmbeddingOptions,
  GruOptions,
  GruResult,
  KlDivOptions,
  LayerNormOptions,
  LossOptions,
  LossReduction,
  LstmOptions,
  LstmResult,
  MaxPool2dResult,
  NllLossOptions,
  Pool2dOptions,
  ReduceOptions,
  RnnWeights,
  SmoothL1LossOptions,
} from "./src/ops/mod.ts";
export type {
  ClampOptions,
  EluOptions,
  GeluOptions,
  HardtanhOptions,
  LeakyReluOptions,
  SoftplusOptions,
} from "./src/ops/mod.ts";
export type {
  NormOptions,
  PadOptions,
  TriangleOptions,
  ValuesAndIndices,
  VarOptions,
} from "./src/ops/mod.ts";
export type { TensorJson } from "./src/format.ts";
export { assertClose } from "./src/testing.ts";
export type { CloseOptions, CloseValues } from "./src/testing.ts";
export { DType } from "./src/core/dtype.ts";
export type { DTypeApi, DTypeLike, DTypeName, TypedArray } from "./src/core/dtype.ts";
export { Layout } from "./src/core/layout.ts";
export type { LayoutApi } from "./src/core/layout.ts";
export * as ops from "./src/ops/mod.ts";
export * as io from "./src/io/mod.ts";
export { ActivationScope, tidy } from "./src/memory/scope.ts";
export { GradMode, setDefaultKernels, TensorCompute } from "./src/context.ts";
export type { ComputeSnapshot, GradModeApi, TensorComputeApi } from "./src/context.ts";
export type { Seed } from "./src/core/random.ts";
export { Arena, BufferPool } from "./src/memory/pool.ts";
export type { ArenaOptions, ArenaStats, PoolStats } from "./src/memory/pool.ts";
export { type KernelInfo, kernelInfo } from "./src/native/kernel_info.ts";
export type { IsaName } from "./src/native/library.ts";
export { publicNativeKernels as nativeKernels, referenceKernels } from "./src/kernels/sets.ts";
export type {
  ArithmeticMode,
  BlockKernels,
  ComputeSettings,
  IndexAddParams,
  KernelOperand,
  KernelSet,
  MovementKernels,
  OptimizerKernels,
  Pool2dParams,
  ScatterKernels,
  SequenceKernels,
  SpanOperand,
  TensorKernels,
} from "./src/kernels/types.ts";
export type { BinaryOp, ReduceOp, SoftmaxOp, UnaryOp } from "./src/kernels/types.ts";
export type { KernelCode, KernelFamily } from "./src/core/op_table.ts";
export type { KernelCodes } from "./src/core/op_types.ts";
export type { OptimAlgorithm, OptimizerStep, OptimizerStepKernel } from "./src/kernels/optim.ts";
export type { IndexKernels } from "./src/kernels/types.ts";
export type { IndexKernel, IndexOp } from "./src/kernels/indexing.ts";
export type { CtcKernel, CtcParams } from "./src/kernels/ctc.ts";
export type { ClassLossKernels } from "./src/kernels/types.ts";
export type { NllKernel, NllOp, NllParams, NllPhase } from "./src/kernels/nll.ts";
export type {
  RnnBackwardKernel,
  RnnBackwardOperands,
  RnnBackwardParams,
  RnnCellKernel,
  RnnCellParams,
  RnnForwardKernel,
  RnnForwardOperands,
  RnnForwardParams,
} from "./src/kernels/rnn.ts";
export type {
  ConvKernels,
  ConvProductKind,
  ConvProductParams,
  ConvWindowParams,
} from "./src/kernels/conv.ts";
export type { PackedMatMulKernel } from "./src/kernels/matmul.ts";
export type { SelectKernels } from "./src/kernels/types.ts";
export type { SelectKernel } from "./src/kernels/select.ts";
export type { NormKernels } from "./src/kernels/types.ts";
export type {
  NormBackwardKernel,
  NormGradients,
  NormKernel,
  NormOutputs,
  NormParams,
  NormStatistics,
} from "./src/kernels/norm.ts";
export type { IntegerKernels } from "./src/kernels/integer.ts";
export type { AttentionKernels } from "./src/kernels/types.ts";
export type {
  AttentionBackwardKernel,
  AttentionGradients,
  AttentionKernel,
  AttentionOperands,
  AttentionParams,
} from "./src/kernels/attention.ts";
export type { NativePointer } from "./src/native/symbols.ts";
export { dequantize, quantize } from "./src/ops/quantize.ts";
export type {
  AttributesOf,
  AutogradNode,
  BackwardRecord,
  ClassLossAttributes,
  LeafNode,
  NormAttributes,
  OpKind,
  RecordAttributes,
  RecordInput,
  RecurrentAttributes,
  ReduceAttributes,
  SavedTensor,
  WindowAttributes,
} from "./src/autograd/record.ts";
export * as nn from "./src/nn/mod.ts";
export * as optim from "./src/optim/mod.ts";
export { DataLoader } from "./src/data/loader.ts";
export type { DataLoaderOptions } from "./src/data/loader.ts";
export { Progress } from "./src/data/progress.ts";
export type { ProgressOptions } from "./src/data/progress.ts";
export {
  BackwardNotImplementedError,
  BufferOverrunError,
  DTypeError,
  NativeLibraryError,
  OptionError,
  StaleTensorError,
  TensorFileError,
  TensorShapeError,
  TensorVersionError,
} from "./src/core/errors.ts";
export type { TensorFileDefect } from "./src/core/errors.ts";

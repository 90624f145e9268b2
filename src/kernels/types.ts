/**
 * The kernel seam: the one place operations call kernels. A kernel takes strided operands over storage and
 * writes an output the caller allocated; the caller has validated shapes and expanded broadcasts to stride 0,
 * so every operand of an element-wise kernel has the iteration shape. `referenceKernels` (plain TypeScript,
 * f64 accumulation, no threads) defines the meaning; `nativeKernels` runs the Zig kernels and is tested
 * against it.
 *
 * @module
 */
import type { IndexKernel } from "./indexing.ts";
import type { NativePointer } from "../native/symbols.ts";
import type { DType, TypedArray } from "../core/dtype.ts";
import { type KernelCode, type KernelCodes, kernelCodes } from "../core/op_table.ts";
import type { OptimizerStepKernel } from "./optim.ts";
import type { CtcKernel } from "./ctc.ts";
import type { NllKernel } from "./nll.ts";
import type { RnnBackwardKernel, RnnCellKernel, RnnForwardKernel } from "./rnn.ts";
import type { PackedMatMulKernel } from "./matmul.ts";
import type { ConvKernels } from "./conv.ts";
import type { SelectKernel } from "./select.ts";
import type { NormBackwardKernel, NormKernel } from "./norm.ts";
import type { IntegerKernels } from "./integer.ts";
import type { AttentionBackwardKernel, AttentionKernel } from "./attention.ts";

/** One operand: a storage (its native address and a typed array over all of it), an offset and strides. */
export interface KernelOperand {
  /** The storage's native address (what native kernels use). */
  readonly pointer: NativePointer;
  /** A typed array over the whole storage, of the operand's element type (what reference kernels use). */
  readonly data: TypedArray;
  /** Element offset of the operand's first element in `data`. */
  readonly offset: number;
  /** Strides in elements, one per axis of the iteration shape; 0 broadcasts, negative reverses. */
  readonly strides: readonly number[];
  /**
   * Bytes the storage holds, for bounds checks that need not touch `data` (which a tensor creates lazily: an
   * ArrayBuffer over native memory costs about a microsecond); `data.byteLength` when absent.
   */
  readonly byteLength?: number;
}

/** "fast" (f32 FMA, any summation order) or "exact" (f64 accumulation in ascending order, same bits everywhere). */
export type ArithmeticMode = "fast" | "exact";

/** The arithmetic mode as native kernels read it from the argument block's `mode` (`zig/abi.zig`). */
export const MODE_CODE: Readonly<Record<ArithmeticMode, number>> = { fast: 0, exact: 1 };

/** How a kernel may compute: its arithmetic mode and how many threads it may use. */
export interface ComputeSettings {
  /** `"exact"`: bitwise the reference; `"fast"`: approximations within documented bounds. */
  readonly mode: ArithmeticMode;
  /** How many threads the kernel may use. */
  readonly threads: number;
}

/**
 * Binary element-wise operations by kernel name, their codes the native ones (from the op table,
 * `src/core/op_table.ts`). Comparisons and the logical ops write Bool (0/1 bytes; a logical op treats every
 * nonzero value, NaN included, as true); Max and Min give NaN if either side is NaN, like `torch.maximum`.
 */
export const BinaryOp: KernelCodes["binary"] = kernelCodes("binary");
/** A binary kernel's operation code. */
export type BinaryOp = KernelCode<"binary">;

/** Unary element-wise operations by kernel name (from the op table). GELU is the tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
export const UnaryOp: KernelCodes["unary"] = kernelCodes("unary");
/** A unary kernel's operation code. */
export type UnaryOp = KernelCode<"unary">;

/** Reductions by kernel name (from the op table). ArgMax writes I64 indices. */
export const ReduceOp: KernelCodes["reduce"] = kernelCodes("reduce");
/** A reduce kernel's operation code. */
export type ReduceOp = KernelCode<"reduce">;

/** Softmax family over the last axis, by kernel name (from the op table). */
export const SoftmaxOp: KernelCodes["softmax"] = kernelCodes("softmax");
/** A softmax kernel's operation code. */
export type SoftmaxOp = KernelCode<"softmax">;

/** Geometry of a 2-D max pooling over an NCHW input. */
export interface Pool2dParams {
  /** Input extents [N, C, H, W]. */
  readonly input: readonly [number, number, number, number];
  /** Window extents [KH, KW]. */
  readonly kernel: readonly [number, number];
  /** Steps [SH, SW]. */
  readonly stride: readonly [number, number];
  /** Padding on each side [PH, PW]. */
  readonly padding: readonly [number, number];
  /** The spacing of the window's taps [DH, DW]. @default [1, 1] */
  readonly dilation?: readonly [number, number];
  /**
   * Output extents [OH, OW] (ceil mode gives one more where PyTorch's rule allows); every window must hold an
   * in-bounds tap. @default `poolExtent` of each axis
   */
  readonly output?: readonly [number, number];
  /** Indices count within each (n, c) plane, `y·W + x` (PyTorch's `return_indices`), not over the input. */
  readonly localIndices?: boolean;
}

/** The kernel set. Every method writes only `out` (and `indices`) and returns nothing. */
export interface TensorKernels {
  /** "native" or "reference". */
  readonly name: string;

  /** out = a (op) b over `shape`; Bool output for comparisons. */
  binary(
    op: BinaryOp,
    shape: readonly number[],
    out: KernelOperand,
    a: KernelOperand,
    b: KernelOperand,
    settings: ComputeSettings,
  ): void;

  /**
   * out = op(a) over `shape`. `params` (f32 values) are the parameterized ops' two parameters: softplus's
   * beta and threshold, leakyRelu's negative slope, elu's alpha, clamp's lower and upper bound.
   */
  unary(
    op: UnaryOp,
    shape: readonly number[],
    out: KernelOperand,
    a: KernelOperand,
    settings: ComputeSettings,
    params?: readonly [number, number],
  ): void;

  /**
   * Reduces the last `reducedAxes` axes of `shape`: `out` has strides for the leading (kept) axes only, `a`
   * for all of them. Sums accumulate in f64 in row-major order of the reduced axes.
   */
  reduce(
    op: ReduceOp,
    shape: readonly number[],
    reducedAxes: number,
    out: KernelOperand,
    a: KernelOperand,
    settings: ComputeSettings,
  ): void;

  /** Softmax or log-softmax over the last axis of `shape`. */
  softmax(
    op: SoftmaxOp,
    shape: readonly number[],
    out: KernelOperand,
    a: KernelOperand,
    settings: ComputeSettings,
  ): void;

  /**
   * Batched matrix product. `shape` is the output's `[...batch, M, N]`; `a` has strides for
   * `[...batch, M, K]` and `b` for `[...batch, K, N]` (batch strides 0 where broadcast).
   */
  matMul(
    shape: readonly number[],
    k: number,
    out: KernelOperand,
    a: KernelOperand,
    b: KernelOperand,
    settings: ComputeSettings,
  ): void;

  /**
   * 2-D max pooling. `out` has the output shape [N, C, OH, OW]; `indices`, when given (Int32, same strides as
   * out), receives each winner's flat row-major NCHW position in the input.
   */
  maxPool2d(
    params: Pool2dParams,
    out: KernelOperand,
    x: KernelOperand,
    indices: KernelOperand | null,
    settings: ComputeSettings,
  ): void;

  /**
   * The input gradient of a 2-D max pooling: `grad` [N, C, H, W] from the output's gradient `g` [N, C, OH, OW]
   * and the winners' positions `indices` (Int32, `y·W + x` within each plane, as `maxPool2d` with
   * `localIndices` writes them). Each element of `grad` is +0 plus the gradients of the outputs it won, added
   * in output order (f32, one rounding each), so the same bits in both modes.
   */
  maxPool2dBackward(
    params: Pool2dParams,
    grad: KernelOperand,
    g: KernelOperand,
    indices: KernelOperand,
    settings: ComputeSettings,
  ): void;
}

/** Data movement through the seam, so that the reference set runs every operation end to end too. */
export interface MovementKernels {
  /** out = a over `shape`, elements of `elementBytes` bytes (1, 2, 4 or 8), any strides. */
  copy(
    elementBytes: number,
    shape: readonly number[],
    out: KernelOperand,
    a: KernelOperand,
    settings: ComputeSettings,
  ): void;

  /** out = cast(a) over `shape` by the rules of spec 000 §10. */
  cast(
    outDType: DType,
    aDType: DType,
    shape: readonly number[],
    out: KernelOperand,
    a: KernelOperand,
    settings: ComputeSettings,
  ): void;
}

/** A contiguous span (a blocked NchwC(B) tensor, quantized blocks, packed values): no strides. */
export type SpanOperand = Pick<KernelOperand, "pointer" | "data" | "offset" | "byteLength">;

/** Layout and quantized-block movement through the seam. */
export interface BlockKernels {
  /** Writes the logical NCHW tensor `a` (any strides) into the blocked span `out` (B = `blockSize`). */
  toBlocked(
    shape: readonly number[],
    blockSize: number,
    elementBytes: number,
    out: SpanOperand,
    a: KernelOperand,
    settings: ComputeSettings,
  ): void;

  /** Writes the blocked span `a` into the logical NCHW tensor `out` (any strides without overlap). */
  fromBlocked(
    shape: readonly number[],
    blockSize: number,
    elementBytes: number,
    out: KernelOperand,
    a: SpanOperand,
    settings: ComputeSettings,
  ): void;

  /** Quantizes `blocks` blocks of 32 contiguous f32 values of `a` into `out` (offset in blocks); `format` is Q4_0 or Q8_0. */
  quantize(
    format: number,
    blocks: number,
    out: SpanOperand,
    a: SpanOperand,
    settings: ComputeSettings,
  ): void;

  /** Dequantizes `blocks` blocks of `a` (offset in blocks) into contiguous f32 values of `out`. */
  dequantize(
    format: number,
    blocks: number,
    out: SpanOperand,
    a: SpanOperand,
    settings: ComputeSettings,
  ): void;
}

/** The optimizer update kernel (src/kernels/optim.ts). */
export interface OptimizerKernels {
  /** One fused optimizer update over a parameter, its gradient and its state. */
  readonly optimizerStep: OptimizerStepKernel;
}

/** Extents of a grouped index add (src/kernels/scatter.ts): src [groups, count, width] into out [groups, rows, width]. */
export interface IndexAddParams {
  /** Independent groups B. */
  readonly groups: number;
  /** Additions per group K (the indices' extent). */
  readonly count: number;
  /** Columns D added per index. */
  readonly width: number;
  /** Rows M of each group of `out`. */
  readonly rows: number;
  /** The indices count over every group's rows (group b's start at b·M), not from 0 in each group. */
  readonly flat: boolean;
}

/** The scatter kernels (src/kernels/scatter.ts). */
export interface ScatterKernels {
  /**
   * `out[b, index[b, k] − base(b), d] += src[b, k, d]` for k in order (base(b) = b·M when `flat`), Int32
   * indices checked by the caller; out strides (B, M, D), src (B, K, D), index (B, K).
   */
  indexAdd(
    params: IndexAddParams,
    out: KernelOperand,
    src: KernelOperand,
    index: KernelOperand,
    settings: ComputeSettings,
  ): void;
}

/** The indexing kernel: gather, scatter-add and cumsum along one axis (src/kernels/indexing.ts). */
export interface IndexKernels {
  /** One gather, scatter-add or cumsum; false when an index is out of range (nothing written). */
  readonly index: IndexKernel;
}

/** The sequence kernels (src/kernels/ctc.ts, src/kernels/rnn.ts). */
export interface SequenceKernels {
  /** The CTC loss of a batch and, when wanted, its gradient. */
  readonly ctc: CtcKernel;
  /** The point-wise part of one LSTM or GRU step, forward or backward (src/kernels/rnn.ts). */
  readonly rnnCell: RnnCellKernel;
  /** Every step of an LSTM or GRU layer's forward pass (src/kernels/rnn.ts). */
  readonly rnnForward: RnnForwardKernel;
  /** An LSTM or GRU layer's backward pass through time (src/kernels/rnn.ts). */
  readonly rnnBackward: RnnBackwardKernel;
  /** Products with a weight packed once for every step (src/kernels/matmul.ts). */
  readonly packedMatMul: PackedMatMulKernel;
}

/** The class-loss kernel: nllLoss and crossEntropy, forward and backward (src/kernels/nll.ts). */
export interface ClassLossKernels {
  /** One loss or gradient; false when an index target is out of range (nothing written). */
  readonly nll: NllKernel;
}

/** The select kernel (src/kernels/select.ts). */
export interface SelectKernels {
  /** `out = cond ? a : b` for elements of 1, 2, 4 or 8 bytes (`where`). */
  readonly select: SelectKernel;
}

/** The normalization kernels (src/kernels/norm.ts): layer and batch normalization. */
export interface NormKernels {
  /** Normalization of groups of contiguous runs: y, rstd and (when wanted) x̂ and the batch statistics. */
  readonly norm: NormKernel;
  /** Its gradients: dx, dweight and dbias, each when wanted. */
  readonly normBackward: NormBackwardKernel;
}

/** The fused attention kernel (src/kernels/attention.ts). */
export interface AttentionKernels {
  /** Scaled dot-product attention forward: the output and each query row's log-sum-exp. */
  readonly attention: AttentionKernel;
  /** Its gradients dq, dk and dv from the saved output and log-sum-exp. */
  readonly attentionBackward: AttentionBackwardKernel;
}

/**
 * A complete kernel set: compute, data movement, optimizer, scatter, indexing, sequence, class-loss, convolution,
 * select, normalization, attention and integer kernels.
 */
export type KernelSet =
  & TensorKernels
  & MovementKernels
  & BlockKernels
  & OptimizerKernels
  & ScatterKernels
  & IndexKernels
  & IntegerKernels
  & SequenceKernels
  & ClassLossKernels
  & ConvKernels
  & SelectKernels
  & NormKernels
  & AttentionKernels;

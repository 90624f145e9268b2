/**
 * Backward records (spec 000 §8). An operation records only when gradient mode is on and an input requires
 * gradients; the record holds the op kind, per input its autograd node (null when that input needs no
 * gradient), shape and dtype, positional saved slots (version-checked `SavedTensor`s, empty when the op did not
 * need one), integer and float attributes, and tensors it owns (freed by `release()`).
 *
 * @module
 */
import type { DType } from "../core/dtype.ts";
import { BackwardNotImplementedError, TensorVersionError } from "../core/errors.ts";
import { type OpDefinition, type OpName, OPS, type RecordKind } from "../core/op_table.ts";
import { type ComputeSnapshot, computeSnapshot, gradEnabled } from "../context.ts";
import {
  attachRecord,
  dtypeOf,
  gradFnOf,
  leafOf,
  requiresGradOf,
  shapeOf,
  storageOf,
  type Tensor,
} from "../tensor.ts";
import { storageVersion } from "../memory/storage.ts";

/** The operations that record, named as in the spec's table and autograd.md; derived from the op table. */
export type OpKind = RecordKind;

/**
 * Internal: sets a leaf's gradient (the backward pass, and `Tensor.grad`'s setter after its checks); no code
 * outside the library can give a leaf a gradient of another shape to accumulate into.
 */
export let setLeafGrad: (leaf: LeafNode, grad: Tensor | null) => void;

/** A gradient leaf: where `backward()` accumulates the gradient of a tensor made by `withRequiresGrad()`. */
export class LeafNode {
  /** The leaf's shape (frozen). */
  readonly shape: readonly number[];
  /** The leaf's dtype. */
  readonly dtype: DType;
  #grad: Tensor | null = null;

  static {
    setLeafGrad = (leaf, grad) => {
      leaf.#grad = grad;
    };
  }

  /** The node of a leaf of `shape` and `dtype`; read-only (the backward pass and `Tensor.grad` set `grad`). */
  constructor(shape: readonly number[], dtype: DType) {
    this.shape = Object.freeze(shape.slice());
    this.dtype = dtype;
    Object.freeze(this);
  }

  /** The accumulated gradient, or null before the first backward pass. */
  get grad(): Tensor | null {
    return this.#grad;
  }
}

/** Makes the node of a new leaf. */
export function leafNode(shape: readonly number[], dtype: DType): LeafNode {
  return new LeafNode(shape, dtype);
}

/** A node of the graph: a leaf, or the record of the op that made a tensor. */
export type AutogradNode = LeafNode | BackwardRecord;

/** What a record keeps of each input. */
export interface RecordInput {
  /** The input's node, or null when it needs no gradient. */
  readonly node: AutogradNode | null;
  /** The input's shape. */
  readonly shape: readonly number[];
  /** The input's dtype. */
  readonly dtype: DType;
}

/**
 * A tensor saved for the backward pass: it shares storage with the original and remembers the storage version,
 * so that an in-place write between forward and backward is caught instead of giving a wrong gradient.
 */
export class SavedTensor {
  /** The storage version when saved. */
  readonly version: number;
  readonly #tensor: Tensor;

  /** Saves a detached handle of `tensor` and its storage's version now. */
  constructor(tensor: Tensor) {
    this.#tensor = tensor.detach();
    this.version = storageVersion(storageOf(tensor));
  }

  /** The saved tensor; throws `TensorVersionError` naming `op` and both versions if it was written since. */
  unpack(op: string): Tensor {
    const current = storageVersion(storageOf(this.#tensor));
    if (current !== this.version) throw new TensorVersionError(op, this.version, current);
    return this.#tensor;
  }
}

/** Kernel, stride and padding of a 2-D window, each [h, w]. */
export interface WindowAttributes {
  /** The window's extent [h, w]. */
  readonly kernel: readonly [number, number];
  /** The step between windows [h, w]. */
  readonly stride: readonly [number, number];
  /** The padding on each side [h, w]. */
  readonly padding: readonly [number, number];
}

/** The reduced axes (normalized, sorted) and whether they were kept as extent 1. */
export interface ReduceAttributes {
  /** The reduced axes, normalized and sorted. */
  readonly axes: readonly number[];
  /** Whether the reduced axes were kept as extent 1. */
  readonly keepDims: boolean;
}

/** Which optional parameters a normalization had, and its epsilon. */
export interface NormAttributes {
  /** Whether a weight was given. */
  readonly hasWeight: boolean;
  /** Whether a bias was given. */
  readonly hasBias: boolean;
  /** The epsilon added to the variance. */
  readonly eps: number;
}

/** The options a class loss (nllLoss, crossEntropy) records, as its kernel takes them. */
export interface ClassLossAttributes {
  /** 0 none, 1 mean, 2 sum. */
  readonly reduction: number;
  /** The target value that takes no part. */
  readonly ignoreIndex: number;
  /** ε (0 for nllLoss). */
  readonly labelSmoothing: number;
  /** Whether the target holds probabilities (then it is input 1, and may take a gradient). */
  readonly probabilities: boolean;
}

/** Which optional inputs a recurrent layer (Lstm, Gru) was given; its record's inputs are x, weightIh,
 * weightHh, then the given ones in this order. */
export interface RecurrentAttributes {
  /** Whether biasIh was given. */
  readonly hasBiasIh: boolean;
  /** Whether biasHh was given. */
  readonly hasBiasHh: boolean;
  /** Whether h0 was given. */
  readonly hasH0: boolean;
  /** Whether c0 was given (LSTM only). */
  readonly hasC0: boolean;
}

/**
 * The named attributes each record kind keeps of how its op was called (spec 000 §8 says which tensors are
 * saved; these are the rest). Kinds not listed keep none.
 */
export interface RecordAttributes {
  /** A slice: its axis, start, end and step. */
  Slice: { readonly axis: number; readonly start: number; readonly end: number; readonly step: number };
  /** A permutation of the axes. */
  Permute: { readonly dims: readonly number[] };
  /** A flip of one axis. */
  Flip: { readonly axis: number };
  /** A selection of one index along an axis. */
  Select: { readonly axis: number; readonly index: number };
  /** A sum over axes. */
  Sum: ReduceAttributes;
  /** A mean over axes. */
  Mean: ReduceAttributes;
  /** A maximum over axes. */
  Max: ReduceAttributes;
  /** A minimum over axes. */
  Min: ReduceAttributes;
  /** A product over axes. */
  Prod: ReduceAttributes;
  /** A gather (also index selection) along an axis. */
  Gather: { readonly axis: number };
  /** A scatter-add along an axis. */
  ScatterAdd: { readonly axis: number };
  /** A running sum along an axis. */
  CumSum: { readonly axis: number };
  /** A softmax over one axis, with its input scale. */
  Softmax: { readonly axis: number; readonly scale: number };
  /** A log-softmax over one axis, with its input scale. */
  LogSoftmax: { readonly axis: number; readonly scale: number };
  /** A concatenation: the axis and each input's extent along it. */
  Concat: { readonly axis: number; readonly sizes: readonly number[] };
  /** A layer normalization over the last `normalizedAxes` axes. */
  LayerNorm: NormAttributes & { readonly normalizedAxes: number };
  /** A batch normalization, in training or evaluation mode. */
  BatchNorm: NormAttributes & { readonly training: boolean; readonly momentum: number };
  /** A 2-D convolution's window, dilation and groups. */
  Conv2d: WindowAttributes & { readonly dilation: readonly [number, number]; readonly groups: number };
  /** A 2-D transposed convolution: the window, dilation and groups of the conv2d it is the input gradient of. */
  ConvTranspose2d: WindowAttributes & {
    readonly dilation: readonly [number, number];
    readonly groups: number;
  };
  /** An average pooling window, with the extra right padding ceil mode needs (absent: none). */
  AvgPool2d: WindowAttributes & { readonly extra?: readonly [number, number] };
  /** A max pooling window and its dilation. */
  MaxPool2d: WindowAttributes & { readonly dilation: readonly [number, number] };
  /** A negative log-likelihood loss: its options (`ClassLossAttributes`). */
  NllLoss: ClassLossAttributes;
  /** A cross-entropy loss: its options (`ClassLossAttributes`). */
  CrossEntropy: ClassLossAttributes;
  /** A fused attention: the score factor, causal, query heads per kv head and the kind of mask (slot 3). */
  Attention: {
    readonly scale: number;
    readonly causal: boolean;
    readonly groups: number;
    readonly mask: "none" | "bool" | "f32";
  };
  /** The padding index of an embedding (−1 for none). */
  Embedding: { readonly paddingIdx: number };
  /** A CTC loss: its reduction (the saved gradient already holds each sequence's factor). */
  CtcLoss: {
    /** 0 none, 1 mean, 2 sum. */
    readonly reduction: number;
  };
  /** An LSTM layer: which of its optional inputs were given (they follow x and the weights, in this order). */
  Lstm: RecurrentAttributes;
  /** A GRU layer: as Lstm (hasC0 false). */
  Gru: RecurrentAttributes;
  /** GELU's form: the erf form saves x, the tanh form x and the tanh of its inner term. */
  Gelu: { readonly approximate: "none" | "tanh" };
  // Issue 12's parameterized element-wise ops (f32 values of their parameters).
  /** softplus's beta and threshold. */
  Softplus: { readonly beta: number; readonly threshold: number };
  /** leakyRelu's negative slope. */
  LeakyRelu: { readonly negativeSlope: number };
  /** elu's alpha. */
  Elu: { readonly alpha: number };
  /**
   * clamp's number bounds (±∞ where absent); in the tensor form, `bounds` says which bounds are inputs 1 (and
   * 2) and saved slots after x.
   */
  Clamp: { readonly min: number; readonly max: number; readonly bounds?: "min" | "max" | "both" };
  /** hardtanh's bounds. */
  Hardtanh: { readonly min: number; readonly max: number };
}

/** The attributes of record kind `K` (none for a kind `RecordAttributes` does not list). */
export type AttributesOf<K extends OpKind> = K extends keyof RecordAttributes ? RecordAttributes[K]
  : Record<string, never>;

/** The backward record of one operation. */
export class BackwardRecord<K extends OpKind = OpKind> {
  /** Tensors the record created itself (indices, intermediates), freed by `release()`. */
  readonly owned: Tensor[];
  /** The compute settings of the forward pass; its backward rule runs under them. */
  readonly settings: ComputeSnapshot = computeSnapshot();
  #released = false;

  /** Internal: ops make records through `record()`. */
  constructor(
    readonly op: K,
    readonly inputs: readonly RecordInput[],
    readonly saved: readonly (SavedTensor | null)[],
    /** The op's named attributes. */
    readonly attrs: AttributesOf<K>,
    owned: Tensor[] = [],
  ) {
    this.owned = owned;
  }

  /** The shape of input `i`. */
  inputShape(i: number): readonly number[] {
    return this.inputs[i].shape;
  }

  /** The dtype of input `i`. */
  inputDType(i: number): DType {
    return this.inputs[i].dtype;
  }

  /** Whether input `i` needs a gradient. */
  needsGrad(i: number): boolean {
    return this.inputs[i].node !== null;
  }

  /** Saved slot `i`, unpacked (version-checked); throws when the slot is empty. */
  savedTensor(i: number): Tensor {
    const slot = this.saved[i];
    if (slot === null || slot === undefined) throw new Error(`${this.op}: saved slot ${i} is empty`);
    return slot.unpack(this.op);
  }

  /** Whether `release()` ran (the backward pass consumed the record). */
  get isReleased(): boolean {
    return this.#released;
  }

  /** Frees the owned tensors; the saved slots are dropped with the record. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    for (const tensor of this.owned) tensor.dispose();
  }
}

/** The node gradients flow into for `t`, or null when it needs none. */
export function nodeOf(t: Tensor): AutogradNode | null {
  return gradFnOf(t) ?? leafOf(t);
}

/**
 * Freezes `record` and every record it reaches (its inputs' nodes, their inputs' ...), with their inputs,
 * saved slots and attributes, the first time code outside the library is handed one (`Tensor.gradFn`): the
 * backward pass trusts what a record says of shapes and geometry, so nothing outside may change it. The
 * records the ops make are not frozen until then (freezing costs more than the rest of a small op).
 */
export function exposeRecord(record: BackwardRecord): BackwardRecord {
  const pending: BackwardRecord[] = [record];
  while (pending.length > 0) {
    const r = pending.pop()!;
    if (Object.isFrozen(r)) continue;
    for (const entry of r.inputs) {
      (entry as { shape: readonly number[] }).shape = Object.freeze(entry.shape.slice());
      Object.freeze(entry);
      if (entry.node instanceof BackwardRecord) pending.push(entry.node);
    }
    for (const slot of r.saved) if (slot !== null) Object.freeze(slot);
    deepFreeze(r.attrs);
    Object.freeze(r.inputs);
    Object.freeze(r.saved);
    Object.freeze(r.owned);
    Object.freeze(r.settings);
    Object.freeze(r);
  }
  return record;
}

/** Freezes an attributes object and the arrays in it. */
function deepFreeze(value: unknown): void {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return;
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  Object.freeze(value);
}

/** Whether an op over `inputs` records: gradient mode on and at least one input requires gradients. */
export function shouldRecord(...inputs: readonly Tensor[]): boolean {
  for (let i = 0; i < inputs.length; i++) if (requiresGradOf(inputs[i])) return gradEnabled();
  return false;
}

/** `shouldRecord` of one or two inputs, without the rest array (the element-wise ops' path). */
export function shouldRecordOperands(a: Tensor, b: Tensor | null = null): boolean {
  return (requiresGradOf(a) || (b !== null && requiresGradOf(b))) && gradEnabled();
}

/** What a record keeps besides its inputs: saved tensors, named attributes, tensors it owns. */
export interface RecordParts<K extends OpKind> {
  readonly saved?: readonly (Tensor | null)[];
  readonly attrs?: AttributesOf<K>;
  readonly owned?: Tensor[];
}

/** Attaches a record of `op` over `inputs` to `result` and returns `result`. */
export function record<K extends OpKind>(
  result: Tensor,
  op: K,
  inputs: readonly Tensor[],
  parts: RecordParts<K> = {},
): Tensor {
  const entries = inputs.map((t) => ({ node: nodeOf(t), shape: shapeOf(t), dtype: dtypeOf(t) }));
  const saved = (parts.saved ?? []).map((t) => (t === null ? null : new SavedTensor(t)));
  const attrs = parts.attrs ?? ({} as AttributesOf<K>);
  attachRecord(result, new BackwardRecord(op, entries, saved, attrs, parts.owned ?? []));
  return result;
}

/**
 * Records `op` (an entry of the op table) over `inputs` on `result` when gradients are wanted, as the table
 * says: under its record kind; not at all for a non-differentiable or composed op; and for a differentiable op
 * without a backward rule, throws `BackwardNotImplementedError` (before any gradient can be wrong). Disposes
 * `parts.owned` when it does not record.
 */
export function recordOp(
  op: OpName,
  result: Tensor,
  inputs: readonly Tensor[],
  parts: RecordParts<OpKind> = {},
): Tensor {
  return recordAs(op, OPS[op], result, inputs, parts);
}

/** `recordOp` for a definition given directly (`recordOp` passes the table's; tests pass their own). */
export function recordAs(
  op: string,
  definition: OpDefinition,
  result: Tensor,
  inputs: readonly Tensor[],
  parts: RecordParts<OpKind> = {},
): Tensor {
  const grad = definition.grad;
  if (!shouldRecord(...inputs) || grad === "none" || grad === "composed") {
    for (const t of parts.owned ?? []) t.dispose();
    return result;
  }
  if (grad === "missing") {
    for (const t of parts.owned ?? []) t.dispose();
    result.dispose();
    throw new BackwardNotImplementedError(op);
  }
  return record(result, grad.record as RecordKind, inputs, parts);
}

// Frozen, like `Tensor`: no code outside the library can change what the methods of the autograd records do.
Object.freeze(LeafNode.prototype);
Object.freeze(LeafNode);
Object.freeze(SavedTensor.prototype);
Object.freeze(SavedTensor);
Object.freeze(BackwardRecord.prototype);
Object.freeze(BackwardRecord);

/**
 * `Tensor`: a handle over native storage (spec 000 §1): an element type, a logical shape, strides in elements
 * and an offset, plus the autograd links. Views are new handles over the same storage; nothing is copied
 * unless asked. Every data access checks the storage first, so a released tensor throws `StaleTensorError`.
 *
 * @module
 */
import { DType, type DTypeInfo, dtypeInfo, type TypedArray } from "./core/dtype.ts";
import { decodeElement, type ElementValue, encodeElement } from "./core/element.ts";
import { DTypeError, TensorShapeError } from "./core/errors.ts";
import { detectLayout, Layout } from "./core/layout.ts";
import {
  checkBytes,
  checkShape,
  contiguousStrides,
  elementCount,
  formatShape,
  isContiguous,
} from "./core/shape.ts";
import { Storage } from "./memory/storage.ts";
import type { Arena } from "./memory/pool.ts";
import type { NativePointer } from "./native/symbols.ts";
import type { KernelOperand } from "./kernels/types.ts";
import type { BackwardRecord, LeafNode } from "./autograd/record.ts";
import { leafNode } from "./autograd/record.ts";
import { backward } from "./autograd/engine.ts";
import * as ops from "./ops/mod.ts";
import { fillStrided } from "./ops/copy.ts";
import { randomFill } from "./core/random.ts";

/** Options every creator takes. */
export interface CreateOptions {
  /** Allocate from this arena instead of the pool; the tensor goes stale when the arena is reset. */
  readonly arena?: Arena;
}

/** Values `Tensor.from` copies: a typed array, or a flat or nested array of numbers, bigints or booleans. */
export type TensorValues = TypedArray | Float16ArrayLike | NestedArray;
type NestedArray = readonly (number | bigint | boolean | NestedArray)[];
interface Float16ArrayLike extends ArrayLike<number> {
  readonly BYTES_PER_ELEMENT: 2;
  readonly [Symbol.toStringTag]: "Float16Array";
}

let attach: (t: Tensor, record: BackwardRecord) => void;

/** Internal (not exported from `mod.ts`): sets the backward record of a tensor an op just made. */
export function attachRecord(t: Tensor, record: BackwardRecord): void {
  attach(t, record);
}

/** Everything a tensor handle is made of; ops build handles from these. */
export interface TensorParts {
  readonly storage: Storage;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
  /** B for an NchwC(B) blocked tensor, else 0. */
  readonly blockSize?: number;
  readonly gradFn?: BackwardRecord | null;
  readonly leaf?: LeafNode | null;
}

/** The runtime's `Float16Array`, when it has one (F16 data then reads as numbers). */
const float16Array = (globalThis as unknown as {
  Float16Array?: {
    new (buffer: ArrayBuffer, offset: number, length: number): TypedArray;
    readonly BYTES_PER_ELEMENT: number;
  };
}).Float16Array;

/**
 * A strided view over native storage.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Tensor } from "@zigtensor/zigtensor";
 * using a = Tensor.from([1, 2, 3, 4, 5, 6], [2, 3]);
 * const t = a.T;                       // a view: shares a's storage
 * assert.ok(a.get(1, 2) === 6 && t.get(2, 1) === 6);
 * using packed = t.contiguous();       // a row-major copy
 * assert.ok(packed.data().join() === "1,4,2,5,3,6");
 * ```
 */
export class Tensor {
  /** The storage shared by this handle and its views. */
  readonly storage: Storage;
  /** The element type. */
  readonly dtype: DType;
  /** The logical shape. */
  readonly shape: readonly number[];
  /** Strides in elements, one per axis: 0 broadcasts, negative reverses. */
  readonly strides: readonly number[];
  /** Element offset of the first element in the storage. */
  readonly offset: number;
  /** B for an NchwC(B) blocked tensor, 0 otherwise. */
  readonly blockSize: number;
  #gradFn: BackwardRecord | null;
  readonly #leaf: LeafNode | null;
  #elements: TypedArray | null = null;

  /** Internal: build tensors with the creators, views and ops. */
  constructor(parts: TensorParts) {
    this.storage = parts.storage;
    this.dtype = parts.dtype;
    this.shape = parts.shape;
    this.strides = parts.strides;
    this.offset = parts.offset;
    this.blockSize = parts.blockSize ?? 0;
    this.#gradFn = parts.gradFn ?? null;
    this.#leaf = parts.leaf ?? null;
  }

  /** The backward record that produced this tensor, or null for leaves and untracked tensors; read-only. */
  get gradFn(): BackwardRecord | null {
    return this.#gradFn;
  }

  static {
    attach = (t, record) => {
      t.#gradFn = record;
    };
  }

  // --- creating ---

  /**
   * Copies `values` into a new tensor. The dtype follows the typed array (`Float32Array` → F32,
   * `BigInt64Array` → I64, ...) or is given; plain numbers default to F32, bigints to I64, booleans to Bool.
   * Nested arrays give their own shape; a `Uint16Array` given for F16 or BF16 is taken as raw bits.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { DType, Tensor } from "@zigtensor/zigtensor";
   * using a = Tensor.from([[1, 2], [3, 4]]);
   * using b = Tensor.from(new BigInt64Array([5n, 6n]));
   * using c = Tensor.from([1.5, -2.7], [2], DType.I32);
   * assert.ok(a.shape.join() === "2,2" && b.dtype === DType.I64 && c.get(1) === -2);
   * ```
   */
  static from(
    values: TensorValues,
    shape?: readonly number[],
    dtype?: DType,
    options: CreateOptions = {},
  ): Tensor {
    const { flat, inferredShape, inferredDType } = flatten(values);
    const targetShape = shape ?? inferredShape;
    const target = dtype ?? inferredDType;
    const count = checkShape("from", targetShape);
    if (count !== flat.length) {
      throw new TensorShapeError(
        "from",
        `${flat.length} values cannot fill shape ${formatShape(targetShape)} (${count} elements)`,
        [targetShape],
      );
    }
    const tensor = Tensor.empty(targetShape, target, options);
    const info = dtypeInfo(target, "from");
    const out = tensor.#writable("from");
    if (isTypedArray(flat) && sameRepresentation(flat, info)) {
      out.set(flat as never);
    } else {
      for (let i = 0; i < count; i++) out[i] = encodeElement(info, flat[i] as ElementValue, "from") as never;
    }
    return tensor;
  }

  /**
   * A tensor with unspecified contents (0xFF bytes in the CHECKED build).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { DType, Tensor } from "@zigtensor/zigtensor";
   * using t = Tensor.empty([2, 3], DType.I32);
   * assert.ok(t.size === 6 && t.dtype === DType.I32);
   * ```
   */
  static empty(shape: readonly number[], dtype: DType = DType.F32, options: CreateOptions = {}): Tensor {
    return allocate("empty", shape, dtype, false, options);
  }

  /**
   * A tensor of zeros.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Tensor } from "@zigtensor/zigtensor";
   * using z = Tensor.zeros([2, 2]);
   * assert.ok(z.toArray().every((v) => v === 0));
   * ```
   */
  static zeros(shape: readonly number[], dtype: DType = DType.F32, options: CreateOptions = {}): Tensor {
    return allocate("zeros", shape, dtype, true, options);
  }

  /**
   * A tensor of ones.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { DType, Tensor } from "@zigtensor/zigtensor";
   * using o = Tensor.ones([3], DType.F16);
   * assert.ok(o.get(2) === 1);
   * ```
   */
  static ones(shape: readonly number[], dtype: DType = DType.F32, options: CreateOptions = {}): Tensor {
    return Tensor.full(shape, 1, dtype, options);
  }

  /**
   * A tensor filled with `value` (converted to `dtype` by the cast rules).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { DType, Tensor } from "@zigtensor/zigtensor";
   * using t = Tensor.full([2], 7n, DType.I64);
   * assert.ok(t.get(1) === 7n);
   * ```
   */
  static full(
    shape: readonly number[],
    value: ElementValue | boolean,
    dtype: DType = DType.F32,
    options: CreateOptions = {},
  ): Tensor {
    const tensor = Tensor.empty(shape, dtype, options);
    const info = dtypeInfo(dtype, "full");
    tensor.#writable("full").fill(encodeElement(info, value, "full") as never);
    return tensor;
  }

  /**
   * A rank-0 tensor holding `value`: F32 for a number unless `dtype` says otherwise, I64 for a bigint, Bool for
   * a boolean.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Tensor } from "@zigtensor/zigtensor";
   * using s = Tensor.scalar(2.5);
   * assert.ok(s.rank === 0 && s.item() === 2.5);
   * ```
   */
  static scalar(value: ElementValue | boolean, dtype?: DType, options: CreateOptions = {}): Tensor {
    const inferred: DType = typeof value === "bigint" ? 7 : typeof value === "boolean" ? 9 : 1;
    return Tensor.full([], value, dtype ?? inferred, options);
  }

  /**
   * 0, 1, …, n − 1.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { DType, Tensor } from "@zigtensor/zigtensor";
   * using r = Tensor.arange(4, DType.I32);
   * assert.ok(r.toArray().join() === "0,1,2,3");
   * ```
   */
  static arange(n: number, dtype: DType = DType.F32, options: CreateOptions = {}): Tensor {
    const tensor = Tensor.empty([n], dtype, options);
    const info = dtypeInfo(dtype, "arange");
    const out = tensor.#writable("arange");
    for (let i = 0; i < n; i++) out[i] = encodeElement(info, i, "arange") as never;
    return tensor;
  }

  /**
   * Uniform values in [0, 1) as F32; the same `seed` gives the same values.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Tensor } from "@zigtensor/zigtensor";
   * using a = Tensor.rand([4], { seed: 1 });
   * using b = Tensor.rand([4], { seed: 1 });
   * assert.ok(a.toArray().join() === b.toArray().join() && a.toArray().every((v) => v >= 0 && v < 1));
   * ```
   */
  static rand(shape: readonly number[], options: CreateOptions & { seed?: number } = {}): Tensor {
    const tensor = Tensor.empty(shape, 1, options);
    randomFill(tensor.#writable("rand") as Float32Array, "uniform", options.seed);
    return tensor;
  }

  /**
   * Standard normal values as F32; the same `seed` gives the same values.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Tensor } from "@zigtensor/zigtensor";
   * using a = Tensor.randn([1000], { seed: 7 });
   * const mean = (a.toArray() as Float32Array).reduce((s, v) => s + v, 0) / 1000;
   * assert.ok(Math.abs(mean) < 0.2);
   * ```
   */
  static randn(shape: readonly number[], options: CreateOptions & { seed?: number } = {}): Tensor {
    const tensor = Tensor.empty(shape, 1, options);
    randomFill(tensor.#writable("randn") as Float32Array, "normal", options.seed);
    return tensor;
  }

  // --- metadata ---

  /** The number of axes. */
  get rank(): number {
    return this.shape.length;
  }

  /** The number of elements. */
  get size(): number {
    return elementCount(this.shape);
  }

  /** Whether the elements are in row-major order with no gaps (extent-1 strides ignored; empty counts). */
  get isContiguous(): boolean {
    return this.blockSize === 0 && isContiguous(this.shape, this.strides);
  }

  /** Nchw, Nhwc, NchwC(B) or Strided. */
  get layout(): Layout {
    return this.blockSize > 0 ? Layout.nchwc(this.blockSize) : detectLayout(this.shape, this.strides);
  }

  /** Whether the storage was released (by `dispose` on any handle, a scope, or an arena reset). */
  get isReleased(): boolean {
    return this.storage.isReleased;
  }

  toString(): string {
    return `Tensor(${dtypeInfo(this.dtype).name}, ${formatShape(this.shape)}${
      this.blockSize ? `, NchwC(${this.blockSize})` : ""
    })`;
  }

  // --- lifetime ---

  /** Releases the storage for every handle and view of it; harmless to call again, on any handle. */
  dispose(): void {
    this.storage.release();
  }

  /** Enables `using`. */
  [Symbol.dispose](): void {
    this.storage.release();
  }

  // --- reading and writing ---

  /** The element at `index` (negative indices count from the end). */
  get(...index: number[]): ElementValue {
    const info = this.#scalarInfo("get");
    return decodeElement(info, this.#view("get"), this.#elementOffset("get", index));
  }

  /** Writes one element (converted by the cast rules); counts as a write for the version counter. */
  set(value: ElementValue | boolean, ...index: number[]): void {
    const info = this.#scalarInfo("set");
    this.#checkWritable("set");
    const at = this.#elementOffset("set", index);
    this.#view("set")[at] = encodeElement(info, value, "set") as never;
    this.storage.bumpVersion();
  }

  /** Sets every element to `value`; counts as a write. */
  fill(value: ElementValue | boolean): void {
    const info = this.#scalarInfo("fill");
    this.#checkWritable("fill");
    const stored = encodeElement(info, value, "fill");
    if (this.isContiguous) this.#writable("fill").fill(stored as never);
    else fillStrided(this, stored);
    this.storage.bumpVersion();
  }

  /** Copies `source` (broadcast to this shape, cast to this dtype) into this tensor; counts as a write. */
  copyFrom(source: Tensor): void {
    ops.copyInto(this, source);
  }

  /** The one element of a size-1 tensor. */
  item(): ElementValue {
    if (this.size !== 1) {
      throw new TensorShapeError(
        "item",
        `item() needs exactly one element, ${formatShape(this.shape)} has ${this.size}`,
        [this.shape],
      );
    }
    return this.get(...new Array<number>(this.rank).fill(0));
  }

  /**
   * A typed array over this tensor's own memory, no copy: contiguous tensors only. F16 reads as
   * `Float16Array` where the runtime has one, else as a `Uint16Array` of bits; BF16 always as bits; I64/U64 as
   * bigint arrays; Bool as 0/1 bytes; blocked tensors as their physical span; Q4_0/Q8_0 as their block bytes.
   */
  data(): TypedArray {
    return this.#span("data");
  }

  /** The same as `data()`, and counts as a write (bumps the version). */
  mutableData(): TypedArray {
    this.#checkWritable("mutableData");
    const span = this.#span("mutableData");
    this.storage.bumpVersion();
    return span;
  }

  /** A copy in row-major order, as a typed array the caller owns (no scope tracks it). */
  toArray(): TypedArray {
    if (this.isContiguous) return this.#span("toArray").slice();
    using packed = this.contiguous();
    return packed.#span("toArray").slice();
  }

  /** Nested plain arrays of the elements (numbers, or bigints for I64/U64). */
  toNested(): unknown {
    const info = this.#scalarInfo("toNested");
    const flat = this.toArray();
    const decode = (i: number) => decodeElement(info, flat, i);
    const build = (axis: number, base: number): unknown => {
      if (axis === this.rank) return decode(base);
      const stride = this.shape.slice(axis + 1).reduce((a, b) => a * b, 1);
      return Array.from({ length: this.shape[axis] }, (_, i) => build(axis + 1, base + i * stride));
    };
    return build(0, 0);
  }

  /** Internal: this tensor as a kernel operand, strides and offset overridable; throws StaleTensorError(op) when released. */
  operand(
    op: string,
    strides: readonly number[] = this.strides,
    offset: number = this.offset,
  ): KernelOperand {
    return new TensorOperand(this, op, strides, offset);
  }

  /** Internal: a typed array of the stored representation over the whole storage. */
  elements(op: string): TypedArray {
    return this.#view(op);
  }

  // --- views ---

  /** Dimension i of the result is dimension `dims[i]` of this tensor. */
  permute(dims: readonly number[]): Tensor {
    return ops.permute(this, dims);
  }

  /** Swaps two axes. */
  transpose(a: number, b: number): Tensor {
    return ops.transpose(this, a, b);
  }

  /** The transpose of a rank-2 tensor. */
  get T(): Tensor {
    if (this.rank !== 2) {
      throw new TensorShapeError(
        "T",
        `T needs a rank-2 tensor, got shape ${formatShape(this.shape)}; use permute`,
        [this.shape],
      );
    }
    return ops.transpose(this, 0, 1);
  }

  /** Elements `start`, `start + step`, … below `end` along `axis` (negative start/end count from the end). */
  slice(axis: number, start: number, end: number, step = 1): Tensor {
    return ops.slice(this, axis, start, end, step);
  }

  /** The sub-tensor at `index` along `axis`, without that axis. */
  select(axis: number, index: number): Tensor {
    return ops.select(this, axis, index);
  }

  /** Reverses `axis`. */
  flip(axis: number): Tensor {
    return ops.flip(this, axis);
  }

  /** Inserts an extent-1 axis at `axis`. */
  unsqueeze(axis: number): Tensor {
    return ops.unsqueeze(this, axis);
  }

  /** Removes the extent-1 axis `axis`, or all of them. */
  squeeze(axis?: number): Tensor {
    return ops.squeeze(this, axis);
  }

  /** Broadcasts to `shape` (right-aligned, stride 0 for the stretched axes; −1 keeps an extent). */
  expand(shape: readonly number[]): Tensor {
    return ops.expand(this, shape);
  }

  /** A view with `shape` (one −1 allowed), or null when the strides do not allow one. */
  tryReshape(shape: readonly number[]): Tensor | null {
    return ops.tryReshape(this, shape);
  }

  /** A view with `shape` when possible, else a contiguous copy reshaped (one −1 allowed). */
  reshape(shape: readonly number[]): Tensor {
    return ops.reshape(this, shape);
  }

  /** A view that shares storage but is cut from the autograd graph. */
  detach(): Tensor {
    return new Tensor({
      storage: this.storage,
      dtype: this.dtype,
      shape: this.shape,
      strides: this.strides,
      offset: this.offset,
      blockSize: this.blockSize,
    });
  }

  // --- copies ---

  /** Itself when contiguous, else a row-major copy. */
  contiguous(): Tensor {
    return ops.contiguous(this);
  }

  /** A row-major copy that no scope tracks. */
  clone(): Tensor {
    return ops.clone(this);
  }

  /** A copy converted to `dtype` by the cast rules. */
  cast(dtype: DType): Tensor {
    return ops.cast(this, dtype);
  }

  /** A copy in `layout` (NCHW, NHWC or NchwC(B)); same logical shape and values. */
  toLayout(layout: Layout): Tensor {
    return ops.toLayout(this, layout);
  }

  // --- autograd ---

  /** A handle over the same storage that is a gradient leaf (floating-point dtypes only). */
  withRequiresGrad(): Tensor {
    const info = dtypeInfo(this.dtype);
    if (!info.isFloat || info.isQuantized || this.blockSize > 0) {
      throw new DTypeError(
        "withRequiresGrad",
        `only plain floating-point tensors can require gradients, got ${
          this.blockSize ? `a blocked NchwC(${this.blockSize})` : info.name
        } tensor`,
      );
    }
    return new Tensor({ ...this.#parts(), leaf: leafNode(this.shape, this.dtype) });
  }

  /** Whether gradients flow to this tensor: a leaf made by `withRequiresGrad`, or a recorded result. */
  get requiresGrad(): boolean {
    return this.#leaf !== null || this.gradFn !== null;
  }

  /** Internal: the leaf node, for leaves. */
  get leaf(): LeafNode | null {
    return this.#leaf;
  }

  /** The accumulated gradient of a leaf after `backward()`, or null. */
  get grad(): Tensor | null {
    return this.#leaf?.grad ?? null;
  }

  set grad(value: Tensor | null) {
    if (this.#leaf === null) {
      throw new TypeError("grad: only a leaf made by withRequiresGrad() holds a gradient");
    }
    this.#leaf.grad?.dispose();
    this.#leaf.grad = value;
  }

  /** Back-propagates from this tensor: a scalar by default, or with `grad` of this tensor's shape. */
  backward(grad?: Tensor): void {
    backward(this, grad);
  }

  // --- arithmetic (each also a function in `ops`) ---

  /** this + other, broadcasting. */
  add(other: Tensor | number): Tensor {
    return ops.add(this, other);
  }

  /** this − other, broadcasting. */
  sub(other: Tensor | number): Tensor {
    return ops.sub(this, other);
  }

  /** this · other element-wise, broadcasting. */
  mul(other: Tensor | number): Tensor {
    return ops.mul(this, other);
  }

  /** this / other, broadcasting. */
  div(other: Tensor | number): Tensor {
    return ops.div(this, other);
  }

  /** −this. */
  neg(): Tensor {
    return ops.neg(this);
  }

  /** max(this, 0). */
  relu(): Tensor {
    return ops.relu(this);
  }

  /** The matrix product (batched, broadcasting batch axes). */
  matmul(other: Tensor): Tensor {
    return ops.matmul(this, other);
  }

  /** The sum over `axis` (a number or an array; all axes by default). */
  sum(axis?: number | readonly number[], options: { keepDims?: boolean } = {}): Tensor {
    return ops.sum(this, axis, options);
  }

  /** The mean over `axis` (all axes by default). */
  mean(axis?: number | readonly number[], options: { keepDims?: boolean } = {}): Tensor {
    return ops.mean(this, axis, options);
  }

  /** The maximum over `axis` (all axes by default). */
  max(axis?: number | readonly number[], options: { keepDims?: boolean } = {}): Tensor {
    return ops.max(this, axis, options);
  }

  /** Softmax over `axis` (the last by default). */
  softmax(axis = -1): Tensor {
    return ops.softmax(this, axis);
  }

  /** Log-softmax over `axis` (the last by default). */
  logSoftmax(axis = -1): Tensor {
    return ops.logSoftmax(this, axis);
  }

  /** GELU (tanh form). */
  gelu(): Tensor {
    return ops.gelu(this);
  }

  /** 1 / (1 + e^−x). */
  sigmoid(): Tensor {
    return ops.sigmoid(this);
  }

  /** tanh(x). */
  tanh(): Tensor {
    return ops.tanh(this);
  }

  /** e^x. */
  exp(): Tensor {
    return ops.exp(this);
  }

  /** ln(x). */
  log(): Tensor {
    return ops.log(this);
  }

  /** √x. */
  sqrt(): Tensor {
    return ops.sqrt(this);
  }

  // --- internals ---

  #parts(): TensorParts {
    return {
      storage: this.storage,
      dtype: this.dtype,
      shape: this.shape,
      strides: this.strides,
      offset: this.offset,
      blockSize: this.blockSize,
    };
  }

  /** A typed array of this dtype's stored representation over the whole storage (cached per handle). */
  #view(op: string): TypedArray {
    const buffer = this.storage.buffer(op);
    if (this.#elements === null || this.#elements.buffer !== buffer) {
      // Element access works on stored bits (F16 and BF16 as Uint16Array), whatever data() returns.
      const ctor = dtypeInfo(this.dtype).array;
      this.#elements = new ctor(buffer, 0, Math.floor(buffer.byteLength / ctor.BYTES_PER_ELEMENT));
    }
    return this.#elements;
  }

  /** The contiguous span of this tensor's own elements (or blocks, or the blocked physical span). */
  #span(op: string): TypedArray {
    const info = dtypeInfo(this.dtype);
    const buffer = this.storage.buffer(op);
    if (this.blockSize > 0) {
      return new info.array(buffer, 0, buffer.byteLength / info.blockBytes);
    }
    if (!isContiguous(this.shape, this.strides)) {
      throw new TensorShapeError(
        op,
        `${op}() needs a contiguous tensor; this one has shape ${formatShape(this.shape)} and strides ` +
          `${formatShape(this.strides)}: call contiguous() first`,
        [this.shape],
      );
    }
    if (info.isQuantized) {
      const blocks = this.size / info.blockElements;
      return new Uint8Array(
        buffer,
        (this.offset / info.blockElements) * info.blockBytes,
        blocks * info.blockBytes,
      );
    }
    const ctor = this.dtype === DType.F16 && float16Array !== undefined ? float16Array : info.array;
    return new ctor(buffer, this.offset * info.blockBytes, this.size) as TypedArray;
  }

  /** The whole contiguous span for a creator's first write (no version bump: nobody has seen it yet). */
  #writable(op: string): TypedArray {
    const info = dtypeInfo(this.dtype);
    if (info.isQuantized) {
      throw new DTypeError(op, `${info.name} tensors are made by quantize(), not filled element by element`);
    }
    return new info.array(this.storage.buffer(op), this.offset * info.blockBytes, this.size);
  }

  #scalarInfo(op: string): DTypeInfo {
    const info = dtypeInfo(this.dtype);
    if (info.isQuantized) {
      throw new DTypeError(op, `${info.name} elements are not addressable one at a time; dequantize() first`);
    }
    if (this.blockSize > 0) {
      throw new DTypeError(
        op,
        `a blocked NchwC(${this.blockSize}) tensor only supports toLayout(), data() and metadata`,
      );
    }
    return info;
  }

  #checkWritable(op: string): void {
    for (let i = 0; i < this.rank; i++) {
      if (this.strides[i] === 0 && this.shape[i] > 1) {
        throw new TensorShapeError(
          op,
          `cannot write through a broadcast view (axis ${i} has stride 0 and extent ${
            this.shape[i]
          }); clone() it first`,
          [this.shape],
        );
      }
    }
  }

  #elementOffset(op: string, index: readonly number[]): number {
    if (index.length !== this.rank) {
      throw new TensorShapeError(
        op,
        `${op} needs ${this.rank} indices for shape ${formatShape(this.shape)}, got ${index.length}`,
        [this.shape],
      );
    }
    let at = this.offset;
    for (let d = 0; d < index.length; d++) {
      const extent = this.shape[d];
      let i = index[d];
      if (!Number.isInteger(i) || i < -extent || i >= extent) {
        throw new TensorShapeError(
          op,
          `index ${String(i)} is out of range for axis ${d} of extent ${extent} in ${
            formatShape(this.shape)
          }`,
          [this.shape],
        );
      }
      if (i < 0) i += extent;
      at += i * this.strides[d];
    }
    return at;
  }
}

/**
 * A tensor as a kernel operand. Its typed array is made only when a kernel reads `data` (the reference kernels
 * do, native ones do not): an ArrayBuffer over native memory costs about a microsecond to create.
 */
class TensorOperand implements KernelOperand {
  readonly pointer: NativePointer;
  readonly offset: number;
  readonly byteLength: number;

  constructor(
    readonly tensor: Tensor,
    readonly op: string,
    readonly strides: readonly number[],
    offset: number,
  ) {
    this.pointer = tensor.storage.pointer(op);
    this.offset = offset;
    this.byteLength = tensor.storage.byteLength;
  }

  get data(): TypedArray {
    return this.tensor.elements(this.op);
  }
}

/** Rents storage for a new contiguous tensor, checking shape and byte limits first. */
export function allocate(
  op: string,
  shape: readonly number[],
  dtype: DType,
  zero: boolean,
  options: CreateOptions & { scoped?: boolean } = {},
): Tensor {
  const info = dtypeInfo(dtype, op);
  const count = checkShape(op, shape);
  if (info.isQuantized && (shape.length === 0 || shape[shape.length - 1] % info.blockElements !== 0)) {
    throw new TensorShapeError(
      op,
      `${info.name} tensors keep whole blocks of ${info.blockElements} along the last axis; shape ${
        formatShape(shape)
      } does not`,
      [shape],
    );
  }
  const bytes = (count / info.blockElements) * info.blockBytes;
  checkBytes(op, shape, bytes);
  const storage = Storage.rent(bytes, { zero, arena: options.arena, scoped: options.scoped ?? false });
  return new Tensor({ storage, dtype, shape: [...shape], strides: contiguousStrides(shape), offset: 0 });
}

function isTypedArray(value: unknown): value is TypedArray {
  return ArrayBuffer.isView(value) && !(value instanceof DataView);
}

/** Whether a typed array's elements can be copied as they are into storage of `info`. */
function sameRepresentation(values: TypedArray, info: DTypeInfo): boolean {
  if (info.name === "Bool") return false;
  if ((info.name === "F16" || info.name === "BF16") && values instanceof Uint16Array) return true;
  if (info.name === "F16") return values.constructor === float16Array;
  return values.constructor === info.array;
}

function typedArrayDType(values: TypedArray | Float16ArrayLike): DType {
  if (float16Array !== undefined && values instanceof float16Array) return 10;
  const byCtor: [unknown, DType][] = [
    [Float32Array, 1],
    [Uint8Array, 2],
    [Int8Array, 3],
    [Uint16Array, 4],
    [Int16Array, 5],
    [Int32Array, 6],
    [BigInt64Array, 7],
    [Float64Array, 11],
    [Uint32Array, 12],
    [BigUint64Array, 13],
  ];
  for (const [ctor, dtype] of byCtor) if (values.constructor === ctor) return dtype;
  throw new DTypeError("from", `cannot take values from a ${values.constructor.name}`);
}

function flatten(
  values: TensorValues,
): { flat: ArrayLike<unknown>; inferredShape: number[]; inferredDType: DType } {
  if (ArrayBuffer.isView(values)) {
    const typed = values as TypedArray;
    return { flat: typed, inferredShape: [typed.length], inferredDType: typedArrayDType(typed) };
  }
  if (!Array.isArray(values)) {
    throw new TypeError(`from: values must be a typed array or an array, got ${String(values)}`);
  }
  const shape: number[] = [];
  let level: unknown = values;
  while (Array.isArray(level)) {
    shape.push(level.length);
    level = level[0];
  }
  const flat: unknown[] = [];
  const walk = (node: unknown, depth: number) => {
    if (depth === shape.length) {
      if (Array.isArray(node)) {
        throw new TensorShapeError(
          "from",
          "nested arrays are ragged: deeper at some positions than at others",
          [shape],
        );
      }
      flat.push(node);
      return;
    }
    if (!Array.isArray(node) || node.length !== shape[depth]) {
      throw new TensorShapeError(
        "from",
        `nested arrays are ragged: expected ${shape[depth]} entries at depth ${depth}`,
        [shape],
      );
    }
    for (const child of node) walk(child, depth + 1);
  };
  walk(values, 0);
  const first = flat[0];
  const inferredDType: DType = typeof first === "bigint" ? 7 : typeof first === "boolean" ? 9 : 1;
  for (const v of flat) {
    if (typeof v !== "number" && typeof v !== "bigint" && typeof v !== "boolean") {
      throw new TypeError(`from: values must be numbers, bigints or booleans, got ${typeof v}`);
    }
  }
  return { flat, inferredShape: shape.length === 1 && shape[0] === 0 ? [0] : shape, inferredDType };
}

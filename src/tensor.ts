/**
 * `Tensor`: a handle over native storage (spec 000 §1): an element type, a logical shape, strides in elements
 * and an offset, plus the autograd links. Views are new handles over the same storage; nothing is copied
 * unless asked. Every data access checks the storage first, so a released tensor throws `StaleTensorError`.
 *
 * @module
 */
import { DType, type DTypeInfo, dtypeInfo, type DTypeLike, toDType, type TypedArray } from "./core/dtype.ts";
import { decodeElement, type ElementValue, encodeElement } from "./core/element.ts";
import { DTypeError, OptionError, TensorShapeError } from "./core/errors.ts";
import { detectLayout, Layout } from "./core/layout.ts";
import {
  checkBytes,
  checkShape,
  contiguousStrides,
  elementCount,
  formatShape,
  isContiguous,
} from "./core/shape.ts";
import {
  bumpStorageVersion,
  isStorage,
  Storage,
  storageBytes,
  storagePointer,
  storageReleased,
} from "./memory/storage.ts";
import { Arena } from "./memory/pool.ts";
import { checkOptions, describe } from "./core/options.ts";
import type { NativePointer } from "./native/symbols.ts";
import type { KernelOperand } from "./kernels/types.ts";
import type { BackwardRecord, LeafNode } from "./autograd/record.ts";
import { exposeRecord, leafNode, setLeafGrad } from "./autograd/record.ts";
import { backward } from "./autograd/engine.ts";
import * as ops from "./ops/mod.ts";
import type {
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
  LstmOptions,
  LstmResult,
  MaxPool2dResult,
  NllLossOptions,
  Pool2dOptions,
  ReduceOptions,
  RnnWeights,
  SmoothL1LossOptions,
} from "./ops/mod.ts";
import type {
  ClampOptions,
  EluOptions,
  GeluOptions,
  HardtanhOptions,
  LeakyReluOptions,
  SoftplusOptions,
} from "./ops/mod.ts";
import type { NormOptions, PadOptions, TriangleOptions, ValuesAndIndices, VarOptions } from "./ops/mod.ts";
import { randomFill, type Seed, seedWords } from "./core/random.ts";
import { formatTensor, type TensorJson, tensorJson } from "./format.ts";

/** The inspection hooks of Deno and of Node (which Bun follows). */
const denoInspect: unique symbol = Symbol.for("Deno.customInspect");
const nodeInspect: unique symbol = Symbol.for("nodejs.util.inspect.custom");

const CREATE_KEYS = ["arena", "dtype"] as const;
const RANDOM_KEYS = ["arena", "seed"] as const;
import { fillStrided } from "./ops/copy.ts";

/** Options every creator takes. */
export interface CreateOptions {
  /** Allocate from this arena instead of the pool; the tensor goes stale when the arena is reset. */
  readonly arena?: Arena;
}

/** Options of the creators that take an element type. */
export interface TensorOptions extends CreateOptions {
  /**
   * The element type: a `DType` value (`DType.I32`) or a name (`"int32"`, `"float16"`, `"I64"`, ...). Never a
   * positional argument, so a number meant as a value is never read as a dtype.
   *
   * @default DType.F32 (for `from`: the dtype the values imply)
   */
  readonly dtype?: DTypeLike;
}

/** Values `Tensor.from` copies: a typed array, or a flat or nested array of numbers, bigints or booleans. */
export type TensorValues = TypedArray | Float16ArrayLike | NestedArray;
/** Numbers, bigints or booleans nested to any depth, the same depth everywhere. */
export type NestedArray = readonly (number | bigint | boolean | NestedArray)[];
/** A `Float16Array`, where the runtime has one. */
export interface Float16ArrayLike extends ArrayLike<number> {
  /** Bytes per element. */
  readonly BYTES_PER_ELEMENT: 2;
  /** What tells it apart from the other typed arrays. */
  readonly [Symbol.toStringTag]: "Float16Array";
}

let attach: (t: Tensor, record: BackwardRecord) => void;

/**
 * Internal (not exported from `mod.ts`): the shape and strides arrays a tensor was checked with, which the ops
 * read. They are never handed out (the public getters return frozen copies), so no code outside the library
 * can change them, or make them read differently from one access to the next (an accessor on an element, a
 * hole that reads a prototype, a changed length) between the check and the kernel.
 */
export let shapeOf: (t: Tensor) => readonly number[];
/** Internal: the strides array a tensor was checked with (see `shapeOf`). */
export let stridesOf: (t: Tensor) => readonly number[];
/** Internal: the backward record of a tensor, as the backward pass reads it (`gradFn` freezes it first). */
export let gradFnOf: (t: Tensor) => BackwardRecord | null;
/*
 * Internal: the fields of a handle, read from its private fields. The ops read a handle only through these
 * (never its getters), so an own property defined on a handle changes what code outside reads, not what
 * reaches a kernel; that is why a handle need not be non-extensible (`Object.preventExtensions` on every new
 * handle cost as much as the rest of a small op in V8).
 */
/** Internal: the storage of a handle. */
export let storageOf: (t: Tensor) => Storage;
/** Internal: the dtype of a handle. */
export let dtypeOf: (t: Tensor) => DType;
/** Internal: the element offset of a handle. */
export let offsetOf: (t: Tensor) => number;
/** Internal: the block size of a handle (0 unless NchwC). */
export let blockSizeOf: (t: Tensor) => number;
/** Internal: the leaf node of a handle, or null. */
export let leafOf: (t: Tensor) => LeafNode | null;
/** Internal: `t` as a kernel operand, strides and offset overridable; throws `StaleTensorError(op)` when released. */
export let operandOf: (t: Tensor, op: string, strides?: readonly number[], offset?: number) => KernelOperand;
/** Internal: a typed array of the stored representation over the whole storage. */
export let elementsOf: (t: Tensor, op: string) => TypedArray;
/**
 * Internal: the elements in row-major order as JS values (numbers, bigints for I64/U64), read through the
 * strides without a copy; `limit` stops after that many.
 */
export let elementValuesOf: (t: Tensor, op: string, limit?: number) => ElementValue[];
/** Internal: a handle over the same view, without the autograd node. */
export let detachOf: (t: Tensor) => Tensor;
/** Internal: whether `value` is a handle this module made (a brand check: `instanceof` follows a prototype). */
export let isTensor: (value: unknown) => value is Tensor;

/** Internal: the rank of a handle. */
export function rankOf(t: Tensor): number {
  return shapeOf(t).length;
}

/** Internal: the element count of a handle. */
export function sizeOf(t: Tensor): number {
  return elementCount(shapeOf(t));
}

/** Internal: whether a handle is a row-major view without gaps. */
export function isContiguousOf(t: Tensor): boolean {
  return blockSizeOf(t) === 0 && isContiguous(shapeOf(t), stridesOf(t));
}

/** Internal: the memory layout a handle's strides describe. */
export function layoutOf(t: Tensor): Layout {
  const block = blockSizeOf(t);
  return block > 0 ? Layout.nchwc(block) : detectLayout(shapeOf(t), stridesOf(t));
}

/** Internal: whether a handle's storage was released. */
export function isReleasedOf(t: Tensor): boolean {
  return storageReleased(storageOf(t));
}

/** Internal: whether gradients flow to a handle. */
export function requiresGradOf(t: Tensor): boolean {
  return leafOf(t) !== null || gradFnOf(t) !== null;
}

/** Internal: the accumulated gradient of a leaf, or null. */
export function gradOf(t: Tensor): Tensor | null {
  return leafOf(t)?.grad ?? null;
}

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
  readonly #storage: Storage;
  readonly #dtype: DType;
  readonly #shape: readonly number[];
  readonly #strides: readonly number[];
  readonly #offset: number;
  readonly #blockSize: number;
  readonly #leaf: LeafNode | null;
  #gradFn: BackwardRecord | null;
  #elements: TypedArray | null = null;
  /** The frozen copies `shape` and `strides` hand out, made on first read. */
  #publicShape: readonly number[] | null = null;
  #publicStrides: readonly number[] | null = null;

  /**
   * Internal: build tensors with the creators, views and ops. Every bound is checked against the storage here
   * (spec 000: bounds are checked when a view is made): the shape's extents, one integer stride per axis, an
   * offset such that every reachable element lies inside the storage. The handle keeps copies of the shape and
   * strides that no code outside the library can reach (the getters hand out frozen copies of them), so what
   * was checked is what every kernel reads.
   */
  constructor(parts: TensorParts) {
    // A subclass could override the getters the ops read (shape, strides) behind the bounds checks.
    if (new.target !== Tensor) refuseSubclass();
    // `allocate`'s own parts (a contiguous view at offset 0 of a block rented for its checked shape) are
    // checked already; any other parts are checked now. Either way the fields come from one class, so these
    // loads see one object shape and V8 inlines the whole construction into the op.
    const checked = parts instanceof CheckedParts ? parts : checkParts(parts);
    this.#storage = checked.storage;
    this.#dtype = checked.dtype;
    this.#shape = checked.shape;
    this.#strides = checked.strides;
    this.#offset = checked.offset;
    this.#blockSize = checked.blockSize;
    this.#gradFn = checked.gradFn;
    this.#leaf = checked.leaf;
  }

  /** The storage shared by this handle and its views. */
  get storage(): Storage {
    return this.#storage;
  }

  /** The element type. */
  get dtype(): DType {
    return this.#dtype;
  }

  /** The logical shape: a frozen array (the same one at every read), so writing into it throws. */
  get shape(): readonly number[] {
    return this.#publicShape ??= Object.freeze(this.#shape.slice());
  }

  /** Strides in elements, one per axis: 0 broadcasts, negative reverses. Frozen, as `shape`. */
  get strides(): readonly number[] {
    return this.#publicStrides ??= Object.freeze(this.#strides.slice());
  }

  /** Element offset of the first element in the storage. */
  get offset(): number {
    return this.#offset;
  }

  /** B for an NchwC(B) blocked tensor, 0 otherwise. */
  get blockSize(): number {
    return this.#blockSize;
  }

  /**
   * The backward record that produced this tensor, or null for leaves and untracked tensors; read-only (frozen,
   * with the records it reaches, when first handed out).
   */
  get gradFn(): BackwardRecord | null {
    const record = this.#gradFn;
    return record === null ? null : exposeRecord(record);
  }

  static {
    attach = (t, record) => {
      t.#gradFn = record;
    };
    gradFnOf = (t) => t.#gradFn;
    shapeOf = (t) => t.#shape;
    stridesOf = (t) => t.#strides;
    storageOf = (t) => t.#storage;
    dtypeOf = (t) => t.#dtype;
    offsetOf = (t) => t.#offset;
    blockSizeOf = (t) => t.#blockSize;
    leafOf = (t) => t.#leaf;
    operandOf = (t, op, strides = t.#strides, offset = t.#offset) =>
      new TensorOperand(t, op, strides, offset);
    elementsOf = (t, op) => t.#view(op);
    elementValuesOf = (t, op, limit = elementCount(t.#shape)) => t.#elementValues(op, limit);
    isTensor = (value): value is Tensor => typeof value === "object" && value !== null && #storage in value;
    detachOf = (t) =>
      new Tensor(
        new CheckedParts(t.#storage, t.#dtype, t.#shape, t.#strides, t.#offset, t.#blockSize, null, null),
      );
  }

  // --- creating ---

  /**
   * Copies `values` into a new tensor (PyTorch's `torch.tensor(data, dtype=...)`). The dtype follows the typed
   * array (`Float32Array` → F32, `BigInt64Array` → I64, ...) or is given as `{ dtype }`; plain numbers default
   * to F32, bigints to I64, booleans to Bool. Nested arrays give their own shape, or `shape` reshapes flat
   * values; the options may come second when there is no shape. A `Uint16Array` given for F16 or BF16 is
   * taken as raw bits.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { DType, Tensor } from "@zigtensor/zigtensor";
   * using a = Tensor.from([[1, 2], [3, 4]]);
   * using b = Tensor.from(new BigInt64Array([5n, 6n]));
   * using c = Tensor.from([1.5, -2.7], [2], { dtype: DType.I32 });
   * using d = Tensor.from([[1, 2]], { dtype: "int64" });
   * assert.ok(a.shape.join() === "2,2" && b.dtype === DType.I64 && c.get(1) === -2 && d.get(0, 1) === 2n);
   * ```
   */
  static from(values: TensorValues, shape?: readonly number[], options?: TensorOptions): Tensor;
  /** Copies `values` (their own shape) with `options`. */
  static from(values: TensorValues, options: TensorOptions): Tensor;
  static from(
    values: TensorValues,
    shapeOrOptions?: readonly number[] | TensorOptions,
    options: TensorOptions = {},
  ): Tensor {
    const { flat, inferredShape, inferredDType } = flatten(values);
    let shape: readonly number[] | undefined;
    if (Array.isArray(shapeOrOptions)) shape = shapeOrOptions;
    else if (shapeOrOptions !== undefined) options = shapeOrOptions as TensorOptions;
    creatorOptions("from", options);
    const targetShape = shape ?? inferredShape;
    const target = options.dtype === undefined ? inferredDType : toDType(options.dtype, "from");
    const count = checkShape("from", targetShape);
    if (count !== flat.length) {
      throw new TensorShapeError(
        "from",
        `${flat.length} values cannot fill shape ${formatShape(targetShape)} (${count} elements)`,
        [targetShape],
      );
    }
    const tensor = Tensor.empty(targetShape, { ...options, dtype: target });
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
   * using t = Tensor.empty([2, 3], { dtype: DType.I32 });
   * assert.ok(t.size === 6 && t.dtype === DType.I32);
   * ```
   */
  static empty(shape: readonly number[], options: TensorOptions = {}): Tensor {
    return allocate("empty", shape, optionDType(options, "empty"), false, options);
  }

  /**
   * A tensor of zeros.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { DType, Tensor } from "@zigtensor/zigtensor";
   * using z = Tensor.zeros([2, 2]);
   * using i = Tensor.zeros([3], { dtype: "int32" });
   * assert.ok(z.toArray().every((v) => v === 0) && i.dtype === DType.I32);
   * ```
   */
  static zeros(shape: readonly number[], options: TensorOptions = {}): Tensor {
    return allocate("zeros", shape, optionDType(options, "zeros"), true, options);
  }

  /**
   * A tensor of ones.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { DType, Tensor } from "@zigtensor/zigtensor";
   * using o = Tensor.ones([3], { dtype: DType.F16 });
   * assert.ok(o.get(2) === 1);
   * ```
   */
  static ones(shape: readonly number[], options: TensorOptions = {}): Tensor {
    return Tensor.full(shape, 1, options);
  }

  /**
   * A tensor filled with `value` (converted to `dtype` by the cast rules).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { DType, Tensor } from "@zigtensor/zigtensor";
   * using t = Tensor.full([2], 7n, { dtype: DType.I64 });
   * assert.ok(t.get(1) === 7n);
   * ```
   */
  static full(shape: readonly number[], value: ElementValue | boolean, options: TensorOptions = {}): Tensor {
    const dtype = optionDType(options, "full");
    const info = dtypeInfo(dtype, "full");
    const stored = encodeElement(info, value, "full");
    const tensor = allocate("full", shape, dtype, false, options);
    tensor.#writable("full").fill(stored as never);
    return tensor;
  }

  /**
   * A rank-0 tensor holding `value`: F32 for a number unless `{ dtype }` says otherwise, I64 for a bigint, Bool
   * for a boolean.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Tensor } from "@zigtensor/zigtensor";
   * using s = Tensor.scalar(2.5);
   * assert.ok(s.rank === 0 && s.item() === 2.5);
   * ```
   */
  static scalar(value: ElementValue | boolean, options: TensorOptions = {}): Tensor {
    creatorOptions("scalar", options);
    const inferred: DType = typeof value === "bigint" ? 7 : typeof value === "boolean" ? 9 : 1;
    return Tensor.full([], value, { ...options, dtype: options.dtype ?? inferred });
  }

  /**
   * `start`, `start + step`, … up to but excluding `end`, as PyTorch's `torch.arange`: `arange(end)` starts at 0,
   * `arange(start, end, step = 1)`; the options come last (or after the last number given). The values are
   * `start + i·step` in f64, converted to the dtype (F32 by default: zigtensor computes in F32, and integer
   * tensors are for indices, so ask for `{ dtype: "int64" }` where PyTorch would infer it).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { DType, Tensor } from "@zigtensor/zigtensor";
   * using r = Tensor.arange(4, { dtype: DType.I32 });
   * using s = Tensor.arange(2, 10);
   * using t = Tensor.arange(1, 0, -0.25);
   * assert.ok(r.toArray().join() === "0,1,2,3" && s.toArray().join() === "2,3,4,5,6,7,8,9");
   * assert.ok(t.toArray().join() === "1,0.75,0.5,0.25" && t.dtype === DType.F32);
   * ```
   */
  static arange(end: number, options?: TensorOptions): Tensor;
  /** `start`, `start + 1`, … below `end`. */
  static arange(start: number, end: number, options?: TensorOptions): Tensor;
  /** `start`, `start + step`, … up to but excluding `end`. */
  static arange(start: number, end: number, step: number, options?: TensorOptions): Tensor;
  static arange(
    start: number,
    end?: number | TensorOptions,
    step?: number | TensorOptions,
    options?: TensorOptions,
  ): Tensor {
    // arange(end, options?), arange(start, end, options?) or arange(start, end, step, options?).
    const [from, to, by, given]: [number, number, number, TensorOptions | undefined] = typeof end !== "number"
      ? [0, start, 1, end]
      : typeof step !== "number"
      ? [start, end, 1, step]
      : [start, end, step, options];
    if (
      (typeof end !== "number" && step !== undefined) || (typeof step !== "number" && options !== undefined)
    ) {
      throw new TypeError("arange: the options object must be the last argument");
    }
    const count = arangeCount(from, to, by);
    const dtype = optionDType(given ?? {}, "arange");
    const tensor = allocate("arange", [count], dtype, false, given ?? {});
    const info = dtypeInfo(dtype, "arange");
    const out = tensor.#writable("arange");
    for (let i = 0; i < count; i++) out[i] = encodeElement(info, from + i * by, "arange") as never;
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
  static rand(shape: readonly number[], options: CreateOptions & { seed?: Seed } = {}): Tensor {
    const { arena, seed } = checkOptions("rand", options, RANDOM_KEYS);
    if (seed !== undefined) seedWords("rand", seed);
    const tensor = allocate("rand", shape, 1, false, { arena });
    randomFill(tensor.#writable("rand") as Float32Array, "uniform", seed);
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
  static randn(shape: readonly number[], options: CreateOptions & { seed?: Seed } = {}): Tensor {
    const { arena, seed } = checkOptions("randn", options, RANDOM_KEYS);
    if (seed !== undefined) seedWords("randn", seed);
    const tensor = allocate("randn", shape, 1, false, { arena });
    randomFill(tensor.#writable("randn") as Float32Array, "normal", seed);
    return tensor;
  }

  // --- metadata ---

  /** The number of axes. */
  get rank(): number {
    return rankOf(this);
  }

  /** The number of elements. */
  get size(): number {
    return sizeOf(this);
  }

  /** Whether the elements are in row-major order with no gaps (extent-1 strides ignored; empty counts). */
  get isContiguous(): boolean {
    return isContiguousOf(this);
  }

  /** Nchw, Nhwc, NchwC(B) or Strided. */
  get layout(): Layout {
    return layoutOf(this);
  }

  /** Whether the storage was released (by `dispose` on any handle, a scope, or an arena reset). */
  get isReleased(): boolean {
    return isReleasedOf(this);
  }

  /**
   * The dtype, shape and values, laid out as PyTorch's `repr` (summarised with `…` beyond 1000 elements);
   * `console.log`, `Deno.inspect`, `Bun.inspect` and `node:util`'s `inspect` show the same.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Tensor } from "@zigtensor/zigtensor";
   * using t = Tensor.from([[1, -2.5], [3, 4]]);
   * assert.equal(String(t), "Tensor([[ 1.0000, -2.5000],\n        [ 3.0000,  4.0000]], dtype=F32, shape=[2, 2])");
   * ```
   */
  toString(): string {
    return formatTensor(this);
  }

  /**
   * `{ dtype, shape, data }` with the elements in row-major order, for `JSON.stringify` (see `TensorJson`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Tensor } from "@zigtensor/zigtensor";
   * using t = Tensor.from([[1, 2], [3, NaN]]);
   * assert.equal(JSON.stringify(t), '{"dtype":"F32","shape":[2,2],"data":[1,2,3,"NaN"]}');
   * ```
   */
  toJSON(): TensorJson {
    return tensorJson(this);
  }

  /** What Deno's `console.log` and `Deno.inspect` show: `toString()`. */
  [denoInspect](): string {
    return formatTensor(this);
  }

  /** What Node's `util.inspect` and Bun's `console.log` show: `toString()`. */
  [nodeInspect](): string {
    return formatTensor(this);
  }

  // --- lifetime ---

  /** Releases the storage for every handle and view of it; harmless to call again, on any handle. */
  dispose(): void {
    storageOf(this).release();
  }

  /** Enables `using`. */
  [Symbol.dispose](): void {
    storageOf(this).release();
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
    bumpStorageVersion(storageOf(this));
  }

  /** Sets every element to `value`; counts as a write. */
  fill(value: ElementValue | boolean): void {
    const info = this.#scalarInfo("fill");
    this.#checkWritable("fill");
    const stored = encodeElement(info, value, "fill");
    if (isContiguousOf(this)) this.#writable("fill").fill(stored as never);
    else fillStrided(this, stored);
    bumpStorageVersion(storageOf(this));
  }

  /** Copies `source` (broadcast to this shape, cast to this dtype) into this tensor; counts as a write. */
  copyFrom(source: Tensor): void {
    ops.copyInto(this, source);
  }

  /** The one element of a size-1 tensor. */
  item(): ElementValue {
    if (sizeOf(this) !== 1) {
      throw new TensorShapeError(
        "item",
        `item() needs exactly one element, ${formatShape(this.#shape)} has ${sizeOf(this)}`,
        [this.#shape],
      );
    }
    return this.get(...new Array<number>(rankOf(this)).fill(0));
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
    bumpStorageVersion(storageOf(this));
    return span;
  }

  /** A copy in row-major order, as a typed array the caller owns (no scope tracks it). */
  toArray(): TypedArray {
    if (isContiguousOf(this)) return this.#span("toArray").slice();
    using packed = this.contiguous();
    return packed.#span("toArray").slice();
  }

  /** Nested plain arrays of the elements (numbers, or bigints for I64/U64; F16 and BF16 as their values). */
  toNested(): unknown {
    const values = elementValuesOf(this, "toNested");
    const build = (axis: number, base: number): unknown => {
      if (axis === rankOf(this)) return values[base];
      const stride = this.#shape.slice(axis + 1).reduce((a, b) => a * b, 1);
      return Array.from({ length: this.#shape[axis] }, (_, i) => build(axis + 1, base + i * stride));
    };
    return build(0, 0);
  }

  /** `elementValuesOf`. */
  #elementValues(op: string, limit: number): ElementValue[] {
    const info = this.#scalarInfo(op);
    const data = this.#view(op);
    const out: ElementValue[] = [];
    const shape = this.#shape;
    const strides = this.#strides;
    const count = Math.min(limit, elementCount(shape));
    const index = new Array<number>(shape.length).fill(0);
    let at = this.#offset;
    for (let n = 0; n < count; n++) {
      out.push(decodeElement(info, data, at));
      for (let d = shape.length - 1; d >= 0; d--) {
        index[d]++;
        at += strides[d];
        if (index[d] < shape[d]) break;
        at -= index[d] * strides[d];
        index[d] = 0;
      }
    }
    return out;
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

  /**
   * The axes reversed, as NumPy's and PyTorch's `.T`: the transpose of a matrix, a view of a vector or a
   * scalar as it is; for a batch of matrices use `mT`.
   */
  get T(): Tensor {
    return ops.permute(this, Array.from({ length: rankOf(this) }, (_, i) => rankOf(this) - 1 - i));
  }

  /**
   * The last two axes swapped (PyTorch's `.mT`): the transpose of each matrix in a batch.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Tensor } from "@zigtensor/zigtensor";
   * using x = Tensor.zeros([4, 2, 3]);
   * assert.ok(x.mT.shape.join() === "4,3,2" && x.T.shape.join() === "3,2,4");
   * ```
   */
  get mT(): Tensor {
    if (rankOf(this) < 2) {
      throw new TensorShapeError(
        "mT",
        `mT needs a tensor of rank 2 or more (a batch of matrices), got shape ${formatShape(this.#shape)}`,
        [this.#shape],
      );
    }
    return ops.transpose(this, -2, -1);
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
    return detachOf(this);
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

  /** A copy converted to `dtype` (a `DType` or a name such as `"float16"`) by the cast rules. */
  cast(dtype: DTypeLike): Tensor {
    return ops.cast(this, dtype);
  }

  /** A copy in `layout` (NCHW, NHWC or NchwC(B)); same logical shape and values. */
  toLayout(layout: Layout): Tensor {
    return ops.toLayout(this, layout);
  }

  // --- autograd ---

  /** A handle over the same storage that is a gradient leaf (floating-point dtypes only). */
  withRequiresGrad(): Tensor {
    const info = dtypeInfo(dtypeOf(this));
    if (!info.isFloat || info.isQuantized || blockSizeOf(this) > 0) {
      throw new DTypeError(
        "withRequiresGrad",
        `only plain floating-point tensors can require gradients, got ${
          blockSizeOf(this) ? `a blocked NchwC(${blockSizeOf(this)})` : info.name
        } tensor`,
      );
    }
    return new Tensor(
      new CheckedParts(
        this.#storage,
        this.#dtype,
        this.#shape,
        this.#strides,
        this.#offset,
        this.#blockSize,
        null,
        leafNode(this.#shape, this.#dtype),
      ),
    );
  }

  /** Whether gradients flow to this tensor: a leaf made by `withRequiresGrad`, or a recorded result. */
  get requiresGrad(): boolean {
    return requiresGradOf(this);
  }

  /** Internal: the leaf node, for leaves. */
  get leaf(): LeafNode | null {
    return this.#leaf;
  }

  /** The accumulated gradient of a leaf after `backward()`, or null. */
  get grad(): Tensor | null {
    return gradOf(this);
  }

  set grad(value: Tensor | null) {
    if (this.#leaf === null) {
      throw new OptionError("grad", "only a leaf made by withRequiresGrad() holds a gradient");
    }
    if (
      value !== null &&
      (!isTensor(value) || dtypeOf(value) !== dtypeOf(this) ||
        formatShape(shapeOf(value)) !== formatShape(this.#shape))
    ) {
      throw new TensorShapeError(
        "grad",
        `a gradient must be null or a tensor of the leaf's dtype and shape ${formatShape(this.#shape)}`,
        [this.#shape],
      );
    }
    this.#leaf.grad?.dispose();
    setLeafGrad(this.#leaf, value);
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

  /** thisᵒᵗʰᵉʳ element-wise, broadcasting. */
  pow(other: Tensor | number): Tensor {
    return ops.pow(this, other);
  }

  /** The larger of this and `other` element-wise, broadcasting. */
  maximum(other: Tensor | number): Tensor {
    return ops.maximum(this, other);
  }

  /** The smaller of this and `other` element-wise, broadcasting. */
  minimum(other: Tensor | number): Tensor {
    return ops.minimum(this, other);
  }

  /** this = other element-wise, as a Bool tensor. */
  eq(other: Tensor | number): Tensor {
    return ops.eq(this, other);
  }

  /** this ≠ other element-wise, as a Bool tensor. */
  ne(other: Tensor | number): Tensor {
    return ops.ne(this, other);
  }

  /** this < other element-wise, as a Bool tensor. */
  lt(other: Tensor | number): Tensor {
    return ops.lt(this, other);
  }

  /** this ≤ other element-wise, as a Bool tensor. */
  le(other: Tensor | number): Tensor {
    return ops.le(this, other);
  }

  /** this > other element-wise, as a Bool tensor. */
  gt(other: Tensor | number): Tensor {
    return ops.gt(this, other);
  }

  /** this ≥ other element-wise, as a Bool tensor. */
  ge(other: Tensor | number): Tensor {
    return ops.ge(this, other);
  }

  // Logical ops (issue 12): every nonzero value is true.

  /** this AND other as Bool (`ops.logicalAnd`). */
  logicalAnd(other: Tensor | number): Tensor {
    return ops.logicalAnd(this, other);
  }

  /** this OR other as Bool (`ops.logicalOr`). */
  logicalOr(other: Tensor | number): Tensor {
    return ops.logicalOr(this, other);
  }

  /** this XOR other as Bool (`ops.logicalXor`). */
  logicalXor(other: Tensor | number): Tensor {
    return ops.logicalXor(this, other);
  }

  /** NOT this as Bool: true where this is zero (`ops.logicalNot`). */
  logicalNot(): Tensor {
    return ops.logicalNot(this);
  }

  /** |x|. */
  abs(): Tensor {
    return ops.abs(this);
  }

  /** The error function. */
  erf(): Tensor {
    return ops.erf(this);
  }

  /** The matrix product (batched, broadcasting batch axes; two vectors give their dot product). */
  matmul(other: Tensor): Tensor {
    return ops.matmul(this, other);
  }

  /** this @ weightᵀ + bias, with `weight` of shape [out, in] (`ops.linear`). */
  linear(weight: Tensor, bias?: Tensor): Tensor {
    return ops.linear(this, weight, bias);
  }

  /** The sum over `axis` (a number or an array; all axes by default); `true` or `{ keepDims: true }` keeps them. */
  sum(axis?: number | readonly number[], options?: ReduceOptions | boolean): Tensor {
    return ops.sum(this, axis, options);
  }

  /** The mean over `axis` (all axes by default). */
  mean(axis?: number | readonly number[], options?: ReduceOptions | boolean): Tensor {
    return ops.mean(this, axis, options);
  }

  /** The maximum over `axis` (all axes by default). */
  max(axis?: number | readonly number[], options?: ReduceOptions | boolean): Tensor {
    return ops.max(this, axis, options);
  }

  /** The minimum over `axis` (all axes by default). */
  min(axis?: number | readonly number[], options?: ReduceOptions | boolean): Tensor {
    return ops.min(this, axis, options);
  }

  /** The I64 index of the first maximum along `axis`. */
  argmax(axis: number, options: ReduceOptions = {}): Tensor {
    return ops.argmax(this, axis, options);
  }

  // Reductions added with issue 12.

  /** The I64 index of the first minimum along `axis` (`ops.argmin`). */
  argmin(axis: number, options: ReduceOptions = {}): Tensor {
    return ops.argmin(this, axis, options);
  }

  /** Whether any element over `axis` (all axes by default) is nonzero, as Bool (`ops.any`). */
  any(axis?: number | readonly number[], options?: ReduceOptions | boolean): Tensor {
    return ops.any(this, axis, options);
  }

  /** Whether every element over `axis` (all axes by default) is nonzero, as Bool (`ops.all`). */
  all(axis?: number | readonly number[], options?: ReduceOptions | boolean): Tensor {
    return ops.all(this, axis, options);
  }

  /** The product over `axis` (all axes by default; `ops.prod`). */
  prod(axis?: number | readonly number[], options?: ReduceOptions | boolean): Tensor {
    return ops.prod(this, axis, options);
  }

  /** The variance over `axis` with `{ correction, keepDims }` (correction 1 by default; `ops.var`). */
  var(axis?: number | readonly number[], options?: VarOptions): Tensor {
    return ops.var(this, axis, options);
  }

  /** The standard deviation over `axis` with `{ correction, keepDims }` (`ops.std`). */
  std(axis?: number | readonly number[], options?: VarOptions): Tensor {
    return ops.std(this, axis, options);
  }

  /** log Σ exp over `axis` (all axes by default; `ops.logsumexp`). */
  logsumexp(axis?: number | readonly number[], options?: ReduceOptions | boolean): Tensor {
    return ops.logsumexp(this, axis, options);
  }

  /** The vector norm with `{ p, axis, keepDims }` (p = 2 by default; `ops.norm`). */
  norm(options?: NormOptions): Tensor {
    return ops.norm(this, options);
  }

  // Indexing along an axis (issue 12).

  /** The elements at `index` along `axis` (`ops.gather`, `torch.gather`). */
  gather(axis: number, index: Tensor): Tensor {
    return ops.gather(this, axis, index);
  }

  /** A copy with `src` added at `index` along `axis` (`ops.scatterAdd`, PyTorch's `scatter_add`). */
  scatterAdd(axis: number, index: Tensor, src: Tensor): Tensor {
    return ops.scatterAdd(this, axis, index, src);
  }

  /** The slices at the 1-D `index` along `axis` (`ops.indexSelect`, `torch.index_select`). */
  indexSelect(axis: number, index: Tensor): Tensor {
    return ops.indexSelect(this, axis, index);
  }

  /** The running sum along `axis` (`ops.cumsum`). */
  cumsum(axis: number): Tensor {
    return ops.cumsum(this, axis);
  }

  /** The maximum along `axis` with its I64 index, as `torch.max(x, dim)` (`ops.maxWithIndices`). */
  maxWithIndices(axis: number, options?: ReduceOptions | boolean): ValuesAndIndices {
    return ops.maxWithIndices(this, axis, options);
  }

  /** The minimum along `axis` with its I64 index, as `torch.min(x, dim)` (`ops.minWithIndices`). */
  minWithIndices(axis: number, options?: ReduceOptions | boolean): ValuesAndIndices {
    return ops.minWithIndices(this, axis, options);
  }

  /** Views along `axis` of the given extent or extents (`ops.split`, `torch.split`). */
  split(sizeOrSizes: number | readonly number[], axis = 0): Tensor[] {
    return ops.split(this, sizeOrSizes, axis);
  }

  /** `n` views along `axis` (`ops.chunk`, `torch.chunk`). */
  chunk(n: number, axis = 0): Tensor[] {
    return ops.chunk(this, n, axis);
  }

  /** I64 one-hot rows of these integer labels (`ops.oneHot`, `F.one_hot`). */
  oneHot(numClasses = -1): Tensor {
    return ops.oneHot(this, numClasses);
  }

  /** Padded by (before, after) pairs from the last axis backwards (`ops.pad`, `F.pad`). */
  pad(pads: readonly number[], options?: PadOptions): Tensor {
    return ops.pad(this, pads, options);
  }

  /** The lower triangle of the last two axes, the rest 0 (`ops.tril`). */
  tril(options?: TriangleOptions): Tensor {
    return ops.tril(this, options);
  }

  /** The upper triangle of the last two axes, the rest 0 (`ops.triu`). */
  triu(options?: TriangleOptions): Tensor {
    return ops.triu(this, options);
  }

  /** Tiled `reps[i]` times along each axis (`ops.repeat`, `Tensor.repeat`). */
  repeat(reps: readonly number[]): Tensor {
    return ops.repeat(this, reps);
  }

  /** Softmax over `axis` (the last by default). */
  softmax(axis = -1): Tensor {
    return ops.softmax(this, axis);
  }

  /** Log-softmax over `axis` (the last by default). */
  logSoftmax(axis = -1): Tensor {
    return ops.logSoftmax(this, axis);
  }

  /** GELU: x·Φ(x) by default, the tanh form with `{ approximate: "tanh" }`. */
  gelu(options?: GeluOptions): Tensor {
    return ops.gelu(this, options);
  }

  /** 1 / (1 + e^−x). */
  sigmoid(): Tensor {
    return ops.sigmoid(this);
  }

  // Issue 12's element-wise ops.

  /** ln(1 + x). */
  log1p(): Tensor {
    return ops.log1p(this);
  }

  /** eˣ − 1. */
  expm1(): Tensor {
    return ops.expm1(this);
  }

  /** x·σ(x). */
  silu(): Tensor {
    return ops.silu(this);
  }

  /** ln(1 + e^(beta·x))/beta (x above the threshold). */
  softplus(options?: SoftplusOptions): Tensor {
    return ops.softplus(this, options);
  }

  /** x for x > 0, x·negativeSlope otherwise. */
  leakyRelu(options?: LeakyReluOptions): Tensor {
    return ops.leakyRelu(this, options);
  }

  /** x for x > 0, alpha·(eˣ − 1) otherwise. */
  elu(options?: EluOptions): Tensor {
    return ops.elu(this, options);
  }

  /** x clamped to [minVal, maxVal] (default [−1, 1]). */
  hardtanh(options?: HardtanhOptions): Tensor {
    return ops.hardtanh(this, options);
  }

  /** min(max(x, min), max) with number or tensor bounds. */
  clamp(options: ClampOptions): Tensor {
    return ops.clamp(this, options);
  }

  /**
   * This tensor where `condition` is true, `other` elsewhere (PyTorch's `x.where(condition, y)`, that is
   * `ops.where(condition, x, other)`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Tensor } from "@zigtensor/zigtensor";
   * using x = Tensor.from([1, -2, 3]);
   * using y = x.where(x.gt(0), 0);
   * assert.ok(y.toArray().join() === "1,0,3");
   * ```
   */
  where(condition: Tensor, other: Tensor | number): Tensor {
    return ops.where(condition, this, other);
  }

  /** 1, −1, or 0 (for ±0 and NaN). */
  sign(): Tensor {
    return ops.sign(this);
  }

  /** 1/x. */
  reciprocal(): Tensor {
    return ops.reciprocal(this);
  }

  /** 1/√x. */
  rsqrt(): Tensor {
    return ops.rsqrt(this);
  }

  /** x·x. */
  square(): Tensor {
    return ops.square(this);
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

  // --- layers and losses (each also a function in `ops`, where they are documented) ---

  /** `ops.convTranspose2d(this, weight, options)`: this is [N, C, H, W] or [C, H, W]. */
  convTranspose2d(weight: Tensor, options: ConvTranspose2dOptions = {}): Tensor {
    return ops.convTranspose2d(this, weight, options);
  }

  /** `ops.conv1d(this, weight, options)`: this is [N, C, L] or [C, L]. */
  conv1d(weight: Tensor, options: Conv1dOptions = {}): Tensor {
    return ops.conv1d(this, weight, options);
  }

  /** `ops.conv2d(this, weight, options)`: this is [N, C, H, W] or [C, H, W]. */
  conv2d(weight: Tensor, options: Conv2dOptions = {}): Tensor {
    return ops.conv2d(this, weight, options);
  }

  /** `ops.maxPool2d(this, options)`; `{ values, indices }` with `returnIndices: true`. */
  maxPool2d(options: Pool2dOptions & { readonly returnIndices: true }): MaxPool2dResult;
  /** `ops.maxPool2d(this, options)`. */
  maxPool2d(options: Pool2dOptions): Tensor;
  maxPool2d(options: Pool2dOptions): Tensor | MaxPool2dResult {
    return (ops.maxPool2d as (x: Tensor, options: Pool2dOptions) => Tensor | MaxPool2dResult)(this, options);
  }

  /** `ops.avgPool2d(this, options)`. */
  avgPool2d(options: AvgPool2dOptions): Tensor {
    return ops.avgPool2d(this, options);
  }

  /** `ops.adaptiveAvgPool2d(this, outputSize)`. */
  adaptiveAvgPool2d(outputSize: number | null | readonly [number | null, number | null]): Tensor {
    return ops.adaptiveAvgPool2d(this, outputSize);
  }

  /** `ops.dropout(this, options)`. */
  dropout(options: DropoutOptions = {}): Tensor {
    return ops.dropout(this, options);
  }

  /** `ops.layerNorm(this, normalizedShape, options)`. */
  layerNorm(normalizedShape: number | readonly number[], options: LayerNormOptions = {}): Tensor {
    return ops.layerNorm(this, normalizedShape, options);
  }

  /** `ops.batchNorm(this, runningMean, runningVar, options)`. */
  batchNorm(runningMean: Tensor | null, runningVar: Tensor | null, options: BatchNormOptions = {}): Tensor {
    return ops.batchNorm(this, runningMean, runningVar, options);
  }

  /** `ops.attention(this, k, v, options)`: this is the query. */
  attention(k: Tensor, v: Tensor, options: AttentionOptions = {}): Tensor {
    return ops.attention(this, k, v, options);
  }

  /** `ops.embedding(this, weight, options)`: this holds the integer indices. */
  embedding(weight: Tensor, options: EmbeddingOptions = {}): Tensor {
    return ops.embedding(this, weight, options);
  }

  /** `ops.lstm(this, weights, options)`. */
  lstm(weights: RnnWeights, options: LstmOptions = {}): LstmResult {
    return ops.lstm(this, weights, options);
  }

  /** `ops.gru(this, weights, options)`. */
  gru(weights: RnnWeights, options: GruOptions = {}): GruResult {
    return ops.gru(this, weights, options);
  }

  /** `ops.nllLoss(this, targets, options)`: this holds log-probabilities. */
  nllLoss(targets: Tensor, options?: NllLossOptions): Tensor {
    return ops.nllLoss(this, targets, options);
  }

  /** `ops.crossEntropy(this, targets, options)`: this holds logits. */
  crossEntropy(targets: Tensor, options?: CrossEntropyOptions): Tensor {
    return ops.crossEntropy(this, targets, options);
  }

  /** `ops.mseLoss(this, target, options)`. */
  mseLoss(target: Tensor, options?: LossOptions): Tensor {
    return ops.mseLoss(this, target, options);
  }

  /** `ops.l1Loss(this, target, options)`. */
  l1Loss(target: Tensor, options?: LossOptions): Tensor {
    return ops.l1Loss(this, target, options);
  }

  /** `ops.smoothL1Loss(this, target, options)`. */
  smoothL1Loss(target: Tensor, options?: SmoothL1LossOptions): Tensor {
    return ops.smoothL1Loss(this, target, options);
  }

  /** `ops.binaryCrossEntropy(this, target, options)`: this holds probabilities. */
  binaryCrossEntropy(target: Tensor, options?: BinaryCrossEntropyOptions): Tensor {
    return ops.binaryCrossEntropy(this, target, options);
  }

  /** `ops.binaryCrossEntropyWithLogits(this, target, options)`: this holds logits. */
  binaryCrossEntropyWithLogits(target: Tensor, options?: BinaryCrossEntropyWithLogitsOptions): Tensor {
    return ops.binaryCrossEntropyWithLogits(this, target, options);
  }

  /** `ops.klDiv(this, target, options)`: this holds log-probabilities. */
  klDiv(target: Tensor, options?: KlDivOptions): Tensor {
    return ops.klDiv(this, target, options);
  }

  /** `ops.ctcLoss(this, targets, inputLengths, targetLengths, options)`: this holds log-probabilities. */
  ctcLoss(
    targets: Tensor,
    inputLengths: Tensor | readonly number[],
    targetLengths: Tensor | readonly number[],
    options: CtcLossOptions = {},
  ): Tensor {
    return ops.ctcLoss(this, targets, inputLengths, targetLengths, options);
  }

  // --- internals ---

  /** A typed array of this dtype's stored representation over the whole storage (cached per handle). */
  #view(op: string): TypedArray {
    const buffer = storageOf(this).buffer(op);
    if (this.#elements === null || this.#elements.buffer !== buffer) {
      // Element access works on stored bits (F16 and BF16 as Uint16Array), whatever data() returns.
      const ctor = dtypeInfo(dtypeOf(this)).array;
      this.#elements = new ctor(buffer, 0, Math.floor(buffer.byteLength / ctor.BYTES_PER_ELEMENT));
    }
    return this.#elements;
  }

  /** The contiguous span of this tensor's own elements (or blocks, or the blocked physical span). */
  #span(op: string): TypedArray {
    const info = dtypeInfo(dtypeOf(this));
    const buffer = storageOf(this).buffer(op);
    if (blockSizeOf(this) > 0) {
      return new info.array(buffer, 0, buffer.byteLength / info.blockBytes);
    }
    if (!isContiguous(this.#shape, this.#strides)) {
      throw new TensorShapeError(
        op,
        `${op}() needs a contiguous tensor; this one has shape ${formatShape(this.#shape)} and strides ` +
          `${formatShape(this.#strides)}: call contiguous() first`,
        [this.#shape],
      );
    }
    if (info.isQuantized) {
      const blocks = sizeOf(this) / info.blockElements;
      return new Uint8Array(
        buffer,
        (offsetOf(this) / info.blockElements) * info.blockBytes,
        blocks * info.blockBytes,
      );
    }
    const ctor = dtypeOf(this) === DType.F16 && float16Array !== undefined ? float16Array : info.array;
    // An empty view may sit at an offset past the end of its storage.
    if (sizeOf(this) === 0) return new ctor(buffer, 0, 0) as TypedArray;
    return new ctor(buffer, offsetOf(this) * info.blockBytes, sizeOf(this)) as TypedArray;
  }

  /** The whole contiguous span for a creator's first write (no version bump: nobody has seen it yet). */
  #writable(op: string): TypedArray {
    const info = dtypeInfo(dtypeOf(this));
    if (info.isQuantized) {
      throw new DTypeError(op, `${info.name} tensors are made by quantize(), not filled element by element`);
    }
    return new info.array(
      storageOf(this).buffer(op),
      sizeOf(this) === 0 ? 0 : offsetOf(this) * info.blockBytes,
      sizeOf(this),
    );
  }

  #scalarInfo(op: string): DTypeInfo {
    const info = dtypeInfo(dtypeOf(this));
    if (info.isQuantized) {
      throw new DTypeError(op, `${info.name} elements are not addressable one at a time; dequantize() first`);
    }
    if (blockSizeOf(this) > 0) {
      throw new DTypeError(
        op,
        `a blocked NchwC(${blockSizeOf(this)}) tensor only supports toLayout(), data() and metadata`,
      );
    }
    return info;
  }

  #checkWritable(op: string): void {
    for (let i = 0; i < rankOf(this); i++) {
      if (this.#strides[i] === 0 && this.#shape[i] > 1) {
        throw new TensorShapeError(
          op,
          `cannot write through a broadcast view (axis ${i} has stride 0 and extent ${
            this.#shape[i]
          }); clone() it first`,
          [this.#shape],
        );
      }
    }
  }

  #elementOffset(op: string, index: readonly number[]): number {
    if (index.length !== rankOf(this)) {
      throw new TensorShapeError(
        op,
        `${op} needs ${rankOf(this)} indices for shape ${formatShape(this.#shape)}, got ${index.length}`,
        [this.#shape],
      );
    }
    let at = offsetOf(this);
    for (let d = 0; d < index.length; d++) {
      const extent = this.#shape[d];
      let i = index[d];
      if (!Number.isInteger(i) || i < -extent || i >= extent) {
        throw new TensorShapeError(
          op,
          `index ${String(i)} is out of range for axis ${d} of extent ${extent} in ${
            formatShape(this.#shape)
          }`,
          [this.#shape],
        );
      }
      if (i < 0) i += extent;
      at += i * this.#strides[d];
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
    const storage = storageOf(tensor);
    this.pointer = storagePointer(storage, op);
    this.offset = offset;
    this.byteLength = storageBytes(storage);
  }

  get data(): TypedArray {
    return elementsOf(this.tensor, this.op);
  }
}

/**
 * Options that are not an object (a dtype passed where the options go, as before dtypes moved into them) throw
 * rather than being read as "no options".
 */
function creatorOptions(op: string, options: TensorOptions): TensorOptions {
  if (typeof options !== "object" || options === null) {
    throw new OptionError(
      op,
      `expected an options object such as { dtype: DType.I32 }, got ${String(options)}; ` +
        "a dtype is never a positional argument",
    );
  }
  return checkOptions(op, options, CREATE_KEYS);
}

/** The dtype of a creator's options: F32 unless given. */
function optionDType(options: TensorOptions, op: string): DType {
  creatorOptions(op, options);
  return options.dtype === undefined ? DType.F32 : toDType(options.dtype, op);
}

/** The element count of `arange(start, end, step)`, as PyTorch: ⌈(end − start) / step⌉, checked. */
function arangeCount(start: number, end: number, step: number): number {
  const values = { start, end, step };
  for (const [name, value] of Object.entries(values)) {
    if (typeof value !== "number" || !Number.isFinite(value)) {
      throw new RangeError(`arange: ${name} must be a finite number, got ${String(value)}`);
    }
  }
  if (step === 0) throw new RangeError("arange: step must not be 0");
  if ((end - start) * step < 0) {
    throw new RangeError(
      `arange: step ${step} moves away from end ${end} when starting at ${start}; use a step of the other sign`,
    );
  }
  return Math.ceil((end - start) / step);
}

const INT32_MAX = 2 ** 31 - 1;

/**
 * The common case of `checkView` in a few comparisons per axis: true when every extent and stride is a 32-bit
 * integer, the element count at most 2^31 − 1 and every element reachable from `offset` (an integer from 0,
 * which the caller checked) below `capacity`. False sends the caller to `checkView`, which gives the reason
 * (or normalizes strides).
 */
function fitsStorage(
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
  capacity: number,
): boolean {
  const rank = shape.length;
  if (rank > 8 || strides.length !== rank) return false;
  let low = offset;
  let high = offset;
  let count = 1;
  for (let axis = 0; axis < rank; axis++) {
    const extent = shape[axis];
    const stride = strides[axis];
    if (typeof extent !== "number" || typeof stride !== "number") return false;
    if ((extent | 0) !== extent || extent < 0 || (stride | 0) !== stride) return false;
    if ((count *= extent) > INT32_MAX) return false;
    if (stride < 0) low += (extent - 1) * stride;
    else high += (extent - 1) * stride;
  }
  return count === 0 || (low >= 0 && high < capacity);
}

/** Whether `offset` is an integer from 0 to 2^31 − 1, as `fitsStorage` assumes. */
function isOffset(offset: unknown): offset is number {
  return typeof offset === "number" && (offset | 0) === offset && offset >= 0;
}

/**
 * Checks a view against its storage in one pass and returns its strides: at most 8 axes, integer extents with
 * a product of at most 2^31 − 1, one integer stride per axis, an integer offset, and every reachable element
 * inside the storage (blocked tensors: their physical span at offset 0). A stride matters only on an axis of
 * more than one element; elsewhere one outside 32 bits (a slice step of 2^31 makes one) becomes 0.
 */
function checkView(
  op: string,
  storage: Storage,
  info: DTypeInfo,
  shape: readonly number[],
  strides: readonly number[],
  offset: number,
  blockSize: number,
): readonly number[] {
  if (!Array.isArray(shape) || shape.length > 8) checkShape(op, shape);
  if (!Array.isArray(strides) || strides.length !== shape.length) {
    throw new TensorShapeError(
      op,
      `strides must be an array of one integer per axis of ${formatShape(shape)}, got ${describe(strides)}`,
      [shape],
    );
  }
  if (!Number.isInteger(offset) || offset < 0 || offset > INT32_MAX) {
    throw new TensorShapeError(op, `offset ${String(offset)} is not an integer in 0 to 2^31 − 1`, [shape]);
  }
  let result = strides;
  let low = offset;
  let high = offset;
  let count = 1;
  for (let axis = 0; axis < shape.length; axis++) {
    const extent = shape[axis];
    const stride = result[axis];
    if (!Number.isInteger(extent) || extent < 0) checkShape(op, shape);
    count *= extent;
    if (count > INT32_MAX) checkShape(op, shape);
    if (Number.isInteger(stride) && stride >= -INT32_MAX && stride <= INT32_MAX) {
      const reach = (extent - 1) * stride;
      if (reach < 0) low += reach;
      else high += reach;
    } else if (extent > 1 || !Number.isInteger(stride)) {
      throw new TensorShapeError(
        op,
        `stride ${String(stride)} of axis ${axis} is not an integer within ±(2^31 − 1)`,
        [shape],
      );
    } else {
      const copy = result.slice();
      copy[axis] = 0;
      result = copy;
    }
  }
  const capacity = Math.floor(storageBytes(storage) / info.blockBytes) * info.blockElements;
  if (blockSize !== 0) {
    const physical = shape.length === 4 && Number.isInteger(blockSize) && blockSize > 0 && blockSize <= 256
      ? shape[0] * Math.ceil(shape[1] / blockSize) * blockSize * shape[2] * shape[3]
      : Infinity;
    if (physical > capacity || offset !== 0) {
      throw new TensorShapeError(
        op,
        `a blocked NchwC(${String(blockSize)}) tensor of ${formatShape(shape)} needs ${physical} elements ` +
          `at offset 0; its storage holds ${capacity}`,
        [shape],
      );
    }
    return result;
  }
  if (count !== 0 && (low < 0 || high >= capacity)) {
    throw new TensorShapeError(
      op,
      `a view of ${formatShape(shape)} with strides ${formatShape(result)} and offset ${offset} reaches ` +
        `elements ${low} to ${high}; its storage holds ${capacity}`,
      [shape],
    );
  }
  return result;
}

/** The constructor's error for a subclass (apart, so the constructor stays small enough to inline). */
function refuseSubclass(): never {
  throw new OptionError("Tensor", "Tensor cannot be subclassed; wrap a tensor instead");
}

/**
 * Parts that passed the bounds check, with the handle's autograd node: what `allocate` builds for a fresh
 * contiguous tensor over a block rented for its checked shape, `withRequiresGrad` for a leaf over its own
 * parts, and `checkParts` returns for any other parts. Module-private and never handed out, so no caller can
 * make one and skip the check.
 */
class CheckedParts implements TensorParts {
  constructor(
    readonly storage: Storage,
    readonly dtype: DType,
    readonly shape: readonly number[],
    readonly strides: readonly number[],
    readonly offset: number,
    readonly blockSize: number,
    readonly gradFn: BackwardRecord | null,
    readonly leaf: LeafNode | null,
  ) {}
}

/**
 * The constructor's check of parts from anywhere but `allocate`: a `Storage`, a known dtype, and a view inside
 * the storage (`checkView`, which normalizes a stride outside 32 bits on an extent-1 axis to 0).
 */
function checkParts(parts: TensorParts): CheckedParts {
  const op = "Tensor";
  const { storage, dtype, offset } = parts;
  const blockSize = parts.blockSize ?? 0;
  const graph = parts as { gradFn?: unknown; leaf?: unknown };
  if ((graph.gradFn ?? null) !== null || (graph.leaf ?? null) !== null) {
    throw new OptionError(op, "gradFn and leaf are set by the ops and withRequiresGrad(), not given");
  }
  if (!isStorage(storage)) {
    throw new OptionError(op, `storage must be a Storage, got ${describe(storage)}`);
  }
  const info = dtypeInfo(dtype, op);
  const capacity = Math.floor(storageBytes(storage) / info.blockBytes) * info.blockElements;
  // The caller keeps its arrays (and may hold an accessor or a proxy for one): the handle checks and keeps
  // copies read once, element by element.
  const shape = ownCopy(parts.shape);
  let strides = ownCopy(parts.strides);
  if (
    !(blockSize === 0 && Array.isArray(shape) && Array.isArray(strides) && isOffset(offset) &&
      fitsStorage(shape, strides, offset, capacity))
  ) {
    strides = checkView(op, storage, info, shape, strides, offset, blockSize);
  }
  return new CheckedParts(
    storage,
    dtype,
    shape,
    strides,
    offset,
    blockSize,
    null,
    null,
  );
}

/** A plain copy of an array, each element read once; anything else as it is (for `checkView` to refuse). */
function ownCopy<T>(values: T): T {
  if (!Array.isArray(values)) return values;
  const length = values.length;
  const copy = new Array(length);
  for (let i = 0; i < length; i++) copy[i] = values[i];
  return copy as T;
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
  const own = ownCopy(shape);
  const count = checkShape(op, own);
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
  if (options.arena !== undefined && !(options.arena instanceof Arena)) {
    throw new OptionError(op, `arena must be an Arena, got ${describe(options.arena)}`);
  }
  const storage = Storage.rent(bytes, { zero, arena: options.arena, scoped: options.scoped ?? false });
  return fresh(storage, dtype, own);
}

/**
 * An op's output: a contiguous tensor of `shape` (copied) and `dtype`, uninitialized, in the current scope.
 * The same checks as `allocate`'s without its options (the path every op takes once per call).
 */
export function allocateOutput(op: string, shape: readonly number[], dtype: DType): Tensor {
  const info = dtypeInfo(dtype, op);
  if (info.isQuantized) return allocate(op, shape, dtype, false, { scoped: true });
  const own = ownCopy(shape);
  const count = checkShape(op, own);
  const bytes = count * info.blockBytes;
  checkBytes(op, own, bytes);
  return fresh(Storage.rentScoped(bytes), dtype, own);
}

/**
 * The tensor over a block just rented for `shape`: a copy the caller made, read once and checked, which the
 * tensor keeps, and its contiguous strides.
 */
function fresh(storage: Storage, dtype: DType, shape: readonly number[]): Tensor {
  return new Tensor(new CheckedParts(storage, dtype, shape, contiguousStrides(shape), 0, 0, null, null));
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
    throw new OptionError("from", `values must be a typed array or an array, got ${describe(values)}`);
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
      throw new OptionError("from", `values must be numbers, bigints or booleans, got ${describe(v)}`);
    }
  }
  return { flat, inferredShape: shape.length === 1 && shape[0] === 0 ? [0] : shape, inferredDType };
}

// Frozen: neither the class nor its prototype can be given other getters or methods (the ops read handles through
// `shapeOf` and the other functions above, so an own property on a handle, or another prototype, changes only
// what code outside the library reads).
Object.freeze(Tensor.prototype);
Object.freeze(Tensor);

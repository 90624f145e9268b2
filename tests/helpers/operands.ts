// The one generator of test operands: a seeded random generator (`Rng`), native pool blocks (`NativeBlock`)
// and random strided operands over them, for every kernel conformance test (element-wise, matmul, movement).
//
//   const pool = new OperandPool();
//   const rng = new Rng(42);
//   const shape = randomShape(rng);
//   const view = randomView(rng, shape, { broadcast: true });
//   const a = pool.operand("f32", view);           // a KernelOperand over a fresh block
//   fillF32(rng, a.data as Float32Array, "mixed");  // fills the whole block, gaps included
//   ...
//   pool.release();                                 // detaches every buffer and returns every block
//
// A view is an offset and strides into a storage of `elements` elements: transposed (a random storage order
// of the axes), sliced with steps (strides times 1 to 3, with a random lead-in), flipped (negative strides,
// the offset at the far end), broadcast (stride 0, inputs only), or any mix; `twin` gives a second storage
// with the same layout and contents, so a reference and a native kernel can write the same view and be
// compared element for element, gaps included.
import type { KernelOperand } from "../../src/kernels/types.ts";
import { native } from "../../src/native/library.ts";
import { ffi } from "../../src/native/runtime.ts";
import type { NativePointer } from "../../src/native/symbols.ts";
import type { TypedArray } from "../../src/core/dtype.ts";
import { Xorshift128 } from "../../src/core/random.ts";

/** A deterministic generator (the library's xorshift128), so that a failure names a seed that reproduces it. */
export class Rng {
  readonly #words: Xorshift128;

  constructor(seed: number) {
    this.#words = new Xorshift128(seed);
  }

  /** A uniform unsigned 32-bit integer. */
  u32(): number {
    return this.#words.next();
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.#words.next() / 2 ** 32;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** Uniform in [lo, hi). */
  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /** A uniform integer in [0, n) (the data movement tests' name for `int`). */
  below(n: number): number {
    return this.int(n);
  }

  /** A fair coin. */
  bool(): boolean {
    return (this.u32() & 1) === 1;
  }

  /** Shuffles `items` in place (Fisher–Yates) and returns it. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.below(i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }

  /** A value with a random sign, mantissa and binary exponent in [-6, 6], so that roundings differ. */
  value(): number {
    return (this.next() * 2 - 1) * 2 ** (this.int(13) - 6);
  }
}

/** A rented native pool block with one ArrayBuffer over it, released (and detached) on dispose. */
export class NativeBlock implements Disposable {
  readonly pointer: NativePointer;
  readonly bytes: number;
  readonly buffer: ArrayBuffer;

  constructor(bytes: number) {
    this.bytes = Math.max(8, bytes);
    const pointer = native.zt_pool_rent(this.bytes, 1);
    if (pointer === null) throw new Error(`out of native memory renting ${bytes} bytes`);
    this.pointer = pointer;
    this.buffer = ffi.arrayBuffer(pointer, this.bytes);
  }

  /** An operand over the whole block as `ctor` elements. */
  operand(
    ctor: new (buffer: ArrayBuffer) => TypedArray,
    offset = 0,
    strides: readonly number[] = [],
  ): KernelOperand {
    return { pointer: this.pointer, data: new ctor(this.buffer), offset, strides };
  }

  bytesView(): Uint8Array {
    return new Uint8Array(this.buffer);
  }

  /**
   * Detaches the buffer and returns the block; false when a CHECKED library finds its canary bytes
   * overwritten (a kernel wrote past its storage).
   */
  release(): boolean {
    this.buffer.transfer(0);
    return native.zt_pool_release(this.pointer, this.bytes) === 0;
  }

  [Symbol.dispose](): void {
    this.release();
  }
}

/** Extents around vector widths (4, 8, 16 lanes) and block edges. */
export const EDGE_SIZES: readonly number[] = [
  1,
  2,
  3,
  4,
  5,
  7,
  8,
  9,
  15,
  16,
  17,
  31,
  32,
  33,
  63,
  64,
  65,
  127,
  129,
];

/**
 * Element types of the storages: f32 data, Bool bytes, Int32 indices and I64 argmax results, and every other
 * integer type for the integer kernels.
 */
export type ElementType = "f32" | "u8" | "i32" | "i64" | "i8" | "i16" | "u16" | "u32" | "u64";

const ARRAYS = {
  f32: Float32Array,
  u8: Uint8Array,
  i32: Int32Array,
  i64: BigInt64Array,
  i8: Int8Array,
  i16: Int16Array,
  u16: Uint16Array,
  u32: Uint32Array,
  u64: BigUint64Array,
} as const;

/** An offset and strides into a storage of `elements` elements. */
export interface View {
  readonly offset: number;
  readonly strides: readonly number[];
  readonly elements: number;
}

/** Which kinds of layout `randomView` may mix in. */
export interface ViewOptions {
  /** Stride-0 axes (inputs only). @default false */
  readonly broadcast?: boolean;
  /** Forces a contiguous row-major view. @default false */
  readonly contiguous?: boolean;
}

/**
 * A random shape of rank 0 to `maxRank`: mostly small outer extents, an inner extent from `EDGE_SIZES`, at
 * most `maxElements` elements, and now and then an empty axis when `allowEmpty`.
 */
export function randomShape(
  rng: Rng,
  options: { minRank?: number; maxRank?: number; maxElements?: number; allowEmpty?: boolean } = {},
): number[] {
  const minRank = options.minRank ?? 0;
  const maxRank = options.maxRank ?? 4;
  const maxElements = options.maxElements ?? 4096;
  const rank = minRank + rng.int(maxRank - minRank + 1);
  const shape: number[] = [];
  let elements = 1;
  for (let axis = 0; axis < rank; axis++) {
    const inner = axis === rank - 1;
    let extent = inner || rng.chance(0.3) ? rng.pick(EDGE_SIZES) : 1 + rng.int(5);
    extent = Math.max(1, Math.min(extent, Math.floor(maxElements / elements)));
    shape.push(extent);
    elements *= extent;
  }
  if (options.allowEmpty && rank > 0 && rng.chance(0.04)) shape[rng.int(rank)] = 0;
  return shape;
}

/** The row-major contiguous view of `shape`. */
export function contiguousView(shape: readonly number[]): View {
  const strides = new Array<number>(shape.length);
  let size = 1;
  for (let axis = shape.length - 1; axis >= 0; axis--) {
    strides[axis] = size;
    size *= Math.max(shape[axis], 1);
  }
  return { offset: 0, strides, elements: shape.includes(0) ? 0 : size };
}

/**
 * A random view of `shape`: the axes laid out in storage in a random order (a transpose), each stepping by
 * 1 to 3 storage positions (a slice with steps), some flipped (negative strides) and, with
 * `options.broadcast`, some broadcast (stride 0); a random lead-in before the first element.
 */
export function randomView(rng: Rng, shape: readonly number[], options: ViewOptions = {}): View {
  if (options.contiguous || rng.chance(0.25)) return contiguousView(shape);
  const rank = shape.length;
  const order = [...Array(rank).keys()];
  if (rng.chance(0.5)) {
    for (let i = rank - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [order[i], order[j]] = [order[j], order[i]];
    }
  }
  const step = shape.map(() => (rng.chance(0.3) ? 1 + rng.int(3) : 1));
  const flip = shape.map(() => rng.chance(0.25));
  const broadcast = shape.map((extent) => options.broadcast === true && extent > 1 && rng.chance(0.2));
  // Storage strides in the permuted order, innermost last; each axis spans (extent - 1) * step + 1.
  const storageStride = new Array<number>(rank).fill(0);
  let size = 1;
  for (let k = rank - 1; k >= 0; k--) {
    const axis = order[k];
    if (broadcast[axis]) continue;
    storageStride[axis] = size;
    size *= Math.max(0, shape[axis] - 1) * step[axis] + 1;
  }
  const lead = rng.chance(0.5) ? rng.int(17) : 0;
  let offset = lead;
  const strides = shape.map((extent, axis) => {
    if (broadcast[axis]) return 0;
    const stride = storageStride[axis] * step[axis];
    if (!flip[axis]) return stride;
    offset += (extent - 1) * stride;
    return -stride;
  });
  const empty = shape.includes(0);
  return { offset: empty ? 0 : offset, strides, elements: empty ? 0 : lead + size + rng.int(5) };
}

/** The storage offsets of every element of `view` over `shape`, in row-major order. */
export function viewOffsets(
  shape: readonly number[],
  view: { readonly offset: number; readonly strides: readonly number[] },
): number[] {
  const offsets: number[] = [];
  if (shape.includes(0)) return offsets;
  const index = new Array<number>(shape.length).fill(0);
  for (;;) {
    let offset = view.offset;
    for (let axis = 0; axis < shape.length; axis++) offset += index[axis] * view.strides[axis];
    offsets.push(offset);
    let axis = shape.length - 1;
    for (; axis >= 0; axis--) {
      if (++index[axis] < shape[axis]) break;
      index[axis] = 0;
    }
    if (axis < 0) return offsets;
  }
}

/** Native pool blocks rented for operands, all given back by `release`. */
export class OperandPool {
  #blocks: NativeBlock[] = [];

  /** A fresh block of at least one element of `type`, viewed as its typed array. */
  storage(type: ElementType, elements: number): { pointer: NativePointer; data: KernelOperand["data"] } {
    const array = ARRAYS[type];
    const length = Math.max(1, elements);
    const block = new NativeBlock(length * array.BYTES_PER_ELEMENT);
    this.#blocks.push(block);
    return { pointer: block.pointer, data: new array(block.buffer, 0, length) };
  }

  /** An operand of `type` with `view`'s layout over a fresh (zeroed) block. */
  operand(type: ElementType, view: View): KernelOperand {
    const { pointer, data } = this.storage(type, view.elements);
    return { pointer, data, offset: view.offset, strides: view.strides };
  }

  /** A second operand with the same layout over a fresh block holding a copy of `operand`'s storage. */
  twin(operand: KernelOperand): KernelOperand {
    const type = typeOf(operand.data);
    const { pointer, data } = this.storage(type, operand.data.length);
    (data as Uint8Array).set(operand.data as Uint8Array);
    return { pointer, data, offset: operand.offset, strides: operand.strides };
  }

  /**
   * Detaches every buffer handed out (old typed arrays then read as empty) and returns every block; throws
   * when a CHECKED library finds a block's canary bytes overwritten (a kernel wrote past its storage).
   */
  release(): void {
    const damaged: number[] = [];
    for (const block of this.#blocks) {
      if (!block.release()) damaged.push(block.bytes);
    }
    this.#blocks = [];
    if (damaged.length > 0) {
      throw new Error(
        `${damaged.length} operand block(s) written past their end (sizes ${damaged.join(", ")} bytes)`,
      );
    }
  }

  [Symbol.dispose](): void {
    this.release();
  }
}

function typeOf(data: KernelOperand["data"]): ElementType {
  const found = (Object.keys(ARRAYS) as ElementType[]).find((type) => data.constructor === ARRAYS[type]);
  if (found === undefined) throw new Error(`no element type for ${data.constructor.name}`);
  return found;
}

/** Kinds of f32 data: `mixed` adds specials (NaN, ±∞, ±0, subnormals, huge) to uniform values. */
export type Fill = "uniform" | "mixed" | "wide" | "ties" | "positive";

const SPECIALS = [NaN, Infinity, -Infinity, 0, -0, 1e-40, -3e-42, 3e38, -3e38, 1, -1];

/**
 * Fills all of `data` (gaps included): `uniform` in [-4, 4); `mixed` the same with 5% specials; `wide`
 * magnitudes from 2^-30 to 2^30 with random signs; `ties` small integers, so maxima and comparisons tie;
 * `positive` in (0, 8) with some tiny and huge values.
 */
export function fillF32(rng: Rng, data: Float32Array, fill: Fill, range = 4): void {
  for (let i = 0; i < data.length; i++) {
    switch (fill) {
      case "uniform":
        data[i] = rng.uniform(-range, range);
        break;
      case "mixed":
        data[i] = rng.chance(0.05) ? rng.pick(SPECIALS) : rng.uniform(-range, range);
        break;
      case "wide":
        data[i] = (rng.chance(0.5) ? -1 : 1) * 2 ** rng.uniform(-30, 30);
        break;
      case "ties":
        data[i] = rng.chance(0.03) ? rng.pick([NaN, -0, 0]) : rng.int(7) - 3;
        break;
      case "positive":
        data[i] = rng.chance(0.05) ? rng.pick([1e-40, 1e-30, 3e38, 1, 2]) : rng.uniform(0, 8) + 2 ** -20;
        break;
    }
  }
}

/**
 * The argument block: a native block, one per isolate, through which shapes, strides and attributes reach
 * the kernels, so that hot calls pass only pointers. Field offsets come from the library itself
 * (`zt_abi_layout`), never from a copy of the struct here.
 *
 * @module
 */
import { ffi } from "./runtime.ts";
import { native } from "./library.ts";
import type { NativePointer } from "./symbols.ts";

/** Indices into `zt_abi_layout`'s answer, in the order of `abi.layout` in `zig/abi.zig`. */
const enum Field {
  Size,
  Floats,
  Rank,
  Op,
  Mode,
  Threads,
  Shape,
  Ints,
  Operands,
  OperandSize,
  MaxRank,
  MaxOperands,
  MaxInts,
  MaxFloats,
  Count,
}

function readLayout(): Int32Array {
  const layout = new Int32Array(Field.Count);
  const count = native.zt_abi_layout(ffi.pointerOf(layout), Field.Count);
  if (count !== Field.Count) {
    throw new Error(`zt_abi_layout reports ${count} fields, the binding expects ${Field.Count}`);
  }
  return layout;
}

const layout = readLayout();

/** The largest rank the native side takes. */
export const MAX_RANK: number = layout[Field.MaxRank];

/** Writes kernel arguments into the isolate's native argument block. */
export class ArgBlock {
  /** The block's native address, passed to every kernel call. */
  readonly pointer: NativePointer;
  readonly #i32: Int32Array;
  readonly #f64: Float64Array;
  readonly #rank: number;
  readonly #op: number;
  readonly #mode: number;
  readonly #threads: number;
  readonly #shape: number;
  readonly #ints: number;
  readonly #operands: number;
  readonly #operandSize: number;

  constructor() {
    const bytes = layout[Field.Size];
    const pointer = native.zt_pool_rent(bytes, 1);
    if (pointer === null) throw new Error("out of native memory for the argument block");
    this.pointer = pointer;
    const buffer = ffi.arrayBuffer(pointer, bytes);
    this.#i32 = new Int32Array(buffer);
    this.#f64 = new Float64Array(buffer, layout[Field.Floats], layout[Field.MaxFloats]);
    this.#rank = layout[Field.Rank] / 4;
    this.#op = layout[Field.Op] / 4;
    this.#mode = layout[Field.Mode] / 4;
    this.#threads = layout[Field.Threads] / 4;
    this.#shape = layout[Field.Shape] / 4;
    this.#ints = layout[Field.Ints] / 4;
    this.#operands = layout[Field.Operands] / 4;
    this.#operandSize = layout[Field.OperandSize] / 4;
  }

  /** Sets the iteration shape; assumes rank ≤ MAX_RANK. */
  shape(shape: readonly number[]): this {
    const i32 = this.#i32;
    i32[this.#rank] = shape.length;
    for (let i = 0; i < shape.length; i++) i32[this.#shape + i] = shape[i];
    return this;
  }

  /** Sets operand `k`'s element offset and strides (as many as the shape's rank). */
  operand(k: number, offset: number, strides: readonly number[]): this {
    const i32 = this.#i32;
    const base = this.#operands + k * this.#operandSize;
    i32[base] = offset;
    for (let i = 0; i < strides.length; i++) i32[base + 1 + i] = strides[i];
    return this;
  }

  /** Sets the operation code, the arithmetic mode (0 fast, 1 exact) and the thread count. */
  op(op: number, mode: number, threads: number): this {
    const i32 = this.#i32;
    i32[this.#op] = op;
    i32[this.#mode] = mode;
    i32[this.#threads] = threads;
    return this;
  }

  /** Sets integer attribute `i`. */
  int(i: number, value: number): this {
    this.#i32[this.#ints + i] = value;
    return this;
  }

  /** Sets float attribute `i`. */
  float(i: number, value: number): this {
    this.#f64[i] = value;
    return this;
  }
}

/** The isolate's argument block. */
export const args: ArgBlock = new ArgBlock();

/**
 * The errors zigtensor throws. Each names the operation and carries the data that broke a rule, so that a
 * message reads like "add: cannot broadcast shapes [2, 3] and [4]: dimension 1 is 3 and 4".
 *
 * @module
 */

/**
 * A shape, axis, index or size rule was broken. A `RangeError`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TensorShapeError } from "@zigtensor/zigtensor";
 * const error = new TensorShapeError("reshape", "cannot reshape 6 elements into [4]", [[6], [4]]);
 * assert.ok(error instanceof RangeError && error.op === "reshape");
 * ```
 */
export class TensorShapeError extends RangeError {
  /** The operation that refused its input. */
  readonly op: string;
  /** The shapes involved, in the order the operation took them. */
  readonly shapes: readonly (readonly number[])[];

  /** The message is `${op}: ${rule}`; `shapes` are the operands' shapes. */
  constructor(op: string, rule: string, shapes: readonly (readonly number[])[] = [], options?: ErrorOptions) {
    super(`${op}: ${rule}`, options);
    this.name = "TensorShapeError";
    this.op = op;
    // Copies: the shapes may be a tensor's own arrays, which no code outside the library may reach.
    this.shapes = Object.freeze(
      shapes.map((shape) => Array.isArray(shape) ? Object.freeze(shape.slice()) : shape),
    );
  }
}

/**
 * An element type is unsupported for an operation, or an ONNX type zigtensor does not implement. A
 * `TypeError`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DTypeError } from "@zigtensor/zigtensor";
 * const error = new DTypeError("fromOnnx", "ONNX type STRING (8) is not supported");
 * assert.ok(error instanceof TypeError && error.message.includes("STRING"));
 * ```
 */
export class DTypeError extends TypeError {
  /** The operation that refused the type. */
  readonly op: string;

  /** The message is `${op}: ${rule}`. */
  constructor(op: string, rule: string, options?: ErrorOptions) {
    super(`${op}: ${rule}`, options);
    this.name = "DTypeError";
    this.op = op;
  }
}

/**
 * An argument or an options object broke a rule: an unknown option key (the message names the accepted keys,
 * and the right key for PyTorch spellings such as `dim` or `keepdim`), or a value of the wrong kind (a string
 * where a number belongs, a seed that names no stream). A `TypeError`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { OptionError } from "@zigtensor/zigtensor";
 * const error = new OptionError("sum", "unknown option keepdim; use keepDims");
 * assert.ok(error instanceof TypeError && error.op === "sum");
 * ```
 */
export class OptionError extends TypeError {
  /** The operation that refused the argument. */
  readonly op: string;

  /** An error of `op` whose message states the broken `rule`. */
  constructor(op: string, rule: string, options?: ErrorOptions) {
    super(`${op}: ${rule}`, options);
    this.name = "OptionError";
    this.op = op;
  }
}

/**
 * Data was read or written through a handle whose storage was released (disposed, collected by a scope, or
 * its arena reset). A `TypeError`, the closest built-in to .NET's `ObjectDisposedException`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { StaleTensorError } from "@zigtensor/zigtensor";
 * const error = new StaleTensorError("get");
 * assert.ok(error instanceof TypeError && error.op === "get");
 * ```
 */
export class StaleTensorError extends TypeError {
  /** The operation that touched released storage. */
  readonly op: string;

  /** The error for `op` reaching released storage. */
  constructor(op: string, options?: ErrorOptions) {
    super(
      `${op}: the tensor's storage was released (disposed, its scope ended, its arena was reset, or its ` +
        "memory was transferred away with ArrayBuffer.transfer, structuredClone or postMessage)",
      options,
    );
    this.name = "StaleTensorError";
    this.op = op;
  }
}

/**
 * A tensor saved for the backward pass was written in place after it was saved. An `Error`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TensorVersionError } from "@zigtensor/zigtensor";
 * const error = new TensorVersionError("Mul", 0, 1);
 * assert.ok(error.savedVersion === 0 && error.currentVersion === 1);
 * ```
 */
export class TensorVersionError extends Error {
  /** The operation whose backward pass needed the tensor. */
  readonly op: string;
  /** The storage version when the tensor was saved. */
  readonly savedVersion: number;
  /** The storage version when the backward pass unpacked it. */
  readonly currentVersion: number;

  /** The error for a saved tensor written between `op`'s forward and backward passes. */
  constructor(op: string, savedVersion: number, currentVersion: number, options?: ErrorOptions) {
    super(
      `${op}: a tensor saved for backward was modified in place (saved at version ${savedVersion}, now ` +
        `${currentVersion}); clone it before writing, or write before it is used`,
      options,
    );
    this.name = "TensorVersionError";
    this.op = op;
    this.savedVersion = savedVersion;
    this.currentVersion = currentVersion;
  }
}

/**
 * The native library could not be found, loaded, or used: missing file, ABI mismatch, or an ISA the CPU
 * cannot run.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NativeLibraryError } from "@zigtensor/zigtensor";
 * const error = new NativeLibraryError("no library at /nowhere");
 * assert.ok(error.name === "NativeLibraryError");
 * ```
 */
export class NativeLibraryError extends Error {
  /** The error with `message`, which says how to build or point to the library. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "NativeLibraryError";
  }
}

/**
 * A CHECKED build found a buffer's canary bytes overwritten when the buffer was released or its arena reset:
 * something wrote past the end of its storage. An `Error`; the memory was recycled anyway.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BufferOverrunError } from "@zigtensor/zigtensor";
 * const error = new BufferOverrunError("release", 5, 40);
 * assert.ok(error.bytesPastEnd === 5 && error.message.includes("5 bytes past the end"));
 * ```
 */
export class BufferOverrunError extends Error {
  /** The operation that found the damage: "release" or "reset". */
  readonly op: string;
  /** How far past the end the last overwritten canary byte lies (1 to 64). */
  readonly bytesPastEnd: number;
  /** The length of the overrun buffer in bytes, or -1 when an arena reset found it among many. */
  readonly byteLength: number;

  /** The error for `op` finding `bytesPastEnd` bytes written past a `byteLength`-byte buffer. */
  constructor(op: string, bytesPastEnd: number, byteLength: number, options?: ErrorOptions) {
    const buffer = byteLength >= 0 ? `a ${byteLength}-byte buffer` : "a buffer of the arena";
    super(
      `${op}: something wrote ${bytesPastEnd} bytes past the end of ${buffer} (CHECKED canaries 0xA5 damaged); ` +
        `a kernel or a raw pointer write overran its storage`,
      options,
    );
    this.name = "BufferOverrunError";
    this.op = op;
    this.bytesPastEnd = bytesPastEnd;
    this.byteLength = byteLength;
  }
}

/**
 * A differentiable operation was asked for a gradient (gradient mode on, an input requiring gradients) but has
 * no backward rule yet. Thrown by the forward call, so that no gradient is ever silently wrong; run the op
 * under `GradMode.noGrad` or on detached inputs to use it without gradients.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BackwardNotImplementedError } from "@zigtensor/zigtensor";
 * const error = new BackwardNotImplementedError("cumsum");
 * assert.ok(error.op === "cumsum" && error.message.includes("no backward rule"));
 * ```
 */
export class BackwardNotImplementedError extends Error {
  /** The operation without a backward rule. */
  readonly op: string;

  /** The error for `op`, which has no backward rule. */
  constructor(op: string, options?: ErrorOptions) {
    super(
      `${op}: no backward rule yet, and an input requires gradients; call it under GradMode.noGrad or on ` +
        `detached inputs`,
      options,
    );
    this.name = "BackwardNotImplementedError";
    this.op = op;
  }
}

/** The defects a tensor file can have, each named by `TensorFileError.defect`. */
export type TensorFileDefect =
  /** The file does not start with its format's magic bytes. */
  | "magic"
  /** A format version zigtensor does not read. */
  | "version"
  /** A header that is malformed: bad JSON or dictionary, a missing or ill-typed field, a bad string. */
  | "header"
  /** The file ends before a length, a header or a tensor's data that it declares. */
  | "truncated"
  /** A tensor's data range is not where the format requires (out of order, a gap, misaligned, wrong size). */
  | "offsets"
  /** Two tensors' data ranges overlap. */
  | "overlap"
  /** An element type that is unknown or that zigtensor does not have. */
  | "dtype"
  /** A shape that is not a list of extents or whose element count or byte size is too large. */
  | "shape"
  /** A count (tensors, keys, array elements, string bytes) larger than the file could hold. */
  | "count"
  /** Two entries with the same name. */
  | "duplicate"
  /** A compression method zigtensor does not read, or compressed data that does not inflate. */
  | "compression"
  /** A stored checksum that does not match the data. */
  | "checksum";

/**
 * A tensor file (safetensors, .npy, .npz, GGUF) is corrupt, truncated, hostile or uses a feature zigtensor
 * does not read. `defect` names what is wrong; nothing outside the file was read. An `Error`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { io, TensorFileError } from "@zigtensor/zigtensor";
 * try {
 *   io.readNpy(new TextEncoder().encode("not a NumPy file"));
 *   assert.fail("expected a TensorFileError");
 * } catch (error) {
 *   assert.ok(error instanceof TensorFileError && error.defect === "magic" && error.format === "npy");
 * }
 * ```
 */
export class TensorFileError extends Error {
  /** The format being read: "safetensors", "npy", "npz" or "gguf". */
  readonly format: string;
  /** What is wrong with the file. */
  readonly defect: TensorFileDefect;
  /** The path read, or "<bytes>" for an in-memory file. */
  readonly source: string;

  /** The error for `source` (a `format` file) with `defect`, explained by `rule`. */
  constructor(
    format: string,
    source: string,
    defect: TensorFileDefect,
    rule: string,
    options?: ErrorOptions,
  ) {
    super(`${format} ${source}: ${rule} (${defect})`, options);
    this.name = "TensorFileError";
    this.format = format;
    this.defect = defect;
    this.source = source;
  }
}

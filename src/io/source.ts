/**
 * Where tensor files come from and go to. A `ByteSource` is a file opened with `node:fs` (read with
 * positional reads, so only headers are read into JavaScript memory and each tensor's data goes straight from
 * the file into the tensor's pool block) or bytes already in memory. A `ByteSink` writes a file front to back,
 * each tensor's bytes straight from its storage. Every read is checked against the size of the source first, so
 * a declared length or offset beyond the end is a `TensorFileError` ("truncated"), never a short or foreign read.
 *
 * @module
 */
import * as fs from "node:fs";
import { StaleTensorError, type TensorFileDefect, TensorFileError } from "../core/errors.ts";
import {
  blockSizeOf,
  dtypeOf,
  isContiguousOf,
  isReleasedOf,
  isTensor,
  offsetOf,
  sizeOf,
  storageOf,
  Tensor,
} from "../tensor.ts";
import { dtypeInfo } from "../core/dtype.ts";
import { checkShape, formatShape, MAX_BYTES } from "../core/shape.ts";
import type { CreateOptions } from "../tensor.ts";
import type { DType } from "../core/dtype.ts";

/** A file to read: a path (a string or a `file:` URL), or the file's bytes. */
export type FileInput = string | URL | Uint8Array;

/** A file to write: a path (a string or a `file:` URL). */
export type FilePath = string | URL;

/**
 * Reads of one file, by position; throws `TensorFileError` for anything outside it. Internal to `io`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ByteSource } from "./source.ts";
 * using source = new ByteSource("npy", new Uint8Array([1, 2, 3]));
 * assert.deepEqual([...source.read(1, 2, "two bytes")], [2, 3]);
 * assert.throws(() => source.read(2, 2, "two bytes"), /truncated/);
 * ```
 */
export class ByteSource implements Disposable {
  /** The format being read, for errors. */
  readonly format: string;
  /** The path, or "<bytes>". */
  readonly name: string;
  /** The size in bytes. */
  readonly size: number;
  #fd: number | null;
  readonly #bytes: Uint8Array | null;
  /** Where this source starts in the file (a member of an archive starts inside it). */
  readonly #base: number = 0;
  /** Whether closing this source closes the file (a slice shares its parent's). */
  readonly #owner: boolean = true;

  /**
   * Opens `input` for reading as `format`; `name` replaces "<bytes>" in errors about in-memory bytes. A slice
   * of another source (`slice`) shares its file.
   */
  constructor(
    format: string,
    input: FileInput,
    name?: string,
    slice?: { readonly parent: ByteSource; readonly start: number; readonly size: number },
  ) {
    this.format = format;
    if (slice !== undefined) {
      this.name = name ?? slice.parent.name;
      this.#fd = slice.parent.#fd;
      this.#bytes = slice.parent.#bytes;
      this.#base = slice.parent.#base + slice.start;
      this.#owner = false;
      this.size = slice.size;
      return;
    }
    if (input instanceof Uint8Array) {
      this.name = name ?? "<bytes>";
      this.#fd = null;
      this.#bytes = input;
      this.size = input.byteLength;
      return;
    }
    if (typeof input !== "string" && !(input instanceof URL)) {
      throw new TypeError(`${format}: expected a path, a file: URL or a Uint8Array, got ${String(input)}`);
    }
    this.name = input instanceof URL ? input.pathname : input;
    this.#bytes = null;
    this.#fd = fs.openSync(input, "r");
    try {
      this.size = fs.fstatSync(this.#fd).size;
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /** Throws a `TensorFileError` about this source. */
  fail(defect: TensorFileDefect, rule: string, options?: ErrorOptions): never {
    throw new TensorFileError(this.format, this.name, defect, rule, options);
  }

  /** Checks that `length` bytes at `position` lie inside the source; `what` names them in the error. */
  check(position: number, length: number, what: string): void {
    if (!Number.isSafeInteger(position) || !Number.isSafeInteger(length) || position < 0 || length < 0) {
      this.fail("offsets", `${what} has an invalid position ${position} or length ${length}`);
    }
    if (position + length > this.size) {
      this.fail(
        "truncated",
        `${what} needs bytes ${position} to ${position + length}, but the file has ${this.size}`,
      );
    }
  }

  /** The `size` bytes at `start` as a source of their own named `name`, sharing this one's file. */
  slice(start: number, size: number, name: string, what: string): ByteSource {
    this.check(start, size, what);
    return new ByteSource(this.format, new Uint8Array(0), name, { parent: this, start, size });
  }

  /** `length` bytes at `position` (a view of the input for in-memory bytes, else a new array). */
  read(position: number, length: number, what: string): Uint8Array {
    this.check(position, length, what);
    const at = this.#base + position;
    if (this.#bytes !== null) return this.#bytes.subarray(at, at + length);
    const out = new Uint8Array(length);
    this.#readFile(out, position);
    return out;
  }

  /** Fills `target` with the bytes at `position` (a tensor's pool memory: one copy, from the file). */
  readInto(target: Uint8Array, position: number, what: string): void {
    this.check(position, target.byteLength, what);
    const at = this.#base + position;
    if (this.#bytes !== null) target.set(this.#bytes.subarray(at, at + target.byteLength));
    else this.#readFile(target, position);
  }

  #readFile(target: Uint8Array, position: number): void {
    let done = 0;
    while (done < target.byteLength) {
      const n = fs.readSync(this.#fd!, target, done, target.byteLength - done, this.#base + position + done);
      if (n <= 0) this.fail("truncated", `the file ended while reading byte ${position + done}`);
      done += n;
    }
  }

  /** Closes the file; harmless to call again. */
  close(): void {
    if (this.#fd !== null && this.#owner) fs.closeSync(this.#fd);
    this.#fd = null;
  }

  /** Enables `using`. */
  [Symbol.dispose](): void {
    this.close();
  }
}

/** Writes one file front to back. */
export class ByteSink implements Disposable {
  #fd: number | null;
  /** Bytes written so far. */
  position = 0;

  constructor(path: FilePath) {
    this.#fd = fs.openSync(path, "w");
  }

  /** Appends `bytes`. */
  write(bytes: Uint8Array): void {
    let done = 0;
    while (done < bytes.byteLength) done += fs.writeSync(this.#fd!, bytes, done, bytes.byteLength - done);
    this.position += bytes.byteLength;
  }

  /** Appends `count` zero bytes. */
  pad(count: number): void {
    if (count > 0) this.write(new Uint8Array(count));
  }

  /** Closes the file; harmless to call again. */
  close(): void {
    if (this.#fd !== null) {
      fs.closeSync(this.#fd);
      this.#fd = null;
    }
  }

  /** Enables `using`. */
  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * Tensors read from one file, by name, and the file's metadata: a `Map<string, Tensor>` that owns its tensors.
 * Disposing it disposes every tensor it still holds; `delete` one first to keep it past the map.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { io, Tensor } from "@zigtensor/zigtensor";
 * const file = new Uint8Array(8 + 64);
 * const header = new TextEncoder().encode('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}');
 * new DataView(file.buffer).setBigUint64(0, BigInt(header.length), true);
 * file.set(header, 8);
 * const tensors = io.loadSafetensors(file.subarray(0, 8 + header.length + 8));
 * const w: Tensor = tensors.get("w")!;
 * tensors.delete("w"); // w is now the caller's
 * tensors.dispose();
 * assert.equal(w.isReleased, false);
 * w.dispose();
 * ```
 */
export class TensorMap<Metadata = Record<string, string>> extends Map<string, Tensor> implements Disposable {
  /** The file's metadata (safetensors: `__metadata__`; GGUF: its key/value pairs; npz: empty). */
  readonly metadata: Metadata;

  constructor(metadata: Metadata, entries?: Iterable<readonly [string, Tensor]>) {
    super(entries);
    this.metadata = metadata;
  }

  /** Disposes every tensor (a tensor that was disposed already is skipped). */
  dispose(): void {
    for (const tensor of this.values()) tensor.dispose();
  }

  /** Enables `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }
}

/**
 * Sets `record[key]` as an own, enumerable property, even for a key such as "__proto__" that a plain
 * assignment would treat as the prototype (file metadata names its own keys).
 */
export function setOwn<T>(record: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Tensors to write: a `Map` (a state dict, a `TensorMap`) or a plain object, by name. */
export type NamedTensors = ReadonlyMap<string, Tensor> | Readonly<Record<string, Tensor>>;

/**
 * The entries of `tensors` in their own order, each checked writable to a file before anything is written:
 * a `Tensor` (else `TypeError`), not released (else `StaleTensorError`), not blocked NchwC (else `TypeError`).
 */
export function namedEntries(op: string, tensors: NamedTensors): [string, Tensor][] {
  const entries = tensors instanceof Map ? [...tensors.entries()] : Object.entries(tensors);
  for (const [name, tensor] of entries) checkWritable(op, name, tensor);
  return entries;
}

/** Checks that `tensor` can be written to a file (see `namedEntries`). */
export function checkWritable(op: string, name: string, tensor: Tensor): void {
  if (!isTensor(tensor)) throw new TypeError(`${op}: "${name}" is not a Tensor`);
  if (isReleasedOf(tensor)) throw new StaleTensorError(op);
  if (blockSizeOf(tensor) > 0) {
    throw new TypeError(
      `${op}: tensor "${name}" is blocked NchwC(${
        blockSizeOf(tensor)
      }); convert it with toLayout(Layout.Nchw) first`,
    );
  }
}

/**
 * Checks a shape read from a file (zigtensor's limits: rank ≤ 8, 2^31 − 1 elements and bytes) and returns
 * its byte size; throws `TensorFileError` ("shape") naming the tensor otherwise.
 */
export function checkFileShape(
  source: ByteSource,
  name: string,
  shape: readonly number[],
  dtype: DType,
): number {
  let count: number;
  try {
    count = checkShape(source.format, shape);
  } catch (error) {
    source.fail("shape", `tensor "${name}" has shape ${formatShape(shape)}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const info = dtypeInfo(dtype);
  if (info.isQuantized && (shape.length === 0 || shape[shape.length - 1] % info.blockElements !== 0)) {
    source.fail(
      "shape",
      `tensor "${name}" is ${info.name} with shape ${formatShape(shape)}: its last axis must hold whole ` +
        `blocks of ${info.blockElements}`,
    );
  }
  const bytes = (count / info.blockElements) * info.blockBytes;
  if (bytes > MAX_BYTES) {
    source.fail("shape", `tensor "${name}" needs ${bytes} bytes, more than a buffer's 2^31 - 1`);
  }
  return bytes;
}

/**
 * A new tensor of `shape` and `dtype` filled with the `byteLength` bytes at `position`, read straight into its
 * pool block (or arena).
 */
export function readTensor(
  source: ByteSource,
  name: string,
  shape: readonly number[],
  dtype: DType,
  position: number,
  byteLength: number,
  options: CreateOptions = {},
): Tensor {
  source.check(position, byteLength, `the data of tensor "${name}"`);
  const tensor = Tensor.empty(shape, { ...options, dtype });
  try {
    source.readInto(bytesOf(tensor, source.format), position, `the data of tensor "${name}"`);
  } catch (error) {
    tensor.dispose();
    throw error;
  }
  return tensor;
}

/** The bytes of a contiguous tensor's own elements (or blocks), over its storage: no copy. */
export function bytesOf(tensor: Tensor, op: string): Uint8Array {
  if (!isContiguousOf(tensor)) throw new TypeError(`${op}: internal: bytesOf needs a contiguous tensor`);
  const info = dtypeInfo(dtypeOf(tensor));
  const start = info.isQuantized
    ? (offsetOf(tensor) / info.blockElements) * info.blockBytes
    : offsetOf(tensor) * info.blockBytes;
  const length = (sizeOf(tensor) / info.blockElements) * info.blockBytes;
  return new Uint8Array(storageOf(tensor).buffer(op), start, length);
}

/**
 * Runs `write` with the row-major bytes of `tensor`: its own storage when it is contiguous, else a temporary
 * contiguous copy that is disposed afterwards. Released and blocked (NchwC) tensors are refused.
 */
export function withBytes<T>(op: string, name: string, tensor: Tensor, write: (bytes: Uint8Array) => T): T {
  checkWritable(op, name, tensor);
  const packed = tensor.contiguous();
  try {
    return write(bytesOf(packed, op));
  } finally {
    if (packed !== tensor) packed.dispose();
  }
}

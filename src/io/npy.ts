/**
 * NumPy's `.npy`: the magic `\x93NUMPY`, a version (1.0, 2.0 or 3.0), a little-endian header length (u16 for
 * 1.0, u32 after), a Python dictionary literal `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`
 * padded with spaces to a multiple of 64 bytes, then the elements in C (row-major) or Fortran (column-major)
 * order. The reader parses the dictionary with a small literal parser (never `eval`, never pickle) and reads
 * Fortran data as a strided view, as NumPy does; the writer produces NumPy's exact bytes.
 *
 * @module
 */
import { type DType, dtypeInfo } from "../core/dtype.ts";
import { DTypeError } from "../core/errors.ts";
import { isContiguous } from "../core/shape.ts";
import type { CreateOptions, Tensor } from "../tensor.ts";
import {
  ByteSink,
  bytesOf,
  ByteSource,
  checkFileShape,
  checkWritable,
  type FileInput,
  type FilePath,
  readTensor,
  withBytes,
} from "./source.ts";
import { blockSizeOf, dtypeOf, isContiguousOf, rankOf, shapeOf, stridesOf } from "../tensor.ts";

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // "\x93NUMPY"
/** Headers above 1 MiB are refused (NumPy's own default limit is 10 000 bytes). */
const MAX_HEADER_BYTES = 1 << 20;

/** NumPy's type codes (kind and size) of the dtypes zigtensor has. */
const CODES: readonly (readonly [string, DType])[] = [
  ["f4", 1],
  ["f8", 11],
  ["f2", 10],
  ["i1", 3],
  ["u1", 2],
  ["i2", 5],
  ["u2", 4],
  ["i4", 6],
  ["u4", 12],
  ["i8", 7],
  ["u8", 13],
  ["b1", 9],
];
const BY_CODE = new Map<string, DType>(CODES);
const CODE_OF = new Map<DType, string>(CODES.map(([code, dtype]) => [dtype, code]));

/** What a `.npy` header says, checked. */
export interface NpyHeader {
  readonly dtype: DType;
  readonly shape: number[];
  readonly fortranOrder: boolean;
  readonly bigEndian: boolean;
  /** Where the data starts, from the start of the source. */
  readonly dataStart: number;
  readonly dataBytes: number;
}

/**
 * Reads a `.npy` file into a new tensor (from a path or the file's bytes), the data going straight from the
 * file into the tensor's pool block. Fortran-order data becomes a view with column-major strides (as NumPy's
 * `np.load` gives); big-endian data is swapped to little-endian. Object, string, complex and structured dtypes
 * are refused, and a corrupt file throws `TensorFileError` naming the defect.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mkdtempSync, rmSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { DType, io, Tensor } from "@zigtensor/zigtensor";
 * const dir = mkdtempSync(`${tmpdir()}/zt-`);
 * using labels = Tensor.from(new BigInt64Array([3n, 1n, 4n]));
 * io.writeNpy(`${dir}/labels.npy`, labels);
 * using back = io.readNpy(`${dir}/labels.npy`);
 * assert.ok(back.dtype === DType.I64 && back.get(2) === 4n);
 * rmSync(dir, { recursive: true });
 * ```
 */
export function readNpy(input: FileInput, options: CreateOptions = {}): Tensor {
  using source = new ByteSource("npy", input);
  return readNpySource(source, "array", options);
}

/**
 * Writes a tensor to a `.npy` file, byte for byte as NumPy's `np.save` would: C order when the tensor is
 * row-major contiguous, Fortran order (without a copy) when it is column-major contiguous (a transposed
 * matrix, say), else a row-major copy. BF16, Q4_0/Q8_0 and blocked tensors are refused: NumPy has no such
 * dtypes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mkdtempSync, rmSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { io, Tensor } from "@zigtensor/zigtensor";
 * const dir = mkdtempSync(`${tmpdir()}/zt-`);
 * using m = Tensor.from([[1, 2, 3], [4, 5, 6]]);
 * io.writeNpy(`${dir}/mt.npy`, m.T); // column-major: written as fortran_order, no copy
 * using back = io.readNpy(`${dir}/mt.npy`);
 * assert.deepEqual(back.shape, [3, 2]);
 * assert.deepEqual([...back.toArray()], [1, 4, 2, 5, 3, 6]);
 * rmSync(dir, { recursive: true });
 * ```
 */
export function writeNpy(path: FilePath, tensor: Tensor): void {
  npyParts("writeNpy", "array", tensor, (header, bytes) => {
    using sink = new ByteSink(path);
    sink.write(header);
    sink.write(bytes);
  });
}

/** Reads the `.npy` file that `source` holds (a file, bytes, or a member of an archive). */
export function readNpySource(
  source: ByteSource,
  name: string,
  options: CreateOptions = {},
  verify?: (header: Uint8Array, data: Uint8Array, rest: Uint8Array) => void,
): Tensor {
  const header = readNpyHeader(source, name);
  const { dtype, fortranOrder, dataStart, dataBytes } = header;
  // Fortran order: the bytes are the row-major layout of the reversed shape.
  const stored = fortranOrder ? [...header.shape].reverse() : header.shape;
  const tensor = readTensor(source, name, stored, dtype, dataStart, dataBytes, options);
  if (verify !== undefined) {
    try {
      const end = dataStart + dataBytes;
      verify(
        source.read(0, dataStart, "the header"),
        bytesOf(tensor, "readNpy"),
        source.read(end, source.size - end, "the rest"),
      );
    } catch (error) {
      tensor.dispose();
      throw error;
    }
  }
  if (header.bigEndian) swapBytes(bytesOf(tensor, "readNpy"), dtypeInfo(dtype).blockBytes);
  if (!fortranOrder || rankOf(tensor) < 2) return tensor;
  return tensor.permute(stored.map((_, i) => stored.length - 1 - i));
}

/** Parses and checks a `.npy` header. */
export function readNpyHeader(source: ByteSource, name: string): NpyHeader {
  const head = source.read(0, Math.min(6, source.size), "the magic");
  if (!head.every((b, i) => b === MAGIC[i])) source.fail("magic", `${name} does not start with \\x93NUMPY`);
  const lead = source.read(0, 8, "the magic and version");
  const major = lead[6];
  if (major < 1 || major > 3 || lead[7] !== 0) {
    source.fail(
      "version",
      `${name} has format version ${major}.${lead[7]}; zigtensor reads 1.0, 2.0 and 3.0`,
    );
  }
  const lengthBytes = major === 1 ? 2 : 4;
  const raw = source.read(8, lengthBytes, "the header length");
  const view = new DataView(raw.buffer, raw.byteOffset, lengthBytes);
  const length = major === 1 ? view.getUint16(0, true) : view.getUint32(0, true);
  const start = 8 + lengthBytes;
  if (length > MAX_HEADER_BYTES) {
    source.check(start, length, `the ${length}-byte header of ${name}`);
    source.fail("header", `${name} has a ${length}-byte header, more than the limit of ${MAX_HEADER_BYTES}`);
  }
  const bytes = source.read(start, length, `the ${length}-byte header of ${name}`);
  let text: string;
  try {
    text = new TextDecoder(major === 3 ? "utf-8" : "latin1", { fatal: true }).decode(bytes);
  } catch (error) {
    source.fail("header", `the header of ${name} is not text`, { cause: error });
  }
  const dict = parseDict(source, name, text);
  const descr = dict.get("descr");
  const fortran = dict.get("fortran_order");
  const shape = dict.get("shape");
  if (Array.isArray(descr)) {
    source.fail("dtype", `${name} has a structured dtype, which zigtensor does not read`);
  }
  if (typeof descr !== "string" || typeof fortran !== "boolean" || !Array.isArray(shape) || dict.size !== 3) {
    source.fail("header", `the header of ${name} must hold exactly 'descr', 'fortran_order' and 'shape'`);
  }
  const match = /^([<>|=])([a-zA-Z]\d+)$/.exec(descr);
  const dtype = match === null ? undefined : BY_CODE.get(match[2]);
  if (match === null || dtype === undefined) {
    source.fail(
      "dtype",
      `${name} has dtype '${descr}'; zigtensor reads ${
        CODES.map(([code]) => code).join(", ")
      } (no objects, ` +
        `strings, complex or structured dtypes)`,
    );
  }
  const dataBytes = checkFileShape(source, name, shape as number[], dtype);
  const dataStart = start + length;
  source.check(dataStart, dataBytes, `the data of ${name}`);
  return {
    dtype,
    shape: shape as number[],
    fortranOrder: fortran,
    bigEndian: match[1] === ">",
    dataStart,
    dataBytes,
  };
}

/**
 * Calls `use` with the `.npy` header bytes NumPy writes for `tensor` and the tensor's data bytes (its own
 * storage when it is C- or Fortran-contiguous, else a row-major copy disposed afterwards).
 */
export function npyParts<T>(
  op: string,
  name: string,
  tensor: Tensor,
  use: (header: Uint8Array, bytes: Uint8Array) => T,
): T {
  const descr = npyDescr(op, name, tensor);
  const reversed = shapeOf(tensor).map((_, i) => rankOf(tensor) - 1 - i);
  const fortran = blockSizeOf(tensor) === 0 && !isContiguousOf(tensor) &&
    isContiguous(reversed.map((i) => shapeOf(tensor)[i]), reversed.map((i) => stridesOf(tensor)[i]));
  const header = npyHeader(descr, fortran, shapeOf(tensor));
  return withBytes(op, name, fortran ? tensor.permute(reversed) : tensor, (bytes) => use(header, bytes));
}

/**
 * NumPy's `descr` of `tensor`'s dtype ('<f4', '|b1', ...); throws `DTypeError` for BF16 and the GGML blocks,
 * and checks the tensor can be written (see `checkWritable`).
 */
export function npyDescr(op: string, name: string, tensor: Tensor): string {
  checkWritable(op, name, tensor);
  const code = CODE_OF.get(dtypeOf(tensor));
  if (code === undefined) {
    throw new DTypeError(
      op,
      `"${name}" is ${dtypeInfo(dtypeOf(tensor)).name}, which NumPy has no dtype for; cast() it to F32 first`,
    );
  }
  return `${code === "i1" || code === "u1" || code === "b1" ? "|" : "<"}${code}`;
}

/** NumPy's header: sorted keys, `repr` values, growth room, padded with spaces and a newline to 64 bytes. */
function npyHeader(descr: string, fortran: boolean, shape: readonly number[]): Uint8Array {
  const shapeRepr = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
  let dict = `{'descr': '${descr}', 'fortran_order': ${fortran ? "True" : "False"}, 'shape': ${shapeRepr}, }`;
  if (shape.length > 0) dict += " ".repeat(21 - String(shape[fortran ? shape.length - 1 : 0]).length);
  // Version 1.0 (a u16 length) always suffices: a rank-8 header is a few hundred bytes.
  const prefix = 10;
  const total = dict.length + 1;
  const out = new Uint8Array(prefix + total + 64 - ((prefix + total) % 64));
  out.set(MAGIC);
  out[6] = 1;
  new DataView(out.buffer).setUint16(8, out.length - prefix, true);
  for (let i = 0; i < dict.length; i++) out[prefix + i] = dict.charCodeAt(i);
  out.fill(0x20, prefix + dict.length, out.length - 1);
  out[out.length - 1] = 0x0a;
  return out;
}

/** Swaps each `size`-byte element of `bytes` in place (big-endian to little-endian). */
function swapBytes(bytes: Uint8Array, size: number): void {
  for (let at = 0; at < bytes.length; at += size) bytes.subarray(at, at + size).reverse();
}

type Literal = string | boolean | number | Literal[];

/**
 * Parses the Python dictionary literal of a header: string keys; values that are strings, `True`/`False`,
 * integers, or tuples/lists of those. Anything else is a "header" defect.
 */
function parseDict(source: ByteSource, name: string, text: string): Map<string, Literal> {
  let at = 0;
  const fail = (what: string): never =>
    source.fail(
      "header",
      `the header of ${name} is not a Python dictionary literal: ${what} at character ${at}`,
    );
  const space = () => {
    while (at < text.length && " \t\r\n".includes(text[at])) at++;
  };
  const expect = (c: string) => {
    space();
    if (text[at] !== c) fail(`expected '${c}'`);
    at++;
  };
  const value = (depth: number): Literal => {
    space();
    const c = text[at];
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, at + 1);
      if (end < 0) fail("an unterminated string");
      const s = text.slice(at + 1, end);
      if (s.includes("\\")) fail("an escape in a string");
      at = end + 1;
      return s;
    }
    if (c === "(" || c === "[") {
      if (depth > 8) fail("nesting deeper than 8");
      const close = c === "(" ? ")" : "]";
      at++;
      const items: Literal[] = [];
      space();
      while (text[at] !== close) {
        items.push(value(depth + 1));
        space();
        if (text[at] === ",") at++;
        else if (text[at] !== close) fail(`expected ',' or '${close}'`);
        space();
      }
      at++;
      return items;
    }
    const word = /^(True|False|-?\d+L?)/.exec(text.slice(at, at + 32));
    if (word === null) return fail("an unexpected value");
    at += word[0].length;
    if (word[0] === "True" || word[0] === "False") return word[0] === "True";
    const n = Number(word[0].replace("L", ""));
    if (!Number.isSafeInteger(n)) fail(`the integer ${word[0]} is too large`);
    return n;
  };
  const dict = new Map<string, Literal>();
  expect("{");
  space();
  while (text[at] !== "}") {
    const key = value(0);
    if (typeof key !== "string") fail("a key that is not a string");
    if (dict.has(key as string)) fail(`a repeated key '${key}'`);
    expect(":");
    dict.set(key as string, value(0));
    space();
    if (text[at] === ",") at++;
    else if (text[at] !== "}") fail("expected ',' or '}'");
    space();
  }
  at++;
  space();
  if (at !== text.length) fail("text after the dictionary");
  return dict;
}

/**
 * GGUF, the file format of llama.cpp and GGML (version 3; version 2 reads the same): the magic `GGUF`, a
 * version, the tensor and key/value counts (u64), the key/value pairs (typed scalars, strings and arrays), the
 * tensor infos (name, dimensions innermost first, GGML type, offset), then the tensor data, each tensor aligned
 * to `general.alignment` (32 by default). zigtensor reads and writes F32, F16, BF16, F64, I8, I16, I32, I64 and
 * the GGML block formats Q4_0 and Q8_0, whose blocks zigtensor stores byte for byte as GGML does. Every count,
 * length and offset is checked against the file before anything is allocated; the writer lays the file out as
 * the reference Python writer (`gguf.GGUFWriter`) does.
 *
 * @module
 */
import { type DType, dtypeInfo } from "../core/dtype.ts";
import { DTypeError, TensorShapeError } from "../core/errors.ts";
import type { CreateOptions } from "../tensor.ts";
import {
  ByteSink,
  ByteSource,
  checkFileShape,
  type FileInput,
  type FilePath,
  namedEntries,
  type NamedTensors,
  readTensor,
  setOwn,
  TensorMap,
  withBytes,
} from "./source.ts";
import { dtypeOf, rankOf, shapeOf, sizeOf } from "../tensor.ts";

/** The GGUF metadata value types, by the names of the reference implementation. */
export type GgufType =
  | "UINT8"
  | "INT8"
  | "UINT16"
  | "INT16"
  | "UINT32"
  | "INT32"
  | "FLOAT32"
  | "BOOL"
  | "STRING"
  | "ARRAY"
  | "UINT64"
  | "INT64"
  | "FLOAT64";

/**
 * A metadata value as zigtensor reads it: 8- to 32-bit integers and floats as numbers, 64-bit integers as
 * bigints, booleans, strings; numeric arrays as the typed array of their type (`Uint32Array`, `Float32Array`,
 * `BigInt64Array`, ...), arrays of booleans, strings or arrays as plain arrays.
 */
export type GgufValue =
  | number
  | bigint
  | boolean
  | string
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | BigUint64Array
  | BigInt64Array
  | Float64Array
  | readonly (boolean | string | number | bigint | GgufValue)[];

/** Type codes, in code order (ARRAY is 9). */
const TYPES: readonly GgufType[] = [
  "UINT8",
  "INT8",
  "UINT16",
  "INT16",
  "UINT32",
  "INT32",
  "FLOAT32",
  "BOOL",
  "STRING",
  "ARRAY",
  "UINT64",
  "INT64",
  "FLOAT64",
];

/** Fixed-size types: byte size and the typed array an array of them reads as. */
const NUMERIC: Readonly<Partial<Record<GgufType, { size: number; array: TypedArrayCtor }>>> = {
  UINT8: { size: 1, array: Uint8Array },
  INT8: { size: 1, array: Int8Array },
  UINT16: { size: 2, array: Uint16Array },
  INT16: { size: 2, array: Int16Array },
  UINT32: { size: 4, array: Uint32Array },
  INT32: { size: 4, array: Int32Array },
  FLOAT32: { size: 4, array: Float32Array },
  UINT64: { size: 8, array: BigUint64Array },
  INT64: { size: 8, array: BigInt64Array },
  FLOAT64: { size: 8, array: Float64Array },
};
type TypedArrayCtor = {
  new (buffer: ArrayBuffer): ArrayLike<number | bigint>;
  readonly BYTES_PER_ELEMENT: number;
};

/** GGML tensor types zigtensor has, by GGML type id. */
const GGML: readonly (readonly [number, DType])[] = [
  [0, 1], // F32
  [1, 10], // F16
  [2, 0x102], // Q4_0
  [8, 0x108], // Q8_0
  [24, 3], // I8
  [25, 5], // I16
  [26, 6], // I32
  [27, 7], // I64
  [28, 11], // F64
  [30, 16], // BF16
];
const DTYPE_OF = new Map<number, DType>(GGML);
const GGML_OF = new Map<DType, number>(GGML.map(([id, dtype]) => [dtype, id]));
/** Names of the GGML types zigtensor does not have, for errors. */
const OTHER_GGML: Readonly<Record<number, string>> = {
  3: "Q4_1",
  6: "Q5_0",
  7: "Q5_1",
  9: "Q8_1",
  10: "Q2_K",
  11: "Q3_K",
  12: "Q4_K",
  13: "Q5_K",
  14: "Q6_K",
  15: "Q8_K",
  16: "IQ2_XXS",
  17: "IQ2_XS",
  18: "IQ3_XXS",
  19: "IQ1_S",
  20: "IQ4_NL",
  21: "IQ3_S",
  22: "IQ2_S",
  23: "IQ4_XS",
  29: "IQ1_M",
  34: "TQ1_0",
  35: "TQ2_0",
  39: "MXFP4",
};

const MAGIC = 0x46554747; // "GGUF" little-endian
const DEFAULT_ALIGNMENT = 32;
/** GGML tensors have at most 4 dimensions. */
const MAX_DIMS = 4;
/** Arrays nest at most this deep. */
const MAX_DEPTH = 8;

/**
 * Tensors read from a GGUF file, with the metadata and the type each metadata value was stored as; `writeGguf`
 * takes both back.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mkdtempSync, readFileSync, rmSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { io, Tensor } from "@zigtensor/zigtensor";
 * const dir = mkdtempSync(`${tmpdir()}/zt-`);
 * using t = Tensor.ones([2, 3]);
 * io.writeGguf(`${dir}/a.gguf`, { t }, { "x.count": 3 }, { types: { "x.count": "UINT64" } });
 * using model: io.GgufTensors = io.readGguf(`${dir}/a.gguf`);
 * assert.equal(model.metadata["x.count"], 3n);
 * io.writeGguf(`${dir}/b.gguf`, model); // the same metadata, types and tensors
 * assert.deepEqual(readFileSync(`${dir}/b.gguf`), readFileSync(`${dir}/a.gguf`));
 * rmSync(dir, { recursive: true });
 * ```
 */
export class GgufTensors extends TensorMap<Record<string, GgufValue>> {
  /** The stored type of each metadata value (for an array, the type of its elements). */
  readonly types: Readonly<Record<string, GgufType>>;
  /** The data alignment in bytes. */
  readonly alignment: number;

  constructor(
    metadata: Record<string, GgufValue>,
    types: Record<string, GgufType>,
    alignment: number,
  ) {
    super(metadata);
    this.types = types;
    this.alignment = alignment;
  }
}

/** Options of `writeGguf`. */
export interface WriteGgufOptions {
  /**
   * The type to store each metadata value as (for arrays, their elements' type); values not named here take a
   * type from their JavaScript value as `gguf.GGUFWriter` does: integers INT32 (INT64 beyond its range), other
   * numbers FLOAT32, bigints INT64, typed arrays their own type. `general.alignment` is always UINT32.
   * @default the types of a `GgufTensors` given as `tensors`, else {}
   */
  readonly types?: Readonly<Record<string, GgufType>>;
}

/**
 * Reads a GGUF file: every tensor (shape with the outermost dimension first, as PyTorch and NumPy order it;
 * Q4_0/Q8_0 as zigtensor's GGML block tensors), each read straight into its own pool block, and the metadata
 * key/values with their stored types. Dispose the result (or `using`) to free every tensor. A tensor of a GGML
 * type zigtensor does not have (Q4_K, ...) or a corrupt file throws `TensorFileError` naming the defect.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mkdtempSync, rmSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { dequantize, DType, io, quantize, Tensor } from "@zigtensor/zigtensor";
 * const dir = mkdtempSync(`${tmpdir()}/zt-`);
 * using w = Tensor.randn([4, 64], { seed: 1 });
 * using q = quantize(w, DType.Q8_0);
 * io.writeGguf(`${dir}/m.gguf`, { "blk.0.w": q }, { "general.architecture": "demo", "demo.layers": 1 });
 * using model = io.readGguf(`${dir}/m.gguf`);
 * assert.equal(model.get("blk.0.w")!.dtype, DType.Q8_0);
 * assert.equal(model.types["demo.layers"], "INT32");
 * using back = dequantize(model.get("blk.0.w")!);
 * assert.ok(Math.abs((back.get(3, 5) as number) - (w.get(3, 5) as number)) < 0.05);
 * rmSync(dir, { recursive: true });
 * ```
 */
export function readGguf(input: FileInput, options: CreateOptions = {}): GgufTensors {
  using source = new ByteSource("gguf", input);
  const cursor = new Cursor(source);
  if (cursor.u32("the magic") !== MAGIC) source.fail("magic", "the file does not start with GGUF");
  const version = cursor.u32("the version");
  if (version !== 2 && version !== 3) {
    source.fail("version", `the file is GGUF version ${version}; zigtensor reads versions 2 and 3`);
  }
  const tensorCount = cursor.count("the tensor count", 24);
  const kvCount = cursor.count("the key/value count", 13);
  const metadata: Record<string, GgufValue> = {};
  const types: Record<string, GgufType> = {};
  for (let i = 0; i < kvCount; i++) {
    const key = cursor.string("a metadata key");
    if (Object.hasOwn(metadata, key)) source.fail("duplicate", `the metadata key "${key}" appears twice`);
    const type = cursor.type(`the type of "${key}"`);
    if (type === "ARRAY") {
      const element = cursor.type(`the element type of "${key}"`);
      setOwn(metadata, key, cursor.array(element, key, 1));
      setOwn(types, key, element);
    } else {
      setOwn(metadata, key, cursor.scalar(type, key));
      setOwn(types, key, type);
    }
  }
  const alignment = readAlignment(source, metadata, types);
  const infos = readTensorInfos(source, cursor, tensorCount);
  const dataStart = alignUp(cursor.position, alignment);
  checkTensorRanges(source, infos, dataStart, alignment);
  const tensors = new GgufTensors(metadata, types, alignment);
  try {
    for (const info of infos) {
      const position = dataStart + info.offset;
      tensors.set(
        info.name,
        readTensor(source, info.name, info.shape, info.dtype, position, info.bytes, options),
      );
    }
  } catch (error) {
    tensors.dispose();
    throw error;
  }
  return tensors;
}

/**
 * Writes tensors (a `Map`, an object, or a `GgufTensors` read before) and metadata key/values to a GGUF
 * (version 3) file laid out as `gguf.GGUFWriter` lays it out: tensors in the order given, each padded to the
 * alignment (`general.alignment`, else 32). Shapes have 1 to 4 dimensions (rank 0 is written with none);
 * dtypes F32, F16, BF16, F64, I8, I16, I32, I64, Q4_0 and Q8_0.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mkdtempSync, rmSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { DType, io, Tensor } from "@zigtensor/zigtensor";
 * const dir = mkdtempSync(`${tmpdir()}/zt-`);
 * using emb = Tensor.ones([3, 8], { dtype: DType.F16 });
 * io.writeGguf(`${dir}/e.gguf`, new Map([["token_embd.weight", emb]]), {
 *   "general.architecture": "demo",
 *   "tokenizer.ggml.tokens": ["a", "b", "c"],
 *   "demo.context_length": 128,
 * }, { types: { "demo.context_length": "UINT32" } });
 * using back = io.readGguf(`${dir}/e.gguf`);
 * assert.deepEqual(back.metadata["tokenizer.ggml.tokens"], ["a", "b", "c"]);
 * assert.equal(back.types["demo.context_length"], "UINT32");
 * rmSync(dir, { recursive: true });
 * ```
 */
export function writeGguf(
  path: FilePath,
  tensors: NamedTensors,
  metadata?: Readonly<Record<string, GgufValue>>,
  options: WriteGgufOptions = {},
): void {
  const op = "writeGguf";
  const entries = namedEntries(op, tensors);
  const values = metadata ?? (tensors instanceof GgufTensors ? tensors.metadata : {});
  const types = options.types ?? (tensors instanceof GgufTensors ? tensors.types : {});
  const out = new Builder();
  out.u32(MAGIC);
  out.u32(3);
  out.u64(BigInt(entries.length));
  out.u64(BigInt(Object.keys(values).length));
  let alignment = DEFAULT_ALIGNMENT;
  for (const [key, value] of Object.entries(values)) {
    out.string(key);
    if (key === "general.alignment") {
      if (typeof value !== "number" || !isPowerOfTwo(value) || value > 2 ** 31) {
        throw new RangeError(`${op}: general.alignment must be a power of two, got ${String(value)}`);
      }
      alignment = value;
      out.u32(TYPES.indexOf("UINT32"));
      out.u32(value);
      continue;
    }
    writeValue(op, out, key, value, Object.hasOwn(types, key) ? types[key] : undefined);
  }
  let offset = 0;
  const layout = entries.map(([name, tensor]) => {
    const id = GGML_OF.get(dtypeOf(tensor));
    if (id === undefined) {
      throw new DTypeError(
        op,
        `tensor "${name}" is ${
          dtypeInfo(dtypeOf(tensor)).name
        }; GGUF holds F32, F16, BF16, F64, I8, I16, I32, ` +
          `I64, Q4_0 and Q8_0`,
      );
    }
    if (rankOf(tensor) > MAX_DIMS) {
      throw new TensorShapeError(
        op,
        `tensor "${name}" has rank ${rankOf(tensor)}; GGML tensors have at most 4`,
        [
          shapeOf(tensor),
        ],
      );
    }
    const info = dtypeInfo(dtypeOf(tensor));
    const bytes = (sizeOf(tensor) / info.blockElements) * info.blockBytes;
    out.string(name);
    out.u32(rankOf(tensor));
    for (let d = rankOf(tensor) - 1; d >= 0; d--) out.u64(BigInt(shapeOf(tensor)[d]));
    out.u32(id);
    out.u64(BigInt(offset));
    const at = offset;
    offset += alignUp(bytes, alignment);
    return { name, tensor, bytes, at };
  });
  const header = out.finish();
  using sink = new ByteSink(path);
  sink.write(header);
  sink.pad(alignUp(sink.position, alignment) - sink.position);
  for (const { name, tensor, bytes } of layout) {
    withBytes(op, name, tensor, (data) => sink.write(data));
    sink.pad(alignUp(bytes, alignment) - bytes);
  }
}

interface TensorInfo {
  readonly name: string;
  readonly shape: number[];
  readonly dtype: DType;
  readonly offset: number;
  readonly bytes: number;
}

function readTensorInfos(source: ByteSource, cursor: Cursor, count: number): TensorInfo[] {
  const infos: TensorInfo[] = [];
  const names = new Set<string>();
  for (let i = 0; i < count; i++) {
    const name = cursor.string(`the name of tensor ${i}`);
    if (names.has(name)) source.fail("duplicate", `the tensor "${name}" appears twice`);
    names.add(name);
    const rank = cursor.u32(`the rank of "${name}"`);
    if (rank > MAX_DIMS) {
      source.fail("shape", `tensor "${name}" has ${rank} dimensions; GGML allows at most 4`);
    }
    const dims: number[] = [];
    for (let d = 0; d < rank; d++) {
      const extent = cursor.u64(`dimension ${d} of "${name}"`);
      dims.push(extent > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(extent));
    }
    const shape = dims.reverse();
    const id = cursor.u32(`the type of "${name}"`);
    const dtype = DTYPE_OF.get(id);
    if (dtype === undefined) {
      source.fail(
        "dtype",
        `tensor "${name}" has GGML type ${OTHER_GGML[id] ?? "unknown"} (${id}); zigtensor reads F32, F16, ` +
          `BF16, F64, I8, I16, I32, I64, Q4_0 and Q8_0`,
      );
    }
    const bytes = checkFileShape(source, name, shape, dtype);
    const offset = cursor.u64(`the offset of "${name}"`);
    if (offset > BigInt(source.size)) {
      source.fail(
        "truncated",
        `tensor "${name}" has data offset ${offset}, beyond the file's ${source.size} bytes`,
      );
    }
    infos.push({ name, shape, dtype, offset: Number(offset), bytes });
  }
  return infos;
}

/** Each tensor aligned, inside the file, and overlapping no other. */
function checkTensorRanges(
  source: ByteSource,
  infos: readonly TensorInfo[],
  dataStart: number,
  alignment: number,
): void {
  for (const info of infos) {
    if (info.offset % alignment !== 0) {
      source.fail(
        "offsets",
        `tensor "${info.name}" starts at data offset ${info.offset}, not a multiple of ${alignment}`,
      );
    }
    source.check(dataStart + info.offset, info.bytes, `the data of tensor "${info.name}"`);
  }
  const sorted = [...infos].sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < sorted.length; i++) {
    const before = sorted[i - 1];
    if (sorted[i].offset < before.offset + before.bytes) {
      source.fail(
        "overlap",
        `tensor "${sorted[i].name}" (data offset ${sorted[i].offset}) overlaps tensor "${before.name}" ` +
          `(data offset ${before.offset}, ${before.bytes} bytes)`,
      );
    }
  }
}

function readAlignment(
  source: ByteSource,
  metadata: Record<string, GgufValue>,
  types: Record<string, GgufType>,
): number {
  if (!Object.hasOwn(metadata, "general.alignment")) return DEFAULT_ALIGNMENT;
  const value = metadata["general.alignment"];
  if (types["general.alignment"] !== "UINT32" || typeof value !== "number" || !isPowerOfTwo(value)) {
    source.fail("header", `general.alignment must be a UINT32 power of two, got ${String(value)}`);
  }
  return value;
}

function isPowerOfTwo(n: number): boolean {
  return Number.isInteger(n) && n > 0 && n <= 2 ** 31 && (n & (n - 1)) === 0;
}

function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

/** Sequential reads of the header, a chunk at a time; everything is checked against the file's size. */
class Cursor {
  readonly #source: ByteSource;
  #chunk: Uint8Array = new Uint8Array(0);
  #view = new DataView(this.#chunk.buffer);
  #chunkStart = 0;
  position = 0;

  constructor(source: ByteSource) {
    this.#source = source;
  }

  /** `n` bytes at the position, advancing past them. */
  bytes(n: number, what: string): Uint8Array {
    const at = this.#need(n, what);
    this.position += n;
    return this.#chunk.subarray(at, at + n);
  }

  u32(what: string): number {
    const at = this.#need(4, what);
    this.position += 4;
    return this.#view.getUint32(at, true);
  }

  u64(what: string): bigint {
    const at = this.#need(8, what);
    this.position += 8;
    return this.#view.getBigUint64(at, true);
  }

  /** A u64 count of items that each take at least `minBytes`: it must fit in what is left of the file. */
  count(what: string, minBytes: number): number {
    const n = this.u64(what);
    const left = this.#source.size - this.position;
    if (n * BigInt(minBytes) > BigInt(left)) {
      this.#source.fail(
        "count",
        `${what} is ${n}, but the ${left} bytes left hold at most ${Math.floor(left / minBytes)}`,
      );
    }
    return Number(n);
  }

  string(what: string): string {
    const length = this.count(`the length of ${what}`, 1);
    return new TextDecoder().decode(this.bytes(length, what));
  }

  type(what: string): GgufType {
    const code = this.u32(what);
    const type = TYPES[code];
    if (type === undefined) {
      this.#source.fail("header", `${what} is ${code}, not a GGUF value type (0 to 12)`);
    }
    return type;
  }

  scalar(type: GgufType, key: string): GgufValue {
    const what = `the value of "${key}"`;
    if (type === "STRING") return this.string(what);
    if (type === "BOOL") return this.bytes(1, what)[0] !== 0;
    const { size } = NUMERIC[type]!;
    const at = this.#need(size, what);
    this.position += size;
    const v = this.#view;
    switch (type) {
      case "UINT8":
        return v.getUint8(at);
      case "INT8":
        return v.getInt8(at);
      case "UINT16":
        return v.getUint16(at, true);
      case "INT16":
        return v.getInt16(at, true);
      case "UINT32":
        return v.getUint32(at, true);
      case "INT32":
        return v.getInt32(at, true);
      case "FLOAT32":
        return v.getFloat32(at, true);
      case "UINT64":
        return v.getBigUint64(at, true);
      case "INT64":
        return v.getBigInt64(at, true);
      default:
        return v.getFloat64(at, true);
    }
  }

  array(element: GgufType, key: string, depth: number): GgufValue {
    if (depth > MAX_DEPTH) this.#source.fail("header", `"${key}" nests arrays deeper than ${MAX_DEPTH}`);
    const numeric = NUMERIC[element];
    const minBytes = numeric?.size ?? (element === "BOOL" ? 1 : element === "STRING" ? 8 : 12);
    const n = this.count(`the length of the array "${key}"`, minBytes);
    if (numeric !== undefined) {
      const bytes = this.bytes(n * numeric.size, `the array "${key}"`);
      return new numeric.array(bytes.slice().buffer) as GgufValue;
    }
    if (element === "BOOL") return [...this.bytes(n, `the array "${key}"`)].map((b) => b !== 0);
    const items: (string | GgufValue)[] = [];
    for (let i = 0; i < n; i++) {
      if (element === "STRING") items.push(this.string(`element ${i} of "${key}"`));
      else items.push(this.array(this.type(`the element type of "${key}"[${i}]`), key, depth + 1));
    }
    return items;
  }

  /** Makes `n` bytes at the position available in the chunk and returns their index there. */
  #need(n: number, what: string): number {
    const at = this.position - this.#chunkStart;
    if (at + n <= this.#chunk.length) return at;
    this.#source.check(this.position, n, what);
    const length = Math.min(Math.max(n, 1 << 20), this.#source.size - this.position);
    this.#chunk = this.#source.read(this.position, length, what);
    this.#view = new DataView(this.#chunk.buffer, this.#chunk.byteOffset, this.#chunk.byteLength);
    this.#chunkStart = this.position;
    return 0;
  }
}

/** The GGUF header under construction. */
class Builder {
  readonly #parts: Uint8Array[] = [];
  readonly #encoder = new TextEncoder();

  bytes(b: Uint8Array): void {
    this.#parts.push(b);
  }

  #fixed(size: number, write: (view: DataView) => void): void {
    const b = new Uint8Array(size);
    write(new DataView(b.buffer));
    this.#parts.push(b);
  }

  u32(n: number): void {
    this.#fixed(4, (v) => v.setUint32(0, n, true));
  }

  u64(n: bigint): void {
    this.#fixed(8, (v) => v.setBigUint64(0, n, true));
  }

  string(s: string): void {
    const b = this.#encoder.encode(s);
    this.u64(BigInt(b.length));
    this.bytes(b);
  }

  /** One value of a scalar type; throws `RangeError` when it does not fit. */
  scalar(op: string, key: string, type: GgufType, value: unknown): void {
    const bad = (): never => {
      throw new RangeError(`${op}: metadata "${key}" = ${String(value)} cannot be stored as ${type}`);
    };
    if (type === "STRING") return typeof value === "string" ? this.string(value) : bad();
    if (type === "BOOL") {
      return typeof value === "boolean" ? this.bytes(new Uint8Array([value ? 1 : 0])) : bad();
    }
    const numeric = NUMERIC[type];
    if (numeric === undefined) return bad();
    const big = type === "UINT64" || type === "INT64";
    if (big ? typeof value !== "bigint" && !Number.isInteger(value) : typeof value !== "number") return bad();
    const typed = new numeric.array(new ArrayBuffer(numeric.size)) as unknown as (number | bigint)[];
    typed[0] = big ? BigInt(value as number | bigint) : (value as number);
    if (!type.startsWith("FLOAT") && typed[0] !== (big ? BigInt(value as number | bigint) : value)) bad();
    this.bytes(new Uint8Array((typed as unknown as Uint8Array).buffer));
  }

  finish(): Uint8Array {
    const total = this.#parts.reduce((n, b) => n + b.length, 0);
    const out = new Uint8Array(total);
    let at = 0;
    for (const b of this.#parts) {
      out.set(b, at);
      at += b.length;
    }
    return out;
  }
}

/** The type code of `value` as `gguf.GGUFWriter` infers it, or of the typed array's element. */
function inferType(value: unknown): GgufType | null {
  if (typeof value === "string") return "STRING";
  if (typeof value === "boolean") return "BOOL";
  if (typeof value === "bigint") return value >= 2n ** 63n ? "UINT64" : "INT64";
  if (typeof value === "number") {
    if (!Number.isInteger(value)) return "FLOAT32";
    return value >= -(2 ** 31) && value < 2 ** 31 ? "INT32" : "INT64";
  }
  for (const [type, info] of Object.entries(NUMERIC)) {
    if (value instanceof (info.array as unknown as typeof Uint8Array)) return type as GgufType;
  }
  return null;
}

/** The element type of an array: a typed array's own; for numbers the narrowest of INT32, INT64, FLOAT32. */
function arrayType(items: ArrayLike<unknown>, first: unknown): GgufType {
  if (ArrayBuffer.isView(items)) return inferType(items) ?? "UINT8";
  if (Array.isArray(first)) return "ARRAY";
  if (typeof first !== "number") return inferType(first) ?? "INT32";
  const numbers = Array.from(items) as number[];
  if (!numbers.every(Number.isInteger)) return "FLOAT32";
  return numbers.every((n) => n >= -(2 ** 31) && n < 2 ** 31) ? "INT32" : "INT64";
}

function writeValue(
  op: string,
  out: Builder,
  key: string,
  value: unknown,
  given: GgufType | undefined,
): void {
  const isArray = Array.isArray(value) || (ArrayBuffer.isView(value) && !(value instanceof DataView));
  if (!isArray) {
    const type = given ?? inferType(value);
    if (type === null || type === "ARRAY") throw new TypeError(`${op}: metadata "${key}" has no GGUF type`);
    out.u32(TYPES.indexOf(type));
    out.scalar(op, key, type, value);
    return;
  }
  out.u32(TYPES.indexOf("ARRAY"));
  writeArray(op, out, key, value as ArrayLike<unknown>, given);
}

function writeArray(
  op: string,
  out: Builder,
  key: string,
  items: ArrayLike<unknown>,
  given?: GgufType,
): void {
  const first = items.length > 0 ? items[0] : undefined;
  const element = given ?? arrayType(items, first);
  out.u32(TYPES.indexOf(element));
  out.u64(BigInt(items.length));
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (element === "ARRAY") {
      if (!Array.isArray(item)) throw new TypeError(`${op}: metadata "${key}" mixes arrays and values`);
      writeArray(op, out, key, item);
    } else {
      out.scalar(op, key, element, item);
    }
  }
}

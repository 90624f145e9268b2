/**
 * safetensors, the format Hugging Face models ship in: an 8-byte little-endian header length N, N bytes of
 * JSON (`{"__metadata__": {...}, "name": {"dtype", "shape", "data_offsets": [begin, end]}}`, padded with
 * spaces), then the tensors' bytes, row-major and little-endian, offsets counted from the end of the header.
 * The reader checks what the reference (Rust) implementation checks: the header fits the file, the data ranges
 * tile the data section in order with no gap or overlap and each has its shape's size. The writer lays out the
 * file as the reference does (tensors ordered by dtype, widest first, then by name), so the same tensors give
 * the same bytes.
 *
 * @module
 */
import { type DType, dtypeInfo } from "../core/dtype.ts";
import { DTypeError } from "../core/errors.ts";
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
import { dtypeOf, shapeOf, sizeOf } from "../tensor.ts";

/** safetensors' names of the dtypes zigtensor has, in the order of the reference implementation's enum. */
const DTYPES: readonly (readonly [string, DType])[] = [
  ["BOOL", 9],
  ["U8", 2],
  ["I8", 3],
  ["I16", 5],
  ["U16", 4],
  ["F16", 10],
  ["BF16", 16],
  ["I32", 6],
  ["U32", 12],
  ["F32", 1],
  ["F64", 11],
  ["I64", 7],
  ["U64", 13],
];
const BY_NAME = new Map<string, DType>(DTYPES);
const RANK = new Map<DType, number>(DTYPES.map(([, dtype], i) => [dtype, i]));
const NAME_OF = new Map<DType, string>(DTYPES.map(([name, dtype]) => [dtype, name]));

/** The reference implementation refuses headers above 100 MB. */
const MAX_HEADER_BYTES = 100_000_000;

/** One tensor entry of a header, checked. */
interface Entry {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: number[];
  readonly begin: number;
  readonly end: number;
}

/**
 * Reads a safetensors file: every tensor, each read from the file straight into its own pool block (or the
 * given arena), by name in header order, and the `__metadata__` strings. The result is a
 * `Map<string, Tensor>` that fits `module.loadStateDict`; dispose it (or `using`) to free every tensor.
 * A corrupt or hostile file throws `TensorFileError` naming the defect before anything is allocated.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mkdtempSync, rmSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { io, Tensor } from "@zigtensor/zigtensor";
 * const dir = mkdtempSync(`${tmpdir()}/zt-`);
 * using w = Tensor.from([[1, 2], [3, 4]]);
 * io.saveSafetensors(`${dir}/model.safetensors`, { "linear.weight": w }, { format: "pt" });
 * using weights = io.loadSafetensors(`${dir}/model.safetensors`);
 * assert.deepEqual([...weights.keys()], ["linear.weight"]);
 * assert.deepEqual([...weights.get("linear.weight")!.toArray()], [1, 2, 3, 4]);
 * assert.equal(weights.metadata.format, "pt");
 * rmSync(dir, { recursive: true });
 * ```
 */
export function loadSafetensors(input: FileInput, options: CreateOptions = {}): TensorMap {
  using source = new ByteSource("safetensors", input);
  const { entries, metadata, dataStart } = readHeader(source);
  const tensors = new TensorMap(metadata);
  try {
    for (const { name, shape, dtype, begin, end } of entries) {
      tensors.set(name, readTensor(source, name, shape, dtype, dataStart + begin, end - begin, options));
    }
  } catch (error) {
    tensors.dispose();
    throw error;
  }
  return tensors;
}

/**
 * Writes tensors (a `Map` such as a state dict, or an object) to a safetensors file, with optional
 * `__metadata__` strings. Each tensor's bytes go from its storage to the file (a non-contiguous view is
 * copied row-major first). Q4_0/Q8_0 and blocked tensors are refused: safetensors has no such dtypes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mkdtempSync, readFileSync, rmSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { DType, io, Tensor } from "@zigtensor/zigtensor";
 * const dir = mkdtempSync(`${tmpdir()}/zt-`);
 * using bias = Tensor.from([0.5, -0.5], [2], { dtype: DType.BF16 });
 * io.saveSafetensors(`${dir}/b.safetensors`, new Map([["bias", bias]]));
 * using back = io.loadSafetensors(readFileSync(`${dir}/b.safetensors`));
 * assert.equal(back.get("bias")!.dtype, DType.BF16);
 * rmSync(dir, { recursive: true });
 * ```
 */
export function saveSafetensors(
  path: FilePath,
  tensors: NamedTensors,
  metadata?: Readonly<Record<string, string>>,
): void {
  const op = "saveSafetensors";
  const entries = namedEntries(op, tensors).map(([name, tensor]) => {
    if (name === "__metadata__") throw new TypeError(`${op}: "__metadata__" is reserved for the metadata`);
    const dtype = NAME_OF.get(dtypeOf(tensor));
    if (dtype === undefined) {
      throw new DTypeError(
        op,
        `tensor "${name}" is ${dtypeInfo(dtypeOf(tensor)).name}, which safetensors cannot hold; ` +
          `dequantize() it or use writeGguf`,
      );
    }
    return { name, tensor, dtype, rank: RANK.get(dtypeOf(tensor))! };
  });
  entries.sort((a, b) => b.rank - a.rank || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const header: Record<string, unknown> = {};
  if (metadata !== undefined) {
    for (const [key, value] of Object.entries(metadata)) {
      if (typeof value !== "string") {
        throw new TypeError(`${op}: metadata values must be strings; "${key}" is ${typeof value}`);
      }
    }
    header.__metadata__ = metadata;
  }
  let offset = 0;
  for (const { name, tensor, dtype } of entries) {
    const info = dtypeInfo(dtypeOf(tensor));
    const bytes = sizeOf(tensor) * info.blockBytes;
    setOwn(header, name, { dtype, shape: shapeOf(tensor), data_offsets: [offset, offset + bytes] });
    offset += bytes;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = new Uint8Array(json.length + ((8 - (json.length % 8)) % 8)).fill(0x20);
  padded.set(json);
  const prefix = new Uint8Array(8);
  new DataView(prefix.buffer).setBigUint64(0, BigInt(padded.length), true);
  using sink = new ByteSink(path);
  sink.write(prefix);
  sink.write(padded);
  for (const { name, tensor } of entries) withBytes(op, name, tensor, (bytes) => sink.write(bytes));
}

/** Parses and checks the header: every entry's dtype, shape and data range. */
function readHeader(
  source: ByteSource,
): { entries: Entry[]; metadata: Record<string, string>; dataStart: number } {
  const prefix = source.read(0, 8, "the 8-byte header length");
  const length = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (length > BigInt(MAX_HEADER_BYTES)) {
    if (length > BigInt(source.size)) {
      source.fail("truncated", `the header length ${length} is beyond the file's ${source.size} bytes`);
    }
    source.fail("header", `the header length ${length} exceeds the limit of ${MAX_HEADER_BYTES} bytes`);
  }
  const headerBytes = source.read(8, Number(length), `the ${length}-byte JSON header`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(headerBytes));
  } catch (error) {
    source.fail("header", `the header is not UTF-8 JSON: ${(error as Error).message}`, { cause: error });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    source.fail("header", "the header is not a JSON object");
  }
  const metadata: Record<string, string> = {};
  const entries: Entry[] = [];
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (name === "__metadata__") {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        source.fail("header", "__metadata__ is not an object of strings");
      }
      for (const [key, text] of Object.entries(value as Record<string, unknown>)) {
        if (typeof text !== "string") source.fail("header", `__metadata__ "${key}" is not a string`);
        setOwn(metadata, key, text);
      }
      continue;
    }
    entries.push(checkEntry(source, name, value));
  }
  checkRanges(source, entries, source.size - 8 - Number(length));
  return { entries, metadata, dataStart: 8 + Number(length) };
}

function checkEntry(source: ByteSource, name: string, value: unknown): Entry {
  const fields = value as { dtype?: unknown; shape?: unknown; data_offsets?: unknown } | null;
  if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
    source.fail("header", `tensor "${name}" is not an object with dtype, shape and data_offsets`);
  }
  const { dtype: dtypeName, shape, data_offsets: offsets } = fields;
  if (typeof dtypeName !== "string") source.fail("header", `tensor "${name}" has no dtype string`);
  const dtype = BY_NAME.get(dtypeName);
  if (dtype === undefined) {
    source.fail(
      "dtype",
      `tensor "${name}" has dtype ${JSON.stringify(dtypeName)}, which is not a safetensors dtype zigtensor ` +
        `has (${DTYPES.map(([n]) => n).join(", ")})`,
    );
  }
  if (!Array.isArray(shape) || !shape.every((d) => typeof d === "number")) {
    source.fail("shape", `tensor "${name}" has a shape that is not a list of integers`);
  }
  const bytes = checkFileShape(source, name, shape, dtype);
  if (
    !Array.isArray(offsets) || offsets.length !== 2 ||
    !offsets.every((o) => Number.isSafeInteger(o) && o >= 0) || offsets[0] > offsets[1]
  ) {
    source.fail(
      "offsets",
      `tensor "${name}" has data_offsets that are not [begin, end] with 0 <= begin <= end`,
    );
  }
  const [begin, end] = offsets as number[];
  if (end - begin !== bytes) {
    source.fail(
      "offsets",
      `tensor "${name}" has ${end - begin} bytes of data (data_offsets [${begin}, ${end}]) but its shape ` +
        `and dtype need ${bytes}`,
    );
  }
  return { name, dtype, shape, begin, end };
}

/** The data ranges must tile [0, dataBytes) in order: no gap, no overlap, nothing past the end. */
function checkRanges(source: ByteSource, entries: readonly Entry[], dataBytes: number): void {
  const sorted = [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let expected = 0;
  let previous = "the start of the data";
  for (const entry of sorted) {
    if (entry.begin < expected) {
      source.fail(
        "overlap",
        `tensor "${entry.name}" (bytes ${entry.begin} to ${entry.end}) overlaps ${previous} (ending at ${expected})`,
      );
    }
    if (entry.begin > expected) {
      source.fail(
        "offsets",
        `tensor "${entry.name}" starts at byte ${entry.begin}, leaving a gap after ${previous} (ending at ${expected})`,
      );
    }
    expected = entry.end;
    previous = `tensor "${entry.name}"`;
  }
  if (expected > dataBytes) {
    source.fail("truncated", `the tensors need ${expected} bytes of data, but the file holds ${dataBytes}`);
  }
  if (expected < dataBytes) {
    source.fail("offsets", `the file has ${dataBytes - expected} bytes after the last tensor's data`);
  }
}

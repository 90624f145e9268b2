import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BufferPool, io, Tensor, type TensorFileDefect, TensorFileError } from "../mod.ts";
import { fixture, withTempDir } from "./helpers/io_files.ts";
import { ByteSource } from "../src/io/source.ts";
import { readZipDirectory } from "../src/io/zip.ts";

/** Asserts that `read` throws a TensorFileError of `format` naming `defect` (and `text`, when given). */
function assertDefect(format: string, defect: TensorFileDefect, read: () => unknown, text?: RegExp): void {
  assert.throws(read, (error: unknown) => {
    assert.ok(error instanceof TensorFileError, `expected a TensorFileError, got ${String(error)}`);
    assert.equal(error.format, format);
    assert.equal(error.defect, defect, error.message);
    if (text !== undefined) assert.match(error.message, text);
    return true;
  });
}

const encoder = new TextEncoder();

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function u32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
}

function u64(n: bigint | number): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n), true);
  return b;
}

// --- safetensors ---------------------------------------------------------------------------------------------

/** A safetensors file: the header (JSON text or an object), `dataBytes` bytes of data, an optional length. */
function st(header: unknown, dataBytes: number, length?: bigint): Uint8Array {
  const json = encoder.encode(typeof header === "string" ? header : JSON.stringify(header));
  return concat(u64(length ?? BigInt(json.length)), json, new Uint8Array(dataBytes));
}

const F32x4 = (begin: number) => ({ dtype: "F32", shape: [4], data_offsets: [begin, begin + 16] });

test("safetensors: hostile headers are typed errors naming the defect", () => {
  const load = (bytes: Uint8Array) => () => io.loadSafetensors(bytes);
  using base = io.loadSafetensors(st({ a: F32x4(0) }, 16)); // the well-formed base
  assert.equal(base.get("a")!.size, 4);
  assertDefect("safetensors", "truncated", load(new Uint8Array(5)), /header length/);
  assertDefect("safetensors", "truncated", load(st({ a: F32x4(0) }, 16, 1000n)), /beyond|needs bytes/);
  assertDefect("safetensors", "truncated", load(st({}, 0, 2n ** 63n)), /beyond the file/);
  assertDefect("safetensors", "header", load(st("{abc", 0)), /not UTF-8 JSON/);
  assertDefect("safetensors", "header", load(st("[1, 2]", 0)), /not a JSON object/);
  assertDefect("safetensors", "header", load(st({ a: 5 }, 0)), /not an object/);
  assertDefect("safetensors", "header", load(st({ __metadata__: { n: 1 } }, 0)), /not a string/);
  assertDefect("safetensors", "dtype", load(st({ a: { ...F32x4(0), dtype: "F8_E4M3" } }, 16)), /F8_E4M3/);
  assertDefect("safetensors", "dtype", load(st({ a: { ...F32x4(0), dtype: "C64" } }, 16)), /C64/);
  const overflow = { dtype: "F32", shape: [65536, 65536], data_offsets: [0, 4 * 2 ** 32] };
  assertDefect("safetensors", "shape", load(st({ a: overflow }, 16)), /2\^31 - 1/);
  assertDefect("safetensors", "shape", load(st({ a: { ...F32x4(0), shape: [-4] } }, 16)));
  assertDefect("safetensors", "shape", load(st({ a: { ...F32x4(0), shape: "4" } }, 16)));
  assertDefect(
    "safetensors",
    "shape",
    load(st({ a: { ...F32x4(0), shape: [1, 1, 1, 1, 1, 1, 1, 1, 4] } }, 16)),
  );
  assertDefect(
    "safetensors",
    "overlap",
    load(st({ a: F32x4(0), b: F32x4(8) }, 24)),
    /"b".*overlaps tensor "a"/,
  );
  assertDefect("safetensors", "offsets", load(st({ a: F32x4(0), b: F32x4(20) }, 36)), /gap/);
  assertDefect(
    "safetensors",
    "offsets",
    load(st({ a: { ...F32x4(0), data_offsets: [0, 12] } }, 12)),
    /need 16/,
  );
  assertDefect("safetensors", "offsets", load(st({ a: { ...F32x4(0), data_offsets: [16, 0] } }, 16)));
  assertDefect("safetensors", "offsets", load(st({ a: { ...F32x4(0), data_offsets: [0, 2 ** 60] } }, 16)));
  assertDefect("safetensors", "truncated", load(st({ a: F32x4(0) }, 8)), /holds 8/);
  assertDefect("safetensors", "offsets", load(st({ a: F32x4(0) }, 20)), /4 bytes after/);
});

test("safetensors: a hostile file on disk is refused the same way, and nothing is allocated", () => {
  withTempDir((dir) => {
    const path = join(dir, "bad.safetensors");
    writeFileSync(path, st({ a: F32x4(0), b: F32x4(4) }, 20));
    const rented = BufferPool.default.stats().rentedBytes;
    assertDefect("safetensors", "overlap", () => io.loadSafetensors(path));
    assert.equal(BufferPool.default.stats().rentedBytes, rented);
    assert.throws(
      () => io.loadSafetensors(join(dir, "missing.safetensors")),
      /ENOENT|No such file|not found/i,
    );
  });
});

// --- .npy and .npz -------------------------------------------------------------------------------------------

/** A .npy file with header text `dict`, `dataBytes` bytes of data, and the version given. */
function npy(dict: string, dataBytes: number, options: { major?: number; length?: number } = {}): Uint8Array {
  const major = options.major ?? 1;
  const text = encoder.encode(dict + "\n");
  const length = major === 1 ? new Uint8Array(u32(options.length ?? text.length).subarray(0, 2)) : u32(
    options.length ?? text.length,
  );
  return concat(
    new Uint8Array([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, major, 0]),
    length,
    text,
    new Uint8Array(dataBytes),
  );
}

const dict = (descr: string, shape: string, fortran = "False") =>
  `{'descr': ${descr}, 'fortran_order': ${fortran}, 'shape': ${shape}, }`;

test("npy: hostile headers are typed errors naming the defect", () => {
  const read = (bytes: Uint8Array) => () => io.readNpy(bytes);
  using base = io.readNpy(npy(dict("'<f4'", "(2, 2)"), 16)); // the well-formed base
  assert.equal(base.get(1, 1), 0);
  assertDefect("npy", "magic", read(encoder.encode("PK\x03\x04 not numpy")), /NUMPY/);
  assertDefect("npy", "version", read(npy(dict("'<f4'", "(2,)"), 8, { major: 4 })), /version 4\.0/);
  assertDefect("npy", "truncated", read(npy(dict("'<f4'", "(2,)"), 8, { length: 60000 })), /header/);
  assertDefect("npy", "truncated", read(npy(dict("'<f4'", "(2,)"), 8, { major: 2, length: 2 ** 31 })));
  assertDefect("npy", "dtype", read(npy(dict("'<c8'", "(2,)"), 16)), /'<c8'/);
  assertDefect("npy", "dtype", read(npy(dict("'|O'", "(2,)"), 16)), /objects/);
  assertDefect("npy", "dtype", read(npy(dict("[('a', '<f4')]", "(2,)"), 8)), /structured/);
  assertDefect("npy", "shape", read(npy(dict("'<f4'", "(100000, 100000)"), 8)), /2\^31 - 1/);
  assertDefect("npy", "shape", read(npy(dict("'<f4'", "(-1,)"), 8)));
  assertDefect("npy", "shape", read(npy(dict("'<f4'", "(True,)"), 8)));
  assertDefect("npy", "header", read(npy("{'descr': '<f4', 'shape': (2,)}", 8)), /exactly/);
  assertDefect(
    "npy",
    "header",
    read(npy(dict("__import__('os').system('x')", "(2,)"), 8)),
    /unexpected value/,
  );
  assertDefect("npy", "header", read(npy(dict("'<f4'", "(2,)", "'yes'"), 8)));
  assertDefect("npy", "header", read(npy(dict("'<f4'", "((((((((((2,))))))))))"), 8)), /deeper/);
  assertDefect("npy", "header", read(npy(dict("'<f4'", "(99999999999999999999,)"), 8)), /too large/);
  assertDefect("npy", "truncated", read(npy(dict("'<f8'", "(3,)"), 16)), /data of array/);
});

/** The archive `base` with `patch` applied to a copy. */
function patched(base: Uint8Array, patch: (bytes: Uint8Array, view: DataView) => void): Uint8Array {
  const bytes = base.slice();
  patch(bytes, new DataView(bytes.buffer));
  return bytes;
}

test("npz: hostile archives are typed errors naming the defect", () => {
  const read = (bytes: Uint8Array) => () => io.readNpz(bytes);
  const stored = fixture("stored.npz");
  const compressed = fixture("compressed.npz");
  const members = readZipDirectory(new ByteSource("npz", stored));
  const eocd = stored.length - 22;
  const cdOffset = new DataView(stored.buffer).getUint32(eocd + 16, true);
  assertDefect(
    "npz",
    "magic",
    read(encoder.encode("not a zip archive at all, no")),
    /end-of-central-directory/,
  );
  assertDefect("npz", "magic", read(stored.subarray(0, stored.length - 1)));
  const x = members.find((m) => m.name === "x.npy")!;
  assertDefect(
    "npz",
    "checksum",
    read(patched(stored, (b) => b[x.dataStart + 130] ^= 1)),
    /CRC-32 of "x.npy"/,
  );
  assertDefect(
    "npz",
    "count",
    read(patched(stored, (_, v) => v.setUint16(eocd + 10, 0xfffe, true))),
    /entries/,
  );
  assertDefect(
    "npz",
    "truncated",
    read(patched(stored, (_, v) => v.setUint32(eocd + 16, stored.length - 10, true))),
    /central directory/,
  );
  assertDefect(
    "npz",
    "compression",
    read(patched(stored, (_, v) => v.setUint16(cdOffset + 10, 12, true))),
    /12/,
  );
  assertDefect(
    "npz",
    "compression",
    read(patched(stored, (_, v) => v.setUint16(cdOffset + 8, 1, true))),
    /encrypted/,
  );
  const deflated = readZipDirectory(new ByteSource("npz", compressed))[0];
  assertDefect(
    "npz",
    "compression",
    read(patched(compressed, (b) => b.fill(0xff, deflated.dataStart, deflated.dataStart + 8))),
    /inflate/,
  );
  // A member whose declared size runs past the archive.
  assertDefect(
    "npz",
    "truncated",
    read(patched(stored, (_, v) => v.setUint32(cdOffset + 20, 1 << 30, true))),
  );
});

test("npz: a member name repeated in the central directory is a duplicate", () => {
  using a = Tensor.zeros([2]);
  withTempDir((dir) => {
    const path = join(dir, "dup.npz");
    io.writeNpz(path, { a, b: a });
    const bytes = new Uint8Array(readFileSync(path));
    const cdOffset = new DataView(bytes.buffer).getUint32(bytes.length - 22 + 16, true);
    const name = bytes.lastIndexOf(0x62); // the "b" of the second central name, "b.npy"
    assert.ok(name > cdOffset);
    bytes[name] = 0x61;
    assertDefect("npz", "duplicate", () => io.readNpz(bytes), /"a.npy" twice/);
  });
});

// --- GGUF ----------------------------------------------------------------------------------------------------

interface GgufTensorSpec {
  name: string;
  dims: (number | bigint)[];
  type: number;
  offset: number | bigint;
}

/** A GGUF file from raw parts; counts default to the parts' lengths. */
function gguf(parts: {
  magic?: string;
  version?: number;
  tensorCount?: bigint;
  kvCount?: bigint;
  kv?: Uint8Array[];
  tensors?: GgufTensorSpec[];
  dataBytes?: number;
}): Uint8Array {
  const kv = parts.kv ?? [];
  const tensors = parts.tensors ?? [];
  const infos = tensors.map((t) =>
    concat(
      ggufString(t.name),
      u32(t.dims.length),
      ...t.dims.map((d) => u64(d)),
      u32(t.type),
      u64(t.offset),
    )
  );
  const header = concat(
    encoder.encode(parts.magic ?? "GGUF"),
    u32(parts.version ?? 3),
    u64(parts.tensorCount ?? BigInt(tensors.length)),
    u64(parts.kvCount ?? BigInt(kv.length)),
    ...kv,
    ...infos,
  );
  const padded = Math.ceil(header.length / 32) * 32;
  return concat(header, new Uint8Array(padded - header.length + (parts.dataBytes ?? 0)));
}

function ggufString(s: string, length?: bigint): Uint8Array {
  const b = encoder.encode(s);
  return concat(u64(length ?? BigInt(b.length)), b);
}

/** A key/value pair: the key, the type code and the value's bytes. */
function kv(key: string, type: number, value: Uint8Array): Uint8Array {
  return concat(ggufString(key), u32(type), value);
}

const f32x8 = (name: string, offset: number | bigint = 0): GgufTensorSpec => ({
  name,
  dims: [8],
  type: 0,
  offset,
});

test("gguf: hostile headers are typed errors naming the defect", () => {
  const read = (bytes: Uint8Array) => () => io.readGguf(bytes);
  using base = io.readGguf(gguf({ tensors: [f32x8("a")], dataBytes: 32 })); // the well-formed base
  assert.deepEqual([...base.get("a")!.shape], [8]);
  assertDefect("gguf", "magic", read(gguf({ magic: "GGUG" })));
  assertDefect("gguf", "truncated", read(new Uint8Array([0x47, 0x47])));
  assertDefect("gguf", "version", read(gguf({ version: 1 })), /version 1/);
  assertDefect("gguf", "count", read(gguf({ tensorCount: 2n ** 40n })), /tensor count/);
  assertDefect("gguf", "count", read(gguf({ kvCount: 2n ** 64n - 1n })), /key\/value count/);
  assertDefect(
    "gguf",
    "count",
    read(gguf({ kv: [concat(ggufString("k", 2n ** 50n))] })),
    /length of a metadata key/,
  );
  assertDefect(
    "gguf",
    "header",
    read(gguf({ kv: [kv("k", 99, new Uint8Array(8))] })),
    /not a GGUF value type/,
  );
  const hugeArray = kv("k", 9, concat(u32(4), u64(2n ** 50n)));
  assertDefect("gguf", "count", read(gguf({ kv: [hugeArray] })), /array "k"/);
  let deep = concat(u32(4), u64(0));
  for (let i = 0; i < 10; i++) deep = concat(u32(9), u64(1), deep);
  assertDefect("gguf", "header", read(gguf({ kv: [kv("k", 9, deep)] })), /deeper/);
  const dupKey = kv("k", 7, new Uint8Array([1]));
  assertDefect("gguf", "duplicate", read(gguf({ kv: [dupKey, dupKey] })), /"k" appears twice/);
  assertDefect("gguf", "header", read(gguf({ kv: [kv("general.alignment", 4, u32(48))] })), /power of two/);
  assertDefect("gguf", "header", read(gguf({ kv: [kv("general.alignment", 5, u32(64))] })), /UINT32/);
  const t = (spec: Partial<GgufTensorSpec>, dataBytes = 32) =>
    read(gguf({ tensors: [{ ...f32x8("a"), ...spec }], dataBytes }));
  assertDefect("gguf", "shape", t({ dims: [1, 1, 1, 1, 8] }), /5 dimensions/);
  assertDefect("gguf", "shape", t({ dims: [2n ** 40n] }), /2\^31 - 1/);
  assertDefect("gguf", "shape", t({ dims: [65536, 65536] }), /2\^31 - 1/);
  assertDefect("gguf", "shape", t({ dims: [2n ** 64n - 1n] }));
  assertDefect("gguf", "shape", t({ type: 8, dims: [16] }), /whole blocks of 32/);
  assertDefect("gguf", "dtype", t({ type: 12 }), /Q4_K/);
  assertDefect("gguf", "dtype", t({ type: 1000 }), /unknown \(1000\)/);
  assertDefect("gguf", "offsets", t({ offset: 4 }, 64), /not a multiple of 32/);
  assertDefect("gguf", "truncated", t({ offset: 2n ** 62n }), /beyond the file/);
  assertDefect("gguf", "truncated", t({ offset: 32 }), /data of tensor "a"/);
  assertDefect("gguf", "truncated", t({}, 16), /data of tensor "a"/);
  assertDefect(
    "gguf",
    "overlap",
    read(gguf({ tensors: [{ ...f32x8("a"), dims: [16] }, f32x8("b", 32)], dataBytes: 64 })),
    /"b".*overlaps tensor "a"/,
  );
  assertDefect(
    "gguf",
    "duplicate",
    read(gguf({ tensors: [f32x8("a"), f32x8("a", 32)], dataBytes: 64 })),
    /twice/,
  );
});

// --- fuzz ----------------------------------------------------------------------------------------------------

/** mulberry32: a small seeded generator, so a failing mutant can be reproduced from its seed. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** One mutant of `base`: flipped bytes, a truncation, or an extreme integer written into the header region. */
function mutate(base: Uint8Array, random: () => number): Uint8Array {
  const pick = (n: number) => Math.floor(random() * n);
  const kind = pick(3);
  if (kind === 1) return base.slice(0, pick(base.length));
  const bytes = base.slice();
  if (kind === 0) {
    for (let i = 1 + pick(4); i > 0; i--) bytes[pick(bytes.length)] ^= 1 << pick(8);
    return bytes;
  }
  const width = [1, 2, 4, 8][pick(4)];
  const at = pick(Math.max(1, Math.min(bytes.length, 512) - width));
  const extreme = [0x00, 0xff, 0x7f, 0x80][pick(4)];
  bytes.fill(extreme, at, at + width);
  if (random() < 0.5) bytes[at] = pick(256);
  return bytes;
}

test("fuzz: mutated files of every format load or throw TensorFileError, nothing else", () => {
  const readers: [string, (bytes: Uint8Array) => { dispose(): void }][] = [
    ["all_dtypes.safetensors", (b) => io.loadSafetensors(b)],
    ["writer.safetensors", (b) => io.loadSafetensors(b)],
    ["f8_fortran.npy", (b) => io.readNpy(b)],
    ["i4_big_endian.npy", (b) => io.readNpy(b)],
    ["stored.npz", (b) => io.readNpz(b)],
    ["compressed.npz", (b) => io.readNpz(b)],
    ["model.gguf", (b) => io.readGguf(b)],
    ["aligned64.gguf", (b) => io.readGguf(b)],
  ];
  const rented = BufferPool.default.stats().rentedBytes;
  for (const [file, read] of readers) {
    const base = fixture(file);
    const outcomes = { loaded: 0, refused: 0 };
    for (let seed = 1; seed <= 200; seed++) {
      const mutant = mutate(base, generator(seed * 7919 + base.length));
      try {
        read(mutant).dispose();
        outcomes.loaded++;
      } catch (error) {
        if (!(error instanceof TensorFileError)) {
          assert.fail(
            `${file}, seed ${seed}: expected a TensorFileError, got ${(error as Error)?.stack ?? error}`,
          );
        }
        outcomes.refused++;
      }
    }
    assert.ok(outcomes.refused >= 20, `${file}: ${JSON.stringify(outcomes)}`);
  }
  assert.equal(BufferPool.default.stats().rentedBytes, rented, "every tensor of a refused file was released");
});

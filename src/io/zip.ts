/**
 * The parts of the ZIP format that `.npz` uses: the central directory (with ZIP64 records, which NumPy writes
 * for every member), stored and deflated members, and CRC-32. Reading checks every count, size and offset
 * against the file before it is used; writing produces a plain archive with fixed timestamps, so the same
 * tensors give the same bytes.
 *
 * @module
 */
import * as zlib from "node:zlib";
import type { ByteSource } from "./source.ts";

/** One member of an archive, located and checked. */
export interface ZipMember {
  readonly name: string;
  /** 0 stored, 8 deflated. */
  readonly method: number;
  readonly crc32: number;
  readonly compressedSize: number;
  readonly size: number;
  /** Where the member's data starts in the archive. */
  readonly dataStart: number;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

/** Reads and checks the central directory and every member's local header. */
export function readZipDirectory(source: ByteSource): ZipMember[] {
  if (source.size < 22) source.fail("magic", `the file has ${source.size} bytes, too few for a ZIP archive`);
  const tailLength = Math.min(source.size, 22 + 0xffff);
  const tail = source.read(source.size - tailLength, tailLength, "the end of the archive");
  const tailView = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  let at = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tailView.getUint32(i, true) === EOCD && i + 22 + tailView.getUint16(i + 20, true) <= tail.length) {
      at = i;
      break;
    }
  }
  if (at < 0) source.fail("magic", "no ZIP end-of-central-directory record: not an .npz archive");
  const eocdPosition = source.size - tailLength + at;
  if (tailView.getUint16(at + 4, true) !== 0 || tailView.getUint16(at + 6, true) !== 0) {
    source.fail("header", "the archive spans several disks");
  }
  let count = tailView.getUint16(at + 10, true);
  let cdSize = tailView.getUint32(at + 12, true);
  let cdOffset = tailView.getUint32(at + 16, true);
  if (
    eocdPosition >= 20 &&
    (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff ||
      u32(source.read(eocdPosition - 20, 4, "the ZIP64 locator"), 0) === ZIP64_LOCATOR)
  ) {
    const locator = source.read(eocdPosition - 20, 20, "the ZIP64 locator");
    if (u32(locator, 0) === ZIP64_LOCATOR) {
      const recordAt = u64(source, locator, 8, "the ZIP64 end record offset");
      const record = source.read(recordAt, 56, "the ZIP64 end-of-central-directory record");
      if (u32(record, 0) !== ZIP64_EOCD) source.fail("header", "the ZIP64 locator points to no ZIP64 record");
      count = u64(source, record, 32, "the ZIP64 entry count");
      cdSize = u64(source, record, 40, "the ZIP64 central directory size");
      cdOffset = u64(source, record, 48, "the ZIP64 central directory offset");
    }
  }
  const directory = source.read(cdOffset, cdSize, "the central directory");
  if (count * 46 > cdSize) {
    source.fail("count", `${count} entries cannot fit a ${cdSize}-byte central directory`);
  }
  const members: ZipMember[] = [];
  const names = new Set<string>();
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + 46 > directory.length || u32(directory, p) !== CENTRAL) {
      source.fail("header", `central directory entry ${i} is malformed`);
    }
    const member = readCentralEntry(source, directory, p, i);
    if (names.has(member.entry.name)) {
      source.fail("duplicate", `the archive holds "${member.entry.name}" twice`);
    }
    names.add(member.entry.name);
    members.push(member.entry);
    p = member.next;
  }
  checkMemberRanges(source, members);
  return members;
}

function readCentralEntry(
  source: ByteSource,
  directory: Uint8Array,
  p: number,
  index: number,
): { entry: ZipMember; next: number } {
  const view = new DataView(directory.buffer, directory.byteOffset + p);
  const flags = view.getUint16(8, true);
  const method = view.getUint16(10, true);
  const crc32 = view.getUint32(16, true);
  let compressedSize = view.getUint32(20, true);
  let size = view.getUint32(24, true);
  const nameLength = view.getUint16(28, true);
  const extraLength = view.getUint16(30, true);
  const commentLength = view.getUint16(32, true);
  let localOffset = view.getUint32(42, true);
  const next = p + 46 + nameLength + extraLength + commentLength;
  if (next > directory.length) source.fail("truncated", `central directory entry ${index} runs past its end`);
  const nameBytes = directory.subarray(p + 46, p + 46 + nameLength);
  const name = new TextDecoder((flags & 0x800) !== 0 ? "utf-8" : "latin1").decode(nameBytes);
  if ((flags & 1) !== 0) source.fail("compression", `"${name}" is encrypted`);
  if (method !== 0 && method !== 8) {
    source.fail(
      "compression",
      `"${name}" uses compression method ${method}; zigtensor reads stored (0) and deflate (8)`,
    );
  }
  // ZIP64 extra field: the 64-bit values of the fields stored as 0xFFFFFFFF, in this order.
  let e = p + 46 + nameLength;
  const extraEnd = e + extraLength;
  while (e + 4 <= extraEnd) {
    const id = u16(directory, e);
    const length = u16(directory, e + 2);
    if (e + 4 + length > extraEnd) source.fail("header", `the extra field of "${name}" runs past its end`);
    if (id === 0x0001) {
      let f = e + 4;
      const take = (what: string) => {
        if (f + 8 > e + 4 + length) source.fail("header", `the ZIP64 field of "${name}" lacks ${what}`);
        const value = u64(source, directory, f, `the ZIP64 ${what} of "${name}"`);
        f += 8;
        return value;
      };
      if (size === 0xffffffff) size = take("size");
      if (compressedSize === 0xffffffff) compressedSize = take("compressed size");
      if (localOffset === 0xffffffff) localOffset = take("offset");
    }
    e += 4 + length;
  }
  const local = source.read(localOffset, 30, `the local header of "${name}"`);
  if (u32(local, 0) !== LOCAL) source.fail("header", `the local header of "${name}" is missing`);
  const dataStart = localOffset + 30 + u16(local, 26) + u16(local, 28);
  source.check(dataStart, compressedSize, `the data of "${name}"`);
  if (method === 0 && compressedSize !== size) {
    source.fail("header", `"${name}" is stored but its sizes differ (${compressedSize} and ${size})`);
  }
  return { entry: { name, method, crc32, compressedSize, size, dataStart }, next };
}

function checkMemberRanges(source: ByteSource, members: readonly ZipMember[]): void {
  const sorted = [...members].sort((a, b) => a.dataStart - b.dataStart);
  for (let i = 1; i < sorted.length; i++) {
    const before = sorted[i - 1];
    if (sorted[i].dataStart < before.dataStart + before.compressedSize) {
      source.fail("overlap", `the data of "${sorted[i].name}" overlaps that of "${before.name}"`);
    }
  }
}

function u16(bytes: Uint8Array, at: number): number {
  return bytes[at] | (bytes[at + 1] << 8);
}

function u32(bytes: Uint8Array, at: number): number {
  return (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24)) >>> 0;
}

/** A little-endian u64 that must be a safe integer (anything larger is beyond any file). */
function u64(source: ByteSource, bytes: Uint8Array, at: number, what: string): number {
  const value = u32(bytes, at) + u32(bytes, at + 4) * 2 ** 32;
  if (!Number.isSafeInteger(value)) source.fail("count", `${what} is ${value}, beyond any file`);
  return value;
}

/** CRC-32 of the concatenation of `parts` (ZIP's checksum), by `node:zlib` in both runtimes. */
export function crc32(...parts: Uint8Array[]): number {
  let c = 0;
  for (const bytes of parts) c = zlib.crc32(bytes, c);
  return c;
}

/** One member as written: its name and where its local header is. */
export interface WrittenMember {
  readonly name: Uint8Array;
  readonly utf8: boolean;
  readonly method: number;
  readonly crc32: number;
  readonly compressedSize: number;
  readonly size: number;
  readonly offset: number;
}

/** DOS date of 1980-01-01, the fixed timestamp of every member. */
const DOS_DATE = (1 << 5) | 1;

/** A local file header for `member`. */
export function localHeader(member: WrittenMember): Uint8Array {
  const out = new Uint8Array(30 + member.name.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, LOCAL, true);
  view.setUint16(4, 20, true);
  view.setUint16(6, member.utf8 ? 0x800 : 0, true);
  view.setUint16(8, member.method, true);
  view.setUint16(12, DOS_DATE, true);
  view.setUint32(14, member.crc32, true);
  view.setUint32(18, member.compressedSize, true);
  view.setUint32(22, member.size, true);
  view.setUint16(26, member.name.length, true);
  out.set(member.name, 30);
  return out;
}

/** The central directory and end record for `members`, the directory starting at `offset`. */
export function centralDirectory(members: readonly WrittenMember[], offset: number): Uint8Array {
  const size = members.reduce((sum, m) => sum + 46 + m.name.length, 0);
  const out = new Uint8Array(size + 22);
  const view = new DataView(out.buffer);
  let p = 0;
  for (const m of members) {
    view.setUint32(p, CENTRAL, true);
    view.setUint16(p + 4, 0x0314, true); // made by: Unix, ZIP 2.0
    view.setUint16(p + 6, 20, true);
    view.setUint16(p + 8, m.utf8 ? 0x800 : 0, true);
    view.setUint16(p + 10, m.method, true);
    view.setUint16(p + 14, DOS_DATE, true);
    view.setUint32(p + 16, m.crc32, true);
    view.setUint32(p + 20, m.compressedSize, true);
    view.setUint32(p + 24, m.size, true);
    view.setUint16(p + 28, m.name.length, true);
    view.setUint32(p + 38, 0o644 << 16, true);
    view.setUint32(p + 42, m.offset, true);
    out.set(m.name, p + 46);
    p += 46 + m.name.length;
  }
  view.setUint32(p, EOCD, true);
  view.setUint16(p + 8, members.length, true);
  view.setUint16(p + 10, members.length, true);
  view.setUint32(p + 12, size, true);
  view.setUint32(p + 16, offset, true);
  return out;
}

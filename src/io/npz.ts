/**
 * NumPy's `.npz`: a ZIP archive of `.npy` members named `<key>.npy`, stored (`np.savez`) or deflated
 * (`np.savez_compressed`). Stored members are read like `.npy` files, straight from the archive into pool
 * memory; deflated ones are inflated (to their declared size, no further) and then copied in. Every member's
 * CRC-32 is checked.
 *
 * @module
 */
import * as zlib from "node:zlib";
import { MAX_BYTES } from "../core/shape.ts";
import type { CreateOptions } from "../tensor.ts";
import { npyDescr, npyParts, readNpySource } from "./npy.ts";
import {
  ByteSink,
  ByteSource,
  type FileInput,
  type FilePath,
  namedEntries,
  type NamedTensors,
  TensorMap,
} from "./source.ts";
import {
  centralDirectory,
  crc32,
  localHeader,
  readZipDirectory,
  type WrittenMember,
  type ZipMember,
} from "./zip.ts";

/** Options of `writeNpz`. */
export interface WriteNpzOptions {
  /**
   * Deflate every member, as `np.savez_compressed` does; otherwise store them, as `np.savez` does.
   * @default false
   */
  readonly compress?: boolean;
}

/**
 * Reads every `.npy` member of an `.npz` archive (a path or the file's bytes) into tensors keyed by the member
 * name without `.npy`, as `np.load(...)[key]` names them; other members are skipped. Dispose the map (or
 * `using`) to free every tensor. A corrupt archive throws `TensorFileError` naming the defect.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mkdtempSync, rmSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { io, Tensor } from "@zigtensor/zigtensor";
 * const dir = mkdtempSync(`${tmpdir()}/zt-`);
 * using x = Tensor.from([[1, 2], [3, 4]]);
 * using y = Tensor.from(new Int32Array([7, 8]));
 * io.writeNpz(`${dir}/data.npz`, { x, y }, { compress: true });
 * using data = io.readNpz(`${dir}/data.npz`);
 * assert.deepEqual([...data.keys()], ["x", "y"]);
 * assert.deepEqual([...data.get("y")!.toArray()], [7, 8]);
 * rmSync(dir, { recursive: true });
 * ```
 */
export function readNpz(input: FileInput, options: CreateOptions = {}): TensorMap<Record<string, never>> {
  using source = new ByteSource("npz", input);
  const members = readZipDirectory(source).filter((m) => m.name.endsWith(".npy"));
  const tensors = new TensorMap<Record<string, never>>({});
  try {
    for (const member of members) {
      const key = member.name.slice(0, -4);
      using npy = memberSource(source, member);
      const check = (header: Uint8Array, data: Uint8Array, rest: Uint8Array) => {
        if (crc32(header, data, rest) !== member.crc32) {
          source.fail("checksum", `the CRC-32 of "${member.name}" does not match its data`);
        }
      };
      tensors.set(key, readNpySource(npy, member.name, options, check));
    }
  } catch (error) {
    tensors.dispose();
    throw error;
  }
  return tensors;
}

/**
 * Writes tensors (a `Map` or an object) to an `.npz` archive, each as `<name>.npy` with NumPy's exact `.npy`
 * bytes, stored or (with `compress`) deflated; timestamps are fixed, so the same tensors give the same file.
 * Archives beyond 4 GiB (ZIP64) are not written.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mkdtempSync, rmSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { io, Tensor } from "@zigtensor/zigtensor";
 * const dir = mkdtempSync(`${tmpdir()}/zt-`);
 * using w = Tensor.from([0.25, 0.5]);
 * io.writeNpz(`${dir}/w.npz`, new Map([["w", w]]));
 * using back = io.readNpz(`${dir}/w.npz`);
 * assert.equal(back.get("w")!.get(1), 0.5);
 * rmSync(dir, { recursive: true });
 * ```
 */
export function writeNpz(path: FilePath, tensors: NamedTensors, options: WriteNpzOptions = {}): void {
  const op = "writeNpz";
  const entries = namedEntries(op, tensors);
  for (const [name, tensor] of entries) npyDescr(op, name, tensor); // refuse before the file is opened
  const written: WrittenMember[] = [];
  const encoder = new TextEncoder();
  using sink = new ByteSink(path);
  for (const [name, tensor] of entries) {
    const fileName = `${name}.npy`;
    npyParts(op, name, tensor, (header, bytes) => {
      const size = header.length + bytes.length;
      const checksum = crc32(header, bytes);
      const deflated = options.compress === true ? zlib.deflateRawSync(concat(header, bytes)) : null;
      const member: WrittenMember = {
        name: encoder.encode(fileName),
        utf8: /[^\x20-\x7e]/.test(fileName),
        method: deflated === null ? 0 : 8,
        crc32: checksum,
        compressedSize: deflated === null ? size : deflated.length,
        size,
        offset: sink.position,
      };
      if (member.offset + 30 + member.name.length + member.compressedSize > 0xffffffff) {
        throw new RangeError(
          `${op}: the archive would pass 4 GiB at "${name}"; ZIP64 archives are not written`,
        );
      }
      written.push(member);
      sink.write(localHeader(member));
      if (deflated === null) {
        sink.write(header);
        sink.write(bytes);
      } else {
        sink.write(deflated);
      }
    });
  }
  if (written.length > 0xffff) throw new RangeError(`${op}: a ZIP archive holds at most 65535 members`);
  sink.write(centralDirectory(written, sink.position));
}

/** The member's `.npy` bytes as a source: a window of the archive when stored, the inflated bytes otherwise. */
function memberSource(source: ByteSource, member: ZipMember): ByteSource {
  const name = `${source.name}:${member.name}`;
  if (member.method === 0) {
    return source.slice(member.dataStart, member.size, name, `the data of "${member.name}"`);
  }
  // A .npy member holds one tensor (at most 2^31 - 1 bytes) and a header (at most 1 MiB + 12 bytes).
  if (member.size > MAX_BYTES + (1 << 20) + 12) {
    source.fail(
      "count",
      `"${member.name}" declares ${member.size} bytes when inflated, more than one tensor can hold`,
    );
  }
  const compressed = source.read(member.dataStart, member.compressedSize, `the data of "${member.name}"`);
  let bytes: Uint8Array;
  try {
    bytes = zlib.inflateRawSync(compressed, { maxOutputLength: Math.max(member.size, 1) });
  } catch (error) {
    source.fail("compression", `"${member.name}" does not inflate to its declared ${member.size} bytes`, {
      cause: error,
    });
  }
  if (bytes.length !== member.size) {
    source.fail(
      "compression",
      `"${member.name}" inflates to ${bytes.length} bytes, not its declared ${member.size}`,
    );
  }
  return new ByteSource("npz", new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length), name);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

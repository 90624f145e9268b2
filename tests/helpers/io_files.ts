/**
 * Shared by the tensor-file tests: the fixtures written by tests/fixtures/make_io_fixtures.py, their expected
 * values, a temporary directory, and the row-major bytes of a tensor.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Tensor } from "../../mod.ts";

/** The fixture folder. */
export const FIXTURES: string = fileURLToPath(new URL("../fixtures/io/", import.meta.url));

/** One tensor as the Python library read it back. */
export interface ExpectedTensor {
  readonly dtype: string;
  readonly shape: number[];
  /** Little-endian row-major bytes, hex. */
  readonly hex: string;
}

/** GGUF metadata as gguf.GGUFReader read it: integers as decimal strings. */
export interface ExpectedField {
  readonly types: string[];
  readonly value: unknown;
}

/** expected.json: per file, per tensor (and GGUF `__metadata__`). */
export const EXPECTED: Record<string, Record<string, ExpectedTensor>> = JSON.parse(
  readFileSync(join(FIXTURES, "expected.json"), "utf-8"),
);

/** The bytes of a fixture file. */
export function fixture(name: string): Uint8Array {
  return new Uint8Array(readFileSync(join(FIXTURES, name)));
}

/** Runs `fn` with a fresh temporary directory, removed afterwards. */
export function withTempDir<T>(fn: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), "zt-io-"));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Hex of a tensor's row-major bytes (a copy for a strided view). */
export function rowMajorHex(t: Tensor): string {
  const packed = t.contiguous();
  try {
    const data = packed.data();
    return toHex(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  } finally {
    if (packed !== t) packed.dispose();
  }
}

/** Lowercase hex of bytes. */
export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/** The first index where `a` and `b` differ, or -1. */
export function firstDiff(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

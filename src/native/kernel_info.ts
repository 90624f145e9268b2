/**
 * What the native library reports about itself.
 *
 * @module
 */
import { ffi } from "./runtime.ts";
import { type IsaName, library } from "./library.ts";

/** The native library in use: its kernel variant, what it holds, and where it was loaded from. */
export interface KernelInfo {
  /** The variant selected at load: the best the CPU runs, or the one `ZIGTENSOR_ISA` forced. */
  readonly isa: IsaName;
  /** The variants compiled into the library. */
  readonly variants: readonly IsaName[];
  /** The variants this CPU (and OS) can run. */
  readonly supported: readonly IsaName[];
  /** The default thread count of the kernels. */
  readonly threads: number;
  /** Whether this is the CHECKED build (poisoned memory, canaries). */
  readonly checked: boolean;
  /** The path the library was loaded from. */
  readonly path: string;
  /** The JavaScript runtime: "deno" or "bun". */
  readonly runtime: "deno" | "bun";
}

/** The default thread count: the machine's hardware threads. */
export function hardwareThreads(): number {
  return Math.max(
    1,
    (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1,
  );
}

/**
 * Reports the selected ISA, the variants the library holds, the thread count, the CHECKED flag and the path.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { kernelInfo } from "@zigtensor/zigtensor";
 * const info = kernelInfo();
 * assert.ok(info.variants.includes(info.isa) && info.supported.includes(info.isa));
 * ```
 */
export function kernelInfo(): KernelInfo {
  return {
    isa: library.isa,
    variants: library.compiled,
    supported: library.supported,
    threads: hardwareThreads(),
    checked: library.checked,
    path: library.path,
    runtime: ffi.runtime,
  };
}

/**
 * The two runtime dialects of FFI behind one interface: `Deno.dlopen` and `bun:ffi`. Everything else in
 * zigtensor talks to `ffi` and never to a runtime directly.
 *
 * @module
 */
import type { NativePointer, NativeSymbols, NativeType } from "./symbols.ts";
import { symbols } from "./symbols.ts";

/** What zigtensor needs from a runtime's FFI. */
export interface Ffi {
  /** "deno" or "bun". */
  readonly runtime: "deno" | "bun";
  /** Opens the library and binds every symbol of the neutral table. */
  open(path: string): NativeSymbols;
  /** An ArrayBuffer over `byteLength` bytes of native memory at `pointer`, no copy. */
  arrayBuffer(pointer: NativePointer, byteLength: number): ArrayBuffer;
  /** The address of a typed array's memory, for passing a JS buffer where the C side wants a pointer. */
  pointerOf(view: ArrayBufferView): NativePointer;
  /** The address as a number (for alignment checks and diagnostics). */
  address(pointer: NativePointer): number;
}

interface DenoFfiApi {
  dlopen(path: string, symbols: Record<string, { parameters: string[]; result: string }>): {
    symbols: Record<string, (...args: unknown[]) => unknown>;
  };
  UnsafePointerView: { getArrayBuffer(pointer: unknown, byteLength: number): ArrayBuffer };
  UnsafePointer: { of(view: ArrayBufferView): unknown; value(pointer: unknown): number | bigint };
}

interface BunFfiApi {
  dlopen(path: string, symbols: Record<string, { args: string[]; returns: string }>): {
    symbols: Record<string, (...args: unknown[]) => unknown>;
  };
  toArrayBuffer(pointer: number, byteOffset: number, byteLength: number): ArrayBuffer;
  ptr(view: ArrayBufferView): number;
}

const denoTypes: Record<NativeType, string> = {
  ptr: "pointer",
  i32: "i32",
  u32: "u32",
  f32: "f32",
  f64: "f64",
  void: "void",
};

const bunTypes: Record<NativeType, string> = {
  ptr: "ptr",
  i32: "i32",
  u32: "u32",
  f32: "f32",
  f64: "f64",
  void: "void",
};

function denoFfi(deno: DenoFfiApi): Ffi {
  return {
    runtime: "deno",
    open(path) {
      const spec: Record<string, { parameters: string[]; result: string }> = {};
      for (const [name, s] of Object.entries(symbols)) {
        spec[name] = { parameters: s.parameters.map((t) => denoTypes[t]), result: denoTypes[s.result] };
      }
      return deno.dlopen(path, spec).symbols as unknown as NativeSymbols;
    },
    arrayBuffer: (pointer, byteLength) =>
      byteLength === 0 ? new ArrayBuffer(0) : deno.UnsafePointerView.getArrayBuffer(pointer, byteLength),
    pointerOf: (view) => deno.UnsafePointer.of(view) as NativePointer,
    address: (pointer) => Number(deno.UnsafePointer.value(pointer)),
  };
}

function bunFfi(bun: BunFfiApi): Ffi {
  return {
    runtime: "bun",
    open(path) {
      const spec: Record<string, { args: string[]; returns: string }> = {};
      for (const [name, s] of Object.entries(symbols)) {
        spec[name] = { args: s.parameters.map((t) => bunTypes[t]), returns: bunTypes[s.result] };
      }
      return bun.dlopen(path, spec).symbols as unknown as NativeSymbols;
    },
    // Bun refuses a zero-length view of native memory.
    arrayBuffer: (pointer, byteLength) =>
      byteLength === 0 ? new ArrayBuffer(0) : bun.toArrayBuffer(pointer as unknown as number, 0, byteLength),
    pointerOf: (view) => bun.ptr(view) as unknown as NativePointer,
    address: (pointer) => pointer as unknown as number,
  };
}

async function detect(): Promise<Ffi> {
  const global = globalThis as { Deno?: DenoFfiApi; Bun?: unknown };
  if (global.Bun !== undefined) {
    // A computed specifier keeps Deno's type checker from resolving a Bun-only module.
    const specifier = "bun:ffi";
    return bunFfi(await import(specifier) as BunFfiApi);
  }
  if (global.Deno !== undefined) return denoFfi(global.Deno);
  throw new Error("zigtensor runs on Deno or Bun: neither Deno.dlopen nor bun:ffi is available");
}

/** The FFI of the runtime this module runs in. */
export const ffi: Ffi = await detect();

interface DenoEnvApi {
  permissions: { querySync(descriptor: { name: "env"; variable: string }): { state: string } };
  env: { get(name: string): string | undefined };
}

/**
 * An environment variable, or undefined. In Deno a variable the process may not read (no `--allow-env` for
 * it) counts as unset, without a prompt, as `@db/sqlite` does.
 */
export function env(name: string): string | undefined {
  const deno = (globalThis as { Deno?: DenoEnvApi }).Deno;
  if (deno !== undefined) {
    if (deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") return undefined;
    return deno.env.get(name);
  }
  const process = (globalThis as { process?: { env: Record<string, string | undefined> } }).process;
  return process?.env[name];
}

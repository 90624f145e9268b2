/**
 * Loading and checking libzigtensor. `locate.ts` finds the file (`ZIGTENSOR_LIB`, the npm platform package,
 * the file shipped with the package, a checkout's build); a missing file, a checksum mismatch, an ABI version
 * other than this binding's, or a forced ISA the CPU cannot run throws `NativeLibraryError` at load.
 *
 * @module
 */
import process from "node:process";
import { NativeLibraryError } from "../core/errors.ts";
import { LIBRARY_CHECKSUMS } from "./checksums.ts";
import {
  BUILD_COMMAND,
  cacheDirectory,
  currentPlatform,
  libraryFileName,
  locateLibrary,
  permissionError,
} from "./locate.ts";
import { env, ffi } from "./runtime.ts";
import type { NativeSymbols } from "./symbols.ts";

/** The ABI version this binding speaks; `zig/abi.zig` holds the library's. */
export const ABI_VERSION = 1;

/** ISA variant names by id, as in `zig/isa.zig`. */
export const ISA_NAMES: readonly IsaName[] = ["baseline", "avx2", "avx512", "neon"];
/** An instruction-set variant of the kernels. */
export type IsaName = "baseline" | "avx2" | "avx512" | "neon";

function isaNames(mask: number): IsaName[] {
  return ISA_NAMES.filter((_, id) => (mask & (1 << id)) !== 0);
}

/** Parses `ZIGTENSOR_ISA`: -1 (best available) when unset, else the variant's id. */
export function requestedIsa(value: string | undefined): number {
  if (value === undefined || value === "") return -1;
  const id = ISA_NAMES.indexOf(value as IsaName);
  if (id < 0) {
    throw new NativeLibraryError(
      `ZIGTENSOR_ISA=${value} is not a variant; use one of ${ISA_NAMES.join(", ")}`,
    );
  }
  return id;
}

/** The loaded library and what it reported at init. */
export interface LoadedLibrary {
  readonly symbols: NativeSymbols;
  readonly path: string;
  readonly isa: IsaName;
  readonly compiled: readonly IsaName[];
  readonly supported: readonly IsaName[];
  readonly checked: boolean;
}

/** Opens the library at `path`, checks its ABI version and selects the kernel variant. */
export function loadLibrary(path: string, isaRequest: number): LoadedLibrary {
  let symbols: NativeSymbols;
  try {
    symbols = ffi.open(path);
  } catch (cause) {
    if ((cause as Error).name === "NotCapable" || (cause as Error).name === "PermissionDenied") {
      throw permissionError(`--allow-ffi`, `open ${path}`, cause);
    }
    throw new NativeLibraryError(
      `could not load ${path}: ${(cause as Error).message}; rebuild it with ${BUILD_COMMAND}`,
      {
        cause,
      },
    );
  }
  const version = symbols.zt_abi_version();
  if (version !== ABI_VERSION) {
    throw new NativeLibraryError(
      `${path} speaks ABI version ${version} but this binding speaks version ${ABI_VERSION}; rebuild the library ` +
        `from this package's sources with ${BUILD_COMMAND}`,
    );
  }
  const compiled = isaNames(symbols.zt_isa_compiled());
  const supported = isaNames(symbols.zt_isa_supported());
  const selected = symbols.zt_init(isaRequest);
  if (selected < 0) {
    const runnable = compiled.filter((name) => supported.includes(name));
    throw new NativeLibraryError(
      `ZIGTENSOR_ISA=${ISA_NAMES[isaRequest]} cannot run here: this CPU runs ${
        supported.join(", ") || "none"
      }, ` +
        `the library holds ${compiled.join(", ")}; choose one of ${runnable.join(", ")} or unset it`,
    );
  }
  return {
    symbols,
    path,
    isa: ISA_NAMES[selected],
    compiled,
    supported,
    checked: symbols.zt_checked() === 1,
  };
}

/** The library this process uses, loaded once per isolate (each Worker loads the same file). */
export const library: LoadedLibrary = loadLibrary(
  await locateLibrary({
    override: env("ZIGTENSOR_LIB"),
    platform: currentPlatform(),
    fileName: libraryFileName(process.platform),
    checksums: LIBRARY_CHECKSUMS,
    moduleUrl: import.meta.url,
    shippedDir: "../../lib/",
    checkoutDir: "../../zig-out/lib/",
    cacheDir: cacheDirectory(env, process.platform),
  }),
  requestedIsa(env("ZIGTENSOR_ISA")),
);

/** The bound native functions. */
export const native: NativeSymbols = library.symbols;

/**
 * Finding libzigtensor and proving it is the file this package was built with. The places, in order:
 *
 * 1. `ZIGTENSOR_LIB`, a path: used as is, fully offline;
 * 2. the npm platform package (`@zigtensor/linux-x64-gnu`, ...), resolved from this module with
 *    `createRequire`, its SHA-256 checked against the package's table and opened in place;
 * 3. the file shipped in this package under `lib/<platform>/` (JSR): a `file:` URL is read in place, an
 *    `http:`/`https:` URL is fetched once, checked and written into a per-user cache folder keyed by its hash;
 * 4. a source checkout's build output, `zig-out/lib/`.
 *
 * A prebuilt file whose SHA-256 differs from the table is refused before it is opened. A missing Deno
 * permission is named as such.
 *
 * @module
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { NativeLibraryError } from "../core/errors.ts";

/** The command that builds the library in a source checkout, for error messages. */
export const BUILD_COMMAND = "bash scripts/dev.sh build (or `deno task build` / `npm run build`)";

/** The platforms zigtensor ships prebuilt libraries for, as `<os>-<cpu>[-<libc>]`. */
export const PLATFORMS = [
  "linux-x64-gnu",
  "linux-x64-musl",
  "linux-arm64-gnu",
  "linux-arm64-musl",
  "darwin-x64",
  "darwin-arm64",
  "win32-x64",
] as const;

/** The file name of the shared library on an operating system (`process.platform`). */
export function libraryFileName(os: string): string {
  if (os === "darwin") return "libzigtensor.dylib";
  if (os === "win32") return "zigtensor.dll";
  return "libzigtensor.so";
}

/** The C library this process runs on, for Linux: what the runtime itself was linked against. */
function linuxLibc(): "gnu" | "musl" {
  const deno = (globalThis as { Deno?: { build: { env?: string } } }).Deno;
  if (deno !== undefined) return deno.build.env === "musl" ? "musl" : "gnu";
  const report = (process as { report?: { getReport?(): { header?: { glibcVersionRuntime?: string } } } })
    .report?.getReport?.();
  return report?.header?.glibcVersionRuntime === undefined ? "musl" : "gnu";
}

/** This process's platform key, `linux-x64-gnu`, `darwin-arm64`, `win32-x64`, ... */
export function currentPlatform(): string {
  const base = `${process.platform}-${process.arch}`;
  return process.platform === "linux" ? `${base}-${linuxLibc()}` : base;
}

/** Where to look; `locateLibrary` reads and writes only what this names. */
export interface LibrarySearch {
  /** `ZIGTENSOR_LIB`, when set. */
  readonly override: string | undefined;
  /** The platform key (`currentPlatform()`). */
  readonly platform: string;
  /** The library's file name on this platform. */
  readonly fileName: string;
  /** SHA-256 by `<platform>/<file name>` of the prebuilt libraries this package ships. */
  readonly checksums: Readonly<Record<string, string>>;
  /** The URL of this module (`import.meta.url`): the package's own files are found relative to it. */
  readonly moduleUrl: string;
  /** The path of the package's `lib/` folder relative to `moduleUrl`. */
  readonly shippedDir: string;
  /** The path of a checkout's `zig-out/lib/` folder relative to `moduleUrl`. */
  readonly checkoutDir: string;
  /** The per-user cache folder, or undefined when no variable names one. */
  readonly cacheDir: string | undefined;
}

/** The per-user cache folder: `ZIGTENSOR_CACHE_DIR`, else the platform's usual cache folder + `zigtensor`. */
export function cacheDirectory(env: (name: string) => string | undefined, os: string): string | undefined {
  const explicit = env("ZIGTENSOR_CACHE_DIR");
  if (explicit) return explicit;
  const home = env(os === "win32" ? "USERPROFILE" : "HOME");
  let base: string | undefined;
  if (os === "win32") base = env("LOCALAPPDATA") ?? (home && `${home}\\AppData\\Local`);
  else if (os === "darwin") base = home && `${home}/Library/Caches`;
  else base = env("XDG_CACHE_HOME") || (home && `${home}/.cache`);
  return base ? `${base}${os === "win32" ? "\\" : "/"}zigtensor` : undefined;
}

function isPermissionError(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === "NotCapable" || name === "PermissionDenied";
}

/** A `NativeLibraryError` for a Deno permission that is missing, naming it and what it was needed for. */
export function permissionError(flag: string, purpose: string, cause: unknown): NativeLibraryError {
  return new NativeLibraryError(
    `the Deno permission ${flag} is missing: zigtensor needs it to ${purpose} (${
      (cause as Error).message
    }); ` +
      `run with ${flag}, see the README for the permission set of each install path`,
    { cause },
  );
}

/** A file's bytes, or undefined when there is no file; a missing read permission throws. */
function readIfPresent(path: string, purpose: string): Uint8Array | undefined {
  try {
    return readFileSync(path);
  } catch (error) {
    if (isPermissionError(error)) throw permissionError(`--allow-read=${path}`, purpose, error);
    return undefined;
  }
}

/** Whether a file is at `path`; a missing read permission throws. */
function isFile(path: string, purpose: string): boolean {
  try {
    return statSync(path).isFile();
  } catch (error) {
    if (isPermissionError(error)) throw permissionError(`--allow-read=${path}`, purpose, error);
    return false;
  }
}

/** Lowercase hexadecimal SHA-256 of `bytes`. */
export async function sha256(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Throws a `NativeLibraryError` naming both hashes unless `bytes` hash to `expected`. */
async function verify(bytes: Uint8Array, expected: string, where: string): Promise<void> {
  const actual = await sha256(bytes);
  if (actual !== expected) {
    throw new NativeLibraryError(
      `checksum mismatch for ${where}: its SHA-256 is ${actual} but this package expects ${expected}; the file ` +
        `was not opened. Reinstall the package, or set ZIGTENSOR_LIB to a library you built yourself`,
    );
  }
}

/** Writes `bytes` to `path` through a temporary file and a rename, so no reader sees half a file. */
function writeAtomically(path: string, directory: string, bytes: Uint8Array): void {
  try {
    mkdirSync(directory, { recursive: true });
    const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    writeFileSync(temporary, bytes);
    renameSync(temporary, path);
  } catch (error) {
    if (isPermissionError(error)) {
      throw permissionError(`--allow-write=${directory}`, "cache the library it downloaded", error);
    }
    throw new NativeLibraryError(`could not write the library into the cache folder ${directory}`, {
      cause: error,
    });
  }
}

/** The bytes at an `http:`/`https:` URL, or a sentence saying why not; a missing net permission throws. */
async function download(url: URL): Promise<Uint8Array | string> {
  let response: Response;
  try {
    response = await fetch(url);
  } catch (error) {
    if (isPermissionError(error)) throw permissionError(`--allow-net=${url.host}`, `download ${url}`, error);
    return `download failed: ${(error as Error).message}`;
  }
  if (!response.ok) {
    await response.body?.cancel();
    return `download failed: HTTP ${response.status}`;
  }
  return new Uint8Array(await response.arrayBuffer());
}

/** The prebuilt file shipped in the package: read in place (`file:`), or downloaded into the cache. */
async function shippedFile(
  search: LibrarySearch,
  expected: string,
  tried: string[],
): Promise<string | undefined> {
  const url = new URL(`${search.shippedDir}${search.platform}/${search.fileName}`, search.moduleUrl);
  if (url.protocol === "file:") {
    const path = fileURLToPath(url);
    const bytes = readIfPresent(path, "read the library this package ships");
    if (bytes === undefined) {
      tried.push(`shipped file ${path}: no file`);
      return undefined;
    }
    await verify(bytes, expected, path);
    return path;
  }
  if (search.cacheDir === undefined) {
    tried.push(
      `shipped file ${url}: no cache folder to keep it in (set ZIGTENSOR_CACHE_DIR; in Deno, --allow-env lets ` +
        `zigtensor read HOME, XDG_CACHE_HOME or LOCALAPPDATA)`,
    );
    return undefined;
  }
  const separator = search.cacheDir.includes("\\") ? "\\" : "/";
  const directory = `${search.cacheDir}${separator}${expected}`;
  const cached = `${directory}${separator}${search.fileName}`;
  const kept = readIfPresent(cached, "read the library from the cache folder");
  if (kept !== undefined) {
    await verify(kept, expected, cached);
    return cached;
  }
  const bytes = await download(url);
  if (typeof bytes === "string") {
    tried.push(`shipped file ${url}: ${bytes}`);
    return undefined;
  }
  await verify(bytes, expected, url.href);
  writeAtomically(cached, directory, bytes);
  return cached;
}

/** The npm platform package's file, resolved from this module, or undefined (with a note) when absent. */
async function platformPackage(
  search: LibrarySearch,
  expected: string | undefined,
  tried: string[],
): Promise<string | undefined> {
  const name = `@zigtensor/${search.platform}`;
  if (!search.moduleUrl.startsWith("file:")) {
    tried.push(
      `npm package ${name}: not looked for (this module was loaded from ${new URL(search.moduleUrl).origin})`,
    );
    return undefined;
  }
  let path: string;
  try {
    path = createRequire(search.moduleUrl).resolve(`${name}/${search.fileName}`);
  } catch (error) {
    tried.push(
      isPermissionError(error)
        ? `npm package ${name}: not looked for, the Deno permission --allow-read is missing (${
          (error as Error).message
        })`
        : `npm package ${name}: not installed`,
    );
    return undefined;
  }
  const bytes = readIfPresent(path, `read the library in ${name}`);
  if (bytes === undefined) {
    tried.push(`npm package ${name}: no file at ${path}`);
    return undefined;
  }
  if (expected === undefined) {
    tried.push(`npm package ${name}: found at ${path}, but this package has no checksum for it, so not used`);
    return undefined;
  }
  await verify(bytes, expected, path);
  return path;
}

/** The one command that fixes a missing library, for the situation the search found. */
function remedy(search: LibrarySearch, expected: string | undefined, tried: readonly string[]): string {
  if (tried.some((line) => line.includes("the Deno permission --allow-read is missing"))) {
    return "grant the Deno permission --allow-read (the npm platform package is read from node_modules)";
  }
  const packaged = Object.keys(search.checksums).length > 0;
  if (!packaged) return `build it with ${BUILD_COMMAND}`;
  if (expected === undefined) {
    return `zigtensor ships no prebuilt library for ${search.platform} (it has ${PLATFORMS.join(", ")}); ` +
      `build one from a source checkout with \`deno task build\` (or \`npm run build\`, needs Zig 0.16.0) and set ` +
      `ZIGTENSOR_LIB to its zig-out/lib/${search.fileName}`;
  }
  if (search.moduleUrl.startsWith("file:")) {
    return `install the platform package with optional dependencies enabled: \`npm install zigtensor\` ` +
      `(or \`bun add zigtensor\`; not with --omit=optional or --no-optional)`;
  }
  return `let this process download it once (Deno: --allow-net=${new URL(search.moduleUrl).host}), or set ` +
    `ZIGTENSOR_LIB to a copy of the file`;
}

/**
 * The path of the library to open, by the order in the module notes. Throws `NativeLibraryError` listing
 * every place tried and the command that fixes it; on a checksum mismatch, naming both hashes.
 */
export async function locateLibrary(search: LibrarySearch): Promise<string> {
  if (search.override !== undefined && search.override !== "") {
    if (isFile(search.override, "read ZIGTENSOR_LIB")) return search.override;
    throw new NativeLibraryError(
      `ZIGTENSOR_LIB is set to ${search.override} but no file is there; unset it to use the package's library, ` +
        `or build the library with ${BUILD_COMMAND}`,
    );
  }
  const tried = ["ZIGTENSOR_LIB: not set"];
  const expected = search.checksums[`${search.platform}/${search.fileName}`];
  const fromPackage = await platformPackage(search, expected, tried);
  if (fromPackage !== undefined) return fromPackage;
  if (expected === undefined) {
    tried.push(`shipped file: this package has no prebuilt library for ${search.platform}`);
  } else {
    const shipped = await shippedFile(search, expected, tried);
    if (shipped !== undefined) return shipped;
  }
  const checkout = new URL(`${search.checkoutDir}${search.fileName}`, search.moduleUrl);
  if (checkout.protocol === "file:") {
    const path = fileURLToPath(checkout);
    if (isFile(path, "read the checkout's build")) return path;
    tried.push(`checkout build ${path}: no file`);
  } else {
    tried.push(`checkout build: none (this module was loaded from ${checkout.origin})`);
  }
  throw new NativeLibraryError(
    `libzigtensor for ${search.platform} was not found. Tried, in order:\n${
      tried.map((line, index) => `  ${index + 1}. ${line}`).join("\n")
    }\nTo fix: ${remedy(search, expected, tried)}`,
  );
}

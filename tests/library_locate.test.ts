import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { NativeLibraryError } from "../src/core/errors.ts";
import { cacheDirectory, type LibrarySearch, locateLibrary, sha256 } from "../src/native/locate.ts";

const library = new TextEncoder().encode("not really a library, but bytes with a known hash");
const libraryHash = await sha256(library);

/** A package folder: `<dir>/src/native/library.js` is the module, files placed relative to `<dir>`. */
function packageDir(files: Record<string, Uint8Array>): string {
  const dir = mkdtempSync(join(tmpdir(), "zigtensor-locate-"));
  for (const [path, bytes] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), bytes);
  }
  return dir;
}

function search(dir: string, overrides: Partial<LibrarySearch> = {}): LibrarySearch {
  return {
    override: undefined,
    platform: "linux-x64-gnu",
    fileName: "libzigtensor.so",
    checksums: {},
    moduleUrl: pathToFileURL(join(dir, "pkg", "src", "native", "library.js")).href,
    shippedDir: "../../lib/",
    checkoutDir: "../../zig-out/lib/",
    cacheDir: join(dir, "cache"),
    ...overrides,
  };
}

async function rejects(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: Error) => {
    assert.ok(error instanceof NativeLibraryError, `${error.name}: ${error.message}`);
    assert.match(error.message, pattern);
    return true;
  });
}

test("SHA-256 of known bytes", async () => {
  assert.equal(
    await sha256(new TextEncoder().encode("abc")),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
});

test("ZIGTENSOR_LIB comes first and must exist; a checkout finds its build; else every place is listed", async () => {
  const dir = packageDir({ "own.so": library, "pkg/zig-out/lib/libzigtensor.so": library });
  try {
    assert.equal(await locateLibrary(search(dir, { override: join(dir, "own.so") })), join(dir, "own.so"));
    await rejects(
      locateLibrary(search(dir, { override: join(dir, "missing.so") })),
      /ZIGTENSOR_LIB is set to .*missing\.so but no file is there/,
    );
    assert.equal(
      await locateLibrary(search(dir, { override: "" })),
      join(dir, "pkg/zig-out/lib/libzigtensor.so"),
    );
    rmSync(join(dir, "pkg/zig-out"), { recursive: true });
    await rejects(
      locateLibrary(search(dir)),
      new RegExp(
        "not found\\. Tried, in order:\\n  1\\. ZIGTENSOR_LIB: not set\\n  2\\. npm package @zigtensor/linux-x64-gnu: " +
          "not installed\\n  3\\. shipped file: this package has no prebuilt library for linux-x64-gnu\\n  4\\. " +
          "checkout build .*zig-out/lib/libzigtensor\\.so: no file\\nTo fix: build it with bash scripts/dev\\.sh build",
      ),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the npm platform package is resolved from the module, checked, and used in place", async () => {
  const installed = "node_modules/@zigtensor/linux-x64-gnu/libzigtensor.so";
  const dir = packageDir({ [installed]: library });
  const checksums = { "linux-x64-gnu/libzigtensor.so": libraryHash };
  try {
    assert.equal(await locateLibrary(search(dir, { checksums })), join(dir, installed));
    const wrong = "0".repeat(64);
    await rejects(
      locateLibrary(search(dir, { checksums: { "linux-x64-gnu/libzigtensor.so": wrong } })),
      new RegExp(
        `checksum mismatch for .*libzigtensor\\.so: its SHA-256 is ${libraryHash} but this package expects ${wrong}`,
      ),
    );
    rmSync(join(dir, "node_modules"), { recursive: true });
    await rejects(
      locateLibrary(search(dir, { checksums })),
      /npm package @zigtensor\/linux-x64-gnu: (not installed|no file at)[^]*To fix: install the platform package/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a shipped file: URL is read in place and checked; an unsupported platform says how to build", async () => {
  const dir = packageDir({ "pkg/lib/linux-x64-gnu/libzigtensor.so": library });
  const checksums = { "linux-x64-gnu/libzigtensor.so": libraryHash };
  try {
    assert.equal(
      await locateLibrary(search(dir, { checksums })),
      join(dir, "pkg/lib/linux-x64-gnu/libzigtensor.so"),
    );
    await rejects(
      locateLibrary(search(dir, { checksums, platform: "linux-riscv64-gnu" })),
      /ships no prebuilt library for linux-riscv64-gnu .*deno task build/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a shipped http: URL is downloaded once into the cache by hash, then used offline", async () => {
  const dir = packageDir({});
  let requests = 0;
  const server = createServer((request, response) => {
    requests += 1;
    if (request.url === "/pkg/lib/linux-x64-gnu/libzigtensor.so") response.end(library);
    else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const remote = (checksums: Record<string, string>) =>
    search(dir, { checksums, moduleUrl: `http://127.0.0.1:${port}/pkg/src/native/library.js` });
  const checksums = { "linux-x64-gnu/libzigtensor.so": libraryHash };
  const cached = join(dir, "cache", libraryHash, "libzigtensor.so");
  try {
    assert.equal(await locateLibrary(remote(checksums)), cached);
    assert.deepEqual(new Uint8Array(readFileSync(cached)), library);
    assert.equal(requests, 1);
    await rejects(
      locateLibrary(remote({ "linux-x64-gnu/libzigtensor.so": "f".repeat(64) })),
      /checksum mismatch for http:\/\/127\.0\.0\.1:\d+\/pkg\/lib\/linux-x64-gnu\/libzigtensor\.so/,
    );
    await rejects(
      locateLibrary(search(dir, {
        checksums,
        moduleUrl: `http://127.0.0.1:${port}/other/src/native/library.js`,
        cacheDir: join(dir, "other-cache"),
      })),
      /shipped file http:.*: download failed: HTTP 404[^]*checkout build: none/,
    );
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  try {
    assert.equal(await locateLibrary(remote(checksums)), cached, "the cache serves it with the server gone");
    assert.equal(requests, 3);
    writeFileSync(cached, new TextEncoder().encode("tampered"));
    await rejects(
      locateLibrary(remote(checksums)),
      new RegExp(`checksum mismatch for .*expects ${libraryHash}`),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the cache folder: ZIGTENSOR_CACHE_DIR, else the platform's cache folder, else none", () => {
  const vars = (values: Record<string, string>) => (name: string) => values[name];
  assert.equal(cacheDirectory(vars({ ZIGTENSOR_CACHE_DIR: "/c", HOME: "/h" }), "linux"), "/c");
  assert.equal(cacheDirectory(vars({ HOME: "/h" }), "linux"), "/h/.cache/zigtensor");
  assert.equal(cacheDirectory(vars({ HOME: "/h", XDG_CACHE_HOME: "/x" }), "linux"), "/x/zigtensor");
  assert.equal(cacheDirectory(vars({ HOME: "/Users/u" }), "darwin"), "/Users/u/Library/Caches/zigtensor");
  assert.equal(cacheDirectory(vars({ LOCALAPPDATA: "C:\\L" }), "win32"), "C:\\L\\zigtensor");
  assert.equal(cacheDirectory(vars({}), "linux"), undefined);
});

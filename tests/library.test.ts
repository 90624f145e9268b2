import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { NativeLibraryError } from "../mod.ts";
import { ABI_VERSION, requestedIsa } from "../src/native/library.ts";
import { libraryFileName } from "../src/native/locate.ts";
import { runChild } from "./helpers/subprocess.ts";

const child = new URL("./children/add_slice_child.ts", import.meta.url);
const zigOut = (path: string) => fileURLToPath(new URL(`../zig-out/${path}`, import.meta.url));

test("library file names and ISA requests", () => {
  assert.equal(libraryFileName("linux"), "libzigtensor.so");
  assert.equal(libraryFileName("darwin"), "libzigtensor.dylib");
  assert.equal(libraryFileName("win32"), "zigtensor.dll");
  assert.equal(requestedIsa(undefined), -1);
  assert.equal(requestedIsa("avx2"), 1);
  assert.throws(() => requestedIsa("sse9"), NativeLibraryError);
});

test("a missing library at load is a NativeLibraryError naming the path and the build command", () => {
  const result = runChild(child, { ZIGTENSOR_LIB: "/nonexistent/libzigtensor.so" });
  assert.notEqual(result.status, 0);
  assert.match(result.stderr, /NativeLibraryError: ZIGTENSOR_LIB is set to \/nonexistent\/libzigtensor.so/);
  assert.match(result.stderr, /bash scripts\/dev.sh build/);
});

test("a library with another ABI version is refused with both versions named", () => {
  const skewed = zigOut(`lib/abi-skew/${libraryFileName(process.platform)}`);
  assert.ok(existsSync(skewed), `${skewed} is built by scripts/dev.sh build`);
  const result = runChild(child, { ZIGTENSOR_LIB: skewed });
  assert.notEqual(result.status, 0);
  assert.match(
    result.stderr,
    new RegExp(`speaks ABI version ${ABI_VERSION + 1000} but this binding speaks version ${ABI_VERSION}`),
  );
});

/** Instructions of an object file that use AVX: VEX/EVEX mnemonics or ymm, zmm and opmask registers. */
function avxInstructions(object: string): string[] {
  const listing = execFileSync("objdump", ["-d", "--no-show-raw-insn", object], {
    encoding: "utf8",
    maxBuffer: 1 << 28,
  });
  return listing.split("\n").filter((line) => {
    const instruction = line.split("\t").slice(1).join(" ").trim();
    return /^v[a-z0-9]+\s/.test(instruction) || /%[yz]mm\d|%k[0-7]\b/.test(instruction);
  });
}

test("the x86-64 baseline kernels hold no AVX instruction, and the check sees the AVX2 ones", {
  skip: process.arch !== "x64",
}, () => {
  const baseline = zigOut("obj/zigtensor_baseline.o");
  const avx2 = zigOut("obj/zigtensor_avx2.o");
  assert.deepEqual(avxInstructions(baseline), []);
  assert.ok(avxInstructions(avx2).length > 0, "the AVX2 object uses AVX instructions");
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { kernelInfo } from "../src/native/kernel_info.ts";
import { runChild } from "./helpers/subprocess.ts";

test("every variant the host runs passes the kernel conformance cases, with the same exact-mode bits", () => {
  const info = kernelInfo();
  const runnable = info.variants.filter((isa) => info.supported.includes(isa));
  assert.ok(runnable.length >= 1);
  const hashes = new Map<string, number>();
  for (const isa of runnable) {
    const child = runChild(new URL("./helpers/kernels_child.ts", import.meta.url), { ZIGTENSOR_ISA: isa });
    assert.equal(child.status, 0, child.stderr);
    const report = JSON.parse(child.stdout.trim().split("\n").at(-1)!);
    assert.equal(report.isa, isa);
    assert.deepEqual(report.failures, [], isa);
    assert.equal(report.cases, 5 * 160);
    assert.ok(report.elements > 50_000, `${isa}: ${report.elements} elements`);
    hashes.set(isa, report.exactHash);
  }
  // Exact mode's outputs hash the same under every variant: no result depends on the ISA.
  assert.equal(new Set(hashes.values()).size, 1, JSON.stringify(Object.fromEntries(hashes)));
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { kernelInfo } from "../src/native/kernel_info.ts";
import { isaReports } from "./helpers/subprocess.ts";

const info = kernelInfo();
const runnable = info.variants.filter((isa) => info.supported.includes(isa));
const hashes = new Map<string, number>();

test("every variant the host runs passes the kernel conformance cases", () => {
  assert.ok(runnable.length >= 1);
  for (const { isa, report } of isaReports(new URL("./children/kernels_child.ts", import.meta.url))) {
    assert.deepEqual(report.failures, [], isa);
    // Binary, unary, reduce, softmax, pool, pool backward, index and select cases
    // (tests/helpers/kernels_conformance.ts).
    assert.equal(report.cases, 8 * 160);
    assert.ok(report.elements > 50_000, `${isa}: ${report.elements} elements`);
    // Integer and Bool binary and reduction cases (tests/helpers/integer_conformance.ts).
    assert.deepEqual(report.integer.failures, [], `${isa} integer kernels`);
    assert.equal(report.integer.cases, 2 * 80);
    assert.ok(report.integer.elements > 20_000, `${isa}: ${report.integer.elements} integer elements`);
    hashes.set(isa, report.exactHash * 2 ** 32 + report.integer.exactHash);
  }
});

// With one variant there is nothing to compare: the test reports itself skipped rather than passing.
test("exact mode gives the same bits under every variant the host runs", {
  skip: runnable.length < 2 ? `only one variant (${runnable.join()}) runs on this CPU` : false,
}, () => {
  assert.equal(hashes.size, runnable.length, "the conformance test ran every variant first");
  assert.equal(new Set(hashes.values()).size, 1, JSON.stringify(Object.fromEntries(hashes)));
});

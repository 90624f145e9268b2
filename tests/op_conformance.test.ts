// Conformance generated from the op registry (tests/helpers/op_registry.ts): every case of every op, forward,
// under every ISA variant the CPU runs (one child process each, ZIGTENSOR_ISA set) with 1 to 4 threads: the
// native kernels in exact mode give the reference kernel set's bits (or stay within the case's `exactUlps`)
// and the same bits for every thread count and every variant; in fast mode they stay within `fastTolerance`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { kernelInfo } from "../src/native/kernel_info.ts";
import { isaReports } from "./helpers/subprocess.ts";
import { gradCases } from "./helpers/op_registry.ts";

const info = kernelInfo();
const runnable = info.variants.filter((isa) => info.supported.includes(isa));
const hashes = new Map<string, number>();
const registered = Object.values(gradCases).reduce((n, list) => n + list.length, 0);

test("every op of the registry conforms under every variant the host runs, with 1 to 4 threads", () => {
  assert.ok(runnable.length >= 1);
  for (const { isa, report } of isaReports(new URL("./children/op_conformance_child.ts", import.meta.url))) {
    assert.deepEqual(report.failures, [], isa);
    assert.equal(report.cases, registered, `${isa}: every registered case ran`);
    assert.ok(report.elements > 500, `${isa}: ${report.elements} elements`);
    hashes.set(isa, report.exactHash);
  }
});

// With one variant there is nothing to compare: the test reports itself skipped rather than passing.
test("the registry's exact-mode outputs have the same bits under every variant the host runs", {
  skip: runnable.length < 2 ? `only one variant (${runnable.join()}) runs on this CPU` : false,
}, () => {
  assert.equal(hashes.size, runnable.length, "the conformance test ran every variant first");
  assert.equal(new Set(hashes.values()).size, 1, JSON.stringify(Object.fromEntries(hashes)));
});

// The native CTC kernel (zig/kernels/ctc.zig) against the reference (src/kernels/ctc.ts): losses and
// gradients within an f32 ulp on random batches under every ISA variant the host runs, and the same bits
// across variants and thread counts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { kernelInfo } from "../src/native/kernel_info.ts";
import { runChild } from "./helpers/subprocess.ts";
import { ctcConformanceRun } from "./helpers/ctc_conformance.ts";
import { TensorCompute } from "../mod.ts";

const info = kernelInfo();
const runnable = info.variants.filter((isa) => info.supported.includes(isa));

test("the CTC kernel matches the reference under every variant the host runs, with the same bits in each", () => {
  const hashes = new Map<string, number>();
  for (const isa of runnable) {
    const child = runChild(new URL("./children/ctc_child.ts", import.meta.url), { ZIGTENSOR_ISA: isa });
    assert.equal(child.status, 0, child.stderr);
    const report = JSON.parse(child.stdout.trim().split("\n").at(-1)!);
    assert.equal(report.isa, isa);
    assert.deepEqual(report.failures, [], isa);
    assert.equal(report.cases, 2 * 60);
    assert.ok(report.elements > 2_000, `${isa}: ${report.elements} elements`);
    hashes.set(isa, report.exactHash);
  }
  assert.ok(hashes.size >= 1);
  assert.equal(new Set(hashes.values()).size, 1, JSON.stringify(Object.fromEntries(hashes)));
});

test("the CTC kernel gives the same bits on 1 and 4 threads", () => {
  const one = TensorCompute.run({ threads: 1 }, () => ctcConformanceRun(5, 20));
  const four = TensorCompute.run({ threads: 4 }, () => ctcConformanceRun(5, 20));
  assert.deepEqual(one.failures, []);
  assert.equal(one.exactHash, four.exactHash);
});

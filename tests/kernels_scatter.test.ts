// The indexAdd kernel and max pooling's dilation, ceil-mode extents and plane-local indices: native equal to the
// reference kernels bit for bit, in both modes and any thread count, under every ISA variant the host runs (one
// child process per variant), with the same exact-mode bits across variants.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isaReports } from "./helpers/subprocess.ts";

test("indexAdd and dilated, ceil-mode max pooling: native equals reference under every variant the host runs", () => {
  const hashes = new Set<number>();
  for (const { isa, report } of isaReports(new URL("./children/scatter_child.ts", import.meta.url))) {
    assert.deepEqual(report.failures, [], isa);
    assert.ok(report.cases > 300, `${isa}: ${report.cases} cases`);
    hashes.add(report.hash);
  }
  assert.equal(hashes.size, 1, "exact mode differs between variants");
});

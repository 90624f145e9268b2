import { test } from "node:test";
import assert from "node:assert/strict";
import { kernelInfo } from "../mod.ts";
import { addSlice } from "./helpers/add_slice.ts";
import { isaReports, runChild } from "./helpers/subprocess.ts";

test("a native block is 64-byte aligned, viewed without copy, and the add kernel matches a TypeScript loop", () => {
  for (const n of [0, 1, 3, 8, 16, 17, 100, 4099]) {
    const result = addSlice(n, 7 + n);
    assert.equal(result.aligned, true);
    assert.equal(result.mismatches, 0, `n=${n}`);
    // The typed array handed out before release reads as empty afterwards.
    assert.equal(result.checkedLength, 0);
    if (n > 0) assert.equal(result.zeroCopy, true);
  }
});

test("the selected ISA is the best variant the CPU runs", () => {
  const info = kernelInfo();
  const order = ["avx512", "avx2", "neon", "baseline"] as const;
  const best = order.find((isa) => info.variants.includes(isa) && info.supported.includes(isa));
  if (process.env.ZIGTENSOR_ISA === undefined) assert.equal(info.isa, best);
  if (process.arch === "x64") {
    assert.deepEqual([...info.variants], ["baseline", "avx2", "avx512"]);
    assert.ok(info.supported.includes("baseline"));
  }
  assert.equal(info.checked, /checked/.test(info.path));
});

test("every variant the host runs passes the add slice when forced with ZIGTENSOR_ISA", () => {
  const info = kernelInfo();
  const runnable = info.variants.filter((isa) => info.supported.includes(isa));
  assert.ok(runnable.length >= 1);
  for (const { report } of isaReports(new URL("./children/add_slice_child.ts", import.meta.url))) {
    for (const result of report.results) {
      assert.equal(result.mismatches, 0);
      assert.equal(result.aligned, true);
    }
  }
});

test("forcing a variant the CPU cannot run is a clear error at load, not a crash", () => {
  const info = kernelInfo();
  const unrunnable = (["baseline", "avx2", "avx512", "neon"] as const).filter((isa) =>
    !info.supported.includes(isa)
  );
  for (const isa of unrunnable) {
    const child = runChild(new URL("./children/add_slice_child.ts", import.meta.url), { ZIGTENSOR_ISA: isa });
    assert.notEqual(child.status, 0);
    assert.match(child.stderr, new RegExp(`NativeLibraryError.*ZIGTENSOR_ISA=${isa} cannot run here`));
  }
  const bogus = runChild(new URL("./children/add_slice_child.ts", import.meta.url), {
    ZIGTENSOR_ISA: "sse9",
  });
  assert.notEqual(bogus.status, 0);
  assert.match(
    bogus.stderr,
    /NativeLibraryError.*ZIGTENSOR_ISA=sse9 is not a variant; use one of baseline, avx2, avx512, neon/,
  );
});

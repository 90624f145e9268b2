// Handed-out typed arrays and transferred buffers (issue 10, holes 1 and 2): the block behind a typed array
// is never rented again while the array lives, a transferred buffer retires its block, and a handle whose
// buffer was transferred throws StaleTensorError. Forced collection runs in a child process (Deno needs
// --v8-flags=--expose-gc; Bun has Bun.gc).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Arena, BufferPool, StaleTensorError, Tensor } from "../mod.ts";

const isDeno = (globalThis as { Deno?: unknown }).Deno !== undefined;

function runGcChild(): Record<string, Record<string, unknown> | number> {
  const child = fileURLToPath(new URL("./children/safety_gc_child.ts", import.meta.url));
  const argv = isDeno ? ["run", "-A", "--quiet", "--v8-flags=--expose-gc", child] : [child];
  const result = spawnSync(process.execPath, argv, { encoding: "utf8", timeout: 120_000 });
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout.trim().split("\n").at(-1)!);
}

test("with forced GC, a typed array keeps its block (pool and arena) until the array is collected", () => {
  const report = runGcChild();
  for (const key of ["survivor", "arenaSurvivor"]) {
    assert.deepEqual(report[key], { first: 7, length: 256, othersTouched: false }, key);
  }
  assert.equal(report.survivorReclaimed, 0, "the block returns once the array is collected");
  assert.equal(report.arenaReclaimed, 0, "the arena's chunks return once the array is collected");
  for (const key of ["transfer", "structuredClone", "postMessage"]) {
    assert.deepEqual(
      report[key],
      { error: "StaleTensorError", addError: "StaleTensorError", released: true, first: 7, reused: false },
      key,
    );
  }
  assert.deepEqual(report.finalizedTransfer, { first: 7, reused: false });
  assert.deepEqual(report.arenaTransfer, { error: "StaleTensorError", first: 7, reused: false });
});

test("a transferred buffer retires its block: disposing the tensor does not return it to the pool", () => {
  const pool = BufferPool.default;
  const t = Tensor.full([16], 3);
  const before = pool.stats().rentedBlocks;
  const moved = (t.data().buffer as ArrayBuffer).transfer();
  assert.ok(t.isReleased);
  assert.throws(() => t.get(0), StaleTensorError);
  assert.throws(() => t.data(), StaleTensorError);
  assert.throws(() => t.mul(2), StaleTensorError);
  t.dispose();
  assert.equal(pool.stats().rentedBlocks, before, "the retired block stays rented");
  using other = Tensor.full([16], 9);
  assert.equal(new Float32Array(moved)[0], 3);
  assert.equal(other.get(0), 9);
});

test("explicit release still detaches handed-out arrays; arena reset too", () => {
  const t = Tensor.full([8], 1);
  const d = t.data();
  t.dispose();
  assert.equal(d.length, 0);
  using arena = new Arena();
  const a = Tensor.full([8], 1, { arena });
  const e = a.data();
  arena.reset();
  assert.equal(e.length, 0);
  assert.throws(() => a.get(0), StaleTensorError);
});

test("a terminated Worker leaves rented exactly what it still held, plus its argument block", () => {
  const child = fileURLToPath(new URL("./children/safety_worker_child.ts", import.meta.url));
  const argv = isDeno ? ["run", "-A", "--quiet", child] : [child];
  const result = spawnSync(process.execPath, argv, { encoding: "utf8", timeout: 120_000 });
  assert.equal(result.status, 0, result.stderr);
  const { disposed, kept, sizeClass } = JSON.parse(result.stdout.trim().split("\n").at(-1)!);
  assert.equal(disposed.sum, 0);
  assert.equal(kept.sum, 3);
  assert.equal(disposed.blocks, 1, "a Worker that disposed its tensors leaves only its argument block");
  assert.ok(disposed.bytes > 0 && disposed.bytes <= 4096);
  assert.equal(kept.blocks, 3);
  assert.equal(kept.bytes, 2 * sizeClass + disposed.bytes, "the two 1 MiB tensors it held, and no more");
});

// Storage lifetime (spec 000 §6 "Lifetime", §7; guide "Who owns the memory"): stale access, idempotent
// release, re-rent isolation, detached typed arrays, version counters, arenas and the finalizer safety net.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { StaleTensorError, TensorShapeError } from "../src/core/errors.ts";
import { Arena, BufferPool } from "../src/memory/pool.ts";
import { ffi } from "../src/native/runtime.ts";
import { Storage } from "../src/memory/storage.ts";

const pool = BufferPool.default;
const address = (storage: Storage) => ffi.address(storage.pointer("address"));

function assertStale(action: () => unknown, op: string): void {
  assert.throws(action, (error: Error) => {
    assert.ok(error instanceof StaleTensorError && error instanceof TypeError);
    assert.equal((error as StaleTensorError).op, op);
    assert.match(error.message, new RegExp(`^${op}: `));
    return true;
  });
}

test("after release every data access throws StaleTensorError naming the operation", () => {
  const storage = Storage.rent(32);
  storage.pointer("add");
  storage.buffer("data");
  assert.equal(storage.isReleased, false);
  storage.release();
  assert.equal(storage.isReleased, true);
  assertStale(() => storage.pointer("matmul"), "matmul");
  assertStale(() => storage.buffer("toArray"), "toArray");
});

test("release is idempotent: releasing again does nothing to the pool", () => {
  const storage = Storage.rent(700);
  storage.release();
  const before = pool.stats();
  storage.release();
  storage.release();
  assert.deepEqual(pool.stats(), before);
});

test("a stale handle can neither read nor release the memory re-rented to the next owner", () => {
  const old = Storage.rent(4000);
  new Float32Array(old.buffer("fill")).fill(1);
  const where = address(old);
  old.release();
  const next = Storage.rent(4000);
  assert.equal(address(next), where, "the pool hands the same block to the next owner");
  new Float32Array(next.buffer("fill")).fill(2);
  assertStale(() => old.buffer("data"), "data");
  assertStale(() => old.pointer("add"), "add");
  const before = pool.stats();
  old.release();
  assert.deepEqual(pool.stats(), before, "the stale release returned nothing to the pool");
  assert.equal(next.isReleased, false);
  const third = Storage.rent(4000);
  assert.notEqual(address(third), where, "the block is still the next owner's");
  assert.ok(new Float32Array(next.buffer("read")).every((x) => x === 2));
  third.release();
  next.release();
});

test("typed arrays handed out before release read as empty afterwards", () => {
  const storage = Storage.rent(64);
  const floats = new Float32Array(storage.buffer("data"));
  const bytes = new Uint8Array(storage.buffer("data"), 8, 16);
  floats[0] = 1.5;
  assert.equal(floats.length, 16);
  storage.release();
  assert.equal(floats.length, 0);
  assert.equal(bytes.length, 0);
  assert.equal(floats[0], undefined);
});

test("one ArrayBuffer per storage, over the native block without a copy", () => {
  const storage = Storage.rent(256);
  const buffer = storage.buffer("data");
  assert.equal(storage.buffer("data"), buffer);
  assert.equal(buffer.byteLength, 256);
  new Uint32Array(buffer)[3] = 0xdeadbeef;
  const second = ffi.arrayBuffer(storage.pointer("data"), 256);
  assert.equal(new Uint32Array(second)[3], 0xdeadbeef);
  storage.release();
  const empty = Storage.rent(0);
  assert.equal(empty.buffer("data").byteLength, 0);
  assert.equal(address(empty) % 64, 0);
  empty.release();
});

test("the version counter starts at 0 for every rent and counts bumps; each rent has its own", () => {
  const a = Storage.rent(16);
  const b = Storage.rent(16);
  assert.equal(a.version, 0);
  for (let i = 0; i < 5; i++) a.bumpVersion();
  assert.equal(a.version, 5);
  assert.equal(b.version, 0);
  a.release();
  const again = Storage.rent(16);
  assert.equal(again.version, 0);
  again.release();
  b.release();
});

test("arena blocks are 64-byte aligned, come from chunks, and zero on request", () => {
  using arena = new Arena({ chunkBytes: 1 << 14 });
  const storages = [0, 1, 63, 64, 100, 1000, 5000].map((n) => Storage.rent(n, { arena, zero: true }));
  const addresses = storages.map(address);
  for (const [i, storage] of storages.entries()) {
    assert.equal(addresses[i] % 64, 0);
    assert.equal(storage.arena, arena);
    assert.ok(new Uint8Array(storage.buffer("read")).every((b) => b === 0));
    if (i > 0) assert.ok(addresses[i] > addresses[i - 1], "bump allocation moves forward");
  }
  const stats = arena.stats();
  assert.equal(stats.chunks, 1);
  assert.equal(stats.largeBlocks, 0);
  assert.equal(stats.reservedBytes, 1 << 14);
});

test("reset makes every arena storage stale and detaches its typed arrays; the next owner is safe", () => {
  using arena = new Arena({ chunkBytes: 1 << 12 });
  const old = Storage.rent(256, { arena });
  const large = Storage.rent(10_000, { arena });
  const view = new Float32Array(old.buffer("fill")).fill(3);
  const largeView = new Uint8Array(large.buffer("fill"));
  const where = address(old);
  arena.reset();
  assert.equal(arena.generation, 1);
  assert.ok(old.isReleased && large.isReleased);
  assert.equal(view.length, 0);
  assert.equal(largeView.length, 0);
  assertStale(() => old.buffer("sum"), "sum");
  assertStale(() => large.pointer("relu"), "relu");
  const next = Storage.rent(256, { arena });
  assert.equal(address(next), where, "the arena bumps from the start again");
  new Float32Array(next.buffer("fill")).fill(4);
  old.release();
  old.release();
  assert.ok(new Float32Array(next.buffer("read")).every((x) => x === 4));
  assert.equal(next.isReleased, false);
});

test("releasing an arena storage early marks it released; the arena reclaims it at reset", () => {
  using arena = new Arena({ chunkBytes: 1 << 12 });
  const storage = Storage.rent(100, { arena });
  const view = new Uint8Array(storage.buffer("data"));
  const before = pool.stats();
  storage.release();
  assert.deepEqual(pool.stats(), before);
  assert.ok(storage.isReleased);
  assert.equal(view.length, 0);
  assertStale(() => storage.buffer("data"), "data");
  arena.reset();
});

test("after a warm-up run an arena run with the same allocation sequence obtains no new native memory", () => {
  using arena = new Arena({ chunkBytes: 1 << 16 });
  const sequence = [100, 40_000, 7, 1 << 17, 30_000, 64, 0, 90_000, 3, 1 << 20];
  let warm = pool.stats();
  let reserved = 0;
  for (let run = 0; run < 5; run++) {
    const before = pool.stats();
    for (const n of sequence) new Uint8Array(Storage.rent(n, { arena }).buffer("fill")).fill(run);
    const after = pool.stats();
    const stats = arena.stats();
    if (run === 0) {
      warm = after;
      reserved = stats.reservedBytes;
    } else {
      assert.equal(after.misses, before.misses, `run ${run} needed no new block from the OS`);
      assert.equal(after.osBytes, warm.osBytes);
      assert.equal(stats.reservedBytes, reserved);
    }
    arena.reset();
  }
});

test("disposing an arena returns its chunks to the pool and makes its storages stale; it is idempotent", () => {
  const before = pool.stats();
  const arena = new Arena({ chunkBytes: 1 << 12 });
  const storage = Storage.rent(5000, { arena });
  Storage.rent(10, { arena });
  assert.equal(pool.stats().rentedBlocks - before.rentedBlocks, 2);
  arena.dispose();
  arena.dispose();
  assert.ok(arena.isDisposed && storage.isReleased);
  assert.equal(pool.stats().rentedBlocks, before.rentedBlocks);
  assert.throws(() => Storage.rent(10, { arena }), TypeError);
  assert.throws(() => arena.reset(), TypeError);
  assert.throws(() => new Arena({ chunkBytes: 0 }), TensorShapeError);
  assert.throws(() => new Arena({ chunkBytes: 2 ** 31 }), TensorShapeError);
});

test("storages never released return to the pool when the garbage collector finalizes them", () => {
  const isDeno = (globalThis as { Deno?: unknown }).Deno !== undefined;
  const child = fileURLToPath(new URL("./children/memory_gc_child.ts", import.meta.url));
  const argv = isDeno ? ["run", "-A", "--quiet", "--v8-flags=--expose-gc", child] : [child];
  const result = spawnSync(process.execPath, argv, { encoding: "utf8", timeout: 120_000 });
  assert.equal(result.status, 0, result.stderr);
  const report = JSON.parse(result.stdout.trim().split("\n").at(-1)!);
  assert.equal(report.before.maxIdleBytes, 2 ** 31, "the idle cap defaults to 2 GiB");
  assert.equal(report.leakedStats.rentedBlocks - report.before.rentedBlocks, report.leaked);
  assert.equal(report.after.rentedBlocks, report.before.rentedBlocks);
  assert.equal(report.after.rentedBytes, report.before.rentedBytes);
  assert.equal(report.after.osBytes, report.after.idleBytes + report.after.rentedBytes);
});

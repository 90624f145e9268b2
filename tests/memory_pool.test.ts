// The buffer pool (spec 000 §6): size classes, alignment, free lists, the idle cap and the stats.
import { test } from "node:test";
import assert from "node:assert/strict";
import { TensorShapeError } from "../src/core/errors.ts";
import { BufferPool, type PoolStats } from "../src/memory/pool.ts";
import { ffi } from "../src/native/runtime.ts";
import { Storage } from "../src/memory/storage.ts";

const pool = BufferPool.default;

/** The class rule as the spec states it, in BigInt so that no intermediate can round or overflow. */
function specClass(n: number): number {
  const big = BigInt(n);
  if (big <= 256n) return Number(big <= 64n ? 64n : (big + 63n) / 64n * 64n);
  const b = 1n << BigInt((big - 1n).toString(2).length - 1);
  const step = b / 4n;
  return Number(b + (big - b + step - 1n) / step * step);
}

function delta(before: PoolStats, after: PoolStats): Record<keyof PoolStats, number> {
  const result = {} as Record<keyof PoolStats, number>;
  for (const key of Object.keys(before) as (keyof PoolStats)[]) result[key] = after[key] - before[key];
  return result;
}

const address = (storage: Storage) => ffi.address(storage.pointer("address"));

test("size classes: 64-byte steps up to 256, then b·{1.25, 1.5, 1.75, 2}, 2^31 − 1 maps to 2^31", () => {
  const table: [number, number][] = [
    [0, 64],
    [1, 64],
    [63, 64],
    [64, 64],
    [65, 128],
    [192, 192],
    [193, 256],
    [256, 256],
    [257, 320],
    [320, 320],
    [321, 384],
    [384, 384],
    [385, 448],
    [448, 448],
    [449, 512],
    [512, 512],
    [513, 640],
    [1000, 1024],
    [1024, 1024],
    [1025, 1280],
    [2 ** 20, 2 ** 20],
    [2 ** 20 + 1, 1.25 * 2 ** 20],
    [2 ** 30, 2 ** 30],
    [2 ** 30 + 1, 1.25 * 2 ** 30],
    [1.75 * 2 ** 30 + 1, 2 ** 31],
    [2 ** 31 - 1, 2 ** 31],
  ];
  for (const [n, size] of table) {
    assert.equal(BufferPool.sizeClass(n), size, `sizeClass(${n})`);
    assert.equal(specClass(n), size, `the spec's rule for ${n}`);
  }
});

test("size classes agree with the spec's rule at every class edge and waste less than 25 % above 256", () => {
  const edges: number[] = [];
  for (let log = 8; log <= 30; log++) {
    for (const quarter of [4, 5, 6, 7, 8]) {
      const size = quarter * 2 ** (log - 2);
      edges.push(size - 1, size, size + 1);
    }
  }
  let state = 12345;
  for (let i = 0; i < 2000; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    edges.push(state % 2 ** 31);
  }
  for (const n of edges.filter((n) => n >= 0 && n <= 2 ** 31 - 1)) {
    const size = BufferPool.sizeClass(n);
    assert.equal(size, specClass(n), `sizeClass(${n})`);
    assert.ok(size >= n && size % 64 === 0);
    if (n > 256) assert.ok((size - n) / n < 0.25, `waste at ${n}`);
  }
});

test("sizeClass refuses lengths outside 0 … 2^31 − 1 with a TensorShapeError", () => {
  for (const bad of [-1, 2 ** 31, 1.5, NaN, Infinity]) {
    assert.throws(
      () => BufferPool.sizeClass(bad),
      (error: Error) =>
        error instanceof TensorShapeError && error instanceof RangeError && /2\^31/.test(error.message),
    );
    assert.throws(() => Storage.rent(bad), TensorShapeError);
  }
});

test("every block starts on a 64-byte boundary and rented bytes count whole classes", () => {
  for (const n of [0, 1, 3, 64, 65, 255, 257, 1000, 4097, 100_000, 1 << 20, 3_000_001]) {
    const before = pool.stats();
    const storage = Storage.rent(n);
    const during = pool.stats();
    assert.equal(address(storage) % 64, 0, `n=${n}`);
    assert.equal(during.rentedBytes - before.rentedBytes, BufferPool.sizeClass(n));
    assert.equal(during.rentedBlocks - before.rentedBlocks, 1);
    storage.release();
    const after = pool.stats();
    assert.equal(after.rentedBlocks, before.rentedBlocks);
    assert.equal(after.rentedBytes, before.rentedBytes);
    assert.equal(after.osBytes, after.rentedBytes + after.idleBytes);
  }
});

test("a released block waits in its class's free list and serves the next request of the class", () => {
  const first = Storage.rent(1100);
  const where = address(first);
  first.release();
  const before = pool.stats();
  const sameClass = Storage.rent(1280);
  const after = pool.stats();
  assert.equal(address(sameClass), where);
  assert.deepEqual(delta(before, after), {
    rentedBytes: 1280,
    rentedBlocks: 1,
    idleBytes: -1280,
    idleBlocks: -1,
    osBytes: 0,
    hits: 1,
    misses: 0,
    maxIdleBytes: 0,
  });
  const otherClass = Storage.rent(1281);
  assert.notEqual(address(otherClass), where);
  sameClass.release();
  otherClass.release();
});

test("zeroing happens on request, and reuse is deterministic: last released, first rented", () => {
  const blocks = [Storage.rent(500), Storage.rent(500), Storage.rent(500)];
  const addresses = blocks.map(address);
  for (const block of blocks) {
    new Uint8Array(block.buffer("fill")).fill(7);
    block.release();
  }
  const again = [Storage.rent(500, { zero: true }), Storage.rent(500, { zero: true }), Storage.rent(500)];
  assert.deepEqual(again.map(address), addresses.toReversed());
  for (const block of again.slice(0, 2)) {
    assert.ok(new Uint8Array(block.buffer("read")).every((b) => b === 0));
  }
  for (const block of again) block.release();
});

test("at maxIdleBytes a released block displaces the blocks released longest ago; lowering the cap frees idle blocks", () => {
  const saved = pool.maxIdleBytes;
  try {
    pool.maxIdleBytes = 0;
    // Room for one old 64 KiB block and one 80 KiB block.
    pool.maxIdleBytes = 65536 + 81920;
    const old = [Storage.rent(65536), Storage.rent(65536)];
    for (const storage of old) storage.release();
    assert.equal(pool.stats().idleBytes, 2 * 65536);
    const before = pool.stats();
    Storage.rent(81920).release();
    const after = pool.stats();
    // The new block stayed; one of the old ones went back to the OS to make room.
    assert.equal(after.misses, before.misses + 1);
    assert.equal(after.idleBytes, 65536 + 81920);
    assert.equal(after.osBytes - before.osBytes, 81920 - 65536);
    // So a loop that comes back to the new size finds its block instead of asking the OS again.
    Storage.rent(81920).release();
    assert.equal(pool.stats().misses, after.misses);
    // A block larger than the cap itself goes back at once and displaces nothing.
    Storage.rent(1 << 18).release();
    assert.equal(pool.stats().idleBytes, 65536 + 81920);
    pool.maxIdleBytes = 0;
    const empty = pool.stats();
    assert.equal(empty.idleBytes, 0);
    assert.equal(empty.idleBlocks, 0);
    assert.equal(empty.osBytes, empty.rentedBytes);
    assert.throws(() => (pool.maxIdleBytes = -1), TensorShapeError);
  } finally {
    pool.maxIdleBytes = saved;
  }
  assert.equal(pool.maxIdleBytes, saved);
});

test("trim gives every idle block back; stats stay consistent", () => {
  const storages = [10, 1000, 100_000].map((n) => Storage.rent(n));
  for (const storage of storages) storage.release();
  assert.ok(pool.stats().idleBlocks >= 3);
  pool.trim();
  const stats = pool.stats();
  assert.equal(stats.idleBlocks, 0);
  assert.equal(stats.idleBytes, 0);
  assert.equal(stats.osBytes, stats.rentedBytes);
});

// The CHECKED build (spec 000 §6): new and returned memory reads 0xFF, 64 canary bytes of 0xA5 follow every
// buffer and are verified on release and arena reset; an overrun makes release throw, saying how far past
// the end it wrote. These tests run only against the CHECKED library; the suite runs against both.
import { test } from "node:test";
import assert from "node:assert/strict";
import { BufferOverrunError } from "../src/core/errors.ts";
import { kernelInfo } from "../src/native/kernel_info.ts";
import { Arena, BufferPool } from "../src/memory/pool.ts";
import { native } from "../src/native/library.ts";
import { ffi } from "../src/native/runtime.ts";
import { ActivationScope } from "../src/memory/scope.ts";
import { Storage } from "../src/memory/storage.ts";

const skip = kernelInfo().checked ? false : "needs the CHECKED library (zig build -Dchecked=true)";
const pool = BufferPool.default;

/** Writes `count` bytes just past the end of the storage, as an overrunning kernel would. */
function overrun(storage: Storage, count: number): void {
  native.zt_test_write_past_end(storage.pointer("overrun"), storage.byteLength, count);
}

/** A fresh view of `byteLength` bytes at the storage's address, readable after release (test-only). */
function rawBytes(storage: Storage, byteLength: number): Uint8Array {
  return new Uint8Array(ffi.arrayBuffer(storage.pointer("raw"), byteLength));
}

function assertOverrun(action: () => unknown, op: string, bytesPastEnd: number, byteLength: number): void {
  assert.throws(action, (error: Error) => {
    assert.ok(error instanceof BufferOverrunError, String(error));
    assert.equal(error.op, op);
    assert.equal(error.bytesPastEnd, bytesPastEnd);
    assert.equal(error.byteLength, byteLength);
    assert.match(error.message, new RegExp(`${bytesPastEnd} bytes past the end`));
    return true;
  });
}

test("CHECKED: new pool memory reads 0xFF unless zeroing was asked for", { skip }, () => {
  for (const n of [1, 64, 100, 5000]) {
    const poisoned = Storage.rent(n);
    const zeroed = Storage.rent(n, { zero: true });
    assert.ok(new Uint8Array(poisoned.buffer("read")).every((b) => b === 0xff), `n=${n}`);
    assert.ok(new Uint8Array(zeroed.buffer("read")).every((b) => b === 0), `n=${n}`);
    poisoned.release();
    zeroed.release();
  }
});

test("CHECKED: 64 canary bytes of 0xA5 follow the buffer's length", { skip }, () => {
  const storage = Storage.rent(100, { zero: true });
  const raw = rawBytes(storage, 100 + 64);
  assert.ok(raw.subarray(100).every((b) => b === 0xa5));
  storage.release();
});

test("CHECKED: released memory is filled with 0xFF", { skip }, () => {
  const storage = Storage.rent(256, { zero: true });
  const raw = rawBytes(storage, 256);
  storage.release();
  // The first 8 bytes link the block into its free list.
  assert.ok(raw.subarray(8).every((b) => b === 0xff));
});

test("CHECKED: an overrun makes release throw how many bytes past the end were written", { skip }, () => {
  for (const [n, count] of [[10, 1], [64, 5], [1000, 64], [0, 3]]) {
    const storage = Storage.rent(n);
    const where = ffi.address(storage.pointer("address"));
    overrun(storage, count);
    const before = pool.stats();
    assertOverrun(() => storage.release(), "release", count, n);
    assert.ok(storage.isReleased);
    assert.equal(pool.stats().rentedBlocks, before.rentedBlocks - 1, "the block was recycled anyway");
    storage.release();
    const again = Storage.rent(n);
    assert.equal(ffi.address(again.pointer("address")), where);
    again.release();
  }
});

test("CHECKED: a scope that ends releases everything, then throws the overrun", { skip }, () => {
  const scope = new ActivationScope();
  const victims = [0, 1, 2].map(() => Storage.rent(48, { scoped: true }));
  overrun(victims[1], 9);
  assertOverrun(() => scope.dispose(), "release", 9, 48);
  assert.ok(victims.every((storage) => storage.isReleased));
});

test(
  "CHECKED: arena memory is poisoned and canary-guarded; reset reports the worst overrun",
  { skip },
  () => {
    using arena = new Arena({ chunkBytes: 1 << 12 });
    const small = Storage.rent(100, { arena });
    const large = Storage.rent(10_000, { arena });
    assert.ok(new Uint8Array(small.buffer("read")).every((b) => b === 0xff));
    assert.ok(rawBytes(small, 164).subarray(100).every((b) => b === 0xa5));
    overrun(small, 7);
    overrun(large, 2);
    assertOverrun(() => arena.reset(), "reset", 7, -1);
    assert.ok(small.isReleased && large.isReleased);
    const next = Storage.rent(100, { arena });
    assert.ok(new Uint8Array(next.buffer("read")).every((b) => b === 0xff));
    arena.reset();
  },
);

test(
  "CHECKED: releasing an overrun arena storage throws once; the reset does not report it again",
  { skip },
  () => {
    using arena = new Arena({ chunkBytes: 1 << 12 });
    const storage = Storage.rent(40, { arena, zero: true });
    const raw = rawBytes(storage, 40);
    overrun(storage, 12);
    assertOverrun(() => storage.release(), "release", 12, 40);
    assert.ok(raw.every((b) => b === 0xff), "released arena memory is poisoned");
    storage.release();
    arena.reset();
  },
);

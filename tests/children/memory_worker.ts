// A Worker of memory_workers.test.ts: rents, writes, checks and releases pool and arena storages for a while,
// concurrently with another such Worker, and reports what it saw. Both share the process's pool.
import { Arena } from "../../src/memory/pool.ts";
import { ffi } from "../../src/native/runtime.ts";
import { Storage } from "../../src/memory/storage.ts";

/** What the worker asks for and what it reports. */
export interface WorkerTask {
  readonly id: number;
  readonly iterations: number;
}
export interface WorkerReport {
  readonly id: number;
  /** Rents this worker made from the pool, its arena's chunks and oversized blocks included. */
  readonly poolRents: number;
  readonly arenaRents: number;
  /** Words that did not hold what this worker wrote, or blocks that were not 64-byte aligned. */
  readonly corrupt: number;
  /** When the worker started and finished its loop (ms since the epoch), to prove the two overlapped. */
  readonly startedAt: number;
  readonly endedAt: number;
}

const worker = globalThis as unknown as {
  onmessage: ((event: { data: WorkerTask }) => void) | null;
  postMessage(message: WorkerReport): void;
};

function fillAndCount(storage: Storage, tag: number, expected: number | null): number {
  const words = new Uint32Array(storage.buffer("fill"), 0, storage.byteLength >>> 2);
  let corrupt = 0;
  if (expected !== null) {
    for (let i = 0; i < words.length; i++) if (words[i] !== expected) corrupt++;
  }
  words.fill(tag);
  return corrupt;
}

function check(storage: Storage, tag: number): number {
  const words = new Uint32Array(storage.buffer("check"), 0, storage.byteLength >>> 2);
  let corrupt = 0;
  for (let i = 0; i < words.length; i++) if (words[i] !== tag) corrupt++;
  return corrupt;
}

function run({ id, iterations }: WorkerTask): WorkerReport {
  const startedAt = performance.timeOrigin + performance.now();
  let state = 0x9e3779b9 ^ (id * 7919);
  const random = (limit: number) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state % limit;
  };
  const held: (Storage | null)[] = Array(16).fill(null);
  const tags: number[] = Array(16).fill(0);
  const arena = new Arena({ chunkBytes: 1 << 16 });
  let poolRents = 0;
  let arenaRents = 0;
  let corrupt = 0;
  for (let step = 0; step < iterations; step++) {
    const slot = random(held.length);
    const storage = held[slot];
    if (storage !== null) {
      corrupt += check(storage, tags[slot]);
      storage.release();
      held[slot] = null;
    } else {
      const zero = random(2) === 1;
      const fresh = Storage.rent(random(20_000), { zero });
      poolRents++;
      if (ffi.address(fresh.pointer("align")) % 64 !== 0) corrupt++;
      tags[slot] = ((id + 1) << 24) | step;
      corrupt += fillAndCount(fresh, tags[slot], zero ? 0 : null);
      held[slot] = fresh;
    }
    if (step % 64 === 63) {
      const blocks = [0, 1, 2, 3].map((k) => Storage.rent(random(k === 3 ? 100_000 : 9000), { arena }));
      arenaRents += blocks.length;
      blocks.forEach((block, k) => fillAndCount(block, step + k, null));
      blocks.forEach((block, k) => (corrupt += check(block, step + k)));
      poolRents += arena.stats().largeBlocks;
      arena.reset();
    }
  }
  for (const storage of held) storage?.release();
  poolRents += arena.stats().chunks;
  arena.dispose();
  const endedAt = performance.timeOrigin + performance.now();
  return { id, poolRents, arenaRents, corrupt, startedAt, endedAt };
}

worker.onmessage = (event) => worker.postMessage(run(event.data));

// Child process of memory_storage.test.ts: storages that are never released go back to the pool once the
// garbage collector finalizes them. Run by Deno with --v8-flags=--expose-gc, or by Bun. Prints one JSON line.
import { BufferPool } from "../../src/memory/pool.ts";
import { Storage } from "../../src/memory/storage.ts";
import { ActivationScope } from "../../src/memory/scope.ts";

const pool = BufferPool.default;

/** Overwrites stack slots that may still hold a stale reference (Bun's collector scans the stack conservatively). */
function clobberStack(depth: number): number {
  const filler = [depth, depth + 1, depth + 2, depth + 3];
  return depth === 0 ? filler.length : clobberStack(depth - 1) + filler[0];
}

/** Runs full collections in either runtime, letting the finalizers' tasks run, until `done()` or 50 rounds. */
async function collect(done: () => boolean): Promise<number> {
  const bun = (globalThis as { Bun?: { gc(force: boolean): void } }).Bun;
  const gc = (globalThis as { gc?: () => void }).gc;
  if (bun === undefined && gc === undefined) throw new Error("run Deno with --v8-flags=--expose-gc");
  let round = 0;
  while (round < 50 && !done()) {
    clobberStack(200);
    if (bun !== undefined) bun.gc(true);
    else gc!();
    await new Promise((resolve) => setTimeout(resolve, 10));
    round++;
  }
  return round;
}

/** Rents `count` storages of each kind and drops them; returns how many were left for the collector. */
function leak(count: number): number {
  for (let i = 0; i < count; i++) {
    new Uint8Array(Storage.rent(100 + i).buffer("fill")).fill(1);
    Storage.rent(64, { scoped: true });
    {
      using _ = new ActivationScope();
      ActivationScope.keep({ storage: Storage.rent(300, { scoped: true }) });
    }
    Storage.rent(200).release();
  }
  return 3 * count;
}

const before = pool.stats();
const leaked = leak(200);
const leakedStats = pool.stats();
const rounds = await collect(() => pool.stats().rentedBlocks === before.rentedBlocks);
const after = pool.stats();
console.log(JSON.stringify({ leaked, before, leakedStats, after, rounds }));

/**
 * Memory benchmarks: renting and releasing from the buffer pool against `new Float32Array(n)` and against a
 * fresh native allocation (posix_memalign + free, bypassing the pool), for 64 B to 64 MiB, in the same run;
 * and the steady-state cost of a small `Storage` rented and released (unscoped, in a scope, from an arena).
 *
 *   deno bench -A bench/memory_bench.ts     Deno: groups with `new Float32Array` as the baseline, ratios in
 *                                           the summaries
 *   bun bench/memory_bench.ts               Bun: the same cases timed in a loop, ratios in a table
 *
 * @module
 */
import { Arena } from "../src/memory.ts";
import { native } from "../src/native/library.ts";
import type { NativePointer } from "../src/native/symbols.ts";
import { ActivationScope } from "../src/scope.ts";
import { Storage } from "../src/storage.ts";

interface Case {
  readonly group: string;
  readonly name: string;
  readonly baseline?: boolean;
  readonly fn: () => void;
}

const KiB = 1024;
const MiB = 1024 * KiB;
const sizes = [64, 4 * KiB, 256 * KiB, 4 * MiB, 64 * MiB];

function label(bytes: number): string {
  if (bytes >= MiB) return `${bytes / MiB} MiB`;
  if (bytes >= KiB) return `${bytes / KiB} KiB`;
  return `${bytes} B`;
}

/** Keeps results observable so that no engine can drop the allocation as dead code. */
let sink = 0;

function sizeCases(bytes: number): Case[] {
  const group = `allocate and free ${label(bytes)}`;
  return [
    {
      group,
      name: `new Float32Array (${label(bytes)}, zeroed)`,
      baseline: true,
      fn: () => {
        sink += new Float32Array(bytes / 4).length;
      },
    },
    {
      group,
      name: `pool rent + release (${label(bytes)})`,
      fn: () => {
        const pointer = native.zt_pool_rent(bytes, 0) as NativePointer;
        native.zt_pool_release(pointer, bytes);
      },
    },
    {
      group,
      name: `pool rent zeroed + release (${label(bytes)})`,
      fn: () => {
        const pointer = native.zt_pool_rent(bytes, 1) as NativePointer;
        native.zt_pool_release(pointer, bytes);
      },
    },
    {
      group,
      name: `fresh native allocation + free (${label(bytes)})`,
      fn: () => {
        const pointer = native.zt_test_os_alloc(bytes) as NativePointer;
        native.zt_test_os_free(pointer);
      },
    },
  ];
}

/** Operations per call in the small-storage group: enough to amortize a scope's creation and the timer. */
const BATCH = 1000;

function storageCases(): Case[] {
  const group = `small storage (64 B), steady state, ${BATCH} per call`;
  const arena = new Arena();
  return [
    {
      group,
      name: `new Float32Array(16) ×${BATCH}`,
      baseline: true,
      fn: () => {
        for (let i = 0; i < BATCH; i++) sink += new Float32Array(16).length;
      },
    },
    {
      group,
      name: `Storage.rent + release, unscoped (finalizer registered) ×${BATCH}`,
      fn: () => {
        for (let i = 0; i < BATCH; i++) Storage.rent(64).release();
      },
    },
    {
      group,
      name: `Storage.rent + release in an ActivationScope ×${BATCH}`,
      fn: () => {
        using _ = new ActivationScope();
        for (let i = 0; i < BATCH; i++) Storage.rent(64, { scoped: true }).release();
      },
    },
    {
      group,
      name: `Storage.rent scoped, released by the scope's end ×${BATCH}`,
      fn: () => {
        using _ = new ActivationScope();
        for (let i = 0; i < BATCH; i++) Storage.rent(64, { scoped: true });
      },
    },
    {
      group,
      name: `Storage.rent from an arena, then one reset ×${BATCH}`,
      fn: () => {
        for (let i = 0; i < BATCH; i++) Storage.rent(64, { arena });
        arena.reset();
      },
    },
  ];
}

const cases = [...storageCases(), ...sizes.flatMap(sizeCases)];

interface DenoBench {
  bench(options: { name: string; group: string; baseline?: boolean; fn: () => void }): void;
}

/** Bun has no `bench` runner: time each case in a loop until it has run 200 ms, and print ratios. */
function timeCase(fn: () => void): number {
  for (let i = 0; i < 100; i++) fn();
  let iterations = 1;
  let elapsed = 0;
  while (elapsed < 200) {
    iterations *= 2;
    const start = performance.now();
    for (let i = 0; i < iterations; i++) fn();
    elapsed = performance.now() - start;
  }
  return (elapsed * 1e6) / iterations;
}

function runLoops(): void {
  const groups = [...new Set(cases.map((c) => c.group))];
  for (const group of groups) {
    const inGroup = cases.filter((c) => c.group === group);
    const timings = inGroup.map((c) => ({ name: c.name, ns: timeCase(c.fn), baseline: c.baseline === true }));
    const base = timings.find((t) => t.baseline)!;
    console.log(`\n${group}`);
    for (const t of timings) {
      const ratio = t.baseline
        ? "baseline"
        : base.ns >= t.ns
        ? `${(base.ns / t.ns).toFixed(2)}x faster than the baseline`
        : `${(t.ns / base.ns).toFixed(2)}x slower than the baseline`;
      console.log(`  ${t.name.padEnd(66)} ${t.ns.toFixed(1).padStart(12)} ns/call   ${ratio}`);
    }
  }
  console.log(`\n(sink ${sink})`);
}

const deno = (globalThis as { Deno?: DenoBench }).Deno;
if (deno !== undefined) {
  for (const c of cases) deno.bench({ name: c.name, group: c.group, baseline: c.baseline, fn: c.fn });
} else {
  runLoops();
}

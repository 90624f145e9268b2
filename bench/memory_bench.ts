/**
 * Memory benchmarks: renting and releasing from the buffer pool against `new Float32Array(n)` and against a
 * fresh native allocation (posix_memalign + free, bypassing the pool), for 64 B to 64 MiB, in the same run;
 * and the steady-state cost of a small `Storage` rented and released (unscoped, in a scope, from an arena) and
 * of a small tensor created and disposed.
 *
 *   deno bench -A bench/memory_bench.ts     Deno: groups with `new Float32Array` as the baseline, ratios in
 *                                           the summaries
 *   bun bench/memory_bench.ts               Bun: the same cases timed in a loop, ratios in a table
 *
 * @module
 */
import { Arena } from "../src/memory/pool.ts";
import { native } from "../src/native/library.ts";
import type { NativePointer } from "../src/native/symbols.ts";
import { ActivationScope } from "../src/memory/scope.ts";
import { Storage } from "../src/memory/storage.ts";
import { Tensor } from "../src/tensor.ts";
import { type BenchCase, runBenchmarks } from "./harness.ts";

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

function sizeCases(bytes: number): BenchCase[] {
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
        native.zt_test_os_free(pointer, bytes);
      },
    },
  ];
}

/** Operations per call in the small-storage group: enough to amortize a scope's creation and the timer. */
const BATCH = 1000;

function storageCases(): BenchCase[] {
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
      name: `Tensor.empty([16]) then dispose ×${BATCH}`,
      fn: () => {
        for (let i = 0; i < BATCH; i++) Tensor.empty([16]).dispose();
      },
    },
    {
      group,
      name: `Tensor.zeros([16]) then dispose ×${BATCH}`,
      fn: () => {
        for (let i = 0; i < BATCH; i++) Tensor.zeros([16]).dispose();
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

runBenchmarks(cases, { note: () => `(sink ${sink})` });

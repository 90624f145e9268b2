/**
 * The native memory behind every tensor: the process-wide buffer pool (shared by every Worker, since each
 * loads the same library) and arenas, bump allocators for the state of one run.
 *
 * @module
 */
import { BufferOverrunError, OptionError, TensorShapeError } from "../core/errors.ts";
import { checkOptions } from "../core/options.ts";
import { library, native } from "../native/library.ts";
import { ffi } from "../native/runtime.ts";
import type { NativePointer } from "../native/symbols.ts";

/** The largest request the pool and arenas serve: 2^31 − 1 bytes. */
export const MAX_BYTE_LENGTH: number = 2 ** 31 - 1;

/** Throws a `TensorShapeError` from `op` unless `n` is an integer byte count from `min` to 2^31 − 1. */
export function checkByteLength(op: string, name: string, n: number, min = 0): void {
  if (!Number.isInteger(n) || n < min || n > MAX_BYTE_LENGTH) badByteLength(op, name, n, min);
}

/** `checkByteLength`'s error (apart, so the check inlines into every rent). */
function badByteLength(op: string, name: string, n: number, min: number): never {
  throw new TensorShapeError(op, `${name} must be an integer from ${min} to 2^31 − 1, got ${n}`);
}

/** ArrayBuffers zigtensor detached itself (on release or reset), as opposed to ones transferred away. */
const detachedHere = new WeakSet<ArrayBuffer>();

/**
 * Detaches an ArrayBuffer over native memory, so typed arrays over it read as empty; internal to zigtensor.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { detachBuffer, wasTransferred } from "./pool.ts";
 * const buffer = new ArrayBuffer(8);
 * detachBuffer(buffer);
 * assert.ok(buffer.detached && !wasTransferred(buffer));
 * ```
 */
export function detachBuffer(buffer: ArrayBuffer): void {
  if (buffer.detached) return;
  detachedHere.add(buffer);
  buffer.transfer(0);
}

/**
 * Whether something other than zigtensor detached `buffer`: `transfer()`, `structuredClone` or `postMessage`
 * with a transfer list moved the memory to a new owner the pool does not know; internal to zigtensor.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wasTransferred } from "./pool.ts";
 * const buffer = new ArrayBuffer(8);
 * buffer.transfer();
 * assert.ok(wasTransferred(buffer));
 * ```
 */
export function wasTransferred(buffer: ArrayBuffer): boolean {
  return buffer.detached && !detachedHere.has(buffer);
}

/** What the pool holds, in bytes of size classes (a 100-byte request counts 128) and in blocks. */
export interface PoolStats {
  /** Bytes of the blocks rented out now. */
  readonly rentedBytes: number;
  /** Blocks rented out now. */
  readonly rentedBlocks: number;
  /** Bytes of the released blocks waiting in the free lists. */
  readonly idleBytes: number;
  /** Released blocks waiting in the free lists. */
  readonly idleBlocks: number;
  /** Bytes obtained from the OS and not yet given back: rented plus idle. */
  readonly osBytes: number;
  /** Rents served from a free list. */
  readonly hits: number;
  /** Rents that needed new memory from the OS. */
  readonly misses: number;
  /** The idle cap: a released block that would take the idle bytes above it is freed instead. */
  readonly maxIdleBytes: number;
}

/** The fields of `BufferPool.Stats` in `zig/memory/BufferPool.zig`, in order; each a u64. */
const POOL_STAT_FIELDS = [
  "rentedBytes",
  "rentedBlocks",
  "idleBytes",
  "idleBlocks",
  "osBytes",
  "hits",
  "misses",
  "maxIdleBytes",
] as const;

/** Reads `count` consecutive little-endian u64 values (each below 2^53) from a filled scratch array. */
function readU64s(words: Uint32Array, count: number): number[] {
  const values: number[] = [];
  for (let i = 0; i < count; i++) values.push(words[2 * i] + words[2 * i + 1] * 2 ** 32);
  return values;
}

/**
 * The process-wide buffer pool: 64-byte aligned native blocks served from size classes (64, 128, 192, 256,
 * then four per power of two), one free list per class, deterministic and safe from many threads. Tensors
 * rent from it through `Storage`; this class reports and tunes it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BufferPool } from "@zigtensor/zigtensor";
 * const stats = BufferPool.default.stats();
 * assert.ok(stats.osBytes === stats.rentedBytes + stats.idleBytes);
 * assert.ok(BufferPool.sizeClass(1000) === 1024);
 * ```
 */
export class BufferPool {
  /** The pool every storage of the process rents from. */
  static readonly default: BufferPool = new BufferPool();

  /** Scratch for the stats; over an explicit ArrayBuffer, which never lives on the JS heap and never moves. */
  readonly #words = new Uint32Array(new ArrayBuffer(8 * POOL_STAT_FIELDS.length));

  private constructor() {}

  /**
   * The size class a request of `byteLength` bytes is served from: for n ≤ 256, max(64, n rounded up to a
   * multiple of 64); above, with b the largest power of two below n, b + ceil((n − b)/(b/4))·(b/4).
   * Computed by the library in 64-bit arithmetic, so 2^31 − 1 maps to 2^31.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { BufferPool } from "@zigtensor/zigtensor";
   * assert.ok(BufferPool.sizeClass(0) === 64 && BufferPool.sizeClass(257) === 320);
   * assert.ok(BufferPool.sizeClass(2 ** 31 - 1) === 2 ** 31);
   * ```
   */
  static sizeClass(byteLength: number): number {
    checkByteLength("BufferPool.sizeClass", "byteLength", byteLength);
    return native.zt_pool_size_class(byteLength);
  }

  /**
   * A snapshot of the pool's counters. Workers share the pool, so the numbers include theirs.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { BufferPool } from "@zigtensor/zigtensor";
   * const { hits, misses } = BufferPool.default.stats();
   * assert.ok(hits >= 0 && misses >= 0);
   * ```
   */
  stats(): PoolStats {
    native.zt_pool_stats(ffi.pointerOf(this.#words));
    const values = readU64s(this.#words, POOL_STAT_FIELDS.length);
    return Object.fromEntries(POOL_STAT_FIELDS.map((name, i) => [name, values[i]])) as unknown as PoolStats;
  }

  /**
   * The idle cap in bytes (default 2 GiB). Lowering it frees idle blocks, largest classes first, until the
   * idle bytes fit under it.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { BufferPool } from "@zigtensor/zigtensor";
   * const pool = BufferPool.default;
   * const previous = pool.maxIdleBytes;
   * pool.maxIdleBytes = 0;
   * assert.ok(pool.stats().idleBytes === 0);
   * pool.maxIdleBytes = previous;
   * ```
   */
  get maxIdleBytes(): number {
    return this.stats().maxIdleBytes;
  }

  set maxIdleBytes(bytes: number) {
    if (!Number.isSafeInteger(bytes) || bytes < 0) {
      throw new TensorShapeError(
        "BufferPool.maxIdleBytes",
        `the cap must be a safe integer ≥ 0, got ${bytes}`,
      );
    }
    native.zt_pool_set_max_idle_bytes(bytes);
  }

  /**
   * Gives every idle block back to the OS.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { BufferPool } from "@zigtensor/zigtensor";
   * BufferPool.default.trim();
   * assert.ok(BufferPool.default.stats().idleBlocks === 0);
   * ```
   */
  trim(): void {
    native.zt_pool_trim();
  }
}

/** Options of `new Arena`. */
export interface ArenaOptions {
  /**
   * Bytes per chunk taken from the pool; a request larger than a chunk gets a pool block of its own.
   * @default 1048576
   */
  readonly chunkBytes?: number;
}

/** What an arena holds. */
export interface ArenaStats {
  /** Standard chunks held; they are kept across resets. */
  readonly chunks: number;
  /** Oversized blocks held until the next reset. */
  readonly largeBlocks: number;
  /** Bytes rented from the pool for chunks and oversized blocks. */
  readonly reservedBytes: number;
  /** Bytes handed out since the last reset (padding, and in CHECKED builds headers and canaries, included). */
  readonly usedBytes: number;
  /** How many times the arena was reset (or disposed). */
  readonly generation: number;
}

/** Module-private access from `Storage` to an arena's allocator; not exported from the package. */
export const arenaAccess: {
  alloc(arena: Arena, byteLength: number, zero: boolean): NativePointer;
  track(arena: Arena, buffer: ArrayBuffer): void;
} = {
  alloc: () => {
    throw new Error("unreachable: Arena's static block sets this");
  },
  track: () => {},
};

/** The finalizer's view of an arena: its native allocator and the buffers made over its blocks. */
interface ArenaRecord {
  pointer: NativePointer | null;
  /** ArrayBuffers made over the arena's blocks since the last reset, detached by the next one. */
  buffers: ArrayBuffer[];
  /** After the arena was collected: buffers still reachable from handed-out typed arrays. */
  pending: number;
}

/**
 * Destroys a collected arena's allocator once no handed-out typed array can reach its memory: an arena dropped
 * while arrays over its blocks live waits for every such buffer; one whose buffer was transferred away is
 * retired (its memory is never reused).
 */
const arenaLeaks = new FinalizationRegistry<ArenaRecord>((record) => {
  const buffers = record.buffers;
  record.buffers = [];
  if (buffers.some(wasTransferred)) {
    record.pointer = null;
    return;
  }
  for (const buffer of buffers) {
    if (buffer.detached) continue;
    record.pending++;
    arenaBufferLeaks.register(buffer, record);
  }
  if (record.pending === 0) destroyLeakedArena(record);
});

const arenaBufferLeaks = new FinalizationRegistry<ArenaRecord>((record) => {
  if (--record.pending === 0) destroyLeakedArena(record);
});

function destroyLeakedArena(record: ArenaRecord): void {
  if (record.pointer === null) return;
  const overrun = native.zt_arena_destroy(record.pointer);
  record.pointer = null;
  if (overrun !== 0) console.error(new BufferOverrunError("finalize", overrun, -1).message);
}

/**
 * A bump allocator for the state of one run: 64-byte aligned blocks carved from 1 MiB chunks (by default)
 * that come from the pool. `reset()` reclaims everything at once and makes every storage allocated from the
 * arena stale; after a warm-up run, a run with the same allocation sequence obtains no new native memory.
 * Not for sharing between concurrent runs: one arena per run.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Arena } from "@zigtensor/zigtensor";
 * using arena = new Arena({ chunkBytes: 1 << 16 });
 * assert.equal(arena.generation, 0);
 * arena.reset();
 * assert.equal(arena.generation, 1);
 * assert.equal(arena.stats().usedBytes, 0);
 * ```
 */
export class Arena implements Disposable {
  #pointer: NativePointer | null;
  #generation = 0;
  readonly #chunkBytes: number;
  readonly #record: ArenaRecord;
  readonly #words = new Uint32Array(new ArrayBuffer(32));

  static {
    arenaAccess.alloc = (arena, byteLength, zero) => arena.#alloc(byteLength, zero);
    arenaAccess.track = (arena, buffer) => arena.#record.buffers.push(buffer);
  }

  /** A new arena that allocates in chunks of `options.chunkBytes` (1 MiB by default). */
  constructor(options: ArenaOptions = {}) {
    const chunkBytes = checkOptions("Arena", options, ["chunkBytes"]).chunkBytes ?? 1 << 20;
    checkByteLength("Arena", "chunkBytes", chunkBytes, 1);
    this.#chunkBytes = chunkBytes;
    const pointer = createArena(chunkBytes);
    this.#pointer = pointer;
    this.#record = { pointer, buffers: [], pending: 0 };
    arenaLeaks.register(this, this.#record, this);
  }

  /**
   * Bumped by every `reset()` and by `dispose()`; a storage allocated in an earlier generation is stale.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Arena } from "@zigtensor/zigtensor";
   * const arena = new Arena();
   * arena.reset();
   * arena.dispose();
   * assert.ok(arena.generation === 2);
   * ```
   */
  get generation(): number {
    return this.#generation;
  }

  /**
   * Whether `dispose()` was called.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Arena } from "@zigtensor/zigtensor";
   * const arena = new Arena();
   * arena.dispose();
   * assert.ok(arena.isDisposed);
   * ```
   */
  get isDisposed(): boolean {
    return this.#pointer === null;
  }

  #alloc(byteLength: number, zero: boolean): NativePointer {
    if (this.#pointer === null) throw new OptionError("Storage.rent", "the arena was disposed");
    const pointer = native.zt_arena_alloc(this.#pointer, byteLength, zero ? 1 : 0);
    if (pointer === null) throw new RangeError(`Storage.rent: out of native memory for ${byteLength} bytes`);
    return pointer;
  }

  /**
   * Reclaims every block and makes every storage allocated so far stale (typed arrays over them read as
   * empty). In a CHECKED build throws `BufferOverrunError` after the reset when a block's canaries were
   * damaged.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Arena } from "@zigtensor/zigtensor";
   * using arena = new Arena();
   * arena.reset();
   * assert.ok(arena.stats().chunks === 0);
   * ```
   */
  reset(): void {
    if (this.#pointer === null) throw new OptionError("Arena.reset", "the arena was disposed");
    if (this.#detachBuffers()) {
      // A buffer over the arena's memory was transferred away: retire that memory, start a new allocator.
      this.#pointer = this.#record.pointer = createArena(this.#chunkBytes);
      return;
    }
    const overrun = native.zt_arena_reset(this.#pointer);
    if (overrun !== 0) throw new BufferOverrunError("reset", overrun, -1);
  }

  /**
   * Returns every chunk to the pool and makes every storage allocated from the arena stale. Idempotent.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Arena } from "@zigtensor/zigtensor";
   * const arena = new Arena();
   * arena.dispose();
   * arena.dispose();
   * assert.ok(arena.isDisposed);
   * ```
   */
  dispose(): void {
    const pointer = this.#pointer;
    if (pointer === null) return;
    this.#pointer = this.#record.pointer = null;
    const transferred = this.#detachBuffers();
    arenaLeaks.unregister(this);
    if (transferred) return;
    const overrun = native.zt_arena_destroy(pointer);
    if (overrun !== 0) throw new BufferOverrunError("dispose", overrun, -1);
  }

  /** Enables `using`: disposes the arena. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /**
   * Chunks, oversized blocks, reserved and used bytes, and the generation.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Arena } from "@zigtensor/zigtensor";
   * using arena = new Arena();
   * assert.ok(arena.stats().reservedBytes === 0);
   * ```
   */
  stats(): ArenaStats {
    if (this.#pointer === null) throw new OptionError("Arena.stats", "the arena was disposed");
    native.zt_arena_stats(this.#pointer, ffi.pointerOf(this.#words));
    const [chunks, largeBlocks, reservedBytes, usedBytes] = readU64s(this.#words, 4);
    return { chunks, largeBlocks, reservedBytes, usedBytes, generation: this.#generation };
  }

  /** Makes every storage stale and detaches their buffers; true when one was transferred away. */
  #detachBuffers(): boolean {
    this.#generation++;
    const buffers = this.#record.buffers;
    const transferred = buffers.some(wasTransferred);
    for (const buffer of buffers) detachBuffer(buffer);
    buffers.length = 0;
    return transferred;
  }
}

function createArena(chunkBytes: number): NativePointer {
  const pointer = native.zt_arena_create(chunkBytes);
  if (pointer === null) throw new RangeError("Arena: out of native memory");
  return pointer;
}

/** Whether the loaded library is the CHECKED build (poison and canaries). */
export const isCheckedBuild: boolean = library.checked;

// Frozen, like `Tensor`: no code outside the library can change what the methods of the pool or an arena do.
Object.freeze(BufferPool.prototype);
Object.freeze(BufferPool);
Object.freeze(Arena.prototype);
Object.freeze(Arena);

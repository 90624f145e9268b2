/**
 * `Storage`: one native block rented for one owner, shared by every handle and view of a tensor. A new
 * `Storage` object is made for every rent, so a stale handle keeps the old object and can neither read nor
 * release memory re-rented to someone else. The version counter lives here too (spec §7).
 *
 * Three ways a block goes back: `release()` (directly, or by the `ActivationScope` that tracks it), its
 * arena's reset, or, as a safety net for storages that escaped every scope, the finalizer after garbage
 * collection.
 *
 * @module
 */
import { BufferOverrunError, StaleTensorError } from "../core/errors.ts";
import { type Arena, arenaAccess, checkByteLength, detachBuffer, isCheckedBuild } from "./pool.ts";
import { native } from "../native/library.ts";
import { ffi } from "../native/runtime.ts";
import type { NativePointer } from "../native/symbols.ts";

/** Options of `Storage.rent`. */
export interface RentOptions {
  /**
   * Fill the block with zeros; otherwise its contents are unspecified (0xFF in a CHECKED build).
   * @default false
   */
  readonly zero?: boolean;
  /**
   * Carve the block from this arena instead of renting it from the pool.
   * @default null
   */
  readonly arena?: Arena | null;
  /**
   * Let the innermost `ActivationScope` of the current async context track it (operation outputs); when
   * no scope is open, or when false, the storage is the caller's and the finalizer is its safety net.
   * @default false
   */
  readonly scoped?: boolean;
}

/** The finalizer's view of a pool block: never the `Storage` itself, so registering keeps nothing alive. */
interface LeakRecord {
  readonly pointer: NativePointer;
  readonly byteLength: number;
  released: boolean;
  /**
   * The block's ArrayBuffer once one was made. Typed arrays handed out by `data()` hold it, so when the storage
   * is collected the block waits for the buffer too; a buffer found detached was transferred away, and its
   * block is retired, never rented again.
   */
  buffer: ArrayBuffer | null;
}

/**
 * Returns a leaked block to the pool once neither a handle nor a handed-out array can reach it: first the
 * storage is collected (its record then holds the buffer, if one was made), then the buffer. A finalizer
 * cannot throw to anyone, so an overrun is only logged.
 */
const leaks = new FinalizationRegistry<LeakRecord>((record) => {
  if (record.released) return;
  const buffer = record.buffer;
  if (buffer !== null) {
    record.buffer = null;
    if (buffer.detached) {
      // Transferred away: the new owner of the memory is unknown to the pool, so the block is retired.
      record.released = true;
      return;
    }
    leaks.register(buffer, record);
    return;
  }
  record.released = true;
  const overrun = native.zt_pool_release(record.pointer, record.byteLength);
  if (overrun !== 0) console.error(new BufferOverrunError("finalize", overrun, record.byteLength).message);
});

/**
 * The storages that one owner (an `ActivationScope`) releases together. Internal to zigtensor.
 *
 * @example
 * ```ts ignore
 * const set = new StorageSet(owner);
 * ```
 */
export class StorageSet<Owner = unknown> {
  /** The object this set belongs to. */
  readonly owner: Owner;
  /** The tracked storages; each knows its index here, so removal is a swap with the last. */
  readonly items: Storage[] = [];

  constructor(owner: Owner) {
    this.owner = owner;
  }

  /** Releases every tracked storage, newest first; throws the first error after all are released. */
  releaseAll(): void {
    let failure: unknown = null;
    const items = this.items;
    while (items.length > 0) {
      try {
        items[items.length - 1].release();
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== null) throw failure;
  }
}

/** The error when the pool cannot rent `byteLength` bytes (apart, so the rents stay small enough to inline). */
function outOfMemory(byteLength: number): never {
  throw new RangeError(`Storage.rent: out of native memory for ${byteLength} bytes`);
}

/** Hooks the scope module installs (storage.ts does not import it, so no cycle). */
let currentSet: () => StorageSet | null = () => null;

/**
 * Installs the function that finds the set collecting scoped storages now. Internal: called once by
 * `scope.ts`.
 *
 * @example
 * ```ts ignore
 * setScopeLookup(() => ActivationScope.current()?.set ?? null);
 * ```
 */
export function setScopeLookup(lookup: () => StorageSet | null): void {
  currentSet = lookup;
}

/**
 * Internal (not exported from the package): what native code is handed and checked against, read from the
 * storage's private fields, so that no property defined on a storage (or on `Storage.prototype`) stands in
 * for them. `storagePointer` throws `StaleTensorError(op)` after release.
 */
export let storagePointer: (storage: Storage, op: string) => NativePointer;
/** Internal: the bytes a storage holds (see `storagePointer`). */
export let storageBytes: (storage: Storage) => number;
/** Internal: whether `value` is a storage this module made (a brand check, not `instanceof`). */
export let isStorage: (value: unknown) => value is Storage;
/** Internal: `isReleased`, from the private fields. */
export let storageReleased: (storage: Storage) => boolean;
/** Internal: the version counter, from the private field (what saved tensors are checked against). */
export let storageVersion: (storage: Storage) => number;
/** Internal: `bumpVersion()`, on the private field. */
export let bumpStorageVersion: (storage: Storage) => void;

/** Module-private access to a storage's owner, for `ActivationScope`; not exported from the package. */
export const ownership: {
  ownerOf(storage: Storage): StorageSet | null;
  /** Moves the storage into `set`, or, when `set` is null, out of every set and into the finalizer's care. */
  moveTo(storage: Storage, set: StorageSet | null): void;
} = {
  ownerOf: () => null,
  moveTo: () => {},
};

/**
 * One native block: a pool block or an arena block, with its length, its release state and its version.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Storage } from "./storage.ts";
 * const storage = Storage.rent(16, { zero: true });
 * new Float32Array(storage.buffer("fill")).fill(1);
 * storage.release();
 * storage.release();
 * assert.ok(storage.isReleased);
 * ```
 */
export class Storage {
  readonly #byteLength: number;
  readonly #arena: Arena | null;
  readonly #pointer: NativePointer;
  readonly #generation: number;
  #buffer: ArrayBuffer | null = null;
  /**
   * A one-byte view of `#buffer` (when the block has bytes): its length drops to 0 when the buffer is detached,
   * and a typed array's length is a cheaper read than an ArrayBuffer's byteLength in both engines.
   */
  #probe: Uint8Array | null = null;
  #released = false;
  #version = 0;
  #leak: LeakRecord | null = null;
  #owner: StorageSet | null = null;
  #ownerIndex = -1;

  static {
    ownership.ownerOf = (storage) => storage.#owner;
    ownership.moveTo = (storage, set) => storage.#moveTo(set);
    storagePointer = (storage, op) => {
      if (storage.#stale()) throw new StaleTensorError(op);
      return storage.#pointer;
    };
    storageBytes = (storage) => storage.#byteLength;
    isStorage = (value): value is Storage => typeof value === "object" && value !== null && #pointer in value;
    storageReleased = (storage) => storage.#stale();
    storageVersion = (storage) => storage.#version;
    bumpStorageVersion = (storage) => {
      storage.#version++;
    };
  }

  private constructor(pointer: NativePointer, byteLength: number, arena: Arena | null) {
    this.#pointer = pointer;
    this.#byteLength = byteLength;
    this.#arena = arena;
    this.#generation = arena === null ? 0 : arena.generation;
  }

  /** The length in bytes the block was rented with (read-only: views are checked against it). */
  get byteLength(): number {
    return this.#byteLength;
  }

  /** The arena the block was carved from, or null for a pool block. */
  get arena(): Arena | null {
    return this.#arena;
  }

  /**
   * Rents `byteLength` bytes (0 ≤ n ≤ 2^31 − 1) from the pool, or from `options.arena`. Throws
   * `TensorShapeError` for a bad length and `RangeError` when native memory runs out.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Storage } from "./storage.ts";
   * const storage = Storage.rent(8, { zero: true });
   * assert.ok(new Uint8Array(storage.buffer("read")).every((b) => b === 0));
   * storage.release();
   * ```
   */
  static rent(byteLength: number, options?: RentOptions): Storage {
    checkByteLength("Storage.rent", "byteLength", byteLength);
    const zero = options?.zero === true;
    const arena = options?.arena ?? null;
    let storage: Storage;
    if (arena !== null) {
      storage = new Storage(arenaAccess.alloc(arena, byteLength, zero), byteLength, arena);
    } else {
      const pointer = native.zt_pool_rent(byteLength, zero ? 1 : 0);
      if (pointer === null) outOfMemory(byteLength);
      storage = new Storage(pointer, byteLength, null);
    }
    storage.#moveTo(options?.scoped === true ? currentSet() : null);
    return storage;
  }

  /**
   * `rent(byteLength, { scoped: true })` without the options: a pool block of uninitialized bytes for an
   * operation's output, tracked by the innermost scope. Internal (the path every op takes once per call).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Storage } from "./storage.ts";
   * const storage = Storage.rentScoped(16);
   * assert.ok(storage.byteLength === 16 && !storage.isReleased);
   * storage.release();
   * ```
   */
  static rentScoped(byteLength: number): Storage {
    checkByteLength("Storage.rent", "byteLength", byteLength);
    const pointer = native.zt_pool_rent(byteLength, 0);
    if (pointer === null) outOfMemory(byteLength);
    const storage = new Storage(pointer, byteLength, null);
    const set = currentSet();
    if (set === null) storage.#moveTo(null);
    else storage.#track(set);
    return storage;
  }

  /**
   * The native address of the block; throws `StaleTensorError` naming `op` after release.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Storage } from "./storage.ts";
   * const storage = Storage.rent(64);
   * assert.ok(storage.pointer("add") !== null);
   * storage.release();
   * ```
   */
  pointer(op: string): NativePointer {
    return storagePointer(this, op);
  }

  /**
   * The one ArrayBuffer over the block, made on first use (it costs about a microsecond) and detached on
   * release; throws `StaleTensorError` naming `op` after release.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Storage } from "./storage.ts";
   * const storage = Storage.rent(4);
   * assert.ok(storage.buffer("data") === storage.buffer("data"));
   * storage.release();
   * ```
   */
  buffer(op: string): ArrayBuffer {
    if (this.#stale()) throw new StaleTensorError(op);
    if (this.#buffer === null) {
      this.#buffer = ffi.arrayBuffer(this.#pointer, this.#byteLength);
      if (this.#byteLength > 0) this.#probe = new Uint8Array(this.#buffer, 0, 1);
      if (this.#arena !== null) arenaAccess.track(this.#arena, this.#buffer);
      if (this.#leak !== null) this.#leak.buffer = this.#buffer;
    }
    return this.#buffer;
  }

  /**
   * True after `release()`, once the storage's arena was reset or disposed, or once its ArrayBuffer was
   * transferred away (`transfer()`, `structuredClone` or `postMessage` with a transfer list).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Storage } from "./storage.ts";
   * const storage = Storage.rent(4);
   * storage.release();
   * assert.ok(storage.isReleased);
   * ```
   */
  get isReleased(): boolean {
    return this.#stale();
  }

  /** `isReleased`, from the private fields. */
  #stale(): boolean {
    // A view of a detached buffer has length 0: the probe's length is the fast check (detached is a slow
    // builtin, byteLength a call in JavaScriptCore). A zero-byte storage has no probe: its buffer is an ordinary
    // one of the JS heap, nothing to retire when transferred.
    if (this.#released) return true;
    const probe = this.#probe;
    if (probe !== null && probe.length === 0) return true;
    const arena = this.#arena;
    return arena !== null && arena.generation !== this.#generation;
  }

  /**
   * The version counter: 0 at rent, +1 on every tracked write (spec §7). A JS number, exact to 2^53.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Storage } from "./storage.ts";
   * const storage = Storage.rent(4);
   * storage.bumpVersion();
   * assert.ok(storage.version === 1);
   * storage.release();
   * ```
   */
  get version(): number {
    return this.#version;
  }

  /**
   * Adds one to the version; called by every accessor that hands out writable data.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Storage } from "./storage.ts";
   * const storage = Storage.rent(4);
   * storage.bumpVersion();
   * storage.bumpVersion();
   * assert.ok(storage.version === 2);
   * storage.release();
   * ```
   */
  bumpVersion(): void {
    this.#version++;
  }

  /**
   * Releases the block; idempotent. Detaches the ArrayBuffer first, so typed arrays handed out earlier read
   * as empty, then returns a pool block to the pool (an arena block waits for its arena's reset). In a
   * CHECKED build throws `BufferOverrunError` (after recycling the block) when something wrote past the end.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { Storage } from "./storage.ts";
   * const storage = Storage.rent(8);
   * const view = new Uint8Array(storage.buffer("data"));
   * storage.release();
   * assert.ok(view.length === 0);
   * ```
   */
  release(): void {
    if (this.#released) return;
    const arena = this.#arena;
    const stale = arena !== null && arena.generation !== this.#generation;
    this.#released = true;
    if (this.#owner !== null) this.#untrack();
    if (stale) return;
    const buffer = this.#buffer;
    if (buffer !== null && buffer.detached) {
      // Transferred away: retired, never rented again (an arena retires its memory at its next reset).
      this.#dropLeak();
      return;
    }
    if (buffer !== null) detachBuffer(buffer);
    if (this.#arena !== null) {
      if (isCheckedBuild) this.#throwOnOverrun(native.zt_arena_retire(this.#pointer, this.#byteLength));
      return;
    }
    this.#dropLeak();
    this.#throwOnOverrun(native.zt_pool_release(this.#pointer, this.#byteLength));
  }

  /** Takes the storage out of the finalizer's care. */
  #dropLeak(): void {
    if (this.#leak === null) return;
    this.#leak.released = true;
    leaks.unregister(this.#leak);
    this.#leak = null;
  }

  #throwOnOverrun(overrun: number): void {
    if (overrun !== 0) throw new BufferOverrunError("release", overrun, this.#byteLength);
  }

  /** Hands the storage to `set`, or to the finalizer when `set` is null (pool blocks only). */
  #moveTo(set: StorageSet | null): void {
    if (this.#released) return;
    if (this.#owner !== null) this.#untrack();
    if (set !== null) {
      this.#track(set);
      this.#dropLeak();
    } else if (this.#arena === null && this.#leak === null) {
      this.#leak = {
        pointer: this.#pointer,
        byteLength: this.#byteLength,
        released: false,
        buffer: this.#buffer,
      };
      leaks.register(this, this.#leak, this.#leak);
    }
  }

  /** Adds the storage, tracked by no set, to `set`. */
  #track(set: StorageSet): void {
    const items = set.items;
    this.#owner = set;
    this.#ownerIndex = items.length;
    items[items.length] = this;
  }

  /** Removes the storage from its set by moving the set's last storage into its slot. */
  #untrack(): void {
    const items = this.#owner!.items;
    const last = items.pop()!;
    if (last !== this) {
      items[this.#ownerIndex] = last;
      last.#ownerIndex = this.#ownerIndex;
    }
    this.#owner = null;
    this.#ownerIndex = -1;
  }
}

// Frozen, like `Tensor`: no code outside the library can change what the methods of a storage set or storage do.
Object.freeze(StorageSet.prototype);
Object.freeze(StorageSet);
Object.freeze(Storage.prototype);
Object.freeze(Storage);

/**
 * Activation scopes: the storages that operations create while a scope is the innermost one of the current
 * async context are released together when it ends. Scopes nest, the innermost collects, and
 * `ActivationScope.keep` hands a result to the enclosing scope (or, outside every scope, to the caller).
 *
 * The current scope follows the async context through `AsyncLocalStorage`. `tidy(fn)` runs `fn` in its own
 * context, so an async `fn` that awaits keeps its scope to itself. `using scope = new ActivationScope()`
 * enters the scope for the rest of the calling context (`enterWith`); inside an async function that awaits
 * before the scope ends, the caller sees that scope as current until it ends, so prefer `tidy` there.
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { ownership, setScopeLookup, Storage, StorageSet } from "./storage.ts";

const context = new AsyncLocalStorage<ActivationScope | null>();

/** Open scopes in this isolate; while there are none, a scoped rent skips the context lookup. */
let openScopes = 0;

/** Set while `tidy` constructs its scope, which it enters with `context.run` rather than `enterWith`. */
let constructingDetached = false;

/** The nearest scope from `scope` outwards that is still open (set by the class's static block). */
let liveOrParent: (scope: ActivationScope | null) => ActivationScope | null;

/**
 * Collects every storage that operations create while it is the innermost scope of the current async
 * context, and releases them all when disposed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ActivationScope } from "@zigtensor/zigtensor";
 * {
 *   using scope = new ActivationScope();
 *   assert.ok(ActivationScope.current() === scope);
 * }
 * assert.ok(ActivationScope.current() === null);
 * ```
 */
export class ActivationScope implements Disposable {
  readonly #parent: ActivationScope | null;
  readonly #set: StorageSet<ActivationScope>;
  readonly #entered: boolean;
  #disposed = false;

  static {
    setScopeLookup(() => {
      const scope = ActivationScope.current();
      return scope === null ? null : scope.#set;
    });
  }

  /** Opens a scope nested in the current one and makes it current for the rest of this async context. */
  constructor() {
    this.#parent = ActivationScope.current();
    this.#set = new StorageSet(this);
    this.#entered = !constructingDetached;
    openScopes++;
    if (this.#entered) context.enterWith(this);
  }

  /**
   * The innermost open scope of the current async context, or null.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ActivationScope } from "@zigtensor/zigtensor";
   * assert.ok(ActivationScope.current() === null);
   * ```
   */
  static current(): ActivationScope | null {
    if (openScopes === 0) return null;
    return liveOrParent(context.getStore() ?? null);
  }

  /**
   * Moves `t`'s storage from the scope that tracks it to that scope's enclosing scope, or, when there is
   * none, to the caller (then the garbage collector's finalizer is its safety net). Returns `t`. A storage
   * no scope tracks is left alone.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ActivationScope } from "@zigtensor/zigtensor";
   * import { Storage } from "./storage.ts";
   * let kept;
   * {
   *   using _ = new ActivationScope();
   *   kept = ActivationScope.keep({ storage: Storage.rent(4, { scoped: true }) });
   * }
   * assert.ok(!kept.storage.isReleased);
   * kept.storage.release();
   * ```
   */
  static keep<T extends { readonly storage: Storage }>(t: T): T {
    const set = ownership.ownerOf(t.storage) as StorageSet<ActivationScope> | null;
    if (set === null) return t;
    const target = liveOrParent(set.owner.#parent);
    ownership.moveTo(t.storage, target === null ? null : target.#set);
    return t;
  }

  /**
   * Whether the scope has ended.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ActivationScope } from "@zigtensor/zigtensor";
   * const scope = new ActivationScope();
   * scope.dispose();
   * assert.ok(scope.isDisposed);
   * ```
   */
  get isDisposed(): boolean {
    return this.#disposed;
  }

  /**
   * How many storages the scope tracks now.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ActivationScope } from "@zigtensor/zigtensor";
   * using scope = new ActivationScope();
   * assert.ok(scope.size === 0);
   * ```
   */
  get size(): number {
    return this.#set.items.length;
  }

  /**
   * Ends the scope: makes the enclosing scope current again and releases every storage the scope tracks.
   * Idempotent. In a CHECKED build throws the first `BufferOverrunError` after releasing them all.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ActivationScope } from "@zigtensor/zigtensor";
   * const scope = new ActivationScope();
   * scope.dispose();
   * scope.dispose();
   * assert.ok(ActivationScope.current() === null);
   * ```
   */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    openScopes--;
    // The context keeps pointing at this scope: `current()` walks past ended scopes to the nearest open one,
    // so leaving needs no second `enterWith` (about 1 µs each in Deno).
    this.#set.releaseAll();
  }

  /** Enables `using`: ends the scope. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  static {
    liveOrParent = (scope) => {
      while (scope !== null && scope.#disposed) scope = scope.#parent;
      return scope;
    };
  }
}

/** Runs `fn` in a new scope that is current only in `fn`'s own async context. */
function runInNewScope<T>(fn: (scope: ActivationScope) => T): T {
  constructingDetached = true;
  let scope: ActivationScope;
  try {
    scope = new ActivationScope();
  } finally {
    constructingDetached = false;
  }
  return context.run(scope, fn, scope);
}

/** Keeps every storage reachable from `value` through `{ storage }` records, arrays and plain objects. */
function keepAll(value: unknown, seen: Set<object>): void {
  if (typeof value !== "object" || value === null || seen.has(value)) return;
  seen.add(value);
  const storage = (value as { storage?: unknown }).storage;
  if (storage instanceof Storage) {
    ActivationScope.keep(value as { storage: Storage });
  } else if (Array.isArray(value)) {
    for (const item of value) keepAll(item, seen);
  } else {
    const prototype = Object.getPrototypeOf(value);
    if (prototype === Object.prototype || prototype === null) {
      for (const item of Object.values(value)) keepAll(item, seen);
    }
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null &&
    typeof (value as { then?: unknown }).then === "function";
}

/** Disposes a scope while an error from `fn` is on its way out; the scope's own failure would hide it. */
function disposeQuietly(scope: ActivationScope): void {
  try {
    scope.dispose();
  } catch {
    // The error from fn is the one to report.
  }
}

function finish<T>(scope: ActivationScope, value: T): T {
  keepAll(value, new Set());
  scope.dispose();
  return value;
}

/**
 * Runs `fn` in a new scope, keeps what it returns (a tensor, or an array or plain object of tensors) for the
 * enclosing scope or the caller, and releases everything else `fn` created. Returns what `fn` returns; when
 * that is a promise, the scope ends when it settles and follows `fn`'s awaits without leaking to the caller.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tidy } from "@zigtensor/zigtensor";
 * import { Storage } from "./storage.ts";
 * const scratch: Storage[] = [];
 * const result = tidy(() => {
 *   scratch.push(Storage.rent(16, { scoped: true }));
 *   return { storage: Storage.rent(16, { scoped: true }) };
 * });
 * assert.ok(scratch[0].isReleased && !result.storage.isReleased);
 * result.storage.release();
 * ```
 */
export function tidy<T>(fn: () => T): T {
  return runInNewScope((scope) => {
    let result: T;
    try {
      result = fn();
    } catch (error) {
      disposeQuietly(scope);
      throw error;
    }
    if (!isPromiseLike(result)) return finish(scope, result);
    return Promise.resolve(result).then(
      (value) => finish(scope, value),
      (error) => {
        disposeQuietly(scope);
        throw error;
      },
    ) as T;
  });
}

// Frozen, like `Tensor`: no code outside the library can change what the methods of a scope do.
Object.freeze(ActivationScope.prototype);
Object.freeze(ActivationScope);

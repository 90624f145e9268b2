// Activation scopes (guide "Scopes"; API.md "Lifetime"): the innermost scope of the current async context
// collects scoped storages, scopes nest, keep hands a result outwards, tidy keeps what fn returns. A
// `{ storage }` record stands in for a tensor.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Arena, BufferPool } from "../src/memory/pool.ts";
import { ActivationScope, tidy } from "../src/memory/scope.ts";
import { Storage } from "../src/memory/storage.ts";

const pool = BufferPool.default;
const op = (bytes = 64) => ({ storage: Storage.rent(bytes, { scoped: true }) });

test("a scope releases the storages operations create inside it, and nothing else", () => {
  const outside = op();
  const created = Storage.rent(64);
  let inside!: { storage: Storage };
  {
    using scope = new ActivationScope();
    assert.equal(ActivationScope.current(), scope);
    inside = op();
    const unscoped = Storage.rent(64, { scoped: false });
    assert.equal(scope.size, 1);
    unscoped.release();
  }
  assert.equal(ActivationScope.current(), null);
  assert.ok(inside.storage.isReleased);
  assert.ok(
    !outside.storage.isReleased && !created.isReleased,
    "storages made outside every scope are the caller's",
  );
  outside.storage.release();
  created.release();
});

test("scopes nest: the innermost collects, and ending it makes the enclosing one current again", () => {
  using outer = new ActivationScope();
  const a = op();
  let b!: { storage: Storage };
  {
    using inner = new ActivationScope();
    assert.equal(ActivationScope.current(), inner);
    b = op();
    assert.equal(inner.size, 1);
    assert.equal(outer.size, 1);
  }
  assert.equal(ActivationScope.current(), outer);
  assert.ok(b.storage.isReleased);
  assert.ok(!a.storage.isReleased);
  const c = op();
  assert.equal(outer.size, 2);
  outer.dispose();
  assert.ok(a.storage.isReleased && c.storage.isReleased);
  assert.equal(ActivationScope.current(), null);
});

test("keep hands a storage to the enclosing scope, or to the caller outside every scope", () => {
  let kept!: { storage: Storage };
  let keptOut!: { storage: Storage };
  {
    using outer = new ActivationScope();
    {
      using inner = new ActivationScope();
      kept = ActivationScope.keep(op());
      assert.equal(inner.size, 0);
      assert.equal(outer.size, 1);
    }
    assert.ok(!kept.storage.isReleased);
    assert.equal(ActivationScope.keep(kept), kept);
    assert.equal(outer.size, 0);
    keptOut = kept;
  }
  assert.ok(!keptOut.storage.isReleased, "kept out of every scope: the caller's to release");
  const untracked = { storage: Storage.rent(8) };
  assert.equal(ActivationScope.keep(untracked), untracked);
  keptOut.storage.release();
  untracked.storage.release();
});

test("releasing inside a scope is fine: the scope forgets it, and a second release is harmless", () => {
  const before = pool.stats().rentedBlocks;
  {
    using scope = new ActivationScope();
    const items = [op(), op(), op(), op()];
    items[1].storage.release();
    items[3].storage.release();
    assert.equal(scope.size, 2);
    scope.dispose();
    scope.dispose();
    assert.ok(items.every((item) => item.storage.isReleased));
  }
  assert.equal(pool.stats().rentedBlocks, before);
});

test("a scoped rent with no scope open belongs to the caller", () => {
  assert.equal(ActivationScope.current(), null);
  const storage = Storage.rent(16, { scoped: true });
  {
    using _ = new ActivationScope();
  }
  assert.ok(!storage.isReleased);
  storage.release();
});

test("a scope also ends arena storages, which the arena then reclaims", () => {
  using arena = new Arena({ chunkBytes: 1 << 12 });
  let storage!: Storage;
  {
    using _ = new ActivationScope();
    storage = Storage.rent(100, { arena, scoped: true });
  }
  assert.ok(storage.isReleased);
});

test("tidy keeps what fn returns (a record, arrays and plain objects of them) and releases the rest", () => {
  const before = pool.stats().rentedBlocks;
  let scratch!: { storage: Storage };
  const result = tidy(() => {
    scratch = op();
    return { a: op(), list: [op(), { deep: op() }], note: "text", n: 3 };
  });
  assert.ok(scratch.storage.isReleased);
  const kept = [
    result.a,
    result.list[0] as { storage: Storage },
    (result.list[1] as { deep: { storage: Storage } }).deep,
  ];
  assert.ok(kept.every((t) => !t.storage.isReleased));
  assert.equal(pool.stats().rentedBlocks, before + 3);
  for (const t of kept) t.storage.release();
  assert.equal(tidy(() => 42), 42);
});

test("tidy nests: an inner tidy's result goes to the outer tidy's scope", () => {
  let innerResult!: { storage: Storage };
  const outerResult = tidy(() => {
    innerResult = tidy(() => op());
    assert.equal(ActivationScope.current()!.size, 1);
    return op();
  });
  assert.ok(innerResult.storage.isReleased, "not returned by the outer tidy, so its scope released it");
  assert.ok(!outerResult.storage.isReleased);
  outerResult.storage.release();
});

test("when fn throws, tidy releases everything and rethrows", () => {
  const before = pool.stats().rentedBlocks;
  let made!: { storage: Storage };
  assert.throws(() =>
    tidy(() => {
      made = op();
      throw new Error("boom");
    }), /boom/);
  assert.ok(made.storage.isReleased);
  assert.equal(pool.stats().rentedBlocks, before);
  assert.equal(ActivationScope.current(), null);
});

test("an async tidy follows its awaits and concurrent jobs never see each other's scopes", async () => {
  const before = pool.stats().rentedBlocks;
  const job = (delays: number[]) =>
    tidy(async () => {
      const scope = ActivationScope.current();
      const scratch: { storage: Storage }[] = [];
      for (const delay of delays) {
        await new Promise((resolve) => setTimeout(resolve, delay));
        assert.equal(ActivationScope.current(), scope, "the scope survives the await");
        scratch.push(op());
      }
      assert.equal(scope!.size, delays.length);
      return { result: op(), scratch: scratch.length, scope };
    });
  const pending = [job([5, 1, 5]), job([1, 5, 1, 3])];
  assert.equal(ActivationScope.current(), null, "the caller's context is untouched");
  const [first, second] = await Promise.all(pending);
  assert.notEqual(first.scope, second.scope);
  assert.ok(first.scope!.isDisposed && second.scope!.isDisposed);
  assert.ok(!first.result.storage.isReleased && !second.result.storage.isReleased);
  assert.equal(pool.stats().rentedBlocks, before + 2);
  first.result.storage.release();
  second.result.storage.release();
  await assert.rejects(
    tidy(async () => {
      op();
      await null;
      throw new Error("late");
    }),
    /late/,
  );
  assert.equal(pool.stats().rentedBlocks, before);
});

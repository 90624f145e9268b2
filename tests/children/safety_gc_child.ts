// Child process of safety_lifetime.test.ts: handed-out typed arrays and transferred buffers against the
// finalizer and the pool, with forced garbage collection. Run by Deno with --v8-flags=--expose-gc, or by Bun.
// Prints one JSON line of observations; the test asserts them.
import { Arena, BufferPool, StaleTensorError, Tensor } from "../../mod.ts";

const pool = BufferPool.default;

/** Overwrites stack slots that may still hold a stale reference (Bun's collector scans the stack conservatively). */
function clobberStack(depth: number): number {
  const filler = [depth, depth + 1, depth + 2, depth + 3];
  return depth === 0 ? filler.length : clobberStack(depth - 1) + filler[0];
}

/** Full collections in either runtime, letting finalizer tasks run, until `done()` or `rounds` rounds. */
async function collect(done: () => boolean = () => false, rounds = 12): Promise<void> {
  const bun = (globalThis as { Bun?: { gc(force: boolean): void } }).Bun;
  const gc = (globalThis as { gc?: () => void }).gc;
  if (bun === undefined && gc === undefined) throw new Error("run Deno with --v8-flags=--expose-gc");
  for (let round = 0; round < rounds && !done(); round++) {
    clobberStack(200);
    if (bun !== undefined) bun.gc(true);
    else gc!();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Rents (and keeps) `count` tensors of 256 F32 elements filled with 42: a reused block would show 42. */
function rentMany(count: number, options: { arena?: Arena } = {}): Tensor[] {
  return Array.from({ length: count }, () => Tensor.full([256], 42, options));
}

function staleError(f: () => unknown): string {
  try {
    f();
    return "no error";
  } catch (error) {
    return error instanceof StaleTensorError ? "StaleTensorError" : String(error);
  }
}

const report: Record<string, unknown> = {};
const baseline = pool.stats().rentedBlocks;

// 1. A typed array outlives every handle of its tensor.
async function survivor(): Promise<void> {
  const d = (() => Tensor.full([256], 7).data() as Float32Array)();
  await collect();
  const others = rentMany(64);
  d[1] = 999;
  report.survivor = { first: d[0], length: d.length, othersTouched: others.some((t) => t.get(1) !== 42) };
  for (const t of others) t.dispose();
}
await survivor();
await collect(() => pool.stats().rentedBlocks === baseline, 50);
report.survivorReclaimed = pool.stats().rentedBlocks - baseline;

// 2. The same with an arena that is dropped while an array over one of its tensors lives.
async function arenaSurvivor(): Promise<void> {
  const d =
    (() => Tensor.full([256], 7, { arena: new Arena({ chunkBytes: 4096 }) }).data() as Float32Array)();
  await collect();
  const arenas = Array.from({ length: 8 }, () => new Arena({ chunkBytes: 4096 }));
  const others = arenas.flatMap((arena) => rentMany(3, { arena }));
  d[1] = 999;
  report.arenaSurvivor = {
    first: d[0],
    length: d.length,
    othersTouched: others.some((t) => t.get(1) !== 42),
  };
  for (const arena of arenas) arena.dispose();
}
await arenaSurvivor();
await collect(() => pool.stats().rentedBlocks === baseline, 50);
report.arenaReclaimed = pool.stats().rentedBlocks - baseline;

// 3. Transfers: ArrayBuffer.transfer, structuredClone with a transfer list, postMessage to a MessagePort.
const kept: ArrayBuffer[] = [];
async function transferred(how: string): Promise<Record<string, unknown>> {
  const t = Tensor.full([64], 7);
  const buffer = t.data().buffer as ArrayBuffer;
  let moved: ArrayBuffer;
  if (how === "transfer") moved = buffer.transfer();
  else if (how === "structuredClone") moved = structuredClone(buffer, { transfer: [buffer] });
  else {
    const channel = new MessageChannel();
    const received = new Promise<ArrayBuffer>((resolve) => {
      channel.port2.onmessage = (event) => resolve(event.data as ArrayBuffer);
    });
    channel.port1.postMessage(buffer, [buffer]);
    moved = await received;
    channel.port1.close();
    channel.port2.close();
  }
  kept.push(moved);
  const error = staleError(() => t.get(0));
  const addError = staleError(() => t.add(1));
  const released = t.isReleased;
  t.dispose();
  const others = rentMany(64);
  const view = new Float32Array(moved);
  const result = { error, addError, released, first: view[0], reused: view.some((v) => v !== 7) };
  for (const o of others) o.dispose();
  return result;
}
report.transfer = await transferred("transfer");
report.structuredClone = await transferred("structuredClone");
report.postMessage = await transferred("postMessage");

// 4. A transferred buffer whose tensor is never disposed: the finalizer retires the block.
{
  (() => {
    const t = Tensor.full([64], 7);
    kept.push((t.data().buffer as ArrayBuffer).transfer());
  })();
  await collect();
  const others = rentMany(64);
  const view = new Float32Array(kept.at(-1)!);
  report.finalizedTransfer = { first: view[0], reused: view.some((v) => v !== 7) };
  for (const o of others) o.dispose();
}

// 5. An arena whose buffer was transferred retires its memory at reset and at dispose.
{
  const arena = new Arena({ chunkBytes: 4096 });
  const t = Tensor.full([64], 7, { arena });
  const moved = (t.data().buffer as ArrayBuffer).transfer();
  const error = staleError(() => t.get(0));
  arena.reset();
  rentMany(8, { arena });
  const view = new Float32Array(moved);
  report.arenaTransfer = { error, first: view[0], reused: view.some((v) => v !== 7) };
  arena.dispose();
  kept.push(moved);
}
console.log(JSON.stringify(report));

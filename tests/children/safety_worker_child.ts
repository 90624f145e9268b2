// Child process of safety_lifetime.test.ts: the bound on what a terminated Worker leaves rented. A Worker's
// isolate ends at terminate() without running finalizers, so tensors it still held stay rented: the bound is
// exactly the blocks it held. A Worker that disposes first leaves nothing. Prints one JSON line.
import { BufferPool } from "../../mod.ts";

const pool = BufferPool.default;
const url = new URL("./safety_worker.ts", import.meta.url).href;

async function run(dispose: boolean): Promise<{ sum: number; bytes: number; blocks: number }> {
  const before = pool.stats();
  const worker = new Worker(url, { type: "module" });
  const { sum } = await new Promise<{ sum: number }>((resolve, reject) => {
    worker.onmessage = (event: MessageEvent<{ sum: number }>) => resolve(event.data);
    worker.onerror = (event: ErrorEvent) => reject(new Error(event.message));
    worker.postMessage({ dispose });
  });
  worker.terminate();
  await new Promise((resolve) => setTimeout(resolve, 50));
  const after = pool.stats();
  return {
    sum,
    bytes: after.rentedBytes - before.rentedBytes,
    blocks: after.rentedBlocks - before.rentedBlocks,
  };
}

const disposed = await run(true);
const kept = await run(false);
console.log(JSON.stringify({ disposed, kept, sizeClass: BufferPool.sizeClass(1 << 20) }));

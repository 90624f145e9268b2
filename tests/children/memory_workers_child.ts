// Child process of memory_workers.test.ts: runs two memory Workers at once over the shared pool and prints
// the pool's stats before and after with the Workers' reports, as one JSON line.
import { BufferPool } from "../../src/memory/pool.ts";
import type { WorkerReport } from "./memory_worker.ts";

const iterations = Number((globalThis as { process?: { argv: string[] } }).process?.argv.at(-1)) || 20_000;
const pool = BufferPool.default;
const before = pool.stats();
const url = new URL("./memory_worker.ts", import.meta.url).href;
const workers = [0, 1].map(() => new Worker(url, { type: "module" }));
const reports = await Promise.all(workers.map((worker, id) =>
  new Promise<WorkerReport>((resolve, reject) => {
    worker.onmessage = (event: MessageEvent<WorkerReport>) => resolve(event.data);
    worker.onerror = (event: ErrorEvent) => reject(new Error(`worker ${id}: ${event.message}`));
    worker.postMessage({ id, iterations });
  })
));
for (const worker of workers) worker.terminate();
console.log(JSON.stringify({ before, after: pool.stats(), reports }));

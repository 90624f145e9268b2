// Workers share the pool (every Worker loads the same library): two Workers rent, write, check and release
// at the same time; nothing is corrupted and the pool's stats add up afterwards. Runs in a child process so
// that no other test's garbage is finalized in the middle of the count.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { WorkerReport } from "./children/memory_worker.ts";

test("two Workers renting and releasing concurrently corrupt nothing and leave the pool's stats consistent", () => {
  const isDeno = (globalThis as { Deno?: unknown }).Deno !== undefined;
  const child = fileURLToPath(new URL("./children/memory_workers_child.ts", import.meta.url));
  const iterations = 100_000;
  const argv = isDeno ? ["run", "-A", "--quiet", child, String(iterations)] : [child, String(iterations)];
  const result = spawnSync(process.execPath, argv, { encoding: "utf8", timeout: 120_000 });
  assert.equal(result.status, 0, result.stderr);
  const { before, after, reports } = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as {
    before: Record<string, number>;
    after: Record<string, number>;
    reports: WorkerReport[];
  };
  assert.deepEqual(reports.map((report) => report.id), [0, 1]);
  for (const report of reports) {
    assert.equal(report.corrupt, 0, `worker ${report.id} saw corrupted or misaligned memory`);
    assert.ok(report.poolRents > iterations / 4 && report.arenaRents > 0);
  }
  const [a, b] = reports;
  const overlap = Math.min(a.endedAt, b.endedAt) - Math.max(a.startedAt, b.startedAt);
  assert.ok(overlap > 0, `the Workers ran at the same time (overlap ${overlap} ms)`);
  const rents = reports.reduce((sum, report) => sum + report.poolRents, 0);
  assert.equal(after.hits + after.misses - before.hits - before.misses, rents, "every rent was counted once");
  assert.equal(after.rentedBlocks, before.rentedBlocks);
  assert.equal(after.rentedBytes, before.rentedBytes);
  assert.equal(after.osBytes, after.rentedBytes + after.idleBytes);
  assert.ok(after.idleBlocks >= 1);
});

// Runs a TypeScript file in a child of the current runtime (deno or bun) with extra environment variables, and a
// conformance child once per kernel variant the host runs.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { kernelInfo } from "../../src/native/kernel_info.ts";

export interface ChildResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function runChild(script: URL, env: Record<string, string>): ChildResult {
  const isDeno = (globalThis as { Deno?: unknown }).Deno !== undefined;
  const path = fileURLToPath(script);
  const argv = isDeno ? ["run", "-A", "--quiet", path] : [path];
  const result = spawnSync(process.execPath, argv, {
    env: { ...process.env, ...env },
    encoding: "utf8",
    timeout: 120_000,
  });
  return { status: result.status, stdout: result.stdout ?? "", stderr: result.stderr ?? "" };
}

/** The kernel variants this host can run. */
export function runnableVariants(): string[] {
  const info = kernelInfo();
  return info.variants.filter((isa) => info.supported.includes(isa));
}

/**
 * Runs `script` once under each variant the host runs (`ZIGTENSOR_ISA` forced) and returns each run's report,
 * the JSON of its last line of output, after checking that the child exited with 0 and names the variant it
 * was given.
 */
export function isaReports<R = ReturnType<typeof JSON.parse>>(script: URL): { isa: string; report: R }[] {
  const runnable = runnableVariants();
  assert.ok(runnable.length >= 1, "no kernel variant runs on this host");
  return runnable.map((isa) => {
    const child = runChild(script, { ZIGTENSOR_ISA: isa });
    assert.equal(child.status, 0, child.stderr);
    const report = JSON.parse(child.stdout.trim().split("\n").at(-1)!);
    assert.equal(report.isa, isa);
    return { isa, report: report as R };
  });
}

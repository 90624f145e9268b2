// Runs a TypeScript file in a child of the current runtime (deno or bun) with extra environment variables.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

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

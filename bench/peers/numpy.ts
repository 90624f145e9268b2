/**
 * NumPy (with the BLAS it links) as a peer: f32 GEMM n³ and element-wise add of m f32, timed in a Python
 * subprocess.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import process from "node:process";
import { PEERS } from "./common.ts";

/** NumPy's rates (flop/s for the GEMM, bytes/s for the add) and its BLAS, or why it was skipped. */
export type NumpyResult = { gemm: number; add: number; blas: string } | { skipped: string };

/** The Python program: GEMM n³ (2n³ flops) and add of m f32 (12 bytes moved per element). */
function numpyScript(gemmN: number, addN: number): string {
  return `
import json, sys, time
import numpy as np
try:
    import threadpoolctl
    blas = [f"{i.get('internal_api')} {i.get('architecture')}" for i in threadpoolctl.threadpool_info()]
except Exception:
    blas = ["unknown BLAS"]
n, m = ${gemmN}, ${addN}
rng = np.random.default_rng(1)
a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
c = a @ b
def best(f, reps):
    f()
    t = 1e9
    for _ in range(reps):
        s = time.perf_counter(); f(); t = min(t, time.perf_counter() - s)
    return t
gemm = best(lambda: np.matmul(a, b, out=c), 15)
x, y = np.ones(m, np.float32), np.ones(m, np.float32)
z = np.empty(m, np.float32)
add = best(lambda: np.add(x, y, out=z), 10)
print(json.dumps({"version": np.__version__, "blas": blas, "gemm": ${2 * gemmN ** 3} / gemm, "add": ${
    12 * addN
  } / add}))
`;
}

/**
 * NumPy in a Python subprocess on `threads` threads. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which some
 * machines set to keep old OpenBLAS builds safe, would pin a slower kernel: they are unset for this command
 * only (or the core type is forced to `coreType`); the kernel OpenBLAS picked is reported.
 */
export function measureNumpy(
  sizes: { gemmN: number; addN: number },
  threads: number,
  coreType?: string,
): NumpyResult {
  const path = [`${PEERS}python`, process.env.PYTHONPATH].filter((p) => p).join(":");
  // `env -u`, because Deno's spawnSync adds the given environment to its own instead of replacing it.
  const command = ["-u", "OPENBLAS_CORETYPE", "-u", "OPENBLAS_L2_SIZE", `OPENBLAS_NUM_THREADS=${threads}`];
  if (coreType !== undefined) command.push(`OPENBLAS_CORETYPE=${coreType}`);
  const result = spawnSync("env", [
    ...command,
    `PYTHONPATH=${path}`,
    "python3",
    "-c",
    numpyScript(sizes.gemmN, sizes.addN),
  ], {
    encoding: "utf8",
    timeout: 120_000,
  });
  if (result.status !== 0) {
    const reason = (result.stderr ?? String(result.error)).trim().split("\n").at(-1);
    return { skipped: `NumPy skipped (${reason}); install it with \`bash bench/peers.sh\`` };
  }
  const report = JSON.parse(result.stdout.trim().split("\n").at(-1)!);
  return { gemm: report.gemm, add: report.add, blas: `NumPy ${report.version}, ${report.blas.join(", ")}` };
}

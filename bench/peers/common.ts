/**
 * What the peer modules share: where `bash bench/peers.sh` installs them, loading a Node package from there,
 * and a best-of timing loop.
 *
 * @module
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

/** The folder `bash bench/peers.sh` installs the peers into. */
export const PEERS: string = fileURLToPath(new URL("../.peers/", import.meta.url));

/** The package `name` from `bench/.peers/<prefix>/node_modules`, or null when it is not installed. */
export function requirePeer<T>(prefix: string, name: string): T | null {
  try {
    return createRequire(`${PEERS}${prefix}/node_modules/`)(name) as T;
  } catch {
    return null;
  }
}

/** The best of `reps` timed calls of `fn` (after one untimed call), in seconds. */
export async function bestOf(reps: number, fn: () => Promise<unknown> | unknown): Promise<number> {
  await fn();
  let best = Infinity;
  for (let i = 0; i < reps; i++) {
    const start = performance.now();
    await fn();
    best = Math.min(best, (performance.now() - start) / 1000);
  }
  return best;
}

/**
 * Per-op overhead of this tree against another checkout of zigtensor (an older commit, say), measured in
 * alternating child processes so that both see the same machine load:
 *
 *   git worktree add --detach ../old d0e5aac && (cd ../old && zig build)      the other tree, built
 *   deno run -A bench/overhead_compare.ts ../old                             10 rounds, Deno and Bun
 *   deno run -A bench/overhead_compare.ts ../old --rounds 20 --runtime deno
 *   deno run -A bench/overhead_compare.ts ../old ../other                   two other trees ("this" = the second)
 *
 * Each round runs one child per tree per runtime, the order of the trees alternating from round to round. A
 * child loads its tree's `mod.ts` with that tree's release library (`zig-out/lib/libzigtensor.so`), warms up,
 * then times batches of 1000 calls of each case (16-element F32 tensors: `add` in an `ActivationScope`, `add`
 * then `dispose`, the unary `neg` in a scope, the reduction `sum` to a scalar in a scope) and prints the median
 * batch. The table gives, per case, the median over the rounds of each tree's figure and of the per-round
 * ratio this ÷ other (the paired ratio, less sensitive to load that drifts between rounds), and the middle half
 * of those ratios (first to third quartile) as their spread.
 *
 * @module
 */

/** The part of zigtensor's API the cases use, the same in old and new trees. */
interface Api {
  Tensor: { from(values: Float32Array): { dispose(): void } };
  ActivationScope: new () => { [Symbol.dispose](): void };
  ops: {
    add(a: unknown, b: unknown): { dispose(): void };
    neg(a: unknown): { dispose(): void };
    sum(a: unknown): { dispose(): void };
  };
}

const BATCH = 1000;
const CASES = ["add, scope", "add, dispose", "neg, scope", "sum, scope"] as const;
type Timings = Record<(typeof CASES)[number], number>;

/** Median of `values` (sorted copy). */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The child: times the cases on the tree at `root`, prints one JSON line of µs per BATCH calls. */
async function child(root: string): Promise<void> {
  const api = await import(new URL(`file://${root}/mod.ts`).href) as Api;
  const { ActivationScope, ops, Tensor } = api;
  const a = Tensor.from(Float32Array.from({ length: 16 }, (_, i) => i));
  const b = Tensor.from(Float32Array.from({ length: 16 }, (_, i) => 2 * i));
  const bodies: Record<keyof Timings, () => void> = {
    "add, scope": () => {
      using _ = new ActivationScope();
      for (let n = 0; n < BATCH; n++) ops.add(a, b);
    },
    "add, dispose": () => {
      for (let n = 0; n < BATCH; n++) ops.add(a, b).dispose();
    },
    "neg, scope": () => {
      using _ = new ActivationScope();
      for (let n = 0; n < BATCH; n++) ops.neg(a);
    },
    "sum, scope": () => {
      using _ = new ActivationScope();
      for (let n = 0; n < BATCH; n++) ops.sum(a);
    },
  };
  const batches: Record<string, number[]> = {};
  for (const name of CASES) {
    for (let i = 0; i < 300; i++) bodies[name]();
    batches[name] = [];
  }
  // The cases take turns, batch by batch, so a burst of load hits them alike.
  for (let i = 0; i < 60; i++) {
    for (const name of CASES) {
      const start = performance.now();
      bodies[name]();
      batches[name].push((performance.now() - start) * 1000);
    }
  }
  const out: Record<string, number> = {};
  for (const name of CASES) out[name] = median(batches[name]);
  console.log(JSON.stringify(out));
}

interface DenoApi {
  args: string[];
  execPath(): string;
  cwd(): string;
  Command: new (command: string, options: { args: string[]; env: Record<string, string> }) => {
    output(): Promise<{ code: number; stdout: Uint8Array; stderr: Uint8Array }>;
  };
}

/** Runs one child and returns its timings. */
async function runChild(deno: DenoApi, runtime: string, root: string): Promise<Timings> {
  const script = new URL(import.meta.url).pathname;
  const [command, args] = runtime === "deno"
    ? [deno.execPath(), ["run", "-A", script, "--child", root]]
    : [`${root}/node_modules/.bin/bun`, [script, "--child", root]];
  const result = await new deno.Command(command, {
    args,
    env: { ZIGTENSOR_LIB: `${root}/zig-out/lib/libzigtensor.so` },
  }).output();
  const text = new TextDecoder().decode(result.stdout);
  if (result.code !== 0) {
    throw new Error(
      `${runtime} child for ${root} failed:\n${text}${new TextDecoder().decode(result.stderr)}`,
    );
  }
  return JSON.parse(text.trim().split("\n").at(-1)!) as Timings;
}

/** The driver: alternates the trees for `rounds` rounds and prints the table. */
async function driver(deno: DenoApi): Promise<void> {
  const argv = [...deno.args];
  const option = (name: string, fallback: string) => {
    const i = argv.indexOf(name);
    return i < 0 ? fallback : argv.splice(i, 2)[1];
  };
  const rounds = Number(option("--rounds", "10"));
  const which = option("--runtime", "both");
  const runtimes = which === "both" ? ["deno", "bun"] : [which];
  if (argv.length < 1 || argv.length > 2) {
    throw new Error(
      "usage: overhead_compare.ts OTHER_TREE [THIS_TREE] [--rounds N] [--runtime deno|bun|both]",
    );
  }
  const absolute = (p: string) => (p.startsWith("/") ? p : `${deno.cwd()}/${p}`).replace(/\/$/, "");
  const self = absolute(argv[1] ?? new URL("..", import.meta.url).pathname);
  const other = absolute(argv[0]);
  for (const runtime of runtimes) {
    const mine: Timings[] = [];
    const theirs: Timings[] = [];
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) {
        theirs.push(await runChild(deno, runtime, other));
        mine.push(await runChild(deno, runtime, self));
      } else {
        mine.push(await runChild(deno, runtime, self));
        theirs.push(await runChild(deno, runtime, other));
      }
    }
    console.log(`\n${runtime}: µs per ${BATCH} calls, median of ${rounds} alternating rounds`);
    console.log(
      `  ${"case".padEnd(14)} ${"other".padStart(9)} ${"this".padStart(9)}  this ÷ other (paired)  ` +
        "middle half of the rounds' ratios",
    );
    for (const name of CASES) {
      const o = median(theirs.map((t) => t[name]));
      const m = median(mine.map((t) => t[name]));
      const ratios = mine.map((t, i) => t[name] / theirs[i][name]).sort((x, y) => x - y);
      const quartile = (q: number) => ratios[Math.min(ratios.length - 1, Math.floor(q * ratios.length))];
      console.log(
        `  ${name.padEnd(14)} ${o.toFixed(0).padStart(9)} ${m.toFixed(0).padStart(9)}  ${
          median(ratios).toFixed(3).padEnd(21)
        } ${quartile(0.25).toFixed(2)} to ${quartile(0.75).toFixed(2)}`,
      );
    }
  }
}

const deno = (globalThis as { Deno?: DenoApi }).Deno;
const argv = deno?.args ?? (globalThis as unknown as { process: { argv: string[] } }).process.argv.slice(2);
if (argv[0] === "--child") await child(argv[1]);
else if (deno !== undefined) await driver(deno);
else throw new Error("run the driver with deno run -A bench/overhead_compare.ts OTHER_TREE");

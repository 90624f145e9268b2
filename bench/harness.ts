/**
 * One way to run a list of benchmark cases in both runtimes: `Deno.bench` groups (with the baseline case
 * marked, so Deno prints the ratios) under `deno bench`, and a timed loop with a ratio table under Bun, which
 * has no bench runner.
 *
 * @module
 */

/** A benchmark case; one case of each group is the baseline the others are compared with. */
export interface BenchCase {
  readonly group: string;
  readonly name: string;
  readonly baseline?: boolean;
  readonly fn: () => void;
}

interface DenoBench {
  bench(options: { name: string; group: string; baseline?: boolean; fn: () => void }): void;
}

/** Mean nanoseconds per call of `fn`, looping until it has run 200 ms. */
function timeCase(fn: () => void): number {
  for (let i = 0; i < 100; i++) fn();
  let iterations = 1;
  let elapsed = 0;
  while (elapsed < 200) {
    iterations *= 2;
    const start = performance.now();
    for (let i = 0; i < iterations; i++) fn();
    elapsed = performance.now() - start;
  }
  return (elapsed * 1e6) / iterations;
}

function printTable(cases: readonly BenchCase[], perCall: number): void {
  for (const group of new Set(cases.map((c) => c.group))) {
    const timings = cases.filter((c) => c.group === group).map((c) => ({ ...c, ns: timeCase(c.fn) }));
    const base = timings.find((t) => t.baseline === true) ?? timings[0];
    console.log(`\n${group}`);
    for (const t of timings) {
      const ratio = t === base
        ? "baseline"
        : base.ns >= t.ns
        ? `${(base.ns / t.ns).toFixed(2)}x faster than the baseline`
        : `${(t.ns / base.ns).toFixed(2)}x slower than the baseline`;
      const each = perCall > 1 ? `${(t.ns / perCall).toFixed(1).padStart(9)} ns each` : "";
      console.log(`  ${t.name.padEnd(66)} ${t.ns.toFixed(1).padStart(12)} ns/call ${each}   ${ratio}`);
    }
  }
}

/** Registers the cases with `Deno.bench`, or times them and prints a table when there is no Deno. */
export function runBenchmarks(
  cases: readonly BenchCase[],
  options: { perCall?: number; note?: () => string } = {},
): void {
  const deno = (globalThis as { Deno?: DenoBench }).Deno;
  if (deno !== undefined) {
    for (const c of cases) deno.bench({ name: c.name, group: c.group, baseline: c.baseline, fn: c.fn });
    return;
  }
  printTable(cases, options.perCall ?? 1);
  if (options.note !== undefined) console.log(`\n${options.note()}`);
}

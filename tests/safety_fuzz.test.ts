// The seeded fuzz suite of issue 10: thousands of random calls at every public constructor, method and op
// (tests/children/fuzz_child.ts), in a child process so that a crash cannot take the test runner with it and
// names the seed that killed it. Each call either throws one of zigtensor's typed errors or returns what the
// reference kernels return; in the CHECKED build a damaged canary throws BufferOverrunError, which fails the
// run. FUZZ_SEED and FUZZ_CASES override the first seed and the count (to reproduce a reported seed).
import { test } from "node:test";
import assert from "node:assert/strict";
import { runChild } from "./helpers/subprocess.ts";

const first = process.env.FUZZ_SEED ?? "1";
const cases = process.env.FUZZ_CASES ?? "8000";
// The CI budget: at most this long per runtime and library (Bun with the CHECKED library runs ~20 cases/s).
const seconds = process.env.FUZZ_SECONDS ?? "30";
/** Each case is two calls (native and reference kernels); below this many cases the run does not count. */
const MIN_CASES = 500;

test(
  `fuzz: up to ${cases} random cases from seed ${first} (${seconds} s at most) return the reference result or a typed error`,
  {
    timeout: 120_000,
  },
  () => {
    const result = runChild(new URL("./children/fuzz_child.ts", import.meta.url), {
      FUZZ_SEED: first,
      FUZZ_CASES: cases,
      FUZZ_SECONDS: seconds,
    });
    const lastCase = result.stderr.split("\n").filter((line) => line.startsWith("case ")).at(-1) ?? "(none)";
    const problems = result.stderr.split("\n").filter((line) => line !== "" && !line.startsWith("case "));
    assert.equal(
      result.status,
      0,
      `the fuzzer died (status ${result.status}) at ${lastCase}; reproduce with FUZZ_SEED=${
        lastCase.split(" ")[1]
      } FUZZ_CASES=1\n${problems.slice(0, 30).join("\n")}`,
    );
    const summary = JSON.parse(result.stdout.trim().split("\n").at(-1)!);
    assert.ok(summary.cases >= Math.min(MIN_CASES, Number(cases)), `only ${summary.cases} cases ran`);
    assert.equal(summary.typedErrors + summary.results, summary.cases);
    assert.equal(summary.calls, 2 * summary.cases);
    assert.ok(summary.results > summary.cases / 4, "many calls compute something");
    assert.ok(summary.typedErrors > summary.cases / 10, "many calls break a rule");
    assert.deepEqual(problems, [], "nothing else on stderr (no overrun logged by a finalizer)");
  },
);

// The seeded fuzz suite of issue 10: thousands of random calls at every public constructor, method and op
// (tests/helpers/fuzz_child.ts), in a child process so that a crash cannot take the test runner with it and
// names the seed that killed it. Each call either throws one of zigtensor's typed errors or returns what the
// reference kernels return; in the CHECKED build a damaged canary throws BufferOverrunError, which fails the
// run. FUZZ_SEED and FUZZ_CASES override the first seed and the count (to reproduce a reported seed).
import { test } from "node:test";
import assert from "node:assert/strict";
import { runChild } from "./helpers/subprocess.ts";

const first = process.env.FUZZ_SEED ?? "1";
const cases = process.env.FUZZ_CASES ?? "6000";

test(`fuzz: ${cases} random calls from seed ${first} return the reference result or a typed error`, () => {
  const result = runChild(new URL("./helpers/fuzz_child.ts", import.meta.url), {
    FUZZ_SEED: first,
    FUZZ_CASES: cases,
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
  assert.equal(summary.cases, Number(cases));
  assert.equal(summary.typedErrors + summary.results, Number(cases));
  assert.ok(summary.results > Number(cases) / 4, "most calls compute something");
  assert.ok(summary.typedErrors > Number(cases) / 10, "many calls break a rule");
  assert.deepEqual(problems, [], "nothing else on stderr (no overrun logged by a finalizer)");
});

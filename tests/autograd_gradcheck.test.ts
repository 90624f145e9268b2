// Gradient checks: walks the op table (src/core/op_table.ts) and checks every differentiable op through its
// cases in the op registry (tests/helpers/op_registry.ts) against central differences of an f64 reference
// function, on random shapes including broadcasts and strided (transposed, sliced, flipped) inputs, in exact and
// fast mode. An op the table marks differentiable without a rule must throw BackwardNotImplementedError instead.
import assert from "node:assert/strict";
import { test } from "node:test";
import { BackwardNotImplementedError, Tensor } from "../mod.ts";
import { OPS } from "../src/core/op_table.ts";
import * as R from "./helpers/f64.ts";
import { differentiableOps, gradCases } from "./helpers/op_registry.ts";

for (const mode of ["exact", "fast"] as const) {
  test(`every differentiable op of the table has a rule that matches central differences, or throws (${mode})`, () => {
    const walked = differentiableOps();
    assert.ok(walked.length >= 40, `the table lists ${walked.length} differentiable ops`);
    for (const op of walked) {
      const cases = gradCases[op];
      assert.ok(cases.length > 0, `${op}: no gradient-check case in the op registry`);
      for (const c of cases) {
        if ((OPS[op].grad as string) === "missing") {
          const leaves = c.shapes.map((s) => Tensor.zeros(s).withRequiresGrad());
          assert.throws(() => c.f32(leaves), BackwardNotImplementedError, `${op} without a rule must throw`);
        } else {
          R.checkGradients(c, mode);
        }
      }
    }
  });
}

import { test } from "node:test";
import assert from "node:assert/strict";
import { type AttentionReport, runAttentionConformance } from "./helpers/attention_conformance.ts";
import { isaReports } from "./helpers/subprocess.ts";
import { exp64, log64 } from "../src/kernels/attention.ts";
import { ActivationScope, DType, ops, Tensor, TensorCompute } from "../mod.ts";

test("fused attention forward and backward: exact is the reference's bits, fast within its bound, on 1-4 threads", () => {
  const report = runAttentionConformance(16, 5, [1, 2, 3, 4]);
  assert.equal(report.cases, 16 * 2 * 4);
  assert.deepEqual(report.failures, []);
});

test("every variant the host runs passes the attention conformance when forced with ZIGTENSOR_ISA", () => {
  for (
    const { report } of isaReports<AttentionReport>(new URL("./children/attention_child.ts", import.meta.url))
  ) {
    assert.equal(report.cases, 12 * 2 * 4);
    assert.deepEqual(report.failures, []);
  }
});

test("the reference's exp64 and log64 are within an f64 ulp or two of Math's, with the specials", () => {
  for (const x of [-700, -20.5, -1, -1e-10, 0, 1e-300, 0.5, 1, 3.25, 88, 700]) {
    const e = exp64(x);
    assert.ok(Math.abs(e - Math.exp(x)) <= 4 * Number.EPSILON * Math.exp(x), `exp ${x}`);
  }
  for (const x of [1e-310, 1e-300, 0.1, 0.7071, 1, 1.5, 2, 1e10, 1e300]) {
    assert.ok(
      Math.abs(log64(x) - Math.log(x)) <= 4 * Number.EPSILON * (1 + Math.abs(Math.log(x))),
      `log ${x}`,
    );
  }
  assert.deepEqual([exp64(-Infinity), exp64(Infinity), exp64(NaN)], [0, Infinity, NaN]);
  assert.deepEqual([log64(0), log64(Infinity), log64(-1)], [-Infinity, Infinity, NaN]);
});

test("fused attention by hand: two rows of equal scores average their keys; a masked-out row is zeros without gradient", () => {
  for (const mode of ["exact", "fast"] as const) {
    TensorCompute.run({ mode }, () => {
      using _ = new ActivationScope();
      const q = Tensor.zeros([2, 1]).withRequiresGrad();
      const k = Tensor.from([[1], [2], [3]]).withRequiresGrad();
      const v = Tensor.from([[3, 0], [0, 3], [6, 6]]).withRequiresGrad();
      const mask = Tensor.from([[false, false, false], [true, false, true]], { dtype: DType.Bool });
      const y = ops.attention(q, k, v, { mask });
      assert.equal(y.gradFn!.op, "Attention");
      assert.deepEqual(y.toNested(), [[0, 0], [4.5, 3]]);
      ops.sum(y).backward();
      // dv: row 1 gives each of its two keys half its gradient; row 0 nothing.
      assert.deepEqual(v.grad!.toNested(), [[0.5, 0.5], [0, 0], [0.5, 0.5]]);
      assert.deepEqual((q.grad!.toNested() as number[][])[0], [0]);
      assert.deepEqual((k.grad!.toNested() as number[][])[1], [0]);
    });
  }
});

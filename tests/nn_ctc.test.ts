// The native CTC kernel (zig/kernels/ctc.zig) against the reference (src/kernels/ctc.ts): losses and
// gradients within an f32 ulp on random batches under every ISA variant the host runs, and the same bits
// across variants and thread counts; the targets read and checked natively by ctcLoss.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isaReports } from "./helpers/subprocess.ts";
import { ctcConformanceRun } from "./helpers/ctc_conformance.ts";
import { ActivationScope, DType, ops, Tensor, TensorCompute, TensorShapeError } from "../mod.ts";

test("the CTC kernel matches the reference under every variant the host runs, with the same bits in each", () => {
  const hashes = new Map<string, number>();
  for (const { isa, report } of isaReports(new URL("./children/ctc_child.ts", import.meta.url))) {
    assert.deepEqual(report.failures, [], isa);
    assert.equal(report.cases, 2 * 60);
    assert.ok(report.elements > 2_000, `${isa}: ${report.elements} elements`);
    hashes.set(isa, report.exactHash);
  }
  assert.ok(hashes.size >= 1);
  assert.equal(new Set(hashes.values()).size, 1, JSON.stringify(Object.fromEntries(hashes)));
});

test("the CTC kernel gives the same bits on 1 and 4 threads", () => {
  const one = TensorCompute.run({ threads: 1 }, () => ctcConformanceRun(5, 20));
  const four = TensorCompute.run({ threads: 4 }, () => ctcConformanceRun(5, 20));
  assert.deepEqual(one.failures, []);
  assert.equal(one.exactHash, four.exactHash);
});

test("ctcLoss reads only each sequence's labels: padding past a target length is never checked or used", () => {
  using _ = new ActivationScope();
  const lp = ops.logSoftmax(Tensor.randn([5, 2, 4], { seed: 71 }), -1);
  // Padded [N, S] with junk (the blank, −1, a huge I64) past each length; the concatenated layout is the same.
  const padded = Tensor.from([1n, 2n, -1n, 3n, 0n, 2n ** 40n], [2, 3], { dtype: DType.I64 });
  const flat = Tensor.from([1, 2, 3], [3], { dtype: DType.I16 });
  const reference = ops.ctcLoss(lp, flat, [5, 4], [2, 1], { reduction: "none" }).toArray();
  assert.deepEqual(ops.ctcLoss(lp, padded, [5, 4], [2, 1], { reduction: "none" }).toArray(), reference);
  // A strided view of the padded targets (their transpose's transpose) reads the same labels.
  const strided = Tensor.from([1, 3, 2, 0, 9, 9], [3, 2], { dtype: DType.I32 }).transpose(0, 1);
  assert.deepEqual(ops.ctcLoss(lp, strided, [5, 4], [2, 1], { reduction: "none" }).toArray(), reference);
  assert.ok(Number.isFinite(reference[0] as number) && Number.isFinite(reference[1] as number));
});

test("ctcLoss refuses a label outside the classes or equal to the blank, naming it and its sequence", () => {
  using _ = new ActivationScope();
  const lp = Tensor.zeros([4, 2, 4]);
  const cases: [Tensor, number[], RegExp][] = [
    [Tensor.from([[1, 2], [3, 4]], { dtype: DType.I32 }), [2, 2], /label 4 of sequence 1/],
    [
      Tensor.from([[1, 2], [0, 2]], { dtype: DType.I32 }),
      [2, 2],
      /label 0 of sequence 1 .* other than the blank 0/,
    ],
    [Tensor.from([1, -2, 3], [3], { dtype: DType.I64 }), [1, 2], /label -2 of sequence 1/],
    // 2^32 + 1 would wrap to 1 in an I32 cast: the check sees the value itself.
    [Tensor.from([2n ** 32n + 1n, 1n], [2], { dtype: DType.I64 }), [1, 1], /label 4294967297 of sequence 0/],
  ];
  for (const [targets, lengths, message] of cases) {
    assert.throws(
      () => ops.ctcLoss(lp, targets, [4, 4], lengths),
      (e: Error) => e instanceof TensorShapeError && message.test(e.message),
      String(message),
    );
  }
});

// nllLoss and crossEntropy: the native class-loss kernel (zig/kernels/nll.zig) against its reference
// (src/kernels/nll.ts) on random calls under every ISA variant the host runs (the same bits in each, and for
// every thread count), PyTorch's option rules and errors, and the nn modules. Values against PyTorch are in
// tests/fixtures/cases/core.py; gradients in tests/helpers/op_registry.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isaReports } from "./helpers/subprocess.ts";
import {
  BackwardNotImplementedError,
  DType,
  DTypeError,
  nn,
  ops,
  OptionError,
  Tensor,
  TensorShapeError,
} from "../mod.ts";

test("the class-loss kernel matches the reference under every variant the host runs, with the same bits in each", () => {
  const hashes = new Map<string, number>();
  for (const { isa, report } of isaReports(new URL("./children/nll_child.ts", import.meta.url))) {
    assert.deepEqual(report.failures, [], isa);
    assert.equal(report.cases, 80);
    assert.ok(report.elements > 20_000, `${isa}: ${report.elements} elements`);
    hashes.set(isa, report.exactHash);
  }
  assert.ok(hashes.size >= 1);
  assert.equal(new Set(hashes.values()).size, 1, JSON.stringify(Object.fromEntries(hashes)));
});

const logits = () => Tensor.from([[1, 2, 3], [0.5, -1, 2], [3, 3, 1], [0, 0, 0]]);
const i64 = (values: number[], shape = [values.length]) => Tensor.from(values, shape, { dtype: DType.I64 });

test("I32 and I64 targets give the same loss; ignored rows add nothing, and a mean over none is NaN", () => {
  const a = ops.crossEntropy(logits(), i64([2, 0, 1, 2]), { weight: Tensor.from([1, 2, 3]) });
  const b = ops.crossEntropy(logits(), Tensor.from([2, 0, 1, 2], [4], { dtype: DType.I32 }), {
    weight: Tensor.from([1, 2, 3]),
  });
  assert.equal(a.item(), b.item());
  const none = ops.crossEntropy(logits(), i64([2, -100, 1, -100]), { reduction: "none" });
  const values = [...(none.toArray() as Float32Array)];
  assert.equal(values[1], 0);
  assert.equal(values[3], 0);
  const kept = ops.crossEntropy(logits(), i64([2, -100, 1, -100]));
  assert.ok(Math.abs((kept.item() as number) - (values[0] + values[2]) / 2) < 1e-6);
  assert.ok(Number.isNaN(ops.nllLoss(logits(), i64([-100, -100, -100, -100])).item() as number));
  assert.equal(ops.nllLoss(logits(), i64([-100, -100, -100, -100]), { reduction: "sum" }).item(), 0);
});

test("label smoothing mixes the target with the uniform distribution (1 at the uniform logits' log C)", () => {
  const uniform = ops.crossEntropy(Tensor.zeros([2, 4]), i64([1, 3]), { labelSmoothing: 0.4 });
  assert.ok(Math.abs((uniform.item() as number) - Math.log(4)) < 1e-6);
  // ε = 1: only the uniform part, Σ_c −log p_c / C for each row.
  const x = Tensor.from([[2, 0, 0]]);
  const lse = Math.log(Math.exp(2) + 2);
  const all = ops.crossEntropy(x, i64([0]), { labelSmoothing: 1 });
  assert.ok(Math.abs((all.item() as number) - (3 * lse - 2) / 3) < 1e-6);
});

test("probability targets: one-hot probabilities give the index loss, and the target gets a gradient", () => {
  const x = logits();
  const hot = Tensor.from([[0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]]);
  const soft = ops.crossEntropy(x, hot, { weight: Tensor.from([1, 2, 3]), reduction: "sum" });
  const hard = ops.crossEntropy(x, i64([2, 0, 1, 2]), { weight: Tensor.from([1, 2, 3]), reduction: "sum" });
  assert.ok(Math.abs((soft.item() as number) - (hard.item() as number)) < 1e-5);
  const y = Tensor.from([[0.2, 0.3, 0.5]]).withRequiresGrad();
  const xl = Tensor.from([[1, 2, 3]]).withRequiresGrad();
  ops.crossEntropy(xl, y).backward();
  const lse = Math.log(Math.exp(1) + Math.exp(2) + Math.exp(3));
  const dy = [...(y.grad!.toArray() as Float32Array)];
  [1, 2, 3].forEach((v, c) => assert.ok(Math.abs(dy[c] - (lse - v)) < 1e-5));
  // The input's gradient: softmax · Σ y − y.
  const dx = [...(xl.grad!.toArray() as Float32Array)];
  [1, 2, 3].forEach((v, c) => assert.ok(Math.abs(dx[c] - (Math.exp(v - lse) - [0.2, 0.3, 0.5][c])) < 1e-6));
});

test("a target out of range is a TensorShapeError naming its value, position and the class count", () => {
  assert.throws(
    () => ops.crossEntropy(Tensor.zeros([2, 3, 2]), i64([0, 1, 2, 3], [2, 2])),
    (e: unknown) =>
      e instanceof TensorShapeError && /target 3 at position \[1, 1\]/.test(e.message) &&
      /\[0, 3\)/.test(e.message),
  );
  assert.throws(() => ops.nllLoss(logits(), i64([0, -1, 1, 2])), /target -1 at position \[1\]/);
});

test("options: PyTorch's spellings are named, values checked, weight frozen", () => {
  assert.throws(
    () => ops.crossEntropy(logits(), i64([0, 1, 2, 0]), { ignore_index: 1 } as never),
    (e: unknown) => e instanceof OptionError && /ignoreIndex/.test(e.message),
  );
  assert.throws(
    () => ops.crossEntropy(logits(), i64([0, 1, 2, 0]), { label_smoothing: 0.1 } as never),
    /labelSmoothing/,
  );
  assert.throws(
    () => ops.nllLoss(logits(), i64([0, 1, 2, 0]), { labelSmoothing: 0.1 } as never),
    OptionError,
  );
  assert.throws(() => ops.crossEntropy(logits(), i64([0, 1, 2, 0]), { labelSmoothing: 1.5 }), OptionError);
  assert.throws(
    () => ops.crossEntropy(logits(), i64([0, 1, 2, 0]), { reduction: "avg" as never }),
    OptionError,
  );
  assert.throws(() => ops.crossEntropy(logits(), i64([0, 1, 2, 0]), { ignoreIndex: 0.5 }), OptionError);
  assert.throws(
    () => ops.crossEntropy(logits(), i64([0, 1, 2, 0]), { weight: Tensor.ones([4]) }),
    TensorShapeError,
  );
  assert.throws(() => ops.crossEntropy(logits(), i64([0, 1, 2])), TensorShapeError);
  assert.throws(() => ops.crossEntropy(logits(), Tensor.zeros([4, 2])), TensorShapeError);
  assert.throws(() => ops.nllLoss(logits(), Tensor.zeros([4])), DTypeError);
  assert.throws(
    () => ops.crossEntropy(logits(), Tensor.from([0, 1, 1, 0], [4], { dtype: DType.U8 })),
    DTypeError,
  );
  assert.throws(() => ops.crossEntropy(Tensor.from([1], []), i64([0])), TensorShapeError);
  const x = logits().withRequiresGrad();
  assert.throws(
    () => ops.crossEntropy(x, i64([0, 1, 2, 0]), { weight: Tensor.ones([3]).withRequiresGrad() }),
    BackwardNotImplementedError,
  );
});

test("nn.CrossEntropyLoss and nn.NLLLoss take the same options and keep the weight as buffer 'weight'", () => {
  const weight = Tensor.from([1, 2, 3]);
  const module = new nn.CrossEntropyLoss({ weight, ignoreIndex: 1, labelSmoothing: 0.2, reduction: "sum" });
  assert.deepEqual([...module.stateDict().keys()], ["weight"]);
  const targets = i64([2, 1, 0, 2]);
  const direct = ops.crossEntropy(logits(), targets, {
    weight,
    ignoreIndex: 1,
    labelSmoothing: 0.2,
    reduction: "sum",
  });
  assert.equal(module.forward(logits(), targets).item(), direct.item());
  const nll = new nn.NLLLoss({ weight, reduction: "none" });
  assert.deepEqual(
    [...(nll.forward(logits(), targets).toArray() as Float32Array)],
    [...(ops.nllLoss(logits(), targets, { weight, reduction: "none" }).toArray() as Float32Array)],
  );
  assert.equal(
    logits().crossEntropy(targets, { reduction: "sum" }).item(),
    ops.crossEntropy(logits(), targets, { reduction: "sum" }).item(),
  );
});

test("an empty batch: mean is NaN, sum 0, none empty, and the gradient is empty", () => {
  const x = Tensor.zeros([0, 3]).withRequiresGrad();
  assert.ok(Number.isNaN(ops.crossEntropy(x, i64([])).item() as number));
  const total = ops.crossEntropy(x, i64([]), { reduction: "sum" });
  assert.equal(total.item(), 0);
  total.backward();
  assert.deepEqual(x.grad!.shape, [0, 3]);
  assert.deepEqual(ops.nllLoss(x, i64([]), { reduction: "none" }).shape, [0]);
});

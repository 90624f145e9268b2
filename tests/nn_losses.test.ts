// The regression and probability losses (src/ops/losses.ts) and their modules (src/nn/losses.ts): values and
// gradients beyond the PyTorch fixtures (kinks, ties, clamps), errors, buffers named as PyTorch names them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { nn, ops, OptionError, Tensor, TensorShapeError } from "../mod.ts";

test("binaryCrossEntropyWithLogits has PyTorch's gradient sigmoid(x)·c − posWeight·y at a logit of exactly 0", () => {
  using x = Tensor.zeros([3]).withRequiresGrad();
  using y = Tensor.from([1, 0, 0.5]);
  using pw = Tensor.from([2, 2, 2]);
  using loss = ops.binaryCrossEntropyWithLogits(x, y, { posWeight: pw, reduction: "sum" });
  loss.backward();
  // c = 1 + (pw − 1)·y; d/dx = c·σ(0) − pw·y.
  assert.deepEqual([...x.grad!.toArray()], [2 * 0.5 - 2, 0.5, 1.5 * 0.5 - 1]);
});

test("smoothL1Loss: gradient clamp(d/beta, −1, 1), 0 at d = 0 and 1 at d = beta; beta 0 is l1Loss", () => {
  using x = Tensor.from([0, 0.25, 1, 3, -3]).withRequiresGrad();
  using t = Tensor.zeros([5]);
  using loss = ops.smoothL1Loss(x, t, { beta: 1, reduction: "sum" });
  assert.equal(loss.item(), 0 + 0.03125 + 0.5 + 2.5 + 2.5);
  loss.backward();
  assert.deepEqual([...x.grad!.toArray()], [0, 0.25, 1, 1, -1]);
  using l1 = ops.smoothL1Loss(x, t, { beta: 0, reduction: "none" });
  assert.deepEqual([...l1.toArray()], [0, 0.25, 1, 3, 3]);
});

test("binaryCrossEntropy clamps each log at −100 like PyTorch", () => {
  using loss = ops.binaryCrossEntropy(Tensor.from([0, 1, 1]), Tensor.from([1, 0, 1]), { reduction: "none" });
  assert.deepEqual([...loss.toArray()], [100, 100, 0]);
});

test("klDiv counts 0·log 0 as 0 and batchmean divides by the first extent", () => {
  using logP = Tensor.from([[Math.log(0.25), Math.log(0.75)], [Math.log(0.5), Math.log(0.5)]]);
  using target = Tensor.from([[1, 0], [0.5, 0.5]]);
  using none = ops.klDiv(logP, target, { reduction: "none" });
  assert.deepEqual([...(none.toArray() as Float32Array)].map((v) => Math.round(v * 1e6) / 1e6), [
    Math.round(Math.log(4) * 1e6) / 1e6,
    0,
    0,
    0,
  ]);
  using batch = ops.klDiv(logP, target, { reduction: "batchmean" });
  assert.ok(Math.abs((batch.item() as number) - Math.log(4) / 2) < 1e-6);
});

test("the losses refuse another target shape, an unknown reduction and a bad beta, naming the op", () => {
  using a = Tensor.zeros([2, 3]);
  using b = Tensor.zeros([3]);
  assert.throws(
    () => ops.mseLoss(a, b),
    (e) => e instanceof TensorShapeError && /mseLoss.*\[3\]/.test(e.message),
  );
  assert.throws(
    () => ops.l1Loss(a, a, { reduction: "batchmean" as "sum" }),
    (e) => e instanceof OptionError && /l1Loss: reduction must be/.test(e.message),
  );
  assert.throws(() => ops.klDiv(a, a, { reduction: "max" as "sum" }), /"batchmean"/);
  assert.throws(() => ops.smoothL1Loss(a, a, { beta: -1 }), /smoothL1Loss: beta must be/);
  assert.throws(
    () => ops.binaryCrossEntropy(a, a, { weight: Tensor.zeros([4, 1, 1]) }),
    (e) => e instanceof TensorShapeError && /weight \[4, 1, 1\] must broadcast/.test(e.message),
  );
  assert.throws(() => ops.mseLoss(a, a, { size_average: true } as never), OptionError);
});

test("the loss modules: PyTorch's buffer names, and forward equal to the op", () => {
  using w = Tensor.from([1, 2]);
  using bce = new nn.BCEWithLogitsLoss({ weight: w, posWeight: Tensor.from([3, 3]) });
  assert.deepEqual([...bce.stateDict().keys()], ["weight", "pos_weight"]);
  using x = Tensor.from([0.5, -1]);
  using y = Tensor.from([1, 0]);
  using viaModule = bce.forward(x, y);
  using viaOp = ops.binaryCrossEntropyWithLogits(x, y, { weight: w, posWeight: Tensor.from([3, 3]) });
  assert.equal(viaModule.item(), viaOp.item());
  using mse = new nn.MSELoss({ reduction: "none" }).forward(x, y);
  assert.deepEqual([...mse.toArray()], [0.25, 1]);
  using bceLoss = new nn.BCELoss({ weight: w });
  assert.deepEqual([...bceLoss.stateDict().keys()], ["weight"]);
});

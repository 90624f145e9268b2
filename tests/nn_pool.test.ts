// maxPool2d and avgPool2d options (src/ops/pool.ts): values against hand-computed windows, unbatched CHW
// inputs, and errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ops, Tensor } from "../mod.ts";

test("maxPool2d takes one CHW image as a batch of one and returns CHW", () => {
  using x = Tensor.from([1, 5, 2, 4, 3, 0, 9, 8, 7, 6, 1, 2, 3, 4, 5, 6], [1, 4, 4]);
  using y = ops.maxPool2d(x, { kernel: 2 });
  assert.deepEqual([...y.shape], [1, 2, 2]);
  assert.deepEqual([...y.toArray()], [5, 9, 7, 6]);
  assert.throws(() => ops.maxPool2d(Tensor.zeros([4, 4]), { kernel: 2 }), /NCHW tensor \(or one CHW image\)/);
});

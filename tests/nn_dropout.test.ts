// ops.dropout and nn.Dropout: determinism with a seed, the fraction dropped, the scale, the gradient through the
// same mask, train()/eval(), errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { nn, ops, OptionError, Tensor } from "../mod.ts";

test("dropout with a seed repeats its mask; another seed gives another", () => {
  using x = Tensor.ones([256]);
  using a = ops.dropout(x, { p: 0.3, seed: 11 });
  using b = ops.dropout(x, { p: 0.3, seed: 11 });
  using c = ops.dropout(x, { p: 0.3, seed: 12 });
  assert.deepEqual([...a.toArray()], [...b.toArray()]);
  assert.notDeepEqual([...a.toArray()], [...c.toArray()]);
});

test("dropout zeroes a fraction p (within 4 standard deviations) and scales the rest by 1/(1 − p)", () => {
  const n = 100000;
  using x = Tensor.full([n], 2);
  for (const p of [0.1, 0.5, 0.9]) {
    using y = ops.dropout(x, { p, seed: 5 });
    const values = y.toArray() as Float32Array;
    const dropped = values.filter((v) => v === 0).length;
    assert.ok(Math.abs(dropped / n - p) < 4 * Math.sqrt((p * (1 - p)) / n), `p ${p}: dropped ${dropped}`);
    assert.ok(values.every((v) => v === 0 || v === Math.fround(2 * Math.fround(1 / (1 - p)))));
  }
});

test("dropout's gradient is the same mask; p = 1 gives zeros; not training or p = 0 returns x", () => {
  using x = Tensor.rand([64], { seed: 2 }).withRequiresGrad();
  using y = ops.dropout(x, { p: 0.5, seed: 9 });
  using s = y.sum();
  s.backward();
  const out = y.toArray() as Float32Array;
  const grad = x.grad!.toArray() as Float32Array;
  out.forEach((v, i) => assert.equal(grad[i], v === 0 ? 0 : 2));
  using zeros = ops.dropout(x, { p: 1 });
  assert.ok((zeros.toArray() as Float32Array).every((v) => v === 0));
  assert.equal(ops.dropout(x, { training: false }), x);
  assert.equal(ops.dropout(x, { p: 0 }), x);
  assert.throws(
    () => ops.dropout(x, { p: 1.5 }),
    (e) => e instanceof OptionError && /dropout: p must be/.test(e.message),
  );
});

test("nn.Dropout: a seeded module repeats its sequence of masks, and eval() makes it the identity", () => {
  using x = Tensor.ones([128]);
  using first = new nn.Dropout(0.5, { seed: 4 });
  using second = new nn.Dropout(0.5, { seed: 4 });
  using a1 = first.forward(x);
  using a2 = first.forward(x);
  using b1 = second.forward(x);
  using b2 = second.forward(x);
  assert.deepEqual([...a1.toArray()], [...b1.toArray()]);
  assert.deepEqual([...a2.toArray()], [...b2.toArray()]);
  assert.notDeepEqual([...a1.toArray()], [...a2.toArray()]);
  first.eval();
  assert.equal(first.forward(x), x);
  first.train();
  using again = first.forward(x);
  assert.ok((again.toArray() as Float32Array).some((v) => v === 0));
});

// The Module contract (names, modes, state dictionary errors, ownership), dropout, the DataLoader, the
// progress line, and a steady-state training loop with modules, an optimizer and a loader that obtains no new
// native memory after warm-up.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ActivationScope,
  BufferPool,
  DataLoader,
  DType,
  DTypeError,
  GradMode,
  nn,
  ops,
  optim,
  Progress,
  Tensor,
  TensorShapeError,
} from "../mod.ts";

function smallCnn(): nn.Sequential {
  return new nn.Sequential(
    new nn.Conv2d(1, 4, 3, { padding: 1 }),
    new nn.BatchNorm2d(4),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Flatten(),
    new nn.Dropout(0.2),
    new nn.Linear(4 * 4 * 4, 3),
  );
}

test("state dictionaries use PyTorch's names and refuse mismatches naming the key", () => {
  nn.manualSeed(3);
  using model = smallCnn();
  const state = model.stateDict();
  assert.deepEqual([...state.keys()], [
    "0.weight",
    "0.bias",
    "1.weight",
    "1.bias",
    "1.running_mean",
    "1.running_var",
    "1.num_batches_tracked",
    "6.weight",
    "6.bias",
  ]);
  assert.equal(state.get("1.num_batches_tracked")!.dtype, DType.I64);
  assert.deepEqual(model.parameters().length, 6);
  using wrongShape = Tensor.zeros([3, 63]);
  const withShape = new Map(state);
  withShape.set("6.weight", wrongShape);
  assert.throws(
    () => model.loadStateDict(withShape),
    (e: unknown) => e instanceof TensorShapeError && /"6\.weight"/.test(e.message),
  );
  using wrongType = Tensor.zeros([4], { dtype: DType.F64 });
  const withType = new Map(state);
  withType.set("1.bias", wrongType);
  assert.throws(
    () => model.loadStateDict(withType),
    (e: unknown) => e instanceof DTypeError && /"1\.bias"/.test(e.message),
  );
  const partial = new Map(state);
  partial.delete("0.bias");
  partial.set("extra", wrongShape);
  assert.throws(
    () => model.loadStateDict(partial),
    (e: unknown) =>
      e instanceof nn.StateDictError && e.missingKeys[0] === "0.bias" && e.unexpectedKeys[0] === "extra",
  );
  const result = model.loadStateDict(partial.set("6.weight", state.get("6.weight")!), { strict: false });
  assert.deepEqual(result, { missingKeys: ["0.bias"], unexpectedKeys: ["extra"] });
});

test("loadStateDict copies values; a model rebuilt from another's state computes the same", () => {
  nn.manualSeed(1);
  using a = smallCnn();
  nn.manualSeed(2);
  using b = smallCnn();
  using x = Tensor.randn([2, 1, 8, 8], { seed: 4 });
  a.eval();
  b.eval();
  using ya = a.forward(x);
  using yb0 = b.forward(x);
  assert.notDeepEqual([...ya.toArray()], [...yb0.toArray()]);
  b.loadStateDict(Object.fromEntries(a.stateDict()));
  using yb = b.forward(x);
  assert.deepEqual([...yb.toArray()], [...ya.toArray()]);
});

test("train() and eval() reach every sub-module; dispose releases every parameter and buffer", () => {
  const model = smallCnn();
  assert.ok(model.namedModules().every(([, m]) => m.training));
  model.eval();
  assert.ok(model.namedModules().every(([, m]) => !m.training));
  const tensors = [...model.stateDict().values()];
  model.dispose();
  model.dispose();
  assert.ok(tensors.every((t) => t.isReleased));
});

test("dropout keeps about 1 − p of the elements, scaled, and its gradient follows the mask", () => {
  using drop = new nn.Dropout(0.25, { seed: 9 });
  using x = Tensor.ones([4000]).withRequiresGrad();
  using _scope = new ActivationScope();
  const y = drop.forward(x);
  const values = y.toArray() as Float32Array;
  const kept = values.filter((v) => v !== 0);
  assert.ok(kept.every((v) => v === Math.fround(1 / 0.75)));
  assert.ok(Math.abs(kept.length / 4000 - 0.75) < 0.03, `${kept.length}`);
  y.sum().backward();
  assert.deepEqual([...x.grad!.toArray()], [...values]);
  x.grad = null;
});

test("the DataLoader shuffles with its seed, covers every row once per epoch, and honours dropLast", () => {
  using x = Tensor.arange(20).reshape([10, 2]);
  const labels = Int32Array.from({ length: 10 }, (_, i) => i);
  using loader = new DataLoader([x, labels], { batchSize: 4, shuffle: true, seed: 5 });
  const epoch = () => {
    const seen: number[] = [];
    for (const [xb, yb] of loader) {
      const ids = [...(yb.toArray() as Int32Array)];
      const rows = xb.toArray() as Float32Array;
      ids.forEach((id, r) => assert.deepEqual([rows[2 * r], rows[2 * r + 1]], [2 * id, 2 * id + 1]));
      seen.push(...ids);
    }
    return seen;
  };
  const first = epoch();
  const second = epoch();
  assert.deepEqual([...first].sort((a, b) => a - b), [...labels]);
  assert.notDeepEqual(first, second);
  assert.notDeepEqual(first, [...labels]);
  using again = new DataLoader([x, labels], { batchSize: 4, shuffle: true, seed: 5 });
  const replay: number[] = [];
  for (const [, yb] of again) replay.push(...(yb.toArray() as Int32Array));
  assert.deepEqual(replay, first);
  using dropping = new DataLoader([labels], { batchSize: 4, dropLast: true });
  assert.equal(dropping.length, 2);
  const sizes: number[] = [];
  for (const [yb] of dropping) sizes.push(yb.shape[0]);
  assert.deepEqual(sizes, [4, 4]);
  assert.throws(() => new DataLoader([x, new Int32Array(3)]), TensorShapeError);
});

test("progress rewrites one line on a terminal and prints plain lines otherwise", () => {
  const tty: string[] = [];
  const onTerminal = new Progress(3, { label: "fit", tty: true, write: (t) => tty.push(t) });
  onTerminal.update(1, { loss: 2 });
  onTerminal.update(3, { loss: 1 });
  onTerminal.done();
  assert.ok(tty.every((t) => t.startsWith("\r\x1b[2K")));
  assert.ok(tty.at(-1)!.endsWith("\n") && tty.at(-1)!.includes("fit 3/3") && tty.at(-1)!.includes("ETA 0s"));
  const plain: string[] = [];
  const inLog = new Progress(10, { write: (t) => plain.push(t), tty: false });
  for (let s = 1; s <= 10; s++) inLog.update(s, { loss: s });
  inLog.done();
  assert.equal(plain.length, 10);
  assert.ok(plain.every((t) => !t.includes("\r") && t.endsWith("\n")));
});

test("a steady-state training loop with modules, an optimizer and a loader obtains no new native memory", () => {
  nn.manualSeed(11);
  using model = smallCnn();
  using opt = new optim.AdamW(model.parameters(), { lr: 0.01 });
  using images = Tensor.randn([48, 1, 8, 8], { seed: 12 });
  const labels = Int32Array.from({ length: 48 }, (_, i) => i % 3);
  using loader = new DataLoader([images, labels], { batchSize: 16, shuffle: true, seed: 1 });
  let osBytes = 0;
  let first = NaN;
  let last = NaN;
  for (let epoch = 0; epoch < 8; epoch++) {
    for (const [xb, yb] of loader) {
      using _scope = new ActivationScope();
      const loss = ops.crossEntropy(model.forward(xb), yb);
      opt.zeroGrad();
      loss.backward();
      optim.clipGradNorm(model.parameters(), 5);
      opt.step();
      last = loss.item() as number;
      if (Number.isNaN(first)) first = last;
    }
    if (epoch === 1) osBytes = BufferPool.default.stats().osBytes;
  }
  assert.equal(BufferPool.default.stats().osBytes - osBytes, 0);
  assert.ok(last < first, `loss ${first} -> ${last}`);
  GradMode.noGrad(() => model.eval());
  model.zeroGrad();
  assert.ok(model.parameters().every((p) => p.grad === null));
});

// nn.LSTM and nn.GRU with numLayers 2, bidirectional, in both layouts, against torch.nn.LSTM/GRU with the same
// weights loaded by PyTorch's names (fixture: tests/fixtures/make_rnn_modules.py); dropout between layers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { assertClose, nn, Tensor } from "../mod.ts";

interface Plain {
  shape: number[];
  data: number[];
}
interface RnnCase {
  kind: "LSTM" | "GRU";
  batchFirst: boolean;
  weights: Record<string, Plain>;
  x: Plain;
  h0: Plain;
  c0: Plain;
  outputs: Record<string, Plain>;
}

const fixture = JSON.parse(
  readFileSync(new URL("./fixtures/torch_rnn_modules.json", import.meta.url), "utf8"),
) as { cases: RnnCase[] };
const tensor = (p: Plain) => Tensor.from(p.data, p.shape);

for (const c of fixture.cases) {
  test(`${c.kind} (2 layers, bidirectional, batchFirst ${c.batchFirst}) matches PyTorch with its state dict`, () => {
    const options = { numLayers: 2, bidirectional: true, batchFirst: c.batchFirst };
    using module = c.kind === "LSTM" ? new nn.LSTM(3, 4, options) : new nn.GRU(3, 4, options);
    const weights = Object.fromEntries(Object.entries(c.weights).map(([k, v]) => [k, tensor(v)]));
    const loaded = module.loadStateDict(weights);
    assert.deepEqual([loaded.missingKeys, loaded.unexpectedKeys], [[], []]);
    const x = tensor(c.x);
    const outputs: Record<string, Tensor> = {};
    if (module instanceof nn.LSTM) {
      const [output, [h, cell]] = module.forward(x, [tensor(c.h0), tensor(c.c0)]);
      Object.assign(outputs, { output, h, c: cell });
    } else {
      const [output, h] = (module as nn.GRU).forward(x, tensor(c.h0));
      Object.assign(outputs, { output, h });
    }
    for (const [name, want] of Object.entries(c.outputs)) {
      assert.deepEqual([...outputs[name].shape], want.shape, name);
      assertClose(outputs[name].reshape([-1]), want.data, { rtol: 1e-5, atol: 1e-5 });
    }
  });
}

test("dropout between layers acts in training only, and gradients reach both directions' weights", () => {
  const x = Tensor.rand([6, 2, 3], { seed: 1 });
  using gru = new nn.GRU(3, 4, { numLayers: 2, bidirectional: true, dropout: 0.5, seed: 3 });
  const [a] = gru.forward(x);
  const [b] = gru.forward(x);
  assert.notDeepEqual([...a.toArray()], [...b.toArray()]);
  gru.eval();
  const [c] = gru.forward(x);
  const [d] = gru.forward(x);
  assert.deepEqual([...c.toArray()], [...d.toArray()]);
  gru.train();
  const [y] = gru.forward(x);
  y.sum().backward();
  for (const name of ["weight_ih_l0", "weight_ih_l0_reverse", "weight_hh_l1_reverse"]) {
    const p = gru.namedParameters().find(([n]) => n === name)![1];
    assert.ok(p.grad !== null && (p.grad.toArray() as Float32Array).some((v) => v !== 0), name);
  }
  assert.throws(() => new nn.LSTM(3, 4, { dropout: 2 }), /dropout/);
});

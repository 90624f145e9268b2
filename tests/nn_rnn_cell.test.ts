// The native recurrent cell kernel (zig/kernels/rnn.zig) against the reference (src/kernels/rnn.ts): the four
// cell ops on random steps within the documented bounds under every ISA variant the host runs, with the same
// bits across variants and thread counts; the layer kernels (forward and backward through time) with the bits of
// the packed products and cells they run; and the fused layers' exact forward pass equal, bit for bit, to the composition of
// element-wise kernels it replaces.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isaReports } from "./helpers/subprocess.ts";
import {
  RNN_EXACT_BOUND,
  RNN_FAST_BOUND,
  RNN_LAYER_EXACT_BOUND,
  RNN_LAYER_FAST_BOUND,
  rnnConformanceRun,
  type RnnLayerReport,
  type RnnReport,
} from "./helpers/rnn_conformance.ts";
import { ActivationScope, ops, Tensor, TensorCompute } from "../mod.ts";

test("the cell kernel matches the reference under every variant the host runs, with the same bits in each", () => {
  const hashes = new Map<string, number>();
  const forwardHashes = new Map<string, number>();
  const children = isaReports<RnnReport & { layers: RnnLayerReport }>(
    new URL("./children/rnn_child.ts", import.meta.url),
  );
  for (const { isa, report } of children) {
    assert.deepEqual(report.failures, [], isa);
    assert.equal(report.cases, 80);
    assert.ok(report.elements > 20_000, `${isa}: ${report.elements} elements`);
    assert.ok(report.worst.exact <= RNN_EXACT_BOUND && report.worst.fast <= RNN_FAST_BOUND);
    // Fast mode is another arithmetic: it differs somewhere.
    assert.ok(report.worst.fast > 0, `${isa}: fast mode gave the exact results`);
    hashes.set(isa, report.exactHash);
    // The layer kernels: the compositions' bits, the same on 1 and 4 threads, near the reference.
    const forward = report.layers;
    assert.deepEqual(forward.failures, [], isa);
    assert.equal(forward.cases, 32);
    assert.ok(forward.threaded >= 4, `${isa}: ${forward.threaded} layers split across threads`);
    assert.ok(forward.worst.exact <= RNN_LAYER_EXACT_BOUND && forward.worst.fast <= RNN_LAYER_FAST_BOUND);
    assert.ok(forward.worst.fast > 0, `${isa}: the fast layers gave the exact results`);
    forwardHashes.set(isa, forward.exactHash);
  }
  assert.ok(hashes.size >= 1);
  for (const h of [hashes, forwardHashes]) {
    assert.equal(new Set(h.values()).size, 1, JSON.stringify(Object.fromEntries(h)));
  }
});

/** The single-layer LSTM as element-wise ops (the composition ops.lstm replaced), [N, T, H] and final c. */
function composedLstm(x: Tensor, w: { weightIh: Tensor; weightHh: Tensor; biasIh: Tensor; biasHh: Tensor }) {
  const [n, steps] = x.shape;
  const hidden = w.weightHh.shape[1];
  const gate = (t: Tensor, i: number) => ops.slice(t, 1, i * hidden, (i + 1) * hidden);
  const projected = ops.linear(x, w.weightIh, w.biasIh);
  let h = Tensor.zeros([n, hidden]);
  let c = Tensor.zeros([n, hidden]);
  const outputs: Tensor[] = [];
  for (let t = 0; t < steps; t++) {
    const gates = ops.add(ops.select(projected, 1, t), ops.linear(h, w.weightHh, w.biasHh));
    const [i, f, o] = [0, 1, 3].map((g) => ops.sigmoid(gate(gates, g)));
    c = ops.add(ops.mul(f, c), ops.mul(i, ops.tanh(gate(gates, 2))));
    h = ops.mul(o, ops.tanh(c));
    outputs.push(ops.unsqueeze(h, 1));
  }
  return { output: ops.concat(outputs, 1), c };
}

/** The single-layer GRU as element-wise ops. */
function composedGru(x: Tensor, w: { weightIh: Tensor; weightHh: Tensor; biasIh: Tensor; biasHh: Tensor }) {
  const [n, steps] = x.shape;
  const hidden = w.weightHh.shape[1];
  const gate = (t: Tensor, i: number) => ops.slice(t, 1, i * hidden, (i + 1) * hidden);
  const projected = ops.linear(x, w.weightIh, w.biasIh);
  let h = Tensor.zeros([n, hidden]);
  const outputs: Tensor[] = [];
  for (let t = 0; t < steps; t++) {
    const fromInput = ops.select(projected, 1, t);
    const fromHidden = ops.linear(h, w.weightHh, w.biasHh);
    const [r, z] = [0, 1].map((g) => ops.sigmoid(ops.add(gate(fromInput, g), gate(fromHidden, g))));
    const candidate = ops.tanh(ops.add(gate(fromInput, 2), ops.mul(r, gate(fromHidden, 2))));
    h = ops.add(candidate, ops.mul(z, ops.sub(h, candidate)));
    outputs.push(ops.unsqueeze(h, 1));
  }
  return ops.concat(outputs, 1);
}

test("the fused lstm and gru give the composition's bits in exact mode (19 hidden units: vector and tail)", () => {
  TensorCompute.run({ mode: "exact" }, () => {
    using _ = new ActivationScope();
    const x = Tensor.randn([5, 7, 6], { seed: 60 });
    for (const gates of [4, 3]) {
      const w = {
        weightIh: Tensor.randn([gates * 19, 6], { seed: 61 }),
        weightHh: Tensor.randn([gates * 19, 19], { seed: 62 }),
        biasIh: Tensor.randn([gates * 19], { seed: 63 }),
        biasHh: Tensor.randn([gates * 19], { seed: 64 }),
      };
      if (gates === 4) {
        const fused = ops.lstm(x, w);
        const composed = composedLstm(x, w);
        assert.deepEqual(fused.output.toArray(), composed.output.toArray());
        assert.deepEqual(ops.squeeze(fused.c, 0).toArray(), composed.c.toArray());
      } else {
        assert.deepEqual(ops.gru(x, w).output.toArray(), composedGru(x, w).toArray());
      }
    }
  });
});

test("the cell kernel gives the same bits on 1 and 4 threads in the conformance run", () => {
  const report = rnnConformanceRun(5, 24);
  assert.deepEqual(report.failures, []);
  assert.equal(report.cases, 24);
});

test("a layer over an empty batch gives an empty output and zero gradients; no steps or no hidden units is refused", () => {
  using _ = new ActivationScope();
  const refused = [
    [Tensor.zeros([2, 0, 5]), Tensor.zeros([16, 5]), Tensor.zeros([16, 4])],
    [Tensor.zeros([2, 3, 5]), Tensor.zeros([0, 5]), Tensor.zeros([0, 0])],
  ];
  for (const [x, weightIh, weightHh] of refused) {
    assert.throws(() => ops.lstm(x, { weightIh, weightHh }), { name: "TensorShapeError" });
  }
  for (const gates of [4, 3]) {
    const x = Tensor.zeros([0, 3, 5]).withRequiresGrad();
    const weightIh = Tensor.randn([gates * 4, 5], { seed: 71 }).withRequiresGrad();
    const weightHh = Tensor.randn([gates * 4, 4], { seed: 72 }).withRequiresGrad();
    const biasHh = Tensor.randn([gates * 4], { seed: 73 }).withRequiresGrad();
    const w = { weightIh, weightHh, biasHh };
    const output = gates === 4 ? ops.lstm(x, w).output : ops.gru(x, w).output;
    assert.deepEqual([...output.shape], [0, 3, 4]);
    ops.sum(output).backward();
    for (const t of [x, weightIh, weightHh, biasHh]) {
      assert.deepEqual([...t.grad!.shape], [...t.shape]);
      assert.ok([...(t.grad!.toArray() as Float32Array)].every((v) => v === 0), `${gates} gates`);
    }
  }
});

// Every layer against PyTorch (tests/fixtures/nn/modules.json, from tests/fixtures/make_nn_fixtures.py): the
// PyTorch state_dict loads by name, the forward values match, and so do the gradients of the inputs and of
// every parameter for the loss sum(output · weight); batch norm's running statistics match after a step.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ActivationScope, DType, nn, ops, type Tensor } from "../mod.ts";
import { assertClose } from "./helpers/f64.ts";
import { disposeAll, expected, fixture, stateOf, tensorOf, type TensorSpec } from "./helpers/nn_fixtures.ts";

interface ModuleCase {
  name: string;
  args: Record<string, unknown>;
  train: boolean;
  state: Record<string, TensorSpec>;
  inputs: TensorSpec[];
  outputs: TensorSpec[];
  weights: TensorSpec[];
  inputGrads: (TensorSpec | null)[];
  paramGrads: Record<string, TensorSpec>;
  stateAfter: Record<string, TensorSpec>;
  masks?: Record<string, TensorSpec>;
}

// deno-lint-ignore no-explicit-any
type AnyModule = nn.Module<any, any>;

/** The zigtensor module a case describes. */
function build(c: ModuleCase): AnyModule {
  // deno-lint-ignore no-explicit-any
  const a = c.args as any;
  switch (c.name) {
    case "Linear":
      return new nn.Linear(a.inFeatures, a.outFeatures, { bias: a.bias });
    case "Conv1d":
      return new nn.Conv1d(a.inChannels, a.outChannels, a.kernelSize, a);
    case "Conv2d":
      return new nn.Conv2d(a.inChannels, a.outChannels, a.kernelSize, a);
    case "BatchNorm1d":
      return new nn.BatchNorm1d(a.numFeatures, a);
    case "BatchNorm2d":
      return new nn.BatchNorm2d(a.numFeatures, a);
    case "LayerNorm":
      return new nn.LayerNorm(a.normalizedShape);
    case "Embedding":
      return new nn.Embedding(a.numEmbeddings, a.embeddingDim, a);
    case "LSTM":
      return new nn.LSTM(a.inputSize, a.hiddenSize, a);
    case "GRU":
      return new nn.GRU(a.inputSize, a.hiddenSize, a);
    case "MultiheadAttention":
      return new nn.MultiheadAttention(a.embedDim, a.numHeads, a);
    case "TransformerEncoderLayer":
      return new nn.TransformerEncoderLayer(a.dModel, a.nhead, a);
    case "Sequential":
      return new nn.Sequential(
        new nn.Conv2d(1, 3, 3),
        new nn.ReLU(),
        new nn.MaxPool2d(2),
        new nn.Flatten(),
        new nn.Linear(12, 5),
        new nn.Tanh(),
        new nn.Linear(5, 4),
        new nn.LogSoftmax(1),
      );
    case "ReLU":
      return new nn.ReLU();
    case "Tanh":
      return new nn.Tanh();
    case "Sigmoid":
      return new nn.Sigmoid();
    case "GELU": // the fixture's nn.GELU(approximate="tanh")
      return new nn.GELU({ approximate: "tanh" });
    case "Softmax":
      return new nn.Softmax(-1);
    case "LogSoftmax":
      return new nn.LogSoftmax(1);
  }
  throw new Error(`no module ${c.name}`);
}

/** The module's outputs, in the order the fixture lists them. */
function run(c: ModuleCase, module: AnyModule, inputs: Tensor[], masks: Record<string, Tensor>): Tensor[] {
  if (c.name === "LSTM") {
    const [output, [h, cell]] = module.forward(
      inputs[0],
      inputs.length === 3 ? [inputs[1], inputs[2]] : undefined,
    );
    return [output, h, cell];
  }
  if (c.name === "GRU") {
    const [output, h] = module.forward(inputs[0], inputs[1]);
    return [output, h];
  }
  if (c.name === "MultiheadAttention") return [module.forward(inputs[0], inputs[1], inputs[2], masks)];
  return [module.forward(inputs[0])];
}

const cases = fixture<{ cases: ModuleCase[] }>("modules.json").cases;

test("the fixtures cover every layer the issue names", () => {
  const names = new Set(cases.map((c) => c.name));
  for (
    const name of [
      "Linear",
      "Conv1d",
      "Conv2d",
      "BatchNorm1d",
      "BatchNorm2d",
      "LayerNorm",
      "Embedding",
      "LSTM",
      "GRU",
      "MultiheadAttention",
      "TransformerEncoderLayer",
      "Sequential",
      "ReLU",
      "GELU",
    ]
  ) assert.ok(names.has(name), name);
});

for (const [index, c] of cases.entries()) {
  test(`${c.name} #${index} (${c.train ? "train" : "eval"}) matches PyTorch forward and backward`, () => {
    using module = build(c);
    const state = stateOf(c.state);
    const masks = Object.fromEntries(Object.entries(c.masks ?? {}).map(([k, v]) => [k, tensorOf(v)]));
    const raw = c.inputs.map(tensorOf);
    try {
      module.loadStateDict(state);
      module.train(c.train);
      const inputs = raw.map((t) => (t.dtype === DType.F32 ? t.withRequiresGrad() : t));
      using _scope = new ActivationScope();
      const outputs = run(c, module, inputs, masks);
      assert.equal(outputs.length, c.outputs.length);
      outputs.forEach((o, i) => assertClose(o, expected(c.outputs[i]), 2e-5, `${c.name} output ${i}`));
      let loss: Tensor | null = null;
      outputs.forEach((o, i) => {
        const term = ops.sum(ops.mul(o, tensorOf(c.weights[i])));
        loss = loss === null ? term : ops.add(loss, term);
      });
      (loss as Tensor | null)!.backward();
      inputs.forEach((x, i) => {
        const want = c.inputGrads[i];
        if (want !== null) assertClose(x.grad!, expected(want), 1e-4, `${c.name} input ${i} gradient`);
      });
      const params = new Map(module.namedParameters());
      assert.deepEqual(
        [...params.keys()].sort(),
        Object.keys(c.paramGrads).sort(),
        "parameters with gradients",
      );
      for (const [name, want] of Object.entries(c.paramGrads)) {
        assertClose(params.get(name)!.grad!, expected(want), 1e-4, `${c.name} ${name} gradient`);
      }
      const after = module.stateDict();
      for (const [name, want] of Object.entries(c.stateAfter)) {
        if (want.dtype === "int64") {
          assert.equal(after.get(name)!.item(), BigInt(want.data[0] as number), name);
        } else if (!params.has(name)) {
          assertClose(after.get(name)!, expected(want), 1e-5, `${c.name} ${name} after`);
        }
      }
      for (const x of inputs) if (x.requiresGrad) x.grad = null;
    } finally {
      disposeAll(state);
      disposeAll(raw);
      disposeAll(Object.values(masks));
    }
  });
}

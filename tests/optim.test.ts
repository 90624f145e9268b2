// Optimizers against PyTorch's trajectories (tests/fixtures/nn/optim.json: the same gradients given at each
// step, the parameters after it), schedules against PyTorch's rates, clipping against clip_grad_norm_, the
// state dictionary round trip, and the native update kernel against the TypeScript reference, bitwise, on
// every ISA variant the host runs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GradMode, optim, referenceKernels, Tensor, TensorCompute } from "../mod.ts";
import { assertClose } from "./helpers/f64.ts";
import { expected, fixture, tensorOf, type TensorSpec } from "./helpers/nn_fixtures.ts";
import { optimConformanceRun } from "./helpers/optim_conformance.ts";
import { isaReports } from "./helpers/subprocess.ts";

interface Trajectory {
  name: "SGD" | "Adam" | "AdamW" | "RMSprop";
  options: Record<string, number | boolean>;
  initial: TensorSpec[];
  steps: { grads: TensorSpec[]; params: TensorSpec[] }[];
}

const data = fixture<{
  optimizers: Trajectory[];
  clip: { maxNorm: number; grads: TensorSpec[]; norm: number; clipped: TensorSpec[] };
}>("optim.json");

function optimizer(t: Trajectory, params: Tensor[]): optim.Optimizer {
  return new optim[t.name](params, t.options);
}

for (const [index, t] of data.optimizers.entries()) {
  for (const kernels of ["native", "reference"] as const) {
    test(`${t.name} #${index} ${JSON.stringify(t.options)} follows PyTorch's trajectory (${kernels} kernel)`, () => {
      const params = t.initial.map((s) => tensorOf(s).withRequiresGrad());
      using opt = optimizer(t, params);
      const run = () => {
        t.steps.forEach((step, k) => {
          params.forEach((p, i) => p.grad = tensorOf(step.grads[i]));
          opt.step();
          params.forEach((p, i) => assertClose(p, expected(step.params[i]), 2e-6, `step ${k} param ${i}`));
        });
      };
      if (kernels === "reference") TensorCompute.run({ kernels: referenceKernels }, run);
      else run();
      for (const p of params) {
        p.grad = null;
        p.dispose();
      }
    });
  }
}

test("an optimizer's state dictionary restores the trajectory in a new optimizer", () => {
  const t = data.optimizers.find((o) => o.name === "Adam" && o.options.amsgrad === true)!;
  const params = t.initial.map((s) => tensorOf(s).withRequiresGrad());
  const twins = t.initial.map((s) => tensorOf(s).withRequiresGrad());
  using first = optimizer(t, params);
  using second = optimizer(t, twins);
  const give = (ps: Tensor[], k: number) => ps.forEach((p, i) => p.grad = tensorOf(t.steps[k].grads[i]));
  for (let k = 0; k < 4; k++) {
    give(params, k);
    first.step();
  }
  GradMode.noGrad(() => twins.forEach((p, i) => p.copyFrom(params[i])));
  const state = first.stateDict();
  assert.deepEqual([...state.state.get(0)!.buffers.keys()], ["expAvg", "expAvgSq", "maxExpAvgSq"]);
  assert.equal(state.state.get(1)!.step, 4);
  assert.deepEqual(state.paramGroups[0].params, [0, 1]);
  second.loadStateDict(state);
  give(params, 4);
  give(twins, 4);
  first.step();
  second.step();
  params.forEach((p, i) => assert.deepEqual([...twins[i].toArray()], [...p.toArray()]));
  for (const p of [...params, ...twins]) {
    p.grad = null;
    p.dispose();
  }
});

test("optimizers refuse bad options and parameters with typed errors", () => {
  using w = Tensor.zeros([2]).withRequiresGrad();
  assert.throws(() => new optim.SGD([w], { lr: -1 }), RangeError);
  assert.throws(() => new optim.SGD([w], { nesterov: true }), /Nesterov/);
  assert.throws(() => new optim.Adam([w], { beta1: 1 }), /below 1/);
  using plain = Tensor.zeros([2]);
  assert.throws(() => new optim.Adam([plain]), /withRequiresGrad/);
  assert.throws(() => new optim.Adam([w, w]), /twice/);
});

test("zeroGrad releases the gradients, or zeroes them with setToNone: false", () => {
  using w = Tensor.from([1, 2]).withRequiresGrad();
  using opt = new optim.SGD([w], { lr: 0.1 });
  w.mul(w).sum().backward();
  opt.zeroGrad({ setToNone: false });
  assert.deepEqual([...w.grad!.toArray()], [0, 0]);
  opt.zeroGrad();
  assert.equal(w.grad, null);
  opt.step(); // a parameter without a gradient is skipped
  assert.deepEqual([...w.toArray()], [1, 2]);
});

test("clipGradNorm matches torch.nn.utils.clip_grad_norm_", () => {
  const { clip } = data;
  const params = clip.grads.map((g) => Tensor.zeros(g.shape).withRequiresGrad());
  params.forEach((p, i) => p.grad = tensorOf(clip.grads[i]));
  const norm = optim.clipGradNorm(params, clip.maxNorm);
  assert.ok(Math.abs(norm - clip.norm) <= 1e-5 * clip.norm, `${norm} vs ${clip.norm}`);
  params.forEach((p, i) => assertClose(p.grad!, expected(clip.clipped[i]), 1e-6, `clipped ${i}`));
  for (const p of params) {
    p.grad = null;
    p.dispose();
  }
});

interface Schedule {
  name: "StepLR" | "CosineAnnealingLR" | "LinearLR" | "OneCycleLR";
  options: Record<string, number | string>;
  optimizer: "SGD" | "Adam";
  lrs: number[];
  momenta: number[];
}

for (const [index, s] of fixture<{ schedules: Schedule[] }>("schedules.json").schedules.entries()) {
  test(`${s.name} #${index} gives PyTorch's rates${s.momenta.length > 0 ? " and momenta" : ""}`, () => {
    using w = Tensor.zeros([1]).withRequiresGrad();
    using opt = s.optimizer === "SGD"
      ? new optim.SGD([w], { lr: 0.5, momentum: 0.9 })
      : new optim.Adam([w], { lr: 0.5 });
    // deno-lint-ignore no-explicit-any
    const schedule = new (optim.lr[s.name] as any)(opt, s.options) as optim.lr.LRScheduler;
    const key = s.optimizer === "SGD" ? "momentum" : "beta1";
    s.lrs.forEach((want, k) => {
      if (k > 0) schedule.step();
      const got = schedule.getLastLr()[0];
      assert.ok(Math.abs(got - want) <= 1e-12 + 1e-9 * Math.abs(want), `step ${k}: ${got} vs ${want}`);
      if (s.momenta.length > 0) {
        const m = opt.paramGroups[0].options[key] as number;
        assert.ok(Math.abs(m - s.momenta[k]) <= 1e-12, `step ${k} momentum: ${m} vs ${s.momenta[k]}`);
      }
    });
    assert.equal(schedule.stateDict().lastEpoch, s.lrs.length - 1);
  });
}

test("the native optimizer kernel gives the reference's bits (this ISA, both modes, threads)", {
  timeout: 120_000,
}, () => {
  const report = optimConformanceRun(3, 100);
  assert.deepEqual(report.failures, []);
  assert.ok(report.cases === 100 && report.elements > 100_000, `${report.elements} elements`);
});

test("every ISA variant the host runs gives the same exact-mode optimizer bits", { timeout: 120_000 }, () => {
  const hashes = new Map<string, number>();
  for (const { isa, report } of isaReports(new URL("./children/optim_child.ts", import.meta.url))) {
    assert.deepEqual(report.failures, [], isa);
    hashes.set(isa, report.exactHash);
  }
  assert.ok(hashes.size >= 1);
  assert.equal(new Set(hashes.values()).size, 1, JSON.stringify(Object.fromEntries(hashes)));
});

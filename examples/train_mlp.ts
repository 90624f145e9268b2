// Trains a two-layer perceptron end to end on a synthetic two-spiral classification task: forward pass, cross-
// entropy loss, backward pass, and plain SGD, each step inside an ActivationScope so that steady-state steps
// obtain no new native memory. Run with `deno run -A examples/train_mlp.ts` or `bun examples/train_mlp.ts`
// (`npm run example` runs examples/digits_cnn.ts, the same loop with nn modules and an optimizer). Exits
// non-zero if the model does not learn.
import { ActivationScope, BufferPool, GradMode, kernelInfo, ops, Tensor } from "../mod.ts";

const SAMPLES_PER_CLASS = 200;
const HIDDEN = 64;
const STEPS = 600;
const LEARNING_RATE = 0.5;

/** Two interleaved spirals: points as [N, 2] F32 and labels as [N] I32. */
function spirals(seed: number): { points: Tensor; labels: Tensor } {
  using noise = Tensor.randn([2 * SAMPLES_PER_CLASS, 2], { seed });
  const jitter = noise.toArray() as Float32Array;
  const xy = new Float32Array(4 * SAMPLES_PER_CLASS);
  const labels = new Int32Array(2 * SAMPLES_PER_CLASS);
  for (let c = 0; c < 2; c++) {
    for (let i = 0; i < SAMPLES_PER_CLASS; i++) {
      const n = c * SAMPLES_PER_CLASS + i;
      const r = i / SAMPLES_PER_CLASS;
      const angle = 2 * Math.PI * r + c * Math.PI;
      xy[2 * n] = r * Math.cos(angle) + 0.03 * jitter[2 * n];
      xy[2 * n + 1] = r * Math.sin(angle) + 0.03 * jitter[2 * n + 1];
      labels[n] = c;
    }
  }
  return { points: Tensor.from(xy, [2 * SAMPLES_PER_CLASS, 2]), labels: Tensor.from(labels) };
}

/** A layer's weights, scaled like PyTorch's default uniform init, as gradient leaves. */
function layer(inputs: number, outputs: number, seed: number): { weight: Tensor; bias: Tensor } {
  const bound = 1 / Math.sqrt(inputs);
  using raw = Tensor.rand([outputs, inputs], { seed });
  const weight = GradMode.noGrad(() => {
    using centered = ops.sub(ops.mul(raw, 2 * bound), bound);
    return centered.clone();
  });
  return { weight: weight.withRequiresGrad(), bias: Tensor.zeros([outputs]).withRequiresGrad() };
}

const { points, labels } = spirals(1);
const first = layer(2, HIDDEN, 2);
const second = layer(HIDDEN, 2, 3);
const parameters = [first.weight, first.bias, second.weight, second.bias];

function forward(x: Tensor): Tensor {
  const hidden = ops.relu(ops.linear(x, first.weight, first.bias));
  return ops.linear(hidden, second.weight, second.bias);
}

function accuracy(): number {
  using _scope = new ActivationScope();
  const predicted = ops.argmax(GradMode.noGrad(() => forward(points)), 1).toArray() as BigInt64Array;
  const truth = labels.toArray() as Int32Array;
  let right = 0;
  for (let i = 0; i < truth.length; i++) if (Number(predicted[i]) === truth[i]) right++;
  return right / truth.length;
}

console.log(
  `zigtensor ${kernelInfo().isa} kernels on ${kernelInfo().runtime}; ${
    points.shape[0]
  } points, hidden ${HIDDEN}`,
);
let osBytesAfterWarmup = 0;
let firstLoss = NaN;
let lastLoss = NaN;
for (let step = 0; step < STEPS; step++) {
  using _scope = new ActivationScope();
  const loss = ops.crossEntropy(forward(points), labels);
  loss.backward();
  lastLoss = loss.item() as number;
  if (step === 0) firstLoss = lastLoss;
  GradMode.noGrad(() => {
    for (const p of parameters) {
      p.copyFrom(ops.sub(p, ops.mul(p.grad!, LEARNING_RATE)));
      p.grad!.fill(0);
    }
  });
  if (step === 5) osBytesAfterWarmup = BufferPool.default.stats().osBytes;
  if (step % 50 === 0 || step === STEPS - 1) {
    console.log(`step ${String(step).padStart(3)}  loss ${lastLoss.toFixed(4)}`);
  }
}

const finalAccuracy = accuracy();
const grownBytes = BufferPool.default.stats().osBytes - osBytesAfterWarmup;
console.log(
  `loss ${firstLoss.toFixed(4)} -> ${lastLoss.toFixed(4)}, accuracy ${(100 * finalAccuracy).toFixed(1)}%`,
);
console.log(`native memory obtained after warm-up: ${grownBytes} bytes`);
for (const t of [points, labels, ...parameters]) t.dispose();
if (!(lastLoss < 0.5 * firstLoss) || finalAccuracy < 0.9 || grownBytes !== 0) {
  console.error("the model did not learn as expected");
  (globalThis as { process?: { exit(code: number): never } }).process?.exit(1);
}

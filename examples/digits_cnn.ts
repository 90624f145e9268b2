// Trains a small CNN on the UCI handwritten digits (8×8 images, 10 classes; scikit-learn's copy, exported once
// by examples/data/export_digits.py; read by examples/digits.ts) with nn modules, AdamW, a cosine schedule and a shuffling DataLoader, then
// reports test accuracy, time and the native memory obtained after warm-up. The same model in PyTorch:
// examples/digits_cnn_torch.py. Run with `npm run example`, `deno run -A examples/digits_cnn.ts` or
// `bun examples/digits_cnn.ts`. Exits non-zero below 97 % test accuracy.
import process from "node:process";
import {
  ActivationScope,
  BufferPool,
  DataLoader,
  GradMode,
  kernelInfo,
  nn,
  ops,
  optim,
  Progress,
  type Tensor,
} from "../mod.ts";
import { digits, digitsModel, readMeta } from "./digits.ts";

const EPOCHS = 15;
const BATCH = 32;

const meta = readMeta();
const train = digits(meta, 0, meta.train);
const test = digits(meta, meta.train, meta.count);
nn.manualSeed(0);
using net = digitsModel();
using opt = new optim.AdamW(net.parameters(), { lr: 3e-3, weightDecay: 1e-4 });
using loader = new DataLoader([train.images, train.labels], { batchSize: BATCH, shuffle: true, seed: 0 });
const schedule = new optim.lr.CosineAnnealingLR(opt, { tMax: EPOCHS * loader.length });

console.log(
  `zigtensor ${kernelInfo().isa} kernels on ${kernelInfo().runtime}: ${meta.train} training and ${
    meta.count - meta.train
  } test digits, ${net.parameters().reduce((s, p) => s + p.size, 0)} parameters`,
);
const progress = new Progress(EPOCHS * loader.length, { label: "train", every: loader.length });
const start = performance.now();
let osBytesAfterWarmup = 0;
let step = 0;
let smoothed = NaN;
for (let epoch = 0; epoch < EPOCHS; epoch++) {
  net.train();
  for (const [images, labels] of loader) {
    using _scope = new ActivationScope();
    const loss = ops.crossEntropy(net.forward(images), labels);
    opt.zeroGrad();
    loss.backward();
    opt.step();
    schedule.step();
    const value = loss.item() as number;
    smoothed = Number.isNaN(smoothed) ? value : 0.9 * smoothed + 0.1 * value;
    progress.update(++step, { epoch: epoch + 1, loss: smoothed });
  }
  if (epoch === 0) osBytesAfterWarmup = BufferPool.default.stats().osBytes;
}
progress.done();
const seconds = (performance.now() - start) / 1000;
const grown = BufferPool.default.stats().osBytes - osBytesAfterWarmup;

/** The share of `labels` the model predicts, in evaluation mode. */
function accuracy(images: Tensor, labels: Int32Array): number {
  net.eval();
  using _scope = new ActivationScope();
  const predicted = GradMode.noGrad(() => ops.argmax(net.forward(images), 1)).toArray() as BigInt64Array;
  let right = 0;
  for (let i = 0; i < labels.length; i++) if (Number(predicted[i]) === labels[i]) right++;
  return right / labels.length;
}

const trainAccuracy = accuracy(train.images, train.labels);
const testAccuracy = accuracy(test.images, test.labels);
console.log(
  `train accuracy ${(100 * trainAccuracy).toFixed(2)} %, test accuracy ${
    (100 * testAccuracy).toFixed(2)
  } %, ` +
    `${seconds.toFixed(1)} s for ${EPOCHS} epochs (${(step / seconds).toFixed(0)} steps/s)`,
);
console.log(`native memory obtained by training after the first epoch: ${grown} bytes`);
train.images.dispose();
test.images.dispose();
if (testAccuracy < 0.97 || grown !== 0) {
  console.error("the model did not reach 97 % test accuracy in steady memory");
  process.exit(1);
}

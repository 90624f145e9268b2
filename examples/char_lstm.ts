// A character-level language model on six of Shakespeare's sonnets (public domain, examples/data/sonnets.txt):
// Embedding → LSTM → Linear, trained with Adam and gradient clipping on random windows of the text, the loss
// shown as it falls, then text sampled from the model one character at a time. Run with
// `deno run -A examples/char_lstm.ts` or `bun examples/char_lstm.ts`. Exits non-zero if the loss does not fall
// below half of its starting value.
import { readFileSync } from "node:fs";
import process from "node:process";
import { ActivationScope, GradMode, kernelInfo, nn, ops, optim, Progress, Tensor } from "../mod.ts";
import { Xorshift128 } from "../src/core/random.ts";

const STEPS = 300;
const BATCH = 32;
const WINDOW = 32;
const HIDDEN = 128;

const text = readFileSync(new URL("./data/sonnets.txt", import.meta.url), "utf8");
const alphabet = [...new Set(text)].sort();
const vocab = alphabet.length;
const codes = Int32Array.from(text, (ch) => alphabet.indexOf(ch));

/** Embedding → LSTM → Linear over batch-first character codes [N, T]; logits [N, T, vocab]. */
class CharModel extends nn.Module<[Tensor, [Tensor, Tensor]?], [Tensor, [Tensor, Tensor]]> {
  readonly embed = this.module("embed", new nn.Embedding(vocab, 32));
  readonly lstm = this.module("lstm", new nn.LSTM(32, HIDDEN, { batchFirst: true }));
  readonly head = this.module("head", new nn.Linear(HIDDEN, vocab));

  forward(x: Tensor, state?: [Tensor, Tensor]): [Tensor, [Tensor, Tensor]] {
    const [output, next] = this.lstm.forward(this.embed.forward(x), state);
    return [this.head.forward(output), next];
  }
}

nn.manualSeed(0);
using model = new CharModel();
using opt = new optim.Adam(model.parameters(), { lr: 5e-3 });
const schedule = new optim.lr.CosineAnnealingLR(opt, { tMax: STEPS, etaMin: 5e-4 });
const random = new Xorshift128(1);
// The batch tensors are filled in place every step: no allocation per batch.
using inputs = Tensor.zeros([BATCH, WINDOW], { dtype: "int32" });
using targets = Tensor.zeros([BATCH * WINDOW], { dtype: "int32" });

console.log(
  `zigtensor ${kernelInfo().isa} kernels on ${kernelInfo().runtime}: ${text.length} characters, ${vocab} symbols, ` +
    `${model.parameters().reduce((s, p) => s + p.size, 0)} parameters`,
);
const progress = new Progress(STEPS, { label: "train", every: 50 });
let first = NaN;
let smoothed = NaN;
for (let step = 1; step <= STEPS; step++) {
  const x = inputs.mutableData() as Int32Array;
  const y = targets.mutableData() as Int32Array;
  for (let b = 0; b < BATCH; b++) {
    const start = Math.floor(random.uniform() * (codes.length - WINDOW - 1));
    x.set(codes.subarray(start, start + WINDOW), b * WINDOW);
    y.set(codes.subarray(start + 1, start + WINDOW + 1), b * WINDOW);
  }
  using _scope = new ActivationScope();
  const [logits] = model.forward(inputs);
  const loss = ops.crossEntropy(logits.reshape([BATCH * WINDOW, vocab]), targets);
  opt.zeroGrad();
  loss.backward();
  optim.clipGradNorm(model.parameters(), 1);
  opt.step();
  schedule.step();
  const value = loss.item() as number;
  if (step === 1) first = value;
  smoothed = Number.isNaN(smoothed) ? value : 0.9 * smoothed + 0.1 * value;
  progress.update(step, { loss: smoothed });
}
progress.done();

/** `length` characters after `prompt`, each drawn from the softmax of the logits at temperature 0.7. */
function sample(prompt: string, length: number): string {
  model.eval();
  return GradMode.noGrad(() => {
    let out = prompt;
    let state: [Tensor, Tensor] | undefined;
    let next = Tensor.from(Int32Array.from(prompt, (ch) => alphabet.indexOf(ch)), [1, prompt.length]);
    for (let i = 0; i < length; i++) {
      using _scope = new ActivationScope();
      const [logits, newState] = model.forward(next, state);
      const last = logits.select(1, logits.shape[1] - 1).mul(1 / 0.7);
      const p = ops.softmax(last, -1).toArray() as Float32Array;
      let u = random.uniform();
      let code = 0;
      while (code < vocab - 1 && u >= p[code]) u -= p[code++];
      out += alphabet[code];
      next.dispose();
      next = Tensor.from(Int32Array.of(code), [1, 1]);
      const previous = state;
      state = [ActivationScope.keep(newState[0]), ActivationScope.keep(newState[1])];
      previous?.forEach((t) => t.dispose());
    }
    next.dispose();
    state?.forEach((t) => t.dispose());
    return out;
  });
}

console.log(`loss ${first.toFixed(3)} -> ${smoothed.toFixed(3)} (smoothed); a sample:\n`);
console.log(sample("Shall I ", 300));
if (!(smoothed < 0.5 * first)) {
  console.error("the loss did not fall below half its starting value");
  process.exit(1);
}

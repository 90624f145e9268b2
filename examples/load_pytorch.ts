// Loads the digits CNN that PyTorch trained and saved as safetensors (examples/data/digits_cnn.safetensors,
// written by examples/data/export_pytorch_digits.py with PyTorch's state_dict names) into the same nn model by
// name, runs the first 32 test digits and compares the logits with PyTorch's (digits_cnn_logits.json) to f32
// rounding. Run with `deno run -A examples/load_pytorch.ts` or `bun examples/load_pytorch.ts`.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { ActivationScope, GradMode, io } from "../mod.ts";
import { digits, digitsModel, readMeta } from "./digits.ts";

interface Expected {
  first: number;
  count: number;
  shape: number[];
  logits: number[];
}

const data = (name: string) => new URL(`./data/${name}`, import.meta.url);
const expected = JSON.parse(readFileSync(data("digits_cnn_logits.json"), "utf8")) as Expected;

using model = digitsModel();
{
  using weights = io.loadSafetensors(fileURLToPath(data("digits_cnn.safetensors")));
  model.loadStateDict(weights); // strict: every key present, every shape and dtype equal
  console.log(`loaded ${weights.size} tensors saved by PyTorch ${weights.metadata.torch}`);
}
model.eval();
using _scope = new ActivationScope();
using x = digits(readMeta(), expected.first, expected.first + expected.count).images;
const logits = GradMode.noGrad(() => model.forward(x)).toArray() as Float32Array;
let worst = 0;
let agree = 0;
for (let i = 0; i < expected.count; i++) {
  const row = (a: ArrayLike<number>) => Array.from({ length: 10 }, (_, j) => a[i * 10 + j]);
  const mine = row(logits);
  const theirs = row(expected.logits);
  mine.forEach((v, j) => worst = Math.max(worst, Math.abs(v - theirs[j]) / (1 + Math.abs(theirs[j]))));
  if (mine.indexOf(Math.max(...mine)) === theirs.indexOf(Math.max(...theirs))) agree++;
}
console.log(
  `${agree}/${expected.count} predictions agree with PyTorch; largest relative logit difference ${
    worst.toExponential(2)
  }`,
);
if (agree !== expected.count || worst > 1e-5) {
  console.error("the outputs differ from PyTorch's by more than f32 rounding");
  process.exit(1);
}

// Class-loss kernel conformance (zig/kernels/nll.zig against src/kernels/nll.ts): random nllLoss and
// crossEntropy calls through `ops` — ranks 1 to 4, class counts around the vector widths and past several
// of fast mode's 512-element log-sum-exp blocks (rows that drift upwards, so the running maximum rises from
// block to block, and logits offset by 1000), strided and flipped inputs, I32 and I64 targets with ignored ones, probability targets, every reduction, weights and label
// smoothing — forward and backward. The native exact mode must give the same bits for 1 to 4 threads and lie
// within one f32 ulp of the reference (bitwise for nllLoss, which computes no exponential); fast mode within
// `FAST_TOLERANCE`. The exact-mode results are hashed to compare ISAs.
import { ActivationScope, DType, ops, referenceKernels, Tensor, TensorCompute } from "../../mod.ts";
import type { KernelSet } from "../../mod.ts";
import { ulpDistance } from "./kernels_conformance.ts";
import { Rng } from "./operands.ts";

export interface NllReport {
  cases: number;
  elements: number;
  failures: string[];
  /** A hash of every native result in exact mode. */
  exactHash: number;
}

/** Fast mode against the reference: |fast − reference| ≤ this · (1 + |reference|). */
export const FAST_TOLERANCE = 1e-5;

const CLASSES = [1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100];

interface Case {
  readonly op: "nllLoss" | "crossEntropy";
  readonly shape: number[];
  readonly data: Float32Array;
  /** Permuted (and flipped) view of the input: the class axis is not innermost in memory. */
  readonly strided: boolean;
  readonly targets: number[] | null;
  readonly probabilities: Float32Array | null;
  readonly wide: boolean;
  readonly options: Record<string, unknown>;
  readonly weight: Float32Array | null;
}

/** Small: class counts around the vector widths; big: many rows of 300 to 500 classes; long: a few rows of
 * 1100 to 2600 classes, several log-sum-exp blocks. */
type Size = "small" | "big" | "long";

function randomCase(rng: Rng, kind: Size): Case {
  const op = rng.chance(0.35) ? "nllLoss" : "crossEntropy";
  const classes = kind === "long"
    ? 1100 + rng.int(1500)
    : kind === "big"
    ? 300 + rng.int(200)
    : rng.pick(CLASSES);
  const rank = 1 + rng.int(4);
  const shape = rank === 1 ? [classes] : [kind === "big" ? 40 + rng.int(30) : 1 + rng.int(5), classes];
  for (let d = 2; d < rank; d++) shape.push(1 + rng.int(3));
  const size = shape.reduce((a, b) => a * b, 1);
  // Long rows drift (along the flat index, so along a contiguous row's classes) and may sit far from 0.
  const drift = kind === "long" ? rng.pick([0, 30, -30]) : 0;
  const offset = kind === "long" ? rng.pick([0, 1000]) : 0;
  const data = Float32Array.from({ length: size }, (_, i) => rng.uniform(-4, 4) + drift * i / size + offset);
  const rows = size / classes;
  const probabilities = op === "crossEntropy" && rng.chance(0.3)
    ? Float32Array.from({ length: size }, () => rng.uniform(0, 1))
    : null;
  const ignoreIndex = rng.pick([-100, -1, 0, 1]);
  const targets = probabilities !== null
    ? null
    : Array.from({ length: rows }, () => (rng.chance(0.15) ? ignoreIndex : rng.int(classes)));
  const reduction = rng.pick(["mean", "sum", "none"]);
  const options: Record<string, unknown> = { reduction, ignoreIndex };
  if (op === "crossEntropy" && rng.chance(0.5)) options.labelSmoothing = rng.pick([0.1, 0.25, 1]);
  const weight = rng.chance(0.5) ? Float32Array.from({ length: classes }, () => rng.uniform(0.1, 3)) : null;
  return {
    op,
    shape,
    data,
    strided: rng.chance(0.5),
    targets,
    probabilities,
    wide: rng.chance(0.5),
    options,
    weight,
  };
}

/** The loss and every gradient of one case, as f32 values, under the settings in force. */
function run(c: Case): number[] {
  using _ = new ActivationScope();
  // The leaf is stored with its axes reversed, then viewed back by a permutation: a strided input.
  const reversed = [...c.shape].reverse();
  const leafOf = (values: Float32Array) => {
    if (!c.strided) return Tensor.from(values, c.shape).withRequiresGrad();
    const perm = [...c.shape.keys()].reverse();
    const stored = ops.contiguous(ops.permute(Tensor.from(values, c.shape), perm));
    return Tensor.from(stored.toArray() as Float32Array, reversed).withRequiresGrad();
  };
  const view = (leaf: Tensor) => {
    if (!c.strided) return leaf;
    const back = ops.permute(leaf, [...c.shape.keys()].reverse());
    return back;
  };
  const x = leafOf(c.data);
  const y = c.probabilities === null ? null : leafOf(c.probabilities);
  const axis = c.shape.length === 1 ? 0 : 1;
  const rows = c.shape.filter((_, d) => d !== axis);
  const target = y !== null
    ? view(y)
    : Tensor.from(c.targets!, rows, { dtype: c.wide ? DType.I64 : DType.I32 });
  const options = { ...c.options, ...(c.weight === null ? {} : { weight: Tensor.from(c.weight) }) };
  const loss = c.op === "nllLoss"
    ? ops.nllLoss(view(x), target, options)
    : ops.crossEntropy(view(x), target, options);
  const seed = loss.shape.reduce((a, b) => a * b, 1);
  loss.backward(
    c.options.reduction === "none"
      ? Tensor.from(Float32Array.from({ length: seed }, (_, i) => 1 - i / 7), loss.shape)
      : undefined,
  );
  const out = [...(loss.toArray() as Float32Array), ...(x.grad!.toArray() as Float32Array)];
  if (y !== null) out.push(...(y.grad!.toArray() as Float32Array));
  return out;
}

function under(kernels: KernelSet | undefined, mode: "exact" | "fast", threads: number, c: Case): number[] {
  return TensorCompute.run({ mode, threads, ...(kernels === undefined ? {} : { kernels }) }, () => run(c));
}

function same(a: number, b: number): boolean {
  return Object.is(a, b) || (a !== a && b !== b) || (a === 0 && b === 0);
}

export function nllConformanceRun(seed: number, count: number): NllReport {
  const report: NllReport = { cases: 0, elements: 0, failures: [], exactHash: 0x811c9dc5 };
  const rng = new Rng(seed);
  const bits = new Uint32Array(1);
  const f32 = new Float32Array(bits.buffer);
  const fail = (message: string) => {
    if (report.failures.length < 10) report.failures.push(message);
  };
  for (let i = 0; i < count; i++) {
    const c = randomCase(rng, i % 10 === 9 ? "big" : i % 10 === 4 ? "long" : "small");
    const label = `case ${i} (${c.op} ${JSON.stringify(c.shape)}, ${JSON.stringify(c.options)}${
      c.weight ? ", weight" : ""
    }${c.probabilities ? ", probabilities" : ""}${c.strided ? ", strided" : ""})`;
    const reference = under(referenceKernels, "exact", 1, c);
    const exact = under(undefined, "exact", 1, c);
    report.cases++;
    report.elements += exact.length;
    exact.forEach((v, j) => {
      const r = reference[j];
      const ulps = c.op === "nllLoss" ? 0 : 1;
      if (!same(v, r) && !(Number.isFinite(v) && Number.isFinite(r) && ulpDistance(v, r) <= ulps)) {
        fail(`${label} element ${j}: native ${v}, reference ${r}`);
      }
      f32[0] = v;
      report.exactHash = Math.imul(report.exactHash ^ (v !== v ? 0x7fc00000 : bits[0]), 0x01000193) >>> 0;
    });
    for (const threads of [2, 3, 4]) {
      const again = under(undefined, "exact", threads, c);
      const j = again.findIndex((v, k) => !same(v, exact[k]));
      if (j >= 0) fail(`${label} element ${j}: ${threads} threads give ${again[j]}, 1 thread ${exact[j]}`);
    }
    const fast = under(undefined, "fast", 1 + (i % 4), c);
    fast.forEach((v, j) => {
      const r = reference[j];
      if (!same(v, r) && !(Math.abs(v - r) <= FAST_TOLERANCE * (1 + Math.abs(r)))) {
        fail(`${label} element ${j} (fast): native ${v}, reference ${r}`);
      }
    });
  }
  return report;
}

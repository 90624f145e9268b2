// CTC kernel conformance: random batches (lengths 0 to T, repeated labels, unreachable targets, strided
// log-probabilities, every reduction, zeroInfinity) through ops.ctcLoss with the native kernels in both modes
// and with the reference kernels; losses and gradients must agree within one f32 ulp (the f64 exp/log of
// Zig and of Math differ by an f64 ulp at most), and the native results are hashed to compare ISAs.
import { ActivationScope, DType, ops, referenceKernels, Tensor, TensorCompute } from "../../mod.ts";
import { ulpDistance } from "./kernels_conformance.ts";

export interface CtcReport {
  cases: number;
  elements: number;
  failures: string[];
  /** A hash of every native result in exact mode. */
  exactHash: number;
}

/** A deterministic generator of numbers in [0, 1). */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const REDUCTIONS = ["none", "mean", "sum"] as const;

export function ctcConformanceRun(seed: number, count: number): CtcReport {
  const report: CtcReport = { cases: 0, elements: 0, failures: [], exactHash: 0x811c9dc5 };
  const next = random(seed);
  const int = (n: number) => Math.floor(next() * n);
  for (let i = 0; i < count; i++) {
    using _ = new ActivationScope();
    const steps = 1 + int(12);
    const batch = 1 + int(4);
    const classes = 2 + int(5);
    const blank = int(classes);
    const nonBlank = [...Array(classes).keys()].filter((c) => c !== blank);
    const lengths = Array.from({ length: batch }, () => int(Math.min(steps, 5) + 1));
    const inputs = Array.from({ length: batch }, () => int(steps + 1));
    // Few classes make repeats (which need a blank between them) and unreachable targets common.
    const labels = lengths.flatMap((l) => Array.from({ length: l }, () => nonBlank[int(nonBlank.length)]));
    const strided = next() < 0.5;
    const raw = Tensor.from(
      Array.from({ length: steps * batch * classes }, () => next() * 6 - 3),
      strided ? [batch, steps, classes] : [steps, batch, classes],
    );
    const logits = strided ? ops.transpose(raw, 0, 1) : raw;
    const reduction = REDUCTIONS[int(3)];
    const zeroInfinity = next() < 0.5;
    // The same input for every kernel set and mode (a fast-mode log-softmax would differ).
    const input = TensorCompute.run({ mode: "exact" }, () => ops.logSoftmax(logits));
    const run = () => {
      const lp = input.detach().withRequiresGrad();
      const targets = Tensor.from(labels, [labels.length], { dtype: DType.I32 });
      const loss = ops.ctcLoss(lp, targets, inputs, lengths, { blank, reduction, zeroInfinity });
      loss.backward(reduction === "none" ? Tensor.ones([batch]) : undefined);
      return [...(loss.toArray() as Float32Array), ...(lp.grad!.toArray() as Float32Array)];
    };
    const reference = TensorCompute.run({ kernels: referenceKernels }, run);
    for (const mode of ["exact", "fast"] as const) {
      const got = TensorCompute.run({ mode }, run);
      report.cases++;
      report.elements += got.length;
      got.forEach((v, j) => {
        const r = reference[j];
        const ok = Object.is(v, r) || (Number.isFinite(v) && Number.isFinite(r) && ulpDistance(v, r) <= 1);
        if (!ok && report.failures.length < 10) {
          report.failures.push(`case ${i} (${mode}, ${reduction}) element ${j}: native ${v}, reference ${r}`);
        }
        if (mode === "exact") {
          const bits = new Uint32Array(new Float32Array([v]).buffer)[0];
          report.exactHash = Math.imul(report.exactHash ^ bits, 0x01000193) >>> 0;
        }
      });
    }
  }
  return report;
}

// Recurrent cell kernel conformance: random steps of the four cell ops (LSTM and GRU, forward and backward;
// widths with a vector part and a scalar tail, strided rows, offsets, with and without the hidden bias and
// the saved activations) through the native kernel in both modes and the reference kernel. Every element of
// every buffer is compared, so a write outside an operand's rows shows. Exact mode is within `RNN_EXACT_BOUND`
// of the reference (the transcendentals differ by an f32 ulp; products spread that) and the same bits on 1
// and 4 threads; fast mode is within `RNN_FAST_BOUND`. The exact results are hashed to compare ISAs.
import { referenceKernels, Tensor } from "../../mod.ts";
import { nativeKernels } from "../../src/kernels/sets.ts";
import { RnnCellOp, type RnnCellParams } from "../../src/kernels/rnn.ts";
import type { ComputeSettings, KernelOperand } from "../../src/kernels/types.ts";
import { operandOf } from "../../src/tensor.ts";

/** Allowed |native − reference| / (1 + |reference|) in exact mode: 8 ulps of 1. */
export const RNN_EXACT_BOUND = 2 ** -20;
/** The same in fast mode (math.zig's f32 sigmoid and tanh are within 4 ulps each). */
export const RNN_FAST_BOUND = 2 ** -17;

export interface RnnReport {
  cases: number;
  elements: number;
  failures: string[];
  /** The largest error in exact and in fast mode, relative to 1 + |reference|. */
  worst: { exact: number; fast: number };
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

/** Each operand of an op: its width in units of H (0: 4H·… see below), its row stride ("A", "B", "C" or the
 * width) and whether it is one row (the bias). Widths: 4 = 4H, 3 = 3H, 1 = H. */
const LAYOUTS: Record<number, readonly (readonly [number, string])[]> = {
  [RnnCellOp.LstmForward]: [[4, "A"], [4, ""], [4, "bias"], [1, ""], [1, "B"], [1, ""], [4, ""], [4, "bias"]],
  [RnnCellOp.LstmBackward]: [[4, ""], [1, ""], [1, ""], [1, ""], [1, "A"], [1, ""], [1, ""], [4, "B"]],
  [RnnCellOp.GruForward]: [[3, "A"], [3, ""], [3, "bias"], [1, "C"], [1, "B"], [4, ""], [3, "bias"]],
  [RnnCellOp.GruBackward]: [[4, ""], [1, "C"], [1, ""], [1, ""], [1, "A"], [3, "B"], [3, "B"]],
};

export function rnnConformanceRun(seed: number, count: number): RnnReport {
  const report: RnnReport = {
    cases: 0,
    elements: 0,
    failures: [],
    worst: { exact: 0, fast: 0 },
    exactHash: 0x811c9dc5,
  };
  const next = random(seed);
  const int = (n: number) => Math.floor(next() * n);
  for (let c = 0; c < count; c++) {
    const op = c % 4;
    const batch = 1 + int(5);
    const hidden = 1 + int(19);
    const layout = LAYOUTS[op];
    const width = (k: number) => layout[k][0] * hidden;
    const stride: Record<string, number> = {};
    for (const [w, s] of layout) if (s.length === 1) stride[s] = Math.max(stride[s] ?? 0, w * hidden);
    for (const s of ["A", "B", "C"]) stride[s] = (stride[s] ?? hidden) + int(3);
    const params: RnnCellParams = {
      op,
      batch,
      hidden,
      hasBias: next() < 0.5,
      hasInputBias: next() < 0.5,
      save: next() < 0.5,
      strides: [stride.A, stride.B, stride.C],
    };
    const shapes = layout.map(([, s], k) => {
      const rows = s === "bias" ? 1 : batch;
      const rowStride = s.length === 1 ? stride[s] : width(k);
      const offset = int(4);
      return { offset, rowStride, size: offset + (rows - 1) * rowStride + width(k) + int(3) };
    });
    const initial = shapes.map((s) => Array.from({ length: s.size }, () => next() * 4 - 2));
    const run = (kernel: typeof nativeKernels.rnnCell, settings: ComputeSettings) => {
      const tensors = initial.map((v) => Tensor.from(v, [v.length]));
      const operands: KernelOperand[] = tensors.map((t, k) =>
        operandOf(t, "rnn conformance", [shapes[k].rowStride, 1], shapes[k].offset)
      );
      while (operands.length < 8) operands.push(operands[0]);
      kernel(params, operands, settings);
      const out = tensors.flatMap((t) => [...(t.toArray() as Float32Array)]);
      tensors.forEach((t) => t.dispose());
      return out;
    };
    const reference = run(referenceKernels.rnnCell, { mode: "exact", threads: 1 });
    const exact = run(nativeKernels.rnnCell, { mode: "exact", threads: 1 });
    const four = run(nativeKernels.rnnCell, { mode: "exact", threads: 4 });
    const fast = run(nativeKernels.rnnCell, { mode: "fast", threads: 2 });
    report.cases++;
    report.elements += reference.length;
    const name = `case ${c} (${JSON.stringify(params)})`;
    for (
      const [mode, got, bound] of [["exact", exact, RNN_EXACT_BOUND], ["fast", fast, RNN_FAST_BOUND]] as const
    ) {
      got.forEach((v, j) => {
        const r = reference[j];
        const error = Math.abs(v - r) / (1 + Math.abs(r));
        report.worst[mode] = Math.max(report.worst[mode], error);
        if (!(error <= bound) && report.failures.length < 10) {
          report.failures.push(`${name} ${mode} element ${j}: native ${v}, reference ${r}`);
        }
      });
    }
    exact.forEach((v, j) => {
      if (!Object.is(v, four[j]) && report.failures.length < 10) {
        report.failures.push(`${name} element ${j}: ${v} on 1 thread, ${four[j]} on 4`);
      }
      const bits = new Uint32Array(new Float32Array([v]).buffer)[0];
      report.exactHash = Math.imul(report.exactHash ^ bits, 0x01000193) >>> 0;
    });
  }
  return report;
}

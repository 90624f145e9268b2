// Recurrent cell kernel conformance: random steps of the four cell ops (LSTM and GRU, forward and backward;
// widths with a vector part and a scalar tail, strided rows, offsets, with and without the hidden bias and
// the saved activations) through the native kernel in both modes and the reference kernel. Every element of
// every buffer is compared, so a write outside an operand's rows shows. Exact mode is within `RNN_EXACT_BOUND`
// of the reference (the transcendentals differ by an f32 ulp; products spread that) and the same bits on 1
// and 4 threads; fast mode is within `RNN_FAST_BOUND`. The exact results are hashed to compare ISAs.
import { referenceKernels, Tensor } from "../../mod.ts";
import { nativeKernels } from "../../src/kernels/sets.ts";
import {
  composedRnnBackward,
  composedRnnForward,
  type RnnBackwardOperands,
  type RnnBackwardParams,
  RnnCellOp,
  type RnnCellParams,
  type RnnForwardOperands,
  type RnnForwardParams,
} from "../../src/kernels/rnn.ts";
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

/** Allowed |native − reference| / (1 + |reference|) of a whole layer (up to 4 steps), exact mode. */
export const RNN_LAYER_EXACT_BOUND = 2 ** -17;
/** The same in fast mode. */
export const RNN_LAYER_FAST_BOUND = 2 ** -14;

export interface RnnLayerReport extends RnnReport {
  /** Cases whose products were big enough to split the batch across threads. */
  threaded: number;
}

/**
 * An operand over a flat buffer: its offset, its strides, the elements it spans from the offset and the
 * scale of its random values (a weight's 1/√K keeps sums near 1, as trained weights do).
 */
type Layout = readonly [number, readonly number[], number, number?];

/** A zero-filled scratch buffer for the compositions over native kernels. */
function nativeScratch(elements: number): KernelOperand & Disposable {
  const t = Tensor.zeros([Math.max(elements, 1)]);
  const o = operandOf(t, "rnn conformance");
  return {
    get pointer() {
      return o.pointer;
    },
    get data() {
      return o.data;
    },
    offset: 0,
    strides: [1],
    [Symbol.dispose]: () => t.dispose(),
  };
}

const composedForward = composedRnnForward(nativeKernels.rnnCell, nativeKernels.packedMatMul, nativeScratch);
const composedBackward = composedRnnBackward(
  nativeKernels.rnnCell,
  nativeKernels.packedMatMul,
  nativeScratch,
);

/** One layer's operands (null: not given) and a kernel that runs over them in the given settings. */
type LayerKernel<O> = (params: never, operands: O, settings: ComputeSettings) => void;

/**
 * Runs one case through every kernel: the native one in exact mode on 1 and 4 threads and in fast mode,
 * the composition over native kernels in both modes, the reference; every element of every buffer is
 * compared (the native kernel gives the composition's bits, the same on 1 and 4 threads, near the
 * reference) and the exact results join the report's hash.
 */
function checkLayerCase<O>(
  report: RnnLayerReport,
  name: string,
  spec: Record<string, Layout | null>,
  fill: () => number,
  params: unknown,
  kernels: { native: LayerKernel<O>; composed: LayerKernel<O>; reference: LayerKernel<O> },
) {
  const fail = (message: string) => {
    if (report.failures.length < 10) report.failures.push(message);
  };
  const initial = Object.values(spec).map((s) =>
    s === null ? null : Array.from({ length: s[0] + s[2] + 2 }, () => fill() * (s[3] ?? 1))
  );
  const run = (kernel: LayerKernel<O>, settings: ComputeSettings) => {
    const tensors = initial.map((v) => v === null ? null : Tensor.from(v, [v.length]));
    const operands = Object.fromEntries(
      Object.entries(spec).map(([key, s], k) => [
        key,
        s === null ? null : operandOf(tensors[k]!, "rnn conformance", s[1], s[0]),
      ]),
    ) as O;
    kernel(params as never, operands, settings);
    const out = tensors.flatMap((t) => t === null ? [] : [...(t.toArray() as Float32Array)]);
    tensors.forEach((t) => t?.dispose());
    return out;
  };
  const exact = { mode: "exact", threads: 1 } as const;
  const fast = { mode: "fast", threads: 2 } as const;
  const results = {
    reference: run(kernels.reference, exact),
    exact: run(kernels.native, exact),
    four: run(kernels.native, { mode: "exact", threads: 4 }),
    composedExact: run(kernels.composed, exact),
    fast: run(kernels.native, fast),
    composedFast: run(kernels.composed, fast),
  };
  report.cases++;
  report.elements += results.reference.length;
  const same = (a: number[], b: number[], what: string) => {
    const j = a.findIndex((v, i) => !Object.is(v, b[i]));
    if (j >= 0) fail(`${name} element ${j}: ${a[j]} ${what} ${b[j]}`);
  };
  same(results.exact, results.four, "on 1 thread, on 4");
  same(results.exact, results.composedExact, "(exact) natively, composed");
  same(results.fast, results.composedFast, "(fast) natively, composed");
  for (
    const [mode, got, bound] of [
      ["exact", results.exact, RNN_LAYER_EXACT_BOUND],
      ["fast", results.fast, RNN_LAYER_FAST_BOUND],
    ] as const
  ) {
    got.forEach((v, j) => {
      const r = results.reference[j];
      const error = Math.abs(v - r) / (1 + Math.abs(r));
      report.worst[mode] = Math.max(report.worst[mode], error);
      if (!(error <= bound)) fail(`${name} ${mode} element ${j}: native ${v}, reference ${r}`);
    });
  }
  for (const v of results.exact) {
    const bits = new Uint32Array(new Float32Array([v]).buffer)[0];
    report.exactHash = Math.imul(report.exactHash ^ bits, 0x01000193) >>> 0;
  }
}

function emptyLayerReport(): RnnLayerReport {
  return {
    cases: 0,
    elements: 0,
    failures: [],
    worst: { exact: 0, fast: 0 },
    exactHash: 0x811c9dc5,
    threaded: 0,
  };
}

/**
 * Random layers through the forward and backward kernels (`checkLayerCase`): LSTM and GRU, x and the
 * weights in several layouts (batch- or time-major x, transposed or not weights), offsets, an empty input
 * (I = 0), with and without the biases, c0 and the saved activations, and a quarter of the layers big
 * enough to split the batch across threads.
 */
export function rnnLayerConformanceRun(seed: number, count: number): RnnLayerReport {
  const report = emptyLayerReport();
  const next = random(seed);
  const int = (n: number) => Math.floor(next() * n);
  const fill = () => next() * 2 - 1;
  for (let c = 0; c < count; c++) {
    const lstm = c % 2 === 0;
    const backward = c % 4 >= 2;
    const big = c % 16 >= 12;
    const n = big ? 9 : 1 + int(6);
    const steps = big ? (backward ? 4 : 2) : 1 + int(4);
    const input = big ? 900 : int(6) === 0 ? 0 : 1 + int(7);
    const hidden = big ? (backward ? 100 : 24) : 1 + int(20);
    const g = (lstm ? 4 : 3) * hidden;
    const macs = n * steps * g * (backward ? hidden : input + hidden);
    if (macs >= 2 ** 20) report.threaded++;
    const flat = (elements: number): Layout => [int(4), [1], elements];
    const rows = (width: number): Layout => [int(4), [width, 1], n * width];
    const weight = (k: number, m: number, depth: number): Layout => [
      int(4),
      next() < 0.5 ? [1, k] : [m, 1],
      k * m,
      1 / Math.sqrt(Math.max(depth, 1)),
    ];
    const states = (lstm ? 2 : 1) * n * steps * hidden;
    if (!backward) {
      const xStrides = [[steps * input, input, 1], [input, n * input, 1], [steps, 1, n * steps]][int(3)];
      const spec: Record<string, Layout | null> = {
        x: [int(4), xStrides, n * steps * input],
        weightIhT: weight(input, g, input),
        weightHhT: weight(hidden, g, hidden),
        h0: rows(hidden),
        c0: lstm ? rows(hidden) : null,
        out: flat(states),
        saved: next() < 0.5 ? flat(steps * n * 4 * hidden) : null,
        biasHh: next() < 0.5 ? flat(g) : null,
        biasIh: next() < 0.5 ? flat(g) : null,
      };
      const params: RnnForwardParams = {
        op: lstm ? RnnCellOp.LstmForward : RnnCellOp.GruForward,
        batch: n,
        steps,
        input,
        hidden,
      };
      checkLayerCase<RnnForwardOperands>(
        report,
        `case ${c} ${JSON.stringify({ params, spec })}`,
        spec,
        fill,
        params,
        {
          native: nativeKernels.rnnForward,
          composed: composedForward,
          reference: referenceKernels.rnnForward,
        },
      );
    } else {
      const spec: Record<string, Layout | null> = {
        weightHh: weight(g, hidden, g),
        saved: flat(steps * n * 4 * hidden),
        states: flat(states),
        initial: rows(hidden),
        dh: rows(hidden),
        carried: rows(hidden),
        grad: flat(states),
        gates: flat(n * steps * g),
        hiddenGates: lstm ? null : flat(n * steps * g),
      };
      const params: RnnBackwardParams = {
        op: lstm ? RnnCellOp.LstmBackward : RnnCellOp.GruBackward,
        batch: n,
        steps,
        hidden,
      };
      checkLayerCase<RnnBackwardOperands>(
        report,
        `case ${c} ${JSON.stringify({ params, spec })}`,
        spec,
        fill,
        params,
        {
          native: nativeKernels.rnnBackward,
          composed: composedBackward,
          reference: referenceKernels.rnnBackward,
        },
      );
    }
  }
  return report;
}

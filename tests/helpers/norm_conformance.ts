/**
 * Conformance of the native normalization kernels (`src/kernels/norm.ts`, `zig/kernels/norm.zig`) against
 * the reference ones: layer-norm rows (row counts across the gradient blocks of `NORM_BLOCK_ROWS` rows) and
 * batch-norm channels (N runs of S), widths around the vector widths, operands at random offsets, with and
 * without weight, bias and x̂, batch statistics written or given, both directions, several thread counts. Exact mode must give the reference's bits (`Object.is` on every element,
 * so NaN from the specials counts too); fast mode must stay within `LAYER_NORM_FAST_BOUND` and give the same
 * bits for every thread count.
 */
import { kernelInfo } from "../../src/native/kernel_info.ts";
import {
  layerNormParams,
  nativeNorm,
  nativeNormBackward,
  NORM_BLOCK_ROWS,
  NORM_FAST_BOUND,
  type NormParams,
  normWorkspace,
  referenceNorm,
  referenceNormBackward,
} from "../../src/kernels/norm.ts";
import type { ArithmeticMode, KernelOperand } from "../../src/kernels/types.ts";
import { EDGE_SIZES, type Fill, fillF32, OperandPool, Rng } from "./operands.ts";

/** What one conformance run found. */
export interface NormConformanceReport {
  isa: string;
  cases: number;
  /** The largest |fast − exact| / (1 + |exact|) seen. */
  worstFast: number;
  failures: string[];
}

/** One case's operands and options. */
interface NormCase {
  readonly params: NormParams;
  readonly mode: ArithmeticMode;
  readonly fill: Fill;
  readonly weight: boolean;
  readonly bias: boolean;
  readonly xhat: boolean;
  readonly dx: boolean;
  readonly dw: boolean;
  readonly db: boolean;
  /** Batch statistics: written (training), given (evaluation) or neither (layer norm). */
  readonly statistics: "written" | "given" | "none";
}

/**
 * A random case: layer norm with widths from the edge sizes or up to 300 and rows up to three gradient blocks,
 * or batch norm with N from 1 to 5, C from 1 to 6 and S from the edge sizes.
 */
export function randomNormCase(rng: Rng): NormCase {
  const eps = rng.pick([1e-5, 0, 0.5]);
  const batch = rng.chance(0.4);
  let params: NormParams;
  if (batch) {
    const [n, c, spatial] = [1 + rng.int(5), 1 + rng.int(6), rng.pick(EDGE_SIZES)];
    params = {
      rows: c,
      width: spatial,
      segments: n,
      segmentStride: c * spatial,
      rowStride: spatial,
      perRow: true,
      eps,
    };
  } else {
    const width = rng.chance(0.6) ? rng.pick(EDGE_SIZES) : 1 + rng.int(300);
    const rows = rng.chance(0.2) ? NORM_BLOCK_ROWS * (1 + rng.int(2)) + rng.int(3) - 1 : 1 + rng.int(9);
    params = layerNormParams(rows, width, eps);
  }
  const mode: ArithmeticMode = rng.chance(0.5) ? "exact" : "fast";
  const weight = rng.chance(0.6);
  return {
    statistics: batch ? rng.pick(["written", "given"] as const) : "none",
    params,
    mode,
    fill: mode === "exact" && rng.chance(0.3) ? "mixed" : "uniform",
    weight,
    bias: rng.chance(0.6),
    xhat: rng.chance(0.7),
    dx: rng.chance(0.8),
    dw: weight && rng.chance(0.8),
    db: rng.chance(0.6),
  };
}

/** Elements of x (and of every operand in its layout) and of a weight or bias. */
function extents(params: NormParams): { elements: number; parameter: number } {
  return {
    elements: params.rows * params.width * params.segments,
    parameter: params.perRow ? params.rows : params.width,
  };
}

/** Operands of the case at random offsets, filled from `rng`; the outputs hold garbage to overwrite. */
function operands(pool: OperandPool, rng: Rng, c: NormCase) {
  const { elements, parameter } = extents(c.params);
  const f32 = (count: number, fill: Fill) => {
    const offset = rng.int(5);
    const { pointer, data } = pool.storage("f32", offset + count);
    fillF32(rng, data as Float32Array, fill);
    return { pointer, data, offset, strides: [] } as KernelOperand;
  };
  const given = c.statistics === "given"
    ? { mean: f32(c.params.rows, c.fill), variance: f32(c.params.rows, "positive") }
    : null;
  return {
    x: f32(elements, c.fill),
    weight: c.weight ? f32(parameter, c.fill) : null,
    bias: c.bias ? f32(parameter, c.fill) : null,
    g: f32(elements, c.fill),
    given,
    f32,
  };
}

/** A fresh output block holding a copy of `like`'s garbage, so both runs start from the same values. */
function twin(pool: OperandPool, like: KernelOperand | null): KernelOperand | null {
  return like === null ? null : pool.twin(like);
}

function compare(
  failures: string[],
  label: string,
  expected: KernelOperand | null,
  actual: KernelOperand | null,
  exact: boolean,
  worst: { value: number },
): void {
  if (expected === null || actual === null) return;
  const e = expected.data as Float32Array;
  const a = actual.data as Float32Array;
  for (let i = 0; i < e.length; i++) {
    if (Object.is(e[i], a[i])) continue;
    const error = Math.abs(a[i] - e[i]) / (1 + Math.abs(e[i]));
    if (!exact && error <= NORM_FAST_BOUND) {
      worst.value = Math.max(worst.value, error);
      continue;
    }
    failures.push(`${label}: [${i}] ${a[i]} vs reference ${e[i]}`);
    return;
  }
}

const KEYS = ["y", "xhat", "rstd", "mean", "variance", "dx", "dw", "db"] as const;

/** Runs `count` random cases from `seed`, each over the thread counts `threads`. */
export function runNormConformance(
  count: number,
  seed: number,
  threads: readonly number[],
): NormConformanceReport {
  const rng = new Rng(seed);
  const failures: string[] = [];
  const worst = { value: 0 };
  let cases = 0;
  for (let n = 0; n < count; n++) {
    const c = randomNormCase(rng);
    const p = c.params;
    const { elements, parameter } = extents(p);
    const label = `${p.rows}×${p.segments}×${p.width} ${p.perRow ? "per row" : "per position"} ${c.mode} ` +
      `w${+c.weight} b${+c.bias} x̂${+c.xhat} ${c.statistics}`;
    const pool = new OperandPool();
    try {
      const { x, weight, bias, g, given, f32 } = operands(pool, rng, c);
      const written = c.statistics === "written";
      const outputs = () => ({
        y: f32(elements, "uniform"),
        xhat: c.xhat ? f32(elements, "uniform") : null,
        rstd: f32(p.rows, "uniform"),
        mean: written ? f32(p.rows, "uniform") : null,
        variance: written ? f32(p.rows, "uniform") : null,
        dx: c.dx ? f32(elements, "uniform") : null,
        dw: c.dw ? f32(parameter, "uniform") : null,
        db: c.db ? f32(parameter, "uniform") : null,
      });
      const expected = outputs();
      const settings = { mode: c.mode, threads: 1 };
      // The reference in exact mode is the meaning of both modes.
      const exactSettings = { mode: "exact" as const, threads: 1 };
      referenceNorm(p, expected, x, weight, bias, given, exactSettings);
      // The backward runs from the reference's saved x̂ and rstd (the forward's own x̂ when it wrote one).
      const saved = expected.xhat ?? expected.y;
      const work = () => {
        const { pointer, data } = pool.storage("i64", normWorkspace(p) + 2);
        return {
          pointer,
          data: new Float64Array(data.buffer, data.byteOffset, data.length),
          offset: 1,
          strides: [],
        };
      };
      const grads = (o: ReturnType<typeof outputs>) => ({
        dx: o.dx,
        dw: o.dw,
        db: o.db,
        work: o.dw === null && o.db === null ? null : work(),
      });
      const backWeight = c.dx ? weight : null;
      const centered = c.statistics !== "given";
      referenceNormBackward(p, grads(expected), g, saved, expected.rstd, backWeight, centered, exactSettings);
      let first: ReturnType<typeof outputs> | null = null;
      for (const t of threads) {
        cases++;
        const out = {
          y: twin(pool, expected.y)!,
          xhat: twin(pool, expected.xhat),
          rstd: twin(pool, expected.rstd)!,
          mean: twin(pool, expected.mean),
          variance: twin(pool, expected.variance),
          dx: twin(pool, expected.dx),
          dw: twin(pool, expected.dw),
          db: twin(pool, expected.db),
        };
        const at = { ...settings, threads: t };
        nativeNorm(p, out, x, weight, bias, given, at);
        nativeNormBackward(p, grads(out), g, saved, expected.rstd, backWeight, centered, at);
        const exact = c.mode === "exact";
        for (const key of KEYS) {
          compare(failures, `${label} ${t} threads ${key}`, expected[key], out[key], exact, worst);
          if (first !== null) {
            compare(failures, `${label} ${t} vs 1 thread ${key}`, first[key], out[key], true, worst);
          }
        }
        first ??= out;
      }
    } finally {
      pool.release();
    }
  }
  return { isa: kernelInfo().isa, cases, worstFast: worst.value, failures };
}

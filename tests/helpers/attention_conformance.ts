// Fused attention kernel conformance (zig/kernels/attention.zig against src/kernels/attention.ts), through
// `ops.attention` and its backward: random batch shapes (broadcast, grouped heads), L and S around the key
// block of 64, E and Ev around the vector widths, causal, Bool and F32 masks (broadcast), permuted q (rows
// strided), 1 to 4 threads. Exact mode must give the reference's bits (forward and every gradient) for every
// thread count; fast mode must lie within ATTENTION_FAST_BOUND·(1 + the largest |reference| of that output)
// and give the same bits for every thread count.
import { ActivationScope, DType, ops, referenceKernels, Tensor, TensorCompute } from "../../mod.ts";
import type { ArithmeticMode, KernelSet } from "../../mod.ts";
import { ATTENTION_FAST_BOUND } from "../../src/kernels/attention.ts";
import { kernelInfo } from "../../src/native/kernel_info.ts";
import { Rng } from "./operands.ts";

export interface AttentionReport {
  isa: string;
  cases: number;
  /** The largest |fast − exact| / (1 + max |exact|) seen. */
  worstFast: number;
  failures: string[];
}

interface Case {
  readonly q: number[];
  readonly k: number[];
  readonly v: number[];
  readonly permuted: boolean;
  readonly options: { causal: boolean; enableGqa: boolean; scale?: number };
  readonly mask: { shape: number[]; bool: boolean } | null;
  readonly label: string;
}

const ROWS = [1, 2, 5, 7, 16, 63, 64, 65, 100, 129];
const WIDTHS = [1, 3, 4, 8, 15, 16, 17, 24, 33, 64];

function randomCase(rng: Rng): Case {
  const [l, s] = [rng.pick(ROWS), rng.pick(ROWS)];
  const [e, ev] = [rng.pick(WIDTHS), rng.pick(WIDTHS)];
  const gqa = rng.chance(0.25);
  const kvHeads = 1 + rng.int(2);
  const heads = gqa ? kvHeads * (1 + rng.int(3)) : 1 + rng.int(3);
  const lead = rng.chance(0.5) ? [1 + rng.int(2)] : [];
  // Batch broadcasting (k and v without the leading axis) unless grouped.
  const kvLead = !gqa && rng.chance(0.3) ? [] : lead;
  const q = [...lead, heads, l, e];
  const k = [...kvLead, gqa ? kvHeads : heads, s, e];
  const v = [...kvLead, gqa ? kvHeads : heads, s, ev];
  let mask: Case["mask"] = null;
  if (rng.chance(0.45)) {
    const bool = rng.chance(0.5);
    const full = [...lead, heads, l, s];
    mask = {
      shape: full.map((x, i) => (i < full.length - 2 && rng.chance(0.5)) || rng.chance(0.2) ? 1 : x),
      bool,
    };
  }
  const options = { causal: rng.chance(0.4), enableGqa: gqa, ...(rng.chance(0.2) ? { scale: 0.3 } : {}) };
  const permuted = rng.chance(0.3);
  const label = `q${q} k${k} v${v} ${JSON.stringify(options)} mask ${
    mask ? `${mask.bool ? "bool" : "f32"} ${mask.shape}` : "none"
  }${permuted ? " permuted q" : ""}`;
  return { q, k, v, permuted, options, mask, label };
}

/** Runs the case: the output and the gradients of q, k and v (Σ y·w backward). */
function runCase(
  c: Case,
  seed: number,
  mode: ArithmeticMode,
  threads: number,
  kernels?: KernelSet,
): Float32Array[] {
  return TensorCompute.run({ mode, threads, ...(kernels ? { kernels } : {}) }, () => {
    using _ = new ActivationScope();
    // Permuted: q is a transposed view of [..., L, H, E] (rows H·E apart); the gradient is the leaf's.
    const leafShape = c.permuted ? [...c.q.slice(0, -3), c.q.at(-2)!, c.q.at(-3)!, c.q.at(-1)!] : c.q;
    const leaf = Tensor.randn(leafShape, { seed }).withRequiresGrad();
    const q = c.permuted ? ops.transpose(leaf, -2, -3) : leaf;
    const k = Tensor.randn(c.k, { seed: seed + 1 }).withRequiresGrad();
    const v = Tensor.randn(c.v, { seed: seed + 2 }).withRequiresGrad();
    let mask: Tensor | undefined;
    if (c.mask !== null) {
      const n = c.mask.shape.reduce((a, b) => a * b, 1);
      const r = new Rng(seed + 3);
      mask = c.mask.bool
        ? Tensor.from(Array.from({ length: n }, () => r.chance(0.8)), c.mask.shape, { dtype: DType.Bool })
        : Tensor.from(
          Array.from({ length: n }, () => (r.chance(0.1) ? -Infinity : r.int(5) - 2)),
          c.mask.shape,
        );
    }
    const y = ops.attention(q, k, v, { ...c.options, ...(mask ? { mask } : {}) });
    const w = Tensor.randn(y.shape, { seed: seed + 4 });
    ops.sum(ops.mul(y, w)).backward();
    return [y, leaf.grad!, k.grad!, v.grad!].map((t) => Float32Array.from(t.toArray() as Float32Array));
  });
}

const NAMES = ["out", "dq", "dk", "dv"];

/** Runs `count` random cases from `seed`, each over the thread counts `threads`. */
export function runAttentionConformance(
  count: number,
  seed: number,
  threads: readonly number[],
): AttentionReport {
  const rng = new Rng(seed);
  const failures: string[] = [];
  let worst = 0;
  let cases = 0;
  for (let n = 0; n < count; n++) {
    const c = randomCase(rng);
    const s = 100 + n * 10;
    const reference = runCase(c, s, "exact", 1, referenceKernels);
    for (const mode of ["exact", "fast"] as const) {
      let first: Float32Array[] | null = null;
      for (const t of threads) {
        cases++;
        const got = runCase(c, s, mode, t);
        got.forEach((values, o) => {
          const expected = reference[o];
          let scale = 0;
          for (const x of expected) if (Number.isFinite(x)) scale = Math.max(scale, Math.abs(x));
          for (let i = 0; i < values.length; i++) {
            const [a, b] = [values[i], expected[i]];
            if (first !== null && !Object.is(a, first[o][i])) {
              failures.push(
                `${c.label} ${mode} ${t} threads ${NAMES[o]}[${i}]: ${a} vs ${first[o][i]} on 1 thread`,
              );
              return;
            }
            if (Object.is(a, b)) continue;
            const error = Math.abs(a - b) / (1 + scale);
            if (mode === "fast" && error <= ATTENTION_FAST_BOUND) {
              worst = Math.max(worst, error);
              continue;
            }
            failures.push(`${c.label} ${mode} ${t} threads ${NAMES[o]}[${i}]: ${a} vs reference ${b}`);
            return;
          }
        });
        first ??= got;
      }
    }
  }
  return { isa: kernelInfo().isa, cases, worstFast: worst, failures };
}

// Conformance of every op in the op registry (tests/helpers/op_registry.ts), walked case by case: the op's
// forward value computed by the native kernels in exact mode with 1, 2, 3 and 4 threads (bit for bit the
// same), against the reference kernel set (bitwise, or within the case's `exactUlps`), and in fast mode within
// the case's `fastTolerance`. Inputs are each case's shapes, as strided views where the case says `strided`.
// tests/children/op_conformance_child.ts runs it under one ISA; tests/op_conformance.test.ts under every
// variant the CPU runs, comparing the exact-mode hashes.
import {
  ActivationScope,
  GradMode,
  nativeKernels,
  referenceKernels,
  Tensor,
  TensorCompute,
} from "../../mod.ts";
import type { ArithmeticMode, KernelSet } from "../../mod.ts";
import { Rng } from "./operands.ts";
import { type GradCase, stridedLeafShape, stridedLeafView } from "./f64.ts";
import { gradCases } from "./op_registry.ts";
import { ulpDistance } from "./kernels_conformance.ts";

/** The thread counts every case runs with. */
export const THREAD_COUNTS: readonly number[] = [1, 2, 3, 4];

/** What one run of the registry found. */
export interface OpConformanceReport {
  /** Cases run (each under every thread count and both modes). */
  readonly cases: number;
  /** Output elements compared per setting. */
  readonly elements: number;
  /** One line per disagreement, naming the case, the setting and the element. */
  readonly failures: string[];
  /** FNV-1a over the exact-mode output bits of every case, to compare across ISAs. */
  readonly exactHash: number;
}

function inputs(c: GradCase, rng: Rng): Float32Array[] {
  return c.shapes.map((shape) => {
    const n = stridedLeafShape(shape, c.strided ?? false).reduce((a, b) => a * b, 1);
    return Float32Array.from({ length: n }, () => (c.positive ? rng.uniform(0.5, 2.5) : rng.uniform(-2, 2)));
  });
}

/** The case's forward output (as f32 values) under `settings`, without recording. */
function forward(
  c: GradCase,
  values: readonly Float32Array[],
  settings: { mode: ArithmeticMode; threads: number; kernels: KernelSet },
): Float32Array {
  return TensorCompute.run(settings, () =>
    GradMode.noGrad(() => {
      using _scope = new ActivationScope();
      const leaves = values.map((v, i) => Tensor.from(v, stridedLeafShape(c.shapes[i], c.strided ?? false)));
      const out = c.f32(c.strided ? leaves.map(stridedLeafView) : leaves);
      return Float32Array.from(out.toArray() as Float32Array);
    }));
}

/** Runs every case of the registry (seeded), under the ISA the library selected. */
export function opConformanceRun(seed: number): OpConformanceReport {
  const rng = new Rng(seed);
  const failures: string[] = [];
  const bits = new Uint32Array(1);
  const f32 = new Float32Array(bits.buffer);
  let hash = 0x811c9dc5;
  let cases = 0;
  let elements = 0;
  for (const [op, list] of Object.entries(gradCases) as [string, GradCase[]][]) {
    for (const c of list) {
      const values = inputs(c, rng);
      let forwardOnly: Float32Array;
      try {
        forwardOnly = forward(c, values, { mode: "exact", threads: 1, kernels: referenceKernels });
      } catch (e) {
        // An op the table marks "missing" still computes forwards; any other error is a failure.
        failures.push(`${op} / ${c.name}: the reference run threw ${String(e)}`);
        continue;
      }
      cases++;
      elements += forwardOnly.length;
      const reference = forwardOnly;
      const allowed = c.exactUlps ?? 0;
      const tolerance = c.fastTolerance ?? 1e-4;
      let first: Float32Array | null = null;
      for (const threads of THREAD_COUNTS) {
        const exact = forward(c, values, { mode: "exact", threads, kernels: nativeKernels });
        if (first === null) {
          first = exact;
          for (const v of exact) {
            f32[0] = v;
            hash = Math.imul(hash ^ bits[0], 0x01000193) >>> 0;
          }
        }
        for (let i = 0; i < reference.length; i++) {
          if (!Object.is(exact[i], first[i])) {
            failures.push(
              `${op} / ${c.name}: exact, ${threads} threads, [${i}] ${exact[i]} vs 1 thread ${first[i]}`,
            );
            break;
          }
          const same = Object.is(exact[i], reference[i]) ||
            (Number.isFinite(exact[i]) && ulpDistance(exact[i], reference[i]) <= allowed);
          if (!same) {
            failures.push(
              `${op} / ${c.name}: exact, ${threads} threads, [${i}] ${exact[i]} vs reference ${reference[i]}`,
            );
            break;
          }
        }
        const fast = forward(c, values, { mode: "fast", threads, kernels: nativeKernels });
        for (let i = 0; i < reference.length; i++) {
          const r = reference[i];
          const ok = Object.is(fast[i], r) || Math.abs(fast[i] - r) <= tolerance * (1 + Math.abs(r));
          if (!ok) {
            failures.push(`${op} / ${c.name}: fast, ${threads} threads, [${i}] ${fast[i]} vs reference ${r}`);
            break;
          }
        }
      }
    }
  }
  return { cases, elements, failures, exactHash: hash };
}

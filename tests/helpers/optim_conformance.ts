// Conformance of the native optimizer kernel to the TypeScript reference: random algorithms, flags,
// coefficients, sizes (around vector widths and the threading threshold) and offsets, both modes, several
// thread counts; every output element (parameter and state) must have the reference's bits.
import { nativeOptimizerStep, OptimAlgorithm, referenceOptimizerStep } from "../../src/kernels/optim.ts";
import { Tensor } from "../../mod.ts";
import type { KernelOperand } from "../../src/kernels/types.ts";
import { Rng } from "./operands.ts";
import { operandOf } from "../../src/tensor.ts";

export interface OptimReport {
  cases: number;
  elements: number;
  failures: string[];
  /** A hash of every native result in exact mode. */
  exactHash: number;
}

const SIZES = [1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 1000, 70_001];

function operand(t: Tensor, offset: number): KernelOperand {
  return operandOf(t, "optimConformance", t.strides, offset);
}

export function optimConformanceRun(seed: number, count: number): OptimReport {
  const rng = new Rng(seed);
  const report: OptimReport = { cases: 0, elements: 0, failures: [], exactHash: 0x811c9dc5 };
  const bits = new Uint32Array(1);
  const f = new Float32Array(bits.buffer);
  for (let c = 0; c < count; c++) {
    const algorithm = rng.pick([OptimAlgorithm.SGD, OptimAlgorithm.Adam, OptimAlgorithm.RMSprop]);
    const flags = rng.int(16);
    const coefficients = Array.from({ length: 8 }, () => rng.next() * (rng.next() < 0.2 ? 1e-3 : 1.5));
    const n = rng.pick(SIZES);
    const offset = rng.int(5);
    const mode = rng.pick(["fast", "exact"] as const);
    const threads = rng.pick([1, 2, 4]);
    // Twin copies of param, grad and three state buffers (the second moments start non-negative).
    const make = (nonNegative: boolean) => {
      const values = Float32Array.from(
        { length: n + offset },
        () => (nonNegative ? rng.next() : rng.next() * 4 - 2) * (rng.next() < 0.05 ? 0 : 1),
      );
      return [Tensor.from(values), Tensor.from(values)];
    };
    const tensors = [make(false), make(false), make(true), make(true), make(false)];
    const step = { algorithm, flags, coefficients };
    const pick = (k: 0 | 1) => tensors.map((pair) => operand(pair[k], offset));
    const [rp, rg, ...rs] = pick(0);
    const [np, ng, ...ns] = pick(1);
    referenceOptimizerStep(step, n, rp, rg, rs, { mode, threads: 1 });
    nativeOptimizerStep(step, n, np, ng, ns, { mode, threads });
    report.cases++;
    report.elements += n;
    for (const [k, [ref, nat]] of tensors.entries()) {
      const r = ref.toArray() as Float32Array;
      const a = nat.toArray() as Float32Array;
      for (let i = 0; i < r.length; i++) {
        const same = Object.is(r[i], a[i]) || (r[i] !== r[i] && a[i] !== a[i]);
        if (!same && report.failures.length < 10) {
          report.failures.push(
            `case ${c} (alg ${algorithm}, flags ${flags}, n ${n}) operand ${k}[${i}]: ${r[i]} vs ${a[i]}`,
          );
        }
        if (mode === "exact") {
          f[0] = a[i];
          report.exactHash = Math.imul(report.exactHash ^ bits[0], 0x01000193) >>> 0;
        }
      }
      ref.dispose();
      nat.dispose();
    }
  }
  return report;
}

/**
 * Every op of the op registry (`tests/helpers/op_registry.ts`) at its bench size: the op through `ops`
 * (native kernels, exact mode, one thread, output freed by a scope) beside a plain TypeScript loop, the case's
 * own f64 reference function (`tests/helpers/f64.ts`) on the same inputs. An op added to the registry is
 * benchmarked without an edit here; a case's `bench` field sets its shapes (see `benchShapes`).
 *
 *   deno bench -A bench/ops_registry_bench.ts    Deno: one group per op, the TypeScript loop as the baseline
 *   bun bench/ops_registry_bench.ts              Bun: the same cases timed in a loop, ratios in a table
 *
 * @module
 */
import { ActivationScope, GradMode, Tensor, TensorCompute } from "../mod.ts";
import { type OpName, OPS } from "../src/core/op_table.ts";
import { f64, type GradCase, stridedLeafShape, stridedLeafView } from "../tests/helpers/f64.ts";
import { gradCases } from "../tests/helpers/op_registry.ts";
import { Rng } from "../tests/helpers/operands.ts";
import { type BenchCase, runBenchmarks } from "./harness.ts";

/** Elements a one-kernel element-wise op is benchmarked at, by default. */
const ELEMENTWISE_SIZE = 65536;

/**
 * The input shapes `c` of `op` is benchmarked at: its `bench` field; else, for a one-kernel element-wise op,
 * its shapes with a leading axis that makes at least 65536 elements (added to the shapes of the highest rank,
 * so broadcasting still holds); else its own shapes.
 */
export function benchShapes(op: OpName, c: GradCase): (readonly number[])[] {
  if (c.bench !== undefined) return [...c.bench];
  const family = OPS[op].kernel?.family;
  if (family !== "binary" && family !== "unary") return [...c.shapes];
  const rank = Math.max(...c.shapes.map((s) => s.length));
  const size = Math.max(...c.shapes.map((s) => s.reduce((a, b) => a * b, 1)));
  const lead = Math.ceil(ELEMENTWISE_SIZE / size);
  return c.shapes.map((s) => (s.length === rank ? [lead, ...s] : s));
}

const rng = new Rng(7);
let sink = 0;
const cases: BenchCase[] = [];
for (const [op, list] of Object.entries(gradCases) as [OpName, GradCase[]][]) {
  const c = list[0];
  const shapes = benchShapes(op, c);
  const strided = c.strided ?? false;
  const values = shapes.map((s) => {
    const n = stridedLeafShape(s, strided).reduce((a, b) => a * b, 1);
    return Float32Array.from({ length: n }, () => (c.positive ? rng.uniform(0.5, 2.5) : rng.uniform(-2, 2)));
  });
  // The leaves live for the whole run; the reference reads the same values as contiguous f64 arrays.
  const leaves = values.map((v, i) => Tensor.from(v, stridedLeafShape(shapes[i], strided)));
  const reference = GradMode.noGrad(() =>
    leaves.map((l) => {
      using view = strided ? stridedLeafView(l).contiguous() : l.clone();
      return f64(view.shape, view.toArray() as Float32Array);
    })
  );
  const group = `${op}: ${c.name}, ${shapes.map((s) => `[${s.join("×")}]`).join(" ")}`;
  cases.push({
    group,
    name: "TypeScript loop (the case's f64 reference)",
    baseline: true,
    fn: () => {
      sink += c.f64(reference).data[0];
    },
  });
  cases.push({
    group,
    name: `ops.${op} (native, exact, 1 thread)`,
    fn: () =>
      TensorCompute.run({ mode: "exact", threads: 1 }, () =>
        GradMode.noGrad(() => {
          using _scope = new ActivationScope();
          sink += c.f32(strided ? leaves.map(stridedLeafView) : leaves).size;
        })),
  });
}

runBenchmarks(cases, { note: () => `(sink ${sink})` });

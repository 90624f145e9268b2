// PyTorch as an outside oracle: every case in fixtures/torch/*.json (written by fixtures/make_fixtures.py from
// PyTorch in float64; this test never runs Python) is evaluated here with the native kernels in exact and fast
// mode and with the reference kernels, and its outputs and the gradients of d(Σ output·G)/d(input) are compared
// with PyTorch's. To add an op, add one case to a module of fixtures/cases/ and rerun make_fixtures.py; nothing here changes.
//
// Tolerance. A float32 result can at best be the f64 result rounded once: |error| ≤ u·|y| with u = 2⁻²⁴. An op
// computes in float32 through several roundings, each of an intermediate value whose size is bounded by the
// size of the output for the ops here (sums of products and their normalised forms), so an output y passes when
//     |actual − y| ≤ ulps·u·(max|y| + |y|)
// element by element: ulps roundings at the output's scale (max|y| over that output) plus ulps roundings of the
// element itself. ulps is 2 by default: one rounding of the result and one of an intermediate (the fast
// kernels' exp/log/tanh/erf included); 4 for convolution, attention, batch norm and CTC (sums of 12 to 27
// products, a softmax feeding a second product, sums of exponentials over alignments), 8 for layer norm and the
// recurrent cells (mean, variance and a reciprocal square root; 3 steps of 4 gates). Measured on x86-64 (AVX2),
// the largest |error| / (u·(max|y| + |y|)) over all variants was 1.1 for single ops, 1.8 for attention, 3.8 for
// the GRU's and 4.4 for layer norm's gradients, so each bound has a margin of about 2. Each case's ulps is in
// its entry; gradients are checked the same way against their own scale.
// Integer and Bool outputs must match exactly.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";
import {
  ActivationScope,
  assertClose,
  GradMode,
  ops,
  referenceKernels,
  Tensor,
  TensorCompute,
} from "../mod.ts";
import { dtypeInfo } from "../src/core/dtype.ts";

/** A tensor stored in the fixture: dtype name, shape, row-major data (non-finite floats as strings). */
interface Stored {
  readonly dtype: "F32" | "F64" | "I8" | "I16" | "I32" | "I64" | "U8" | "U16" | "U32" | "U64" | "Bool";
  readonly shape: number[];
  readonly data: (number | string | boolean)[];
  readonly requiresGrad?: boolean;
}

/** One case of a fixtures/torch/*.json file. */
interface Case {
  readonly name: string;
  readonly call: unknown;
  readonly ulps: number;
  readonly inputs: Record<string, Stored>;
  readonly outputs: Record<string, Stored>;
  readonly cotangents?: Record<string, Stored>;
  readonly grads?: Record<string, Stored>;
}

/** One fixtures/torch/*.json file: the cases of one module of fixtures/cases/. */
interface FixtureFile {
  readonly torch: string;
  readonly cases: Case[];
  readonly reprs: { call: unknown; repr: string }[];
}

const FIXTURES = new URL("./fixtures/torch/", import.meta.url);
const files = readdirSync(FIXTURES).filter((f) => f.endsWith(".json")).sort().map((f) =>
  JSON.parse(readFileSync(new URL(f, FIXTURES), "utf8")) as FixtureFile
);
const fixture = {
  torch: [...new Set(files.map((f) => f.torch))].join(", "),
  cases: files.flatMap((f) => f.cases),
  reprs: files.flatMap((f) => f.reprs),
};

const U = 2 ** -24;

function numbers(s: Stored): number[] {
  return s.data.map((v) => typeof v === "string" ? Number(v.replace("inf", "Infinity")) : Number(v));
}

function toTensor(s: Stored): Tensor {
  const dtype = s.dtype === "F64" ? "float32" : s.dtype;
  if (s.dtype === "I64" || s.dtype === "U64") {
    return Tensor.from(s.data.map((v) => BigInt(v as number)), s.shape, { dtype });
  }
  if (s.dtype === "Bool") return Tensor.from(s.data as boolean[], s.shape, { dtype });
  return Tensor.from(numbers(s), s.shape, { dtype });
}

/**
 * Evaluates a fixture expression: `{ $tensor }` is an input, `{ $call, args }` calls `ops[$call]`, or a creator
 * when `$call` is `Tensor.from`, `Tensor.arange`, ...
 */
function evaluate(expr: unknown, inputs: ReadonlyMap<string, Tensor>): unknown {
  if (Array.isArray(expr)) return expr.map((e) => evaluate(e, inputs));
  if (expr === null || typeof expr !== "object") return expr;
  const node = expr as Record<string, unknown>;
  if (typeof node.$tensor === "string") {
    const t = inputs.get(node.$tensor);
    assert.ok(t !== undefined, `unknown input ${node.$tensor}`);
    return t;
  }
  if (typeof node.$call === "string") {
    const creator = node.$call.startsWith("Tensor.");
    const owner = (creator ? Tensor : ops) as unknown as Record<string, (...args: unknown[]) => unknown>;
    const name = creator ? node.$call.slice(7) : node.$call;
    assert.equal(typeof owner[name], "function", `${node.$call} does not exist`);
    return owner[name].call(owner, ...(evaluate(node.args, inputs) as unknown[]));
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, evaluate(v, inputs)]));
}

/** The op's named outputs: `out` for a tensor result, else the result's fields; `input:x` is input x after the call. */
function outputsOf(result: unknown, c: Case, inputs: ReadonlyMap<string, Tensor>): Map<string, Tensor> {
  const out = new Map<string, Tensor>();
  for (const name of Object.keys(c.outputs)) {
    const t = name.startsWith("input:")
      ? inputs.get(name.slice(6))
      : result instanceof Tensor && name === "out"
      ? result
      : (result as Record<string, Tensor>)[name];
    assert.ok(t instanceof Tensor, `${c.name}: no output ${name}`);
    out.set(name, t);
  }
  return out;
}

function compare(label: string, actual: Tensor, expected: Stored, ulps: number): void {
  const want = numbers(expected);
  if (expected.dtype !== "F64") {
    // Integer and Bool results have PyTorch's dtype (an integer sum is I64, a comparison Bool).
    assert.equal(dtypeInfo(actual.dtype).name, expected.dtype, `${label}: dtype`);
    assertClose(actual, Tensor.from(want, expected.shape, { dtype: "float64" }), {
      rtol: 0,
      atol: 0,
      message: label,
    });
    return;
  }
  const scale = Math.max(0, ...want.filter(Number.isFinite).map(Math.abs));
  using reference = Tensor.from(want, expected.shape, { dtype: "float64" });
  assertClose(actual, reference, { rtol: ulps * U, atol: ulps * U * scale, equalNan: true, message: label });
}

function runCase(c: Case): void {
  using _scope = new ActivationScope();
  const leaves = new Map<string, Tensor>();
  for (const [name, s] of Object.entries(c.inputs)) {
    const t = toTensor(s);
    leaves.set(name, s.requiresGrad ? t.withRequiresGrad() : t);
  }
  const result = evaluate(c.call, leaves);
  const outputs = outputsOf(result, c, leaves);
  for (const [name, t] of outputs) compare(`${c.name} ${name}`, t, c.outputs[name], c.ulps);
  if (c.grads === undefined || c.cotangents === undefined) return;
  const terms = Object.entries(c.cotangents).map(([name, g]) => weightedSum(outputs.get(name)!, g));
  const loss = terms.reduce((a, b) => a.add(b));
  loss.backward();
  for (const [name, expected] of Object.entries(c.grads)) {
    const leaf = leaves.get(name)!;
    const grad = leaf.grad ?? GradMode.noGrad(() => leaf.mul(0));
    compare(`${c.name} grad ${name}`, grad, expected, c.ulps);
  }
}

/** Σ t·g: its gradient with respect to t is the cotangent g. */
function weightedSum(t: Tensor, g: Stored): Tensor {
  return t.mul(toTensor(g)).sum();
}

test("tensors print as PyTorch's repr does, with … for its ... and dtype and shape always shown", () => {
  using _ = new ActivationScope();
  for (const { call, repr } of fixture.reprs) {
    const t = evaluate(call, new Map()) as Tensor;
    const body = repr.replace(/^tensor\(/, "Tensor(").replaceAll("...", "…").replace(
      /(,\s*dtype=torch\.\w+)?\)$/,
      "",
    );
    assert.equal(t.toString(), `${body}, dtype=${t.toJSON().dtype}, shape=[${t.shape.join(", ")}])`);
  }
});

/** Every op name an expression calls. */
function opsOf(expr: unknown): string[] {
  // Creators (`Tensor.from`) are not ops.
  if (Array.isArray(expr)) return expr.flatMap(opsOf);
  if (expr === null || typeof expr !== "object") return [];
  const node = expr as Record<string, unknown>;
  const op = typeof node.$call === "string" && !node.$call.startsWith("Tensor.") ? [node.$call] : [];
  return [...op, ...Object.values(node).flatMap(opsOf)];
}

const variants = [
  { label: "native exact", settings: { mode: "exact" as const } },
  { label: "native fast", settings: { mode: "fast" as const } },
  { label: "reference", settings: { mode: "exact" as const, kernels: referenceKernels } },
];

for (const c of fixture.cases) {
  for (const { label, settings } of variants) {
    test(`${c.name} matches PyTorch ${fixture.torch} (${label})`, () =>
      TensorCompute.run(settings, () => runCase(c)));
  }
}

test("the fixtures cover every differentiable op and carry gradients for every float input", () => {
  const called = new Set(fixture.cases.flatMap((c) => opsOf(c.call)));
  const functions = Object.entries(ops).filter(([, v]) => typeof v === "function").map(([k]) => k);
  // Not compared with PyTorch: casts and layout conversions have no PyTorch counterpart to differ from, and
  // contiguous, tryReshape and copyInto move data the view and copy tests check bit for bit.
  const exempt = new Set(["cast", "toLayout", "contiguous", "tryReshape", "copyInto"]);
  const missing = functions.filter((name) => !called.has(name) && !exempt.has(name));
  assert.deepEqual(missing, [], "ops without a PyTorch fixture");
  for (const c of fixture.cases) {
    const floatInputs = Object.values(c.inputs).filter((s) => s.requiresGrad);
    if (floatInputs.length > 0 && Object.values(c.outputs).some((o) => o.dtype === "F64")) {
      assert.ok(c.grads !== undefined && Object.keys(c.grads).length === floatInputs.length, c.name);
    }
  }
});

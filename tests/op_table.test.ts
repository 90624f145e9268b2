// The op table is the single source of truth: the Zig enums are generated from it and must be current, the
// kernel codes are dense, every family's native symbol is in the symbol table, and an op defined by a
// test-only entry gets its autograd behaviour from the entry alone.
import { IndexOp } from "../src/kernels/indexing.ts";
import { NllOp } from "../src/kernels/nll.ts";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { BackwardNotImplementedError, DType, DTypeError, GradMode, ops, Tensor } from "../mod.ts";
import { dtypeInfo } from "../src/core/dtype.ts";
import {
  DTYPE_RULES,
  type DTypeClass,
  type DTypeResult,
  KERNEL_FAMILIES,
  kernelEntries,
  type KernelFamily,
  type OpDefinition,
  type OpName,
  OPS,
} from "../src/core/op_table.ts";
import { recordAs } from "../src/autograd/record.ts";
import { BinaryOp, ReduceOp, SoftmaxOp, UnaryOp } from "../src/kernels/types.ts";
import { symbols } from "../src/native/symbols.ts";
import { TS_TYPES_PATH, tsTypesSource, ZIG_OPS_PATH, zigOpsSource } from "../scripts/gen_ops.ts";

test("zig/kernels/ops.zig and src/core/op_types.ts are what the op table generates (run scripts/gen_ops.ts)", () => {
  assert.equal(readFileSync(ZIG_OPS_PATH, "utf8"), zigOpsSource());
  assert.equal(readFileSync(TS_TYPES_PATH, "utf8"), tsTypesSource());
});

test("kernel codes are dense per family, and the TypeScript enums are the table's", () => {
  const enums: Record<KernelFamily, Record<string, number>> = {
    binary: BinaryOp,
    unary: UnaryOp,
    reduce: ReduceOp,
    softmax: SoftmaxOp,
    index: IndexOp,
    nll: NllOp,
  };
  for (const family of Object.keys(KERNEL_FAMILIES) as KernelFamily[]) {
    const entries = kernelEntries(family);
    assert.deepEqual(entries.map((e) => e.kernel.code), entries.map((_, i) => i), family);
    assert.deepEqual(
      Object.entries(enums[family]),
      entries.map((e) => [e.kernel.name, e.kernel.code]),
      `${family}: the TypeScript codes`,
    );
    const { symbol, intSymbol } = KERNEL_FAMILIES[family] as { symbol: string; intSymbol?: string };
    assert.ok(symbol in symbols, `${family}: ${symbol}`);
    assert.ok(intSymbol === undefined || intSymbol in symbols, `${family}: ${intSymbol}`);
  }
  // The dtype rules: comparisons and logical ops write Bool, argmax I64.
  using x = Tensor.from([1, 2]);
  for (const op of ["eq", "ne", "lt", "le", "gt", "ge", "logicalAnd", "logicalOr", "logicalXor"] as const) {
    assert.equal(DTYPE_RULES[OPS[op].dtypes].gives, "bool");
    using out = ops[op](x, 1);
    assert.equal(out.dtype, DType.Bool, op);
  }
  using index = ops.argmax(x, 0);
  assert.equal(OPS.argmax.dtypes, "f32|int->i64");
  assert.equal(index.dtype, DType.I64);
});

/** Every plain dtype, by name. */
const PLAIN_DTYPES = [
  "float32",
  "float64",
  "float16",
  "bfloat16",
  "uint8",
  "int8",
  "uint16",
  "int16",
  "int32",
  "int64",
  "uint32",
  "uint64",
  "bool",
] as const;

/** The class of a dtype in the table's rules, or null. */
function classOf(t: Tensor): DTypeClass | null {
  if (t.dtype === DType.F32) return "f32";
  if (t.dtype === DType.Bool) return "bool";
  return dtypeInfo(t.dtype).isFloat ? null : "int";
}

/** What each op's rule says of its result for an input of dtype `input`. */
function expectedDType(gives: DTypeResult, input: DType): DType {
  switch (gives) {
    case "same":
      return input;
    case "bool":
      return DType.Bool;
    case "i64":
      return DType.I64;
    case "f32":
      return DType.F32;
    case "sum":
      return input === DType.F32 ? DType.F32 : DType.I64;
  }
}

test("the element-wise, comparison, logical and reduction ops take exactly the dtypes their rule names, and return its dtype", () => {
  const calls: Partial<Record<OpName, (t: Tensor) => Tensor>> = {
    logicalNot: (t) => ops.logicalNot(t),
    any: (t) => ops.any(t),
    all: (t) => ops.all(t, 0),
  };
  // The internal kernels of backward rules (reluBackward, geluBackward) are not ops.
  const opsOf = (family: "binary" | "reduce") =>
    kernelEntries(family).map(({ op }) => op).filter((op): op is OpName => op in OPS);
  for (const op of opsOf("binary")) {
    calls[op] = (t) => (ops[op as keyof typeof ops] as (a: Tensor, b: Tensor) => Tensor)(t, t);
  }
  for (const op of opsOf("reduce")) {
    calls[op] = (t) => (ops[op as keyof typeof ops] as (a: Tensor, axis: number) => Tensor)(t, 0);
  }
  let accepted = 0;
  for (const [op, call] of Object.entries(calls) as [OpName, (t: Tensor) => Tensor][]) {
    const rule = DTYPE_RULES[OPS[op].dtypes];
    for (const name of PLAIN_DTYPES) {
      using t = Tensor.ones([2], { dtype: name });
      const kind = classOf(t);
      if (rule.takes !== "any" && kind !== null && rule.takes.includes(kind)) {
        using out = call(t);
        assert.equal(out.dtype, expectedDType(rule.gives, t.dtype), `${op} of ${name}`);
        accepted++;
      } else {
        assert.throws(
          () => call(t),
          (e) => e instanceof DTypeError && e.op === op && e.message.includes(dtypeInfo(t.dtype).name),
          `${op} of ${name}`,
        );
      }
    }
  }
  // Every one of the 9 integer and Bool dtypes reaches the comparisons, logical ops, sum, max and min.
  assert.ok(accepted > 9 * 14, `${accepted} accepted calls`);
  // Operands of two dtypes are refused, naming both.
  using a = Tensor.ones([2], { dtype: "int32" });
  using b = Tensor.ones([2], { dtype: "int64" });
  assert.throws(() => ops.add(a, b), (e) => e instanceof DTypeError && /I32 and I64/.test(e.message));
});

test("ops.pow(x, 2) + x backpropagates 2x + 1 (it recorded nothing before the op table)", () => {
  const x = Tensor.from([1, 2, 3]).withRequiresGrad();
  ops.sum(ops.add(ops.pow(x, 2), x)).backward();
  assert.deepEqual(Array.from(x.grad!.toArray() as Float32Array), [3, 5, 7]);
});

/** A test-only table entry: x², computed by the existing mul kernel, filed under the entry given. */
function square(definition: OpDefinition, x: Tensor): Tensor {
  const out = GradMode.noGrad(() => ops.mul(x, x));
  return recordAs("square", definition, out, [x, x], { saved: [x, x] });
}

test("an op defined by a test-only table entry: recorded by its entry, or refused when it has no rule", () => {
  const x = Tensor.from([1.5, -2]).withRequiresGrad();
  // Filed under Mul's rule (d(x·x) with both slots x): the gradient is 2x.
  const withRule: OpDefinition = { dtypes: "f32", grad: { record: "Mul" } };
  const y = square(withRule, x);
  assert.equal(y.gradFn!.op, "Mul");
  ops.sum(y).backward();
  assert.deepEqual(Array.from(x.grad!.toArray() as Float32Array), [3, -4]);
  // Differentiable without a rule: throws, naming the op; without gradients it computes.
  const missing: OpDefinition = { dtypes: "f32", grad: "missing" };
  assert.throws(
    () => square(missing, x),
    (e) => e instanceof BackwardNotImplementedError && e.op === "square",
  );
  using plain = GradMode.noGrad(() => square(missing, x));
  assert.deepEqual(Array.from(plain.toArray() as Float32Array), [2.25, 4]);
  // Not differentiable: its output simply does not require gradients.
  using none = square({ dtypes: "f32", grad: "none" }, x);
  assert.equal(none.requiresGrad, false);
});

test("the op table and `ops` name the same operators (a table entry without its public function fails here)", () => {
  const functions = Object.keys(ops).filter((name) =>
    typeof (ops as Record<string, unknown>)[name] === "function"
  );
  assert.deepEqual(functions.sort(), Object.keys(OPS).sort());
});

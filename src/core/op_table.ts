/**
 * The op definition table: one entry per operator of `ops`, the single source of truth for
 * - the kernel op codes on both sides of the ABI (`BinaryOp`, `UnaryOp`, `ReduceOp`, `SoftmaxOp` in
 *   `src/kernels/types.ts` are derived from it, and `zig/kernels/ops.zig` is generated from it by
 *   `scripts/gen_ops.ts`; a test checks that the committed file is current),
 * - the reference kernel tables (`src/kernels/reference.ts` keys its functions by the kernel names here, so a
 *   missing or extra function is a type error),
 * - the native entry point of each kernel family (`KERNEL_FAMILIES`),
 * - the dtype rule (what the op takes and what it returns),
 * - how the op takes part in autograd: the record kind its backward rule is filed under, a composition of
 *   recording ops, not differentiable, or a differentiable op still without a rule (which throws
 *   `BackwardNotImplementedError` when asked for a gradient instead of giving a wrong one).
 *
 * The module is plain data, so the generator and every layer can read it. The names and codes as types
 * (`OpName`, `RecordKind`, `KernelCodes`, the op names of each kernel family) are generated into `src/core/op_types.ts` with the Zig file, because
 * a published module needs explicit types.
 *
 * @module
 */
import type { KernelCodes, KernelOpNames, OpName } from "./op_types.ts";
export type {
  BinaryOpName,
  DifferentiableOp,
  KernelCodes,
  KernelOpNames,
  OpName,
  RecordKind,
  ReduceOpName,
  SoftmaxOpName,
  UnaryOpName,
} from "./op_types.ts";

/**
 * The kernel families of the seam, with the native symbol that runs each (f32 inputs) and, for the families
 * that also take integer and Bool tensors, the symbol that runs those (`intSymbol`, src/kernels/integer.ts).
 */
export const KERNEL_FAMILIES = {
  binary: { symbol: "zt_binary_f32", intSymbol: "zt_binary_int", zigEnum: "BinaryOp" },
  unary: { symbol: "zt_unary_f32", zigEnum: "UnaryOp" },
  reduce: { symbol: "zt_reduce_f32", intSymbol: "zt_reduce_int", zigEnum: "ReduceOp" },
  softmax: { symbol: "zt_softmax_f32", zigEnum: "SoftmaxOp" },
  index: { symbol: "zt_index_f32", zigEnum: "IndexOp" },
  nll: { symbol: "zt_nll_f32", zigEnum: "NllOp" },
} as const;

/** A kernel family of the seam. */
export type KernelFamily = keyof KernelCodes;

/** An op's kernel: its family, its name within the family (the Zig enum field in snake case) and its code. */
export interface KernelRef {
  readonly family: KernelFamily;
  readonly name: string;
  readonly code: number;
}

/**
 * The dtype rule of an op: the dtypes it takes, left of `->` (`f32`: plain F32; `int`: one of the integer
 * dtypes I8 I16 I32 I64 U8 U16 U32 U64; `bool`: Bool), and what it returns, right of it (nothing: the input's
 * dtype; `bool`: Bool, 0/1 bytes; `i64`: I64 indices; `f32`: F32; `sum`: F32 for F32, I64 for an integer or
 * Bool input, PyTorch's promotion of a sum). The operands of a binary op share one dtype. `"any"` takes any
 * dtype (data movement) and keeps it or converts as its arguments say. `DTYPE_RULES` spells each rule out,
 * and `checkDTypes` (src/ops/common.ts) refuses what an op's rule does not take.
 */
export type DTypeRule =
  | "f32"
  | "f32->bool"
  | "f32->i64"
  | "f32|int"
  | "f32|int->f32"
  | "f32|int|bool"
  | "f32|int|bool->bool"
  | "f32|int->i64"
  | "f32|int|bool->sum"
  | "any";

/** A class of dtypes in a dtype rule. */
export type DTypeClass = "f32" | "int" | "bool";

/** What an op returns, by its rule: the input's dtype, Bool, I64, F32, or a sum's (I64 for integers and Bool). */
export type DTypeResult = "same" | "bool" | "i64" | "f32" | "sum";

/** Each rule spelt out: the dtype classes it takes (none for `"any"`, which takes every dtype) and its result. */
export const DTYPE_RULES: {
  readonly [R in DTypeRule]: { readonly takes: readonly DTypeClass[] | "any"; readonly gives: DTypeResult };
} = {
  "f32": { takes: ["f32"], gives: "same" },
  "f32->bool": { takes: ["f32"], gives: "bool" },
  "f32->i64": { takes: ["f32"], gives: "i64" },
  "f32|int": { takes: ["f32", "int"], gives: "same" },
  "f32|int->f32": { takes: ["f32", "int"], gives: "f32" },
  "f32|int|bool": { takes: ["f32", "int", "bool"], gives: "same" },
  "f32|int|bool->bool": { takes: ["f32", "int", "bool"], gives: "bool" },
  "f32|int->i64": { takes: ["f32", "int"], gives: "i64" },
  "f32|int|bool->sum": { takes: ["f32", "int", "bool"], gives: "sum" },
  "any": { takes: "any", gives: "same" },
};

/**
 * How an op takes part in autograd:
 * - `{ record: Kind }`: it records a `BackwardRecord` of that kind, whose rule is in `src/autograd/rules.ts`;
 * - `"composed"`: it is a composition of recording ops (or returns a view made by one);
 * - `"none"`: not differentiable (Bool or integer output, or piecewise constant): its output never requires
 *   gradients;
 * - `"missing"`: differentiable, no rule yet: calling it with gradient mode on and an input that requires
 *   gradients throws `BackwardNotImplementedError`.
 */
export type GradRule = { readonly record: string } | "composed" | "none" | "missing";

/** One entry of the table. */
export interface OpDefinition {
  /** The kernel the op calls through the seam, for ops that are one kernel call. */
  readonly kernel?: KernelRef;
  /** Further kernels of the op's family that an option selects instead of `kernel` (gelu's tanh form). */
  readonly variants?: readonly KernelRef[];
  readonly dtypes: DTypeRule;
  readonly grad: GradRule;
}

function k(family: KernelFamily, name: string, code: number): KernelRef {
  return { family, name, code };
}

/** Every operator of `ops`, by its name there. */
export const OPS: { readonly [N in OpName]: OpDefinition } = {
  // Element-wise, two operands (broadcasting).
  // Integers wrap around (two's complement); integer division is true division, F32 as PyTorch's.
  add: { kernel: k("binary", "Add", 0), dtypes: "f32|int", grad: { record: "Add" } },
  sub: { kernel: k("binary", "Sub", 1), dtypes: "f32|int", grad: { record: "Sub" } },
  mul: { kernel: k("binary", "Mul", 2), dtypes: "f32|int", grad: { record: "Mul" } },
  div: { kernel: k("binary", "Div", 3), dtypes: "f32|int->f32", grad: { record: "Div" } },
  maximum: { kernel: k("binary", "Max", 4), dtypes: "f32", grad: { record: "Maximum" } },
  minimum: { kernel: k("binary", "Min", 5), dtypes: "f32", grad: { record: "Minimum" } },
  pow: { kernel: k("binary", "Pow", 6), dtypes: "f32", grad: { record: "Pow" } },
  eq: { kernel: k("binary", "Eq", 7), dtypes: "f32|int|bool->bool", grad: "none" },
  ne: { kernel: k("binary", "Ne", 8), dtypes: "f32|int|bool->bool", grad: "none" },
  lt: { kernel: k("binary", "Lt", 9), dtypes: "f32|int|bool->bool", grad: "none" },
  le: { kernel: k("binary", "Le", 10), dtypes: "f32|int|bool->bool", grad: "none" },
  gt: { kernel: k("binary", "Gt", 11), dtypes: "f32|int|bool->bool", grad: "none" },
  ge: { kernel: k("binary", "Ge", 12), dtypes: "f32|int|bool->bool", grad: "none" },
  // Logical ops (issue 12): every nonzero value is true, as torch.logical_and; logicalNot is eq(x, 0).
  logicalAnd: { kernel: k("binary", "LogicalAnd", 13), dtypes: "f32|int|bool->bool", grad: "none" },
  logicalOr: { kernel: k("binary", "LogicalOr", 14), dtypes: "f32|int|bool->bool", grad: "none" },
  logicalXor: { kernel: k("binary", "LogicalXor", 15), dtypes: "f32|int|bool->bool", grad: "none" },
  logicalNot: { dtypes: "f32|int|bool->bool", grad: "none" },
  // Element-wise, one operand.
  neg: { kernel: k("unary", "Neg", 0), dtypes: "f32", grad: { record: "Neg" } },
  abs: { kernel: k("unary", "Abs", 1), dtypes: "f32", grad: { record: "Abs" } },
  relu: { kernel: k("unary", "Relu", 2), dtypes: "f32", grad: { record: "Relu" } },
  exp: { kernel: k("unary", "Exp", 3), dtypes: "f32", grad: { record: "Exp" } },
  log: { kernel: k("unary", "Log", 4), dtypes: "f32", grad: { record: "Log" } },
  sqrt: { kernel: k("unary", "Sqrt", 5), dtypes: "f32", grad: { record: "Sqrt" } },
  tanh: { kernel: k("unary", "Tanh", 6), dtypes: "f32", grad: { record: "Tanh" } },
  sigmoid: { kernel: k("unary", "Sigmoid", 7), dtypes: "f32", grad: { record: "Sigmoid" } },
  gelu: {
    kernel: k("unary", "GeluErf", 21),
    variants: [k("unary", "Gelu", 8)],
    dtypes: "f32",
    grad: { record: "Gelu" },
  },
  erf: { kernel: k("unary", "Erf", 9), dtypes: "f32", grad: { record: "Erf" } },
  // Element-wise, one operand (issue 12); softplus, leakyRelu, elu and clamp read their parameters from the
  // argument block's floats; hardtanh runs the clamp kernel.
  log1p: { kernel: k("unary", "Log1p", 10), dtypes: "f32", grad: { record: "Log1p" } },
  expm1: { kernel: k("unary", "Expm1", 11), dtypes: "f32", grad: { record: "Expm1" } },
  silu: { kernel: k("unary", "Silu", 12), dtypes: "f32", grad: { record: "Silu" } },
  softplus: { kernel: k("unary", "Softplus", 13), dtypes: "f32", grad: { record: "Softplus" } },
  leakyRelu: { kernel: k("unary", "LeakyRelu", 14), dtypes: "f32", grad: { record: "LeakyRelu" } },
  elu: { kernel: k("unary", "Elu", 15), dtypes: "f32", grad: { record: "Elu" } },
  clamp: { kernel: k("unary", "Clamp", 16), dtypes: "f32", grad: { record: "Clamp" } },
  sign: { kernel: k("unary", "Sign", 17), dtypes: "f32", grad: "none" },
  reciprocal: { kernel: k("unary", "Reciprocal", 18), dtypes: "f32", grad: { record: "Reciprocal" } },
  rsqrt: { kernel: k("unary", "Rsqrt", 19), dtypes: "f32", grad: { record: "Rsqrt" } },
  square: { kernel: k("unary", "Square", 20), dtypes: "f32", grad: { record: "Square" } },
  hardtanh: { dtypes: "f32", grad: { record: "Hardtanh" } },
  // Selection (issue 12): any plain dtype, through the select kernel (zt_select).
  where: { dtypes: "any", grad: { record: "Where" } },
  // Reductions over any set of axes.
  // Integer and Bool reductions run `zt_reduce_int` (sum gives I64 as PyTorch's; mean refuses integers).
  sum: { kernel: k("reduce", "Sum", 0), dtypes: "f32|int|bool->sum", grad: { record: "Sum" } },
  mean: { kernel: k("reduce", "Mean", 1), dtypes: "f32", grad: { record: "Mean" } },
  max: { kernel: k("reduce", "Max", 2), dtypes: "f32|int|bool", grad: { record: "Max" } },
  min: { kernel: k("reduce", "Min", 3), dtypes: "f32|int|bool", grad: { record: "Min" } },
  argmax: { kernel: k("reduce", "ArgMax", 4), dtypes: "f32|int->i64", grad: "none" },
  // Reductions added with issue 12 (argmin, prod; the rest are compositions of reductions).
  argmin: { kernel: k("reduce", "ArgMin", 5), dtypes: "f32|int->i64", grad: "none" },
  prod: { kernel: k("reduce", "Prod", 6), dtypes: "f32", grad: { record: "Prod" } },
  var: { dtypes: "f32", grad: "composed" },
  std: { dtypes: "f32", grad: "composed" },
  logsumexp: { dtypes: "f32", grad: "composed" },
  norm: { dtypes: "f32", grad: "composed" },
  // torch.any and torch.all: a comparison with 0, then the Bool max or min.
  any: { dtypes: "f32|int|bool->bool", grad: "none" },
  all: { dtypes: "f32|int|bool->bool", grad: "none" },
  // Softmax family over one axis.
  softmax: { kernel: k("softmax", "Softmax", 0), dtypes: "f32", grad: { record: "Softmax" } },
  logSoftmax: { kernel: k("softmax", "LogSoftmax", 1), dtypes: "f32", grad: { record: "LogSoftmax" } },
  // Indexing along an axis and the running sum (issue 12).
  gather: { kernel: k("index", "Gather", 0), dtypes: "f32", grad: { record: "Gather" } },
  scatterAdd: { kernel: k("index", "ScatterAdd", 1), dtypes: "f32", grad: { record: "ScatterAdd" } },
  cumsum: { kernel: k("index", "CumSum", 2), dtypes: "f32", grad: { record: "CumSum" } },
  indexSelect: { dtypes: "f32", grad: { record: "Gather" } },
  maxWithIndices: { dtypes: "f32", grad: "composed" },
  minWithIndices: { dtypes: "f32", grad: "composed" },
  stack: { dtypes: "any", grad: "composed" },
  split: { dtypes: "any", grad: "composed" },
  chunk: { dtypes: "any", grad: "composed" },
  repeat: { dtypes: "any", grad: "composed" },
  oneHot: { dtypes: "any", grad: "none" },
  tril: { dtypes: "f32", grad: "composed" },
  triu: { dtypes: "f32", grad: "composed" },
  pad: { dtypes: "f32", grad: "composed" },
  // Linear algebra and layers.
  matmul: { dtypes: "f32", grad: { record: "MatMul" } },
  linear: { dtypes: "f32", grad: "composed" },
  maxPool2d: { dtypes: "f32", grad: { record: "MaxPool2d" } },
  avgPool2d: { dtypes: "f32", grad: { record: "AvgPool2d" } },
  adaptiveAvgPool2d: { dtypes: "f32", grad: "composed" },
  conv2d: { dtypes: "f32", grad: { record: "Conv2d" } },
  conv1d: { dtypes: "f32", grad: "composed" },
  convTranspose2d: { dtypes: "f32", grad: { record: "ConvTranspose2d" } },
  layerNorm: { dtypes: "f32", grad: { record: "LayerNorm" } },
  batchNorm: { dtypes: "f32", grad: { record: "BatchNorm" } },
  concat: { dtypes: "f32", grad: { record: "Concat" } },
  embedding: { dtypes: "f32", grad: { record: "Embedding" } },
  // The class losses (src/ops/losses.ts): one fused native kernel each, forward and backward.
  nllLoss: { kernel: k("nll", "NllLoss", 0), dtypes: "f32", grad: { record: "NllLoss" } },
  crossEntropy: { kernel: k("nll", "CrossEntropy", 1), dtypes: "f32", grad: { record: "CrossEntropy" } },
  attention: { dtypes: "f32", grad: { record: "Attention" } },
  lstm: { dtypes: "f32", grad: { record: "Lstm" } },
  gru: { dtypes: "f32", grad: { record: "Gru" } },
  ctcLoss: { dtypes: "f32", grad: { record: "CtcLoss" } },
  // Losses (src/ops/losses.ts), compositions of element-wise ops and a reduction.
  mseLoss: { dtypes: "f32", grad: "composed" },
  l1Loss: { dtypes: "f32", grad: "composed" },
  smoothL1Loss: { dtypes: "f32", grad: "composed" },
  binaryCrossEntropy: { dtypes: "f32", grad: "composed" },
  binaryCrossEntropyWithLogits: { dtypes: "f32", grad: "composed" },
  klDiv: { dtypes: "f32", grad: "composed" },
  // Dropout (src/ops/dropout.ts): x times a seeded mask.
  dropout: { dtypes: "f32", grad: "composed" },
  // Views and data movement.
  reshape: { dtypes: "any", grad: { record: "Reshape" } },
  tryReshape: { dtypes: "any", grad: "composed" },
  permute: { dtypes: "any", grad: { record: "Permute" } },
  transpose: { dtypes: "any", grad: "composed" },
  expand: { dtypes: "any", grad: { record: "Expand" } },
  flip: { dtypes: "any", grad: { record: "Flip" } },
  slice: { dtypes: "any", grad: { record: "Slice" } },
  select: { dtypes: "any", grad: { record: "Select" } },
  squeeze: { dtypes: "any", grad: "composed" },
  unsqueeze: { dtypes: "any", grad: "composed" },
  cast: { dtypes: "any", grad: { record: "Cast" } },
  clone: { dtypes: "any", grad: "composed" },
  contiguous: { dtypes: "any", grad: "composed" },
  toLayout: { dtypes: "any", grad: "none" },
  copyInto: { dtypes: "any", grad: "none" },
};

/**
 * Kernels that no public op calls alone (the fused kernels of backward rules), by the internal name their
 * callers pass to `kernelCode`: codes of their family like the ops' kernels, but no function in `ops`.
 */
export const INTERNAL_KERNELS = {
  // g where the saved ReLU output is not ≤ 0 (PyTorch's threshold_backward): the Relu rule, one pass.
  reluBackward: { kernel: k("binary", "ReluBackward", 16), dtypes: "f32", grad: "none" },
  // g·GELU'(x) (tanh form) from g and the saved x, one pass: the Gelu rule (PyTorch's gelu_backward).
  geluBackward: { kernel: k("binary", "GeluBackward", 17), dtypes: "f32", grad: "none" },
} as const satisfies Record<string, OpDefinition>;

/** The name of an internal kernel. */
export type InternalKernelName = keyof typeof INTERNAL_KERNELS;

/** The definition of an op of the table or of an internal kernel. */
export function definitionOf(op: OpName | InternalKernelName): OpDefinition {
  return op in INTERNAL_KERNELS ? INTERNAL_KERNELS[op as InternalKernelName] : OPS[op as OpName];
}

/**
 * The entries of the table (an op's `variants` included) and the internal kernels whose kernel belongs to
 * `family`, in code order.
 */
export function kernelEntries(
  family: KernelFamily,
): { readonly op: OpName | InternalKernelName; readonly kernel: KernelRef }[] {
  const entries: { op: OpName | InternalKernelName; kernel: KernelRef }[] = [];
  const all = [...Object.entries(OPS), ...Object.entries(INTERNAL_KERNELS)] as [
    OpName | InternalKernelName,
    OpDefinition,
  ][];
  for (const [op, def] of all) {
    for (const kernel of [def.kernel, ...(def.variants ?? [])]) {
      if (kernel?.family === family) entries.push({ op, kernel });
    }
  }
  return entries.sort((x, y) => x.kernel.code - y.kernel.code);
}

/**
 * The codes of `family` by kernel name. Throws at load when the codes are not 0, 1, 2, ... in table order,
 * each once (the native side switches over them densely).
 */
export function kernelCodes<F extends KernelFamily>(family: F): KernelCodes[F] {
  const codes: Record<string, number> = {};
  kernelEntries(family).forEach(({ kernel }, i) => {
    if (kernel.code !== i || kernel.name in codes) {
      throw new Error(`op table: ${family} kernel ${kernel.name} has code ${kernel.code}, expected ${i}`);
    }
    codes[kernel.name] = kernel.code;
  });
  return Object.freeze(codes) as unknown as KernelCodes[F];
}

/** The codes of a family's kernels, as a type (`BinaryOp` is `KernelCode<"binary">`). */
export type KernelCode<F extends KernelFamily> = KernelCodes[F][keyof KernelCodes[F]];

/**
 * Each family's kernel codes by op name, for `kernelCode`: ops look their code up on every call, and a keyed
 * load from one family's small object costs less than a `Map` lookup (half of the hash lookups in Deno's
 * profile of `ops.neg` went with it) or a keyed load from the large `OPS` object.
 */
const CODES_BY_FAMILY: Record<string, Record<string, number>> = {};
for (
  const [op, def] of [...Object.entries(OPS), ...Object.entries(INTERNAL_KERNELS)] as [string, OpDefinition][]
) {
  if (def.kernel !== undefined) (CODES_BY_FAMILY[def.kernel.family] ??= {})[op] = def.kernel.code;
}

/** The codes of the binary kernels that write Bool (their dtype rule gives Bool: comparisons, logical ops). */
const BOOL_BINARY: ReadonlySet<number> = new Set(
  kernelEntries("binary").filter(({ op }) => DTYPE_RULES[definitionOf(op).dtypes].gives === "bool").map((e) =>
    e.kernel.code
  ),
);

/** Whether the binary kernel `code` writes Bool (0/1 bytes). */
export function binaryWritesBool(code: number): boolean {
  return BOOL_BINARY.has(code);
}

/** The code of `op`'s kernel, which must belong to `family` (the type admits only that family's ops). */
export function kernelCode<F extends KernelFamily>(family: F, op: KernelOpNames[F]): KernelCode<F> {
  const code = CODES_BY_FAMILY[family]?.[op];
  // No property Object.prototype gives a plain object is a number, so only the table's codes pass.
  if (typeof code !== "number") noKernel(family, op);
  return code as KernelCode<F>;
}

/** `kernelCode`'s error for an op without a kernel of `family`. */
function noKernel(family: string, op: string): never {
  throw new Error(`op table: ${op} has no ${family} kernel`);
}

// The op registry for tests: for every differentiable operator of the op table (src/core/op_table.ts), its
// gradient-check cases (shapes, the f32 call, an f64 reference written from the math). The type makes the
// registry complete: an op added to the table as differentiable without cases here is a type error, and
// tests/autograd_gradcheck.test.ts checks every case, so each differentiable op has a rule that passes the gradient
// check (or, without a rule, throws BackwardNotImplementedError).
import { DType, ops, Tensor } from "../../mod.ts";
import { type DifferentiableOp, type OpName, OPS } from "../../src/core/op_table.ts";
import { erf64 } from "../../src/kernels/reference.ts";
import * as R from "./f64.ts";

/** Gradient-check cases by operator. */
export const gradCases: Record<DifferentiableOp, R.GradCase[]> = {
  add: [
    {
      name: "add (broadcast)",
      shapes: [[3, 4], [4]],
      f32: ([a, b]) => ops.add(a, b),
      f64: ([a, b]) => R.zip(a, b, (x, y) => x + y),
    },
  ],
  sub: [
    {
      name: "sub (broadcast)",
      shapes: [[2, 1, 3], [4, 1]],
      f32: ([a, b]) => ops.sub(a, b),
      f64: ([a, b]) => R.zip(a, b, (x, y) => x - y),
    },
    {
      name: "number minus tensor",
      shapes: [[5]],
      f32: ([a]) => ops.sub(1, a),
      f64: ([a]) => R.map(a, (x) => 1 - x),
    },
  ],
  mul: [
    {
      name: "mul",
      shapes: [[3, 5], [3, 5]],
      f32: ([a, b]) => ops.mul(a, b),
      f64: ([a, b]) => R.zip(a, b, (x, y) => x * y),
      strided: true,
    },
    {
      name: "mul by a number",
      shapes: [[4, 2]],
      f32: ([a]) => ops.mul(a, 0.75),
      f64: ([a]) => R.map(a, (x) => x * 0.75),
    },
  ],
  div: [
    {
      name: "div",
      shapes: [[2, 3], [3]],
      f32: ([a, b]) => ops.div(a, b),
      f64: ([a, b]) => R.zip(a, b, (x, y) => x / y),
      positive: true,
    },
  ],
  neg: [
    {
      name: "neg",
      shapes: [[3, 3]],
      f32: ([a]) => ops.neg(a),
      f64: ([a]) => R.map(a, (x) => -x),
      strided: true,
    },
  ],
  relu: [
    {
      name: "relu",
      shapes: [[4, 5]],
      f32: ([a]) => ops.relu(a),
      f64: ([a]) => R.map(a, (x) => Math.max(x, 0)),
      strided: true,
    },
  ],
  exp: [
    { name: "exp", shapes: [[3, 4]], f32: ([a]) => ops.exp(a), f64: ([a]) => R.map(a, Math.exp) },
  ],
  log: [
    {
      name: "log",
      shapes: [[3, 4]],
      f32: ([a]) => ops.log(a),
      f64: ([a]) => R.map(a, Math.log),
      positive: true,
    },
  ],
  sqrt: [
    {
      name: "sqrt",
      shapes: [[6]],
      f32: ([a]) => ops.sqrt(a),
      f64: ([a]) => R.map(a, Math.sqrt),
      positive: true,
    },
  ],
  tanh: [
    {
      name: "tanh",
      shapes: [[2, 5]],
      f32: ([a]) => ops.tanh(a),
      f64: ([a]) => R.map(a, Math.tanh),
      strided: true,
    },
  ],
  sigmoid: [
    {
      name: "sigmoid",
      shapes: [[7]],
      f32: ([a]) => ops.sigmoid(a),
      f64: ([a]) => R.map(a, (x) => 1 / (1 + Math.exp(-x))),
    },
  ],
  gelu: [
    {
      name: "gelu (erf form, the default)",
      shapes: [[3, 3]],
      f32: ([a]) => ops.gelu(a),
      f64: ([a]) => R.map(a, (x) => 0.5 * x * (1 + erf64(x / Math.SQRT2))),
      strided: true,
    },
    {
      name: "gelu (tanh form)",
      shapes: [[3, 3]],
      f32: ([a]) => ops.gelu(a, { approximate: "tanh" }),
      f64: ([a]) =>
        R.map(a, (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)))),
    },
  ],
  matmul: [
    {
      name: "matmul (batched, broadcast batch)",
      shapes: [[2, 3, 4], [4, 5]],
      f32: ([a, b]) => ops.matmul(a, b),
      f64: ([a, b]) => R.matmul(a, b),
    },
    {
      name: "matmul (strided operands)",
      shapes: [[3, 4], [4, 2]],
      f32: ([a, b]) => ops.matmul(a, b),
      f64: ([a, b]) => R.matmul(a, b),
      strided: true,
    },
    {
      name: "matmul (vector)",
      shapes: [[4], [4, 3]],
      f32: ([a, b]) => ops.matmul(a, b),
      f64: ([a, b]) => {
        const out = R.matmul(R.f64([1, 4], a.data), b);
        return R.f64([3], out.data);
      },
    },
  ],
  linear: [
    {
      name: "linear",
      shapes: [[2, 3], [4, 3], [4]],
      f32: ([x, w, b]) => ops.linear(x, w, b),
      f64: ([x, w, b]) => R.zip(R.matmul(x, R.viewOp(w, (t) => t.T.contiguous())), b, (p, q) => p + q),
    },
  ],
  sum: [
    {
      name: "sum (all)",
      shapes: [[3, 4]],
      f32: ([a]) => ops.sum(a),
      f64: ([a]) => R.reduce(a, [0, 1], false, (v) => v.reduce((s, x) => s + x, 0)),
    },
    {
      name: "sum (axes, keepDims)",
      shapes: [[2, 3, 4]],
      f32: ([a]) => ops.sum(a, [0, 2], { keepDims: true }),
      f64: ([a]) => R.reduce(a, [0, 2], true, (v) => v.reduce((s, x) => s + x, 0)),
      strided: true,
    },
  ],
  mean: [
    {
      name: "mean",
      shapes: [[4, 3]],
      f32: ([a]) => ops.mean(a, -1),
      f64: ([a]) => R.reduce(a, [1], false, (v) => v.reduce((s, x) => s + x, 0) / v.length),
    },
  ],
  max: [
    {
      name: "max",
      shapes: [[3, 5]],
      f32: ([a]) => ops.max(a, 1),
      f64: ([a]) => R.reduce(a, [1], false, (v) => Math.max(...v)),
    },
  ],
  // Reductions added with issue 12.
  prod: [
    {
      name: "prod (axis)",
      shapes: [[3, 4]],
      f32: ([a]) => ops.prod(a, 1),
      f64: ([a]) => R.reduce(a, [1], false, (v) => v.reduce((s, x) => s * x, 1)),
    },
    {
      name: "prod with one zero and two zeros per row",
      shapes: [[2, 3]],
      f32: ([a]) => ops.prod(ops.mul(a, Tensor.from([[1, 0, 1], [0, 1, 0]])), 1, { keepDims: true }),
      f64: ([a]) =>
        R.reduce(
          R.zip(a, R.f64([2, 3], [1, 0, 1, 0, 1, 0]), (x, m) => x * m),
          [1],
          true,
          (v) => v.reduce((s, x) => s * x, 1),
        ),
    },
  ],
  var: [
    {
      name: "var (axes, correction 1)",
      shapes: [[3, 4]],
      f32: ([a]) => ops.var(a, 1),
      f64: ([a]) => R.reduce(a, [1], false, (v) => varianceOf(v, 1)),
    },
    {
      name: "var (all, correction 0, keepDims)",
      shapes: [[2, 3]],
      f32: ([a]) => ops.var(a, undefined, { correction: 0, keepDims: true }),
      f64: ([a]) => R.reduce(a, [0, 1], true, (v) => varianceOf(v, 0)),
    },
  ],
  std: [
    {
      name: "std",
      shapes: [[4, 3]],
      f32: ([a]) => ops.std(a, 0),
      f64: ([a]) => R.reduce(a, [0], false, (v) => Math.sqrt(varianceOf(v, 1))),
    },
  ],
  logsumexp: [
    {
      name: "logsumexp",
      shapes: [[3, 4]],
      f32: ([a]) => ops.logsumexp(a, 1),
      f64: ([a]) => R.reduce(a, [1], false, (v) => Math.log(v.reduce((s, x) => s + Math.exp(x), 0))),
    },
  ],
  norm: [
    {
      name: "norm (p 2, all)",
      shapes: [[3, 4]],
      f32: ([a]) => ops.norm(a),
      f64: ([a]) => R.reduce(a, [0, 1], false, (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0))),
    },
    {
      name: "norm (p 1, axis)",
      shapes: [[3, 4]],
      f32: ([a]) => ops.norm(a, { p: 1, axis: 1 }),
      f64: ([a]) => R.reduce(a, [1], false, (v) => v.reduce((s, x) => s + Math.abs(x), 0)),
    },
    {
      name: "norm (p Infinity, keepDims)",
      shapes: [[3, 4]],
      f32: ([a]) => ops.norm(a, { p: Infinity, axis: 0, keepDims: true }),
      f64: ([a]) => R.reduce(a, [0], true, (v) => Math.max(...v.map(Math.abs))),
    },
  ],
  // Indexing along an axis (issue 12).
  gather: [
    {
      name: "gather (axis 1, repeated indices)",
      shapes: [[2, 3]],
      f32: ([a]) => ops.gather(a, 1, Tensor.from([[2, 2, 0, 1], [1, 0, 0, 0]], { dtype: DType.I64 })),
      f64: ([a]) => R.build([2, 4], ([i, j]) => a.data[i * 3 + [[2, 2, 0, 1], [1, 0, 0, 0]][i][j]]),
    },
  ],
  indexSelect: [
    {
      name: "indexSelect (axis 0, I32)",
      shapes: [[3, 2]],
      f32: ([a]) => ops.indexSelect(a, 0, Tensor.from([2, 0, 2], { dtype: DType.I32 })),
      f64: ([a]) => R.build([3, 2], ([i, j]) => a.data[[2, 0, 2][i] * 2 + j]),
    },
  ],
  scatterAdd: [
    {
      name: "scatterAdd (axis 0, repeated indices)",
      shapes: [[3, 2], [2, 2]],
      f32: ([a, s]) => ops.scatterAdd(a, 0, Tensor.from([[2, 0], [2, 2]], { dtype: DType.I64 }), s),
      f64: ([a, s]) =>
        R.build([3, 2], ([i, j]) => {
          const ids = [[2, 0], [2, 2]];
          let v = a.data[i * 2 + j];
          for (let k = 0; k < 2; k++) if (ids[k][j] === i) v += s.data[k * 2 + j];
          return v;
        }),
    },
  ],
  stack: [
    {
      name: "stack (new last axis)",
      shapes: [[2, 3], [2, 3]],
      f32: ([a, b]) => ops.stack([a, b], -1),
      f64: ([a, b]) => R.build([2, 3, 2], ([i, j, k]) => (k === 0 ? a : b).data[i * 3 + j]),
    },
  ],
  split: [
    {
      name: "split (sizes, axis 1)",
      shapes: [[2, 5]],
      f32: ([a]) => ops.split(a, [2, 3], 1)[1],
      f64: ([a]) => R.build([2, 3], ([i, j]) => a.data[i * 5 + 2 + j]),
    },
  ],
  chunk: [
    {
      name: "chunk (last piece shorter)",
      shapes: [[5, 2]],
      f32: ([a]) => ops.chunk(a, 2)[1],
      f64: ([a]) => R.build([2, 2], ([i, j]) => a.data[(3 + i) * 2 + j]),
    },
  ],
  repeat: [
    {
      name: "repeat (a new leading axis)",
      shapes: [[2, 3]],
      f32: ([a]) => ops.repeat(a, [2, 1, 2]),
      f64: ([a]) => R.build([2, 2, 6], ([, i, j]) => a.data[i * 3 + (j % 3)]),
    },
  ],
  tril: [
    {
      name: "tril (batch, diagonal -1)",
      shapes: [[2, 3, 4]],
      f32: ([a]) => ops.tril(a, { diagonal: -1 }),
      f64: ([a]) => R.build([2, 3, 4], ([b, i, j]) => (j - i <= -1 ? a.data[b * 12 + i * 4 + j] : 0)),
    },
  ],
  triu: [
    {
      name: "triu (diagonal 1)",
      shapes: [[3, 3]],
      f32: ([a]) => ops.triu(a, { diagonal: 1 }),
      f64: ([a]) => R.build([3, 3], ([i, j]) => (j - i >= 1 ? a.data[i * 3 + j] : 0)),
    },
  ],
  pad: [
    {
      name: "pad (reflect, last two axes)",
      shapes: [[1, 3, 3]],
      f32: ([a]) => ops.pad(a, [2, 1, 1, 0], { mode: "reflect" }),
      f64: ([a]) => {
        const reflect = (i: number, n: number) => (i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i);
        return R.build([1, 4, 6], ([, i, j]) => a.data[reflect(i - 1, 3) * 3 + reflect(j - 2, 3)]);
      },
    },
    {
      name: "pad (replicate and constant)",
      shapes: [[2, 3]],
      f32: ([a]) => ops.pad(ops.pad(a, [1, 2], { mode: "replicate" }), [0, 0, 1, 0], { value: 5 }),
      f64: ([a]) =>
        R.build([3, 6], ([i, j]) => (i === 0 ? 5 : a.data[(i - 1) * 3 + Math.min(2, Math.max(0, j - 1))])),
    },
  ],
  maxWithIndices: [
    {
      name: "maxWithIndices (values)",
      shapes: [[3, 4]],
      f32: ([a]) => ops.maxWithIndices(a, 1).values,
      f64: ([a]) => R.reduce(a, [1], false, (v) => Math.max(...v)),
    },
  ],
  minWithIndices: [
    {
      name: "minWithIndices (values, keepDims)",
      shapes: [[3, 4]],
      f32: ([a]) => ops.minWithIndices(a, 0, { keepDims: true }).values,
      f64: ([a]) => R.reduce(a, [0], true, (v) => Math.min(...v)),
    },
  ],
  cumsum: [
    {
      name: "cumsum (axis 1)",
      shapes: [[2, 4]],
      f32: ([a]) => ops.cumsum(a, 1),
      f64: ([a]) =>
        R.build([2, 4], ([i, j]) => a.data.slice(i * 4, i * 4 + j + 1).reduce((x, y) => x + y, 0)),
      strided: true,
    },
  ],
  softmax: [
    {
      name: "softmax",
      shapes: [[3, 4]],
      f32: ([a]) => ops.softmax(a, 1),
      f64: ([a]) => R.softmax(a, 1, false),
      strided: true,
    },
    {
      name: "softmax (axis 0)",
      shapes: [[4, 2]],
      f32: ([a]) => ops.softmax(a, 0),
      f64: ([a]) => R.softmax(a, 0, false),
    },
  ],
  logSoftmax: [
    {
      name: "logSoftmax",
      shapes: [[2, 6]],
      f32: ([a]) => ops.logSoftmax(a),
      f64: ([a]) => R.softmax(a, 1, true),
    },
  ],
  permute: [
    {
      name: "permute",
      shapes: [[2, 3, 4]],
      f32: ([a]) => ops.permute(a, [2, 0, 1]),
      f64: ([a]) => R.viewOp(a, (t) => t.permute([2, 0, 1])),
    },
  ],
  slice: [
    {
      name: "slice with step",
      shapes: [[7, 3]],
      f32: ([a]) => ops.slice(a, 0, 1, 7, 2),
      f64: ([a]) => R.viewOp(a, (t) => t.slice(0, 1, 7, 2)),
    },
  ],
  select: [
    {
      name: "select",
      shapes: [[3, 4]],
      f32: ([a]) => ops.select(a, 1, 2),
      f64: ([a]) => R.viewOp(a, (t) => t.select(1, 2)),
    },
  ],
  flip: [
    {
      name: "flip",
      shapes: [[3, 4]],
      f32: ([a]) => ops.flip(a, 1),
      f64: ([a]) => R.viewOp(a, (t) => t.flip(1)),
    },
  ],
  expand: [
    {
      name: "expand",
      shapes: [[3, 1]],
      f32: ([a]) => ops.expand(a, [2, 3, 4]),
      f64: ([a]) => R.viewOp(a, (t) => t.expand([2, 3, 4])),
    },
  ],
  squeeze: [
    {
      name: "unsqueeze and squeeze",
      shapes: [[3, 1, 2]],
      f32: ([a]) => ops.unsqueeze(ops.squeeze(a, 1), 0),
      f64: ([a]) => R.f64([1, 3, 2], a.data),
    },
  ],
  reshape: [
    {
      name: "reshape (view)",
      shapes: [[4, 6]],
      f32: ([a]) => ops.reshape(a, [2, -1, 3]),
      f64: ([a]) => R.f64([2, 4, 3], a.data),
    },
    {
      name: "reshape (copy of a strided input)",
      shapes: [[3, 4]],
      f32: ([a]) => ops.reshape(a, [12]),
      f64: ([a]) => R.f64([12], a.data),
      strided: true,
    },
  ],
  contiguous: [
    { name: "contiguous", shapes: [[3, 4]], f32: ([a]) => ops.contiguous(a), f64: ([a]) => a, strided: true },
  ],
  cast: [
    {
      name: "cast to F64 and back",
      shapes: [[5]],
      f32: ([a]) => ops.cast(ops.mul(ops.cast(a, DType.F64).cast(DType.F32), 2), DType.F32),
      f64: ([a]) => R.map(a, (x) => 2 * x),
    },
  ],
  maxPool2d: [
    {
      name: "maxPool2d",
      shapes: [[1, 2, 5, 5]],
      f32: ([a]) => ops.maxPool2d(a, { kernel: 3, stride: 2, padding: 1 }),
      f64: ([a]) => R.maxPool2d(a, [3, 3], [2, 2], [1, 1]),
    },
    {
      // Disjoint 2x2 windows of stride 2 (the native vector path), rows of 19 windows and an odd height.
      name: "maxPool2d 2x2",
      shapes: [[2, 2, 5, 38]],
      f32: ([a]) => ops.maxPool2d(a, { kernel: 2 }),
      f64: ([a]) => R.maxPool2d(a, [2, 2], [2, 2], [0, 0]),
    },
    {
      // Disjoint windows smaller than their stride, with padding.
      name: "maxPool2d spaced",
      shapes: [[1, 2, 7, 8]],
      f32: ([a]) => ops.maxPool2d(a, { kernel: 2, stride: 3, padding: 1 }),
      f64: ([a]) => R.maxPool2d(a, [2, 2], [3, 3], [1, 1]),
    },
  ],
  crossEntropy: [
    {
      name: "crossEntropy",
      shapes: [[4, 3]],
      f32: ([a]) => ops.crossEntropy(a, Tensor.from([0, 2, 1, 2], [4], { dtype: DType.I32 })),
      f64: ([a]) => R.classLoss(a, { targets: [0, 2, 1, 2] }),
      exactUlps: 1,
    },
    {
      name: "crossEntropy (strided logits, sum, weight, ignoreIndex)",
      shapes: [[4, 3]],
      f32: ([a]) =>
        ops.crossEntropy(a, Tensor.from([2, -100, 0, 1], [4], { dtype: DType.I64 }), {
          reduction: "sum",
          weight: Tensor.from([0.5, 2, 1.5]),
        }),
      f64: ([a]) => R.classLoss(a, { targets: [2, -100, 0, 1], reduction: "sum", weight: [0.5, 2, 1.5] }),
      strided: true,
      exactUlps: 1,
    },
    {
      name: "crossEntropy (none, labelSmoothing)",
      shapes: [[3, 5]],
      f32: ([a]) =>
        ops.crossEntropy(a, Tensor.from([4, 0, 2], [3], { dtype: DType.I64 }), {
          reduction: "none",
          labelSmoothing: 0.2,
        }),
      f64: ([a]) => R.classLoss(a, { targets: [4, 0, 2], reduction: "none", labelSmoothing: 0.2 }),
      exactUlps: 1,
    },
    {
      name: "crossEntropy (mean, weight, labelSmoothing, ignoreIndex 1)",
      shapes: [[5, 3]],
      f32: ([a]) =>
        ops.crossEntropy(a, Tensor.from([1, 0, 2, 1, 2], [5], { dtype: DType.I32 }), {
          weight: Tensor.from([0.5, 2, 1.5]),
          labelSmoothing: 0.3,
          ignoreIndex: 1,
        }),
      f64: ([a]) =>
        R.classLoss(a, {
          targets: [1, 0, 2, 1, 2],
          weight: [0.5, 2, 1.5],
          labelSmoothing: 0.3,
          ignoreIndex: 1,
        }),
      exactUlps: 1,
    },
    {
      name: "crossEntropy ([N, C, d1, d2] input, mean)",
      shapes: [[2, 3, 2, 2]],
      f32: ([a]) =>
        ops.crossEntropy(a, Tensor.from([0, 1, 2, 2, 1, 0, -100, 1], [2, 2, 2], { dtype: DType.I64 })),
      f64: ([a]) => R.classLoss(a, { targets: [0, 1, 2, 2, 1, 0, -100, 1] }),
      exactUlps: 1,
    },
    {
      name: "crossEntropy (unbatched [C] input)",
      shapes: [[5]],
      f32: ([a]) => ops.crossEntropy(a, Tensor.from([3], [], { dtype: DType.I64 }), { labelSmoothing: 0.1 }),
      f64: ([a]) => R.classLoss(a, { targets: [3], labelSmoothing: 0.1 }),
      exactUlps: 1,
    },
    {
      name: "crossEntropy (probability targets, weight, labelSmoothing; logits and targets)",
      shapes: [[3, 4], [3, 4]],
      f32: ([a, y]) =>
        ops.crossEntropy(a, y, { weight: Tensor.from([1, 0.5, 2, 1.5]), labelSmoothing: 0.25 }),
      f64: ([a, y]) =>
        R.classLoss(a, { targets: null, probabilities: y, weight: [1, 0.5, 2, 1.5], labelSmoothing: 0.25 }),
      exactUlps: 1,
    },
    {
      name: "crossEntropy (probability targets, [N, C, d], none, strided)",
      shapes: [[2, 3, 2], [2, 3, 2]],
      f32: ([a, y]) => ops.crossEntropy(a, y, { reduction: "none" }),
      f64: ([a, y]) => R.classLoss(a, { targets: null, probabilities: y, reduction: "none" }),
      strided: true,
      exactUlps: 1,
    },
  ],
  maximum: [
    {
      name: "maximum (broadcast; the outer one ties wherever b wins, half to each side)",
      shapes: [[3, 4], [4]],
      f32: ([a, b]) => ops.maximum(ops.maximum(a, b), ops.mul(b, 1)),
      f64: ([a, b]) => R.zip(a, b, Math.max),
    },
    {
      name: "maximum with a number",
      shapes: [[6]],
      f32: ([a]) => ops.maximum(a, 0.1),
      f64: ([a]) => R.map(a, (x) => Math.max(x, 0.1)),
    },
  ],
  minimum: [
    {
      name: "minimum (broadcast)",
      shapes: [[2, 3], [2, 1]],
      f32: ([a, b]) => ops.minimum(a, b),
      f64: ([a, b]) => R.zip(a, b, Math.min),
      strided: true,
    },
  ],
  pow: [
    {
      name: "pow (both operands)",
      shapes: [[3, 4], [4]],
      f32: ([a, b]) => ops.pow(a, b),
      f64: ([a, b]) => R.zip(a, b, Math.pow),
      positive: true,
    },
    {
      name: "pow by a number (negative base)",
      shapes: [[5]],
      f32: ([a]) => ops.pow(a, 3),
      f64: ([a]) => R.map(a, (x) => x ** 3),
    },
    {
      name: "number to a tensor power",
      shapes: [[4]],
      f32: ([a]) => ops.pow(2, a),
      f64: ([a]) => R.map(a, (x) => 2 ** x),
    },
  ],
  abs: [
    {
      name: "abs",
      shapes: [[3, 4]],
      f32: ([a]) => ops.abs(a),
      f64: ([a]) => R.map(a, Math.abs),
      strided: true,
    },
  ],
  erf: [
    {
      name: "erf",
      shapes: [[2, 5]],
      f32: ([a]) => ops.erf(a),
      f64: ([a]) => R.map(a, erf64),
    },
  ],
  min: [
    {
      name: "min (axes, keepDims)",
      shapes: [[3, 4, 2]],
      f32: ([a]) => ops.min(a, [0, 2], { keepDims: true }),
      f64: ([a]) => R.reduce(a, [0, 2], true, (v) => Math.min(...v)),
      strided: true,
    },
  ],
  transpose: [
    {
      name: "transpose",
      shapes: [[2, 3, 4]],
      f32: ([a]) => ops.transpose(a, 0, 2),
      f64: ([a]) => R.viewOp(a, (t) => t.permute([2, 1, 0])),
    },
  ],
  unsqueeze: [
    {
      name: "unsqueeze",
      shapes: [[3, 2]],
      f32: ([a]) => ops.unsqueeze(a, 1),
      f64: ([a]) => R.f64([3, 1, 2], a.data),
    },
  ],
  tryReshape: [
    {
      name: "tryReshape (view)",
      shapes: [[4, 6]],
      f32: ([a]) => ops.tryReshape(a, [6, 4])!,
      f64: ([a]) => R.f64([6, 4], a.data),
    },
  ],
  clone: [{ name: "clone", shapes: [[3, 4]], f32: ([a]) => ops.clone(a), f64: ([a]) => a, strided: true }],
  conv2d: [
    {
      name: "conv2d (bias, stride, padding)",
      shapes: [[2, 2, 5, 4], [3, 2, 2, 3], [3]],
      f32: ([x, w, b]) => ops.conv2d(x, w, { bias: b, padding: [1, 0], stride: [2, 1] }),
      f64: ([x, w, b]) => R.conv2d(x, w, b, { stride: [2, 1], padding: [1, 0], dilation: [1, 1], groups: 1 }),
    },
    {
      // Totals 1 (odd: the extra zero goes below) and 2 (one zero each side).
      name: "conv2d (padding same, asymmetric)",
      shapes: [[2, 2, 5, 4], [3, 2, 2, 3]],
      f32: ([x, w]) => ops.conv2d(x, w, { padding: "same" }),
      f64: ([x, w]) =>
        R.conv2d(x, w, null, {
          stride: [1, 1],
          padding: [0, 1],
          dilation: [1, 1],
          groups: 1,
          output: [5, 4],
        }),
    },
  ],
  convTranspose2d: [
    {
      name: "convTranspose2d (bias, stride, padding, outputPadding, groups)",
      shapes: [[2, 4, 3, 2], [4, 1, 3, 2], [2]],
      f32: ([x, w, b]) =>
        ops.convTranspose2d(x, w, {
          bias: b,
          stride: [2, 1],
          padding: [1, 0],
          outputPadding: [1, 0],
          groups: 2,
        }),
      f64: ([x, w, b]) =>
        R.convTranspose2d(x, w, b, {
          stride: [2, 1],
          padding: [1, 0],
          dilation: [1, 1],
          outputPadding: [1, 0],
          groups: 2,
        }),
    },
    {
      // An output padding below the dilation but not the stride: the input gradient drops a row.
      name: "convTranspose2d (dilation, outputPadding ≥ stride)",
      shapes: [[1, 2, 3, 3], [2, 3, 2, 2]],
      f32: ([x, w]) => ops.convTranspose2d(x, w, { dilation: [2, 1], outputPadding: [1, 0] }),
      f64: ([x, w]) =>
        R.convTranspose2d(x, w, null, {
          stride: [1, 1],
          padding: [0, 0],
          dilation: [2, 1],
          outputPadding: [1, 0],
          groups: 1,
        }),
    },
  ],
  conv1d: [
    {
      name: "conv1d (bias, groups, stride, padding)",
      shapes: [[2, 4, 7], [6, 2, 3], [6]],
      f32: ([x, w, b]) => ops.conv1d(x, w, { bias: b, groups: 2, stride: 2, padding: 1 }),
      f64: ([x, w, b]) => {
        const y = R.conv2d(R.f64([2, 4, 1, 7], x.data), R.f64([6, 2, 1, 3], w.data), b, {
          stride: [1, 2],
          padding: [0, 1],
          dilation: [1, 1],
          groups: 2,
        });
        return R.f64([2, 6, 4], y.data);
      },
    },
    {
      name: "conv1d (padding same, dilation 3)",
      shapes: [[1, 2, 6], [2, 2, 2]],
      f32: ([x, w]) => ops.conv1d(x, w, { padding: "same", dilation: 3 }),
      f64: ([x, w]) => {
        const geometry = { stride: [1, 1], padding: [0, 1], dilation: [1, 3], groups: 1, output: [1, 6] };
        const y = R.conv2d(R.f64([1, 2, 1, 6], x.data), R.f64([2, 2, 1, 2], w.data), null, geometry);
        return R.f64([1, 2, 6], y.data);
      },
    },
  ],
  avgPool2d: [
    {
      name: "avgPool2d (ceilMode, countIncludePad false)",
      shapes: [[1, 2, 5, 6]],
      f32: ([x]) =>
        ops.avgPool2d(x, { kernel: 2, stride: 2, padding: 1, ceilMode: true, countIncludePad: false }),
      f64: ([x]) =>
        windowAverage(x, [3, 4], (o, size) => [Math.max(2 * o - 1, 0), Math.min(2 * o + 1, size)]),
    },
    {
      name: "avgPool2d",
      shapes: [[2, 2, 5, 6]],
      f32: ([x]) => ops.avgPool2d(x, { kernel: 3, stride: [2, 1], padding: 1 }),
      f64: ([x]) => R.avgPool2d(x, [3, 3], [2, 1], [1, 1]),
    },
  ],
  layerNorm: [
    {
      name: "layerNorm (weight, bias, two axes)",
      shapes: [[3, 4, 5], [4, 5], [4, 5]],
      f32: ([x, w, b]) => ops.layerNorm(x, [4, 5], { weight: w, bias: b }),
      f64: ([x, w, b]) => R.layerNorm(x, 2, w, b, 1e-5),
    },
    {
      name: "layerNorm (no affine part, a width past two vectors of 8)",
      shapes: [[3, 17]],
      f32: ([x]) => ops.layerNorm(x, 17),
      f64: ([x]) => R.layerNorm(x, 1, null, null, 1e-5),
    },
    {
      name: "layerNorm (weight only, width 33, a strided input)",
      shapes: [[4, 33], [33]],
      f32: ([x, w]) => ops.layerNorm(x, 33, { weight: w }),
      f64: ([x, w]) => R.layerNorm(x, 1, w, null, 1e-5),
      strided: true,
    },
    {
      name: "layerNorm (bias only, three axes, eps 0.1)",
      shapes: [[2, 3, 2, 3], [3, 2, 3]],
      f32: ([x, b]) => ops.layerNorm(x, [3, 2, 3], { bias: b, eps: 0.1 }),
      f64: ([x, b]) => R.layerNorm(x, 3, null, b, 0.1),
    },
    {
      name: "layerNorm (weight and bias, width 15, one row)",
      shapes: [[1, 15], [15], [15]],
      f32: ([x, w, b]) => ops.layerNorm(x, [15], { weight: w, bias: b }),
      f64: ([x, w, b]) => R.layerNorm(x, 1, w, b, 1e-5),
    },
  ],
  batchNorm: [
    {
      name: "batchNorm (training, NCHW)",
      shapes: [[3, 2, 3, 2], [2], [2]],
      f32: ([x, w, b]) => ops.batchNorm(x, null, null, { training: true, weight: w, bias: b }),
      f64: ([x, w, b]) => R.batchNorm(x, null, w, b, 1e-5),
    },
    {
      name: "batchNorm (training, [N, C], no affine part)",
      shapes: [[5, 3]],
      f32: ([x]) => ops.batchNorm(x, null, null, { training: true }),
      f64: ([x]) => R.batchNorm(x, null, null, null, 1e-5),
    },
    {
      name: "batchNorm (training, weight only, spatial 17, a strided input)",
      shapes: [[3, 2, 17], [2]],
      f32: ([x, w]) => ops.batchNorm(x, null, null, { training: true, weight: w }),
      f64: ([x, w]) => R.batchNorm(x, null, w, null, 1e-5),
      strided: true,
    },
    {
      name: "batchNorm (evaluation: the running statistics are constants)",
      shapes: [[2, 3, 4], [3], [3]],
      f32: ([x, w, b]) =>
        ops.batchNorm(x, Tensor.from([0.5, -1, 0]), Tensor.from([1.5, 0.25, 4]), {
          weight: w,
          bias: b,
          eps: 0.01,
        }),
      f64: ([x, w, b]) =>
        R.batchNorm(x, { mean: R.f64([3], [0.5, -1, 0]), variance: R.f64([3], [1.5, 0.25, 4]) }, w, b, 0.01),
    },
  ],
  concat: [
    {
      name: "concat (axis 1, three inputs)",
      shapes: [[2, 3, 2], [2, 1, 2], [2, 4, 2]],
      f32: (xs) => ops.concat(xs, 1),
      f64: (xs) => R.concat(xs, 1),
    },
  ],
  embedding: [
    {
      name: "embedding (repeated rows)",
      shapes: [[5, 3]],
      f32: ([w]) => ops.embedding(Tensor.from([1, 3, 1, 0], [4], { dtype: DType.I32 }), w),
      f64: ([w]) => R.embedding([1, 3, 1, 0], [4], w),
    },
  ],
  nllLoss: [
    {
      name: "nllLoss",
      shapes: [[3, 4]],
      f32: ([a]) => ops.nllLoss(a, Tensor.from([3, 0, 1], [3], { dtype: DType.I32 })),
      f64: ([a]) => R.classLoss(a, { targets: [3, 0, 1], nll: true }),
    },
    {
      name: "nllLoss (mean, weight, ignoreIndex)",
      shapes: [[4, 3]],
      f32: ([a]) =>
        ops.nllLoss(a, Tensor.from([2, -100, 0, 1], [4], { dtype: DType.I64 }), {
          weight: Tensor.from([0.5, 2, 1.5]),
        }),
      f64: ([a]) => R.classLoss(a, { targets: [2, -100, 0, 1], weight: [0.5, 2, 1.5], nll: true }),
    },
    {
      name: "nllLoss ([N, C, d] input, sum, strided)",
      shapes: [[2, 3, 2]],
      f32: ([a]) =>
        ops.nllLoss(a, Tensor.from([0, 2, 1, 1], [2, 2], { dtype: DType.I64 }), { reduction: "sum" }),
      f64: ([a]) => R.classLoss(a, { targets: [0, 2, 1, 1], reduction: "sum", nll: true }),
      strided: true,
    },
    {
      name: "nllLoss (none, ignoreIndex 1)",
      shapes: [[3, 4]],
      f32: ([a]) =>
        ops.nllLoss(a, Tensor.from([1, 2, 3], [3], { dtype: DType.I32 }), {
          reduction: "none",
          ignoreIndex: 1,
        }),
      f64: ([a]) => R.classLoss(a, { targets: [1, 2, 3], reduction: "none", ignoreIndex: 1, nll: true }),
    },
  ],
  attention: [
    {
      name: "attention (q, k, v)",
      shapes: [[2, 3, 4], [2, 4, 4], [2, 4, 5]],
      f32: ([q, k, v]) => ops.attention(q, k, v),
      f64: ([q, k, v]) => R.attention(q, k, v, null, false, 0.5),
    },
    {
      name: "attention (grouped-query heads, causal)",
      shapes: [[4, 3, 2], [2, 3, 2], [2, 3, 3]],
      f32: ([q, k, v]) => ops.attention(q, k, v, { enableGqa: true, causal: true }),
      f64: ([q, k, v]) => R.attention(q, R.repeatHeads(k, 2), R.repeatHeads(v, 2), null, true, Math.SQRT1_2),
    },
    {
      name: "attention (dropout, seeded)",
      shapes: [[2, 3, 2], [2, 4, 2], [2, 4, 3]],
      f32: ([q, k, v]) => ops.attention(q, k, v, { dropout: 0.4, seed: 9 }),
      f64: ([q, k, v]) => {
        using u = Tensor.rand([2, 3, 4], { seed: 9 });
        const keep = R.map(R.toF64(u), (x) => (x >= Math.fround(0.4) ? 1 / (1 - 0.4) : 0));
        return R.droppedAttention(q, k, v, keep, Math.SQRT1_2);
      },
    },
  ],
  lstm: [
    {
      name: "lstm (x, weights, biases)",
      shapes: [[2, 3, 3], [8, 3], [8, 2], [8], [8]],
      f32: ([x, weightIh, weightHh, biasIh, biasHh]) =>
        ops.lstm(x, { weightIh, weightHh, biasIh, biasHh }).output,
      f64: ([x, wIh, wHh, bIh, bHh]) => {
        const zeros = R.f64([2, 2], new Float64Array(4));
        return R.lstm(x, { wIh, wHh, bIh, bHh }, zeros, zeros).output;
      },
    },
    {
      name: "lstm (strided x, weights, h0, c0; no biases; 5 hidden units)",
      shapes: [[2, 3, 3], [20, 3], [20, 5], [1, 2, 5], [1, 2, 5]],
      f32: ([x, weightIh, weightHh, h0, c0]) => {
        const r = ops.lstm(x, { weightIh, weightHh }, { h0, c0 });
        return ops.concat([ops.reshape(r.output, [-1]), ops.reshape(r.c, [-1])]);
      },
      f64: ([x, wIh, wHh, h0, c0]) => {
        const r = R.lstm(
          x,
          { wIh, wHh, bIh: null, bHh: null },
          R.f64([2, 5], h0.data),
          R.f64([2, 5], c0.data),
        );
        return R.flatJoin([r.output, r.c]);
      },
      strided: true,
    },
  ],
  gru: [
    {
      name: "gru (x, weights, biases)",
      shapes: [[2, 3, 3], [6, 3], [6, 2], [6], [6]],
      f32: ([x, weightIh, weightHh, biasIh, biasHh]) =>
        ops.gru(x, { weightIh, weightHh, biasIh, biasHh }).output,
      f64: ([x, wIh, wHh, bIh, bHh]) =>
        R.gru(x, { wIh, wHh, bIh, bHh }, R.f64([2, 2], new Float64Array(4))).output,
    },
    {
      name: "gru (strided x, weights, hidden bias only, h0; 5 hidden units)",
      shapes: [[2, 3, 3], [15, 3], [15, 5], [15], [1, 2, 5]],
      f32: ([x, weightIh, weightHh, biasHh, h0]) => ops.gru(x, { weightIh, weightHh, biasHh }, { h0 }).output,
      f64: ([x, wIh, wHh, bHh, h0]) => R.gru(x, { wIh, wHh, bIh: null, bHh }, R.f64([2, 5], h0.data)).output,
      strided: true,
    },
  ],
  ctcLoss: [
    {
      name: "ctcLoss (one sequence, sum)",
      shapes: [[3, 1, 3]],
      f32: ([lp]) =>
        ops.ctcLoss(lp, Tensor.from([1, 2], [1, 2], { dtype: DType.I32 }), [3], [2], { reduction: "sum" }),
      f64: ([lp]) => {
        const rows = Array.from({ length: 3 }, (_, t) => Array.from(lp.data.subarray(t * 3, t * 3 + 3)));
        return R.f64([], [R.ctcBruteForce(rows, [1, 2], 0)]);
      },
    },
  ],
  // Issue 12's element-wise ops.
  log1p: [
    {
      name: "log1p",
      shapes: [[3, 4]],
      f32: ([a]) => ops.log1p(a),
      f64: ([a]) => R.map(a, Math.log1p),
      positive: true,
    },
  ],
  expm1: [
    {
      name: "expm1",
      shapes: [[2, 5]],
      f32: ([a]) => ops.expm1(a),
      f64: ([a]) => R.map(a, Math.expm1),
      strided: true,
    },
  ],
  silu: [
    {
      name: "silu",
      shapes: [[7]],
      f32: ([a]) => ops.silu(a),
      f64: ([a]) => R.map(a, (x) => x / (1 + Math.exp(-x))),
    },
  ],
  softplus: [
    {
      name: "softplus (beta 2, threshold 3: both branches)",
      shapes: [[4, 4]],
      f32: ([a]) => ops.softplus(a, { beta: 2, threshold: 3 }),
      f64: ([a]) => R.map(a, (x) => 2 * x > 3 ? x : Math.log1p(Math.exp(2 * x)) / 2),
    },
  ],
  leakyRelu: [
    {
      name: "leakyRelu (slope 0.2)",
      shapes: [[3, 5]],
      f32: ([a]) => ops.leakyRelu(a, { negativeSlope: 0.2 }),
      f64: ([a]) => R.map(a, (x) => x > 0 ? x : x * Math.fround(0.2)),
      strided: true,
    },
  ],
  elu: [
    {
      name: "elu (alpha 1.5)",
      shapes: [[9]],
      f32: ([a]) => ops.elu(a, { alpha: 1.5 }),
      f64: ([a]) => R.map(a, (x) => x > 0 ? x : 1.5 * Math.expm1(x)),
    },
  ],
  clamp: [
    {
      name: "clamp to [-1, 0.5]",
      shapes: [[4, 3]],
      f32: ([a]) => ops.clamp(a, { min: -1, max: 0.5 }),
      f64: ([a]) => R.map(a, (x) => Math.min(Math.max(x, -1), 0.5)),
    },
    {
      name: "clamp, max only",
      shapes: [[6]],
      f32: ([a]) => ops.clamp(a, { max: 0.25 }),
      f64: ([a]) => R.map(a, (x) => Math.min(x, 0.25)),
    },
    {
      name: "clamp with tensor bounds (broadcast, some min > max)",
      shapes: [[3, 4], [4], [3, 1]],
      f32: ([x, lo, hi]) => ops.clamp(x, { min: lo, max: hi }),
      f64: ([x, lo, hi]) => R.zip(R.zip(x, lo, Math.max), hi, Math.min),
    },
    {
      name: "clamp with a tensor min only",
      shapes: [[2, 3], [2, 1]],
      f32: ([x, lo]) => ops.clamp(x, { min: lo }),
      f64: ([x, lo]) => R.zip(x, lo, Math.max),
    },
    {
      name: "clamp with a tensor max and a number min",
      shapes: [[5], [5]],
      f32: ([x, hi]) => ops.clamp(x, { min: -0.5, max: hi }),
      f64: ([x, hi]) => R.zip(R.map(x, (v) => Math.max(v, -0.5)), hi, Math.min),
    },
  ],
  where: [
    {
      name: "where (condition, a and b broadcast)",
      shapes: [[2, 3], [3]],
      f32: ([a, b]) => ops.where(Tensor.from(WHERE_MASK, [2, 1, 3], { dtype: DType.Bool }), a, b),
      f64: ([a, b]) => {
        const picked = R.zip(R.f64([2, 1, 3], WHERE_MASK.map(Number)), a, (c, x) => c * x);
        return R.zip(
          picked,
          R.zip(R.f64([2, 1, 3], WHERE_MASK.map((c) => 1 - Number(c))), b, (c, y) => c * y),
          (x, y) => x + y,
        );
      },
      strided: true,
    },
    {
      name: "where with a number",
      shapes: [[4]],
      f32: ([a]) => ops.where(Tensor.from([true, false, false, true]), 0.5, a),
      f64: ([a]) => R.f64([4], [0.5, a.data[1], a.data[2], 0.5]),
    },
  ],
  hardtanh: [
    {
      name: "hardtanh to [-0.5, 1]",
      shapes: [[8]],
      f32: ([a]) => ops.hardtanh(a, { minVal: -0.5, maxVal: 1 }),
      f64: ([a]) => R.map(a, (x) => Math.min(Math.max(x, -0.5), 1)),
    },
  ],
  reciprocal: [
    {
      name: "reciprocal",
      shapes: [[5]],
      f32: ([a]) => ops.reciprocal(a),
      f64: ([a]) => R.map(a, (x) => 1 / x),
      positive: true,
    },
  ],
  rsqrt: [
    {
      name: "rsqrt",
      shapes: [[5]],
      f32: ([a]) => ops.rsqrt(a),
      f64: ([a]) => R.map(a, (x) => 1 / Math.sqrt(x)),
      positive: true,
    },
  ],
  square: [
    {
      name: "square",
      shapes: [[2, 3]],
      f32: ([a]) => ops.square(a),
      f64: ([a]) => R.map(a, (x) => x * x),
      strided: true,
    },
  ],
  // --- pooling options (src/ops/pool.ts) ---
  adaptiveAvgPool2d: [
    {
      name: "adaptiveAvgPool2d (uneven windows)",
      shapes: [[1, 2, 5, 7]],
      f32: ([x]) => ops.adaptiveAvgPool2d(x, [2, 3]),
      f64: ([x]) =>
        windowAverage(
          x,
          [2, 3],
          (o, size, count) => [Math.floor((o * size) / count), Math.ceil(((o + 1) * size) / count)],
        ),
    },
  ],
  // --- losses (src/ops/losses.ts) ---
  mseLoss: [
    {
      name: "mseLoss (input and target)",
      shapes: [[2, 3], [2, 3]],
      f32: ([a, b]) => ops.mseLoss(a, b),
      f64: ([a, b]) => lossTotal(R.zip(a, b, (x, y) => (x - y) ** 2), 1 / 6),
    },
  ],
  l1Loss: [
    {
      name: "l1Loss (sum)",
      shapes: [[2, 3], [2, 3]],
      f32: ([a, b]) => ops.l1Loss(a, b, { reduction: "sum" }),
      f64: ([a, b]) => lossTotal(R.zip(a, b, (x, y) => Math.abs(x - y)), 1),
    },
  ],
  smoothL1Loss: [
    {
      name: "smoothL1Loss (beta 0.5, none)",
      shapes: [[3, 4], [3, 4]],
      f32: ([a, b]) => ops.smoothL1Loss(a, b, { beta: 0.5, reduction: "none" }),
      f64: ([a, b]) => R.zip(a, b, (x, y) => Math.abs(x - y) < 0.5 ? (x - y) ** 2 : Math.abs(x - y) - 0.25),
    },
  ],
  binaryCrossEntropy: [
    {
      name: "binaryCrossEntropy (weighted, probabilities and weight)",
      shapes: [[2, 3], [3]],
      positive: true,
      f32: ([a, w]) =>
        ops.binaryCrossEntropy(ops.div(a, 3), Tensor.from(LOSS_TARGETS, [2, 3]), { weight: w }),
      f64: ([a, w]) => {
        const p = R.map(a, (x) => x / 3);
        const y = R.f64([2, 3], LOSS_TARGETS);
        const terms = R.zip(p, y, (q, t) => -(t * Math.log(q) + (1 - t) * Math.log(1 - q)));
        return lossTotal(R.zip(terms, w, (l, v) => l * v), 1 / 6);
      },
    },
  ],
  binaryCrossEntropyWithLogits: [
    {
      name: "binaryCrossEntropyWithLogits (logits, posWeight, weight)",
      shapes: [[2, 3], [3], [2, 1]],
      f32: ([x, pw, w]) =>
        ops.binaryCrossEntropyWithLogits(x, Tensor.from(LOSS_TARGETS, [2, 3]), {
          posWeight: ops.add(pw, 3),
          weight: w,
          reduction: "sum",
        }),
      f64: ([x, pw, w]) => {
        const y = R.f64([2, 3], LOSS_TARGETS);
        const c = R.zip(R.map(pw, (v) => v + 3), y, (p, t) => 1 + (p - 1) * t);
        const sp = R.map(x, (v) => Math.log1p(Math.exp(-v)));
        const terms = R.zip(
          R.zip(x, y, (v, t) => (1 - t) * v),
          R.zip(c, sp, (a, b) => a * b),
          (a, b) => a + b,
        );
        return lossTotal(R.zip(terms, w, (l, v) => l * v), 1);
      },
    },
  ],
  klDiv: [
    {
      name: "klDiv (batchmean, log-probabilities and target)",
      shapes: [[2, 3], [2, 3]],
      positive: true,
      f32: ([a, t]) => ops.klDiv(a, t, { reduction: "batchmean" }),
      f64: ([a, t]) => lossTotal(R.zip(a, t, (x, y) => y * (Math.log(y) - x)), 1 / 2),
    },
    {
      name: "klDiv (logTarget, sum)",
      shapes: [[2, 3], [2, 3]],
      f32: ([a, t]) => ops.klDiv(a, t, { logTarget: true, reduction: "sum" }),
      f64: ([a, t]) => lossTotal(R.zip(a, t, (x, y) => Math.exp(y) * (y - x)), 1),
    },
  ],
  // --- dropout (src/ops/dropout.ts) ---
  dropout: [
    {
      name: "dropout (p 0.4, seeded)",
      shapes: [[4, 5]],
      f32: ([a]) => ops.dropout(a, { p: 0.4, seed: 21 }),
      f64: ([a]) => {
        using u = Tensor.rand([4, 5], { seed: 21 });
        return R.zip(a, R.toF64(u), (x, v) => (v >= 0.4 ? x / 0.6 : 0));
      },
    },
  ],
};

/** The mean of each window [start, end) × [start, end) of `x` [N, C, H, W] that `bounds` gives per axis. */
function windowAverage(
  x: R.F64,
  output: [number, number],
  bounds: (o: number, size: number, count: number) => [number, number],
): R.F64 {
  const [n, c, h, w] = x.shape;
  return R.build([n, c, ...output], ([ni, ci, oy, ox]) => {
    const [y0, y1] = bounds(oy, h, output[0]);
    const [x0, x1] = bounds(ox, w, output[1]);
    let total = 0;
    for (let y = y0; y < y1; y++) {
      for (let xx = x0; xx < x1; xx++) total += x.data[((ni * c + ci) * h + y) * w + xx];
    }
    return total / ((y1 - y0) * (x1 - x0));
  });
}

/** The condition of `where`'s case, [2, 1, 3]. */
const WHERE_MASK = [true, false, true, false, false, true];

/** Targets of the binary losses' cases, in [0, 1] (soft labels included). */
const LOSS_TARGETS = [1, 0, 0.25, 0, 1, 0.75];

/** `scale` times the sum of `terms`, as a scalar. */
function lossTotal(terms: R.F64, scale: number): R.F64 {
  return R.f64([], [terms.data.reduce((s, v) => s + v, 0) * scale]);
}

/** The differentiable operators of the table, by walking it. */
export function differentiableOps(): DifferentiableOp[] {
  return (Object.keys(OPS) as OpName[]).filter((op): op is DifferentiableOp => OPS[op].grad !== "none");
}

/** The variance of `v` with `correction` (the f64 reference of `var` and `std`). */
function varianceOf(v: number[], correction: number): number {
  const m = v.reduce((s, x) => s + x, 0) / v.length;
  return v.reduce((s, x) => s + (x - m) * (x - m), 0) / (v.length - correction);
}

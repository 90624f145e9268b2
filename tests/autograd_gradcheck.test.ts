// Gradient checks: every differentiable op against central differences of an f64 reference function, on random
// shapes including broadcasts and strided (transposed, sliced, flipped) inputs, in exact and fast mode.
import { test } from "node:test";
import { DType, ops, Tensor } from "../mod.ts";
import * as R from "./helpers/f64.ts";

const cases: R.GradCase[] = [
  {
    name: "add (broadcast)",
    shapes: [[3, 4], [4]],
    f32: ([a, b]) => ops.add(a, b),
    f64: ([a, b]) => R.zip(a, b, (x, y) => x + y),
  },
  {
    name: "sub (broadcast)",
    shapes: [[2, 1, 3], [4, 1]],
    f32: ([a, b]) => ops.sub(a, b),
    f64: ([a, b]) => R.zip(a, b, (x, y) => x - y),
  },
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
  {
    name: "div",
    shapes: [[2, 3], [3]],
    f32: ([a, b]) => ops.div(a, b),
    f64: ([a, b]) => R.zip(a, b, (x, y) => x / y),
    positive: true,
  },
  {
    name: "number minus tensor",
    shapes: [[5]],
    f32: ([a]) => ops.sub(1, a),
    f64: ([a]) => R.map(a, (x) => 1 - x),
  },
  {
    name: "neg",
    shapes: [[3, 3]],
    f32: ([a]) => ops.neg(a),
    f64: ([a]) => R.map(a, (x) => -x),
    strided: true,
  },
  {
    name: "relu",
    shapes: [[4, 5]],
    f32: ([a]) => ops.relu(a),
    f64: ([a]) => R.map(a, (x) => Math.max(x, 0)),
    strided: true,
  },
  { name: "exp", shapes: [[3, 4]], f32: ([a]) => ops.exp(a), f64: ([a]) => R.map(a, Math.exp) },
  {
    name: "log",
    shapes: [[3, 4]],
    f32: ([a]) => ops.log(a),
    f64: ([a]) => R.map(a, Math.log),
    positive: true,
  },
  {
    name: "sqrt",
    shapes: [[6]],
    f32: ([a]) => ops.sqrt(a),
    f64: ([a]) => R.map(a, Math.sqrt),
    positive: true,
  },
  {
    name: "tanh",
    shapes: [[2, 5]],
    f32: ([a]) => ops.tanh(a),
    f64: ([a]) => R.map(a, Math.tanh),
    strided: true,
  },
  {
    name: "sigmoid",
    shapes: [[7]],
    f32: ([a]) => ops.sigmoid(a),
    f64: ([a]) => R.map(a, (x) => 1 / (1 + Math.exp(-x))),
  },
  {
    name: "gelu",
    shapes: [[3, 3]],
    f32: ([a]) => ops.gelu(a),
    f64: ([a]) =>
      R.map(a, (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)))),
  },
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
  {
    name: "linear",
    shapes: [[2, 3], [4, 3], [4]],
    f32: ([x, w, b]) => ops.linear(x, w, b),
    f64: ([x, w, b]) => R.zip(R.matmul(x, R.viewOp(w, (t) => t.T.contiguous())), b, (p, q) => p + q),
  },
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
  {
    name: "mean",
    shapes: [[4, 3]],
    f32: ([a]) => ops.mean(a, -1),
    f64: ([a]) => R.reduce(a, [1], false, (v) => v.reduce((s, x) => s + x, 0) / v.length),
  },
  {
    name: "max",
    shapes: [[3, 5]],
    f32: ([a]) => ops.max(a, 1),
    f64: ([a]) => R.reduce(a, [1], false, (v) => Math.max(...v)),
  },
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
  {
    name: "logSoftmax",
    shapes: [[2, 6]],
    f32: ([a]) => ops.logSoftmax(a),
    f64: ([a]) => R.softmax(a, 1, true),
  },
  {
    name: "permute",
    shapes: [[2, 3, 4]],
    f32: ([a]) => ops.permute(a, [2, 0, 1]),
    f64: ([a]) => R.viewOp(a, (t) => t.permute([2, 0, 1])),
  },
  {
    name: "slice with step",
    shapes: [[7, 3]],
    f32: ([a]) => ops.slice(a, 0, 1, 7, 2),
    f64: ([a]) => R.viewOp(a, (t) => t.slice(0, 1, 7, 2)),
  },
  {
    name: "select",
    shapes: [[3, 4]],
    f32: ([a]) => ops.select(a, 1, 2),
    f64: ([a]) => R.viewOp(a, (t) => t.select(1, 2)),
  },
  {
    name: "flip",
    shapes: [[3, 4]],
    f32: ([a]) => ops.flip(a, 1),
    f64: ([a]) => R.viewOp(a, (t) => t.flip(1)),
  },
  {
    name: "expand",
    shapes: [[3, 1]],
    f32: ([a]) => ops.expand(a, [2, 3, 4]),
    f64: ([a]) => R.viewOp(a, (t) => t.expand([2, 3, 4])),
  },
  {
    name: "unsqueeze and squeeze",
    shapes: [[3, 1, 2]],
    f32: ([a]) => ops.unsqueeze(ops.squeeze(a, 1), 0),
    f64: ([a]) => R.f64([1, 3, 2], a.data),
  },
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
  { name: "contiguous", shapes: [[3, 4]], f32: ([a]) => ops.contiguous(a), f64: ([a]) => a, strided: true },
  {
    name: "cast to F64 and back",
    shapes: [[5]],
    f32: ([a]) => ops.cast(ops.mul(ops.cast(a, DType.F64).cast(DType.F32), 2), DType.F32),
    f64: ([a]) => R.map(a, (x) => 2 * x),
  },
  {
    name: "maxPool2d",
    shapes: [[1, 2, 5, 5]],
    f32: ([a]) => ops.maxPool2d(a, { kernel: 3, stride: 2, padding: 1 }),
    f64: ([a]) => R.maxPool2d(a, [3, 3], [2, 2], [1, 1]),
  },
  {
    name: "crossEntropy",
    shapes: [[4, 3]],
    f32: ([a]) => ops.crossEntropy(a, Tensor.from([0, 2, 1, 2], [4], { dtype: DType.I32 })),
    f64: ([a]) => {
      const logp = R.softmax(a, 1, true);
      const picks = [0, 2, 1, 2].map((t, i) => logp.data[i * 3 + t]);
      return R.f64([], [-picks.reduce((s, x) => s + x, 0) / 4]);
    },
  },
];

for (const mode of ["exact", "fast"] as const) {
  test(`gradients match central differences of the f64 reference (${mode} mode)`, () => {
    for (const c of cases) R.checkGradients(c, mode);
  });
}

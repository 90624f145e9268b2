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
      name: "gelu",
      shapes: [[3, 3]],
      f32: ([a]) => ops.gelu(a),
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
  ],
  crossEntropy: [
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
  ],
  batchNorm: [
    {
      name: "batchNorm (training, NCHW)",
      shapes: [[3, 2, 3, 2], [2], [2]],
      f32: ([x, w, b]) => ops.batchNorm(x, null, null, { training: true, weight: w, bias: b }),
      f64: ([x, w, b]) => R.batchNorm(x, null, w, b, 1e-5),
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
      f64: ([a]) => R.f64([], [-(a.data[3] + a.data[4] + a.data[9]) / 3]),
    },
  ],
  attention: [
    {
      name: "attention (q, k, v)",
      shapes: [[2, 3, 4], [2, 4, 4], [2, 4, 5]],
      f32: ([q, k, v]) => ops.attention(q, k, v),
      f64: ([q, k, v]) => R.attention(q, k, v, null, false, 0.5),
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
};

/** The differentiable operators of the table, by walking it. */
export function differentiableOps(): DifferentiableOp[] {
  return (Object.keys(OPS) as OpName[]).filter((op): op is DifferentiableOp => OPS[op].grad !== "none");
}

/**
 * One backward rule per recorded op, in one table, each with its formula. A rule takes the record and the
 * gradient of the op's output and returns one gradient per input (null where the input needs none), each of
 * the input's shape. Rules run with recording off, under the forward pass's compute settings.
 *
 * @module
 */
import { DType } from "../core/dtype.ts";
import { computeSettings, kernels } from "../context.ts";
import { formatShape } from "../core/shape.ts";
import {
  allocate,
  allocateOutput,
  dtypeOf,
  offsetOf,
  operandOf,
  rankOf,
  shapeOf,
  sizeOf,
  stridesOf,
  type Tensor,
} from "../tensor.ts";
import { add, div, eq, gt, log, lt, mul, neg, pow, sub } from "../ops/elementwise.ts";
import { ge, le, minimum, sigmoid, where } from "../ops/elementwise.ts";
import { matmul } from "../ops/linalg.ts";
import { prod, sum } from "../ops/reduce.ts";
import { cumsum, gather, scatterAdd } from "../ops/indexing.ts";
import { expand, flip, permute, reshape, select, slice, transpose, viewOf } from "../ops/views.ts";
import { cast, contiguous, copyInto } from "../ops/copy.ts";
import { erf, exp } from "../ops/elementwise.ts";
import { conv2d, fold, productParams, unfold, type WindowGeometry } from "../ops/conv.ts";
import { ctcLossBackward, gruBackward, lstmBackward } from "../ops/sequence.ts";
import { classLossBackward } from "../ops/losses.ts";
import { maxPool2dBackward } from "../ops/pool.ts";
import { attentionBackward, embeddingBackward } from "../ops/nn.ts";
import { binaryKernel } from "../ops/common.ts";
import { kernelCode } from "../core/op_table.ts";
import { batchNormBackward, layerNormBackward } from "../ops/norm.ts";
import type { AutogradNode, BackwardRecord, OpKind } from "./record.ts";

/** The gradients of a record's inputs from the gradient of its output. */
export type BackwardRule<K extends OpKind = OpKind> = (
  record: BackwardRecord<K>,
  g: Tensor,
) => (Tensor | null)[];

/** Sums `g` down to `shape` over the axes broadcasting stretched (leading axes, and extent-1 axes). */
export function sumToShape(g: Tensor, shape: readonly number[]): Tensor {
  if (rankOf(g) === shape.length && shapeOf(g).every((e, i) => e === shape[i])) return g;
  const lead = rankOf(g) - shape.length;
  const axes: number[] = [];
  for (let i = 0; i < rankOf(g); i++) {
    if (i < lead || (shape[i - lead] === 1 && shapeOf(g)[i] !== 1)) axes.push(i);
  }
  const reduced = axes.length === 0 ? g : sum(g, axes, { keepDims: true });
  return reshape(reduced, shape);
}

/** Zeros of `shape` with `g` written into the region `region` picks out of them. */
function scatterInto(shape: readonly number[], g: Tensor, region: (zeros: Tensor) => Tensor): Tensor {
  const zeros = allocate("backward", shape, DType.F32, true, { scoped: true });
  copyInto(region(zeros), g);
  return zeros;
}

/** `mask` (Bool) as 0/1 F32. */
function asFloat(mask: Tensor): Tensor {
  return cast(mask, DType.F32);
}

/** A keepDims-shaped view of a reduction's gradient, for broadcasting back over the input. */
function keptGradient(record: BackwardRecord<"Sum" | "Mean" | "Max" | "Min" | "Prod">, g: Tensor): Tensor {
  const { keepDims, axes } = record.attrs;
  if (keepDims) return g;
  const shape = record.inputShape(0).map((extent, i) => (axes.includes(i) ? 1 : extent));
  return reshape(g, shape);
}

/** Whether `node` is the record of a transpose of the last two axes (what `linear` makes of its weight). */
function isMatrixTranspose(node: AutogradNode | null): boolean {
  if (node === null || !("op" in node) || node.op !== "Permute") return false;
  const dims = (node as BackwardRecord<"Permute">).attrs.dims;
  return dims.every((d, i) => d === (i < dims.length - 2 ? i : 2 * dims.length - 3 - i));
}

/**
 * dB = Aᵀ·g of a matmul. A matrix B (rank 2) against a batched A takes one product over the batch's rows
 * folded together, not one per batch summed after. When B is the transpose of a matrix (a linear layer's
 * weight), dB is computed as (gᵀ·A)ᵀ, so that the transpose's own gradient (its inverse permutation) is
 * contiguous and its leaf takes it without a copy.
 */
function matMulRightGradient(r: BackwardRecord<"MatMul">, g: Tensor): Tensor {
  const shape = r.inputShape(1);
  let a = r.savedTensor(0);
  if (shape.length === 2 && rankOf(a) > 2) {
    const [k, n] = shape;
    a = reshape(a, [sizeOf(a) / k, k]);
    g = reshape(g, [sizeOf(g) / n, n]);
  }
  if (isMatrixTranspose(r.inputs[1].node)) {
    return sumToShape(transpose(matmul(transpose(g, -1, -2), a), -1, -2), shape);
  }
  return sumToShape(matmul(transpose(a, -1, -2), g), shape);
}

const TWO_OVER_SQRT_PI = 2 / Math.sqrt(Math.PI);

const rules: { readonly [K in OpKind]: BackwardRule<K> } = {
  // d(a + b) = g, summed to each input's shape.
  Add: (
    r,
    g,
  ) => [
    r.needsGrad(0) ? sumToShape(g, r.inputShape(0)) : null,
    r.needsGrad(1) ? sumToShape(g, r.inputShape(1)) : null,
  ],
  // d(a − b): g for a, −g for b.
  Sub: (
    r,
    g,
  ) => [
    r.needsGrad(0) ? sumToShape(g, r.inputShape(0)) : null,
    r.needsGrad(1) ? sumToShape(neg(g), r.inputShape(1)) : null,
  ],
  // da = g·b (slot 1), db = g·a (slot 0).
  Mul: (r, g) => [
    r.needsGrad(0) ? sumToShape(mul(g, r.savedTensor(1)), r.inputShape(0)) : null,
    r.needsGrad(1) ? sumToShape(mul(g, r.savedTensor(0)), r.inputShape(1)) : null,
  ],
  // da = g/b, db = −g·a/b².
  Div: (r, g) => {
    const b = r.savedTensor(1);
    const da = r.needsGrad(0) ? sumToShape(div(g, b), r.inputShape(0)) : null;
    const db = r.needsGrad(1)
      ? sumToShape(neg(div(mul(g, r.savedTensor(0)), mul(b, b))), r.inputShape(1))
      : null;
    return [da, db];
  },
  // −g.
  Neg: (_, g) => [neg(g)],
  // g where the output is not ≤ 0 (+0 elsewhere, PyTorch's threshold_backward), one kernel call.
  Relu: (r, g) => [binaryKernel("relu backward", kernelCode("binary", "reluBackward"), g, r.savedTensor(0))],
  // dA = g·Bᵀ, dB = Aᵀ·g, the transposes being strided views of the saved tensors.
  MatMul: (r, g) => [
    r.needsGrad(0) ? sumToShape(matmul(g, transpose(r.savedTensor(1), -1, -2)), r.inputShape(0)) : null,
    r.needsGrad(1) ? matMulRightGradient(r, g) : null,
  ],
  // Each output gradient is added at its winner (saved: its position within its plane), by the indexAdd kernel.
  MaxPool2d: (r, g) => [maxPool2dBackward(g, r.savedTensor(0), r.inputShape(0), r.attrs)],
  // The gradient cast back to the input's dtype.
  Cast: (r, g) => [dtypeOf(g) === r.inputDType(0) ? g : cast(g, r.inputDType(0))],
  // Zeros of the input shape with g written into the slice.
  Slice: (r, g) => {
    const { axis, start, end, step } = r.attrs;
    return [scatterInto(r.inputShape(0), g, (z) => slice(z, axis, start, end, step))];
  },
  // The inverse permutation.
  Permute: (r, g) => {
    const inverse = new Array<number>(r.attrs.dims.length);
    r.attrs.dims.forEach((d, i) => (inverse[d] = i));
    return [permute(g, inverse)];
  },
  // g reshaped to the input shape.
  Reshape: (r, g) => [reshape(g, r.inputShape(0))],
  // g summed down to the input shape.
  Expand: (r, g) => [sumToShape(g, r.inputShape(0))],
  // g flipped back.
  Flip: (r, g) => [flip(g, r.attrs.axis)],
  // Zeros of the input shape with g written at the index.
  Select: (r, g) => [scatterInto(r.inputShape(0), g, (z) => select(z, r.attrs.axis, r.attrs.index))],
  // d eˣ = g·eˣ (the saved output).
  Exp: (r, g) => [mul(g, r.savedTensor(0))],
  // d ln x = g/x.
  Log: (r, g) => [div(g, r.savedTensor(0))],
  // d √x = g/(2√x).
  Sqrt: (r, g) => [div(g, mul(r.savedTensor(0), 2))],
  // d tanh x = g·(1 − tanh²x).
  Tanh: (r, g) => {
    const y = r.savedTensor(0);
    return [mul(g, sub(1, mul(y, y)))];
  },
  // d σ(x) = g·σ(x)·(1 − σ(x)).
  Sigmoid: (r, g) => {
    const y = r.savedTensor(0);
    return [mul(g, mul(y, sub(1, y)))];
  },
  // Erf form: d gelu = Φ(x) + x·φ(x) = 0.5·(1 + erf(x/√2)) + x·e^(−x²/2)/√(2π) (slot 0: x).
  // Tanh form: g·(0.5·(1 + t) + 0.5·x·(1 − t²)·c·(1 + 3a·x²)), t = tanh(c·(x + a·x³)): one GeluBackward kernel
  // call from g and the saved x (PyTorch's gelu_backward), which computes t itself.
  Gelu: (r, g) => {
    const x = r.savedTensor(0);
    if (r.attrs.approximate === "none") {
      const cdf = mul(add(erf(mul(x, Math.SQRT1_2)), 1), 0.5);
      const density = mul(exp(mul(mul(x, x), -0.5)), 1 / Math.sqrt(2 * Math.PI));
      return [mul(g, add(cdf, mul(x, density)))];
    }
    return [binaryKernel("gelu backward", kernelCode("binary", "geluBackward"), g, x)];
  },
  // g broadcast back over the reduced axes.
  Sum: (r, g) => [expand(keptGradient(r, g), r.inputShape(0))],
  // g/count broadcast back over the reduced axes.
  Mean: (r, g) => {
    const count = r.attrs.axes.reduce((n, a) => n * r.inputShape(0)[a], 1);
    return [expand(div(keptGradient(r, g), count), r.inputShape(0))];
  },
  // g shared among the positions equal to the maximum.
  Max: (r, g) => maxBackward(r, g),
  // The same for the minimum.
  Min: (r, g) => maxBackward(r, g),
  // g times the product of the other elements (slots: input, output; see prodBackward).
  Prod: (r, g) => [prodBackward(r, g)],
  // g added into zeros at the gathered positions (slot 0: the index).
  Gather: (r, g) => {
    const zeros = allocate("backward", r.inputShape(0), DType.F32, true, { scoped: true });
    return [scatterAdd(zeros, r.attrs.axis, r.savedTensor(0), g)];
  },
  // g for the input; g gathered at the index for src (slot 0: the index).
  ScatterAdd: (r, g) => [
    r.needsGrad(0) ? g : null,
    r.needsGrad(1) ? gather(g, r.attrs.axis, r.savedTensor(0)) : null,
  ],
  // The running sum of g from the end.
  CumSum: (r, g) => [flip(cumsum(flip(g, r.attrs.axis), r.attrs.axis), r.attrs.axis)],
  // d|x| = g·sign(x), 0 at 0 (slot 0: x).
  Abs: (r, g) => {
    const x = r.savedTensor(0);
    return [mul(g, sub(asFloat(gt(x, 0)), asFloat(lt(x, 0))))];
  },
  // d erf x = g·(2/√π)·e^(−x²) (slot 0: x).
  Erf: (r, g) => {
    const x = r.savedTensor(0);
    return [mul(g, mul(exp(neg(mul(x, x))), TWO_OVER_SQRT_PI))];
  },
  // d max(a, b): g to the larger side, half to each at a tie (slots: a, b).
  Maximum: (r, g) => tieSplit(r, g, gt),
  // d min(a, b): g to the smaller side, half to each at a tie.
  Minimum: (r, g) => tieSplit(r, g, lt),
  // d aᵇ: da = g·b·aᵇ⁻¹ (0 where b = 0), db = g·aᵇ·ln a (0 where a = 0 and b ≥ 0), as PyTorch (slots: a, b).
  Pow: (r, g) => {
    const a = r.savedTensor(0);
    const b = r.savedTensor(1);
    let da: Tensor | null = null;
    if (r.needsGrad(0)) {
      // b − 1 + [b = 0] keeps aᵇ⁻¹ finite where b = 0, and the factor b makes that term 0.
      const slope = mul(b, pow(a, add(sub(b, 1), asFloat(eq(b, 0)))));
      da = sumToShape(mul(g, slope), r.inputShape(0));
    }
    let db: Tensor | null = null;
    if (r.needsGrad(1)) {
      // ln(a + [a = 0]) is 0 where a = 0; aᵇ there is 0 for b > 0 and 1 for b = 0, so the term is 0.
      const logA = log(add(a, asFloat(eq(a, 0))));
      db = sumToShape(mul(g, mul(pow(a, b), logA)), r.inputShape(1));
    }
    return [da, db];
  },
  // dx = y·(g − Σ g·y), the sum over the softmax axis.
  Softmax: (r, g) => {
    const y = r.savedTensor(0);
    const dot = sum(mul(g, y), r.attrs.axis, { keepDims: true });
    return [mul(y, sub(g, dot))];
  },
  // dx = g − eʸ·Σ g, the sum over the axis.
  LogSoftmax: (r, g) => {
    const y = r.savedTensor(0);
    return [sub(g, mul(exp(y), sum(g, r.attrs.axis, { keepDims: true })))];
  },
  // −g/N at each row's target.
  // Both from the saved target, weight and work (each row's log-sum-exp, the mean's divisor), one kernel call
  // per gradient: nllLoss −g·w_t at each target; crossEntropy g·(softmax·Σ_c w_c·q_c − w·q) per row (q the
  // target distribution: one-hot or probabilities, smoothed), and for probability targets (1 − ε)·g·w·(lse − x).
  NllLoss: (r, g) => classLossBackward(r, g),
  CrossEntropy: (r, g) => classLossBackward(r, g),
  // Each input's gradient is its slice of g along the axis (attributes: the axis and each input's extent).
  Concat: (r, g) => {
    const { axis, sizes } = r.attrs;
    let start = 0;
    return sizes.map((size, i) => {
      start += size;
      return r.needsGrad(i) ? slice(g, axis, start - size, start) : null;
    });
  },
  // y = x̂·w + b, x̂ = (x − μ)·rstd over the last k axes: with ĝ = g·w,
  // dx = rstd·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)); dw = Σ g·x̂ and db = Σ g over the leading axes (one kernel call).
  LayerNorm: (r, g) => layerNormBackward(r, g),
  // The same per channel, over every axis but 1, with the batch statistics (training); with the running
  // statistics (evaluation) they are constants and dx = ĝ·rstd (one kernel call).
  BatchNorm: (r, g) => batchNormBackward(r, g),
  // Per group: dx = col2im(Wᵀ·g), dW = Σₙ g·colsᵀ (the input unfolded again), db = Σ g over N, OH, OW.
  Conv2d: (r, g) => conv2dBackward(r, g),
  // dx = conv2d(g, W) (the forward of the conv2d this is the input gradient of); dW = Σₙ x·unfold(g)ᵀ per
  // group; db = Σ g over N, OH, OW.
  ConvTranspose2d: (r, g) => convTranspose2dBackward(r, g),
  // Each output's gradient, divided by its divisor (KH·KW, or saved slot 0 [OH, OW]), is added back over its
  // window (col2im of a broadcast view); ceil mode's extra right padding is folded as input and cut away.
  AvgPool2d: (r, g) => {
    const { kernel: [kh, kw], stride, padding } = r.attrs;
    const [eh, ew] = r.attrs.extra ?? [0, 0];
    const [n, c, h, w] = r.inputShape(0);
    const [, , oh, ow] = shapeOf(g);
    const geometry = windowGeometry([kh, kw], [...stride], [...padding], [1, 1], [oh, ow]);
    const scaled = div(g, r.saved.length > 0 ? r.savedTensor(0) : kh * kw);
    const s = stridesOf(scaled);
    const windows = viewOf(scaled, {
      shape: [n, c, kh, kw, oh, ow],
      strides: [s[0], s[1], 0, 0, s[2], s[3]],
      offset: offsetOf(scaled),
    });
    const folded = fold("backward", windows, geometry, [n, c, h + eh, w + ew]);
    return [eh === 0 && ew === 0 ? folded : slice(slice(folded, 2, 0, h), 3, 0, w)];
  },
  // Each looked-up row's gradient is added to its table row, in lookup order, except the padding row's.
  // From the saved q, k, v, mask, output and log-sum-exp, one kernel call: P = exp(s − lse) recomputed per
  // tile, dv = Pᵀ·g, dS = P·(g·vᵀ − rowsum(g·out)), dq = scale·dS·k, dk = scale·dSᵀ·q.
  Attention: (r, g) => attentionBackward(r, g),
  Embedding: (r, g) => [embeddingBackward(g, r.savedTensor(0), r.inputShape(0), r.attrs.paddingIdx)],
  // d(−log p)/d lp[t, n, c] = −Σ_{s: l′ₛ = c} α_t(s)·β_t(s) / (y_t(c)·p), computed by the forward pass's
  // kernel in f64 times the reduction factor (slot 0), times g here (attribute: the reduction).
  CtcLoss: (r, g) => [ctcLossBackward(r.savedTensor(0), r.attrs, g)],
  // Backward through time: per step one cell kernel call (the gate gradients stacked over steps, dh and dc
  // carried) and one product with W_hh; then the weight gradients over every step in one product each.
  Lstm: (r, g) => lstmBackward(r, g),
  Gru: (r, g) => gruBackward(r, g),
  // --- Issue 12's element-wise ops, PyTorch's formulas ---
  // d ln(1 + x) = g/(x + 1) (slot 0: x).
  Log1p: (r, g) => [div(g, add(r.savedTensor(0), 1))],
  // d(eˣ − 1) = g·(y + 1) (slot 0: y).
  Expm1: (r, g) => [mul(g, add(r.savedTensor(0), 1))],
  // d silu = g·σ(x)·(1 + x·(1 − σ(x))) (slot 0: x).
  Silu: (r, g) => {
    const x = r.savedTensor(0);
    const s = sigmoid(x);
    return [mul(g, mul(s, add(mul(x, sub(1, s)), 1)))];
  },
  // d softplus = g where beta·x > threshold, else g·σ(beta·x) (slot 0: x).
  Softplus: (r, g) => {
    const z = mul(r.savedTensor(0), r.attrs.beta);
    const above = asFloat(gt(z, r.attrs.threshold));
    return [mul(g, add(above, mul(sub(1, above), sigmoid(z))))];
  },
  // g where x > 0, else g·slope (NaN takes the slope, as PyTorch's x > 0 test) (slot 0: x).
  LeakyRelu: (r, g) => {
    const positive = asFloat(gt(r.savedTensor(0), 0));
    return [mul(g, add(positive, mul(sub(1, positive), r.attrs.negativeSlope)))];
  },
  // g·alpha·eˣ where x ≤ 0, else g (slot 0: x; eˣ of min(x, 0), so large x gives no ∞·0).
  Elu: (r, g) => {
    const x = r.savedTensor(0);
    const negative = asFloat(le(x, 0));
    const slope = mul(exp(minimum(x, 0)), r.attrs.alpha);
    return [mul(g, add(sub(1, negative), mul(negative, slope)))];
  },
  // Number bounds: g where min < x < max strictly, 0 at a bound and at NaN (PyTorch 2.15) (slot 0: x).
  // Tensor bounds: see clampTensorsBackward.
  Clamp: (r, g) => {
    if (r.attrs.bounds !== undefined) return clampTensorsBackward(r, g);
    const x = r.savedTensor(0);
    let pass: Tensor | null = null;
    if (r.attrs.min !== -Infinity) pass = asFloat(gt(x, r.attrs.min));
    if (r.attrs.max !== Infinity) {
      const below = asFloat(lt(x, r.attrs.max));
      pass = pass === null ? below : mul(pass, below);
    }
    return [pass === null ? g : mul(g, pass)];
  },
  // g unless x ≤ min or x ≥ max (NaN passes), as PyTorch's hardtanh_backward (slot 0: x).
  Hardtanh: (r, g) => {
    const x = r.savedTensor(0);
    const pass = mul(sub(1, asFloat(le(x, r.attrs.min))), sub(1, asFloat(ge(x, r.attrs.max))));
    return [mul(g, pass)];
  },
  // d(1/x) = −g·y² (slot 0: y).
  Reciprocal: (r, g) => {
    const y = r.savedTensor(0);
    return [neg(mul(g, mul(y, y)))];
  },
  // d x^(−1/2) = −0.5·g·y³ (slot 0: y).
  Rsqrt: (r, g) => {
    const y = r.savedTensor(0);
    return [mul(mul(g, mul(mul(y, y), y)), -0.5)];
  },
  // d x² = g·2x (slot 0: x).
  Square: (r, g) => [mul(g, mul(r.savedTensor(0), 2))],
  // g to a where the condition holds, to b elsewhere, each summed to its shape (slot 0: the condition).
  Where: (r, g) => [
    r.needsGrad(0) ? sumToShape(where(r.savedTensor(0), g, 0), r.inputShape(0)) : null,
    r.needsGrad(1) ? sumToShape(where(r.savedTensor(0), 0, g), r.inputShape(1)) : null,
  ],
};

/**
 * The gradients of clamp with tensor bounds, PyTorch 2.15's (checked against it on every ordering of x, min
 * and max with ties and NaN, tests/fixtures/cases/elementwise.py), each summed to its input's shape
 * (slots: x, then the tensor bounds):
 * - one bound b (min: `wins` = gt, max: lt), PyTorch's maximum/minimum rule: x gets g where x wins over b,
 *   b where b wins, each half at a tie, both all of it where either is NaN;
 * - both: with below = x < min, above = x > max, ordered = min < max, tie = x equal to a bound when ordered,
 *   x gets g·(1 − below)(1 − above)·(½ at a tie), min g·(below·[min ≤ max] + ½·[x = min, ordered]) and max
 *   g·([min > max] + above·[min ≤ max] + ½·[x = max, ordered]).
 */
function clampTensorsBackward(r: BackwardRecord<"Clamp">, g: Tensor): (Tensor | null)[] {
  const x = r.savedTensor(0);
  const reduce = (
    i: number,
    grad: Tensor,
  ) => (r.needsGrad(i) ? sumToShape(mul(g, grad), r.inputShape(i)) : null);
  if (r.attrs.bounds !== "both") {
    const b = r.savedTensor(1);
    const [xWins, bWins] = r.attrs.bounds === "min" ? [gt(x, b), gt(b, x)] : [lt(x, b), lt(b, x)];
    const half = mul(asFloat(eq(x, b)), 0.5);
    return [reduce(0, sub(sub(1, asFloat(bWins)), half)), reduce(1, sub(sub(1, asFloat(xWins)), half))];
  }
  const lo = r.savedTensor(1);
  const hi = r.savedTensor(2);
  const below = asFloat(lt(x, lo));
  const above = asFloat(gt(x, hi));
  const ordered = asFloat(lt(lo, hi));
  const loTie = mul(asFloat(eq(x, lo)), ordered);
  const hiTie = mul(asFloat(eq(x, hi)), ordered);
  const reach = asFloat(le(lo, hi));
  const inside = mul(mul(sub(1, below), sub(1, above)), sub(1, mul(add(loTie, hiTie), 0.5)));
  return [
    reduce(0, inside),
    reduce(1, add(mul(below, reach), mul(loTie, 0.5))),
    reduce(2, add(add(asFloat(gt(lo, hi)), mul(above, reach)), mul(hiTie, 0.5))),
  ];
}

/** g shared among the positions equal to the extremum (Max and Min; slots: input, output). */
function maxBackward(r: BackwardRecord<"Max" | "Min">, g: Tensor): (Tensor | null)[] {
  const x = r.savedTensor(0);
  const y = keptGradient(r, r.savedTensor(1));
  const mask = asFloat(eq(x, y));
  const ties = sum(mask, r.attrs.axes, { keepDims: true });
  return [mul(mask, div(keptGradient(r, g), ties))];
}

/**
 * The gradient of a product: g·Π_{j≠i} x_j. With no zero in a reduced group that is g·out/x; with one zero it is
 * g·(product of the non-zeros) at the zero and 0 elsewhere; with more it is 0 (PyTorch's cases).
 */
function prodBackward(r: BackwardRecord<"Prod">, g: Tensor): Tensor {
  const x = r.savedTensor(0);
  const { axes } = r.attrs;
  const isZero = asFloat(eq(x, 0));
  // x with its zeros replaced by 1, and its product: the product of the non-zeros.
  const nonZero = add(x, isZero);
  const others = prod(nonZero, axes, { keepDims: true });
  const zeros = sum(isZero, axes, { keepDims: true });
  const none = mul(asFloat(eq(zeros, 0)), div(others, nonZero));
  const one = mul(mul(asFloat(eq(zeros, 1)), isZero), others);
  return mul(expand(keptGradient(r, g), r.inputShape(0)), add(none, one));
}

/** The gradients of max(a, b) (`wins` = gt) or min(a, b) (`wins` = lt): g where a wins, half at ties. */
function tieSplit(r: BackwardRecord, g: Tensor, wins: (a: Tensor, b: Tensor) => Tensor): (Tensor | null)[] {
  const a = r.savedTensor(0);
  const b = r.savedTensor(1);
  const half = mul(asFloat(eq(a, b)), 0.5);
  return [
    r.needsGrad(0) ? sumToShape(mul(g, add(asFloat(wins(a, b)), half)), r.inputShape(0)) : null,
    r.needsGrad(1) ? sumToShape(mul(g, add(asFloat(wins(b, a)), half)), r.inputShape(1)) : null,
  ];
}

function windowGeometry(
  kernel: [number, number],
  stride: [number, number],
  padding: [number, number],
  dilation: [number, number],
  output: [number, number],
): WindowGeometry {
  return { kernel, stride, padding, dilation, output };
}

function conv2dBackward(r: BackwardRecord<"Conv2d">, g: Tensor): (Tensor | null)[] {
  const { kernel: [kh, kw], stride, padding, dilation, groups } = r.attrs;
  const input = r.inputShape(0);
  const weightShape = r.inputShape(1);
  const [n, c] = input;
  const [o, cg] = weightShape;
  const [oh, ow] = shapeOf(g).slice(2);
  const geometry = windowGeometry([kh, kw], [...stride], [...padding], [...dilation], [oh, ow]);
  let dx: Tensor | null = null;
  const [dh, dw] = dilation;
  if (
    r.needsGrad(0) && isStrideOne(stride) && groups === 1 && padding[0] <= dh * (kh - 1) &&
    padding[1] <= dw * (kw - 1)
  ) {
    // The stride-1 convolution of g by the weights with in and out channels swapped and the taps flipped, as
    // one implicit-GEMM call: each element one sum over (o, ky, kx) of the flipped taps, no column matrix.
    const flipped = flip(flip(transpose(r.savedTensor(1), 0, 1), 2), 3);
    const back = windowGeometry(
      [kh, kw],
      [1, 1],
      [dh * (kh - 1) - padding[0], dw * (kw - 1) - padding[1]],
      [dh, dw],
      [input[2], input[3]],
    );
    dx = allocateOutput("backward", input, DType.F32);
    kernels().convProduct(
      productParams(shapeOf(g), back, 1, c),
      "forward",
      operandOf(dx, "backward"),
      operandOf(flipped, "backward"),
      operandOf(g, "backward"),
      computeSettings(),
    );
  } else if (r.needsGrad(0)) {
    // Strided or grouped: the columns Wᵀ·g, folded back by col2im.
    const k = cg * kh * kw;
    const weightT = transpose(reshape(r.savedTensor(1), [groups, o / groups, k]), -1, -2);
    const columns = matmul(weightT, reshape(g, [n, groups, o / groups, oh * ow]));
    dx = fold("backward", reshape(columns, [n, c, kh, kw, oh, ow]), geometry, input);
  }
  let dWeight: Tensor | null = null;
  if (r.needsGrad(1)) {
    // Each image's weight gradient by one implicit-GEMM call (no column matrix), then the sum over images.
    const x = r.savedTensor(0);
    const gradient = convGradientOperand(g);
    const perImage = allocateOutput("backward", [n, o, cg, kh, kw], DType.F32);
    kernels().convProduct(
      productParams(shapeOf(x), geometry, groups, o),
      "weight",
      operandOf(perImage, "backward"),
      operandOf(gradient, "backward"),
      operandOf(x, "backward"),
      computeSettings(),
    );
    if (gradient !== g) gradient.dispose();
    dWeight = sum(perImage, 0);
    perImage.dispose();
  }
  if (r.inputs.length === 2) return [dx, dWeight];
  return [dx, dWeight, r.needsGrad(2) ? sum(g, [0, 2, 3]) : null];
}

/** Whether a window sweep steps by one along both axes. */
function isStrideOne(stride: readonly [number, number]): boolean {
  return stride[0] === 1 && stride[1] === 1;
}

/** `g` [N, O, OH, OW], or a contiguous copy when its OH and OW axes do not read as one flat axis. */
function convGradientOperand(g: Tensor): Tensor {
  const [oh, ow] = shapeOf(g).slice(2);
  const flat = oh === 1 || ow === 1 || stridesOf(g)[2] === stridesOf(g)[3] * ow;
  return flat ? g : contiguous(g);
}

function convTranspose2dBackward(r: BackwardRecord<"ConvTranspose2d">, g: Tensor): (Tensor | null)[] {
  const { kernel: [kh, kw], stride, padding, dilation, groups } = r.attrs;
  const input = r.inputShape(0);
  const weightShape = r.inputShape(1);
  const [n, c, h, w] = input;
  const og = weightShape[1];
  const geometry = windowGeometry([kh, kw], [...stride], [...padding], [...dilation], [h, w]);
  let dx: Tensor | null = null;
  if (r.needsGrad(0)) {
    const options = { stride: [...stride] as [number, number], padding: [...padding] as [number, number] };
    const full = conv2d(g, r.savedTensor(1), {
      ...options,
      dilation: [...dilation] as [number, number],
      groups,
    });
    // An output padding of at least the stride (allowed below the dilation) gives rows past the input's.
    dx = shapeOf(full)[2] === h && shapeOf(full)[3] === w ? full : slice(slice(full, 2, 0, h), 3, 0, w);
  }
  let dWeight: Tensor | null = null;
  if (r.needsGrad(1)) {
    const columns = unfold("backward", g, geometry);
    const k = og * kh * kw;
    const x = reshape(r.savedTensor(0), [n, groups, c / groups, h * w]);
    const perImage = matmul(x, transpose(reshape(columns, [n, groups, k, h * w]), -1, -2));
    dWeight = reshape(sum(perImage, 0), weightShape);
  }
  if (r.inputs.length === 2) return [dx, dWeight];
  return [dx, dWeight, r.needsGrad(2) ? sum(g, [0, 2, 3]) : null];
}

/** The rule of `record`, with a check that each gradient has its input's shape. */
export function runRule(record: BackwardRecord, g: Tensor): (Tensor | null)[] {
  const grads = (rules[record.op] as BackwardRule)(record, g);
  grads.forEach((grad, i) => {
    const shape = record.inputShape(i);
    if (grad !== null && (rankOf(grad) !== shape.length || shapeOf(grad).some((e, d) => e !== shape[d]))) {
      throw new Error(
        `backward of ${record.op}: gradient ${i} has shape ${formatShape(shapeOf(grad))}, its input ${
          formatShape(shape)
        }`,
      );
    }
  });
  return grads;
}

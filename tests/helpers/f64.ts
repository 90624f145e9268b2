// Reference functions in f64 over plain row-major arrays, for gradient checks by central differences. They are
// written from the math, independently of the library's kernels; view operations reuse the library's views on
// F64 tensors (pure data movement, checked separately against the index-to-offset oracle).
import assert from "node:assert/strict";
import {
  ActivationScope,
  assertClose as assertCloseValues,
  DType,
  ops,
  Tensor,
  TensorCompute,
} from "../../mod.ts";
import { Xorshift128 } from "../../src/core/random.ts";

/** A row-major f64 array with its shape. */
export interface F64 {
  readonly shape: readonly number[];
  readonly data: Float64Array;
}

export function f64(shape: readonly number[], data: ArrayLike<number>): F64 {
  return { shape: [...shape], data: Float64Array.from(data) };
}

function size(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function stridesOf(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length);
  let step = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = step;
    step *= shape[i];
  }
  return s;
}

/** Calls `fn(index)` for every multi-index of `shape`, in row-major order. */
function forEachIndex(shape: readonly number[], fn: (index: number[], flat: number) => void): void {
  const n = size(shape);
  const index = new Array<number>(shape.length).fill(0);
  for (let flat = 0; flat < n; flat++) {
    fn(index, flat);
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

function broadcastShape(a: readonly number[], b: readonly number[]): number[] {
  const rank = Math.max(a.length, b.length);
  return Array.from({ length: rank }, (_, i) => {
    const ea = a[i - (rank - a.length)] ?? 1;
    const eb = b[i - (rank - b.length)] ?? 1;
    return ea === 1 ? eb : ea;
  });
}

function readBroadcast(x: F64, shape: readonly number[], index: readonly number[]): number {
  const lead = shape.length - x.shape.length;
  const strides = stridesOf(x.shape);
  let at = 0;
  for (let d = 0; d < x.shape.length; d++) at += (x.shape[d] === 1 ? 0 : index[d + lead]) * strides[d];
  return x.data[at];
}

export function zip(a: F64, b: F64, fn: (x: number, y: number) => number): F64 {
  const shape = broadcastShape(a.shape, b.shape);
  const out = new Float64Array(size(shape));
  forEachIndex(shape, (i, flat) => (out[flat] = fn(readBroadcast(a, shape, i), readBroadcast(b, shape, i))));
  return { shape, data: out };
}

export function map(a: F64, fn: (x: number) => number): F64 {
  return { shape: a.shape, data: a.data.map(fn) };
}

export function matmul(a: F64, b: F64): F64 {
  const [m, k] = a.shape.slice(-2);
  const n = b.shape[b.shape.length - 1];
  const batch = broadcastShape(a.shape.slice(0, -2), b.shape.slice(0, -2));
  const shape = [...batch, m, n];
  const out = new Float64Array(size(shape));
  forEachIndex(shape, (i, flat) => {
    let acc = 0;
    for (let p = 0; p < k; p++) {
      acc += readBroadcast(a, [...batch, m, k], [...i.slice(0, -2), i[i.length - 2], p]) *
        readBroadcast(b, [...batch, k, n], [...i.slice(0, -2), p, i[i.length - 1]]);
    }
    out[flat] = acc;
  });
  return { shape, data: out };
}

/** Reduces `axes` with `fn` over the values of each output position. */
export function reduce(
  a: F64,
  axes: readonly number[],
  keepDims: boolean,
  fn: (values: number[]) => number,
): F64 {
  const keptShape = a.shape.map((e, d) => (axes.includes(d) ? 1 : e));
  const groups = new Map<number, number[]>();
  const keptStrides = stridesOf(keptShape);
  forEachIndex(a.shape, (i, flat) => {
    let key = 0;
    for (let d = 0; d < i.length; d++) if (!axes.includes(d)) key += i[d] * keptStrides[d];
    const list = groups.get(key) ?? [];
    list.push(a.data[flat]);
    groups.set(key, list);
  });
  const data = new Float64Array(size(keptShape));
  for (let key = 0; key < data.length; key++) data[key] = fn(groups.get(key) ?? []);
  return { shape: keepDims ? keptShape : a.shape.filter((_, d) => !axes.includes(d)), data };
}

export function softmax(a: F64, axis: number, log: boolean): F64 {
  const max = reduce(a, [axis], true, (v) => Math.max(...v));
  const shifted = zip(a, max, (x, m) => x - m);
  const total = reduce(map(shifted, Math.exp), [axis], true, (v) => v.reduce((s, x) => s + x, 0));
  return log
    ? zip(shifted, total, (x, s) => x - Math.log(s))
    : zip(map(shifted, Math.exp), total, (e, s) => e / s);
}

/** The options of `classLoss`, PyTorch's `nll_loss` and `cross_entropy` arguments. */
export interface ClassLossSpec {
  /** Class indices per row (row-major over the input's shape without axis 1), or null for probabilities. */
  readonly targets: readonly number[] | null;
  /** Probabilities of the input's shape (when `targets` is null). */
  readonly probabilities?: F64;
  readonly weight?: readonly number[];
  readonly ignoreIndex?: number;
  readonly reduction?: "mean" | "sum" | "none";
  readonly labelSmoothing?: number;
  /** nllLoss: `x` holds log-probabilities. */
  readonly nll?: boolean;
}

/**
 * nllLoss or crossEntropy of `x` ([C], [N, C] or [N, C, d...]) from PyTorch's formulas: the loss of each row
 * is (1 − ε)·w_t·(−logp_t) + (ε/C)·Σ_c w_c·(−logp_c), or −Σ_c w_c·q_c·logp_c for probabilities y
 * (q = (1 − ε)·y + ε/C); "mean" divides by Σ w_t over the rows not ignored, or by the row count.
 */
export function classLoss(x: F64, spec: ClassLossSpec): F64 {
  const rank = x.shape.length;
  const axis = rank === 1 ? 0 : 1;
  const classes = x.shape[axis];
  const rowsShape = x.shape.filter((_, d) => d !== axis);
  const inner = rank <= 2 ? 1 : size(x.shape.slice(2));
  const rows = size(rowsShape);
  const at = (j: number, c: number) => {
    const n = Math.floor(j / inner);
    return (n * classes + c) * inner + (j % inner);
  };
  const eps = spec.labelSmoothing ?? 0;
  const w = (c: number) => spec.weight?.[c] ?? 1;
  const ignore = spec.ignoreIndex ?? -100;
  const losses = new Float64Array(rows);
  let divisor = 0;
  for (let j = 0; j < rows; j++) {
    const logp: number[] = [];
    if (spec.nll) {
      for (let c = 0; c < classes; c++) logp.push(x.data[at(j, c)]);
    } else {
      let m = -Infinity;
      for (let c = 0; c < classes; c++) m = Math.max(m, x.data[at(j, c)]);
      let s = 0;
      for (let c = 0; c < classes; c++) s += Math.exp(x.data[at(j, c)] - m);
      for (let c = 0; c < classes; c++) logp.push(x.data[at(j, c)] - m - Math.log(s));
    }
    if (spec.targets === null) {
      for (let c = 0; c < classes; c++) {
        const q = (1 - eps) * spec.probabilities!.data[at(j, c)] + eps / classes;
        losses[j] -= w(c) * q * logp[c];
      }
      divisor += 1;
      continue;
    }
    const t = spec.targets[j];
    if (t === ignore) continue;
    let smooth = 0;
    for (let c = 0; c < classes; c++) smooth -= w(c) * logp[c];
    losses[j] = (1 - eps) * -w(t) * logp[t] + (eps / classes) * smooth;
    divisor += w(t);
  }
  const reduction = spec.reduction ?? "mean";
  if (reduction === "none") return f64(rowsShape, losses);
  const total = losses.reduce((a, b) => a + b, 0);
  return f64([], [reduction === "sum" ? total : total / divisor]);
}

export function maxPool2d(
  x: F64,
  kernel: [number, number],
  stride: [number, number],
  pad: [number, number],
): F64 {
  const [n, c, h, w] = x.shape;
  const oh = Math.floor((h + 2 * pad[0] - kernel[0]) / stride[0]) + 1;
  const ow = Math.floor((w + 2 * pad[1] - kernel[1]) / stride[1]) + 1;
  const out = new Float64Array(n * c * oh * ow);
  forEachIndex([n, c, oh, ow], ([b, ch, oy, ox], flat) => {
    let best = -Infinity;
    for (let ky = 0; ky < kernel[0]; ky++) {
      for (let kx = 0; kx < kernel[1]; kx++) {
        const y = oy * stride[0] - pad[0] + ky;
        const xx = ox * stride[1] - pad[1] + kx;
        if (y >= 0 && y < h && xx >= 0 && xx < w) {
          best = Math.max(best, x.data[((b * c + ch) * h + y) * w + xx]);
        }
      }
    }
    out[flat] = best;
  });
  return { shape: [n, c, oh, ow], data: out };
}

/** A library view operation applied to f64 data (through an F64 tensor). */
export function viewOp(x: F64, op: (t: Tensor) => Tensor): F64 {
  using t = Tensor.from(x.data, [...x.shape], { dtype: DType.F64 });
  using v = op(t);
  return { shape: [...v.shape], data: Float64Array.from(v.toArray() as Float64Array) };
}

/** Σ out·weights. */
export function weightedSum(out: F64, weights: Float64Array): number {
  let s = 0;
  for (let i = 0; i < out.data.length; i++) s += out.data[i] * weights[i];
  return s;
}

// --- neural-network references (f64, from the definitions) ---

/** Element at a multi-index of a row-major F64. */
function at(x: F64, ...index: number[]): number {
  const strides = stridesOf(x.shape);
  let flat = 0;
  for (let d = 0; d < index.length; d++) flat += index[d] * strides[d];
  return x.data[flat];
}

/** A row-major F64 of `shape` filled by `fn(index)`. */
export function build(shape: readonly number[], fn: (index: number[]) => number): F64 {
  const data = new Float64Array(size(shape));
  forEachIndex(shape, (index, flat) => (data[flat] = fn(index)));
  return { shape: [...shape], data };
}

/** 2-D cross-correlation as PyTorch defines it, with groups, stride, padding and dilation pairs. */
export function conv2d(
  x: F64,
  w: F64,
  bias: F64 | null,
  geometry: { stride: number[]; padding: number[]; dilation: number[]; groups: number; output?: number[] },
): F64 {
  const { stride, padding, dilation, groups } = geometry;
  const [n, , h, wd] = x.shape;
  const [o, cg, kh, kw] = w.shape;
  // `output` (for asymmetric padding: `padding` is then the top/left side) overrides the symmetric extents.
  const oh = geometry.output?.[0] ??
    Math.floor((h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) / stride[0]) + 1;
  const ow = geometry.output?.[1] ??
    Math.floor((wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) / stride[1]) + 1;
  const perGroup = o / groups;
  return build([n, o, oh, ow], ([b, oc, oy, ox]) => {
    let acc = bias === null ? 0 : bias.data[oc];
    const group = Math.floor(oc / perGroup);
    for (let ci = 0; ci < cg; ci++) {
      for (let ky = 0; ky < kh; ky++) {
        for (let kx = 0; kx < kw; kx++) {
          const y = oy * stride[0] - padding[0] + ky * dilation[0];
          const xx = ox * stride[1] - padding[1] + kx * dilation[1];
          if (y < 0 || y >= h || xx < 0 || xx >= wd) continue;
          acc += at(x, b, group * cg + ci, y, xx) * at(w, oc, ci, ky, kx);
        }
      }
    }
    return acc;
  });
}

/** Average pooling with padding counted as zeros (divides by KH·KW). */
export function avgPool2d(x: F64, kernel: number[], stride: number[], padding: number[]): F64 {
  const [n, c, h, w] = x.shape;
  const oh = Math.floor((h + 2 * padding[0] - kernel[0]) / stride[0]) + 1;
  const ow = Math.floor((w + 2 * padding[1] - kernel[1]) / stride[1]) + 1;
  return build([n, c, oh, ow], ([b, ch, oy, ox]) => {
    let acc = 0;
    for (let ky = 0; ky < kernel[0]; ky++) {
      for (let kx = 0; kx < kernel[1]; kx++) {
        const y = oy * stride[0] - padding[0] + ky;
        const xx = ox * stride[1] - padding[1] + kx;
        if (y >= 0 && y < h && xx >= 0 && xx < w) acc += at(x, b, ch, y, xx);
      }
    }
    return acc / (kernel[0] * kernel[1]);
  });
}

/** Normalizes each group of positions that share a key: (x − mean)/√(biased var + eps). */
function normalizeGroups(x: F64, key: (index: number[]) => number, eps: number): F64 {
  const sums = new Map<number, number[]>();
  forEachIndex(x.shape, (index, flat) => {
    const list = sums.get(key(index)) ?? [];
    list.push(x.data[flat]);
    sums.set(key(index), list);
  });
  const stats = new Map<number, [number, number]>();
  for (const [k, values] of sums) {
    const mean = values.reduce((s, v) => s + v, 0) / values.length;
    const variance = values.reduce((s, v) => s + (v - mean) ** 2, 0) / values.length;
    stats.set(k, [mean, variance]);
  }
  return build(x.shape, (index) => {
    const [mean, variance] = stats.get(key(index))!;
    return (at(x, ...index) - mean) / Math.sqrt(variance + eps);
  });
}

/** Layer normalization over the last `k` axes, with optional weight and bias of those extents. */
export function layerNorm(x: F64, k: number, weight: F64 | null, bias: F64 | null, eps: number): F64 {
  const lead = x.shape.length - k;
  const leadStrides = stridesOf(x.shape.slice(0, lead));
  const tailStrides = stridesOf(x.shape.slice(lead));
  const normalized = normalizeGroups(
    x,
    (i) => i.slice(0, lead).reduce((s, v, d) => s + v * leadStrides[d], 0),
    eps,
  );
  return build(x.shape, (index) => {
    const inner = index.slice(lead).reduce((s, v, d) => s + v * tailStrides[d], 0);
    return at(normalized, ...index) * (weight?.data[inner] ?? 1) + (bias?.data[inner] ?? 0);
  });
}

/** Batch normalization per channel (axis 1), with batch statistics or the given running ones. */
export function batchNorm(
  x: F64,
  running: { mean: F64; variance: F64 } | null,
  weight: F64 | null,
  bias: F64 | null,
  eps: number,
): F64 {
  const normalized = running === null
    ? normalizeGroups(x, (i) => i[1], eps)
    : build(x.shape, (i) =>
      (at(x, ...i) - running.mean.data[i[1]]) / Math.sqrt(running.variance.data[i[1]] + eps));
  return build(x.shape, (i) => at(normalized, ...i) * (weight?.data[i[1]] ?? 1) + (bias?.data[i[1]] ?? 0));
}

/** Joins along `axis`. */
export function concat(xs: readonly F64[], axis: number): F64 {
  const shape = [...xs[0].shape];
  shape[axis] = xs.reduce((s, x) => s + x.shape[axis], 0);
  return build(shape, (index) => {
    let i = index[axis];
    for (const x of xs) {
      if (i < x.shape[axis]) return at(x, ...index.slice(0, axis), i, ...index.slice(axis + 1));
      i -= x.shape[axis];
    }
    throw new Error("unreachable");
  });
}

/** Rows of `weight` [rows, dim] at `ids`, shaped `[...idsShape, dim]`. */
export function embedding(ids: readonly number[], idsShape: readonly number[], weight: F64): F64 {
  const dim = weight.shape[1];
  const data = new Float64Array(ids.length * dim);
  ids.forEach((id, i) => data.set(weight.data.subarray(id * dim, (id + 1) * dim), i * dim));
  return { shape: [...idsShape, dim], data };
}

/** The last two axes swapped. */
export function transposeLast(x: F64): F64 {
  const r = x.shape.length;
  const shape = [...x.shape.slice(0, -2), x.shape[r - 1], x.shape[r - 2]];
  return build(shape, (i) => at(x, ...i.slice(0, -2), i[r - 1], i[r - 2]));
}

/**
 * softmax(q·kᵀ·scale + mask)·v, the mask additive (−∞ excludes) and broadcast; a row with nothing to attend
 * to has probabilities 0 (PyTorch's safe softmax).
 */
export function attention(q: F64, k: F64, v: F64, mask: F64 | null, causal: boolean, scale: number): F64 {
  let scores = map(matmul(q, transposeLast(k)), (s) => s * scale);
  if (mask !== null) scores = zip(scores, mask, (s, m) => s + m);
  if (causal) {
    const [l, s] = scores.shape.slice(-2);
    scores = zip(scores, build([l, s], ([i, j]) => (j > i ? -Infinity : 0)), (a, b) => a + b);
  }
  const probabilities = softmax(scores, scores.shape.length - 1, false);
  return matmul(map(probabilities, (p) => (Number.isNaN(p) ? 0 : p)), v);
}

/** k or v [..., Hkv, S, ·] with each head repeated `groups` times in place (PyTorch's repeat_interleave on −3). */
export function repeatHeads(x: F64, groups: number): F64 {
  const r = x.shape.length;
  return build([...x.shape.slice(0, -3), x.shape[r - 3] * groups, ...x.shape.slice(-2)], (i) => {
    const source = [...i.slice(0, r - 3), Math.floor(i[r - 3] / groups), i[r - 2], i[r - 1]];
    return at(x, ...source);
  });
}

/** Attention without masks whose probabilities are multiplied by a fixed dropout mask `keep` (0 or 1/(1 − p)). */
export function droppedAttention(q: F64, k: F64, v: F64, keep: F64, scale: number): F64 {
  const scores = map(matmul(q, transposeLast(k)), (x) => x * scale);
  return matmul(zip(softmax(scores, scores.shape.length - 1, false), keep, (a, b) => a * b), v);
}

/** A slice [start, end) of the last axis. */
export function lastSlice(x: F64, start: number, end: number): F64 {
  const r = x.shape.length;
  return build([...x.shape.slice(0, -1), end - start], (i) => at(x, ...i.slice(0, -1), start + i[r - 1]));
}

/** x·wᵀ + b over rows: x [N, I], w [O, I], b [O] or null. */
export function linear(x: F64, w: F64, b: F64 | null): F64 {
  const product = matmul(x, transposeLast(w));
  return b === null ? product : zip(product, b, (p, q) => p + q);
}

const sigmoid = (v: number) => 1 / (1 + Math.exp(-v));

/** Step t of a batch-first [N, T, F] sequence as [N, F]. */
export function step(x: F64, t: number): F64 {
  const [n, , f] = x.shape;
  return build([n, f], ([b, j]) => at(x, b, t, j));
}

/** Stacks [N, H] steps into [N, T, H]. */
export function stackSteps(steps: readonly F64[]): F64 {
  const [n, h] = steps[0].shape;
  return build([n, steps.length, h], ([b, t, j]) => at(steps[t], b, j));
}

/** A single-layer LSTM (gates i, f, g, o), batch-first; returns output [N, T, H], h and c [N, H]. */
export function lstm(
  x: F64,
  p: { wIh: F64; wHh: F64; bIh: F64 | null; bHh: F64 | null },
  h0: F64,
  c0: F64,
): { output: F64; h: F64; c: F64 } {
  const hidden = h0.shape[1];
  let h = h0;
  let c = c0;
  const outputs: F64[] = [];
  for (let t = 0; t < x.shape[1]; t++) {
    const gates = zip(linear(step(x, t), p.wIh, p.bIh), linear(h, p.wHh, p.bHh), (a, b) => a + b);
    const part = (i: number, fn: (v: number) => number) =>
      map(lastSlice(gates, i * hidden, (i + 1) * hidden), fn);
    const [ig, fg, gg, og] = [part(0, sigmoid), part(1, sigmoid), part(2, Math.tanh), part(3, sigmoid)];
    c = zip(zip(fg, c, (a, b) => a * b), zip(ig, gg, (a, b) => a * b), (a, b) => a + b);
    h = zip(og, map(c, Math.tanh), (a, b) => a * b);
    outputs.push(h);
  }
  return { output: stackSteps(outputs), h, c };
}

/** A single-layer GRU (gates r, z, n), batch-first; returns output [N, T, H] and h [N, H]. */
export function gru(
  x: F64,
  p: { wIh: F64; wHh: F64; bIh: F64 | null; bHh: F64 | null },
  h0: F64,
): { output: F64; h: F64 } {
  const hidden = h0.shape[1];
  let h = h0;
  const outputs: F64[] = [];
  for (let t = 0; t < x.shape[1]; t++) {
    const gx = linear(step(x, t), p.wIh, p.bIh);
    const gh = linear(h, p.wHh, p.bHh);
    const part = (g: F64, i: number) => lastSlice(g, i * hidden, (i + 1) * hidden);
    const r = map(zip(part(gx, 0), part(gh, 0), (a, b) => a + b), sigmoid);
    const z = map(zip(part(gx, 1), part(gh, 1), (a, b) => a + b), sigmoid);
    const n = map(zip(part(gx, 2), zip(r, part(gh, 2), (a, b) => a * b), (a, b) => a + b), Math.tanh);
    h = zip(zip(z, n, (zz, nn) => (1 - zz) * nn), zip(z, h, (a, b) => a * b), (a, b) => a + b);
    outputs.push(h);
  }
  return { output: stackSteps(outputs), h };
}

/** Flattens and joins F64s into one vector. */
export function flatJoin(xs: readonly F64[]): F64 {
  const data = new Float64Array(xs.reduce((s, x) => s + x.data.length, 0));
  let at0 = 0;
  for (const x of xs) {
    data.set(x.data, at0);
    at0 += x.data.length;
  }
  return { shape: [data.length], data };
}

/**
 * The CTC negative log-likelihood of one sequence by brute force over every alignment path: the sum over
 * all label paths of length T that collapse (merge repeats, drop blanks) to `target`.
 */
export function ctcBruteForce(logProbs: number[][], target: readonly number[], blank: number): number {
  const t = logProbs.length;
  const classes = logProbs[0]?.length ?? 0;
  let total = 0;
  const path = new Array<number>(t).fill(0);
  const collapse = () => {
    const out: number[] = [];
    path.forEach((c, i) => {
      if (c !== blank && (i === 0 || path[i - 1] !== c)) out.push(c);
    });
    return out;
  };
  const visit = (i: number, logP: number) => {
    if (i === t) {
      const labels = collapse();
      if (labels.length === target.length && labels.every((c, j) => c === target[j])) total += Math.exp(logP);
      return;
    }
    for (let c = 0; c < classes; c++) {
      path[i] = c;
      visit(i + 1, logP + logProbs[i][c]);
    }
  };
  visit(0, 0);
  return -Math.log(total);
}

/** A tensor's values (any real dtype) as f64. */
export function toF64(t: Tensor): F64 {
  return f64(t.shape, Float64Array.from(t.toArray() as ArrayLike<number>, Number));
}

/** Asserts `actual` has `expected`'s shape and values within `tolerance`·(1 + |expected|); NaN matches NaN. */
export function assertClose(actual: Tensor, expected: F64, tolerance: number, label: string): void {
  using want = Tensor.from(expected.data, [...expected.shape]);
  assertCloseValues(actual, want, { rtol: tolerance, atol: tolerance, equalNan: true, message: label });
}

// --- gradient checks ---

/** One gradient check: an op in F32 and its f64 reference, over leaves of `shapes`. */
export interface GradCase {
  readonly name: string;
  readonly shapes: readonly (readonly number[])[];
  readonly f32: (inputs: Tensor[]) => Tensor;
  readonly f64: (inputs: F64[]) => F64;
  /** Inputs in [0.5, 2.5] instead of [−2, 2]. */
  readonly positive?: boolean;
  /** Each leaf reaches the op as a transposed and flipped view (leaf axes 0 and last swapped). */
  readonly strided?: boolean;
  /** Allowed |analytic − numeric| / (1 + |numeric|). @default 2e-4 */
  readonly tolerance?: number;
  /**
   * Conformance (tests/op_conformance.test.ts): ulps the native kernels in exact mode may differ from the
   * reference kernel set (transcendentals are within 1 ulp by design). @default 0, bitwise
   */
  readonly exactUlps?: number;
  /**
   * Conformance: allowed |fast − reference| / (1 + |reference|) in fast mode. @default 1e-4
   */
  readonly fastTolerance?: number;
  /**
   * The benchmark's input shapes (bench/ops_registry_bench.ts). @default `benchShapes(op, case)`: for a
   * one-kernel element-wise op, the case's shapes with a leading axis making at least 65536 elements;
   * otherwise the case's shapes
   */
  readonly bench?: readonly (readonly number[])[];
}

const gradRng = new Xorshift128(1234);

function randomLeaf(n: number, positive: boolean): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const u = (gradRng.next() % 100000) / 100000;
    out[i] = positive ? 0.5 + 2 * u : -2 + 4 * u;
  }
  return out;
}

/** The view a `strided` case's leaf reaches the op as: transposed (axes 0 and last) and flipped. */
export function stridedLeafView(t: Tensor): Tensor {
  if (t.rank < 2) return ops.flip(t, 0);
  return ops.flip(ops.transpose(t, 0, t.rank - 1), 0);
}

/** The leaf shape whose strided view (`stridedLeafView`) has `shape`. */
export function stridedLeafShape(shape: readonly number[], strided: boolean): number[] {
  const s = [...shape];
  if (strided && s.length >= 2) [s[0], s[s.length - 1]] = [s[s.length - 1], s[0]];
  return s;
}

/** The gradients of Σ out·sin(i + 1) with respect to each leaf, computed by the library in `mode`. */
function analyticGradients(c: GradCase, mode: "exact" | "fast", values: Float32Array[], shapes: number[][]) {
  const strided = c.strided ?? false;
  return TensorCompute.run({ mode }, () => {
    using _scope = new ActivationScope();
    const leaves = values.map((v, i) => Tensor.from(v, shapes[i]).withRequiresGrad());
    const out = c.f32(leaves.map((l) => (strided ? stridedLeafView(l) : l)));
    const weights = Tensor.from(Float32Array.from({ length: out.size }, (_, i) => Math.sin(i + 1)), [
      ...out.shape,
    ]);
    ops.sum(ops.mul(out, weights)).backward();
    const grads = leaves.map((
      l,
    ) => (l.grad === null ? null : Float64Array.from(l.grad.toArray() as Float32Array)));
    for (const l of leaves) {
      l.grad = null;
      l.dispose();
    }
    return grads;
  });
}

/**
 * Checks the library's gradient of every leaf against central differences (h = 1e-4, in f64) of the f64
 * reference, the loss being Σ out·sin(i + 1). Throws an assertion error naming the case, mode and element.
 */
export function checkGradients(c: GradCase, mode: "exact" | "fast"): void {
  const strided = c.strided ?? false;
  const shapes = c.shapes.map((s) => stridedLeafShape(s, strided));
  const values = shapes.map((s) => randomLeaf(size(s), c.positive ?? false));
  const analytic = analyticGradients(c, mode, values, shapes);
  const loss = (xs: F64[]): number => {
    const out = c.f64(strided ? xs.map((x) => viewOp(x, (t) => stridedLeafView(t).contiguous())) : xs);
    return weightedSum(
      out,
      Float64Array.from({ length: out.data.length }, (_, i) => Math.fround(Math.sin(i + 1))),
    );
  };
  const lossWith = (input: number, index: number, delta: number) =>
    loss(values.map((v, j) => {
      const data = Float64Array.from(v);
      if (j === input) data[index] += delta;
      return f64(shapes[j], data);
    }));
  const h = 1e-4;
  const tolerance = c.tolerance ?? 2e-4;
  values.forEach((v, input) => {
    const grads = analytic[input];
    assert.ok(grads !== null, `${c.name} (${mode}): input ${input} got no gradient`);
    for (let i = 0; i < v.length; i++) {
      const numeric = (lossWith(input, i, h) - lossWith(input, i, -h)) / (2 * h);
      assert.ok(
        Math.abs(grads[i] - numeric) <= tolerance * (1 + Math.abs(numeric)),
        `${c.name} (${mode}${strided ? ", strided" : ""}): d/dx${input}[${i}] is ${
          grads[i]
        }, central difference ${numeric}`,
      );
    }
  });
}

/** Transposed convolution, as the scatter of each input element through the kernel (PyTorch's conv_transpose2d). */
export function convTranspose2d(
  x: F64,
  w: F64,
  bias: F64 | null,
  geometry: {
    stride: number[];
    padding: number[];
    dilation: number[];
    outputPadding: number[];
    groups: number;
  },
): F64 {
  const { stride, padding, dilation, outputPadding, groups } = geometry;
  const [n, c, h, wd] = x.shape;
  const [, og, kh, kw] = w.shape;
  const o = og * groups;
  const oh = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + outputPadding[0] + 1;
  const ow = (wd - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + outputPadding[1] + 1;
  const out = new Float64Array(n * o * oh * ow);
  for (let b = 0; b < n; b++) {
    for (let ci = 0; ci < c; ci++) {
      const group = Math.floor(ci / (c / groups));
      for (let y = 0; y < h; y++) {
        for (let xx = 0; xx < wd; xx++) {
          for (let j = 0; j < og; j++) {
            for (let ky = 0; ky < kh; ky++) {
              for (let kx = 0; kx < kw; kx++) {
                const Y = y * stride[0] - padding[0] + ky * dilation[0];
                const X = xx * stride[1] - padding[1] + kx * dilation[1];
                if (Y < 0 || Y >= oh || X < 0 || X >= ow) continue;
                out[((b * o + group * og + j) * oh + Y) * ow + X] += at(x, b, ci, y, xx) *
                  at(w, ci, j, ky, kx);
              }
            }
          }
        }
      }
    }
  }
  if (bias !== null) {
    for (let i = 0; i < out.length; i++) {
      out[i] += bias.data[Math.floor(i / (oh * ow)) % o];
    }
  }
  return f64([n, o, oh, ow], out);
}

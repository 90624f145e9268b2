// Reference functions in f64 over plain row-major arrays, for gradient checks by central differences. They are
// written from the math, independently of the library's kernels; view operations reuse the library's views on
// F64 tensors (pure data movement, checked separately against the index-to-offset oracle).
import { DType, Tensor } from "../../mod.ts";

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
  using t = Tensor.from(x.data, [...x.shape], DType.F64);
  using v = op(t);
  return { shape: [...v.shape], data: Float64Array.from(v.toArray() as Float64Array) };
}

/** Σ out·weights. */
export function weightedSum(out: F64, weights: Float64Array): number {
  let s = 0;
  for (let i = 0; i < out.data.length; i++) s += out.data[i] * weights[i];
  return s;
}

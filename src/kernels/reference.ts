/**
 * The reference kernels: plain TypeScript scalar loops over strided operands, rounding to f32 after every f32
 * operation (a `Float32Array` store rounds like `Math.fround`), accumulating sums in f64 in ascending order,
 * with no threads. They define what every kernel means; the native kernels are tested against them.
 *
 * Meaning, op by op:
 * - `+ − × ÷`, `sqrt`, `neg`, `abs`, `relu`, max, min and the comparisons are single IEEE f32 operations.
 *   max and min return a NaN operand when there is one (the first), and order the zeros (+0 beats −0 in max);
 *   `relu(NaN)` is NaN and `relu(−0)` is +0. Comparisons write 0/1 bytes; NaN compares unordered. The
 *   logical ops write 0/1 bytes too, treating every nonzero value (NaN included, ±0 not) as true.
 * - Transcendental functions are computed in f64 and rounded once: `exp`, `log`, `tanh` are `Math`'s;
 *   `sigmoid(x) = 1/(1 + exp(−x))`; `gelu(x) = x/(1 + exp(−2u))` with `u = √(2/π)·(x + 0.044715·x³)` (the
 *   tanh form's value, computed without its cancellation; `gelu(−∞) = −0`); the erf form of GELU is
 *   `geluErf64` below; `erf` is `erf64` below;
 *   `pow` is `Math.pow` with the C99 special cases (`pow(x, ±0) = 1` and `pow(1, y) = 1` even for NaN,
 *   `pow(−1, ±∞) = 1`).
 * - Reductions over the trailing axes: sum and mean add in f64 in ascending row-major order within blocks of
 *   `SUM_BLOCK` elements, add the block sums in ascending order and round once (mean divides the f64 sum by
 *   the count); the fixed blocks let a native full sum split across threads with the same bits on every
 *   thread count. max and min keep the first of equal values and return the first
 *   NaN; argmax is the row-major position within the reduced axes of the first maximum or the first NaN,
 *   argmin of the first minimum or NaN. prod multiplies in f64 in ascending row-major order and rounds once.
 *   An empty sum is 0, an empty product 1 and an empty mean NaN.
 * - Softmax over the last axis: m = the row's maximum (NaN if the row holds one), e_i = exp(x_i − m) and
 *   s = Σ e_i in f64 ascending; softmax y_i = f32(e_i / s), log-softmax y_i = f32((x_i − m) − log s).
 * - Max pooling: spec 000 §9 (see `maxPool2d` below).
 *
 * @module
 */
import { referenceMatMul } from "./matmul.ts";
import {
  type BinaryOp,
  type ComputeSettings,
  type KernelOperand,
  type Pool2dParams,
  ReduceOp,
  SoftmaxOp,
  type TensorKernels,
  type UnaryOp,
} from "./types.ts";
import { kernelEntries, type KernelFamily } from "../core/op_table.ts";

/** √(2/π) and the cubic coefficient of the tanh form of GELU, as f64. */
const GELU_C = 0.7978845608028654;
const GELU_A = 0.044715;
const TWO_OVER_SQRT_PI = 1.1283791670955126;

/**
 * erf in f64: `(2/√π)·e^(−x²)·Σ_k (2x²)^k·x / (1·3·5···(2k+1))`, a series of positive terms summed until a
 * term falls below 2^-56 of the sum, and ±1 for |x| ≥ 4 (where erf rounds to ±1 in f32). The native exact
 * kernel runs the same operations in the same order (`zig/kernels/math.zig`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { erf64 } from "./reference.ts";
 * assert.ok(Math.abs(erf64(1) - 0.8427007929497149) < 1e-15);
 * assert.ok(erf64(-5) === -1 && Object.is(erf64(-0), -0));
 * ```
 */
export function erf64(x: number): number {
  if (x !== x) return x;
  const a = Math.abs(x);
  const negative = x < 0 || Object.is(x, -0);
  if (a >= 4) return negative ? -1 : 1;
  const x2 = a * a;
  const t = 2 * x2;
  let term = a;
  let sum = a;
  let denominator = 1;
  for (;;) {
    denominator += 2;
    term = term * t / denominator;
    sum += term;
    if (term <= sum * 2 ** -56) break;
  }
  const r = sum * Math.exp(-x2) * TWO_OVER_SQRT_PI;
  return negative ? -r : r;
}

/**
 * x^y in f64 with the C99 (and PyTorch) special cases where JavaScript's `Math.pow` differs:
 * `pow(1, NaN) = 1` and `pow(−1, ±∞) = 1`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pow64 } from "./reference.ts";
 * assert.ok(pow64(1, NaN) === 1 && pow64(-1, Infinity) === 1 && pow64(2, 10) === 1024);
 * ```
 */
export function pow64(x: number, y: number): number {
  if (y === 0 || x === 1) return 1;
  if (x === -1 && (y === Infinity || y === -Infinity)) return 1;
  return Math.pow(x, y);
}

/**
 * GELU in f64 as the reference defines it: `x/(1 + exp(−2u))`, `u = √(2/π)·(x + 0.044715·x³)`, which equals
 * `0.5·x·(1 + tanh(u))`; `gelu(−∞) = −0`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { gelu64 } from "./reference.ts";
 * assert.ok(gelu64(0) === 0 && Math.abs(gelu64(1) - 0.8411919906082768) < 1e-15);
 * ```
 */
export function gelu64(x: number): number {
  if (x === -Infinity) return -0;
  const u = GELU_C * (x + GELU_A * (x * x * x));
  return x / (1 + Math.exp(-2 * u));
}

const SQRT1_2 = 0.7071067811865476;
const ONE_OVER_SQRT_PI = 0.5641895835477563;

/**
 * GELU, erf form (PyTorch's default), in f64: `x·Φ(x)` with `Φ(x) = 0.5·(1 + erf64(s))`, `s = x/√2`, and,
 * where erf rounds to −1 (s ≤ −4), `Φ(x) = 0.5·erfc(−s)` by the continued fraction
 * `erfc(a) = e^(−a²)/√π · 1/(a + (1/2)/(a + (2/2)/(a + …)))` from its 20th level, so the result keeps its
 * relative accuracy down to the f32 subnormals; `gelu(−∞) = −0`. The native exact kernel runs the same
 * operations (`geluErfV` in `zig/kernels/math.zig`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { geluErf64 } from "./reference.ts";
 * assert.ok(Math.abs(geluErf64(1) - 0.8413447460685429) < 1e-15);
 * assert.ok(Math.abs(geluErf64(-8) / -4.9767684594174555e-15 - 1) < 1e-12 && Object.is(geluErf64(-Infinity), -0));
 * ```
 */
export function geluErf64(x: number): number {
  if (x === -Infinity) return -0;
  const s = x * SQRT1_2;
  if (s > -4) return x * (0.5 * (1 + erf64(s)));
  const a = Math.max(-s, 4);
  let t = a;
  for (let k = 20; k >= 1; k--) t = a + (k / 2) / t;
  return x * (0.5 * (Math.exp(-(a * a)) * ONE_OVER_SQRT_PI / t));
}

function maxOf(x: number, y: number): number {
  if (x !== x) return x;
  if (y !== y) return y;
  if (x > y) return x;
  if (y > x) return y;
  return Object.is(x, -0) ? y : x;
}

function minOf(x: number, y: number): number {
  if (x !== x) return x;
  if (y !== y) return y;
  if (x < y) return x;
  if (y < x) return y;
  return Object.is(x, 0) ? y : x;
}

/** Binary functions by kernel name (a missing or extra one is a type error); the f32 rounding happens in the store. */
const BINARY_BY_NAME: Record<keyof typeof BinaryOp, (x: number, y: number) => number> = {
  Add: (x, y) => x + y,
  Sub: (x, y) => x - y,
  Mul: (x, y) => x * y,
  Div: (x, y) => x / y,
  Max: maxOf,
  Min: minOf,
  Pow: pow64,
  Eq: (x, y) => x === y ? 1 : 0,
  Ne: (x, y) => x !== y ? 1 : 0,
  Lt: (x, y) => x < y ? 1 : 0,
  Le: (x, y) => x <= y ? 1 : 0,
  Gt: (x, y) => x > y ? 1 : 0,
  Ge: (x, y) => x >= y ? 1 : 0,
  LogicalAnd: (x, y) => x !== 0 && y !== 0 ? 1 : 0,
  LogicalOr: (x, y) => x !== 0 || y !== 0 ? 1 : 0,
  LogicalXor: (x, y) => (x !== 0) !== (y !== 0) ? 1 : 0,
  ReluBackward: (g, out) => out <= 0 ? 0 : g,
  GeluBackward: (g, x) => Math.fround(g * geluSlope(x, Math.fround(Math.tanh(geluTanhArgument(x))))),
};

/**
 * The argument of the tanh in GELU's tanh form as the GeluBackward kernel computes it: ((x·x·x)·a + x)·c,
 * each step one f32 operation, with a and c rounded to f32.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { geluTanhArgument } from "./reference.ts";
 * assert.ok(geluTanhArgument(0) === 0 && Math.abs(geluTanhArgument(1) - 0.833562) < 1e-6);
 * ```
 */
export function geluTanhArgument(x: number): number {
  const f = Math.fround;
  return f(f(x + f(f(f(x * x) * x) * f(GELU_A))) * f(GELU_C));
}

/**
 * GELU's (tanh form) derivative from x and t = tanh(`geluTanhArgument(x)`) (an f32 value):
 * (t + 1)·0.5 + ((x·0.5)·(1 − t·t))·((x·x·3a + 1)·c) in f64, rounded to f32 once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { geluSlope } from "./reference.ts";
 * assert.ok(geluSlope(0, 0) === 0.5 && geluSlope(30, 1) === 1);
 * ```
 */
export function geluSlope(x: number, t: number): number {
  return Math.fround((t + 1) * 0.5 + ((x * 0.5) * (1 - t * t)) * ((x * x * (3 * GELU_A) + 1) * GELU_C));
}

const f32Product = new Float32Array(1);

/** x·y rounded to f32 (one IEEE f32 multiplication). */
function mulF32(x: number, y: number): number {
  f32Product[0] = x * y;
  return f32Product[0];
}

/**
 * Unary functions by kernel name, with the op's two parameters `p` and `q` (f32 values); the f32 rounding
 * happens in the store. Issue 12's functions: `log1p`, `expm1` are `Math`'s; `silu(x) = x/(1 + exp(−x))`;
 * `softplus` with z = f32(x·beta) is x where z > threshold, else log1p(exp(z))/beta; `leakyRelu` is x for
 * x > 0, else the f32 product x·slope; `elu` is x for x > 0, else alpha·expm1(x); `clamp` is m = (x < lo ? lo : x),
 * then (hi < m ? hi : m), PyTorch's order (NaN and −0 stay, hi where lo > hi); `sign` is ±1, and 0 for ±0 and NaN (PyTorch's); `reciprocal` 1/x, `rsqrt`
 * f32(1/f32(√x)) (two IEEE operations, as PyTorch), `square` x·x.
 */
const UNARY_BY_NAME: Record<keyof typeof UnaryOp, (x: number, p: number, q: number) => number> = {
  Neg: (x) => -x,
  Abs: Math.abs,
  Relu: (x) => x > 0 ? x : x !== x ? x : 0,
  Exp: Math.exp,
  Log: Math.log,
  Sqrt: Math.sqrt,
  Tanh: Math.tanh,
  Sigmoid: (x) => 1 / (1 + Math.exp(-x)),
  Gelu: gelu64,
  Erf: erf64,
  Log1p: Math.log1p,
  Expm1: Math.expm1,
  Silu: (x) => x / (1 + Math.exp(-x)),
  Softplus: (x, beta, threshold) => {
    const z = mulF32(x, beta);
    return z > threshold ? x : Math.log1p(Math.exp(z)) / beta;
  },
  LeakyRelu: (x, slope) => x > 0 ? x : mulF32(x, slope),
  Elu: (x, alpha) => x > 0 ? x : alpha * Math.expm1(x),
  Clamp: (x, lo, hi) => {
    const m = x < lo ? lo : x;
    return hi < m ? hi : m;
  },
  Sign: (x) => x > 0 ? 1 : x < 0 ? -1 : 0,
  Reciprocal: (x) => 1 / x,
  Rsqrt: (x) => 1 / Math.fround(Math.sqrt(x)),
  Square: (x) => x * x,
  GeluErf: geluErf64,
};

/** `byName` as an array indexed by the op table's codes of `family`. */
function byCode<F>(family: KernelFamily, byName: Record<string, F>): readonly F[] {
  return kernelEntries(family).map(({ kernel }) => byName[kernel.name]);
}

const BINARY = byCode("binary", BINARY_BY_NAME);
const UNARY = byCode("unary", UNARY_BY_NAME);

interface Strided {
  readonly offset: number;
  readonly strides: readonly number[];
}

/**
 * Calls `visit(o0, o1, o2)` for every index of `shape` in row-major order, with the element offset of that
 * index in each of up to three operands (missing ones read 0). Nothing for an empty shape, once for rank 0.
 */
function walk(
  shape: readonly number[],
  visit: (o0: number, o1: number, o2: number) => void,
  p: Strided,
  q?: Strided,
  r?: Strided,
): void {
  const rank = shape.length;
  for (const extent of shape) if (extent === 0) return;
  const index = new Array<number>(rank).fill(0);
  let o0 = p.offset;
  let o1 = q?.offset ?? 0;
  let o2 = r?.offset ?? 0;
  for (;;) {
    visit(o0, o1, o2);
    let axis = rank - 1;
    for (; axis >= 0; axis--) {
      index[axis]++;
      o0 += p.strides[axis];
      o1 += q?.strides[axis] ?? 0;
      o2 += r?.strides[axis] ?? 0;
      if (index[axis] < shape[axis]) break;
      o0 -= shape[axis] * p.strides[axis];
      o1 -= shape[axis] * (q?.strides[axis] ?? 0);
      o2 -= shape[axis] * (r?.strides[axis] ?? 0);
      index[axis] = 0;
    }
    if (axis < 0) return;
  }
}

function binaryLoop(
  op: BinaryOp,
  shape: readonly number[],
  out: KernelOperand,
  a: KernelOperand,
  b: KernelOperand,
): void {
  const f = BINARY[op];
  const o = out.data;
  const x = a.data as Float32Array;
  const y = b.data as Float32Array;
  walk(
    shape,
    (i, j, k) => {
      o[i] = f(x[j], y[k]);
    },
    out,
    a,
    b,
  );
}

/**
 * Elements per block of a sum: each block is added in f64 in ascending order, then the block sums in
 * ascending order (the native kernels' `sum_block`).
 */
export const SUM_BLOCK = 65536;

/** One reduction over the reduced elements at `base` (in `a`), by `op`. */
function reduceOne(
  op: ReduceOp,
  x: Float32Array,
  base: number,
  reduced: readonly number[],
  strides: readonly number[],
  count: number,
): number {
  const inner: Strided = { offset: base, strides };
  switch (op) {
    case ReduceOp.Sum:
    case ReduceOp.Mean: {
      let sum = 0;
      let block = 0;
      let filled = 0;
      walk(reduced, (j) => {
        block += x[j];
        if (++filled === SUM_BLOCK) {
          sum += block;
          block = 0;
          filled = 0;
        }
      }, inner);
      sum += block;
      return op === ReduceOp.Sum ? sum : sum / count;
    }
    case ReduceOp.Max:
    case ReduceOp.Min: {
      let best = op === ReduceOp.Max ? -Infinity : Infinity;
      let nan = false;
      walk(reduced, (j) => {
        const v = x[j];
        if (nan) return;
        if (v !== v) {
          best = v;
          nan = true;
        } else if (op === ReduceOp.Max ? v > best : v < best) {
          best = v;
        }
      }, inner);
      return best;
    }
    case ReduceOp.Prod: {
      let product = 1;
      walk(reduced, (j) => {
        product *= x[j];
      }, inner);
      return product;
    }
    default: {
      // ArgMax and ArgMin.
      const isMax = op === ReduceOp.ArgMax;
      let best = isMax ? -Infinity : Infinity;
      let index = 0;
      let position = 0;
      let done = false;
      walk(reduced, (j) => {
        const v = x[j];
        if (done) return;
        if (v !== v) {
          index = position;
          done = true;
          return;
        }
        if (isMax ? v > best : v < best) {
          best = v;
          index = position;
        }
        position++;
      }, inner);
      return index;
    }
  }
}

function softmaxRow(
  op: SoftmaxOp,
  x: Float32Array,
  y: Float32Array,
  xOffset: number,
  yOffset: number,
  len: number,
  xStride: number,
  yStride: number,
): void {
  let m = -Infinity;
  for (let i = 0; i < len; i++) {
    const v = x[xOffset + i * xStride];
    if (v !== v) {
      m = v;
      break;
    }
    if (v > m) m = v;
  }
  let s = 0;
  for (let i = 0; i < len; i++) s += Math.exp(x[xOffset + i * xStride] - m);
  if (op === SoftmaxOp.Softmax) {
    for (let i = 0; i < len; i++) y[yOffset + i * yStride] = Math.exp(x[xOffset + i * xStride] - m) / s;
  } else {
    const logS = Math.log(s);
    for (let i = 0; i < len; i++) y[yOffset + i * yStride] = (x[xOffset + i * xStride] - m) - logS;
  }
}

/**
 * Output extent of pooling along one axis: `floor((size + 2·pad − kernel)/stride) + 1`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { poolExtent } from "./reference.ts";
 * assert.equal(poolExtent(5, 2, 2, 1), 3);
 * ```
 */
export function poolExtent(size: number, kernel: number, stride: number, pad: number): number {
  return Math.floor((size + 2 * pad - kernel) / stride) + 1;
}

/**
 * The output extents [OH, OW] of a max pooling: `params.output`, or `poolExtent` of each axis.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { poolOutput } from "./reference.ts";
 * assert.deepEqual(poolOutput({ input: [1, 1, 5, 4], kernel: [2, 2], stride: [2, 2], padding: [1, 0] }), [3, 2]);
 * ```
 */
export function poolOutput(params: Pool2dParams): readonly [number, number] {
  const [, , h, w] = params.input;
  return params.output ?? [
    poolExtent(h, params.kernel[0], params.stride[0], params.padding[0]),
    poolExtent(w, params.kernel[1], params.stride[1], params.padding[1]),
  ];
}

/** The in-bounds taps of window `o` along one axis: positions `o·stride − pad + j·dilation`, j < kernel. */
function poolTaps(
  o: number,
  kernel: number,
  stride: number,
  pad: number,
  dilation: number,
  size: number,
): number[] {
  const taps: number[] = [];
  for (let j = 0; j < kernel; j++) {
    const p = o * stride - pad + j * dilation;
    if (p >= 0 && p < size) taps.push(p);
  }
  return taps;
}

function maxPoolWindow(
  x: Float32Array,
  plane: number,
  xStrides: readonly number[],
  ys: readonly number[],
  xs: readonly number[],
): [number, number, number] {
  let best = x[plane + ys[0] * xStrides[2] + xs[0] * xStrides[3]];
  let by = ys[0];
  let bx = xs[0];
  if (best !== best) return [best, by, bx];
  for (let i = 0; i < ys.length; i++) {
    for (let j = i === 0 ? 1 : 0; j < xs.length; j++) {
      const v = x[plane + ys[i] * xStrides[2] + xs[j] * xStrides[3]];
      if (v > best || v !== v) {
        best = v;
        by = ys[i];
        bx = xs[j];
        if (v !== v) return [best, by, bx];
      }
    }
  }
  return [best, by, bx];
}

/**
 * The reference kernel set: plain TypeScript, f64 accumulation, no threads. It serves as the oracle of the
 * native kernels and as a fallback; `settings` changes nothing here, because it defines the meaning of both
 * modes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceKernels } from "./reference.ts";
 * import { BinaryOp } from "./types.ts";
 * import type { KernelOperand } from "./types.ts";
 * import type { NativePointer } from "../native/symbols.ts";
 * const operand = (data: Float32Array, strides: number[]): KernelOperand =>
 *   ({ pointer: null as unknown as NativePointer, data, offset: 0, strides });
 * const out = new Float32Array(3);
 * // [1, 2, 3] + 10 (broadcast with stride 0)
 * referenceKernels.binary(
 *   BinaryOp.Add,
 *   [3],
 *   operand(out, [1]),
 *   operand(new Float32Array([1, 2, 3]), [1]),
 *   operand(new Float32Array([10]), [0]),
 *   { mode: "exact", threads: 1 },
 * );
 * assert.ok(out.join() === "11,12,13");
 * ```
 */
export const referenceKernels: TensorKernels = {
  name: "reference",

  binary(
    op: BinaryOp,
    shape: readonly number[],
    out: KernelOperand,
    a: KernelOperand,
    b: KernelOperand,
  ): void {
    binaryLoop(op, shape, out, a, b);
  },

  unary(
    op: UnaryOp,
    shape: readonly number[],
    out: KernelOperand,
    a: KernelOperand,
    _settings?: ComputeSettings,
    params?: readonly [number, number],
  ): void {
    const f = UNARY[op];
    const o = out.data as Float32Array;
    const x = a.data as Float32Array;
    const [p, q] = params ?? [0, 0];
    walk(
      shape,
      (i, j) => {
        o[i] = f(x[j], p, q);
      },
      out,
      a,
    );
  },

  reduce(
    op: ReduceOp,
    shape: readonly number[],
    reducedAxes: number,
    out: KernelOperand,
    a: KernelOperand,
  ): void {
    const kept = shape.length - reducedAxes;
    const reduced = shape.slice(kept);
    const strides = a.strides.slice(kept);
    const count = reduced.reduce((n, extent) => n * extent, 1);
    const x = a.data as Float32Array;
    const o = out.data;
    walk(
      shape.slice(0, kept),
      (i, base) => {
        const value = reduceOne(op, x, base, reduced, strides, count);
        if (op === ReduceOp.ArgMax || op === ReduceOp.ArgMin) (o as BigInt64Array)[i] = BigInt(value);
        else (o as Float32Array)[i] = value;
      },
      out,
      { offset: a.offset, strides: a.strides.slice(0, kept) },
    );
  },

  softmax(op: SoftmaxOp, shape: readonly number[], out: KernelOperand, a: KernelOperand): void {
    const last = shape.length - 1;
    const len = shape[last];
    if (len === 0) return;
    const x = a.data as Float32Array;
    const y = out.data as Float32Array;
    walk(
      shape.slice(0, last),
      (i, j) => {
        softmaxRow(op, x, y, j, i, len, a.strides[last], out.strides[last]);
      },
      out,
      a,
    );
  },

  matMul(
    shape: readonly number[],
    k: number,
    out: KernelOperand,
    a: KernelOperand,
    b: KernelOperand,
    settings: ComputeSettings,
  ): void {
    referenceMatMul(shape, k, out, a, b, settings);
  },

  /**
   * The window of output (oy, ox) starts at (oy·strideH − padH, ox·strideW − padW), its taps `dilation` apart,
   * and holds only its in-bounds taps (padding never wins), read in row-major order: the first element wins
   * ties, a NaN wins and the first NaN is reported. Indices are flat row-major NCHW positions of the logical
   * input, or `y·W + x` within the plane with `localIndices`.
   */
  maxPool2d(params: Pool2dParams, out: KernelOperand, x: KernelOperand, indices: KernelOperand | null): void {
    const [n, c, h, w] = params.input;
    const [kh, kw] = params.kernel;
    const [sh, sw] = params.stride;
    const [ph, pw] = params.padding;
    const [oh, ow] = poolOutput(params);
    const [dh, dw] = params.dilation ?? [1, 1];
    const xd = x.data as Float32Array;
    const od = out.data as Float32Array;
    const id = indices?.data as Int32Array | undefined;
    for (let ni = 0; ni < n; ni++) {
      for (let ci = 0; ci < c; ci++) {
        const plane = x.offset + ni * x.strides[0] + ci * x.strides[1];
        for (let oy = 0; oy < oh; oy++) {
          const ys = poolTaps(oy, kh, sh, ph, dh, h);
          for (let ox = 0; ox < ow; ox++) {
            const xs = poolTaps(ox, kw, sw, pw, dw, w);
            const [best, by, bx] = maxPoolWindow(xd, plane, x.strides, ys, xs);
            const position = [ni, ci, oy, ox];
            od[at(out, position)] = best;
            if (id !== undefined && indices !== null) {
              id[at(indices, position)] = ((params.localIndices === true ? 0 : (ni * c + ci) * h) + by) * w +
                bx;
            }
          }
        }
      }
    }
  },

  /** Every plane of `grad` set to +0, then each output's gradient added at its winner, in output order. */
  maxPool2dBackward(
    params: Pool2dParams,
    grad: KernelOperand,
    g: KernelOperand,
    indices: KernelOperand,
  ): void {
    const [n, c, h, w] = params.input;
    const [oh, ow] = poolOutput(params);
    const gd = grad.data as Float32Array;
    const go = g.data as Float32Array;
    const id = indices.data as Int32Array;
    for (let ni = 0; ni < n; ni++) {
      for (let ci = 0; ci < c; ci++) {
        for (let y = 0; y < h; y++) {
          for (let x = 0; x < w; x++) gd[at(grad, [ni, ci, y, x])] = 0;
        }
        for (let oy = 0; oy < oh; oy++) {
          for (let ox = 0; ox < ow; ox++) {
            const winner = id[at(indices, [ni, ci, oy, ox])];
            const target = at(grad, [ni, ci, Math.floor(winner / w), winner % w]);
            gd[target] = gd[target] + go[at(g, [ni, ci, oy, ox])];
          }
        }
      }
    }
  },
};

function at(operand: KernelOperand, index: readonly number[]): number {
  let offset = operand.offset;
  for (let axis = 0; axis < index.length; axis++) offset += index[axis] * operand.strides[axis];
  return offset;
}

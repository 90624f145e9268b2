// Conformance of the native kernels to the reference kernels: random shapes, layouts, data and settings,
// each case run by both sets over twin outputs and compared element by element, gaps included.
//
// Exact mode: the same bits for every IEEE operation, reductions and pooling; within 1 ulp for the
// transcendental functions (exp log tanh sigmoid gelu erf pow softmax), whose f64 algorithms differ from the
// runtime's Math functions by an f64 ulp or so. Fast mode: the same bits for the IEEE operations and
// pooling, `FAST_ERROR_BOUNDS` for the transcendental ones, and an f64 reordering bound for sums.
// NaNs compare equal whatever their payload.
import { FAST_ERROR_BOUNDS, type FastErrorBound, nativeKernels } from "../../src/kernels/native.ts";
import { geluSlope, geluTanhArgument, referenceKernels } from "../../src/kernels/reference.ts";
import {
  type ArithmeticMode,
  BinaryOp,
  type ComputeSettings,
  type KernelOperand,
  type Pool2dParams,
  ReduceOp,
  SoftmaxOp,
  UnaryOp,
} from "../../src/kernels/types.ts";
import { IndexOp, nativeIndex, referenceIndex } from "../../src/kernels/indexing.ts";
import { nativeSelect, referenceSelect } from "../../src/kernels/select.ts";
import {
  contiguousView,
  type ElementType,
  type Fill,
  fillF32,
  OperandPool,
  randomShape,
  randomView,
  Rng,
  type View,
  viewOffsets,
} from "./operands.ts";
import { binaryWritesBool } from "../../src/core/op_table.ts";

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function bitsOf(value: number): number {
  f32[0] = value;
  return u32[0];
}

/** The spacing of f32 values at `value` (at least 2^-149, the subnormal step). */
export function ulp(value: number): number {
  const exponent = (bitsOf(value) >>> 23) & 0xff;
  return exponent <= 1 ? 2 ** -149 : 2 ** (exponent - 150);
}

/** How many f32 steps separate two finite values. */
export function ulpDistance(x: number, y: number): number {
  const ordered = (v: number) => {
    const bits = bitsOf(v);
    return bits >= 0x8000_0000 ? -(bits - 0x8000_0000) : bits;
  };
  return Math.abs(ordered(x) - ordered(y));
}

function sameValue(x: number | bigint, y: number | bigint): boolean {
  if (typeof x === "bigint" || typeof y === "bigint") return x === y;
  if (x !== x && y !== y) return true;
  return bitsOf(x) === bitsOf(y) || (x === 0 && y === 0 && Object.is(x, y));
}

/** How one element is judged: `reference` and `native` values, and the case's inputs at that element. */
export type Judge = (reference: number, native: number, k: number) => string | null;

export const bitwise: Judge = (r, n) => sameValue(r, n) ? null : "bits differ";

export function withinOneUlp(tally: Tally): Judge {
  return (r, n) => {
    if (sameValue(r, n)) return null;
    if (r !== r || n !== n || !Number.isFinite(r) || !Number.isFinite(n)) {
      return Math.abs(r) === Infinity && ulpDistance(r, n) <= 1 ? null : "special values differ";
    }
    if (ulpDistance(r, n) > 1) return `${ulpDistance(r, n)} ulps apart`;
    tally.offByOne++;
    return null;
  };
}

/** The fast-mode judge of a transcendental result; `argument(k)` is the bound's `arg` at element k. */
function withinBound(bound: FastErrorBound, argument: (k: number) => number): Judge {
  return (r, n, k) => {
    if (sameValue(r, n)) return null;
    if (r !== r || !Number.isFinite(r) || r === 0) {
      return r === 0 && Math.abs(n) <= Math.max(2 ** -149, bound.abs) ? null : "special value differs";
    }
    const allowed = bound.ulps * ulp(r) * (1 + bound.slope * argument(k)) + bound.abs;
    const error = Math.abs(n - r);
    return error <= allowed ? null : `error ${error / ulp(r)} ulps, bound ${allowed / ulp(r)}`;
  };
}

/** The f32 value `steps` representable values away from `value` (finite, not NaN). */
function stepF32(value: number, steps: number): number {
  const bits = bitsOf(value);
  const ordered = (bits >= 0x8000_0000 ? -(bits - 0x8000_0000) : bits) + steps;
  u32[0] = ordered < 0 ? 0x8000_0000 - ordered : ordered;
  return f32[0];
}

/**
 * The judge of GeluBackward(g, x): the native result must be g·slope(x, t) for a t within the tanh's error of
 * the reference's (1 ulp in exact mode, whose f64 tanh may differ from Math.tanh's by an f64 ulp; the fast
 * tanh's bound in fast mode, where exact mode counts the results that needed another t as off by one);
 * everything else in the kernel is IEEE operations in a fixed order.
 */
function geluBackwardJudge(
  tally: Tally,
  gs: readonly number[],
  xs: readonly number[],
  a: KernelOperand,
  b: KernelOperand,
  mode: ArithmeticMode,
): Judge {
  const reach = mode === "exact" ? 1 : FAST_ERROR_BOUNDS.tanh.ulps;
  return (r, n, k) => {
    if (sameValue(r, n)) return null;
    const g = (a.data as Float32Array)[gs[k]];
    const x = (b.data as Float32Array)[xs[k]];
    const t = Math.fround(Math.tanh(geluTanhArgument(x)));
    if (!Number.isFinite(t)) return "special values differ";
    for (let step = -reach; step <= reach; step++) {
      const nudged = Math.max(-1, Math.min(1, stepF32(t, step)));
      if (!sameValue(Math.fround(g * geluSlope(x, nudged)), n)) continue;
      if (mode === "exact") tally.offByOne++;
      return null;
    }
    return `not g·slope(x, t) for a t within ${reach} ulps of tanh`;
  };
}

/** Counts the report keeps while cases run. */
export interface Tally {
  cases: number;
  elements: number;
  offByOne: number;
  failures: string[];
  /** FNV-1a over the bits of every exact-mode native output: the same on every ISA and thread count. */
  exactHash: number;
}

export function newTally(): Tally {
  return { cases: 0, elements: 0, offByOne: 0, failures: [], exactHash: 0x811c9dc5 };
}

function hashBits(tally: Tally, value: number | bigint): void {
  const bits = typeof value === "bigint"
    ? Number(value & 0xffffffffn)
    : value !== value
    ? 0x7fc00000
    : bitsOf(value);
  tally.exactHash = Math.imul(tally.exactHash ^ bits, 16777619) >>> 0;
}

/**
 * Compares the reference's and the native kernel's outputs: every element of the view with `judge`, and
 * every other position of the storage bitwise (neither kernel may write outside its view).
 */
export function compareOutputs(
  tally: Tally,
  label: string,
  shape: readonly number[],
  reference: KernelOperand,
  native: KernelOperand,
  judge: Judge,
  hash: boolean,
): (number | bigint)[] {
  const positions = viewOffsets(shape, reference);
  const inView = new Uint8Array(reference.data.length);
  const problems: string[] = [];
  positions.forEach((p, k) => {
    inView[p] = 1;
    const r = reference.data[p];
    const n = native.data[p];
    if (hash) hashBits(tally, n);
    const problem = typeof r === "bigint" ? (r === n ? null : "index differs") : judge(r, n as number, k);
    if (problem !== null && problems.length < 3) {
      problems.push(`element ${k}: reference ${r}, native ${n}: ${problem}`);
    }
  });
  for (let p = 0; p < inView.length; p++) {
    if (inView[p] === 0 && !sameValue(reference.data[p], native.data[p]) && problems.length < 3) {
      problems.push(`position ${p} outside the view was written`);
    }
  }
  tally.elements += positions.length;
  if (problems.length > 0 && tally.failures.length < 20) {
    tally.failures.push(`${label}: ${problems.join("; ")}`);
  }
  return positions.map((p) => native.data[p]);
}

/** The native outputs of a case, in the row-major order of its output view. */
export type Outputs = (number | bigint)[];

function settingsFor(rng: Rng, mode?: ArithmeticMode): ComputeSettings {
  return { mode: mode ?? rng.pick(["fast", "exact"] as const), threads: 1 + rng.int(4) };
}

function describe(
  kind: string,
  op: number,
  shape: readonly number[],
  settings: ComputeSettings,
  seed: number,
): string {
  return `${kind} op ${op} shape [${
    shape.join(", ")
  }] ${settings.mode} ${settings.threads} threads (seed ${seed})`;
}

const UNARY_FILL: Record<number, [Fill, number]> = {
  [UnaryOp.Exp]: ["mixed", 100],
  [UnaryOp.Log]: ["positive", 0],
  [UnaryOp.Tanh]: ["mixed", 10],
  [UnaryOp.Sigmoid]: ["mixed", 100],
  [UnaryOp.Gelu]: ["mixed", 12],
  [UnaryOp.GeluErf]: ["mixed", 16],
  [UnaryOp.Erf]: ["mixed", 5],
  [UnaryOp.Log1p]: ["mixed", 4],
  [UnaryOp.Expm1]: ["mixed", 90],
  [UnaryOp.Silu]: ["mixed", 100],
  [UnaryOp.Softplus]: ["mixed", 30],
  [UnaryOp.Elu]: ["mixed", 20],
  [UnaryOp.Reciprocal]: ["wide", 0],
  [UnaryOp.Rsqrt]: ["positive", 0],
};

const UNARY_BOUND: Record<number, FastErrorBound> = {
  [UnaryOp.Exp]: FAST_ERROR_BOUNDS.exp,
  [UnaryOp.Log]: FAST_ERROR_BOUNDS.log,
  [UnaryOp.Tanh]: FAST_ERROR_BOUNDS.tanh,
  [UnaryOp.Sigmoid]: FAST_ERROR_BOUNDS.sigmoid,
  [UnaryOp.Gelu]: FAST_ERROR_BOUNDS.gelu,
  [UnaryOp.GeluErf]: FAST_ERROR_BOUNDS.geluErf,
  [UnaryOp.Erf]: FAST_ERROR_BOUNDS.erf,
  [UnaryOp.Log1p]: FAST_ERROR_BOUNDS.log1p,
  [UnaryOp.Expm1]: FAST_ERROR_BOUNDS.expm1,
  [UnaryOp.Silu]: FAST_ERROR_BOUNDS.silu,
  [UnaryOp.Softplus]: FAST_ERROR_BOUNDS.softplus,
  [UnaryOp.Elu]: FAST_ERROR_BOUNDS.elu,
};

/** How many unary and binary kernels the op table has. */
export const UNARY_COUNT: number = Object.keys(UnaryOp).length;
export const BINARY_COUNT: number = Object.keys(BinaryOp).length;

/** Random parameters for the parameterized unary ops (f32 values), or none. */
function unaryParams(rng: Rng, op: UnaryOp): [number, number] | undefined {
  const f = Math.fround;
  switch (op) {
    case UnaryOp.Softplus:
      return [f(rng.pick([1, 0.5, 2, 3.3])), f(rng.pick([20, 1, 5.5]))];
    case UnaryOp.LeakyRelu:
      return [f(rng.pick([0.01, 0.2, -0.3])), 0];
    case UnaryOp.Elu:
      return [f(rng.pick([1, 0.7, 2.5])), 0];
    case UnaryOp.Clamp: {
      const lo = f(rng.uniform(-3, 1));
      return [lo, rng.chance(0.2) ? f(lo - 1) : rng.chance(0.2) ? Infinity : f(lo + rng.uniform(0, 3))];
    }
    default:
      return undefined;
  }
}

/** The gelu bound's argument: |2u|, u = √(2/π)(x + 0.044715x³). */
function geluArgument(x: number): number {
  return Math.abs(2 * 0.7978845608028654 * (x + 0.044715 * x * x * x));
}

/** Runs one random unary case. `shape` and `mode` may be forced (the thread-count tests do). */
export function unaryCase(
  pool: OperandPool,
  tally: Tally,
  seed: number,
  force: { shape?: number[]; mode?: ArithmeticMode; op?: UnaryOp; threads?: number } = {},
): Outputs {
  const rng = new Rng(seed);
  const op = force.op ?? (rng.int(UNARY_COUNT) as UnaryOp);
  const shape = force.shape ?? randomShape(rng, { allowEmpty: true });
  const settings = { ...settingsFor(rng, force.mode), ...(force.threads ? { threads: force.threads } : {}) };
  const a = pool.operand("f32", randomView(rng, shape, { broadcast: true }));
  const [fill, range] = UNARY_FILL[op] ?? ["mixed", 4];
  fillF32(rng, a.data as Float32Array, fill, range);
  if (op === UnaryOp.Log && rng.chance(0.3)) fillF32(rng, a.data as Float32Array, "mixed", 4);
  const outRef = pool.operand("f32", randomView(rng, shape));
  fillF32(rng, outRef.data as Float32Array, "uniform");
  const outNat = pool.twin(outRef);
  const params = unaryParams(rng, op);
  referenceKernels.unary(op, shape, outRef, a, settings, params);
  nativeKernels.unary(op, shape, outNat, a, settings, params);
  const inputs = viewOffsets(shape, a);
  const x = (k: number) => (a.data as Float32Array)[inputs[k]];
  const transcendental = UNARY_BOUND[op] !== undefined;
  const judge = !transcendental
    ? bitwise
    : settings.mode === "exact"
    ? withinOneUlp(tally)
    : withinBound(UNARY_BOUND[op], op === UnaryOp.Gelu ? (k) => geluArgument(x(k)) : () => 0);
  tally.cases++;
  return compareOutputs(
    tally,
    describe("unary", op, shape, settings, seed),
    shape,
    outRef,
    outNat,
    judge,
    settings.mode === "exact",
  );
}

/** Runs one random binary case. */
export function binaryCase(
  pool: OperandPool,
  tally: Tally,
  seed: number,
  force: { shape?: number[]; mode?: ArithmeticMode; op?: BinaryOp; threads?: number } = {},
): Outputs {
  const rng = new Rng(seed);
  const op = force.op ?? (rng.int(BINARY_COUNT) as BinaryOp);
  const shape = force.shape ?? randomShape(rng, { allowEmpty: true });
  const settings = { ...settingsFor(rng, force.mode), ...(force.threads ? { threads: force.threads } : {}) };
  const a = pool.operand("f32", randomView(rng, shape, { broadcast: true }));
  const b = pool.operand("f32", randomView(rng, shape, { broadcast: true }));
  const comparison = binaryWritesBool(op);
  if (op === BinaryOp.Pow) {
    fillF32(rng, a.data as Float32Array, rng.pick(["positive", "mixed", "ties"] as const), 4);
    fillF32(rng, b.data as Float32Array, rng.pick(["uniform", "ties", "mixed"] as const), 3);
  } else {
    const fill = rng.pick(
      comparison ? ["ties", "mixed"] as const : ["mixed", "wide", "ties", "uniform"] as const,
    );
    fillF32(rng, a.data as Float32Array, fill);
    fillF32(rng, b.data as Float32Array, fill);
  }
  const outRef = pool.operand(comparison ? "u8" : "f32", randomView(rng, shape));
  (outRef.data as Uint8Array).fill(7);
  const outNat = pool.twin(outRef);
  referenceKernels.binary(op, shape, outRef, a, b, settings);
  nativeKernels.binary(op, shape, outNat, a, b, settings);
  let judge = bitwise;
  if (op === BinaryOp.Pow) {
    const xs = viewOffsets(shape, a);
    const ys = viewOffsets(shape, b);
    const argument = (k: number) => {
      const x = (a.data as Float32Array)[xs[k]];
      const y = (b.data as Float32Array)[ys[k]];
      return Math.abs(y * Math.log(Math.abs(x)));
    };
    judge = settings.mode === "exact" ? withinOneUlp(tally) : withinBound(FAST_ERROR_BOUNDS.pow, argument);
  }
  if (op === BinaryOp.GeluBackward) {
    judge = geluBackwardJudge(tally, viewOffsets(shape, a), viewOffsets(shape, b), a, b, settings.mode);
  }
  tally.cases++;
  return compareOutputs(
    tally,
    describe("binary", op, shape, settings, seed),
    shape,
    outRef,
    outNat,
    judge,
    settings.mode === "exact",
  );
}

/** Runs one random reduction case. */
export function reduceCase(
  pool: OperandPool,
  tally: Tally,
  seed: number,
  force: { shape?: number[]; reduced?: number; mode?: ArithmeticMode; op?: ReduceOp; threads?: number } = {},
): Outputs {
  const rng = new Rng(seed);
  const op = force.op ?? (rng.int(Object.keys(ReduceOp).length) as ReduceOp);
  const indices = op === ReduceOp.ArgMax || op === ReduceOp.ArgMin;
  const shape = force.shape ??
    randomShape(rng, { allowEmpty: op <= ReduceOp.Mean || op === ReduceOp.Prod });
  const reduced = force.reduced ?? rng.int(shape.length + 1);
  const settings = { ...settingsFor(rng, force.mode), ...(force.threads ? { threads: force.threads } : {}) };
  const kept = shape.slice(0, shape.length - reduced);
  const a = pool.operand("f32", randomView(rng, shape, { broadcast: true }));
  fillF32(
    rng,
    a.data as Float32Array,
    op <= ReduceOp.Mean ? rng.pick(["mixed", "wide", "uniform"] as const) : "ties",
  );
  const outRef = pool.operand(indices ? "i64" : "f32", randomView(rng, kept));
  if (indices) (outRef.data as BigInt64Array).fill(-7n);
  else fillF32(rng, outRef.data as Float32Array, "uniform");
  const outNat = pool.twin(outRef);
  referenceKernels.reduce(op, shape, reduced, outRef, a, settings);
  nativeKernels.reduce(op, shape, reduced, outNat, a, settings);
  let judge = bitwise;
  if (op <= ReduceOp.Mean && settings.mode === "fast") {
    // Fast sums add in f64 lanes: within count·2^-52·Σ|x| of the ordered f64 sum before the f32 rounding.
    const count = shape.slice(kept.length).reduce((n, e) => n * e, 1);
    const bases = viewOffsets(kept, { offset: a.offset, strides: a.strides.slice(0, kept.length) });
    const inner = { offset: 0, strides: a.strides.slice(kept.length) };
    const innerOffsets = viewOffsets(shape.slice(kept.length), inner);
    judge = (r, n, k) => {
      if (sameValue(r, n)) return null;
      let absSum = 0;
      for (const o of innerOffsets) absSum += Math.abs((a.data as Float32Array)[bases[k] + o]);
      if (op === ReduceOp.Mean) absSum /= count;
      const allowed = ulp(r) + count * 2 ** -52 * absSum;
      return Math.abs(n - r) <= allowed ? null : `sum error ${Math.abs(n - r)} above ${allowed}`;
    };
  }
  tally.cases++;
  return compareOutputs(
    tally,
    describe(`reduce (${reduced} axes)`, op, shape, settings, seed),
    kept,
    outRef,
    outNat,
    judge,
    settings.mode === "exact",
  );
}

/** Runs one random softmax case. */
export function softmaxCase(
  pool: OperandPool,
  tally: Tally,
  seed: number,
  force: { shape?: number[]; mode?: ArithmeticMode; op?: SoftmaxOp; threads?: number } = {},
): Outputs {
  const rng = new Rng(seed);
  const op = force.op ?? (rng.int(2) as SoftmaxOp);
  const shape = force.shape ?? randomShape(rng, { minRank: 1, allowEmpty: true });
  const settings = { ...settingsFor(rng, force.mode), ...(force.threads ? { threads: force.threads } : {}) };
  const a = pool.operand("f32", randomView(rng, shape, { broadcast: true }));
  fillF32(
    rng,
    a.data as Float32Array,
    rng.pick(["uniform", "mixed", "ties"] as const),
    rng.pick([4, 30, 200]),
  );
  const outRef = pool.operand("f32", randomView(rng, shape));
  fillF32(rng, outRef.data as Float32Array, "uniform");
  const outNat = pool.twin(outRef);
  referenceKernels.softmax(op, shape, outRef, a, settings);
  nativeKernels.softmax(op, shape, outNat, a, settings);
  const bound = op === SoftmaxOp.Softmax ? FAST_ERROR_BOUNDS.softmax : FAST_ERROR_BOUNDS.logSoftmax;
  const judge = settings.mode === "exact" ? withinOneUlp(tally) : withinBound(bound, () => 0);
  tally.cases++;
  return compareOutputs(
    tally,
    describe("softmax", op, shape, settings, seed),
    shape,
    outRef,
    outNat,
    judge,
    settings.mode === "exact",
  );
}

/** What a pooling case may fix: the input extents, 2×2 windows of stride 2 (`pairs`), mode and threads. */
export interface PoolForce {
  input?: [number, number, number, number];
  pairs?: boolean;
  mode?: ArithmeticMode;
  threads?: number;
}

/**
 * A random pooling geometry: 30 % (or `force.pairs`) the 2×2 windows of stride 2 that the native kernels run
 * in vectors, over rows up to 41 wide, else any kernel, stride and padding (and with `dilated`, dilation).
 */
function poolGeometry(rng: Rng, force: PoolForce, dilated: boolean): Pool2dParams {
  const pairs = force.pairs ?? rng.chance(0.3);
  const input = force.input ??
    [1 + rng.int(2), 1 + rng.int(3), 1 + rng.int(12), pairs ? 2 + rng.int(40) : 1 + rng.int(12)];
  const [, , h, w] = input;
  if (pairs) return { input, kernel: [2, 2], stride: [2, 2], padding: [0, 0] };
  dilated = dilated && rng.chance(0.5);
  const dilation: [number, number] = dilated ? [1 + rng.int(2), 1 + rng.int(2)] : [1, 1];
  const reach = (size: number, d: number) =>
    1 + rng.int(Math.max(1, Math.min(Math.floor((size - 1) / d) + 1, 4)));
  const kernel: [number, number] = [reach(h, dilation[0]), reach(w, dilation[1])];
  const stride: [number, number] = [1 + rng.int(3), 1 + rng.int(3)];
  // Padding only without dilation: a dilated window over padding may hold no tap.
  const padding: [number, number] = dilated ? [0, 0] : [rng.int(kernel[0]), rng.int(kernel[1])];
  return { input, kernel, stride, padding, dilation };
}

/** [N, C, OH, OW] of a pooling geometry. */
function pooledShape(params: Pool2dParams): number[] {
  const [n, c, h, w] = params.input;
  const extent = (size: number, k: number, s: number, p: number, d: number) =>
    Math.floor((size + 2 * p - d * (k - 1) - 1) / s) + 1;
  const [dh, dw] = params.dilation ?? [1, 1];
  return [
    n,
    c,
    extent(h, params.kernel[0], params.stride[0], params.padding[0], dh),
    extent(w, params.kernel[1], params.stride[1], params.padding[1], dw),
  ];
}

/** Half the views contiguous, so that the native kernels' vector paths (rows stepping by one) run often. */
function poolView(rng: Rng, shape: readonly number[], broadcast = false): View {
  return rng.chance(0.5) ? contiguousView(shape) : randomView(rng, shape, { broadcast });
}

/** Runs one random max-pooling case (values and, when asked, indices must match bitwise). */
export function poolCase(pool: OperandPool, tally: Tally, seed: number, force: PoolForce = {}): Outputs {
  const rng = new Rng(seed);
  const params = poolGeometry(rng, force, false);
  const { input, kernel, stride, padding } = params;
  const settings = { ...settingsFor(rng, force.mode), ...(force.threads ? { threads: force.threads } : {}) };
  const outShape = pooledShape(params);
  const x = pool.operand("f32", poolView(rng, input, true));
  fillF32(rng, x.data as Float32Array, rng.pick(["ties", "mixed", "uniform"] as const));
  const outView = poolView(rng, outShape);
  const outRef = pool.operand("f32", outView);
  fillF32(rng, outRef.data as Float32Array, "uniform");
  const outNat = pool.twin(outRef);
  const want = rng.chance(0.7);
  const indRef = want ? pool.operand("i32", rng.chance(0.5) ? outView : poolView(rng, outShape)) : null;
  if (indRef !== null) (indRef.data as Int32Array).fill(-7);
  const indNat = indRef === null ? null : pool.twin(indRef);
  referenceKernels.maxPool2d(params, outRef, x, indRef, settings);
  nativeKernels.maxPool2d(params, outNat, x, indNat, settings);
  const label = `maxPool2d input [${input}] kernel [${kernel}] stride [${stride}] padding [${padding}] ` +
    `${settings.mode} ${settings.threads} threads (seed ${seed})`;
  tally.cases++;
  const values = compareOutputs(tally, label, outShape, outRef, outNat, bitwise, settings.mode === "exact");
  if (indRef === null || indNat === null) return values;
  return values.concat(compareOutputs(tally, `${label} indices`, outShape, indRef, indNat, bitwise, true));
}

/**
 * Runs one random max-pooling backward case: the winners of a reference forward pass (local indices), a
 * random output gradient (specials, −0 included), and the input gradient of both kernel sets, bitwise.
 */
export function poolBackwardCase(
  pool: OperandPool,
  tally: Tally,
  seed: number,
  force: PoolForce = {},
): Outputs {
  const rng = new Rng(seed);
  const params = { ...poolGeometry(rng, force, true), localIndices: true };
  const { input, kernel, stride, padding, dilation } = params;
  const settings = { ...settingsFor(rng, force.mode), ...(force.threads ? { threads: force.threads } : {}) };
  const outShape = pooledShape(params);
  const x = pool.operand("f32", contiguousView(input));
  fillF32(rng, x.data as Float32Array, rng.pick(["ties", "uniform"] as const));
  const values = pool.operand("f32", contiguousView(outShape));
  const indices = pool.operand("i32", poolView(rng, outShape));
  referenceKernels.maxPool2d({ ...params, output: [outShape[2], outShape[3]] }, values, x, indices, settings);
  const g = pool.operand("f32", poolView(rng, outShape, true));
  fillF32(rng, g.data as Float32Array, rng.pick(["mixed", "ties", "uniform"] as const));
  const gradRef = pool.operand("f32", poolView(rng, input));
  fillF32(rng, gradRef.data as Float32Array, "uniform");
  const gradNat = pool.twin(gradRef);
  const full = { ...params, output: [outShape[2], outShape[3]] as [number, number] };
  referenceKernels.maxPool2dBackward(full, gradRef, g, indices, settings);
  nativeKernels.maxPool2dBackward(full, gradNat, g, indices, settings);
  const label =
    `maxPool2dBackward input [${input}] kernel [${kernel}] stride [${stride}] padding [${padding}] ` +
    `dilation [${dilation}] ${settings.mode} ${settings.threads} threads (seed ${seed})`;
  tally.cases++;
  return compareOutputs(tally, label, input, gradRef, gradNat, bitwise, settings.mode === "exact");
}

/** Everything one conformance run checked, as the ISA child process reports it. */
export interface ConformanceReport {
  cases: number;
  elements: number;
  offByOne: number;
  failures: string[];
  exactHash: number;
}

/** `count` random cases of every kernel family from `seed` on, in a fixed order. */
export function conformanceRun(seed: number, count: number): ConformanceReport {
  const tally = newTally();
  const pool = new OperandPool();
  try {
    for (let i = 0; i < count; i++) {
      binaryCase(pool, tally, seed + 5 * i);
      unaryCase(pool, tally, seed + 5 * i + 1);
      reduceCase(pool, tally, seed + 5 * i + 2);
      softmaxCase(pool, tally, seed + 5 * i + 3);
      poolCase(pool, tally, seed + 5 * i + 4);
      poolBackwardCase(pool, tally, 9_000_000 + seed + i);
      indexCase(pool, tally, 7_000_000 + seed + i);
      selectCase(pool, tally, 8_000_000 + seed + i);
      if (i % 16 === 15) pool.release();
    }
  } finally {
    pool.release();
  }
  return tally;
}

/**
 * Runs one random indexing case (gather, scatter-add or cumsum, `src/kernels/indexing.ts`): random strides,
 * broadcast inputs, I32 or I64 indices, and now and then an index out of range (unless `force.inRange`), which
 * both kernels must refuse without writing. Always bitwise (the kernel is the same in both modes).
 */
export function indexCase(
  pool: OperandPool,
  tally: Tally,
  seed: number,
  force: { op?: IndexOp; shape?: number[]; threads?: number; inRange?: boolean } = {},
): Outputs {
  const rng = new Rng(seed);
  const op = force.op ?? (rng.int(Object.keys(IndexOp).length) as IndexOp);
  const shape = force.shape ?? randomShape(rng, { minRank: 1, maxRank: 4, allowEmpty: true });
  const axis = rng.int(shape.length);
  const bound = 1 + rng.int(6);
  const settings = { ...settingsFor(rng), ...(force.threads ? { threads: force.threads } : {}) };
  // The indexed operand: the iteration shape with `bound` along the axis (cumsum: the iteration shape).
  const tableShape = shape.map((e, d) => (d === axis && op !== IndexOp.CumSum ? bound : e));
  const writesTable = op === IndexOp.ScatterAdd;
  const table = pool.operand("f32", randomView(rng, tableShape, { broadcast: !writesTable }));
  const flat = pool.operand("f32", randomView(rng, shape, { broadcast: writesTable }));
  fillF32(rng, table.data as Float32Array, "mixed");
  fillF32(rng, flat.data as Float32Array, "mixed");
  let index: KernelOperand | null = null;
  if (op !== IndexOp.CumSum) {
    const wide = rng.chance(0.5);
    index = pool.operand(wide ? "i64" : "i32", randomView(rng, shape, { broadcast: true }));
    const bad = !force.inRange && rng.chance(0.1) ? rng.int(index.data.length) : -1;
    for (let i = 0; i < index.data.length; i++) {
      const v = i === bad ? rng.pick([-1, bound]) : rng.int(bound);
      if (wide) (index.data as BigInt64Array)[i] = BigInt(v);
      else (index.data as Int32Array)[i] = v;
    }
  }
  const tableNat = pool.twin(table);
  const flatNat = pool.twin(flat);
  const okRef = referenceIndex(op, shape, axis, bound, table, flat, index, settings);
  const okNat = nativeIndex(op, shape, axis, bound, tableNat, flatNat, index, settings);
  const label = describe(`index (axis ${axis}, bound ${bound})`, op, shape, settings, seed);
  if (okRef !== okNat) tally.failures.push(`${label}: reference says ${okRef}, native ${okNat}`);
  tally.cases++;
  return writesTable
    ? compareOutputs(tally, label, tableShape, table, tableNat, bitwise, settings.mode === "exact")
    : compareOutputs(tally, label, shape, flat, flatNat, bitwise, settings.mode === "exact");
}

/** The storage type of each element size the select kernel takes. */
const SELECT_TYPES: Record<number, ElementType> = { 1: "u8", 2: "u16", 4: "i32", 8: "i64" };

/** Integer elements compared exactly (`bitwise` reads values through f32, which would round 4-byte words). */
const sameInteger: Judge = (r, n) => (r === n ? null : "bits differ");

/**
 * Runs one random select case (`where`'s kernel, `src/kernels/select.ts`): an element size of 1, 2, 4 or 8
 * bytes holding random bits (as f32 words: NaN payloads and subnormals included), random strides, broadcast inputs, a
 * condition of random bytes (any nonzero byte is true). Always bitwise (the kernel moves bits in both modes).
 */
export function selectCase(
  pool: OperandPool,
  tally: Tally,
  seed: number,
  force: { bytes?: number; shape?: number[]; threads?: number } = {},
): Outputs {
  const rng = new Rng(seed);
  const bytes = force.bytes ?? rng.pick([1, 2, 4, 8]);
  const type = SELECT_TYPES[bytes];
  const shape = force.shape ?? randomShape(rng, { allowEmpty: true });
  const settings = { ...settingsFor(rng), ...(force.threads ? { threads: force.threads } : {}) };
  const randomBits = (o: KernelOperand, zeros: number) => {
    const raw = new Uint8Array(o.data.buffer, o.data.byteOffset, o.data.byteLength);
    for (let i = 0; i < raw.length; i++) raw[i] = rng.chance(zeros) ? 0 : rng.int(256);
  };
  const cond = pool.operand("u8", randomView(rng, shape, { broadcast: true }));
  randomBits(cond, 0.5);
  const a = pool.operand(type, randomView(rng, shape, { broadcast: true }));
  const b = pool.operand(type, randomView(rng, shape, { broadcast: true }));
  randomBits(a, 0);
  randomBits(b, 0);
  const outRef = pool.operand(type, randomView(rng, shape));
  randomBits(outRef, 0);
  const outNat = pool.twin(outRef);
  referenceSelect(bytes, shape, outRef, cond, a, b, settings);
  nativeSelect(bytes, shape, outNat, cond, a, b, settings);
  tally.cases++;
  const label = describe(`select (${bytes}-byte elements)`, 0, shape, settings, seed);
  return compareOutputs(tally, label, shape, outRef, outNat, sameInteger, true);
}

/** Whether two runs' outputs are the same bits (NaNs equal). */
export function sameOutputs(x: Outputs, y: Outputs): boolean {
  return x.length === y.length && x.every((v, i) => sameValue(v, y[i]));
}

// Child process of safety_fuzz.test.ts: thousands of seeded random calls at zigtensor's public constructors,
// methods and ops, with random shapes, views (strides, offsets), dtypes, option objects and values around
// 2^31, 2^32 and 2^53 and non-numbers. Every call must either throw one of zigtensor's typed errors or return
// what the reference kernels return for the same call (exact mode; see `agree`; any NaN matches any NaN).
// Prints "case N" to stderr before each case, so a parent that sees this process die knows the seed; prints
// one JSON summary line on stdout. Environment: FUZZ_SEED (first seed), FUZZ_CASES (how many), FUZZ_SECONDS (a
// time budget: stop early once spent).
import assert from "node:assert/strict";
import { writeSync } from "node:fs";
import {
  ActivationScope,
  Arena,
  DType,
  DTypeError,
  Layout,
  ops,
  OptionError,
  referenceKernels,
  StaleTensorError,
  Tensor,
  TensorCompute,
  TensorShapeError,
  TensorVersionError,
} from "../../mod.ts";
import { Xorshift128 } from "../../src/core/random.ts";
import { lengthening, shifty } from "../helpers/hostile_arrays.ts";

const TYPED = [TensorShapeError, DTypeError, OptionError, StaleTensorError, TensorVersionError];
const first = Number(process.env.FUZZ_SEED ?? 1);
const cases = Number(process.env.FUZZ_CASES ?? 1000);
/** A time budget: the run stops early (reporting how many cases ran) once it is spent. */
const seconds = Number(process.env.FUZZ_SECONDS ?? 1e9);

class Rng {
  readonly #words: Xorshift128;
  constructor(seed: number) {
    this.#words = new Xorshift128(seed);
  }
  int(n: number): number {
    return this.#words.next() % n;
  }
  chance(p: number): boolean {
    return this.#words.next() / 2 ** 32 < p;
  }
  pick<T>(values: readonly T[]): T {
    return values[this.int(values.length)];
  }
}

/** Values that break rules: big integers, non-integers, non-numbers, PyTorch option spellings. */
const WEIRD: unknown[] = [
  0,
  1,
  -1,
  2,
  3,
  -2,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 31 + 2,
  -(2 ** 31),
  2 ** 32,
  2 ** 32 + 1,
  2 ** 53,
  2 ** 53 - 1,
  -(2 ** 53),
  1.5,
  NaN,
  Infinity,
  -Infinity,
  "a",
  "1",
  null,
  undefined,
  {},
  [],
  [1, 2],
  [2 ** 31, 1],
  true,
  5n,
  { dim: 1 },
  { keepdim: true },
  { axis: 0 },
  { keepDims: true },
  { kernel: 2 },
  { stride: {} },
  [1],
];
const DTYPES = [
  DType.F32,
  DType.F32,
  DType.F32,
  DType.F64,
  DType.I32,
  DType.I64,
  DType.U8,
  DType.Bool,
  DType.F16,
  DType.BF16,
];

/** The integer and Bool dtypes, with whether each is signed. */
const INTEGER_DTYPES: readonly [DType, boolean][] = [
  [DType.I8, true],
  [DType.I16, true],
  [DType.I32, true],
  [DType.I64, true],
  [DType.U8, false],
  [DType.U16, false],
  [DType.U32, false],
  [DType.U64, false],
  [DType.Bool, false],
];

/** A random integer or Bool tensor of `shape` (values around 0, and the dtype's ends), as a random view. */
function integerTensor(rng: Rng, dtype: DType, signed: boolean, shape: number[]): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const big = dtype === DType.I64 || dtype === DType.U64;
  const values = Array.from(
    { length: n },
    () => rng.int(dtype === DType.Bool ? 2 : 256) - (signed ? 128 : 0),
  );
  const t = big ? Tensor.from(values.map(BigInt), shape, { dtype }) : Tensor.from(values, shape, { dtype });
  return t.rank > 0 && rng.chance(0.3) ? t.flip(rng.int(t.rank)) : t;
}

/**
 * A fresh array that reads differently at each access (an accessor element that gives a small value once and
 * a huge or non-integer one after, or a proxy whose length grows after the first read): the library must read
 * what it checks once, so what reaches a kernel is what was checked.
 */
function hostile(rng: Rng, values: number[]): number[] {
  if (values.length === 0 || rng.chance(0.3)) return lengthening(values, 2);
  const index = rng.int(values.length);
  return shifty(values, index, values[index], rng.pick([2 ** 26, 2 ** 31, -1, 1.5, NaN]));
}

function weird(rng: Rng): unknown {
  if (rng.chance(0.08)) return hostile(rng, [1 + rng.int(2), 1 + rng.int(2)]);
  return rng.pick(WEIRD);
}

/** A small integer most of the time, a weird value sometimes. */
function smallOr(rng: Rng, n: number, p = 0.15): unknown {
  return rng.chance(p) ? weird(rng) : rng.int(n) - (rng.chance(0.2) ? Math.floor(n / 2) : 0);
}

function randomShape(rng: Rng, maxRank = 4): number[] {
  const shape = Array.from({ length: rng.int(maxRank + 1) }, () => rng.int(5));
  return rng.chance(0.05) ? hostile(rng, shape) : shape;
}

/** A random tensor: random dtype and values, then random view steps (permute, slice, flip, expand, select). */
function randomTensor(rng: Rng, dtype?: DType, shape?: number[]): Tensor {
  const d = dtype ?? rng.pick(DTYPES);
  const s = shape ?? randomShape(rng);
  const n = s.reduce((a, b) => a * b, 1);
  const values = Array.from({ length: n }, () => rng.chance(0.05) ? NaN : rng.int(200) / 8 - 12);
  let t = d === DType.Bool
    ? Tensor.from(values.map((v) => v > 0), s)
    : d === DType.I64
    ? Tensor.from(values.map((v) => BigInt(Math.trunc(v || 0))), s)
    : Tensor.from(values, s, { dtype: d });
  for (let step = rng.int(3); step > 0 && t.rank > 0; step--) {
    const axis = rng.int(t.rank);
    const kind = rng.int(4);
    if (kind === 0) t = t.permute(Array.from({ length: t.rank }, (_, i) => t.rank - 1 - i));
    else if (kind === 1 && t.shape[axis] > 1) t = t.slice(axis, rng.int(2), t.shape[axis], 1 + rng.int(2));
    else if (kind === 2) t = t.flip(axis);
    else if (t.shape[axis] === 1) t = t.expand(t.shape.map((e, i) => (i === axis ? 3 : e)));
  }
  return t;
}

function randomOptions(rng: Rng, keys: readonly string[]): unknown {
  if (rng.chance(0.1)) return weird(rng);
  const options: Record<string, unknown> = {};
  for (const key of keys) if (rng.chance(0.5)) options[key] = rng.chance(0.6) ? rng.int(3) + 1 : weird(rng);
  if (rng.chance(0.1)) options[rng.pick(["dim", "keepdim", "bogus", "kernel_size"])] = 1;
  return options;
}

type Call = (rng: Rng) => unknown;

/** A seed for rand/randn: small, weird, never undefined (an unseeded call is random by design). */
function seedOf(rng: Rng): never {
  const seed = rng.chance(0.5) ? rng.int(100) : weird(rng);
  return (seed === undefined ? 7 : seed) as never;
}

/** ops.lstm (4 gates) or ops.gru (3) on random, often strided or mis-shaped, operands and states. */
function recurrentCall(r: Rng, gates: number): Tensor {
  const [n, steps, hidden] = [r.int(3), r.int(3) + (r.chance(0.9) ? 1 : 0), 1 + r.int(3)];
  const weights = {
    weightIh: randomTensor(r, DType.F32, [gates * hidden, 2]),
    weightHh: randomTensor(r, DType.F32, [gates * hidden, hidden]),
    ...(r.chance(0.5) ? { biasIh: randomTensor(r, DType.F32, [gates * hidden]) } : {}),
    ...(r.chance(0.5) ? { biasHh: randomTensor(r, DType.F32, [gates * hidden]) } : {}),
  };
  const x = randomTensor(r, DType.F32, [n, steps, 2]);
  const state = () => randomTensor(r, DType.F32, [1, n, hidden]);
  const options = r.chance(0.3)
    ? randomOptions(r, gates === 4 ? ["h0", "c0"] : ["h0"])
    : gates === 4
    ? { h0: state(), c0: state() }
    : { h0: state() };
  return gates === 4
    ? ops.lstm(x, weights, options as never).c
    : ops.gru(x, weights, options as never).output;
}

/** Every public constructor, method and op, with random (often wrong) arguments. */
const CALLS: Record<string, Call> = {
  from: (r) =>
    Tensor.from(
      r.chance(0.8) ? [1, 2, 3, 4] : weird(r) as never,
      r.chance(0.7) ? undefined : randomShape(r) as never,
      r.chance(0.7) ? undefined : { dtype: r.pick(DTYPES) },
    ),
  empty: (r) =>
    Tensor.empty(r.chance(0.8) ? randomShape(r) : [smallOr(r, 4)] as never, { dtype: r.pick(DTYPES) }).shape,
  zeros: (r) =>
    Tensor.zeros(
      randomShape(r),
      r.chance(0.2) ? randomOptions(r, ["arena", "dtype"]) as never : { dtype: r.pick(DTYPES) },
    ),
  full: (r) =>
    Tensor.full(randomShape(r), r.chance(0.7) ? r.int(9) : weird(r) as never, { dtype: r.pick(DTYPES) }),
  scalar: (r) => Tensor.scalar(r.chance(0.7) ? r.int(9) : weird(r) as never),
  rand: (r) => Tensor.rand(randomShape(r), { seed: seedOf(r) }),
  randn: (r) => Tensor.randn(randomShape(r), { seed: seedOf(r), ...(r.chance(0.1) ? { generator: 1 } : {}) }),
  construct: (r) => {
    const t = randomTensor(r);
    return new Tensor({
      storage: t.storage,
      dtype: r.chance(0.8) ? t.dtype : r.pick(DTYPES),
      shape: r.chance(0.5) ? t.shape : [smallOr(r, 64, 0.3)] as never,
      strides: r.chance(0.5) ? t.strides : [smallOr(r, 8, 0.3)] as never,
      offset: r.chance(0.5) ? t.offset : smallOr(r, 64, 0.3) as never,
    });
  },
  tamper: (r) => {
    // What reaches a kernel is what the handle was checked with: changes to its arrays or prototypes are refused
    // (frozen), and own properties or another prototype on a handle or its storage change only what code
    // outside the library reads. Either way the op gives the reference result.
    const t = randomTensor(r, DType.F32);
    const array = (r.chance(0.5) ? t.shape : t.strides) as number[];
    const refused = [
      () => (array[r.int(t.rank + 1)] = weird(r) as number),
      () => Object.defineProperty(array, 0, { get: () => 2 ** 26 }),
      () => (array.length = t.rank + 1),
      () => Object.defineProperty(Tensor.prototype, "strides", { get: () => [2 ** 26] }),
    ];
    const shadowing = [
      () => Object.defineProperty(t, r.pick(["shape", "strides"]), { value: [2 ** 26] }),
      () => Object.defineProperty(t, r.pick(["offset", "size", "dtype", "blockSize"]), { value: 2 ** 28 }),
      () => Object.defineProperty(t, "isContiguous", { value: true }),
      () => Object.setPrototypeOf(t, null),
      () =>
        Object.defineProperty(t.storage, r.pick(["byteLength", "isReleased", "pointer"]), { value: 2 ** 30 }),
    ];
    if (r.chance(0.5)) {
      assert.throws(r.pick(refused), TypeError);
    } else {
      r.pick(shadowing)();
    }
    return r.pick([
      () => ops.add(t, 1),
      () => ops.sum(t),
      () => ops.clone(t),
      () => ops.softmax(t),
      () => ops.matmul(t.rank === 2 ? t : ops.reshape(ops.clone(t), [-1, 1]), Tensor.ones([1, 2])),
    ])();
  },
  get: (r) => {
    const t = randomTensor(r);
    return t.get(...t.shape.map((e) => (r.chance(0.9) ? r.int(Math.max(e, 1)) : weird(r)) as number));
  },
  set: (r) => {
    const t = randomTensor(r).contiguous().clone();
    t.set(r.chance(0.6) ? r.int(9) : weird(r) as never, ...t.shape.map((e) => r.int(Math.max(e, 1))));
    return t;
  },
  fill: (r) => {
    const t = randomTensor(r);
    if (t.strides.some((s, i) => s === 0 && t.shape[i] > 1)) return null;
    t.fill(r.chance(0.6) ? r.int(9) : weird(r) as never);
    return t;
  },
  copyFrom: (r) => {
    const t = randomTensor(r, DType.F32, [2, 3]).clone();
    t.copyFrom(r.chance(0.7) ? randomTensor(r) : weird(r) as never);
    return t;
  },
  item: (r) => randomTensor(r, undefined, [1]).item(),
  toNested: (r) => randomTensor(r).toNested(),
  data: (r) => randomTensor(r).data(),
  permute: (r) => {
    const t = randomTensor(r);
    return t.permute(
      r.chance(0.5) ? Array.from({ length: t.rank }, (_, i) => t.rank - 1 - i) : weird(r) as never,
    );
  },
  transpose: (r) => randomTensor(r).transpose(smallOr(r, 4) as number, smallOr(r, 4) as number),
  slice: (r) => {
    const t = randomTensor(r);
    return t.slice(
      smallOr(r, 4) as number,
      smallOr(r, 3) as number,
      smallOr(r, 6) as number,
      r.chance(0.5) ? 1 + r.int(3) : weird(r) as number,
    );
  },
  select: (r) => randomTensor(r).select(smallOr(r, 4) as number, smallOr(r, 4) as number),
  flip: (r) => randomTensor(r).flip(smallOr(r, 4) as number),
  unsqueeze: (r) => randomTensor(r).unsqueeze(smallOr(r, 4) as number),
  squeeze: (r) => randomTensor(r).squeeze(r.chance(0.5) ? undefined : smallOr(r, 4) as number),
  expand: (r) => randomTensor(r).expand(r.chance(0.7) ? randomShape(r) : weird(r) as never),
  reshape: (r) => randomTensor(r).reshape(r.chance(0.7) ? [-1] : randomShape(r)),
  contiguous: (r) => randomTensor(r).contiguous(),
  clone: (r) => randomTensor(r).clone(),
  cast: (r) => randomTensor(r).cast(r.chance(0.9) ? r.pick(DTYPES) : weird(r) as never),
  toLayout: (r) =>
    randomTensor(r, DType.F32, [1, 1 + r.int(5), 2, 2]).toLayout(
      r.chance(0.7) ? r.pick([Layout.Nchw, Layout.Nhwc, Layout.nchwc(4)]) : weird(r) as never,
    ),
  binary: (r) => {
    const shape = randomShape(r, 3);
    const a = randomTensor(r, r.chance(0.9) ? DType.F32 : undefined, shape);
    const b = r.chance(0.2) ? r.int(5) : randomTensor(
      r,
      r.chance(0.9) ? DType.F32 : undefined,
      r.chance(0.8) ? shape.slice(r.int(shape.length + 1)) : randomShape(r, 3),
    );
    const f = r.pick([
      ops.add,
      ops.sub,
      ops.mul,
      ops.div,
      ops.maximum,
      ops.minimum,
      ops.pow,
      ops.eq,
      ops.lt,
      ops.ge,
      ops.logicalAnd,
      ops.logicalXor,
    ]);
    return f(a, b as never);
  },
  unary: (r) => {
    const f = r.pick([
      ops.neg,
      ops.relu,
      ops.exp,
      ops.log,
      ops.sqrt,
      ops.tanh,
      ops.sigmoid,
      ops.abs,
      ops.gelu,
    ]);
    return f(randomTensor(r, r.chance(0.9) ? DType.F32 : undefined));
  },
  gelu: (r) =>
    ops.gelu(
      randomTensor(r, r.chance(0.9) ? DType.F32 : undefined),
      r.chance(0.8)
        ? { approximate: r.pick(["none", "tanh"] as const) }
        : randomOptions(r, ["approximate"]) as never,
    ),
  where: (r) => {
    const shape = randomShape(r, 3);
    const dtype = r.pick(DTYPES);
    const part = () => (r.chance(0.8) ? shape.slice(r.int(shape.length + 1)) : randomShape(r, 3));
    const operand = () =>
      r.chance(0.2)
        ? r.chance(0.8) ? r.int(9) - 4 : weird(r)
        : randomTensor(r, r.chance(0.9) ? dtype : undefined, part());
    const cond = r.chance(0.9) ? randomTensor(r, DType.Bool, part()) : randomTensor(r);
    return r.chance(0.8)
      ? ops.where(cond, operand() as never, operand() as never)
      : randomTensor(r, dtype, part()).where(cond, operand() as never);
  },
  clampTensor: (r) => {
    const shape = randomShape(r, 3);
    const bound = () =>
      r.chance(0.3) ? undefined : r.chance(0.7)
        ? randomTensor(
          r,
          r.chance(0.9) ? DType.F32 : undefined,
          r.chance(0.8) ? shape.slice(r.int(shape.length + 1)) : randomShape(r, 3),
        )
        : r.chance(0.7)
        ? r.int(5) - 2
        : weird(r);
    return ops.clamp(
      randomTensor(r, r.chance(0.9) ? DType.F32 : undefined, shape),
      { min: bound(), max: bound() } as never,
    );
  },
  reduce: (r) => {
    const t = randomTensor(r, r.chance(0.9) ? DType.F32 : undefined);
    const f = r.pick(["sum", "mean", "max", "min", "any", "all"] as const);
    const axis = r.chance(0.3) ? undefined : r.chance(0.8) ? smallOr(r, t.rank + 1) : weird(r);
    const options = r.chance(0.4)
      ? undefined
      : r.chance(0.3)
      ? r.chance(0.5)
      : randomOptions(r, ["keepDims"]);
    return ops[f](t, axis as never, options as never);
  },
  argmax: (r) => ops.argmax(randomTensor(r, DType.F32), smallOr(r, 3) as number, r.chance(0.5) as never),
  // Issue 12: integer and Bool tensors in the element-wise, logical and reduction ops, with numbers (whole,
  // fractional, out of range, weird) and operands of another dtype.
  integer: (r) => {
    const [dtype, signed] = r.pick(INTEGER_DTYPES);
    const shape = randomShape(r, 3);
    const a = integerTensor(r, dtype, signed, shape);
    const other = r.chance(0.85) ? [dtype, signed] as const : r.pick(INTEGER_DTYPES);
    const b = r.chance(0.3) ? (r.chance(0.7) ? r.int(300) - 150 : weird(r)) : integerTensor(
      r,
      other[0],
      other[1],
      r.chance(0.8) ? shape.slice(r.int(shape.length + 1)) : randomShape(r, 3),
    );
    const binary = [
      ops.add,
      ops.sub,
      ops.mul,
      ops.div,
      ops.pow,
      ops.eq,
      ops.ne,
      ops.lt,
      ops.le,
      ops.gt,
      ops.ge,
      ops.logicalAnd,
      ops.logicalOr,
      ops.logicalXor,
    ];
    const reductions = ["sum", "mean", "max", "min", "any", "all"] as const;
    const pick = r.int(binary.length + reductions.length + 3);
    if (pick < binary.length) {
      return r.chance(0.8) ? binary[pick](a, b as never) : binary[pick](b as never, a);
    }
    const axis = r.chance(0.3) ? undefined : r.chance(0.8) ? smallOr(r, a.rank + 1) : weird(r);
    const options = r.chance(0.5)
      ? undefined
      : r.chance(0.3)
      ? r.chance(0.5)
      : randomOptions(r, ["keepDims"]);
    if (pick < binary.length + reductions.length) {
      return ops[reductions[pick - binary.length]](a, axis as never, options as never);
    }
    if (pick === binary.length + reductions.length) return ops.logicalNot(a);
    return (r.chance(0.5) ? ops.argmax : ops.argmin)(a, smallOr(r, a.rank) as number, options as never);
  },
  softmax: (r) => ops.softmax(randomTensor(r, DType.F32), smallOr(r, 3) as number),
  logSoftmax: (r) => ops.logSoftmax(randomTensor(r, DType.F32), smallOr(r, 3) as number),
  matmul: (r) => {
    const k = 1 + r.int(4);
    const a = randomTensor(r, DType.F32, r.chance(0.8) ? [1 + r.int(3), k] : randomShape(r));
    const b = randomTensor(r, DType.F32, r.chance(0.8) ? [k, 1 + r.int(3)] : randomShape(r));
    return ops.matmul(a, b);
  },
  conv2d: (r) => {
    const c = r.int(3);
    const x = randomTensor(r, DType.F32, [1, c, 2 + r.int(4), 2 + r.int(4)]);
    const w = randomTensor(r, DType.F32, [1 + r.int(2), c, 1 + r.int(2), 1 + r.int(2)]);
    return ops.conv2d(x, w, randomOptions(r, ["stride", "padding", "dilation", "groups"]) as never);
  },
  avgPool2d: (r) =>
    ops.avgPool2d(
      randomTensor(r, DType.F32, [1, 2, 2 + r.int(4), 2 + r.int(4)]),
      randomOptions(r, ["kernel", "stride", "padding"]) as never,
    ),
  maxPool2d: (r) =>
    ops.maxPool2d(
      randomTensor(r, DType.F32, [1, 2, 2 + r.int(4), 2 + r.int(4)]),
      randomOptions(r, ["kernel", "stride", "padding"]) as never,
    ),
  bigWindow: (r) => {
    const big = [
      1,
      2,
      3,
      2 ** 30,
      2 ** 31 - 2,
      2 ** 31 - 1,
      2 ** 31,
      2 ** 31 + 2,
      2 ** 32,
      2 ** 53 - 1,
      2 ** 53,
    ];
    const x = randomTensor(r, DType.F32, [1, 1, 1 + r.int(4), 1 + r.int(4)]);
    const options = { kernel: r.pick(big), padding: r.chance(0.5) ? 0 : r.pick(big), stride: r.pick(big) };
    const f = r.pick(["maxPool2d", "avgPool2d", "conv2d", "slice"] as const);
    if (f === "conv2d") {
      const { kernel: _, ...rest } = options;
      return ops.conv2d(x, Tensor.ones([1, 1, 1 + r.int(2), 1 + r.int(2)]), {
        ...rest,
        dilation: r.pick(big),
      });
    }
    if (f === "slice") return x.slice(r.int(4), 0, x.shape[0], r.pick(big));
    return ops[f](x, options);
  },
  concat: (r) =>
    ops.concat([
      randomTensor(r, DType.F32, [2, 2]),
      r.chance(0.8) ? randomTensor(r, DType.F32, [r.int(3), 2]) : weird(r) as never,
    ], smallOr(r, 2) as number),
  embedding: (r) =>
    ops.embedding(
      Tensor.from([0, 1, r.chance(0.8) ? 2 : 9], [3], { dtype: DType.I32 }),
      randomTensor(r, DType.F32, [4, 2]),
      randomOptions(r, ["paddingIdx"]) as never,
    ),
  layerNorm: (r) =>
    ops.layerNorm(
      randomTensor(r, DType.F32, [2, 3]),
      r.chance(0.8) ? 3 : weird(r) as never,
      randomOptions(r, ["eps"]) as never,
    ),
  attention: (r) => {
    const q = randomTensor(r, DType.F32, [1, 2, 2, 3]);
    // kv heads 1, 2 or 3 (3 does not divide q's 2: enableGqa refuses it).
    const kvHeads = 1 + r.int(3);
    return ops.attention(
      q,
      randomTensor(r, DType.F32, [1, kvHeads, 2, 3]),
      randomTensor(r, DType.F32, [1, r.chance(0.8) ? kvHeads : 2, 2, 3]),
      randomOptions(r, ["causal", "scale", "dropout", "training", "seed", "enableGqa"]) as never,
    );
  },
  ctcLoss: (r) =>
    ops.ctcLoss(
      randomTensor(r, DType.F32, [3, 2, 4]),
      randomTensor(r, r.pick([DType.I32, DType.I64, DType.U8, DType.F32]), r.chance(0.5) ? [2, 2] : [3]),
      r.chance(0.8) ? [3, 2] : weird(r) as never,
      r.chance(0.8) ? [2, 1] : [r.int(4) - 1, 9] as never,
      randomOptions(r, ["blank", "zeroInfinity"]) as never,
    ),
  lstm: (r) => recurrentCall(r, 4),
  gru: (r) => recurrentCall(r, 3),
  crossEntropy: (r) => {
    const x = randomTensor(r, DType.F32, r.chance(0.8) ? [2, 3] : randomShape(r));
    const target = r.chance(0.3)
      ? randomTensor(r, r.pick([DType.F32, DType.I64, DType.U8]), r.chance(0.5) ? [2, 3] : randomShape(r))
      : Tensor.from([r.int(4) - (r.chance(0.2) ? 101 : 0), 1], [2], {
        dtype: r.pick([DType.I32, DType.I64]),
      });
    const options = randomOptions(r, ["reduction", "ignoreIndex", "labelSmoothing", "weight"]) as Record<
      string,
      unknown
    >;
    if (r.chance(0.3) && options !== null && typeof options === "object") {
      options.weight = randomTensor(r, DType.F32, r.chance(0.7) ? [3] : randomShape(r));
    }
    return r.chance(0.5)
      ? ops.crossEntropy(x, target, options as never)
      : ops.nllLoss(x, target, options as never);
  },
  arena: (r) => {
    const arena = new Arena({ chunkBytes: r.chance(0.8) ? 4096 : weird(r) as never });
    try {
      const t = Tensor.full(randomShape(r), 1, { dtype: DType.F32, arena });
      const sum = ops.sum(t).item();
      if (r.chance(0.5)) arena.reset();
      return sum;
    } finally {
      arena.dispose();
    }
  },
  stale: (r) => {
    const t = randomTensor(r, DType.F32);
    t.dispose();
    return r.pick([
      () => t.add(1),
      () => ops.add(1, t),
      () => t.clone(),
      () => t.cast(DType.F64),
      () => t.get(0),
      () => ops.softmax(t),
    ])();
  },
};

/** A comparable digest of a result: tensors by dtype, shape and bytes (NaN bit patterns folded). */
function digest(value: unknown): unknown {
  if (value instanceof Tensor) {
    const array = value.toArray();
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    const isFloat = array instanceof Float32Array || array instanceof Float64Array;
    const words = isFloat
      ? Array.from(array as Float32Array, (v) => (Number.isNaN(v) ? "NaN" : Object.is(v, -0) ? "-0" : v))
      : Array.from(bytes);
    return { dtype: value.dtype, shape: [...value.shape], words };
  }
  if (ArrayBuffer.isView(value)) return Array.from(value as Uint8Array, String);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "number" && Number.isNaN(value)) return "NaN";
  return value ?? null;
}

/**
 * Whether two digests agree: the same structure, integers and bit patterns equal, floats within 8 units of
 * f32 rounding of the larger (exp, log, tanh, sigmoid, GELU, erf, pow and softmax are within 1 ulp of the
 * reference in exact mode, and compositions compound it; the kernel conformance tests check bits).
 */
function agree(a: unknown, b: unknown): boolean {
  if (typeof a === "number" && typeof b === "number") {
    if (a === b) return true;
    return Math.abs(a - b) <= 8 * 2 ** -24 * Math.max(Math.abs(a), Math.abs(b));
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => agree(v, b[i]));
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length &&
      keys.every((k) => agree((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }
  return a === b;
}

function outcome(
  name: string,
  seed: number,
  kernels?: typeof referenceKernels,
): { error?: string; value?: unknown } {
  try {
    const run = () => {
      using _ = new ActivationScope();
      // Through JSON: bigints and NaN become strings, -0 stays a string from digest(), the rest numbers.
      return JSON.parse(JSON.stringify(
        digest(CALLS[name](new Rng(seed))),
        (_, v) => (typeof v === "bigint" ? `${v}n` : Number.isNaN(v) ? "NaN" : v),
      ));
    };
    const value = kernels === undefined
      ? TensorCompute.run({ mode: "exact" }, run)
      : TensorCompute.run({ mode: "exact", kernels }, run);
    return { value };
  } catch (error) {
    if (TYPED.some((type) => error instanceof type)) return { error: (error as Error).name };
    throw new Error(
      `${name} (seed ${seed}) threw an untyped error: ${(error as Error)?.stack ?? String(error)}`,
    );
  }
}

const names = Object.keys(CALLS);
const counts = { calls: 0, typedErrors: 0, results: 0 };
const start = performance.now();
let ran = 0;
for (let i = 0; i < cases && performance.now() - start < seconds * 1000; i++, ran++) {
  const seed = first + i;
  const name = names[seed % names.length];
  writeSync(2, `case ${seed} ${name}\n`);
  const native = outcome(name, seed);
  const reference = outcome(name, seed, referenceKernels);
  counts.calls += 2;
  if (!agree(native, reference)) {
    throw new Error(
      `${name} (seed ${seed}): native and reference differ\n native ${
        JSON.stringify(native).slice(0, 400)
      }\n` +
        ` reference ${JSON.stringify(reference).slice(0, 400)}`,
    );
  }
  if (native.error !== undefined) counts.typedErrors++;
  else counts.results++;
}
console.log(JSON.stringify({ first, cases: ran, ...counts }));

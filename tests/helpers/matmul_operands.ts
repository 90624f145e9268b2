// Operands for the matmul conformance tests: strided f32 views over native blocks (row-major, transposed,
// dilated, reversed, with broadcast batch axes), and the conformance run itself, which compares the native
// GEMM with the reference in both modes. Run as a script, it prints one JSON report for the ISA forced by
// ZIGTENSOR_ISA (tests/kernels_matmul.test.ts runs it once per variant).
import { kernelInfo } from "../../src/native/kernel_info.ts";
import {
  fastMatMulBound,
  nativeMatMul,
  nativePackedMatMul,
  referenceMatMul,
} from "../../src/kernels/matmul.ts";
import type { ArithmeticMode, KernelOperand } from "../../src/kernels/types.ts";
import { NativeBlock, Rng, viewOffsets } from "./operands.ts";

/** How an operand's matrix axes are laid out in its storage. */
export type Layout = "row" | "transposed" | "dilated" | "reversed";
export const LAYOUTS: readonly Layout[] = ["row", "transposed", "dilated", "reversed"];

/** A strided view over its own native block. */
export interface NativeOperand extends KernelOperand {
  readonly data: Float32Array;
  readonly block: NativeBlock;
}

/**
 * Lays out `shape` ([...batch, rows, cols]) in a new native block: `layout` for the matrix axes, row-major
 * batch axes, stride 0 for the batch axes in `broadcast`, and a few elements before the first one. Every
 * element of the block, view or gap, is filled from `fill`.
 */
export function makeOperand(
  shape: readonly number[],
  layout: Layout,
  broadcast: readonly boolean[],
  fill: () => number,
): NativeOperand {
  const rank = shape.length;
  const order = shape.map((_, axis) => axis);
  if (layout === "transposed") [order[rank - 2], order[rank - 1]] = [order[rank - 1], order[rank - 2]];
  const strides = new Array<number>(rank).fill(0);
  let span = layout === "dilated" ? 2 : 1;
  for (let i = rank - 1; i >= 0; i--) {
    const axis = order[i];
    if (broadcast[axis]) continue;
    strides[axis] = span;
    span *= Math.max(shape[axis], 1);
  }
  let offset = 3;
  if (layout === "reversed") {
    for (const axis of [rank - 2, rank - 1]) {
      offset += Math.max(shape[axis] - 1, 0) * strides[axis];
      strides[axis] = -strides[axis];
    }
  }
  const length = span + offset + 2;
  const block = new NativeBlock(length * 4);
  const data = new Float32Array(block.buffer, 0, length);
  for (let i = 0; i < length; i++) data[i] = fill();
  return { pointer: block.pointer, data, offset, strides, block };
}

/** Returns the operand's block (its data reads as empty afterwards); throws if a kernel wrote past it. */
export function releaseOperand(operand: NativeOperand): void {
  if (!operand.block.release()) {
    throw new Error(`a ${operand.block.bytes}-byte operand block written past its end`);
  }
}

/** Returns a packed B's block; throws if the packing wrote past it. */
function releasePacked(block: NativeBlock): void {
  if (!block.release()) throw new Error(`a ${block.bytes}-byte packed B written past its end`);
}

/** A plain copy of an operand's storage, with the same view (for the reference, which reads only `data`). */
function copyOf(
  operand: NativeOperand,
  map: (x: number) => number = (x) => x,
): KernelOperand & { data: Float32Array } {
  return { ...operand, data: operand.data.map(map) };
}

/** One matmul case. */
export interface MatMulCase {
  batch: number[];
  m: number;
  n: number;
  k: number;
  layouts: [Layout, Layout, Layout];
  /** Which batch axes of a and of b are broadcast (stride 0). */
  broadcastA: boolean[];
  broadcastB: boolean[];
  seed: number;
}

export function describe(c: MatMulCase): string {
  return `batch [${c.batch}] M=${c.m} N=${c.n} K=${c.k} out/a/b ${c.layouts.join("/")} ` +
    `broadcast a [${c.broadcastA}] b [${c.broadcastB}] seed ${c.seed}`;
}

/** What one case found: mismatches per mode and thread count, and whether the gaps of `out` were kept. */
export interface CaseResult {
  case: string;
  /** Exact-mode elements whose bits differ from the reference (NaN matches NaN). */
  exactMismatches: number;
  /** Fast-mode elements outside `fastMatMulBound`. */
  fastOutOfBound: number;
  /** The largest fast-mode error as a fraction of its bound. */
  fastWorstRatio: number;
  /** Storage elements outside the output view that the kernel changed. */
  gapWrites: number;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function bits(x: number): number {
  f32[0] = x;
  return Number.isNaN(f32[0]) ? -1 : u32[0];
}

/**
 * The products of one mode to check: `nativeMatMul`, and for one matrix (no batch axes, M, N, K ≥ 1, up to
 * 2^24 multiply-adds, which keeps the CHECKED runs inside Bun's test timeout) the product with B packed once
 * (`nativePackedMatMul`, packed into `packed` for each mode).
 */
function productsOf(
  c: MatMulCase,
  out: NativeOperand,
  a: NativeOperand,
  b: NativeOperand,
  packed: Map<ArithmeticMode, NativeBlock>,
  mode: ArithmeticMode,
): ((threads: number) => void)[] {
  const outShape = [...c.batch, c.m, c.n];
  const runs = [(threads: number) => nativeMatMul(outShape, c.k, out, a, b, { mode, threads })];
  if (c.batch.length === 0 && c.m > 0 && c.n > 0 && c.k > 0 && c.m * c.n * c.k <= 2 ** 24) {
    const settings = { mode, threads: 1 };
    const block = new NativeBlock(nativePackedMatMul.packedSize(c.k, c.n, settings) * 4);
    packed.set(mode, block);
    const store = block.operand(Float32Array);
    nativePackedMatMul.pack(c.k, c.n, store, b, settings);
    runs.push((threads) => nativePackedMatMul.multiply(c.m, c.n, c.k, out, a, store, { mode, threads }));
  }
  return runs;
}

/**
 * Runs one case natively in both modes for each thread count (and, for one matrix, with B packed once) and
 * compares with the reference.
 */
export function runCase(c: MatMulCase, threadCounts: readonly number[]): CaseResult {
  const rng = new Rng(c.seed);
  const outShape = [...c.batch, c.m, c.n];
  const noBroadcast = c.batch.map(() => false);
  const a = makeOperand([...c.batch, c.m, c.k], c.layouts[1], c.broadcastA, () => rng.value());
  const b = makeOperand([...c.batch, c.k, c.n], c.layouts[2], c.broadcastB, () => rng.value());
  const out = makeOperand(outShape, c.layouts[0], noBroadcast, () => 1234.5);
  const packed = new Map<ArithmeticMode, NativeBlock>();
  const result: CaseResult = {
    case: describe(c),
    exactMismatches: 0,
    fastOutOfBound: 0,
    fastWorstRatio: 0,
    gapWrites: 0,
  };
  try {
    const settings = { mode: "exact" as ArithmeticMode, threads: 1 };
    const expected = copyOf(out);
    referenceMatMul(outShape, c.k, expected, a, b, settings);
    const absSum = copyOf(out);
    referenceMatMul(outShape, c.k, absSum, copyOf(a, Math.abs), copyOf(b, Math.abs), settings);
    const where = viewOffsets(outShape, out);
    const inView = new Set(where);
    for (const mode of ["exact", "fast"] as const) {
      for (
        const [threads, run] of productsOf(c, out, a, b, packed, mode).flatMap((r) =>
          threadCounts.map((t) => [t, r] as const)
        )
      ) {
        out.data.fill(1234.5);
        run(threads);
        for (const p of where) {
          const want = expected.data[p];
          const got = out.data[p];
          if (mode === "exact") {
            if (bits(want) !== bits(got)) result.exactMismatches++;
          } else {
            // The abs-sum went through f32 rounding too: widen the bound by a relative 2^-20.
            const bound = fastMatMulBound(c.k, absSum.data[p] * (1 + 2 ** -20));
            const error = Math.abs(want - got);
            if (!(error <= bound)) result.fastOutOfBound++;
            else if (bound > 0) result.fastWorstRatio = Math.max(result.fastWorstRatio, error / bound);
          }
        }
        for (let i = 0; i < out.data.length; i++) {
          if (!inView.has(i) && out.data[i] !== 1234.5) result.gapWrites++;
        }
      }
    }
  } finally {
    packed.forEach(releasePacked);
    releaseOperand(a);
    releaseOperand(b);
    releaseOperand(out);
  }
  return result;
}

// Extents at and around the tiles and blocks of every variant (MR 6, 8, 14; NR 4, 6, 8, 12, 16, 32; KC 128,
// 192, 256, 384; MC 96, 128, 144, 168).
const M_EDGES = [1, 2, 5, 6, 7, 8, 9, 13, 14, 15, 27, 28, 29, 95, 97, 127, 129, 143, 145, 167, 169];
const N_EDGES = [1, 3, 4, 5, 7, 8, 9, 11, 12, 13, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65];
const K_EDGES = [0, 1, 2, 3, 8, 17, 127, 128, 129, 191, 192, 193, 255, 256, 257, 383, 384, 385];

/** Random cases from the edge extents, plus fixed ones across the NC blocks and the batch forms. */
export function conformanceCases(count: number, seed: number): MatMulCase[] {
  const rng = new Rng(seed);
  const cases: MatMulCase[] = [];
  const budget = 1 << 20;
  while (cases.length < count) {
    const rank = rng.pick([0, 0, 1, 2]);
    const batch = Array.from({ length: rank }, () => rng.pick([1, 2, 3]));
    const m = rng.pick(M_EDGES);
    const n = rng.pick(N_EDGES);
    const k = rng.pick(K_EDGES);
    if (batch.reduce((p, e) => p * e, 1) * m * n * Math.max(k, 1) > budget) continue;
    cases.push({
      batch,
      m,
      n,
      k,
      layouts: [rng.pick(["row", "transposed", "reversed"] as const), rng.pick(LAYOUTS), rng.pick(LAYOUTS)],
      broadcastA: batch.map(() => rng.int(4) === 0),
      broadcastB: batch.map(() => rng.int(4) === 0),
      seed: rng.int(1 << 30),
    });
  }
  const fixed: [number[], number, number, number, Layout, Layout][] = [
    // Past the NC blocks (512 and 1024 columns) and a KC block, one row block past MC.
    [[], 29, 1025, 385, "row", "row"],
    [[], 169, 520, 200, "transposed", "reversed"],
    // A long K across several KC panels, through exact mode's f64 partial sums.
    [[], 15, 33, 1100, "dilated", "transposed"],
    // Many small matrices: the batch is split across threads.
    [[4, 3], 9, 10, 11, "row", "row"],
    // A batch of 2 with 3 threads: each matrix is split too.
    [[2], 97, 65, 129, "row", "transposed"],
  ];
  for (const [batch, m, n, k, la, lb] of fixed) {
    cases.push({
      batch,
      m,
      n,
      k,
      layouts: ["row", la, lb],
      broadcastA: batch.map(() => false),
      broadcastB: batch.map((_, i) => i === 0),
      seed: m * n + k,
    });
  }
  return cases;
}

/** The conformance report of one process (one ISA). */
export interface ConformanceReport {
  isa: string;
  cases: number;
  failures: CaseResult[];
  fastWorstRatio: number;
}

export function runConformance(
  count: number,
  seed: number,
  threadCounts: readonly number[],
): ConformanceReport {
  const failures: CaseResult[] = [];
  let fastWorstRatio = 0;
  const cases = conformanceCases(count, seed);
  for (const c of cases) {
    const result = runCase(c, threadCounts);
    fastWorstRatio = Math.max(fastWorstRatio, result.fastWorstRatio);
    if (result.exactMismatches + result.fastOutOfBound + result.gapWrites > 0) failures.push(result);
  }
  return { isa: kernelInfo().isa, cases: cases.length, failures, fastWorstRatio };
}

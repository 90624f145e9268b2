/**
 * Data movement benchmarks, each figure beside its baselines from the same run:
 * - `contiguous()` of a transposed 4096×4096 f32 view (the strided copy, tiled and threaded), through the
 *   kernel call and through `Tensor` (`x.T.contiguous()`, its output allocated from the pool);
 * - a 16M-element f32 → f16 cast (the selected ISA's bulk conversion, threaded), likewise;
 * against the machine's copy bandwidth (a plain contiguous native memcpy of the same bytes, through
 * `zt_copy` of a contiguous 1-D span, on 1 thread and on all of them) and against a plain TypeScript loop.
 * Bandwidth counts bytes read plus bytes written.
 *
 *   deno bench -A bench/copy_bench.ts    Deno's own statistics per group, then the table of GB/s and ratios
 *   bun bench/copy_bench.ts              the table only
 *
 * @module
 */
import { hardwareThreads, kernelInfo } from "../src/native/kernel_info.ts";
import { nativeCopy } from "../src/kernels/copy.ts";
import { nativeCast } from "../src/kernels/cast.ts";
import { f32BitsToF16Bits } from "../src/core/convert.ts";
import { DType } from "../src/core/dtype.ts";
import { Tensor } from "../src/tensor.ts";
import { native } from "../src/native/library.ts";
import { ffi } from "../src/native/runtime.ts";
import type { KernelOperand } from "../src/kernels/types.ts";
import type { NativePointer } from "../src/native/symbols.ts";

const SIDE = 4096;
const COUNT = SIDE * SIDE; // 16M elements
const threads = hardwareThreads();

/** A native block for the whole run (never released: the process ends with the bench). */
function block(bytes: number): { pointer: NativePointer; buffer: ArrayBuffer } {
  const pointer = native.zt_pool_rent(bytes, 0);
  if (pointer === null) throw new Error(`out of native memory renting ${bytes} bytes`);
  return { pointer, buffer: ffi.arrayBuffer(pointer, bytes) };
}

const src = block(COUNT * 4);
const dst = block(COUNT * 4);
const half = block(COUNT * 2);
const srcBits = new Uint32Array(src.buffer);
const dstBits = new Uint32Array(dst.buffer);
const halfBits = new Uint16Array(half.buffer);
for (let i = 0; i < COUNT; i++) srcBits[i] = (0x3c000000 + Math.imul(i, 2654435761) % 0x07000000) >>> 0;

function operand(
  b: { pointer: NativePointer; buffer: ArrayBuffer },
  data: KernelOperand["data"],
  strides: number[],
): KernelOperand {
  return { pointer: b.pointer, data, offset: 0, strides };
}

/** The same values as a tensor, for the public-API rows (threads: the process default, all of them). */
const square = Tensor.from(new Float32Array(src.buffer), [SIDE, SIDE]);

const flatSrc = operand(src, srcBits, [1]);
const flatDst = operand(dst, dstBits, [1]);
const transposedSrc = operand(src, srcBits, [1, SIDE]);
const rowMajorDst = operand(dst, dstBits, [SIDE, 1]);
const halfDst = operand(half, halfBits, [1]);

interface Case {
  readonly group: string;
  readonly name: string;
  /** Bytes read plus bytes written per call. */
  readonly bytes: number;
  readonly baseline?: boolean;
  readonly fn: () => void;
}

const copyBytes = COUNT * 8;
const castBytes = COUNT * 6;
const transposeGroup = "contiguous() of a transposed 4096×4096 f32 view";
const castGroup = "cast 16M f32 → f16";

const cases: Case[] = [
  {
    group: transposeGroup,
    name: "memcpy of the same 64 MiB, 1 thread (bandwidth)",
    bytes: copyBytes,
    baseline: true,
    fn: () => nativeCopy(4, [COUNT], flatDst, flatSrc, 1),
  },
  {
    group: transposeGroup,
    name: `memcpy of the same 64 MiB, ${threads} threads (bandwidth)`,
    bytes: copyBytes,
    fn: () => nativeCopy(4, [COUNT], flatDst, flatSrc, threads),
  },
  {
    group: transposeGroup,
    name: "zigtensor strided copy, 1 thread",
    bytes: copyBytes,
    fn: () => nativeCopy(4, [SIDE, SIDE], rowMajorDst, transposedSrc, 1),
  },
  {
    group: transposeGroup,
    name: `zigtensor strided copy, ${threads} threads`,
    bytes: copyBytes,
    fn: () => nativeCopy(4, [SIDE, SIDE], rowMajorDst, transposedSrc, threads),
  },
  {
    group: transposeGroup,
    name: "Tensor: x.T.contiguous(), output allocated",
    bytes: copyBytes,
    fn: () => square.T.contiguous().dispose(),
  },
  {
    group: transposeGroup,
    name: "TypeScript loop",
    bytes: copyBytes,
    fn: () => {
      for (let i = 0; i < SIDE; i++) {
        const row = i * SIDE;
        for (let j = 0; j < SIDE; j++) dstBits[row + j] = srcBits[j * SIDE + i];
      }
    },
  },
  {
    group: castGroup,
    name: "memcpy of 64 MiB, 1 thread (bandwidth)",
    bytes: copyBytes,
    baseline: true,
    fn: () => nativeCopy(4, [COUNT], flatDst, flatSrc, 1),
  },
  {
    group: castGroup,
    name: `memcpy of 64 MiB, ${threads} threads (bandwidth)`,
    bytes: copyBytes,
    fn: () => nativeCopy(4, [COUNT], flatDst, flatSrc, threads),
  },
  {
    group: castGroup,
    name: "zigtensor cast, 1 thread",
    bytes: castBytes,
    fn: () => nativeCast(DType.F16, DType.F32, [COUNT], halfDst, flatSrc, 1),
  },
  {
    group: castGroup,
    name: `zigtensor cast, ${threads} threads`,
    bytes: castBytes,
    fn: () => nativeCast(DType.F16, DType.F32, [COUNT], halfDst, flatSrc, threads),
  },
  {
    group: castGroup,
    name: "Tensor: x.cast(DType.F16), output allocated",
    bytes: castBytes,
    fn: () => square.cast(DType.F16).dispose(),
  },
  {
    group: castGroup,
    name: "TypeScript loop (the §10 rule on the bits)",
    bytes: castBytes,
    fn: () => {
      for (let i = 0; i < COUNT; i++) halfBits[i] = f32BitsToF16Bits(srcBits[i]);
    },
  },
];

/** The best of `reps` timed calls after one warm-up, in seconds. */
function best(fn: () => void, reps: number): number {
  fn();
  let min = Infinity;
  for (let r = 0; r < reps; r++) {
    const start = performance.now();
    fn();
    min = Math.min(min, performance.now() - start);
  }
  return min / 1000;
}

function table(): void {
  const info = kernelInfo();
  console.log(`\nzigtensor data movement on ${info.runtime}, ISA ${info.isa}, ${threads} hardware threads`);
  console.log(
    "GB/s counts bytes read plus bytes written; ratios are against the 1-thread memcpy of the group.\n",
  );
  for (const group of [transposeGroup, castGroup]) {
    const rows = cases.filter((c) => c.group === group).map((c) => {
      const seconds = best(c.fn, c.name.startsWith("TypeScript") ? 3 : 8);
      return { ...c, seconds, gbs: c.bytes / seconds / 1e9 };
    });
    const base = rows.find((r) => r.baseline)!;
    const ts = rows.find((r) => r.name.startsWith("TypeScript"))!;
    console.log(group);
    for (const r of rows) {
      const vsCopy = `${((100 * r.gbs) / base.gbs).toFixed(0).padStart(4)} % of memcpy`;
      const vsTs = r === ts
        ? ""
        : `   ${(ts.seconds / r.seconds).toFixed(1).padStart(6)}x the TypeScript loop`;
      console.log(
        `  ${r.name.padEnd(50)} ${(r.seconds * 1e3).toFixed(2).padStart(9)} ms ${
          r.gbs.toFixed(2).padStart(7)
        } GB/s ${vsCopy}${vsTs}`,
      );
    }
    console.log();
  }
}

interface DenoBench {
  bench(options: { name: string; group: string; baseline?: boolean; fn: () => void }): void;
}

table();
const deno = (globalThis as { Deno?: DenoBench }).Deno;
if (deno !== undefined && typeof deno.bench === "function") {
  for (const c of cases) deno.bench({ name: c.name, group: c.group, baseline: c.baseline, fn: c.fn });
}

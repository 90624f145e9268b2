/**
 * Kernel benchmarks: every figure beside its baselines, measured in the same run.
 *
 * - The machine's limits, measured here by native loops of the selected variant (`zig/bench.zig`): the FMA
 *   peak of one core in f32 and f64, and the STREAM "add" bandwidth (c = a + b over 16M f32) on 1 and 2
 *   threads, with ordinary stores and with streaming stores.
 * - f32 GEMM 1024³ (fast mode on 1 and 2 threads, exact mode) against the FMA peak, a plain TypeScript loop,
 *   NumPy/OpenBLAS, ONNX Runtime for Node and TensorFlow.js; the fast GEMM of every other variant this CPU
 *   runs against that variant's own peak (and NumPy with OpenBLAS's Haswell kernel beside the avx2 one).
 * - Element-wise add of 16M f32 against the measured add bandwidth, a TypeScript loop and NumPy.
 *
 * Peers come from `bash bench/peers.sh` (into bench/.peers/), each measured by its module in `bench/peers/`
 * (`numpy.ts`, `onnxruntime.ts`, `tfjs.ts`); a missing one is skipped with a note. At the
 * end the ratios are printed as a Markdown table (the one in docs/performance.md).
 *
 *   deno bench -A bench/kernels_bench.ts   Deno's own table per case, then the ratio table
 *   deno run -A bench/kernels_bench.ts     the ratio table only (also `bun bench/kernels_bench.ts`)
 *
 * The 2-thread and bandwidth figures need a quiet machine: other processes on the cores lower them.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { hardwareThreads } from "../src/native/kernel_info.ts";
import { nativeMatMul } from "../src/kernels/matmul.ts";
import type { KernelOperand } from "../src/kernels/types.ts";
import { args } from "../src/native/arg_block.ts";
import { ISA_NAMES, type IsaName, library, native } from "../src/native/library.ts";
import { ffi } from "../src/native/runtime.ts";
import type { NativePointer } from "../src/native/symbols.ts";
import { measureNumpy } from "./peers/numpy.ts";
import { measureOrtGemm } from "./peers/onnxruntime.ts";
import { measureTfGemm } from "./peers/tfjs.ts";

const GEMM_N = 1024;
const GEMM_FLOPS = 2 * GEMM_N ** 3;
const ADD_N = 16 * 1024 * 1024;
/** Bytes an add moves per element: two loads and one store of f32 (write-allocate traffic not counted). */
const ADD_BYTES = 12 * ADD_N;
const FMA_ITERATIONS = 2_000_000;

/** One timed case: `work` units (flops or bytes) per call of `fn`. */
interface Case {
  readonly key: string;
  readonly group: string;
  readonly name: string;
  readonly work: number;
  /** Timed calls (after `warmup` untimed ones) when this file times the case itself. */
  readonly n: number;
  readonly warmup: number;
  readonly baseline?: boolean;
  readonly fn: () => unknown;
}

/** Best rate by case key, in work units per second. */
const rates = new Map<string, number>();
const notes: string[] = [];

function record(key: string, seconds: number, work: number): void {
  rates.set(key, Math.max(rates.get(key) ?? 0, work / seconds));
}

/** Wraps a case so that every call is timed and its best rate kept. */
function timed(c: Case): () => void {
  return () => {
    const start = performance.now();
    c.fn();
    record(c.key, (performance.now() - start) / 1000, c.work);
  };
}

/**
 * Times cases round-robin, one call of each per round (after their warmups), so that a burst of load from
 * other processes hits all of them alike instead of one case's whole series; the best call of each counts.
 */
function runCases(cases: readonly Case[]): void {
  for (const c of cases) for (let i = 0; i < c.warmup; i++) c.fn();
  const runs = cases.map(timed);
  const rounds = Math.max(...cases.map((c) => c.n));
  for (let round = 0; round < rounds; round++) {
    cases.forEach((c, i) => {
      if (round < c.n) runs[i]();
    });
  }
}

// --- native operands ---

interface Block {
  readonly pointer: NativePointer;
  readonly data: Float32Array;
}

function rentBlock(elements: number, fill: (i: number) => number): Block {
  const pointer = native.zt_pool_rent(elements * 4, 0);
  if (pointer === null) throw new Error(`out of native memory for ${elements} f32`);
  const data = new Float32Array(ffi.arrayBuffer(pointer, elements * 4));
  for (let i = 0; i < elements; i++) data[i] = fill(i);
  return { pointer, data };
}

function operand(block: Block, strides: number[]): KernelOperand {
  return { pointer: block.pointer, data: block.data, offset: 0, strides };
}

const gemmA = rentBlock(GEMM_N * GEMM_N, (i) => ((i * 7919) % 1000) / 1000 - 0.5);
const gemmB = rentBlock(GEMM_N * GEMM_N, (i) => ((i * 104729) % 1000) / 1000 - 0.5);
const gemmC = rentBlock(GEMM_N * GEMM_N, () => 0);
const addA = rentBlock(ADD_N, (i) => i % 1000);
const addB = rentBlock(ADD_N, (i) => (i % 7) * 0.5);
const addC = rentBlock(ADD_N, () => 0);

// --- the machine ---

function peakCase(key: string, precision: "f32" | "f64"): Case {
  const loop = precision === "f32" ? native.zt_bench_fma_f32 : native.zt_bench_fma_f64;
  return {
    key,
    group: "the machine: FMA peak",
    name: `FMA peak ${precision}, one core (${library.isa})`,
    work: loop(1000) / 1000 * FMA_ITERATIONS,
    n: 20,
    warmup: 3,
    fn: () => loop(FMA_ITERATIONS),
  };
}

function bandwidthCase(threads: number, streaming: boolean): Case {
  const stores = streaming ? "streaming" : "ordinary";
  return {
    key: `bandwidth${threads}${streaming ? "nt" : ""}`,
    group: "the machine: memory bandwidth",
    name: `add bandwidth, 16M f32, ${threads} thread(s), ${stores} stores`,
    work: ADD_BYTES,
    n: 15,
    warmup: 2,
    fn: () =>
      native.zt_bench_stream_add_f32(addC.pointer, addA.pointer, addB.pointer, ADD_N, threads, +streaming),
  };
}

function machineCases(): Case[] {
  return [
    peakCase("peak32", "f32"),
    peakCase("peak64", "f64"),
    ...[1, 2].flatMap((threads) => [bandwidthCase(threads, false), bandwidthCase(threads, true)]),
  ];
}

// --- GEMM ---

function gemmCase(key: string, mode: "fast" | "exact", threads: number): Case {
  const [a, b, c] = [gemmA, gemmB, gemmC].map((block) => operand(block, [GEMM_N, 1]));
  const settings = { mode, threads };
  return {
    key,
    group: `f32 GEMM ${GEMM_N}³`,
    name: `zigtensor ${mode}, ${threads} thread(s) (${library.isa})`,
    work: GEMM_FLOPS,
    n: mode === "fast" ? 30 : 15,
    warmup: 3,
    baseline: key === "gemmFast1",
    fn: () => nativeMatMul([GEMM_N, GEMM_N], GEMM_N, c, a, b, settings),
  };
}

/** C = A·B as a TypeScript programmer would write it: i-k-j loops over Float32Arrays. */
function typeScriptGemm(a: Float32Array, b: Float32Array, c: Float32Array, n: number): void {
  c.fill(0);
  for (let i = 0; i < n; i++) {
    const row = i * n;
    for (let p = 0; p < n; p++) {
      const aip = a[row + p];
      const bRow = p * n;
      for (let j = 0; j < n; j++) c[row + j] += aip * b[bRow + j];
    }
  }
}

function gemmCases(): Case[] {
  return [
    gemmCase("gemmFast1", "fast", 1),
    gemmCase("gemmFast2", "fast", 2),
    gemmCase("gemmExact1", "exact", 1),
    gemmCase("gemmExact2", "exact", 2),
    {
      key: "gemmTs",
      group: `f32 GEMM ${GEMM_N}³`,
      name: "TypeScript i-k-j loop",
      work: GEMM_FLOPS,
      n: 2,
      warmup: 0,
      fn: () => typeScriptGemm(gemmA.data, gemmB.data, gemmC.data, GEMM_N),
    },
  ];
}

/** Times the fast GEMM and the FMA peak of every other variant this CPU runs (selected with `zt_init`). */
function measureOtherVariants(): IsaName[] {
  const others = library.compiled.filter((isa) => library.supported.includes(isa) && isa !== library.isa);
  for (const isa of others) {
    if (native.zt_init(ISA_NAMES.indexOf(isa)) < 0) continue;
    runCases([{ ...gemmCase(`${isa}:gemm`, "fast", 1), n: 15 }, {
      ...peakCase(`${isa}:peak`, "f32"),
      n: 10,
    }]);
  }
  native.zt_init(ISA_NAMES.indexOf(library.isa));
  return others;
}

// --- element-wise add ---

type BinaryKernel = (
  op: 0,
  shape: readonly number[],
  out: KernelOperand,
  a: KernelOperand,
  b: KernelOperand,
  settings: { mode: "fast"; threads: number },
) => void;

/** `nativeKernels.binary` from src/kernels/native.ts, or a direct call of `zt_binary_f32` while it is absent. */
async function binaryKernel(): Promise<BinaryKernel> {
  try {
    // A computed specifier, so that the type check does not need the module.
    const specifier = "../src/kernels/native.ts";
    const module = await import(specifier) as { nativeKernels: { binary: BinaryKernel } };
    return module.nativeKernels.binary.bind(module.nativeKernels);
  } catch {
    notes.push("the add calls `zt_binary_f32` directly: src/kernels/native.ts is absent");
    return (op, shape, out, a, b, settings) => {
      args.shape(shape).operand(0, out.offset, out.strides).operand(1, a.offset, a.strides)
        .operand(2, b.offset, b.strides).op(op, 0, settings.threads);
      native.zt_binary_f32(args.pointer, out.pointer, a.pointer, b.pointer);
    };
  }
}

function addCases(binary: BinaryKernel): Case[] {
  const [out, a, b] = [addC, addA, addB].map((block) => operand(block, [1]));
  const group = "element-wise add, 16M f32";
  const nativeAdd = (threads: number): Case => ({
    key: `add${threads}`,
    group,
    name: `zigtensor add, ${threads} thread(s)`,
    work: ADD_BYTES,
    n: 15,
    warmup: 2,
    baseline: threads === 1,
    fn: () => binary(0, [ADD_N], out, a, b, { mode: "fast", threads }),
  });
  const typeScriptAdd: Case = {
    key: "addTs",
    group,
    name: "TypeScript loop",
    work: ADD_BYTES,
    n: 5,
    warmup: 1,
    fn: () => {
      const [x, y, z] = [addA.data, addB.data, addC.data];
      for (let i = 0; i < ADD_N; i++) z[i] = x[i] + y[i];
    },
  };
  return [nativeAdd(1), nativeAdd(2), typeScriptAdd];
}

// --- peers (bench/peers/) ---

function measureNumpyPeers(): string | null {
  const sizes = { gemmN: GEMM_N, addN: ADD_N };
  const one = measureNumpy(sizes, 1);
  if ("skipped" in one) {
    notes.push(one.skipped);
    return null;
  }
  rates.set("numpyGemm1", one.gemm);
  rates.set("numpyAdd1", one.add);
  const two = measureNumpy(sizes, 2);
  if ("skipped" in two) notes.push(two.skipped);
  else rates.set("numpyGemm2", two.gemm);
  if (library.supported.includes("avx2") && process.arch === "x64") {
    const haswell = measureNumpy(sizes, 1, "Haswell");
    if ("skipped" in haswell) notes.push(haswell.skipped);
    else rates.set("numpyGemmHaswell1", haswell.gemm);
  }
  return one.blas;
}

async function measureOrt(): Promise<void> {
  const result = await measureOrtGemm(GEMM_N, gemmA.data, gemmB.data, [1, 2]);
  if ("skipped" in result) notes.push(result.skipped);
  else for (const [threads, rate] of result) rates.set(`ortGemm${threads}`, rate);
}

async function measureTf(): Promise<string | null> {
  const result = await measureTfGemm(GEMM_N, notes);
  if (result === null) return null;
  rates.set("tfGemm", result.rate);
  return result.backend;
}

/** Runs a peer, turning a crash into a note: a broken peer must not stop the benchmark. */
async function guarded<T>(name: string, fn: () => Promise<T> | T): Promise<T | null> {
  try {
    return await fn();
  } catch (error) {
    notes.push(`${name} skipped: ${(error as Error).message.split("\n")[0]}`);
    return null;
  }
}

// --- the report ---

interface Row {
  readonly figure: string;
  readonly key: string;
  readonly against: string;
  readonly baseline: string;
  /** "percent" prints value/baseline as a percentage, "times" as a multiple. */
  readonly as: "percent" | "times";
  /** The target ratio (a fraction for percent rows), if the issue sets one. */
  readonly target?: number;
}

function gemmRows(others: readonly IsaName[]): Row[] {
  const fast1 = `GEMM fast, 1 thread (${library.isa})`;
  const rows: Row[] = [
    {
      figure: fast1,
      key: "gemmFast1",
      against: "FMA peak f32, one core",
      baseline: "peak32",
      as: "percent",
      target: 0.75,
    },
    {
      figure: fast1,
      key: "gemmFast1",
      against: "NumPy, 1 thread",
      baseline: "numpyGemm1",
      as: "percent",
      target: 0.9,
    },
    {
      figure: fast1,
      key: "gemmFast1",
      against: "ONNX Runtime, 1 thread",
      baseline: "ortGemm1",
      as: "percent",
    },
    { figure: fast1, key: "gemmFast1", against: "TensorFlow.js", baseline: "tfGemm", as: "times" },
    { figure: fast1, key: "gemmFast1", against: "TypeScript loop", baseline: "gemmTs", as: "times" },
    {
      figure: "GEMM fast, 2 threads",
      key: "gemmFast2",
      against: "GEMM fast, 1 thread",
      baseline: "gemmFast1",
      as: "times",
      target: 1.8,
    },
    {
      figure: "GEMM fast, 2 threads",
      key: "gemmFast2",
      against: "NumPy, 2 threads",
      baseline: "numpyGemm2",
      as: "percent",
    },
    {
      figure: "GEMM fast, 2 threads",
      key: "gemmFast2",
      against: "ONNX Runtime, 2 threads",
      baseline: "ortGemm2",
      as: "percent",
    },
    {
      figure: "GEMM exact, 1 thread",
      key: "gemmExact1",
      against: "GEMM fast, 1 thread",
      baseline: "gemmFast1",
      as: "percent",
      target: 0.4,
    },
    {
      figure: "GEMM exact, 1 thread",
      key: "gemmExact1",
      against: "FMA peak f64, one core",
      baseline: "peak64",
      as: "percent",
    },
    {
      figure: "GEMM exact, 2 threads",
      key: "gemmExact2",
      against: "GEMM exact, 1 thread",
      baseline: "gemmExact1",
      as: "times",
    },
  ];
  for (const isa of others) {
    const figure = `GEMM fast, 1 thread (${isa})`;
    rows.push({
      figure,
      key: `${isa}:gemm`,
      against: `FMA peak f32 (${isa})`,
      baseline: `${isa}:peak`,
      as: "percent",
    });
    if (isa === "avx2") {
      rows.push({
        figure,
        key: `${isa}:gemm`,
        against: "NumPy, 1 thread, OpenBLAS Haswell",
        baseline: "numpyGemmHaswell1",
        as: "percent",
      });
    }
  }
  return rows;
}

function addRows(): Row[] {
  const add1 = "add 16M f32, 1 thread";
  const add2 = "add 16M f32, 2 threads";
  return [
    {
      figure: add1,
      key: "add1",
      against: "add bandwidth, 1 thread, ordinary stores",
      baseline: "bandwidth1",
      as: "percent",
      target: 0.85,
    },
    {
      figure: add1,
      key: "add1",
      against: "add bandwidth, 1 thread, streaming stores",
      baseline: "bandwidth1nt",
      as: "percent",
    },
    { figure: add1, key: "add1", against: "NumPy, 1 thread", baseline: "numpyAdd1", as: "percent" },
    { figure: add1, key: "add1", against: "TypeScript loop", baseline: "addTs", as: "times" },
    {
      figure: add2,
      key: "add2",
      against: "add bandwidth, 2 threads, ordinary stores",
      baseline: "bandwidth2",
      as: "percent",
      target: 0.85,
    },
    {
      figure: add2,
      key: "add2",
      against: "add bandwidth, 2 threads, streaming stores",
      baseline: "bandwidth2nt",
      as: "percent",
    },
  ];
}

const GB_KEYS = /^(add|bandwidth|numpyAdd)/;

function formatRate(key: string): string {
  const rate = rates.get(key);
  if (rate === undefined) return "—";
  return GB_KEYS.test(key) ? `${(rate / 1e9).toFixed(1)} GB/s` : `${(rate / 1e9).toFixed(1)} GFLOP/s`;
}

function formatRow(row: Row): string {
  const value = rates.get(row.key);
  const base = rates.get(row.baseline);
  let ratio = "skipped";
  let verdict = "";
  if (value !== undefined && base !== undefined) {
    const r = value / base;
    ratio = row.as === "percent" ? `${(100 * r).toFixed(1)} %` : `${r.toFixed(2)}×`;
    if (row.target !== undefined) {
      const goal = row.as === "percent" ? `${100 * row.target} %` : `${row.target}×`;
      verdict = `${r >= row.target ? "met" : "MISSED"} (≥ ${goal})`;
    }
  }
  const cells = [row.figure, formatRate(row.key), row.against, formatRate(row.baseline), ratio, verdict];
  return `| ${cells.join(" | ")} |`;
}

function cpuModel(): string {
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8").split("\n").find((l) => l.startsWith("model name"));
    return line?.split(":")[1].trim() ?? "unknown CPU";
  } catch {
    return "unknown CPU";
  }
}

/** The 1-minute load average when the run started: above ~0.5 another process shares the cores. */
function loadAverage(): string {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ")[0];
  } catch {
    return "unknown";
  }
}

const loadAtStart = loadAverage();

function printReport(others: readonly IsaName[], blas: string | null, tfBackend: string | null): void {
  const runtime = ffi.runtime === "deno"
    ? `Deno ${(globalThis as { Deno?: { version: { deno: string } } }).Deno?.version.deno}`
    : `Bun ${(globalThis as { Bun?: { version: string } }).Bun?.version}`;
  const lines = [
    "",
    `## Kernel ratios, ${
      new Date().toISOString().slice(0, 10)
    }, ${cpuModel()}, ${runtime}, variant ${library.isa}`,
    "",
    "| figure | value | against | baseline | ratio | target |",
    "|---|---|---|---|---|---|",
    ...gemmRows(others).map(formatRow),
    ...addRows().map(formatRow),
    "",
    "| machine | value |",
    "|---|---|",
    ...["peak32", "peak64", "bandwidth1", "bandwidth1nt", "bandwidth2", "bandwidth2nt"].map((key) =>
      `| ${key} | ${formatRate(key)} |`
    ),
    "",
    `NumPy: ${blas ?? "not run"}. TensorFlow.js backend: ${tfBackend ?? "not run"}. ` +
    `Load average at the start: ${loadAtStart} (${library.isa} selected; threads on ${hardwareThreads()} CPUs).`,
    ...notes.map((note) => `Note: ${note}.`),
  ];
  console.log(lines.join("\n"));
}

// --- main ---

const cases = [...machineCases(), ...gemmCases(), ...addCases(await binaryKernel())];
const blas = await guarded("NumPy", measureNumpyPeers);
await guarded("ONNX Runtime", measureOrt);
const tfBackend = await guarded("TensorFlow.js", measureTf);
const others = measureOtherVariants();

interface DenoBench {
  bench(definition: {
    name: string;
    group: string;
    baseline?: boolean;
    n: number;
    warmup: number;
    fn: () => void;
  }): void;
}
const deno = (globalThis as { Deno?: DenoBench }).Deno;
if (deno !== undefined) {
  // Under `deno bench` these time each case; under `deno run` they are ignored and the unload handler runs
  // the cases that have no figure yet.
  for (const c of cases) {
    deno.bench({
      name: c.name,
      group: c.group,
      baseline: c.baseline,
      n: c.n,
      warmup: c.warmup,
      fn: timed(c),
    });
  }
  globalThis.addEventListener("unload", () => {
    runCases(cases.filter((c) => !rates.has(c.key)));
    printReport(others, blas, tfBackend);
  });
} else {
  runCases(cases);
  printReport(others, blas, tfBackend);
}

/**
 * Tensor-file benchmarks: loading a 16 MiB safetensors file (16 F32 tensors of 1 MiB) and a 16 MiB `.npy`
 * file with zigtensor's streamed readers, against `fs.readFileSync` of the same file (the least any loader
 * does: one copy from the page cache into memory) and against the naive loader that reads the whole file into
 * JavaScript and then copies each tensor into pool memory (two copies), in the same run.
 *
 *   deno bench -A bench/io_bench.ts     Deno: one group per format, readFileSync as the baseline
 *   bun bench/io_bench.ts               Bun: the same cases timed in a loop, ratios in a table
 *
 * @module
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import process from "node:process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DType, io, Tensor } from "../mod.ts";
import { type BenchCase, runBenchmarks } from "./harness.ts";

const dir = mkdtempSync(join(tmpdir(), "zt-io-bench-"));
const safetensorsPath = join(dir, "model.safetensors");
const npyPath = join(dir, "big.npy");
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
{
  const tensors = new Map<string, Tensor>();
  for (let i = 0; i < 16; i++) tensors.set(`layer.${i}.weight`, Tensor.randn([512, 512], { seed: i }));
  io.saveSafetensors(safetensorsPath, tensors);
  using big = Tensor.randn([2048, 2048], { seed: 99 });
  io.writeNpy(npyPath, big);
  for (const t of tensors.values()) t.dispose();
}

/** Keeps results observable so that no engine can drop the work as dead code. */
let sink = 0;

/** The naive loader: the whole file in JavaScript, then each tensor copied into pool memory. */
function naiveSafetensors(): void {
  const bytes = readFileSync(safetensorsPath);
  const length = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + length).toString("utf-8"));
  for (
    const [name, entry] of Object.entries(header) as [string, { shape: number[]; data_offsets: number[] }][]
  ) {
    const [begin, end] = entry.data_offsets;
    const data = new Float32Array(
      bytes.buffer.slice(bytes.byteOffset + 8 + length + begin, bytes.byteOffset + 8 + length + end),
    );
    using t = Tensor.from(data, entry.shape, { dtype: DType.F32 });
    sink += t.size + name.length;
  }
}

const cases: BenchCase[] = [
  {
    group: "safetensors, 16 MiB",
    name: "fs.readFileSync (one copy into a JS buffer, no tensors)",
    baseline: true,
    fn: () => void (sink += readFileSync(safetensorsPath).length),
  },
  {
    group: "safetensors, 16 MiB",
    name: "naive: readFileSync, then copy each tensor in",
    fn: naiveSafetensors,
  },
  {
    group: "safetensors, 16 MiB",
    name: "io.loadSafetensors (streamed into pool memory)",
    fn: () => {
      using tensors = io.loadSafetensors(safetensorsPath);
      sink += tensors.size;
    },
  },
  {
    group: ".npy, 16 MiB",
    name: "fs.readFileSync (one copy into a JS buffer, no tensor)",
    baseline: true,
    fn: () => void (sink += readFileSync(npyPath).length),
  },
  {
    group: ".npy, 16 MiB",
    name: "io.readNpy (streamed into pool memory)",
    fn: () => {
      using t = io.readNpy(npyPath);
      sink += t.size;
    },
  },
];

runBenchmarks(cases, { note: () => `(checksum ${sink})` });

/**
 * `io`: tensor files. safetensors (`loadSafetensors`, `saveSafetensors`), NumPy `.npy` and `.npz`
 * (`readNpy`, `writeNpy`, `readNpz`, `writeNpz`) and GGUF (`readGguf`, `writeGguf`). Readers take a path or
 * the file's bytes and read each tensor's data straight from the file into its pool block; writers write each
 * tensor's bytes straight from its storage. A corrupt, truncated or hostile file throws `TensorFileError`
 * naming the defect, and nothing outside the file is read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mkdtempSync, rmSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { io, Tensor } from "@zigtensor/zigtensor";
 * const dir = mkdtempSync(`${tmpdir()}/zt-`);
 * using x = Tensor.arange(6).reshape([2, 3]);
 * io.writeNpy(`${dir}/x.npy`, x);
 * using y = io.readNpy(`${dir}/x.npy`);
 * assert.deepEqual([...y.toArray()], [0, 1, 2, 3, 4, 5]);
 * rmSync(dir, { recursive: true });
 * ```
 *
 * @module
 */
export { loadSafetensors, saveSafetensors } from "./safetensors.ts";
export { readNpy, writeNpy } from "./npy.ts";
export { readNpz, writeNpz } from "./npz.ts";
export type { WriteNpzOptions } from "./npz.ts";
export { GgufTensors, readGguf, writeGguf } from "./gguf.ts";
export type { GgufType, GgufValue, WriteGgufOptions } from "./gguf.ts";
export { TensorMap } from "./source.ts";
export type { FileInput, FilePath, NamedTensors } from "./source.ts";

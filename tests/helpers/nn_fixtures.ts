// Reads the PyTorch fixtures that tests/fixtures/make_nn_fixtures.py wrote into tests/fixtures/nn/.
import { readFileSync } from "node:fs";
import { DType, Tensor } from "../../mod.ts";
import { type F64, f64 } from "./f64.ts";

/** A tensor as the fixture script writes it. */
export interface TensorSpec {
  readonly shape: number[];
  readonly dtype: "float32" | "int64" | "int32" | "bool";
  readonly data: (number | boolean)[];
}

/** The parsed JSON file `tests/fixtures/nn/<name>`. */
export function fixture<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(`../fixtures/nn/${name}`, import.meta.url), "utf8")) as T;
}

/** A new tensor (the caller disposes it) holding the spec's values exactly (floats as f32). */
export function tensorOf(spec: TensorSpec): Tensor {
  switch (spec.dtype) {
    case "float32":
      return Tensor.from(Float32Array.from(spec.data as number[]), spec.shape);
    case "int64":
      return Tensor.from(BigInt64Array.from(spec.data as number[], (v) => BigInt(v)), spec.shape);
    case "int32":
      return Tensor.from(Int32Array.from(spec.data as number[]), spec.shape);
    case "bool":
      return Tensor.from(spec.data as boolean[], spec.shape, { dtype: DType.Bool });
  }
}

/** The spec's values for `assertClose`. */
export function expected(spec: TensorSpec): F64 {
  return f64(spec.shape, Float64Array.from(spec.data as number[]));
}

/** A state dictionary of new tensors; `disposeAll` releases them. */
export function stateOf(specs: Record<string, TensorSpec>): Map<string, Tensor> {
  return new Map(Object.entries(specs).map(([k, v]) => [k, tensorOf(v)]));
}

/** Disposes every tensor of a map or list. */
export function disposeAll(tensors: Iterable<Tensor> | Map<string, Tensor>): void {
  for (const t of tensors instanceof Map ? tensors.values() : tensors) t.dispose();
}

/**
 * Checks for the arguments every op and creator takes: options objects with known keys only, and values of
 * the kind each parameter names. One rule everywhere: an unknown key is an `OptionError` that names it, the
 * accepted keys and, for a PyTorch spelling, the key zigtensor uses; a value of the wrong kind is an
 * `OptionError` naming the parameter; an integer the native side cannot represent is a `TensorShapeError`
 * naming the parameter and its limit.
 *
 * @module
 */
import { OptionError, TensorShapeError } from "./errors.ts";

/** PyTorch's (and NumPy's) spellings of option keys, and zigtensor's. */
const SPELLINGS: Readonly<Record<string, string>> = {
  dim: "axis",
  axes: "axis",
  keepdim: "keepDims",
  keepdims: "keepDims",
  keep_dims: "keepDims",
  kernel_size: "kernel",
  kernelSize: "kernel",
  padding_idx: "paddingIdx",
  max_norm: "maxNorm",
  ignore_index: "ignoreIndex",
  label_smoothing: "labelSmoothing",
  is_causal: "causal",
  attn_mask: "mask",
  batch_first: "batchFirst",
  num_layers: "numLayers",
  elementwise_affine: "weight",
  track_running_stats: "training",
  generator: "seed",
  device: "arena",
};

const NO_OPTIONS: Readonly<Record<string, never>> = Object.freeze({});

/**
 * `options` checked to be undefined or a plain object whose own keys are all in `accepted`; returns it, or an
 * empty object for undefined. `elsewhere` maps keys that belong in another argument to a hint saying where.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkOptions } from "./options.ts";
 * assert.deepEqual(checkOptions("sum", { keepDims: true }, ["keepDims"]), { keepDims: true });
 * assert.throws(() => checkOptions("sum", { keepdim: true }, ["keepDims"]), /keepdim.*keepDims/);
 * ```
 */
export function checkOptions<T extends object>(
  op: string,
  options: T | undefined,
  accepted: readonly string[],
  elsewhere: Readonly<Record<string, string>> = {},
): T {
  if (options === undefined) return NO_OPTIONS as T;
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new OptionError(
      op,
      `options must be an object with the keys ${list(accepted)}, got ${describe(options)}`,
    );
  }
  for (const key in options) {
    if (!Object.hasOwn(options, key) || accepted.includes(key)) continue;
    // PyTorch's snake_case names are camelCase here (count_include_pad → countIncludePad).
    const spelling = SPELLINGS[key] ?? key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    const hint = accepted.includes(spelling)
      ? `; zigtensor spells it ${spelling}`
      : Object.hasOwn(elsewhere, key)
      ? `; ${elsewhere[key]}`
      : "";
    throw new OptionError(op, `unknown option ${key}${hint} (accepted: ${list(accepted)})`);
  }
  return options;
}

/**
 * A boolean option or argument; `fallback` when undefined.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkBoolean } from "./options.ts";
 * assert.equal(checkBoolean("sum", "keepDims", undefined, false), false);
 * assert.throws(() => checkBoolean("sum", "keepDims", 1, false));
 * ```
 */
export function checkBoolean(op: string, name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") {
    throw new OptionError(op, `${name} must be a boolean, got ${describe(value)}`);
  }
  return value;
}

/**
 * An integer option or argument from `min` to `max` (by default the native side's 2^31 − 1): an `OptionError`
 * for a non-number or a non-integer, a `TensorShapeError` naming the limit for an integer out of range.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkInteger } from "./options.ts";
 * assert.equal(checkInteger("conv2d", "groups", 2, 1), 2);
 * assert.throws(() => checkInteger("conv2d", "groups", 2 ** 31, 1));
 * ```
 */
export function checkInteger(op: string, name: string, value: unknown, min: number, max = INT32_MAX): number {
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new OptionError(op, `${name} must be an integer, got ${describe(value)}`);
  }
  if (value < min || value > max) {
    throw new TensorShapeError(op, `${name} must be from ${bound(min)} to ${bound(max)}, got ${value}`);
  }
  return value;
}

/** The largest integer the native side takes for an extent, a stride, an offset or a window parameter. */
export const INT32_MAX: number = 2 ** 31 - 1;

/**
 * A short description of a value for an error message: its type, and the value when it is short.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { describe } from "./options.ts";
 * assert.equal(describe("abc"), 'the string "abc"');
 * assert.equal(describe(null), "null");
 * ```
 */
export function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === "string") {
    return `the string ${JSON.stringify(value.length > 20 ? `${value.slice(0, 20)}…` : value)}`;
  }
  if (typeof value === "number" || typeof value === "boolean") return `${typeof value} ${String(value)}`;
  if (typeof value === "bigint") return `bigint ${value}n`;
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (typeof value === "function") return "a function";
  return `an object (${Object.prototype.toString.call(value).slice(8, -1)})`;
}

function bound(n: number): string {
  if (n === INT32_MAX) return "2^31 − 1";
  if (n === Number.MAX_SAFE_INTEGER) return "2^53 − 1";
  return String(n);
}

function list(keys: readonly string[]): string {
  return keys.length === 0 ? "(none)" : keys.join(", ");
}

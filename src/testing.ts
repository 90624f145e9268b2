/**
 * `assertClose` for users' tests: PyTorch's `torch.testing.assert_close` (tfjs's `expectArraysClose`) for
 * tensors, typed arrays, nested arrays and numbers.
 *
 * @module
 */
import { AssertionError } from "node:assert";
import { dtypeInfo } from "./core/dtype.ts";
import { formatShape } from "./core/shape.ts";
import { dtypeOf, elementValuesOf, isTensor, shapeOf, Tensor, type TensorValues } from "./tensor.ts";

/** What `assertClose` compares: a tensor, a typed array, a (nested) array of numbers, or one number. */
export type CloseValues = Tensor | TensorValues | number | bigint;

/** Tolerances of `assertClose`: `|actual − expected| ≤ atol + rtol·|expected|` element by element. */
export interface CloseOptions {
  /**
   * Relative tolerance.
   *
   * @default PyTorch's for the dtype of `actual` (else `expected`) when a tensor: 1.3e-6 for F32, 1e-7 for F64,
   * 1e-3 for F16, 1.6e-2 for BF16, 0 for integers and Bool; 1e-7 for plain JS numbers (f64)
   */
  readonly rtol?: number;
  /**
   * Absolute tolerance.
   *
   * @default 1e-5 for F32, F16 and BF16, 1e-7 for F64 and plain numbers, 0 for integers and Bool
   */
  readonly atol?: number;
  /** Whether NaN matches NaN. @default false (as PyTorch) */
  readonly equalNan?: boolean;
  /** Prefixed to the failure message. */
  readonly message?: string;
}

/** PyTorch's default [rtol, atol] by dtype name (`torch.testing._comparison`). */
const DEFAULT_TOLERANCES: Readonly<Record<string, readonly [number, number]>> = {
  F32: [1.3e-6, 1e-5],
  F64: [1e-7, 1e-7],
  F16: [1e-3, 1e-5],
  BF16: [1.6e-2, 1e-5],
};

/**
 * Asserts that `actual` and `expected` have the same shape and that every element satisfies
 * `|actual − expected| ≤ atol + rtol·|expected|`; otherwise throws an `AssertionError` that counts the
 * mismatches and names the worst one by index, with both values, their difference and what was allowed.
 * Values are compared as f64 numbers; dtypes are not compared.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { assertClose, Tensor } from "@zigtensor/zigtensor";
 * using t = Tensor.from([[1, 2], [3, 4]]);
 * assertClose(t, [[1, 2], [3, 4.000001]]);
 * assert.throws(() => assertClose(t, [[1, 2], [3.5, 4]], { atol: 0.1 }), /worst at \[1, 0\]: actual 3, expected 3\.5/);
 * ```
 */
export function assertClose(actual: CloseValues, expected: CloseValues, options: CloseOptions = {}): void {
  const a = read(actual);
  const e = read(expected);
  const prefix = options.message === undefined ? "assertClose" : `${options.message}: assertClose`;
  if (a.shape.length !== e.shape.length || a.shape.some((n, i) => n !== e.shape[i])) {
    throw new AssertionError({
      message: `${prefix}: shapes differ: actual ${formatShape(a.shape)}, expected ${formatShape(e.shape)}`,
      actual: a.shape,
      expected: e.shape,
      operator: "assertClose",
    });
  }
  const [rtolDefault, atolDefault] = DEFAULT_TOLERANCES[a.dtype ?? e.dtype ?? "F64"] ?? [0, 0];
  const rtol = options.rtol ?? rtolDefault;
  const atol = options.atol ?? atolDefault;
  const equalNan = options.equalNan ?? false;
  let mismatches = 0;
  let worst = -1;
  let worstExcess = -Infinity;
  for (let i = 0; i < a.values.length; i++) {
    const x = a.values[i];
    const y = e.values[i];
    const excess = closeExcess(x, y, rtol, atol, equalNan);
    if (excess <= 0) continue;
    mismatches++;
    if (excess > worstExcess) [worst, worstExcess] = [i, excess];
  }
  if (mismatches === 0) return;
  const x = a.values[worst];
  const y = e.values[worst];
  const allowed = atol + rtol * Math.abs(y);
  throw new AssertionError({
    message:
      `${prefix}: ${mismatches} of ${a.values.length} elements are not close (rtol ${rtol}, atol ${atol}); ` +
      `the worst at ${formatShape(unravel(worst, a.shape))}: actual ${x}, expected ${y}, ` +
      `|difference| ${Math.abs(x - y)} > allowed ${allowed}`,
    actual: x,
    expected: y,
    operator: "assertClose",
  });
}

/** How far an element pair is past its tolerance: ≤ 0 when close, +∞ for a NaN or infinity mismatch. */
function closeExcess(x: number, y: number, rtol: number, atol: number, equalNan: boolean): number {
  if (Number.isNaN(x) || Number.isNaN(y)) {
    return Number.isNaN(x) && Number.isNaN(y) && equalNan ? 0 : Infinity;
  }
  if (x === y) return 0; // equal infinities
  if (!Number.isFinite(x) || !Number.isFinite(y)) return Infinity;
  return Math.abs(x - y) - (atol + rtol * Math.abs(y));
}

/** The row-major multi-index of flat position `flat` in `shape`. */
function unravel(flat: number, shape: readonly number[]): number[] {
  const index = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    index[d] = flat % shape[d];
    flat = Math.floor(flat / shape[d]);
  }
  return index;
}

/** The shape, the values as f64 numbers, and the dtype name when `value` is a tensor. */
function read(value: CloseValues): { shape: readonly number[]; values: number[]; dtype?: string } {
  if (isTensor(value)) {
    const values = elementValuesOf(value, "assertClose").map(Number);
    return { shape: shapeOf(value), values, dtype: dtypeInfo(dtypeOf(value)).name };
  }
  if (typeof value === "number" || typeof value === "bigint") return { shape: [], values: [Number(value)] };
  using t = Tensor.from(value, { dtype: "float64" });
  return { shape: shapeOf(t), values: elementValuesOf(t, "assertClose").map(Number) };
}

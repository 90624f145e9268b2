/**
 * How tensors print and serialise: `toString()`, `console.log` (through `Deno.customInspect` and
 * `nodejs.util.inspect.custom`) and `toJSON()`. The text follows PyTorch's `repr` (`torch/_tensor_str.py`):
 * every element of one tensor formatted alike, right-aligned to one width, so columns line up; floats as
 * integers with a trailing dot when all are whole, else with 4 decimals, or in scientific notation when the
 * magnitudes span more than 10³ or leave [10⁻⁴, 10⁸]; beyond 1000 elements only the first and last 3 entries
 * of each axis show, with `…` between. Unlike PyTorch's repr, dtype and shape always show, so two tensors
 * that print alike are alike.
 *
 * @module
 */
import { dtypeInfo } from "./core/dtype.ts";
import type { ElementValue } from "./core/element.ts";
import { formatShape } from "./core/shape.ts";
import type { Tensor } from "./tensor.ts";
import {
  blockSizeOf,
  dtypeOf,
  elementValuesOf,
  isReleasedOf,
  rankOf,
  requiresGradOf,
  shapeOf,
  sizeOf,
} from "./tensor.ts";

/** Print settings, PyTorch's `set_printoptions` defaults. */
const THRESHOLD = 1000;
const EDGE_ITEMS = 3;
const LINE_WIDTH = 80;
const PRECISION = 4;
const PREFIX = "Tensor(";

/** What `Tensor.toJSON()` returns: the dtype's name, the shape and the elements in row-major order. */
export interface TensorJson {
  /** zigtensor's dtype name ("F32", "I64", "Bool", ...), which `{ dtype }` options accept. */
  readonly dtype: string;
  /** The logical shape. */
  readonly shape: number[];
  /**
   * The elements in row-major order: numbers and booleans; I64/U64 values beyond ±2⁵³ as decimal strings, and
   * NaN and ±∞ as the strings "NaN", "Infinity" and "-Infinity" (JSON has no such numbers).
   */
  readonly data: (number | boolean | string)[];
}

/** The text `toString()` and the inspectors show for `t`; never throws, even for a released tensor. */
export function formatTensor(t: Tensor): string {
  const info = dtypeInfo(dtypeOf(t));
  const suffix = [`dtype=${info.name}`, `shape=${formatShape(shapeOf(t))}`];
  if (blockSizeOf(t) > 0) suffix.push(`layout=NchwC(${blockSizeOf(t)})`);
  if (t.gradFn !== null) suffix.push(`gradFn=${t.gradFn.op}`);
  else if (requiresGradOf(t)) suffix.push("requiresGrad=true");
  const tail = `, ${suffix.join(", ")})`;
  if (isReleasedOf(t)) return `${PREFIX}<released>${tail}`;
  if (info.isQuantized) return `${PREFIX}<${info.name} blocks: dequantize() to read them>${tail}`;
  if (blockSizeOf(t) > 0) return `${PREFIX}<blocked: toLayout(Layout.Nchw) to read it>${tail}`;
  if (sizeOf(t) === 0) return `${PREFIX}[]${tail}`;
  const summarize = sizeOf(t) > THRESHOLD;
  const shown = collect(t, summarize);
  const format = formatter(shown.values, info.isFloat, info.name === "Bool");
  return PREFIX + render(shown.tree, rankOf(t), PREFIX.length, format) + tail;
}

/** `toJSON()`'s value for `t`. */
export function tensorJson(t: Tensor): TensorJson {
  const info = dtypeInfo(dtypeOf(t));
  const isBool = info.name === "Bool";
  const data = elementValuesOf(t, "toJSON").map((v) => jsonValue(v, isBool));
  return { dtype: info.name, shape: [...shapeOf(t)], data };
}

function jsonValue(value: ElementValue, isBool: boolean): number | boolean | string {
  if (typeof value === "bigint") {
    return value >= -BigInt(Number.MAX_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(value)
      : value.toString();
  }
  if (isBool) return value !== 0;
  return Number.isFinite(value) ? value : String(value);
}

/** A nested list of the shown elements; `null` marks the `…` of a summarised axis. */
type Tree = ElementValue | (Tree | null)[];

/** The indices of an axis that show: all, or the first and last `EDGE_ITEMS` around a gap (−1). */
function shownIndices(extent: number, summarize: boolean): number[] {
  if (!summarize || extent <= 2 * EDGE_ITEMS) return Array.from({ length: extent }, (_, i) => i);
  const head = Array.from({ length: EDGE_ITEMS }, (_, i) => i);
  const tail = Array.from({ length: EDGE_ITEMS }, (_, i) => extent - EDGE_ITEMS + i);
  return [...head, -1, ...tail];
}

/** The shown elements of `t` as a tree, and flat for the formatter. */
function collect(t: Tensor, summarize: boolean): { tree: Tree; values: ElementValue[] } {
  const values: ElementValue[] = [];
  const walk = (prefix: number[]): Tree => {
    if (prefix.length === rankOf(t)) {
      const value = t.get(...prefix);
      values.push(value);
      return value;
    }
    return shownIndices(shapeOf(t)[prefix.length], summarize).map((i) => i < 0 ? null : walk([...prefix, i]));
  };
  return { tree: walk([]), values };
}

/** One formatting rule for every element of a tensor (PyTorch's `_Formatter`), padded to one width. */
function formatter(
  values: readonly ElementValue[],
  isFloat: boolean,
  isBool: boolean,
): (v: ElementValue) => string {
  let text: (v: ElementValue) => string;
  if (isBool) text = (v) => String(v !== 0);
  else if (!isFloat) text = (v) => v.toString();
  else {
    const finite = values.map(Number).filter((v) => Number.isFinite(v) && v !== 0).map(Math.abs);
    const min = Math.min(...finite);
    const max = Math.max(...finite);
    const whole = finite.every((v) => Number.isInteger(v));
    const scientific = finite.length > 0 && (max / min > 1000 || max > 1e8 || (!whole && min < 1e-4));
    text = (v) => {
      const x = Number(v);
      if (!Number.isFinite(x)) return Number.isNaN(x) ? "nan" : x > 0 ? "inf" : "-inf";
      if (scientific) return x.toExponential(PRECISION).replace(/e([+-])(\d)$/, "e$10$2");
      return whole ? `${x.toFixed(0)}.` : x.toFixed(PRECISION);
    };
  }
  const width = Math.max(...values.map((v) => text(v).length));
  return (v) => text(v).padStart(width);
}

/** PyTorch's layout: rows wrap at `LINE_WIDTH`, sub-tensors of rank r are separated by r − 1 blank lines. */
function render(tree: Tree, rank: number, indent: number, format: (v: ElementValue) => string): string {
  if (rank === 0) return format(tree as ElementValue);
  const items = tree as (Tree | null)[];
  if (rank === 1) {
    // PyTorch's " ..." cell: the gap reads as a column of its own.
    const cells = items.map((v) => v === null ? " …" : format(v as ElementValue));
    const width = Math.max(...cells.map((c) => c.length)) + 2;
    const perLine = Math.max(1, Math.floor((LINE_WIDTH - indent) / width));
    const lines: string[] = [];
    for (let i = 0; i < cells.length; i += perLine) lines.push(cells.slice(i, i + perLine).join(", "));
    return `[${lines.join(`,\n${" ".repeat(indent + 1)}`)}]`;
  }
  const parts = items.map((sub) => sub === null ? "…" : render(sub, rank - 1, indent + 1, format));
  return `[${parts.join(`,${"\n".repeat(rank - 1)}${" ".repeat(indent + 1)}`)}]`;
}

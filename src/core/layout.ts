/**
 * Layouts of image tensors (spec 000 §5). The logical shape is always (N, C, H, W); the layout says where the
 * elements live. NCHW and NHWC are strides over that logical shape; NchwC(B) is blocked storage
 * `[N][ceil(C/B)][H][W][B]`, an opaque tensor flagged with its block size.
 *
 * @module
 */
import { TensorShapeError } from "./errors.ts";

/** A layout: its kind and, for the blocked kind, the block size B. */
export interface Layout {
  /** Channels first, channels last, any other strides, or channels in blocks of B innermost. */
  readonly kind: "nchw" | "nhwc" | "strided" | "nchwc";
  /** B for NchwC(B), else 0. */
  readonly blockSize: number;
}

function layout(kind: Layout["kind"], blockSize = 0): Layout {
  return Object.freeze({
    kind,
    blockSize,
    toString: () => (kind === "nchwc" ? `NchwC(${blockSize})` : kind.toUpperCase()),
  });
}

const blocked = new Map<number, Layout>();

/** The shape of `Layout`. */
export interface LayoutApi {
  /** [N, C, H, W] row-major. */
  readonly Nchw: Layout;
  /** [N, C, H, W] with channels innermost in memory. */
  readonly Nhwc: Layout;
  /** Any other strides. */
  readonly Strided: Layout;
  /** NchwC(B): channels in blocks of `blockSize`, the block innermost. */
  nchwc(blockSize: number): Layout;
}

/**
 * The layouts. Blocked layouts are interned, so `t.layout === Layout.nchwc(8)` compares as expected.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Layout, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.zeros([1, 3, 4, 4]);
 * assert.ok(x.layout === Layout.Nchw);
 * using y = x.toLayout(Layout.Nhwc);
 * assert.ok(y.layout === Layout.Nhwc && y.strides.join() === "48,1,12,3");
 * ```
 */
export const Layout: LayoutApi = {
  Nchw: layout("nchw"),
  Nhwc: layout("nhwc"),
  Strided: layout("strided"),
  /** The blocked NchwC(B) layout, B in 1 … 256. */
  nchwc(blockSize: number): Layout {
    if (!Number.isInteger(blockSize) || blockSize < 1 || blockSize > 256) {
      throw new TensorShapeError(
        "Layout.nchwc",
        `the block size must be an integer in 1 to 256, got ${String(blockSize)}`,
      );
    }
    let value = blocked.get(blockSize);
    if (value === undefined) {
      value = layout("nchwc", blockSize);
      blocked.set(blockSize, value);
    }
    return value;
  },
};

/** Whether `strides` are the row-major strides of `shape` permuted by `order`, ignoring extent-1 axes. */
function matchesOrder(
  shape: readonly number[],
  strides: readonly number[],
  order: readonly number[],
): boolean {
  let step = 1;
  for (let i = order.length - 1; i >= 0; i--) {
    const axis = order[i];
    if (shape[axis] !== 1 && strides[axis] !== step) return false;
    step *= shape[axis];
  }
  return true;
}

/** NHWC strides over the logical NCHW shape: (H·W·C, 1, W·C, C). */
export function nhwcStrides(shape: readonly number[]): number[] {
  const [, c, h, w] = shape;
  return [h * w * c, 1, w * c, c];
}

/** The layout of a plain (unblocked) tensor from its strides: rank 4 only; NCHW wins when both match. */
export function detectLayout(shape: readonly number[], strides: readonly number[]): Layout {
  if (shape.length !== 4) return Layout.Strided;
  if (matchesOrder(shape, strides, [0, 1, 2, 3])) return Layout.Nchw;
  if (matchesOrder(shape, strides, [0, 2, 3, 1])) return Layout.Nhwc;
  return Layout.Strided;
}

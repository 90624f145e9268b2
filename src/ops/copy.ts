/**
 * Copies: `contiguous`, `clone`, `cast`, `copyFrom`, strided `fill`, and `toLayout`. All go through the
 * kernel set's `copy` and `cast`, so the reference set runs them too.
 *
 * @module
 */
import { type DType, dtypeInfo, type DTypeLike, toDType } from "../core/dtype.ts";
import { DTypeError, OptionError, TensorShapeError } from "../core/errors.ts";
import { describe } from "../core/options.ts";
import { checkTensor } from "./common.ts";
import { computeSettings, kernels } from "../context.ts";
import { Layout, nhwcStrides } from "../core/layout.ts";
import { checkBytes, checkShape, contiguousStrides, formatShape } from "../core/shape.ts";
import { bumpStorageVersion, Storage } from "../memory/storage.ts";
import {
  allocate,
  blockSizeOf,
  dtypeOf,
  isContiguousOf,
  layoutOf,
  offsetOf,
  operandOf,
  rankOf,
  requiresGradOf,
  shapeOf,
  storageOf,
  stridesOf,
  Tensor,
} from "../tensor.ts";
import { expandView } from "../core/views.ts";
import { record, shouldRecord } from "../autograd/record.ts";
import { blockedShape } from "../kernels/layout.ts";

/** Copies `src` (same shape) into `dst` element by element; same dtype. */
export function copyElements(op: string, dst: Tensor, src: Tensor): void {
  const info = dtypeInfo(dtypeOf(src));
  if (info.isQuantized) {
    copyQuantizedRows(op, dst, src);
    return;
  }
  kernels().copy(info.blockBytes, shapeOf(src), operandOf(dst, op), operandOf(src, op), computeSettings());
}

/** Quantized data moves a row at a time: rows are whole blocks, contiguous along the last axis. */
function copyQuantizedRows(op: string, dst: Tensor, src: Tensor): void {
  const info = dtypeInfo(dtypeOf(src));
  const b = info.blockElements;
  const rank = rankOf(src);
  // Treat each block as one element of blockBytes bytes: strides and offsets in blocks.
  const toBlocks = (t: Tensor) =>
    operandOf(t, op, [...stridesOf(t).slice(0, -1).map((s) => s / b), 1], offsetOf(t) / b);
  const shape = [...shapeOf(src).slice(0, -1), shapeOf(src)[rank - 1] / b];
  kernels().copy(info.blockBytes, shape, toBlocks(dst), toBlocks(src), computeSettings());
}

/** Itself when contiguous, else a row-major copy (recorded as Reshape). */
export function contiguous(t: Tensor): Tensor {
  checkTensor("contiguous", "the input", t);
  if (isContiguousOf(t)) return t;
  if (blockSizeOf(t) > 0) {
    throw new TensorShapeError(
      "contiguous",
      `a blocked NchwC(${blockSizeOf(t)}) tensor converts with toLayout(Layout.Nchw)`,
      [shapeOf(t)],
    );
  }
  const out = allocate("contiguous", shapeOf(t), dtypeOf(t), false, { scoped: true });
  copyElements("contiguous", out, t);
  return shouldRecord(t) ? record(out, "Reshape", [t]) : out;
}

/** A row-major copy that no scope tracks (recorded as Reshape, the identity on the logical tensor). */
export function clone(t: Tensor): Tensor {
  checkTensor("clone", "the input", t);
  if (blockSizeOf(t) > 0) {
    throw new TensorShapeError(
      "clone",
      `a blocked NchwC(${blockSizeOf(t)}) tensor converts with toLayout(Layout.Nchw)`,
      [shapeOf(t)],
    );
  }
  const out = allocate("clone", shapeOf(t), dtypeOf(t), false, { scoped: false });
  copyElements("clone", out, t);
  return shouldRecord(t) ? record(out, "Reshape", [t]) : out;
}

/** A copy converted to `dtype` (a `DType` or a name such as `"float16"`) by the cast rules. Records Cast. */
export function cast(t: Tensor, dtypeLike: DTypeLike): Tensor {
  checkTensor("cast", "the input", t);
  const dtype = toDType(dtypeLike, "cast");
  const from = dtypeInfo(dtypeOf(t), "cast");
  const to = dtypeInfo(dtype, "cast");
  if (from.isQuantized || to.isQuantized || blockSizeOf(t) > 0) {
    throw new DTypeError(
      "cast",
      `cast works on plain tensors; ${
        from.isQuantized || to.isQuantized
          ? "use quantize() and dequantize() for Q4_0/Q8_0"
          : "convert blocked tensors with toLayout() first"
      }`,
    );
  }
  if (dtype === dtypeOf(t)) return contiguousCopy("cast", t, true);
  const out = allocate("cast", shapeOf(t), dtype, false, { scoped: true });
  kernels().cast(
    dtype,
    dtypeOf(t),
    shapeOf(t),
    operandOf(out, "cast"),
    operandOf(t, "cast"),
    computeSettings(),
  );
  return shouldRecord(t) && to.isFloat ? record(out, "Cast", [t]) : out;
}

function contiguousCopy(op: string, t: Tensor, scoped: boolean): Tensor {
  const out = allocate(op, shapeOf(t), dtypeOf(t), false, { scoped });
  copyElements(op, out, t);
  return shouldRecord(t) ? record(out, "Cast", [t]) : out;
}

/** Copies `source`, broadcast to `target`'s shape and cast to its dtype, into `target`; counts as a write. */
export function copyInto(target: Tensor, source: Tensor): void {
  checkTensor("copyFrom", "the target", target);
  checkTensor("copyFrom", "the source", source);
  if (requiresGradOf(target) && shouldRecord(target)) {
    throw new OptionError(
      "copyFrom",
      "cannot write in place into a tensor that requires gradients while gradients are recorded; " +
        "use GradMode.noGrad() or detach() it",
    );
  }
  if (blockSizeOf(target) > 0 || blockSizeOf(source) > 0) {
    throw new TensorShapeError("copyFrom", "blocked tensors convert with toLayout(), not copyFrom()", [
      shapeOf(target),
      shapeOf(source),
    ]);
  }
  for (let i = 0; i < rankOf(target); i++) {
    if (stridesOf(target)[i] === 0 && shapeOf(target)[i] > 1) {
      throw new TensorShapeError(
        "copyFrom",
        `cannot write through a broadcast view of ${formatShape(shapeOf(target))}`,
        [shapeOf(target)],
      );
    }
  }
  // The kernels read and write in one pass: a source sharing the target's storage is copied out first.
  using staged = storageOf(source) === storageOf(target) ? clone(source.detach()) : null;
  const from = staged ?? source;
  const view = expandView(from, shapeOf(target), "copyFrom");
  const src = new Tensor({ storage: storageOf(from), dtype: dtypeOf(from), ...view });
  if (dtypeOf(source) === dtypeOf(target)) {
    copyElements("copyFrom", target, src);
  } else {
    const to = dtypeInfo(dtypeOf(target), "copyFrom");
    const from = dtypeInfo(dtypeOf(source), "copyFrom");
    if (to.isQuantized || from.isQuantized) {
      throw new DTypeError(
        "copyFrom",
        `cannot copy ${from.name} into ${to.name}; use quantize() or dequantize()`,
      );
    }
    kernels().cast(
      dtypeOf(target),
      dtypeOf(source),
      shapeOf(target),
      operandOf(target, "copyFrom"),
      operandOf(src, "copyFrom"),
      computeSettings(),
    );
  }
  bumpStorageVersion(storageOf(target));
}

/** Writes the stored value `value` (already encoded) into every element of a strided tensor. */
export function fillStrided(t: Tensor, value: number | bigint): void {
  const info = dtypeInfo(dtypeOf(t));
  using one = allocate("fill", [], dtypeOf(t), false, {});
  const data = one.data();
  data[0] = value as never;
  const source = operandOf(one, "fill", new Array<number>(rankOf(t)).fill(0));
  kernels().copy(info.blockBytes, shapeOf(t), operandOf(t, "fill"), source, computeSettings());
}

/** A new scoped NchwC(B) tensor of logical shape `shape` over its physical span. */
function allocateBlocked(op: string, shape: readonly number[], dtype: DType, blockSize: number): Tensor {
  checkShape(op, shape);
  const info = dtypeInfo(dtype, op);
  const bytes = blockedShape(shape, blockSize).reduce((a, b) => a * b, 1) * info.blockBytes;
  checkBytes(op, shape, bytes);
  const storage = Storage.rent(bytes, { scoped: true });
  return new Tensor({
    storage,
    dtype,
    shape: [...shape],
    strides: contiguousStrides(shape),
    offset: 0,
    blockSize,
  });
}

/**
 * `t` in `layout`, or `t` itself when it already has it. NCHW and NHWC are strides over the logical NCHW
 * shape (the conversion is recorded as Reshape, the identity on the logical tensor); NchwC(B) is blocked
 * storage, kernel-internal and never differentiable.
 */
export function toLayout(t: Tensor, layout: Layout): Tensor {
  const op = "toLayout";
  checkTensor(op, "the input", t);
  const known = layout === Layout.Nchw || layout === Layout.Nhwc || layout === Layout.Strided ||
    (typeof layout === "object" && layout !== null && layout.kind === "nchwc" &&
      Number.isInteger(layout.blockSize) && layout.blockSize >= 1 && layout.blockSize <= 256 &&
      Layout.nchwc(layout.blockSize) === layout);
  if (!known) {
    throw new OptionError(
      op,
      `layout must be Layout.Nchw, Layout.Nhwc or Layout.nchwc(B), got ${describe(layout)}`,
    );
  }
  if (rankOf(t) !== 4) {
    throw new TensorShapeError(op, `layouts apply to rank-4 NCHW tensors, got ${formatShape(shapeOf(t))}`, [
      shapeOf(t),
    ]);
  }
  const info = dtypeInfo(dtypeOf(t), op);
  if (info.isQuantized) throw new DTypeError(op, `${info.name} tensors have no image layouts`);
  if (layout.kind === "strided") {
    throw new TensorShapeError(op, "Strided is not a target layout; use Nchw, Nhwc or nchwc(B)", [
      shapeOf(t),
    ]);
  }
  if (layoutOf(t) === layout) return t;
  if (layout.kind === "nchwc") {
    if (requiresGradOf(t) && shouldRecord(t)) {
      throw new OptionError(
        "toLayout",
        "blocked NchwC(B) tensors cannot require gradients; detach() the input first",
      );
    }
    using plain = blockSizeOf(t) > 0 ? toLayout(t, Layout.Nchw) : null;
    const source = plain ?? t;
    const out = allocateBlocked(op, shapeOf(t), dtypeOf(t), layout.blockSize);
    kernels().toBlocked(
      shapeOf(t),
      layout.blockSize,
      info.blockBytes,
      operandOf(out, op),
      operandOf(source, op),
      computeSettings(),
    );
    return out;
  }
  const strides = layout.kind === "nhwc" ? nhwcStrides(shapeOf(t)) : contiguousStrides(shapeOf(t));
  const out = allocate(op, shapeOf(t), dtypeOf(t), false, { scoped: true });
  const target = new Tensor({
    storage: storageOf(out),
    dtype: dtypeOf(t),
    shape: shapeOf(t),
    strides,
    offset: 0,
  });
  if (blockSizeOf(t) > 0) {
    kernels().fromBlocked(
      shapeOf(t),
      blockSizeOf(t),
      info.blockBytes,
      operandOf(target, op),
      operandOf(t, op),
      computeSettings(),
    );
  } else {
    copyElements(op, target, t);
  }
  return shouldRecord(t) ? record(target, "Reshape", [t]) : target;
}

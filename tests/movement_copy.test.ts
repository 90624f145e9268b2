import { test } from "node:test";
import { contiguousStrides } from "../src/core/shape.ts";
import assert from "node:assert/strict";
import { forEachOffset, nativeCopy, referenceCopy } from "../src/kernels/copy.ts";
import { firstDifference, randomLayout, sizeOf } from "./helpers/movement_operands.ts";
import { NativeBlock, Rng } from "./helpers/operands.ts";

/**
 * Copies `shape` natively and by the reference from one random source into two destinations that start
 * with the same bytes; returns the first byte where the destinations differ, or -1.
 */
function compareCopy(
  random: Rng,
  elementBytes: number,
  shape: readonly number[],
  dstLayout: { offset: number; strides: readonly number[]; capacity: number },
  srcLayout: { offset: number; strides: readonly number[]; capacity: number },
  threads: number,
): number {
  using src = new NativeBlock(srcLayout.capacity * elementBytes);
  using a = new NativeBlock(dstLayout.capacity * elementBytes);
  using b = new NativeBlock(dstLayout.capacity * elementBytes);
  const s = src.bytesView();
  for (let i = 0; i < s.length; i++) s[i] = random.u32() & 0xff;
  const fill = random.u32() & 0xff;
  a.bytesView().fill(fill);
  b.bytesView().fill(fill);
  const source = src.operand(Uint8Array, srcLayout.offset, srcLayout.strides);
  nativeCopy(
    elementBytes,
    shape,
    a.operand(Uint8Array, dstLayout.offset, dstLayout.strides),
    source,
    threads,
  );
  referenceCopy(elementBytes, shape, b.operand(Uint8Array, dstLayout.offset, dstLayout.strides), source);
  return firstDifference(a.bytesView(), b.bytesView());
}

test("the reference visits offset + Σ index·stride in row-major order", () => {
  const random = new Rng(3);
  for (let trial = 0; trial < 200; trial++) {
    const shape = Array.from({ length: random.below(5) }, () => random.below(4));
    const layout = randomLayout(random, shape, true);
    const seen: number[] = [];
    forEachOffset(shape, [layout], ([o]) => seen.push(o));
    const expected: number[] = [];
    for (let flat = 0; flat < sizeOf(shape); flat++) {
      let rest = flat;
      let offset = layout.offset;
      for (let axis = shape.length - 1; axis >= 0; axis--) {
        offset += (rest % shape[axis]) * layout.strides[axis];
        rest = Math.floor(rest / shape[axis]);
      }
      expected.push(offset);
    }
    assert.deepEqual(seen, expected);
  }
});

test("strided copies of thousands of random shapes and strides match the reference byte for byte", () => {
  const random = new Rng(2024);
  const sizes = [1, 2, 4, 8, 1, 2, 4, 8, 18, 34];
  let cases = 0;
  let empty = 0;
  let busy = 0;
  for (let trial = 0; trial < 4000; trial++) {
    const rank = random.below(9);
    const shape = Array.from(
      { length: rank },
      () => random.below(20) === 0 ? 0 : 1 + random.below(rank > 5 ? 2 : 4),
    );
    if (sizeOf(shape) === 0) empty++;
    if (sizeOf(shape) > 8) busy++;
    const elementBytes = sizes[trial % sizes.length];
    const dst = randomLayout(random, shape, false);
    const src = randomLayout(random, shape, true);
    const diff = compareCopy(random, elementBytes, shape, dst, src, 1 + (trial % 4));
    assert.equal(
      diff,
      -1,
      `shape [${shape}] dst ${JSON.stringify(dst)} src ${JSON.stringify(src)} size ${elementBytes}`,
    );
    cases++;
  }
  assert.equal(cases, 4000);
  assert.ok(empty > 200 && busy > 1000, `${empty} empty, ${busy} with more than 8 elements`);
});

test("large copies take the threaded paths: transposes, permutations, broadcasts, reversed and contiguous", () => {
  const random = new Rng(77);
  const contiguous = (shape: number[]) => ({
    offset: 0,
    strides: contiguousStrides(shape),
    capacity: sizeOf(shape),
  });
  const cases: {
    shape: number[];
    src: { offset: number; strides: number[]; capacity: number };
    bytes: number;
  }[] = [
    // A transposed 300×400 matrix (one tiled block).
    { shape: [400, 300], src: { offset: 0, strides: [1, 400], capacity: 120_000 }, bytes: 4 },
    // A permuted 3-axis tensor.
    { shape: [40, 50, 60], src: { offset: 0, strides: [1, 40 * 60, 40], capacity: 120_000 }, bytes: 2 },
    // Broadcast rows: every row of the output is the same source row.
    { shape: [300, 257], src: { offset: 3, strides: [0, 1], capacity: 260 }, bytes: 8 },
    // A broadcast column (fill with one value per row).
    { shape: [1000, 131], src: { offset: 0, strides: [1, 0], capacity: 1000 }, bytes: 1 },
    // Reversed in both axes.
    { shape: [256, 300], src: { offset: 256 * 300 - 1, strides: [-300, -1], capacity: 256 * 300 }, bytes: 4 },
    // One long contiguous row (split into column chunks).
    { shape: [300_001], src: { offset: 5, strides: [1], capacity: 300_006 }, bytes: 4 },
    // A strided single row.
    { shape: [100_000], src: { offset: 0, strides: [3], capacity: 300_000 }, bytes: 2 },
    // Quantized rows: 18-byte blocks, rows of 8 blocks, every other row.
    { shape: [9000, 8], src: { offset: 0, strides: [16, 1], capacity: 144_000 }, bytes: 18 },
  ];
  for (const { shape, src, bytes } of cases) {
    for (const threads of [1, 2, 4]) {
      assert.equal(
        compareCopy(random, bytes, shape, contiguous(shape), src, threads),
        -1,
        `[${shape}] on ${threads}`,
      );
    }
  }
  // Random large views with random destination layouts too.
  for (let trial = 0; trial < 12; trial++) {
    const shape = [20 + random.below(40), 20 + random.below(40), 20 + random.below(40)];
    const dst = randomLayout(random, shape, false);
    const src = randomLayout(random, shape, trial % 2 === 0);
    assert.equal(compareCopy(random, 4, shape, dst, src, 3), -1, `[${shape}] random`);
  }
});

test("a rank-0 copy moves one element and an empty one moves nothing", () => {
  using src = new NativeBlock(16);
  using dst = new NativeBlock(16);
  new Float64Array(src.buffer).set([1.5, 2.5]);
  nativeCopy(8, [], dst.operand(Float64Array, 1, []), src.operand(Float64Array, 0, []));
  assert.deepEqual([...new Float64Array(dst.buffer)], [0, 1.5]);
  nativeCopy(8, [2, 0, 3], dst.operand(Float64Array, 0, [0, 0, 0]), src.operand(Float64Array, 1, [0, 0, 0]));
  assert.deepEqual([...new Float64Array(dst.buffer)], [0, 1.5]);
});

test("bad arguments never reach native code", () => {
  using block = new NativeBlock(64);
  const op = block.operand(Uint8Array, 0, [1]);
  assert.throws(
    () => nativeCopy(4, [17], block.operand(Uint8Array, 0, [1]), op),
    /reaches elements 0 to 16 but its storage holds 16/,
  );
  assert.throws(() => nativeCopy(0, [1], op, op), /element size/);
  assert.throws(() => nativeCopy(1, [2, 2], op, op), /has 1 strides for rank 2/);
  assert.throws(() => nativeCopy(1, [-1], op, op), /non-negative/);
  assert.throws(() => nativeCopy(1, new Array(9).fill(1), op, op), /rank 9/);
  assert.throws(() => nativeCopy(1, [2], op, block.operand(Uint8Array, 0.5, [1])), /32-bit integers/);
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { nativeCol2im, nativeIm2col, referenceCol2im, referenceIm2col } from "../src/kernels/conv.ts";
import type { ConvProductParams, ConvWindowParams } from "../src/kernels/conv.ts";
import {
  checkConvProducts,
  type ConvConformanceReport,
  convProductCases,
  runConvConformance,
  runConvProductConformance,
} from "./helpers/conv_operands.ts";
import { isaReports } from "./helpers/subprocess.ts";
import { contiguousView, fillF32, OperandPool, Rng } from "./helpers/operands.ts";

test("native im2col and col2im equal the reference exactly over random geometries, layouts and 1-4 threads", () => {
  const report = runConvConformance(40, 5, [1, 2, 3, 4]);
  assert.equal(report.cases, 40 * 2 * 4);
  assert.deepEqual(report.failures, []);
});

test(
  "native convolution products equal the reference exactly (exact) or within the matmul bound (fast), 1-4 threads",
  { timeout: 120_000 },
  () => {
    const report = runConvProductConformance(40, 9, [1, 2, 3, 4], true);
    assert.equal(report.cases, convProductCases(40, [1, 2, 3, 4], true));
    assert.deepEqual(report.failures, []);
  },
);

test(
  "every variant the host runs passes the im2col/col2im and product conformance when forced with ZIGTENSOR_ISA",
  { timeout: 120_000 },
  () => {
    for (
      const { report } of isaReports<ConvConformanceReport>(
        new URL("./children/conv_child.ts", import.meta.url),
      )
    ) {
      assert.equal(report.cases, 30 * 2 * 4 + convProductCases(20, [1, 2, 3, 4], true));
      assert.deepEqual(report.failures, []);
    }
  },
);

test("im2col by hand: zeros in the padding; col2im counts the windows covering each pixel", () => {
  const pool = new OperandPool();
  try {
    // A 3x3 image 1..9, 2x2 kernel, padding 1: 4x4 outputs per tap.
    const params: ConvWindowParams = {
      input: [1, 1, 3, 3],
      kernel: [2, 2],
      stride: [1, 1],
      padding: [1, 1],
      dilation: [1, 1],
      output: [4, 4],
    };
    const image = pool.operand("f32", contiguousView([1, 1, 3, 3]));
    (image.data as Float32Array).set([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const columns = pool.operand("f32", contiguousView([1, 1, 2, 2, 4, 4]));
    nativeIm2col(params, columns, image, { mode: "exact", threads: 1 });
    const c = [...columns.data];
    assert.deepEqual(c.slice(0, 16), [0, 0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9]);
    assert.deepEqual(c.slice(48, 64), [1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9, 0, 0, 0, 0, 0]);
    const ones = pool.operand("f32", contiguousView([1, 1, 2, 2, 4, 4]));
    (ones.data as Float32Array).fill(1);
    nativeCol2im(params, image, ones, { mode: "fast", threads: 2 });
    assert.deepEqual([...image.data], [4, 4, 4, 4, 4, 4, 4, 4, 4]);
  } finally {
    pool.release();
  }
});

test("im2col and col2im large enough to split across threads give the reference's bits on 1 to 4 threads", () => {
  const pool = new OperandPool();
  try {
    // 4·16 planes of 40×40, 3×3 taps, stride 2, padding 1: more than the kernels' threading threshold.
    const params: ConvWindowParams = {
      input: [4, 16, 40, 40],
      kernel: [3, 3],
      stride: [2, 2],
      padding: [1, 1],
      dilation: [1, 1],
      output: [20, 20],
    };
    const columnsShape = [4, 16, 3, 3, 20, 20];
    const rng = new Rng(3);
    const image = pool.operand("f32", contiguousView(params.input));
    fillF32(rng, image.data as Float32Array, "wide");
    const columns = pool.operand("f32", contiguousView(columnsShape));
    fillF32(rng, columns.data as Float32Array, "wide");
    const settings = { mode: "exact", threads: 1 } as const;
    const expectedColumns = pool.operand("f32", contiguousView(columnsShape));
    referenceIm2col(params, expectedColumns, image, settings);
    const expectedImage = pool.operand("f32", contiguousView(params.input));
    referenceCol2im(params, expectedImage, columns, settings);
    for (const threads of [1, 2, 3, 4]) {
      const outColumns = pool.operand("f32", contiguousView(columnsShape));
      nativeIm2col(params, outColumns, image, { mode: "fast", threads });
      assert.deepEqual(outColumns.data, expectedColumns.data, `im2col, ${threads} threads`);
      const outImage = pool.operand("f32", contiguousView(params.input));
      nativeCol2im(params, outImage, columns, { mode: "exact", threads });
      assert.deepEqual(outImage.data, expectedImage.data, `col2im, ${threads} threads`);
    }
  } finally {
    pool.release();
  }
});

test(
  "stride-1 products (read from a padded image) keep the reference's sums past panel depth, row blocks and thread splits",
  { timeout: 120_000 },
  () => {
    const geometry = (
      input: [number, number, number, number],
      kernel: [number, number],
      padding: [number, number],
      dilation: [number, number],
      groups: number,
      outChannels: number,
    ): ConvProductParams => {
      const extent = (axis: number) =>
        input[2 + axis] + 2 * padding[axis] - dilation[axis] * (kernel[axis] - 1);
      return {
        input,
        kernel,
        stride: [1, 1],
        padding,
        dilation,
        output: [extent(0), extent(1)],
        groups,
        outChannels,
      };
    };
    const cases = [
      // K = 30·9 = 270 crosses the panel depth; 13 output channels leave a one-row tile; OW 19 < a vector.
      geometry([2, 30, 9, 19], [3, 3], [2, 0], [2, 1], 1, 13),
      // 300 output channels pass one packed row block; padding beyond the taps' reach gives all-zero rows.
      geometry([1, 2, 5, 6], [2, 2], [3, 3], [1, 1], 1, 300),
      // One image of enough work that threads split its columns; two groups.
      geometry([1, 8, 40, 45], [3, 3], [1, 1], [1, 1], 2, 20),
    ];
    const modes = ["exact", "fast"] as const;
    const report = checkConvProducts(
      new Rng(21),
      cases.flatMap((params) => modes.map((mode) => ({ params, mode }))),
      [1, 2, 3, 4],
      21,
    );
    assert.equal(report.cases, cases.length * 2 * 2 * 4);
    assert.deepEqual(report.failures, []);
  },
);

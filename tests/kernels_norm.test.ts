import { test } from "node:test";
import assert from "node:assert/strict";
import { type NormConformanceReport, runNormConformance } from "./helpers/norm_conformance.ts";
import { isaReports } from "./helpers/subprocess.ts";
import {
  layerNormParams,
  nativeNorm,
  nativeNormBackward,
  type NormParams,
  normWorkspace,
  referenceNorm,
  referenceNormBackward,
} from "../src/kernels/norm.ts";
import type { KernelOperand } from "../src/kernels/types.ts";
import { fillF32, OperandPool, Rng } from "./helpers/operands.ts";

test("native layer and batch norm forward and backward equal the reference over random shapes, offsets and 1-4 threads", () => {
  const report = runNormConformance(60, 17, [1, 2, 3, 4]);
  assert.equal(report.cases, 60 * 4);
  assert.deepEqual(report.failures, []);
});

test("every variant the host runs passes the normalization conformance when forced with ZIGTENSOR_ISA", () => {
  for (
    const { report } of isaReports<NormConformanceReport>(
      new URL("./children/norm_child.ts", import.meta.url),
    )
  ) {
    assert.equal(report.cases, 40 * 4);
    assert.deepEqual(report.failures, []);
  }
});

test("normalizations large enough to split across threads: exact gives the reference's bits, fast the same bits on 1 to 4 threads", () => {
  // Layer norm: 700 rows of 257, past the threading threshold and across six gradient blocks, an odd width.
  // Batch norm: [9, 12, 29·31] (12 channels of 9 runs of 899).
  const layouts: NormParams[] = [
    layerNormParams(700, 257, 1e-5),
    { rows: 12, width: 899, segments: 9, segmentStride: 12 * 899, rowStride: 899, perRow: true, eps: 1e-5 },
  ];
  for (const params of layouts) {
    const pool = new OperandPool();
    try {
      const n = params.rows * params.width * params.segments;
      const parameter = params.perRow ? params.rows : params.width;
      const rng = new Rng(8);
      const f32 = (elements: number) => {
        const { pointer, data } = pool.storage("f32", elements);
        fillF32(rng, data as Float32Array, "uniform");
        return { pointer, data, offset: 0, strides: [] } as KernelOperand;
      };
      const f64 = () => {
        const { pointer, data } = pool.storage("i64", Math.max(1, normWorkspace(params)));
        return { pointer, data: new Float64Array(data.buffer), offset: 0, strides: [] } as KernelOperand;
      };
      const [x, w, b, g] = [f32(n), f32(parameter), f32(parameter), f32(n)];
      const run = (native: boolean, mode: "exact" | "fast", threads: number) => {
        const out = {
          y: f32(n),
          xhat: f32(n),
          rstd: f32(params.rows),
          mean: params.perRow ? f32(params.rows) : null,
          variance: params.perRow ? f32(params.rows) : null,
        };
        const [dx, dw, db] = [f32(n), f32(parameter), f32(parameter)];
        const settings = { mode, threads };
        (native ? nativeNorm : referenceNorm)(params, out, x, w, b, null, settings);
        (native ? nativeNormBackward : referenceNormBackward)(
          params,
          { dx, dw, db, work: f64() },
          g,
          out.xhat,
          out.rstd,
          w,
          true,
          settings,
        );
        return [out.y, out.xhat, out.rstd, out.mean ?? dx, out.variance ?? dx, dx, dw, db].map((o) =>
          Float32Array.from(o.data as Float32Array)
        );
      };
      const expected = run(false, "exact", 1);
      const fastOne = run(true, "fast", 1);
      for (const threads of [1, 2, 3, 4]) {
        assert.deepEqual(run(true, "exact", threads), expected, `exact, ${threads} threads`);
        assert.deepEqual(run(true, "fast", threads), fastOne, `fast, ${threads} threads`);
      }
    } finally {
      pool.release();
    }
  }
});

test("layerNorm by hand: rows [1, 3] and [2, 2, 2, 6] with eps 0, weight and bias; db sums g over the rows", () => {
  const pool = new OperandPool();
  try {
    const operand = (values: number[]) => {
      const { pointer, data } = pool.storage("f32", values.length);
      (data as Float32Array).set(values);
      return { pointer, data, offset: 0, strides: [] } as KernelOperand;
    };
    for (const mode of ["exact", "fast"] as const) {
      // Two rows of 4: [1, 3, 1, 3] (mean 2, std 1) and [2, 2, 2, 6] (mean 3, std √3).
      const x = operand([1, 3, 1, 3, 2, 2, 2, 6]);
      const y = operand(new Array(8).fill(9));
      const rstd = operand([9, 9]);
      nativeNorm(
        layerNormParams(2, 4, 0),
        { y, xhat: null, rstd, mean: null, variance: null },
        x,
        operand([2, 2, 2, 2]),
        operand([1, 1, 1, 1]),
        null,
        { mode, threads: 1 },
      );
      const s = 1 / Math.sqrt(3);
      const expected = [-1, 3, -1, 3, 1 - 2 * s, 1 - 2 * s, 1 - 2 * s, 1 + 6 * s];
      (y.data as Float32Array).forEach((v, i) =>
        assert.ok(Math.abs(v - expected[i]) < 1e-6, `${mode} y[${i}] ${v}`)
      );
      assert.ok(Math.abs((rstd.data as Float32Array)[1] - s) < 1e-7);
      const db = operand([9, 9, 9, 9]);
      const dx = operand(new Array(8).fill(9));
      nativeNormBackward(
        layerNormParams(2, 4, 0),
        { dx, dw: null, db, work: { ...pool.storage("i64", 8), offset: 0, strides: [] } },
        operand([1, 1, 1, 1, 1, 2, 3, 4]),
        operand([-1, 1, -1, 1, -s, -s, -s, 3 * s]),
        rstd,
        null,
        true,
        { mode, threads: 1 },
      );
      assert.deepEqual([...(db.data as Float32Array)], [2, 3, 4, 5]);
      // A constant gradient moves nothing: the row's mean is free.
      assert.deepEqual([...(dx.data as Float32Array).subarray(0, 4)].map((v) => Math.abs(v) < 1e-7), [
        true,
        true,
        true,
        true,
      ]);
    }
  } finally {
    pool.release();
  }
});

test("batch norm by hand: [N 2, C 2, S 2] per channel, the batch statistics written, then the running ones given", () => {
  const pool = new OperandPool();
  try {
    const operand = (values: number[]) => {
      const { pointer, data } = pool.storage("f32", values.length);
      (data as Float32Array).set(values);
      return { pointer, data, offset: 0, strides: [] } as KernelOperand;
    };
    const params = { rows: 2, width: 2, segments: 2, segmentStride: 4, rowStride: 2, perRow: true, eps: 0 };
    for (const mode of ["exact", "fast"] as const) {
      // Channel 0 holds 1, 3 (n = 0) and 1, 3 (n = 1): mean 2, variance 1; channel 1 holds 0, 0, 4, 4: mean 2,
      // variance 4. Weight [1, 10], bias [0, 5].
      const x = operand([1, 3, 0, 0, 1, 3, 4, 4]);
      const out = {
        y: operand(new Array(8).fill(9)),
        xhat: operand(new Array(8).fill(9)),
        rstd: operand([9, 9]),
        mean: operand([9, 9]),
        variance: operand([9, 9]),
      };
      const settings = { mode, threads: 1 };
      nativeNorm(params, out, x, operand([1, 10]), operand([0, 5]), null, settings);
      assert.deepEqual([...(out.y.data as Float32Array)], [-1, 1, -5, -5, -1, 1, 15, 15]);
      assert.deepEqual([...(out.mean.data as Float32Array)], [2, 2]);
      assert.deepEqual([...(out.variance.data as Float32Array)], [1, 4]);
      assert.deepEqual([...(out.rstd.data as Float32Array)], [1, 0.5]);
      // dweight and dbias of channel c are its own sums; without centering (given statistics) dx = rstd·g·w.
      const [dx, dw, db] = [operand(new Array(8).fill(9)), operand([9, 9]), operand([9, 9])];
      const g = operand([1, 2, 3, 4, 5, 6, 7, 8]);
      nativeNormBackward(
        params,
        { dx, dw, db, work: null },
        g,
        out.xhat,
        out.rstd,
        operand([1, 10]),
        false,
        settings,
      );
      assert.deepEqual([...(db.data as Float32Array)], [14, 22]);
      assert.deepEqual([...(dw.data as Float32Array)], [-1 + 2 - 5 + 6, -3 - 4 + 7 + 8]);
      assert.deepEqual([...(dx.data as Float32Array)], [1, 2, 15, 20, 5, 6, 35, 40]);
      // Given statistics: channel means 0 and 2, variances 4 and 1.
      const y = operand(new Array(8).fill(9));
      const given = { mean: operand([0, 2]), variance: operand([4, 1]) };
      nativeNorm(
        params,
        { y, xhat: null, rstd: out.rstd, mean: null, variance: null },
        x,
        null,
        null,
        given,
        settings,
      );
      assert.deepEqual([...(y.data as Float32Array)], [0.5, 1.5, -2, -2, 0.5, 1.5, 2, 2]);
    }
  } finally {
    pool.release();
  }
});

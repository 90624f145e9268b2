import { test } from "node:test";
import assert from "node:assert/strict";
import { kernelInfo } from "../src/native/kernel_info.ts";
import { type NormConformanceReport, runNormConformance } from "./helpers/norm_conformance.ts";
import { runChild } from "./helpers/subprocess.ts";
import {
  layerNormWorkspace,
  nativeLayerNorm,
  nativeLayerNormBackward,
  referenceLayerNorm,
  referenceLayerNormBackward,
} from "../src/kernels/norm.ts";
import type { KernelOperand } from "../src/kernels/types.ts";
import { fillF32, OperandPool, Rng } from "./helpers/operands.ts";

test("native layerNorm forward and backward equal the reference over random shapes, offsets and 1-4 threads", () => {
  const report = runNormConformance(60, 17, [1, 2, 3, 4]);
  assert.equal(report.cases, 60 * 4);
  assert.deepEqual(report.failures, []);
});

test("every variant the host runs passes the layerNorm conformance when forced with ZIGTENSOR_ISA", () => {
  const info = kernelInfo();
  const runnable = info.variants.filter((isa) => info.supported.includes(isa));
  assert.ok(runnable.length >= 1);
  for (const isa of runnable) {
    const child = runChild(new URL("./children/norm_child.ts", import.meta.url), { ZIGTENSOR_ISA: isa });
    assert.equal(child.status, 0, child.stderr);
    const report = JSON.parse(child.stdout.trim().split("\n").at(-1)!) as NormConformanceReport;
    assert.equal(report.isa, isa);
    assert.equal(report.cases, 40 * 4);
    assert.deepEqual(report.failures, []);
  }
});

test("layerNorm kernels large enough to split across threads: exact gives the reference's bits, fast the same bits on 1 to 4 threads", () => {
  const pool = new OperandPool();
  try {
    // 700 rows of 257: past the threading threshold and across six gradient blocks, an odd width.
    const params = { rows: 700, width: 257, eps: 1e-5 };
    const n = params.rows * params.width;
    const rng = new Rng(8);
    const f32 = (elements: number) => {
      const { pointer, data } = pool.storage("f32", elements);
      fillF32(rng, data as Float32Array, "uniform");
      return { pointer, data, offset: 0, strides: [] } as KernelOperand;
    };
    const f64 = () => {
      const { pointer, data } = pool.storage("i64", layerNormWorkspace(params));
      return { pointer, data: new Float64Array(data.buffer), offset: 0, strides: [] } as KernelOperand;
    };
    const [x, w, b, g] = [f32(n), f32(params.width), f32(params.width), f32(n)];
    const run = (native: boolean, mode: "exact" | "fast", threads: number) => {
      const out = { y: f32(n), xhat: f32(n), rstd: f32(params.rows), dx: f32(n), dw: f32(params.width) };
      const db = f32(params.width);
      const settings = { mode, threads };
      (native ? nativeLayerNorm : referenceLayerNorm)(params, out.y, out.xhat, out.rstd, x, w, b, settings);
      (native ? nativeLayerNormBackward : referenceLayerNormBackward)(
        params,
        { dx: out.dx, dw: out.dw, db, work: f64() },
        g,
        out.xhat,
        out.rstd,
        w,
        settings,
      );
      return [out.y, out.xhat, out.rstd, out.dx, out.dw, db].map((o) =>
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
      nativeLayerNorm(
        { rows: 2, width: 4, eps: 0 },
        y,
        null,
        rstd,
        x,
        operand([2, 2, 2, 2]),
        operand([1, 1, 1, 1]),
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
      nativeLayerNormBackward(
        { rows: 2, width: 4, eps: 0 },
        { dx, dw: null, db, work: { ...pool.storage("i64", 8), offset: 0, strides: [] } },
        operand([1, 1, 1, 1, 1, 2, 3, 4]),
        operand([-1, 1, -1, 1, -s, -s, -s, 3 * s]),
        rstd,
        null,
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

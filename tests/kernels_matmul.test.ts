import { test } from "node:test";
import assert from "node:assert/strict";
import {
  fastMatMulBound,
  nativeMatMul,
  referenceMatMul,
  referencePackedMatMul,
} from "../src/kernels/matmul.ts";
import {
  type ConformanceReport,
  describe,
  makeOperand,
  type MatMulCase,
  releaseOperand,
  runCase,
  runConformance,
} from "./helpers/matmul_operands.ts";
import { Rng } from "./helpers/operands.ts";
import { isaReports } from "./helpers/subprocess.ts";

function assertClean(report: ConformanceReport): void {
  assert.deepEqual(report.failures, [], `${report.isa}: ${JSON.stringify(report.failures, null, 1)}`);
  // A bound that the kernel never comes near would test nothing: fast mode does round differently.
  assert.ok(report.fastWorstRatio > 0 && report.fastWorstRatio < 1, `worst ratio ${report.fastWorstRatio}`);
}

test("native matmul equals the reference bit for bit in exact mode and within the bound in fast mode", () => {
  const report = runConformance(60, 1, [1, 2, 3, 4]);
  assert.equal(report.cases, 65);
  assertClean(report);
});

test("every variant the host runs passes the matmul conformance when forced with ZIGTENSOR_ISA", () => {
  for (
    const { report } of isaReports<ConformanceReport>(new URL("./children/matmul_child.ts", import.meta.url))
  ) {
    assert.equal(report.cases, 45);
    assertClean(report);
  }
});

test("a matmul larger than one block per axis gives the same exact bits on 1 to 4 threads", () => {
  const c: MatMulCase = {
    batch: [],
    m: 300,
    n: 1100,
    k: 420,
    layouts: ["row", "row", "transposed"],
    broadcastA: [],
    broadcastB: [],
    seed: 5,
  };
  const result = runCase(c, [1, 2, 3, 4]);
  assert.equal(result.exactMismatches, 0, describe(c));
  assert.equal(result.fastOutOfBound, 0, describe(c));
  assert.equal(result.gapWrites, 0, describe(c));
});

test("products of 1 to 4 rows (B streamed, not packed) give the exact bits on 1 to 4 threads, batched or not", () => {
  const layouts = ["row", "transposed", "dilated", "reversed"] as const;
  let cases = 0;
  for (let m = 1; m <= 4; m++) {
    for (const [n, k] of [[1, 5], [9, 1], [33, 70], [2100, 40], [700, 600]]) {
      const c: MatMulCase = {
        batch: m === 2 ? [3] : [],
        m,
        n,
        k,
        layouts: [layouts[(m + n) % 3], layouts[(m + k) % 4], "row"],
        broadcastA: [],
        broadcastB: m === 2 ? [true] : [],
        seed: 100 * m + n + k,
      };
      const result = runCase(c, [1, 2, 3, 4]);
      assert.equal(result.exactMismatches, 0, describe(c));
      assert.equal(result.fastOutOfBound, 0, describe(c));
      assert.equal(result.gapWrites, 0, describe(c));
      cases++;
    }
  }
  assert.equal(cases, 20);
});

test("a B shared by every batch entry (x [N, T, I] · Wᵀ, one product of N·T rows) keeps the exact bits on 1 to 4 threads", () => {
  // Row-major A and out fold their batch into M; a transposed or dilated A, or a B that is not shared along
  // the inner axis, keeps some batch axes: each form must give the reference's bits.
  const forms: [number[], boolean[], MatMulCase["layouts"], number][] = [
    [[4, 16], [true, true], ["row", "row", "transposed"], 6],
    [[5, 3], [true, true], ["row", "row", "row"], 1],
    [[3, 4], [false, true], ["row", "row", "transposed"], 7],
    [[2, 3], [true, true], ["row", "transposed", "row"], 9],
    [[6, 2], [true, false], ["dilated", "row", "transposed"], 13],
  ];
  for (const [batch, broadcastB, layouts, m] of forms) {
    const c: MatMulCase = { batch, m, n: 70, k: 130, layouts, broadcastA: [], broadcastB, seed: m };
    const result = runCase(c, [1, 2, 3, 4]);
    assert.equal(result.exactMismatches, 0, describe(c));
    assert.equal(result.fastOutOfBound, 0, describe(c));
    assert.equal(result.gapWrites, 0, describe(c));
  }
});

test("a B packed once (a recurrent step's W_hhᵀ and W_hh) gives matMul's exact bits on 1 to 4 threads", () => {
  // runCase runs the packed product beside nativeMatMul for every case without batch axes.
  for (
    const [m, n, k, layout] of [[32, 1024, 256, "transposed"], [32, 256, 1024, "row"], [
      1,
      300,
      70,
      "reversed",
    ]] as const
  ) {
    const c: MatMulCase = {
      batch: [],
      m,
      n,
      k,
      layouts: ["row", "dilated", layout],
      broadcastA: [],
      broadcastB: [],
      seed: m + n + k,
    };
    const result = runCase(c, [1, 2, 3, 4]);
    assert.equal(result.exactMismatches, 0, describe(c));
    assert.equal(result.fastOutOfBound, 0, describe(c));
    assert.equal(result.gapWrites, 0, describe(c));
  }
});

test("the reference packed product is a row-major copy of B and referenceMatMul's bits", () => {
  const rng = new Rng(11);
  const [m, n, k] = [3, 5, 7];
  const a = makeOperand([m, k], "row", [], () => rng.value());
  const b = makeOperand([k, n], "reversed", [], () => rng.value());
  const want = makeOperand([m, n], "row", [], () => 0);
  const got = makeOperand([m, n], "row", [], () => 0);
  const settings = { mode: "exact", threads: 1 } as const;
  const packed = {
    ...b,
    data: new Float32Array(referencePackedMatMul.packedSize(k, n, settings)),
    offset: 0,
  };
  try {
    referencePackedMatMul.pack(k, n, packed, b, settings);
    for (let p = 0; p < k; p++) {
      for (let j = 0; j < n; j++) {
        assert.equal(packed.data[p * n + j], b.data[b.offset + p * b.strides[0] + j * b.strides[1]]);
      }
    }
    referenceMatMul([m, n], k, want, a, b, settings);
    referencePackedMatMul.multiply(m, n, k, got, a, packed, settings);
    assert.deepEqual(got.data, want.data);
  } finally {
    [a, b, want, got].forEach(releaseOperand);
  }
});

test("K = 0 writes +0 everywhere and an empty output touches nothing", () => {
  const rng = new Rng(3);
  const a = makeOperand([4, 0], "row", [], () => rng.value());
  const b = makeOperand([0, 5], "row", [], () => rng.value());
  const out = makeOperand([4, 5], "transposed", [], () => 7);
  try {
    for (const mode of ["fast", "exact"] as const) {
      out.data.fill(7);
      nativeMatMul([4, 5], 0, out, a, b, { mode, threads: 2 });
      let zeros = 0;
      for (let i = 0; i < 4; i++) {
        for (let j = 0; j < 5; j++) {
          const x = out.data[out.offset + i * out.strides[0] + j * out.strides[1]];
          if (Object.is(x, 0)) zeros++;
        }
      }
      assert.equal(zeros, 20);
      out.data.fill(7);
      nativeMatMul([0, 4, 5], 3, out, a, b, { mode, threads: 2 });
      nativeMatMul([4, 0], 3, out, a, b, { mode, threads: 2 });
      assert.ok(out.data.every((x) => x === 7));
    }
  } finally {
    for (const operand of [a, b, out]) releaseOperand(operand);
  }
});

test("NaN and infinity propagate like the reference in both modes", () => {
  const values = [1, -2, Infinity, -Infinity, NaN, 0.5, 3e38, -3e38];
  const rng = new Rng(11);
  const a = makeOperand([9, 23], "row", [], () => rng.pick(values));
  const b = makeOperand([23, 17], "transposed", [], () => rng.pick(values));
  const out = makeOperand([9, 17], "row", [], () => 0);
  const expected = makeOperand([9, 17], "row", [], () => 0);
  try {
    referenceMatMul([9, 17], 23, expected, a, b, { mode: "exact", threads: 1 });
    for (const mode of ["exact", "fast"] as const) {
      nativeMatMul([9, 17], 23, out, a, b, { mode, threads: 1 });
      for (let i = 0; i < out.data.length; i++) {
        const want = expected.data[i];
        const got = out.data[i];
        if (Number.isNaN(want) || !Number.isFinite(want)) assert.ok(Object.is(want, got), `${mode} ${i}`);
      }
    }
  } finally {
    for (const operand of [a, b, out, expected]) releaseOperand(operand);
  }
});

test("the fast-mode bound is K·2^-23 of the sum of absolute products", () => {
  assert.equal(fastMatMulBound(1024, 3), 1024 * 3 * 2 ** -23);
  assert.equal(fastMatMulBound(0, 3), 3 * 2 ** -23);
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { ALL_DTYPES, DType, dtypeInfo } from "../src/core/dtype.ts";
import { DTypeError } from "../src/core/errors.ts";

test("the 13 ONNX types have their codes and sizes; the GGML blocks sit outside the ONNX range", () => {
  const expected: [number, number][] = [
    [1, 4],
    [2, 1],
    [3, 1],
    [4, 2],
    [5, 2],
    [6, 4],
    [7, 8],
    [9, 1],
    [10, 2],
    [11, 8],
    [12, 4],
    [13, 8],
    [16, 2],
  ];
  const plain = ALL_DTYPES.filter((d) => !dtypeInfo(d).isQuantized);
  assert.deepEqual(plain.map((d) => [d, DType.byteSize(d)]), expected);
  assert.deepEqual(
    [
      DType.F32,
      DType.U8,
      DType.I8,
      DType.U16,
      DType.I16,
      DType.I32,
      DType.I64,
      DType.Bool,
      DType.F16,
      DType.F64,
      DType.U32,
      DType.U64,
      DType.BF16,
    ],
    expected.map(([code]) => code),
  );
  assert.ok(DType.Q4_0 > 28 && DType.Q8_0 > 28);
  assert.deepEqual([dtypeInfo(DType.Q4_0).blockElements, dtypeInfo(DType.Q4_0).blockBytes], [32, 18]);
  assert.deepEqual([dtypeInfo(DType.Q8_0).blockElements, dtypeInfo(DType.Q8_0).blockBytes], [32, 34]);
  assert.throws(() => DType.byteSize(DType.Q8_0), /stores 32 elements in 34 bytes/);
});

test("onnxName names every code 1 to 28 and fromOnnx rejects the unsupported ones by name", () => {
  const names = Array.from({ length: 28 }, (_, i) => DType.onnxName(i + 1));
  assert.deepEqual(names, [
    "FLOAT",
    "UINT8",
    "INT8",
    "UINT16",
    "INT16",
    "INT32",
    "INT64",
    "STRING",
    "BOOL",
    "FLOAT16",
    "DOUBLE",
    "UINT32",
    "UINT64",
    "COMPLEX64",
    "COMPLEX128",
    "BFLOAT16",
    "FLOAT8E4M3FN",
    "FLOAT8E4M3FNUZ",
    "FLOAT8E5M2",
    "FLOAT8E5M2FNUZ",
    "UINT4",
    "INT4",
    "FLOAT4E2M1",
    "FLOAT8E8M0",
    "UINT2",
    "INT2",
    "FLOAT6E2M3",
    "FLOAT6E3M2",
  ]);
  const supported = new Set([1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 16]);
  for (let code = 1; code <= 28; code++) {
    if (supported.has(code)) {
      assert.equal(DType.fromOnnx(code), code);
    } else {
      assert.throws(
        () => DType.fromOnnx(code),
        (e: Error) =>
          e instanceof DTypeError && e instanceof TypeError &&
          e.message.includes(`${DType.onnxName(code)} (${code}) is not supported`),
      );
    }
  }
  assert.throws(() => DType.fromOnnx(0), /UNDEFINED \(0\) is not supported/);
  assert.throws(() => DType.fromOnnx(99), /99 is not an ONNX TensorProto.DataType code/);
  assert.throws(() => DType.fromOnnx(1.5), /not an ONNX TensorProto.DataType code/);
});

test("isFloat holds for the float types only", () => {
  const floats = ALL_DTYPES.filter((d) => DType.isFloat(d));
  assert.deepEqual(floats, [DType.F32, DType.F16, DType.F64, DType.BF16, DType.Q4_0, DType.Q8_0]);
  assert.throws(() => dtypeInfo(8), /8 is not a zigtensor dtype/);
});

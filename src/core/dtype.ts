/**
 * Element types. The numeric value of a `DType` is its ONNX `TensorProto.DataType` code, so no mapping table
 * exists; the two GGML block formats take codes outside the ONNX range (0x100 + the GGML type id). This file
 * is the one dtype table: every size, name and typed-array constructor is read from it.
 *
 * @module
 */
import { DTypeError } from "./errors.ts";

/** Every ONNX `TensorProto.DataType` name by code, 1–28 (0 is UNDEFINED). */
const ONNX_NAMES: readonly string[] = [
  "UNDEFINED",
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
];

/** The typed arrays that hold element data, by storage kind. */
export type TypedArray =
  | Float32Array
  | Float64Array
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array;

type TypedArrayConstructor = {
  new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): TypedArray;
  new (length: number): TypedArray;
  readonly BYTES_PER_ELEMENT: number;
};

/** One row of the dtype table. */
export interface DTypeInfo {
  readonly code: number;
  /** zigtensor's name: "F32", "BF16", "Q8_0", ... */
  readonly name: string;
  /** Elements per storage block: 1, or 32 for the GGML formats. */
  readonly blockElements: number;
  /** Bytes per storage block. */
  readonly blockBytes: number;
  readonly isFloat: boolean;
  readonly isQuantized: boolean;
  /** The typed array `data()` returns (raw bits for F16 and BF16, bytes for the quantized types). */
  readonly array: TypedArrayConstructor;
  /** Whether elements read and write as `bigint` (I64, U64). */
  readonly isBigInt: boolean;
  /** The names PyTorch and NumPy users write for it ("float32", "float", ...), first the canonical one. */
  readonly aliases: readonly string[];
}

function row(
  code: number,
  name: string,
  array: TypedArrayConstructor,
  aliases: readonly string[],
  options: { float?: boolean; block?: [number, number]; bigint?: boolean } = {},
): DTypeInfo {
  const [blockElements, blockBytes] = options.block ?? [1, array.BYTES_PER_ELEMENT];
  return {
    code,
    name,
    blockElements,
    blockBytes,
    isFloat: options.float ?? false,
    isQuantized: options.block !== undefined,
    array,
    isBigInt: options.bigint ?? false,
    aliases,
  };
}

const TABLE: readonly DTypeInfo[] = [
  row(1, "F32", Float32Array, ["float32", "float"], { float: true }),
  row(2, "U8", Uint8Array, ["uint8"]),
  row(3, "I8", Int8Array, ["int8"]),
  row(4, "U16", Uint16Array, ["uint16"]),
  row(5, "I16", Int16Array, ["int16", "short"]),
  row(6, "I32", Int32Array, ["int32", "int"]),
  row(7, "I64", BigInt64Array, ["int64", "long"], { bigint: true }),
  row(9, "Bool", Uint8Array, ["bool"]),
  row(10, "F16", Uint16Array, ["float16", "half"], { float: true }),
  row(11, "F64", Float64Array, ["float64", "double"], { float: true }),
  row(12, "U32", Uint32Array, ["uint32"]),
  row(13, "U64", BigUint64Array, ["uint64"], { bigint: true }),
  row(16, "BF16", Uint16Array, ["bfloat16"], { float: true }),
  row(0x102, "Q4_0", Uint8Array, ["q4_0"], { float: true, block: [32, 18] }),
  row(0x108, "Q8_0", Uint8Array, ["q8_0"], { float: true, block: [32, 34] }),
];

/**
 * The rows indexed by code (a holey array up to 0x108): every allocation looks its dtype up here, and an element
 * load costs less than a `Map` lookup.
 */
const BY_CODE: (DTypeInfo | undefined)[] = [];
for (const info of TABLE) BY_CODE[info.code] = info;

/** The row of `code`, or undefined for any other value (a non-number never reads the array's own properties). */
function byCode(code: unknown): DTypeInfo | undefined {
  return typeof code === "number" ? BY_CODE[code] : undefined;
}

/** An element type: its ONNX code (or 0x102 / 0x108 for Q4_0 / Q8_0). */
export type DType = 1 | 2 | 3 | 4 | 5 | 6 | 7 | 9 | 10 | 11 | 12 | 13 | 16 | 0x102 | 0x108;

/**
 * A dtype by name: zigtensor's ("F32", "I64", "Bool", ...) or the one PyTorch and NumPy write ("float32",
 * "float", "int64", "long", "bool", "bfloat16", ...).
 */
export type DTypeName =
  | "F32"
  | "float32"
  | "float"
  | "U8"
  | "uint8"
  | "I8"
  | "int8"
  | "U16"
  | "uint16"
  | "I16"
  | "int16"
  | "short"
  | "I32"
  | "int32"
  | "int"
  | "I64"
  | "int64"
  | "long"
  | "Bool"
  | "bool"
  | "F16"
  | "float16"
  | "half"
  | "F64"
  | "float64"
  | "double"
  | "U32"
  | "uint32"
  | "U64"
  | "uint64"
  | "BF16"
  | "bfloat16"
  | "Q4_0"
  | "q4_0"
  | "Q8_0"
  | "q8_0";

/** A dtype as options take it: a `DType` value or a `DTypeName`. */
export type DTypeLike = DType | DTypeName;

const BY_NAME = new Map<string, DTypeInfo>(
  TABLE.flatMap((info) => [info.name, ...info.aliases].map((name) => [name, info] as const)),
);

/**
 * The dtype of a `DType` value or a name ("float32", "int64", "F16", ...); throws `DTypeError` naming `op`
 * for anything else.
 */
export function toDType(dtype: DTypeLike, op: string): DType {
  if (typeof dtype === "string") {
    const info = BY_NAME.get(dtype);
    if (info === undefined) {
      throw new DTypeError(
        op,
        `"${dtype}" is not a dtype name; use one of ${[...BY_NAME.keys()].map((n) => `"${n}"`).join(", ")}`,
      );
    }
    return info.code as DType;
  }
  return dtypeInfo(dtype, op).code as DType;
}

/** The table row of `dtype`; throws `DTypeError` naming `op` for a value that is not a dtype. */
export function dtypeInfo(dtype: number, op = "dtype"): DTypeInfo {
  const info = byCode(dtype);
  if (info === undefined) {
    throw new DTypeError(
      op,
      `${String(dtype)} is not a zigtensor dtype (use a DType value such as DType.F32)`,
    );
  }
  return info;
}

/** The shape of `DType`: the codes and the functions that describe them. */
export interface DTypeApi {
  /** 32-bit float (ONNX FLOAT). */
  readonly F32: 1;
  /** Unsigned 8-bit integer. */
  readonly U8: 2;
  /** Signed 8-bit integer. */
  readonly I8: 3;
  /** Unsigned 16-bit integer. */
  readonly U16: 4;
  /** Signed 16-bit integer. */
  readonly I16: 5;
  /** Signed 32-bit integer. */
  readonly I32: 6;
  /** Signed 64-bit integer (elements read as `bigint`). */
  readonly I64: 7;
  /** Boolean, one byte per element. */
  readonly Bool: 9;
  /** IEEE half precision. */
  readonly F16: 10;
  /** 64-bit float (ONNX DOUBLE). */
  readonly F64: 11;
  /** Unsigned 32-bit integer. */
  readonly U32: 12;
  /** Unsigned 64-bit integer (elements read as `bigint`). */
  readonly U64: 13;
  /** bfloat16: float32 with a 7-bit mantissa. */
  readonly BF16: 16;
  /** GGML Q4_0 blocks of 32 elements. */
  readonly Q4_0: 0x102;
  /** GGML Q8_0 blocks of 32 elements. */
  readonly Q8_0: 0x108;
  /** The dtype of an ONNX code; throws `DTypeError` naming the ONNX type when unsupported. */
  fromOnnx(code: number): DType;
  /** The ONNX name of a code. */
  onnxName(code: number): string;
  /** Bytes per element. */
  byteSize(dtype: DType): number;
  /** Whether `dtype` is floating point. */
  isFloat(dtype: DType): boolean;
  /** zigtensor's name of a dtype. */
  name(dtype: DType): string;
}

/**
 * The element types, with their ONNX codes, and the functions that describe them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DType } from "@zigtensor/zigtensor";
 * assert.ok(DType.F32 === 1 && DType.BF16 === 16);
 * assert.ok(DType.byteSize(DType.F16) === 2 && DType.isFloat(DType.BF16));
 * assert.ok(DType.fromOnnx(7) === DType.I64 && DType.onnxName(8) === "STRING");
 * ```
 */
export const DType: DTypeApi = {
  F32: 1,
  U8: 2,
  I8: 3,
  U16: 4,
  I16: 5,
  I32: 6,
  I64: 7,
  Bool: 9,
  F16: 10,
  F64: 11,
  U32: 12,
  U64: 13,
  BF16: 16,
  /** GGML Q4_0: blocks of 32 elements, an f16 scale and 16 bytes of 4-bit values (18 bytes). */
  Q4_0: 0x102,
  /** GGML Q8_0: blocks of 32 elements, an f16 scale and 32 signed bytes (34 bytes). */
  Q8_0: 0x108,

  /**
   * The dtype of an ONNX code; throws `DTypeError` naming the ONNX type when zigtensor does not support it.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { DType, DTypeError } from "@zigtensor/zigtensor";
   * try {
   *   DType.fromOnnx(14);
   * } catch (error) {
   *   assert.ok(error instanceof DTypeError && error.message.includes("COMPLEX64"));
   * }
   * ```
   */
  fromOnnx(code: number): DType {
    const info = Number.isInteger(code) && code >= 1 && code <= 28 ? byCode(code) : undefined;
    if (info === undefined) {
      const name = Number.isInteger(code) && code >= 0 && code < ONNX_NAMES.length
        ? ONNX_NAMES[code]
        : undefined;
      throw new DTypeError(
        "fromOnnx",
        name === undefined
          ? `${code} is not an ONNX TensorProto.DataType code (1 to 28)`
          : `ONNX type ${name} (${code}) is not supported; supported: ${
            TABLE.filter((t) => !t.isQuantized).map((t) => ONNX_NAMES[t.code]).join(", ")
          }`,
      );
    }
    return info.code as DType;
  },

  /** The ONNX name of a code 0–28 ("FLOAT", "STRING", "FLOAT8E4M3FN", ...), or of Q4_0 / Q8_0. */
  onnxName(code: number): string {
    if (Number.isInteger(code) && code >= 0 && code < ONNX_NAMES.length) return ONNX_NAMES[code];
    const info = byCode(code);
    if (info !== undefined) return info.name;
    throw new DTypeError("onnxName", `${code} is not an ONNX TensorProto.DataType code (0 to 28)`);
  },

  /** Bytes per element (bytes per 32-element block divided by 32 is not whole for Q4_0 and Q8_0: use `dtypeInfo`). */
  byteSize(dtype: DType): number {
    const info = dtypeInfo(dtype, "byteSize");
    if (info.isQuantized) {
      throw new DTypeError(
        "byteSize",
        `${info.name} stores ${info.blockElements} elements in ${info.blockBytes} bytes; it has no per-element size`,
      );
    }
    return info.blockBytes;
  },

  /** Whether `dtype` is floating point (F32, F64, F16, BF16, and the quantized float formats). */
  isFloat(dtype: DType): boolean {
    return dtypeInfo(dtype, "isFloat").isFloat;
  },

  /** zigtensor's name of a dtype: "F32", "Bool", "Q4_0", ... */
  name(dtype: DType): string {
    return dtypeInfo(dtype, "name").name;
  },
};

/** Every dtype, in code order. */
export const ALL_DTYPES: readonly DType[] = TABLE.map((info) => info.code as DType);

/**
 * Element-wise casts between the 13 plain dtypes, by the rules of spec 000 §10:
 * - float → float by the §10 conversions; f64 → f16/bf16 goes through f32 and so rounds twice;
 * - integer or bool → float rounds once, to nearest even, at the target's precision;
 * - float → integer truncates toward zero, saturates to the target range, NaN → 0;
 * - integer → integer wraps modulo 2^bits;
 * - any → bool is "≠ 0" (NaN is true); bool → number is 0 or 1 (any nonzero byte reads as true);
 * - a cast to the same dtype copies the bits (a signalling NaN stays as it is), except that Bool → Bool
 *   makes every nonzero byte 1.
 *
 * NaN payloads between f32 and f64 follow x86 and AArch64 hardware, written out: f64 → f32 keeps the top 23
 * payload bits with the quiet bit set; f32 → f64 shifts the payload left by 29 with the quiet bit set.
 *
 * `referenceCast` is plain TypeScript that works on raw bits; `nativeCast` runs `zt_cast` (the f32↔f16/bf16
 * pairs use the selected ISA's bulk conversion on unit-stride rows, threads from 2^16 elements).
 *
 * @module
 */
import { type DType, type DTypeInfo, dtypeInfo } from "../core/dtype.ts";
import { DTypeError } from "../core/errors.ts";
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { KernelOperand } from "./types.ts";
import { bf16BitsToF32Bits, f16BitsToF32Bits } from "../core/convert.ts";
import { f32BitsToF64Words, f64Words, roundInteger, type Scalar, storedValue } from "../core/cast_rules.ts";
import { assertOperand, assertShape, capacityOf, forEachOffset, referenceCopy } from "./copy.ts";

/** The plain dtype of `code`, or a `DTypeError` for a quantized or unknown one. */
function plainInfo(code: number, role: string): DTypeInfo {
  const info = dtypeInfo(code, "cast");
  if (info.isQuantized) {
    throw new DTypeError(
      "cast",
      `the ${role} dtype ${info.name} is quantized; use quantize() or dequantize()`,
    );
  }
  return info;
}

function assertCast(
  dstDtype: number,
  srcDtype: number,
  shape: readonly number[],
  dst: KernelOperand,
  src: KernelOperand,
): [DTypeInfo, DTypeInfo] {
  const to = plainInfo(dstDtype, "destination");
  const from = plainInfo(srcDtype, "source");
  assertShape("cast", shape);
  assertOperand("cast", "the destination", shape, dst, capacityOf(dst, to.blockBytes));
  assertOperand("cast", "the source", shape, src, capacityOf(src, from.blockBytes));
  return [to, from];
}

/**
 * Casts `shape` elements of `srcDtype` at `src` into `dtype` at `dst` natively, on up to `threads` threads.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeCast } from "./cast.ts";
 * import { DType } from "../core/dtype.ts";
 * import { ffi } from "../native/runtime.ts";
 * const src = new Float32Array([1.5, -2.7, NaN, 3e9]);
 * const dst = new Int32Array(4);
 * const operand = (data: Float32Array | Int32Array) => ({ pointer: ffi.pointerOf(data), data, offset: 0, strides: [1] });
 * nativeCast(DType.I32, DType.F32, [4], operand(dst), operand(src));
 * assert.ok(dst.join() === "1,-2,0,2147483647");
 * ```
 */
export function nativeCast(
  dstDtype: DType,
  srcDtype: DType,
  shape: readonly number[],
  dst: KernelOperand,
  src: KernelOperand,
  threads = 1,
): void {
  assertCast(dstDtype, srcDtype, shape, dst, src);
  args.shape(shape).operand(0, dst.offset, dst.strides).operand(1, src.offset, src.strides)
    .op(0, 0, Math.max(1, threads | 0)).int(0, dstDtype).int(1, srcDtype);
  native.zt_cast(args.pointer, dst.pointer, src.pointer);
}

/** A view of an operand's storage as `ctor` elements. */
function viewAs<T>(
  operand: KernelOperand,
  ctor: new (buffer: ArrayBufferLike, byteOffset: number, length: number) => T,
  bytes: number,
): T {
  const { buffer, byteOffset, byteLength } = operand.data;
  return new ctor(buffer, byteOffset, Math.floor(byteLength / bytes));
}

/** Reads element `i` of a source of dtype `info` through raw views. */
class Reader {
  readonly #name: string;
  readonly #bits: Uint16Array | Uint32Array | null = null;
  readonly #f64: Float64Array | null = null;
  readonly #typed: ArrayLike<number | bigint> | null = null;

  constructor(info: DTypeInfo, operand: KernelOperand) {
    this.#name = info.name;
    if (info.name === "F32" || info.name === "F64") this.#bits = viewAs(operand, Uint32Array, 4);
    else if (info.name === "F16" || info.name === "BF16") this.#bits = viewAs(operand, Uint16Array, 2);
    else this.#typed = viewAs(operand, info.array, info.blockBytes);
    if (info.name === "F64") this.#f64 = viewAs(operand, Float64Array, 8);
  }

  read(i: number): Scalar {
    switch (this.#name) {
      case "F32":
        return { kind: "f32", bits: this.#bits![i] };
      case "F16":
        return { kind: "f32", bits: f16BitsToF32Bits(this.#bits![i]) };
      case "BF16":
        return { kind: "f32", bits: bf16BitsToF32Bits(this.#bits![i]) };
      case "F64":
        return { kind: "f64", value: this.#f64![i], hi: this.#bits![2 * i + 1], lo: this.#bits![2 * i] };
      case "Bool":
        return { kind: "int", value: this.#typed![i] !== 0 ? 1n : 0n };
      default:
        return { kind: "int", value: BigInt(this.#typed![i]) };
    }
  }
}

/** Writes element `i` of a destination of dtype `info` from a scalar, by the cast rules. */
class Writer {
  readonly #name: string;
  readonly #bits: Uint16Array | Uint32Array | null = null;
  readonly #typed: { [i: number]: number | bigint } | null = null;

  constructor(info: DTypeInfo, operand: KernelOperand) {
    this.#name = info.name;
    if (info.name === "F32" || info.name === "F64") this.#bits = viewAs(operand, Uint32Array, 4);
    else if (info.name === "F16" || info.name === "BF16") this.#bits = viewAs(operand, Uint16Array, 2);
    else this.#typed = viewAs(operand, info.array, info.blockBytes);
  }

  write(i: number, s: Scalar): void {
    if (this.#name === "F64") {
      // Written as words, so that NaN payloads survive.
      const [hi, lo] = s.kind === "f64"
        ? [s.hi, s.lo]
        : s.kind === "f32"
        ? f32BitsToF64Words(s.bits)
        : f64Words(roundInteger(s.value, 53));
      this.#bits![2 * i] = lo;
      this.#bits![2 * i + 1] = hi;
    } else if (this.#typed !== null) {
      this.#typed[i] = storedValue(this.#name, s);
    } else {
      this.#bits![i] = storedValue(this.#name, s) as number;
    }
  }
}

/**
 * The reference cast: element by element in plain TypeScript, on raw bits, by the rules above.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceCast } from "./cast.ts";
 * import { DType } from "../core/dtype.ts";
 * import type { KernelOperand } from "./types.ts";
 * const operand = (data: ArrayBufferView) => ({ pointer: null, data, offset: 0, strides: [1] }) as unknown as KernelOperand;
 * const src = new Int32Array([300, -1, 16777217]);
 * const bytes = new Uint8Array(3);
 * referenceCast(DType.U8, DType.I32, [3], operand(bytes), operand(src));
 * assert.ok(bytes.join() === "44,255,1");                 // wraps modulo 2^8
 * const floats = new Float32Array(3);
 * referenceCast(DType.F32, DType.I32, [3], operand(floats), operand(src));
 * assert.ok(floats[2] === 16777216);                      // 2^24 + 1 ties to even
 * ```
 */
export function referenceCast(
  dstDtype: DType,
  srcDtype: DType,
  shape: readonly number[],
  dst: KernelOperand,
  src: KernelOperand,
): void {
  const [to, from] = assertCast(dstDtype, srcDtype, shape, dst, src);
  if (dstDtype === srcDtype && to.name !== "Bool") {
    referenceCopy(to.blockBytes, shape, dst, src);
    return;
  }
  const reader = new Reader(from, src);
  const writer = new Writer(to, dst);
  forEachOffset(shape, [dst, src], ([d, s]) => writer.write(d, reader.read(s)));
}

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
import {
  bf16BitsToF32Bits,
  f16BitsToF32Bits,
  f32Bits,
  f32BitsToBf16Bits,
  f32BitsToF16Bits,
  f32FromBits,
} from "../core/convert.ts";
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

/** A source element, normalized: an f32 bit pattern, an f64 (value and bits), or an exact integer. */
type Scalar =
  | { readonly kind: "f32"; readonly bits: number }
  | { readonly kind: "f64"; readonly value: number; readonly hi: number; readonly lo: number }
  | { readonly kind: "int"; readonly value: bigint };

/**
 * `value` rounded once to `precision` significant bits, to nearest with ties to even (exact as a number for
 * precision ≤ 53).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { roundInteger } from "./cast.ts";
 * assert.ok(roundInteger(16777217n, 24) === 16777216 && roundInteger(16777219n, 24) === 16777220);
 * ```
 */
export function roundInteger(value: bigint, precision: number): number {
  const negative = value < 0n;
  const magnitude = negative ? -value : value;
  const length = magnitude.toString(2).length;
  if (magnitude === 0n || length <= precision) return Number(value);
  const shift = BigInt(length - precision);
  let q = magnitude >> shift;
  const rest = magnitude - (q << shift);
  const half = 1n << (shift - 1n);
  if (rest > half || (rest === half && (q & 1n) === 1n)) q += 1n;
  const rounded = Number(q) * 2 ** Number(shift);
  return negative ? -rounded : rounded;
}

function isNaNBits32(bits: number): boolean {
  return (bits & 0x7fffffff) > 0x7f800000;
}

function isNaNBits64(hi: number, lo: number): boolean {
  const top = hi & 0x7fffffff;
  return top > 0x7ff00000 || (top === 0x7ff00000 && lo !== 0);
}

/** f64 → f32 bits: round to nearest even; NaN keeps its top 23 payload bits and is made quiet. */
function f64ToF32Bits(s: { value: number; hi: number; lo: number }): number {
  if (!isNaNBits64(s.hi, s.lo)) return f32Bits(s.value);
  return ((s.hi & 0x80000000) | 0x7fc00000 | ((s.hi & 0xfffff) << 3) | (s.lo >>> 29)) >>> 0;
}

/** f32 bits → f64 as [hi, lo] words: exact; NaN payload shifted left 29 with the quiet bit set. */
function f32BitsToF64Words(bits: number): [number, number] {
  if (!isNaNBits32(bits)) return f64Words(f32FromBits(bits));
  const mant = bits & 0x7fffff;
  return [((bits & 0x80000000) | 0x7ff80000 | (mant >>> 3)) >>> 0, ((mant & 7) << 29) >>> 0];
}

/** The f32 bits of a float scalar (f64 rounds once). */
function toF32Bits(s: Scalar): number {
  if (s.kind === "f32") return s.bits;
  if (s.kind === "f64") return f64ToF32Bits(s);
  throw new Error("unreachable: an integer scalar has no f32 bits");
}

/** The numeric value of a float scalar (NaN for NaN). */
function floatValue(s: Scalar): number {
  if (s.kind === "f32") return f32FromBits(s.bits);
  if (s.kind === "f64") return s.value;
  return Number(s.value);
}

const INT_BITS: Record<string, [bits: number, signed: boolean]> = {
  U8: [8, false],
  I8: [8, true],
  U16: [16, false],
  I16: [16, true],
  I32: [32, true],
  I64: [64, true],
  U32: [32, false],
  U64: [64, false],
};

/** Truncates toward zero and saturates to a `bits`-bit integer range; NaN → 0. */
function saturate(value: number, bits: number, signed: boolean): bigint {
  if (Number.isNaN(value)) return 0n;
  const low = signed ? -(2n ** BigInt(bits - 1)) : 0n;
  const high = signed ? 2n ** BigInt(bits - 1) - 1n : 2n ** BigInt(bits) - 1n;
  if (value === Infinity) return high;
  if (value === -Infinity) return low;
  const t = BigInt(Math.trunc(value));
  return t < low ? low : t > high ? high : t;
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

const f64Scratch = new Float64Array(1);
const f64ScratchWords = new Uint32Array(f64Scratch.buffer);

/** The words [hi, lo] of an f64 given as a number. */
function f64Words(value: number): [number, number] {
  f64Scratch[0] = value;
  return [f64ScratchWords[1], f64ScratchWords[0]];
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

/**
 * The stored representation of scalar `s` in dtype `name` by the cast rules: f32 bits for F32, f16/bf16 bits
 * for F16/BF16, the integer (a bigint for 64-bit types) for the others. Not for F64, whose words carry NaN
 * payloads.
 */
function storedValue(name: string, s: Scalar): number | bigint {
  switch (name) {
    case "F32":
      return s.kind === "int" ? f32Bits(roundInteger(s.value, 24)) : toF32Bits(s);
    case "F16":
      return s.kind === "int" ? intToF16Bits(s.value) : f32BitsToF16Bits(toF32Bits(s));
    case "BF16":
      // Rounded once to 8 bits, the value is a bfloat16 exactly: taking the top half only drops zeros.
      return s.kind === "int" ? f32Bits(roundInteger(s.value, 8)) >>> 16 : f32BitsToBf16Bits(toF32Bits(s));
    case "Bool": {
      const truthy = s.kind === "int" ? s.value !== 0n : floatValue(s) !== 0 || Number.isNaN(floatValue(s));
      return truthy ? 1 : 0;
    }
    default: {
      const [width, signed] = INT_BITS[name];
      const wide = s.kind === "int"
        ? (signed ? BigInt.asIntN(width, s.value) : BigInt.asUintN(width, s.value))
        : saturate(floatValue(s), width, signed);
      return width === 64 ? wide : Number(wide);
    }
  }
}

/**
 * The stored representation of a JavaScript value in dtype `name`, by the same rules as a cast: a number is
 * an f64 (so it truncates and saturates into integers and rounds through f32 into F16/BF16), a bigint an
 * integer (wrapping into integers, rounding once into floats), a boolean 0 or 1. F32 and F64 come back as
 * numbers, F16/BF16 as their bits, I64/U64 as bigints.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { encodeValue } from "./cast.ts";
 * assert.equal(encodeValue("I8", 300.7), 127);
 * assert.equal(encodeValue("U8", -1n), 255);
 * assert.equal(encodeValue("F16", 1), 0x3c00);
 * assert.equal(encodeValue("F32", 2n ** 24n + 1n), 2 ** 24);
 * ```
 */
export function encodeValue(name: string, value: number | bigint | boolean): number | bigint {
  const s: Scalar = typeof value === "bigint"
    ? { kind: "int", value }
    : typeof value === "boolean"
    ? { kind: "int", value: value ? 1n : 0n }
    : { kind: "f64", value, hi: 0, lo: 0 };
  if (name === "F64") return s.kind === "int" ? roundInteger(s.value, 53) : s.value;
  if (name === "F32") return s.kind === "int" ? roundInteger(s.value, 24) : Math.fround(s.value);
  if (s.kind === "f64") {
    [scratchScalar.hi, scratchScalar.lo] = f64Words(s.value);
    scratchScalar.value = s.value;
    return storedValue(name, scratchScalar);
  }
  return storedValue(name, s);
}

const scratchScalar = { kind: "f64" as const, value: 0, hi: 0, lo: 0 };

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

/** An integer rounded once to binary16: 11 significant bits, infinite from 65520 up (ties to even). */
function intToF16Bits(value: bigint): number {
  const rounded = roundInteger(value, 11);
  if (Math.abs(rounded) >= 65536) return rounded < 0 ? 0xfc00 : 0x7c00;
  return f32BitsToF16Bits(f32Bits(rounded));
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

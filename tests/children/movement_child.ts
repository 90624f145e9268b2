// Child process of movement_convert.test.ts: the bulk f16/bf16 conversions of the variant ZIGTENSOR_ISA forces,
// against the TypeScript rules; prints one JSON line of mismatch counts.
import { kernelInfo } from "../../src/native/kernel_info.ts";
import { nativeCast } from "../../src/kernels/cast.ts";
import * as convert from "../../src/core/convert.ts";
import { decodeBf16, decodeF16, stressPatterns } from "../helpers/movement_operands.ts";
import { NativeBlock, Rng } from "../helpers/operands.ts";
const random = new Rng(0xc0ffee);
const mismatches: Record<string, number> = {};
const compare = (name: string, got: ArrayLike<number>, expected: (i: number) => number, n: number) => {
  let bad = 0;
  for (let i = 0; i < n; i++) if (got[i] !== expected(i)) bad++;
  mismatches[name] = (mismatches[name] ?? 0) + bad;
};
// All 65536 16-bit patterns to f32, on 1 and 4 threads, contiguous and reversed.
using halves = new NativeBlock(2 * 65536);
using wide = new NativeBlock(4 * 65536);
const h16 = new Uint16Array(halves.buffer);
for (let i = 0; i < 65536; i++) h16[i] = i;
const w32 = new Uint32Array(wide.buffer);
for (
  const [dtype, name, rule] of [[10, "f16", convert.f16BitsToF32Bits], [
    16,
    "bf16",
    convert.bf16BitsToF32Bits,
  ]] as const
) {
  for (const threads of [1, 4]) {
    nativeCast(
      1,
      dtype,
      [65536],
      wide.operand(Uint32Array, 0, [1]),
      halves.operand(Uint16Array, 0, [1]),
      threads,
    );
    compare(`${name}->f32`, w32, (i) => rule(i), 65536);
  }
  nativeCast(
    1,
    dtype,
    [65536],
    wide.operand(Uint32Array, 0, [1]),
    halves.operand(Uint16Array, 65535, [-1]),
    2,
  );
  compare(`${name}->f32 reversed`, w32, (i) => rule(65535 - i), 65536);
}
// f32 stress patterns (ties of both formats, random, NaN) to f16 and bf16.
const n = 1 << 20;
const patterns = stressPatterns(random, n, decodeF16, 0x7c00);
const more = stressPatterns(random, 1 << 17, decodeBf16, 0x7f80);
using src = new NativeBlock(4 * (n + more.length));
using dst = new NativeBlock(2 * (n + more.length));
const s32 = new Uint32Array(src.buffer);
s32.set(patterns.subarray(0, n));
s32.set(more, n);
const total = n + more.length;
const d16 = new Uint16Array(dst.buffer);
for (
  const [dtype, name, rule] of [[10, "f32->f16", convert.f32BitsToF16Bits], [
    16,
    "f32->bf16",
    convert.f32BitsToBf16Bits,
  ]] as const
) {
  for (const threads of [1, 3]) {
    nativeCast(
      dtype,
      1,
      [total],
      dst.operand(Uint16Array, 0, [1]),
      src.operand(Uint32Array, 0, [1]),
      threads,
    );
    compare(name, d16, (i) => rule(s32[i]), total);
  }
  // Odd offsets and lengths reach the scalar head and tail of the vector loops.
  nativeCast(dtype, 1, [1001], dst.operand(Uint16Array, 3, [1]), src.operand(Uint32Array, 5, [1]), 1);
  compare(`${name} unaligned`, d16.subarray(3), (i) => rule(s32[5 + i]), 1001);
}
console.log(JSON.stringify({ isa: kernelInfo().isa, mismatches }));

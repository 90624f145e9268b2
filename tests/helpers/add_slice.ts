// The first vertical slice: rent a 64-byte aligned native block, view it as a Float32Array with no copy,
// run the native f32 add kernel over it, compare with a TypeScript loop bit for bit, release the block.
import { args } from "../../src/native/arg_block.ts";
import { native } from "../../src/native/library.ts";
import { ffi } from "../../src/native/runtime.ts";

export interface SliceResult {
  aligned: boolean;
  zeroCopy: boolean;
  mismatches: number;
  checkedLength: number;
}

/** Adds two length-`n` vectors natively (as views of one 3n block) and checks every element. */
export function addSlice(n: number, seed: number): SliceResult {
  const bytes = 3 * n * 4;
  const pointer = native.zt_pool_rent(bytes, 0);
  if (pointer === null) throw new Error("out of native memory");
  const buffer = ffi.arrayBuffer(pointer, bytes);
  const all = new Float32Array(buffer);
  let state = seed;
  for (let i = 0; i < 2 * n; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    all[i] = (state / 2 ** 32 - 0.5) * 1000;
  }
  args.shape([n]).operand(0, 2 * n, [1]).operand(1, 0, [1]).operand(2, n, [1]).op(0, 0, 1);
  native.zt_binary_f32(args.pointer, pointer, pointer, pointer);
  let mismatches = 0;
  const expected = new Float32Array(1);
  for (let i = 0; i < n; i++) {
    expected[0] = all[i] + all[n + i];
    if (expected[0] !== all[2 * n + i]) mismatches++;
  }
  // Zero copy: a write through the typed array is what a second view over the same address sees.
  all[0] = 42;
  const zeroCopy = new Float32Array(ffi.arrayBuffer(pointer, 4))[0] === 42;
  const aligned = ffi.address(pointer) % 64 === 0;
  buffer.transfer(0);
  native.zt_pool_release(pointer, bytes);
  return { aligned, zeroCopy, mismatches, checkedLength: all.length };
}

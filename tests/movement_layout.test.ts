import { test } from "node:test";
import assert from "node:assert/strict";
import {
  blockedShape,
  nativeFromBlocked,
  nativeToBlocked,
  referenceFromBlocked,
  referenceToBlocked,
} from "../src/kernels/layout.ts";
import { firstDifference, randomLayout, sizeOf } from "./helpers/movement_operands.ts";
import { NativeBlock, Rng } from "./helpers/operands.ts";
import { native } from "../src/native/library.ts";

type Layout = { offset: number; strides: number[]; capacity: number };

function nhwc(shape: readonly number[]): Layout {
  const [n, c, h, w] = shape;
  return { offset: 0, strides: [h * w * c, 1, w * c, c], capacity: n * c * h * w };
}

function nchw(shape: readonly number[]): Layout {
  const [n, c, h, w] = shape;
  return { offset: 0, strides: [c * h * w, h * w, w, 1], capacity: n * c * h * w };
}

/**
 * Converts a random logical tensor to NchwC(B) and back, natively and by the reference, and checks the
 * blocked span element by element against the §5 formula (lanes past C zero).
 */
function roundTrip(
  random: Rng,
  shape: number[],
  blockSize: number,
  bytes: number,
  logical: Layout,
  back: Layout,
  threads: number,
) {
  const physical = sizeOf(blockedShape(shape, blockSize));
  using src = new NativeBlock(logical.capacity * bytes);
  const s = src.bytesView();
  for (let i = 0; i < s.length; i++) s[i] = random.u32() & 0xff;
  using a = new NativeBlock((physical + 1) * bytes);
  using b = new NativeBlock((physical + 1) * bytes);
  a.bytesView().fill(0xff);
  b.bytesView().fill(0xff);
  const source = src.operand(Uint8Array, logical.offset, logical.strides);
  nativeToBlocked(shape, blockSize, bytes, a.operand(Uint8Array, 1), source, threads);
  referenceToBlocked(shape, blockSize, bytes, b.operand(Uint8Array, 1), source);
  const label = `[${shape}] B=${blockSize} ${bytes} bytes strides ${logical.strides}`;
  assert.equal(firstDifference(a.bytesView(), b.bytesView()), -1, label);
  // The span element by element, against the layout's definition.
  const [n, c, h, w] = shape;
  const blocks = Math.ceil(c / blockSize);
  const out = a.bytesView();
  for (let i = 0; i < n; i++) {
    for (let ch = 0; ch < blocks * blockSize; ch++) {
      for (let y = 0; y < h; y++) {
        for (let x = 0; x < w; x++) {
          const at = 1 + (((i * blocks + Math.floor(ch / blockSize)) * h + y) * w + x) * blockSize +
            (ch % blockSize);
          const from = logical.offset + i * logical.strides[0] + ch * logical.strides[1] +
            y * logical.strides[2] +
            x * logical.strides[3];
          for (let u = 0; u < bytes; u++) {
            const expected = ch < c ? s[from * bytes + u] : 0;
            if (out[at * bytes + u] !== expected) assert.fail(`${label}: element ${[i, ch, y, x]}`);
          }
        }
      }
    }
  }
  assert.equal(out.subarray(0, bytes).every((v) => v === 0xff), true, `${label}: wrote before its offset`);
  // And back into `back`'s layout.
  using c1 = new NativeBlock(back.capacity * bytes);
  using c2 = new NativeBlock(back.capacity * bytes);
  const blocked = a.operand(Uint8Array, 1);
  nativeFromBlocked(
    shape,
    blockSize,
    bytes,
    c1.operand(Uint8Array, back.offset, back.strides),
    blocked,
    threads,
  );
  referenceFromBlocked(shape, blockSize, bytes, c2.operand(Uint8Array, back.offset, back.strides), blocked);
  assert.equal(firstDifference(c1.bytesView(), c2.bytesView()), -1, `${label} back`);
  const result = c1.bytesView();
  for (let i = 0; i < n; i++) {
    for (let ch = 0; ch < c; ch++) {
      for (let y = 0; y < h; y++) {
        for (let x = 0; x < w; x++) {
          const to = back.offset + i * back.strides[0] + ch * back.strides[1] + y * back.strides[2] +
            x * back.strides[3];
          const from = logical.offset + i * logical.strides[0] + ch * logical.strides[1] +
            y * logical.strides[2] +
            x * logical.strides[3];
          for (let u = 0; u < bytes; u++) {
            if (result[to * bytes + u] !== s[from * bytes + u]) {
              assert.fail(`${label} back: element ${[i, ch, y, x]}`);
            }
          }
        }
      }
    }
  }
}

test("NCHW, NHWC and random views convert to NchwC(B) and back for every block size and element size", () => {
  const random = new Rng(11);
  const blockSizes = [1, 2, 3, 4, 5, 7, 8, 16, 17, 64, 256];
  let cases = 0;
  for (let trial = 0; trial < 300; trial++) {
    const shape = [1 + random.below(3), 1 + random.below(20), 1 + random.below(5), 1 + random.below(6)];
    if (trial % 25 === 0) shape[random.below(4)] = 0;
    const blockSize = blockSizes[trial % blockSizes.length];
    const bytes = [1, 2, 4, 8][trial % 4];
    const from = [nchw(shape), nhwc(shape), randomLayout(random, shape, trial % 3 === 0)][trial % 3];
    const to = [nhwc(shape), randomLayout(random, shape, false), nchw(shape)][trial % 3];
    roundTrip(random, shape, blockSize, bytes, from, to, 1 + (trial % 3));
    cases++;
  }
  assert.equal(cases, 300);
});

test("large conversions take the threaded path", () => {
  const random = new Rng(12);
  const shape = [2, 37, 48, 64];
  for (const blockSize of [8, 16]) {
    for (const threads of [1, 4]) {
      // The pool's job counter proves which path ran: no job with one thread, jobs with four.
      const before = native.zt_thread_jobs();
      roundTrip(random, shape, blockSize, 4, nchw(shape), nhwc(shape), threads);
      roundTrip(random, shape, blockSize, 2, nhwc(shape), nchw(shape), threads);
      const jobs = native.zt_thread_jobs() - before;
      if (threads === 1) assert.equal(jobs, 0, `block ${blockSize}: one thread ran a pool job`);
      else assert.ok(jobs >= 4, `block ${blockSize}: ${jobs} pool jobs for four conversions`);
    }
  }
});

test("bad arguments never reach native code", () => {
  using block = new NativeBlock(256);
  const logical = block.operand(Float32Array, 0, [8, 4, 2, 1]);
  const blocked = block.operand(Float32Array, 0);
  assert.throws(() => nativeToBlocked([1, 2, 2, 2], 0, 4, blocked, logical), /block size/);
  assert.throws(() => nativeToBlocked([1, 2, 2, 2], 257, 4, blocked, logical), /block size/);
  assert.throws(() => nativeToBlocked([1, 2, 2], 2, 4, blocked, logical), /\[N, C, H, W\]/);
  assert.throws(() => nativeToBlocked([1, 2, 2, 2], 2, 3, blocked, logical), /1, 2, 4 or 8 bytes/);
  assert.throws(
    () => nativeToBlocked([2, 2, 4, 4], 256, 4, blocked, block.operand(Float32Array, 0, [0, 0, 0, 0])),
    /blocked span/,
  );
  assert.throws(
    () => nativeFromBlocked([1, 2, 2, 2], 2, 4, block.operand(Float32Array, 60, [8, 4, 2, 1]), blocked),
    /reaches/,
  );
});

test("toLayout on tensors: NCHW, NHWC and permuted views to and from NchwC(B), re-blocking, several block sizes", async () => {
  // Loaded here so that the operand-level tests above do not depend on the tensor layer.
  const { Layout, Tensor } = await import("../mod.ts");
  const shape = [2, 5, 3, 4];
  const values = Float32Array.from({ length: 120 }, (_, i) => i + 1);
  using t = Tensor.from(values, shape);
  using nhwcView = Tensor.from(values, [2, 3, 4, 5]).permute([0, 3, 1, 2]);
  for (const source of [t, nhwcView]) {
    const expected = source.toArray();
    for (const blockSize of [1, 3, 5, 8]) {
      using blocked = source.toLayout(Layout.nchwc(blockSize));
      assert.equal(blocked.blockSize, blockSize);
      assert.deepEqual([...blocked.shape], shape);
      const span = blocked.data();
      assert.equal(span.length, 2 * Math.ceil(5 / blockSize) * 3 * 4 * blockSize);
      // Channel c of pixel (n, h, w) sits at block c / B, lane c % B; lanes past C are zero.
      for (let n = 0; n < 2; n++) {
        for (let c = 0; c < Math.ceil(5 / blockSize) * blockSize; c++) {
          for (let p = 0; p < 12; p++) {
            const at = ((n * Math.ceil(5 / blockSize) + Math.floor(c / blockSize)) * 12 + p) * blockSize +
              (c % blockSize);
            assert.equal(span[at], c < 5 ? expected[(n * 5 + c) * 12 + p] : 0);
          }
        }
      }
      using back = blocked.toLayout(Layout.Nchw);
      assert.deepEqual([...back.toArray()], [...expected]);
      using nhwc = blocked.toLayout(Layout.Nhwc);
      assert.deepEqual([...nhwc.strides], [60, 1, 20, 5]);
      assert.deepEqual([...nhwc.toArray()], [...expected]);
      using reblocked = blocked.toLayout(Layout.nchwc(2));
      using again = reblocked.toLayout(Layout.Nchw);
      assert.deepEqual([...again.toArray()], [...expected]);
    }
  }
});

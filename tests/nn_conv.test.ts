// conv2d and avgPool2d: values against f64 references over strides, padding, dilation and groups; exact mode
// equal to the reference kernel set bit for bit and independent of the thread count; gradients of every
// input against central differences; records; errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ActivationScope,
  DType,
  DTypeError,
  nn,
  ops,
  OptionError,
  referenceKernels,
  Tensor,
  TensorCompute,
  TensorShapeError,
} from "../mod.ts";
import type { BackwardRecord } from "../src/autograd/record.ts";
import * as R from "./helpers/f64.ts";

interface ConvCase {
  x: number[];
  w: number[];
  bias: boolean;
  stride: [number, number];
  padding: [number, number];
  dilation: [number, number];
  groups: number;
}

const convCases: ConvCase[] = [
  {
    x: [2, 3, 7, 6],
    w: [4, 3, 3, 3],
    bias: true,
    stride: [1, 1],
    padding: [0, 0],
    dilation: [1, 1],
    groups: 1,
  },
  {
    x: [1, 4, 9, 8],
    w: [6, 2, 3, 2],
    bias: true,
    stride: [2, 3],
    padding: [1, 2],
    dilation: [1, 1],
    groups: 2,
  },
  {
    x: [2, 2, 9, 9],
    w: [3, 2, 3, 3],
    bias: false,
    stride: [1, 2],
    padding: [2, 1],
    dilation: [2, 3],
    groups: 1,
  },
  {
    x: [3, 4, 5, 5],
    w: [4, 1, 3, 3],
    bias: true,
    stride: [1, 1],
    padding: [1, 1],
    dilation: [1, 1],
    groups: 4,
  },
  {
    x: [1, 16, 12, 12],
    w: [8, 16, 1, 1],
    bias: false,
    stride: [1, 1],
    padding: [0, 0],
    dilation: [1, 1],
    groups: 1,
  },
];

function convOf(c: ConvCase, seed: number) {
  const x = Tensor.randn(c.x, { seed });
  const w = Tensor.randn(c.w, { seed: seed + 1 });
  const bias = c.bias ? Tensor.randn([c.w[0]], { seed: seed + 2 }) : undefined;
  return { x, w, bias };
}

test("conv2d matches the f64 reference over strides, padding, dilation and groups, in both modes", () => {
  using _ = new ActivationScope();
  convCases.forEach((c, i) => {
    const { x, w, bias } = convOf(c, 10 * i);
    const expected = R.conv2d(R.toF64(x), R.toF64(w), bias === undefined ? null : R.toF64(bias), c);
    for (const mode of ["exact", "fast"] as const) {
      const y = TensorCompute.run(
        { mode },
        () =>
          ops.conv2d(x, w, {
            bias,
            stride: c.stride,
            padding: c.padding,
            dilation: c.dilation,
            groups: c.groups,
          }),
      );
      R.assertClose(y, expected, 2e-5, `case ${i} ${mode}`);
    }
  });
});

test("conv2d in exact mode equals the reference kernel set bit for bit, for every thread count", () => {
  using _ = new ActivationScope();
  // The last case is large enough (2^16 outputs, 2^18 columns) for the kernels to split work over threads.
  const large: ConvCase = {
    x: [4, 8, 34, 34],
    w: [16, 8, 3, 3],
    bias: true,
    stride: [1, 1],
    padding: [1, 1],
    dilation: [1, 1],
    groups: 1,
  };
  for (const c of [...convCases.slice(0, 3), large]) {
    const { x, w, bias } = convOf(c, 3);
    const options = { bias, stride: c.stride, padding: c.padding, dilation: c.dilation, groups: c.groups };
    const reference = TensorCompute.run(
      { mode: "exact", kernels: referenceKernels },
      () => ops.conv2d(x, w, options).toArray(),
    );
    for (const threads of [1, 2, 4]) {
      const native = TensorCompute.run({ mode: "exact", threads }, () => ops.conv2d(x, w, options).toArray());
      assert.deepEqual(native, reference, `threads ${threads}`);
    }
  }
});

test("conv2d by hand: a 2×2 kernel with bias, stride 1, and an unbatched CHW image", () => {
  using _ = new ActivationScope();
  const x = Tensor.arange(16).reshape([1, 1, 4, 4]);
  const w = Tensor.from([1, 2, 3, 4], [1, 1, 2, 2]);
  const y = ops.conv2d(x, w, { bias: Tensor.from([0.5]), stride: 2 });
  // Window at (0, 0): 0·1 + 1·2 + 4·3 + 5·4 = 34; at (0, 2): 2 + 6 + 18 + 28 = 54; rows 2: +8·10 each.
  assert.deepEqual(y.toNested(), [[[[34.5, 54.5], [114.5, 134.5]]]]);
  const image = ops.conv2d(x.reshape([1, 4, 4]), w, { padding: 1, stride: 3 });
  assert.deepEqual([...image.shape], [1, 2, 2]);
  // Window at (0, 0) sees only x[0, 0] = 0 under tap 4; at (0, 3): x[0, 2]·3 + x[0, 3]·4... padded.
  const expected = R.conv2d(R.toF64(x), R.f64([1, 1, 2, 2], [1, 2, 3, 4]), null, {
    stride: [3, 3],
    padding: [1, 1],
    dilation: [1, 1],
    groups: 1,
  });
  assert.deepEqual([...image.toArray()], [...expected.data]);
});

test("conv2d reads strided inputs and weights (transposed, sliced, flipped views) without copies of its own", () => {
  using _ = new ActivationScope();
  const base = Tensor.randn([2, 3, 8, 7], { seed: 5 });
  const x = ops.flip(ops.transpose(base, 2, 3), 3); // [2, 3, 7, 8], non-contiguous
  const w = ops.slice(Tensor.randn([4, 6, 3, 3], { seed: 6 }), 1, 0, 6, 2); // [4, 3, 3, 3], stride 2 on axis 1
  const expected = R.conv2d(R.toF64(x), R.toF64(w), null, {
    stride: [2, 1],
    padding: [1, 0],
    dilation: [1, 1],
    groups: 1,
  });
  R.assertClose(ops.conv2d(x, w, { stride: [2, 1], padding: [1, 0] }), expected, 2e-5, "strided");
});

test("avgPool2d matches the f64 reference, counting padding as zeros", () => {
  using _ = new ActivationScope();
  const x = Tensor.randn([2, 3, 7, 6], { seed: 7 });
  const cases: [number[], number[], number[]][] = [
    [[2, 2], [2, 2], [0, 0]],
    [[3, 3], [2, 2], [1, 1]],
    [[3, 2], [1, 2], [1, 0]],
    [[4, 4], [3, 1], [2, 2]],
  ];
  for (const [kernel, stride, padding] of cases) {
    for (const mode of ["exact", "fast"] as const) {
      const y = TensorCompute.run({ mode }, () =>
        ops.avgPool2d(x, {
          kernel: kernel as [number, number],
          stride: stride as [number, number],
          padding: padding as [number, number],
        }));
      R.assertClose(
        y,
        R.avgPool2d(R.toF64(x), kernel, stride, padding),
        1e-6,
        `${kernel} ${stride} ${padding}`,
      );
    }
  }
  const corner = ops.avgPool2d(Tensor.ones([1, 1, 2, 2]), { kernel: 2, stride: 1, padding: 1 });
  assert.deepEqual(corner.toNested(), [[[[0.25, 0.5, 0.25], [0.5, 1, 0.5], [0.25, 0.5, 0.25]]]]);
  const image = ops.avgPool2d(Tensor.arange(16).reshape([1, 4, 4]), { kernel: 2 });
  assert.deepEqual(image.toNested(), [[[2.5, 4.5], [10.5, 12.5]]]);
});

const gradCases: R.GradCase[] = [
  ...convCases.slice(0, 4).map((c, i): R.GradCase => ({
    name: `conv2d case ${i}`,
    shapes: c.bias ? [c.x, c.w, [c.w[0]]] : [c.x, c.w],
    f32: ([x, w, b]) =>
      ops.conv2d(x, w, {
        bias: b,
        stride: c.stride,
        padding: c.padding,
        dilation: c.dilation,
        groups: c.groups,
      }),
    f64: ([x, w, b]) => R.conv2d(x, w, b ?? null, c),
  })),
  {
    name: "conv2d (strided leaves)",
    shapes: [[2, 2, 5, 4], [3, 2, 2, 3], [3]],
    f32: ([x, w, b]) => ops.conv2d(x, w, { bias: b, padding: [1, 0], stride: [2, 1] }),
    f64: ([x, w, b]) => R.conv2d(x, w, b, { stride: [2, 1], padding: [1, 0], dilation: [1, 1], groups: 1 }),
    strided: true,
  },
  {
    name: "conv2d (one CHW image)",
    shapes: [[2, 4, 4], [2, 2, 3, 3]],
    f32: ([x, w]) => ops.conv2d(x, w, { padding: 1 }),
    f64: ([x, w]) => {
      const y = R.conv2d(R.f64([1, 2, 4, 4], x.data), w, null, {
        stride: [1, 1],
        padding: [1, 1],
        dilation: [1, 1],
        groups: 1,
      });
      return R.f64(y.shape.slice(1), y.data);
    },
  },
  {
    name: "avgPool2d",
    shapes: [[2, 2, 5, 6]],
    f32: ([x]) => ops.avgPool2d(x, { kernel: 3, stride: [2, 1], padding: 1 }),
    f64: ([x]) => R.avgPool2d(x, [3, 3], [2, 1], [1, 1]),
  },
  {
    name: "avgPool2d (strided leaf, overlapping windows)",
    shapes: [[1, 3, 6, 5]],
    f32: ([x]) => ops.avgPool2d(x, { kernel: [2, 3], stride: 1 }),
    f64: ([x]) => R.avgPool2d(x, [2, 3], [1, 1], [0, 0]),
    strided: true,
  },
];

for (const mode of ["exact", "fast"] as const) {
  test(`conv2d and avgPool2d gradients match central differences of the f64 reference (${mode})`, () => {
    for (const c of gradCases) R.checkGradients(c, mode);
  });
}

test("conv2d and avgPool2d gradients are the same with the reference kernel set", () => {
  const run = (kernels?: typeof referenceKernels) =>
    TensorCompute.run({ mode: "exact", ...(kernels === undefined ? {} : { kernels }) }, () => {
      using _ = new ActivationScope();
      const x = Tensor.randn([2, 4, 6, 6], { seed: 11 }).withRequiresGrad();
      const w = Tensor.randn([6, 2, 3, 3], { seed: 12 }).withRequiresGrad();
      const b = Tensor.randn([6], { seed: 13 }).withRequiresGrad();
      const y = ops.conv2d(x, w, { bias: b, groups: 2, padding: 1, stride: 2 });
      ops.sum(ops.mul(ops.avgPool2d(y, { kernel: 2, padding: 1 }), 1.5)).backward();
      return [x, w, b].map((t) => [...t.grad!.toArray()]);
    });
  assert.deepEqual(run(), run(referenceKernels));
});

function savedStorages(r: BackwardRecord) {
  return r.saved.map((s) => (s === null ? null : s.unpack(r.op).storage));
}

test("the Conv2d record saves the input for the weight's gradient and the weight for the input's", () => {
  using _ = new ActivationScope();
  const x = Tensor.randn([1, 2, 5, 5], { seed: 1 });
  const w = Tensor.randn([4, 1, 3, 2], { seed: 2 });
  const b = Tensor.zeros([4]);
  const xg = x.withRequiresGrad();
  const wg = w.withRequiresGrad();
  const both = ops.conv2d(xg, wg, { bias: b, stride: [2, 1], padding: [1, 0], dilation: [1, 2], groups: 2 });
  const r = both.gradFn!;
  assert.equal(r.op, "Conv2d");
  assert.deepEqual(r.attrs, { kernel: [3, 2], stride: [2, 1], padding: [1, 0], dilation: [1, 2], groups: 2 });
  assert.deepEqual(savedStorages(r), [x.storage, w.storage]);
  assert.deepEqual(r.inputs.map((i) => i.node), [xg.leaf, wg.leaf, null]);
  assert.deepEqual(r.inputs.map((i) => [...i.shape]), [[1, 2, 5, 5], [4, 1, 3, 2], [4]]);
  assert.deepEqual(r.owned, []);
  const groups = { groups: 2 };
  assert.deepEqual(savedStorages(ops.conv2d(xg, w, groups).gradFn!), [null, w.storage]);
  assert.deepEqual(savedStorages(ops.conv2d(x, wg, groups).gradFn!), [x.storage, null]);
  assert.equal(ops.conv2d(x, w, groups).gradFn, null);
  assert.equal(ops.conv2d(x, w, { ...groups, bias: b.withRequiresGrad() }).gradFn!.inputs.length, 3);
  assert.equal(ops.conv2d(xg, w, groups).gradFn!.inputs.length, 2);
});

test("the AvgPool2d record keeps kernel, stride and padding as attributes and saves nothing", () => {
  using _ = new ActivationScope();
  const x = Tensor.randn([1, 1, 6, 6], { seed: 3 }).withRequiresGrad();
  const r = ops.avgPool2d(x, { kernel: [3, 2], stride: [2, 1], padding: [1, 1] }).gradFn!;
  assert.equal(r.op, "AvgPool2d");
  assert.deepEqual(r.attrs, { kernel: [3, 2], stride: [2, 1], padding: [1, 1] });
  assert.deepEqual(r.saved, []);
  assert.deepEqual([...r.inputShape(0)], [1, 1, 6, 6]);
});

test("the conv2d gradient notices an in-place write to the saved input", () => {
  using _ = new ActivationScope();
  const x = Tensor.randn([1, 1, 4, 4], { seed: 4 });
  const w = Tensor.randn([1, 1, 2, 2], { seed: 5 }).withRequiresGrad();
  const y = ops.conv2d(x, w);
  x.set(0, 0, 0, 0, 0);
  assert.throws(() => ops.sum(y).backward(), (e: Error) => e.name === "TensorVersionError");
});

test("conv2d, conv1d, convTranspose2d and avgPool2d refuse bad input with typed errors naming the rule", () => {
  using _ = new ActivationScope();
  const x = Tensor.zeros([1, 4, 5, 5]);
  const w = Tensor.zeros([2, 4, 3, 3]);
  const wt = Tensor.zeros([4, 2, 3, 3]);
  const cases: [() => unknown, new (...a: never[]) => Error, RegExp][] = [
    [() => ops.conv2d(Tensor.zeros([4, 5]), w), TensorShapeError, /NCHW/],
    [() => ops.conv2d(x, Tensor.zeros([2, 4, 3])), TensorShapeError, /weight must be/],
    [() => ops.conv2d(x, Tensor.zeros([2, 3, 3, 3])), TensorShapeError, /channels/],
    [() => ops.conv2d(x, Tensor.zeros([3, 2, 3, 3]), { groups: 2 }), TensorShapeError, /divide by groups/],
    [() => ops.conv2d(x, w, { groups: 0 }), TensorShapeError, /groups/],
    [() => ops.conv2d(x, Tensor.zeros([2, 4, 6, 1])), TensorShapeError, /smaller than the kernel/],
    [() => ops.conv2d(x, w, { dilation: 3 }), TensorShapeError, /dilated/],
    [() => ops.conv2d(x, w, { stride: 0 }), TensorShapeError, /stride/],
    [() => ops.conv2d(x, w, { padding: -1 }), TensorShapeError, /padding/],
    [() => ops.conv2d(x, w, { bias: Tensor.zeros([3]) }), TensorShapeError, /bias must be \[2\]/],
    [() => ops.conv2d(x.cast(DType.F64), w), DTypeError, /F32/],
    [() => ops.conv2d(x, w, { bias: Tensor.zeros([2], { dtype: DType.I32 }) }), DTypeError, /F32/],
    [() => ops.avgPool2d(x, { kernel: 2, padding: 2 }), TensorShapeError, /half the kernel/],
    [() => ops.avgPool2d(x, { kernel: 6 }), TensorShapeError, /smaller than the kernel/],
    [() => ops.avgPool2d(x, { kernel: 0 }), TensorShapeError, /kernel/],
    [() => ops.avgPool2d(Tensor.zeros([5, 5]), { kernel: 2 }), TensorShapeError, /NCHW/],
    [() => ops.avgPool2d(x.cast(DType.I32), { kernel: 2 }), DTypeError, /F32/],
    [() => ops.conv2d(x, w, { padding: "same", stride: 2 }), OptionError, /"same" needs stride 1/],
    [
      () => ops.conv1d(Tensor.zeros([1, 4, 5]), Tensor.zeros([2, 4, 3]), { padding: "full" as "same" }),
      OptionError,
      /"same" or "valid"/,
    ],
    [
      () => ops.conv1d(Tensor.zeros([1, 4, 5]), Tensor.zeros([2, 4, 3]), { padding: "same", stride: 2 }),
      OptionError,
      /stride 1/,
    ],
    [() => ops.conv1d(x, w), TensorShapeError, /NCL/],
    [() => ops.convTranspose2d(x, Tensor.zeros([3, 2, 3, 3])), TensorShapeError, /in channels \(4/],
    [
      () => ops.convTranspose2d(x, wt, { stride: 2, outputPadding: 2 }),
      OptionError,
      /smaller than the stride/,
    ],
    [() => ops.convTranspose2d(x, wt, { padding: 5 }), TensorShapeError, /must be positive/],
    [() => ops.convTranspose2d(x, wt, { bias: Tensor.zeros([4]) }), TensorShapeError, /bias must be \[2\]/],
  ];
  for (const [fn, type, message] of cases) {
    assert.throws(fn, (e: Error) => e instanceof type && message.test(e.message), String(message));
  }
});

test("padding same keeps the extent (the odd zero on the bottom/right), valid adds none; conv1d is conv2d of height 1", () => {
  using _ = new ActivationScope();
  const x = Tensor.arange(12).reshape([1, 1, 3, 4]);
  // A 2×2 kernel of ones: "same" pads one zero row below and one zero column right.
  const y = ops.conv2d(x, Tensor.ones([1, 1, 2, 2]), { padding: "same" });
  assert.deepEqual(y.shape, [1, 1, 3, 4]);
  assert.deepEqual([...y.toArray()], [10, 14, 18, 10, 26, 30, 34, 18, 17, 19, 21, 11]);
  const v = ops.conv2d(x, Tensor.ones([1, 1, 2, 2]), { padding: "valid" });
  assert.deepEqual([...v.toArray()], [10, 14, 18, 26, 30, 34]);
  const s = Tensor.from([[[1, 2, 3, 4, 5]]]);
  const k = Tensor.from([[[1, 0, -1]]]);
  assert.deepEqual([...ops.conv1d(s, k, { padding: "same" }).toArray()], [-2, -2, -2, -2, 4]);
  assert.deepEqual([...s.conv1d(k, { stride: 2 }).toArray()], [-2, -2]);
  assert.deepEqual([...ops.conv1d(Tensor.from([[1, 2, 3, 4, 5]]), k).shape], [1, 3]);
});

test("convTranspose2d scatters each input through the kernel, and its gradients are conv2d's", () => {
  using _ = new ActivationScope();
  // One 2×2 input, a 2×2 kernel, stride 2: four non-overlapping copies of the kernel, each scaled.
  const x = Tensor.from([[[[1, 2], [3, 4]]]]);
  const w = Tensor.from([[[[1, 10], [100, 1000]]]]);
  const y = ops.convTranspose2d(x, w, { stride: 2, bias: Tensor.from([0.5]) });
  assert.deepEqual(y.shape, [1, 1, 4, 4]);
  assert.deepEqual([...y.toArray()], [
    1.5,
    10.5,
    2.5,
    20.5,
    100.5,
    1000.5,
    200.5,
    2000.5,
    3.5,
    30.5,
    4.5,
    40.5,
    300.5,
    3000.5,
    400.5,
    4000.5,
  ]);
  // Stride 1: overlapping taps add; padding 1 crops one row and column from each side.
  const z = ops.convTranspose2d(x, Tensor.ones([1, 1, 2, 2]));
  assert.deepEqual([...z.toArray()], [1, 3, 2, 4, 10, 6, 3, 7, 4]);
  const cropped = x.convTranspose2d(Tensor.ones([1, 1, 2, 2]), { padding: 1, outputPadding: 0 });
  assert.deepEqual([...cropped.toArray()], [10]);
  // The input gradient of convTranspose2d under a cotangent G is conv2d(G, w).
  const xs = Tensor.from([[[[1, -2], [0.5, 3]]]]).withRequiresGrad();
  const g = Tensor.from([[[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]]]]);
  ops.convTranspose2d(xs, w, { stride: 2 }).mul(g).sum().backward();
  assert.deepEqual([...xs.grad!.toArray()], [...ops.conv2d(g, w, { stride: 2 }).toArray()]);
});

test("nn.ConvTranspose2d holds weight [in, out/groups, kh, kw] and upsamples by the stride", () => {
  using _ = new ActivationScope();
  const up = new nn.ConvTranspose2d(4, 6, [3, 2], { stride: 2, padding: 1, outputPadding: 1, groups: 2 });
  assert.deepEqual(up.weight.shape, [4, 3, 3, 2]);
  assert.deepEqual(up.bias!.shape, [6]);
  const y = up.forward(Tensor.ones([2, 4, 5, 5]));
  assert.deepEqual(y.shape, [2, 6, 10, 9]);
  const expected = ops.convTranspose2d(Tensor.ones([2, 4, 5, 5]), up.weight, {
    bias: up.bias,
    stride: 2,
    padding: 1,
    outputPadding: 1,
    groups: 2,
  });
  assert.deepEqual([...y.toArray()], [...expected.toArray()]);
  up.dispose();
});

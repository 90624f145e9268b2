/**
 * The recurrent cell kernel: the point-wise part of one LSTM or GRU step, forward or backward, over a batch
 * of N rows (the step's matrix products run in the matmul kernel). `nativeRnnCell` runs `zt_rnn_cell_f32`
 * (`zig/kernels/rnn.zig`, which documents each operand); `referenceRnnCell` is the same formulas, operation
 * for operation, in f32 (`Math.fround` after every operation) with sigmoid and tanh as the reference set's
 * unary kernels compute them (`1/(1 + Math.exp(−x))` and `Math.tanh` in f64, rounded once). Exact mode is
 * bitwise the same on every ISA and thread count and within an f32 ulp of the reference per transcendental
 * (the f64 functions of math.zig and of `Math` differ by an f64 ulp at most); fast mode uses math.zig's f32
 * sigmoid and tanh (4 ulps each, `fast_bounds`).
 *
 * LSTM forward: with `z = (pre + b_ih) + (hh + b_hh)` per gate (each bias when given), `i, f, o = σ(z)`, `g = tanh(z)`, `c = f·c_prev + i·g`,
 * `h = o·tanh(c)`, saving i, f, g, o. LSTM backward: with `dh = dh_next + g_out`, `tc = tanh(c)`,
 * `dc = (dc_next + g_c) + (dh·o)·(1 − tc²)`: gate gradients `dc·g·i·(1 − i)`, `dc·c_prev·f·(1 − f)`,
 * `dc·i·(1 − g²)`, `dh·tc·o·(1 − o)`, and `dc·f` to the previous step. GRU forward: `r, z = σ((pre + b_ih) + (hh + b_hh))`,
 * `hn = hh_n + b_n`, `n = tanh((pre_n + b_in) + r·hn)`, `h = n + z·(h_prev − n)`, saving r, z, n, hn. GRU backward:
 * `dh = (dh_w + dh_z) + g_out`, `dn = dh·(1 − z)·(1 − n²)`, `dz = dh·(h_prev − n)·z·(1 − z)`,
 * `dr = dn·hn·r·(1 − r)`; input-side gradients (dr, dz, dn), hidden-side (dr, dz, dn·r), and `dh·z` along
 * the z path to the previous step.
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import { type NativePointer, Status } from "../native/symbols.ts";
import { type PackedMatMulKernel, referencePackedMatMul } from "./matmul.ts";
import { type ComputeSettings, type KernelOperand, MODE_CODE } from "./types.ts";

/** Which step: 0 LSTM forward, 1 LSTM backward, 2 GRU forward, 3 GRU backward. */
export const RnnCellOp = { LstmForward: 0, LstmBackward: 1, GruForward: 2, GruBackward: 3 } as const;

/** The geometry of one cell call. */
export interface RnnCellParams {
  /** One of `RnnCellOp`. */
  readonly op: number;
  /** N: the rows. */
  readonly batch: number;
  /** H: the hidden size. */
  readonly hidden: number;
  /** Whether operand 2 (forward) holds the hidden bias. */
  readonly hasBias: boolean;
  /** Whether the forward step adds the input bias (operand 7 for the LSTM, 6 for the GRU) to `pre`. */
  readonly hasInputBias: boolean;
  /** Whether the forward step writes its activations (the saved operand). */
  readonly save: boolean;
  /** The row strides A, B, C of the strided operands (zig/kernels/rnn.zig says which). */
  readonly strides: readonly [number, number, number];
}

/**
 * A kernel that runs one cell step over eight operands (their offsets are used, their strides are not: rows
 * are `params.strides` or contiguous apart); an unused operand may be any operand.
 */
export type RnnCellKernel = (
  params: RnnCellParams,
  operands: readonly KernelOperand[],
  settings: ComputeSettings,
) => void;

/** The native cell kernel (`zt_rnn_cell_f32`); assumes operands validated and sized by the caller. */
export const nativeRnnCell: RnnCellKernel = (params, operands, settings) => {
  args.op(params.op, MODE_CODE[settings.mode], settings.threads)
    .int(0, params.batch)
    .int(1, params.hidden)
    .int(2, (params.hasBias ? 1 : 0) | (params.save ? 2 : 0) | (params.hasInputBias ? 4 : 0))
    .int(3, params.strides[0])
    .int(4, params.strides[1])
    .int(5, params.strides[2]);
  for (let k = 0; k < 8; k++) args.int(6 + k, operands[k].offset);
  const p = operands.map((o) => o.pointer);
  native.zt_rnn_cell_f32(args.pointer, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
};

const f = Math.fround;
const sigmoid = (x: number) => f(1 / (1 + Math.exp(-x)));
const tanh = (x: number) => f(Math.tanh(x));

/** The reference cell kernel: the native kernel's formulas in f32, one row and one unit at a time. */
export const referenceRnnCell: RnnCellKernel = (params, operands) => {
  const { op, batch, hidden: h, hasBias, hasInputBias } = params;
  const [sa, sb, sc] = params.strides;
  const d = operands.map((o) => o.data as Float32Array);
  const o = operands.map((x) => x.offset);
  const gates = op < 2 ? 4 * h : 3 * h;
  for (let r = 0; r < batch; r++) {
    // Row starts of the operands, by op.
    const row = (k: number, stride: number) => o[k] + r * stride;
    for (let j = 0; j < h; j++) {
      if (op === RnnCellOp.LstmForward || op === RnnCellOp.GruForward) {
        const [pre, hh, b, bi] = [row(0, sa), row(1, gates), o[2], op === RnnCellOp.LstmForward ? 7 : 6];
        const hidden = (k: number) =>
          hasBias ? f(d[1][hh + k * h + j] + d[2][b + k * h + j]) : d[1][hh + k * h + j];
        const input = (k: number) =>
          hasInputBias ? f(d[0][pre + k * h + j] + d[bi][o[bi] + k * h + j]) : d[0][pre + k * h + j];
        const z = (k: number) => f(input(k) + hidden(k));
        if (op === RnnCellOp.LstmForward) {
          const [i, fg, g, og] = [sigmoid(z(0)), sigmoid(z(1)), tanh(z(2)), sigmoid(z(3))];
          const c = f(f(fg * d[3][row(3, h) + j]) + f(i * g));
          d[5][row(5, h) + j] = c;
          d[4][row(4, sb) + j] = f(og * tanh(c));
          if (params.save) [i, fg, g, og].forEach((v, k) => (d[6][row(6, 4 * h) + k * h + j] = v));
        } else {
          const [rg, zg, hn] = [sigmoid(z(0)), sigmoid(z(1)), hidden(2)];
          const n = tanh(f(input(2) + f(rg * hn)));
          d[4][row(4, sb) + j] = f(n + f(zg * f(d[3][row(3, sc) + j] - n)));
          if (params.save) [rg, zg, n, hn].forEach((v, k) => (d[5][row(5, 4 * h) + k * h + j] = v));
        }
      } else if (op === RnnCellOp.LstmBackward) {
        const s = row(0, 4 * h);
        const [i, fg, g, og] = [0, 1, 2, 3].map((k) => d[0][s + k * h + j]);
        const tc = tanh(d[1][row(1, h) + j]);
        const dh = f(d[3][row(3, h) + j] + d[4][row(4, sa) + j]);
        const dcAt = row(6, h) + j;
        const dc = f(f(d[6][dcAt] + d[5][row(5, h) + j]) + f(f(dh * og) * f(1 - f(tc * tc))));
        const out = row(7, sb) + j;
        d[7][out] = f(f(f(dc * g) * i) * f(1 - i));
        d[7][out + h] = f(f(f(dc * d[2][row(2, h) + j]) * fg) * f(1 - fg));
        d[7][out + 2 * h] = f(f(dc * i) * f(1 - f(g * g)));
        d[7][out + 3 * h] = f(f(f(dh * tc) * og) * f(1 - og));
        d[6][dcAt] = f(dc * fg);
      } else {
        const s = row(0, 4 * h);
        const [rg, zg, n, hn] = [0, 1, 2, 3].map((k) => d[0][s + k * h + j]);
        const zAt = row(3, h) + j;
        const dh = f(f(d[2][row(2, h) + j] + d[3][zAt]) + d[4][row(4, sa) + j]);
        const dn = f(f(dh * f(1 - zg)) * f(1 - f(n * n)));
        const dz = f(f(f(dh * f(d[1][row(1, sc) + j] - n)) * zg) * f(1 - zg));
        const dr = f(f(f(dn * hn) * rg) * f(1 - rg));
        const [gi, gh] = [row(5, sb) + j, row(6, sb) + j];
        [d[5][gi], d[5][gi + h], d[5][gi + 2 * h]] = [dr, dz, dn];
        [d[6][gh], d[6][gh + h], d[6][gh + 2 * h]] = [dr, dz, f(dn * rg)];
        d[3][zAt] = f(dh * zg);
      }
    }
  }
};

/** The geometry of a layer's forward pass (`RnnForwardKernel`); N, T and H are at least 1. */
export interface RnnForwardParams {
  /** `RnnCellOp.LstmForward` or `RnnCellOp.GruForward`. */
  readonly op: number;
  /** N: the rows of the batch. */
  readonly batch: number;
  /** T: the time steps. */
  readonly steps: number;
  /** I: the input size (0 allowed: the projection is then zeros). */
  readonly input: number;
  /** H: the hidden size. */
  readonly hidden: number;
}

/** The operands of a layer's forward pass, G = 4 (LSTM) or 3 (GRU); all but x and the weights contiguous. */
export interface RnnForwardOperands {
  /** x [N, T, I], any strides. */
  readonly x: KernelOperand;
  /** W_ihᵀ [I, G·H], any strides. */
  readonly weightIhT: KernelOperand;
  /** W_hhᵀ [H, G·H], any strides. */
  readonly weightHhT: KernelOperand;
  /** h0 [N, H]. */
  readonly h0: KernelOperand;
  /** c0 [N, H] for the LSTM; null for the GRU. */
  readonly c0: KernelOperand | null;
  /** Every step's h [N, T, H], then for the LSTM every step's c [T, N, H] from element N·T·H. */
  readonly out: KernelOperand;
  /** Each step's activations as the cell saves them [T, N, 4H]; null: not saved. */
  readonly saved: KernelOperand | null;
  /** b_hh [G·H]; null: none. */
  readonly biasHh: KernelOperand | null;
  /** b_ih [G·H]; null: none. */
  readonly biasIh: KernelOperand | null;
}

/** A kernel that runs every step of a layer's forward pass (operands validated and sized by the caller). */
export type RnnForwardKernel = (
  params: RnnForwardParams,
  operands: RnnForwardOperands,
  settings: ComputeSettings,
) => void;

/** Rows `stride` apart from element `offset` of `o`. */
function rowsAt(o: KernelOperand, offset: number, stride: number): KernelOperand {
  return viewAt(o, offset, [stride, 1]);
}

/** `o`'s storage from element `offset` with `strides` (its data and pointer read only when used). */
function viewAt(o: KernelOperand, offset: number, strides: readonly number[]): KernelOperand {
  return {
    get pointer() {
      return o.pointer;
    },
    get data() {
      return o.data;
    },
    offset: o.offset + offset,
    strides,
    byteLength: o.byteLength,
  };
}

/**
 * The forward pass as the composition that defines it: weights packed once (`packed`), then per step t the
 * input projection pre = x_t·W_ihᵀ (zeros when I = 0), the product hh = h_{t-1}·W_hhᵀ and one `cell` call
 * that adds the biases and writes h_t (and c_t) into `out` and the activations into `saved`. `scratch(n)`
 * gives a zero-filled f32 buffer of n elements, disposed at the end. The native `zt_rnn_loop_f32` makes
 * the same calls in native code, so it gives this composition's bits over the native kernels.
 */
export function composedRnnForward(
  cell: RnnCellKernel,
  packed: PackedMatMulKernel,
  scratch: (elements: number) => KernelOperand & Disposable,
): RnnForwardKernel {
  return (params, o, settings) => {
    const { op, batch: n, steps, input, hidden: h } = params;
    const g = (op === RnnCellOp.LstmForward ? 4 : 3) * h;
    using buffers = new DisposableStack();
    const take = (elements: number) => buffers.use(scratch(elements));
    const packedWeight = (k: number, weight: KernelOperand) => {
      const store = take(packed.packedSize(k, g, settings));
      packed.pack(k, g, store, weight, settings);
      return store;
    };
    const ih = input > 0 ? packedWeight(input, o.weightIhT) : null;
    const hh = packedWeight(h, o.weightHhT);
    const [pre, recurrent] = [rowsAt(take(n * g), 0, g), rowsAt(take(n * g), 0, g)];
    const [sn, st, si] = o.x.strides;
    const cells = n * steps * h;
    const unused = o.x;
    for (let t = 0; t < steps; t++) {
      const hPrev = t === 0 ? rowsAt(o.h0, 0, h) : rowsAt(o.out, (t - 1) * h, steps * h);
      packed.multiply(n, g, h, recurrent, hPrev, hh, settings);
      if (ih !== null) {
        packed.multiply(n, g, input, pre, viewAt(o.x, t * st, [sn, si]), ih, settings);
      }
      const hOut = rowsAt(o.out, t * h, steps * h);
      const act = o.saved === null ? unused : rowsAt(o.saved, t * n * 4 * h, 4 * h);
      const cellParams: RnnCellParams = {
        op,
        batch: n,
        hidden: h,
        hasBias: o.biasHh !== null,
        hasInputBias: o.biasIh !== null,
        save: o.saved !== null,
        strides: [g, steps * h, t === 0 ? h : steps * h],
      };
      const [bias, inputBias] = [o.biasHh ?? unused, o.biasIh ?? unused];
      if (op === RnnCellOp.LstmForward) {
        const cPrev = t === 0 ? rowsAt(o.c0!, 0, h) : rowsAt(o.out, cells + (t - 1) * n * h, h);
        const cOut = rowsAt(o.out, cells + t * n * h, h);
        cell(cellParams, [pre, recurrent, bias, cPrev, hOut, cOut, act, inputBias], settings);
      } else {
        cell(cellParams, [pre, recurrent, bias, hPrev, hOut, act, inputBias, unused], settings);
      }
    }
  };
}

/** The geometry of a layer's backward pass through time (`RnnBackwardKernel`); all at least 1. */
export interface RnnBackwardParams {
  /** `RnnCellOp.LstmBackward` or `RnnCellOp.GruBackward`. */
  readonly op: number;
  /** N: the rows of the batch. */
  readonly batch: number;
  /** T: the time steps. */
  readonly steps: number;
  /** H: the hidden size. */
  readonly hidden: number;
}

/** The operands of a layer's backward pass, G = 4 (LSTM) or 3 (GRU); all but `weightHh` contiguous. */
export interface RnnBackwardOperands {
  /** W_hh [G·H, H], any strides. */
  readonly weightHh: KernelOperand;
  /** The forward pass's saved activations [T, N, 4H]. */
  readonly saved: KernelOperand;
  /** The LSTM's op buffer (h [N, T, H], then c [T, N, H]) or the GRU's output [N, T, H]. */
  readonly states: KernelOperand;
  /** c0 (LSTM) or h0 (GRU) [N, H]. */
  readonly initial: KernelOperand;
  /** [N, H]: zeros in, h0's gradient out. */
  readonly dh: KernelOperand;
  /** [N, H]: the LSTM's dc or the GRU's dh along the z path; zeros in, the first step's out. */
  readonly carried: KernelOperand;
  /** The gradient of the op's output (the LSTM's whole buffer, the GRU's [N, T, H]). */
  readonly grad: KernelOperand;
  /** The gate gradients [N, T, G·H] (the GRU's input side). */
  readonly gates: KernelOperand;
  /** The GRU's hidden-side gate gradients [N, T, 3H]; null for the LSTM. */
  readonly hiddenGates: KernelOperand | null;
}

/** A kernel that runs a layer's backward pass through time (operands validated and sized by the caller). */
export type RnnBackwardKernel = (
  params: RnnBackwardParams,
  operands: RnnBackwardOperands,
  settings: ComputeSettings,
) => void;

/**
 * The backward pass through time as the composition that defines it: W_hh packed once (`packed`), then from
 * the last step to the first one backward `cell` call (gate gradients of step t, dc or the z path carried
 * in place) and the product dh = dgates_t·W_hh (the hidden side's for the GRU). `scratch` as for
 * `composedRnnForward`. The native `zt_rnn_loop_f32` makes the same calls, so the same bits.
 */
export function composedRnnBackward(
  cell: RnnCellKernel,
  packed: PackedMatMulKernel,
  scratch: (elements: number) => KernelOperand & Disposable,
): RnnBackwardKernel {
  return (params, o, settings) => {
    const { op, batch: n, steps, hidden: h } = params;
    const lstm = op === RnnCellOp.LstmBackward;
    const g = (lstm ? 4 : 3) * h;
    using weight = scratch(packed.packedSize(g, h, settings));
    packed.pack(g, h, weight, o.weightHh, settings);
    const cells = n * steps * h;
    const dh = rowsAt(o.dh, 0, h);
    const cellParams = (t: number): RnnCellParams => ({
      op,
      batch: n,
      hidden: h,
      hasBias: false,
      hasInputBias: false,
      save: false,
      strides: [steps * h, steps * g, t === 0 || lstm ? h : steps * h],
    });
    for (let t = steps - 1; t >= 0; t--) {
      const act = rowsAt(o.saved, t * n * 4 * h, 4 * h);
      const gradH = rowsAt(o.grad, t * h, steps * h);
      const dGates = rowsAt(o.gates, t * g, steps * g);
      let dHidden = dGates;
      if (lstm) {
        const cPrev = t === 0 ? rowsAt(o.initial, 0, h) : rowsAt(o.states, cells + (t - 1) * n * h, h);
        const cT = rowsAt(o.states, cells + t * n * h, h);
        const gradC = rowsAt(o.grad, cells + t * n * h, h);
        cell(cellParams(t), [act, cT, cPrev, dh, gradH, gradC, rowsAt(o.carried, 0, h), dGates], settings);
      } else {
        const hPrev = t === 0 ? rowsAt(o.initial, 0, h) : rowsAt(o.states, (t - 1) * h, steps * h);
        dHidden = rowsAt(o.hiddenGates!, t * g, steps * g);
        const operands = [act, hPrev, dh, rowsAt(o.carried, 0, h), gradH, dGates, dHidden, dHidden];
        cell(cellParams(t), operands, settings);
      }
      packed.multiply(n, h, g, dh, dHidden, weight, settings);
    }
  };
}

/** A zero-filled f32 buffer of the reference kernels (no native memory). */
function referenceScratch(elements: number): KernelOperand & Disposable {
  return {
    pointer: null as unknown as NativePointer,
    data: new Float32Array(elements),
    offset: 0,
    strides: [1],
    [Symbol.dispose]: () => {},
  };
}

/** The reference backward pass: `composedRnnBackward` over the reference cell and packed product. */
export const referenceRnnBackward: RnnBackwardKernel = composedRnnBackward(
  referenceRnnCell,
  referencePackedMatMul,
  referenceScratch,
);

/**
 * Calls `zt_rnn_loop_f32` with the argument block as written and the nine operands' addresses; throws a
 * `RangeError` with `failure()`'s message when the library could not allocate its workspace.
 */
function runLoop(operands: readonly KernelOperand[], failure: () => string): void {
  const p = operands.map((operand) => operand.pointer);
  const status = native.zt_rnn_loop_f32(args.pointer, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]);
  if (status !== Status.ok) throw new RangeError(failure());
}

/** The native backward pass (`zt_rnn_loop_f32`, zig/kernels/rnn.zig `Backward`). */
export const nativeRnnBackward: RnnBackwardKernel = (params, o, settings) => {
  const rest = [o.saved, o.states, o.initial, o.dh, o.carried, o.grad, o.gates, o.hiddenGates ?? o.gates];
  args.op(params.op, MODE_CODE[settings.mode], settings.threads)
    .int(0, params.batch)
    .int(1, params.steps)
    .int(2, params.hidden)
    .operand(0, o.weightHh.offset, o.weightHh.strides);
  rest.forEach((operand, k) => args.int(3 + k, operand.offset));
  runLoop(
    [o.weightHh, ...rest],
    () =>
      `${params.op === RnnCellOp.LstmBackward ? "lstm" : "gru"} backward: out of native memory for the ` +
      `packed weight of a layer with hidden size ${params.hidden}`,
  );
};

/** The reference forward pass: `composedRnnForward` over the reference cell and packed product. */
export const referenceRnnForward: RnnForwardKernel = composedRnnForward(
  referenceRnnCell,
  referencePackedMatMul,
  referenceScratch,
);

/** The native forward pass (`zt_rnn_loop_f32`, zig/kernels/rnn.zig `Forward`). */
export const nativeRnnForward: RnnForwardKernel = (params, o, settings) => {
  const flags = (o.biasHh !== null ? 1 : 0) | (o.saved !== null ? 2 : 0) | (o.biasIh !== null ? 4 : 0);
  const unused = o.x;
  const rest = [o.h0, o.c0 ?? unused, o.out, o.saved ?? unused, o.biasHh ?? unused, o.biasIh ?? unused];
  args.op(params.op, MODE_CODE[settings.mode], settings.threads)
    .int(0, params.batch)
    .int(1, params.steps)
    .int(2, params.input)
    .int(3, params.hidden)
    .int(4, flags)
    .operand(0, o.x.offset, o.x.strides)
    .operand(1, o.weightIhT.offset, o.weightIhT.strides)
    .operand(2, o.weightHhT.offset, o.weightHhT.strides);
  rest.forEach((operand, k) => args.int(5 + k, operand.offset));
  const name = params.op === RnnCellOp.LstmForward ? "lstm" : "gru";
  runLoop(
    [o.x, o.weightIhT, o.weightHhT, ...rest],
    () =>
      `${name}: out of native memory for the packed weights of a layer with input size ${params.input} ` +
      `and hidden size ${params.hidden}`,
  );
};

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

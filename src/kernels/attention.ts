/**
 * The fused attention kernel, flash-attention style: out = softmax(scale·q·kᵀ + mask)·v and each query row's
 * log-sum-exp in one call, the keys visited in blocks of `ATTENTION_BLOCK_KEYS` with an online softmax (no
 * L×S score matrix). `referenceAttention` defines the bits; `nativeAttention` runs `zt_attention_f32`
 * (`zig/kernels/attention.zig`): the reference's bits in exact mode on every ISA and thread count, within
 * `ATTENTION_FAST_BOUND` in fast mode.
 *
 * Per query row i of batch entry b, exact mode: for each block of keys (causal rows stop at key i; a Bool
 * mask's false keys are skipped), s_j = (q_i·k_j in f64, ascending)·scale + mask_ij in f64; the block's
 * maximum raises the running maximum m (only a greater score does, so NaN never); the factor is 1 while m is
 * −∞, 0 when the first finite maximum arrives, exp(m_old − m) otherwise, and the block's shift is m (0 while
 * −∞); l = l·factor, acc = acc·factor, then for each visible key in order p = exp(s_j − shift), l = l + p,
 * acc_c = acc_c + p·v_jc (a product, then a sum). out = f32(acc/l), lse = f32(m + log l); a row that sees
 * no key gives zeros and lse = +∞. exp and log are math.zig's algorithms (`exp64`, `log64` below), so the
 * reference and the native kernel agree bit for bit.
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { NativePointer } from "../native/symbols.ts";
import { type ComputeSettings, type KernelOperand, MODE_CODE } from "./types.ts";

/** Keys per block of the online softmax (`block_keys` in zig/kernels/attention.zig; the exact bits depend on it). */
export const ATTENTION_BLOCK_KEYS = 64;

/** The column padding of the native kernel's packed rows (`pad` in zig/kernels/attention.zig). */
const PAD = 16;

/**
 * Fast mode's bound against exact mode: |fast − exact| ≤ bound·(1 + max |v|) for out (f32 scores summed in
 * a different order over E, exponentials as an f32 polynomial 2^x within a few f32 roundings, f32
 * accumulation over the keys),
 * and |fast − exact| ≤ bound·(1 + |exact|) for the log-sum-exp.
 */
export const ATTENTION_FAST_BOUND = 2 ** -14;

/** The layout and options of one attention call. */
export interface AttentionParams {
  /** The batch extents (every axis before the rows), at most 6. */
  readonly batch: readonly number[];
  /** Query rows L (at least 1). */
  readonly l: number;
  /** Keys S (at least 1). */
  readonly s: number;
  /** The width E of q and k (at least 1). */
  readonly e: number;
  /** The width Ev of v (at least 1). */
  readonly ev: number;
  /** The factor of q·k. */
  readonly scale: number;
  /** Row i sees keys j ≤ i only. */
  readonly causal: boolean;
  /** Query rows per work item (divides the rows of a batch entry among tasks). */
  readonly rows: number;
  /** Work items run as this many tasks (each with its own workspace slice); 1 ≤ tasks ≤ items. */
  readonly tasks: number;
}

/**
 * The operands: q [batch, L, E], k [batch, S, E], v [batch, S, Ev] (strides per batch axis then the row
 * stride; rows contiguous), an optional mask (Bool: false excludes; F32: added) with batch strides, then the
 * row and column strides, and the outputs out [batch, L, Ev] and lse [batch, L], contiguous.
 */
export interface AttentionOperands {
  /** The queries q [batch, L, E]. */
  readonly q: KernelOperand;
  /** The keys k [batch, S, E]. */
  readonly k: KernelOperand;
  /** The values v [batch, S, Ev]. */
  readonly v: KernelOperand;
  /** The mask [batch, L, S] (broadcast by its strides), or null. */
  readonly mask: KernelOperand | null;
  /** The mask is Bool (else F32, added). */
  readonly boolMask: boolean;
  /** The output [batch, L, Ev]. */
  readonly out: KernelOperand;
  /** Each row's logsumexp [batch, L] (what the backward kernel reads). */
  readonly lse: KernelOperand;
  /** F32 scratch of `attentionWorkspace(params)` elements (the native kernel's). */
  readonly work: KernelOperand;
}

/** Runs one attention forward. */
export type AttentionKernel = (
  params: AttentionParams,
  operands: AttentionOperands,
  settings: ComputeSettings,
) => void;

const ceilTo = (x: number, m: number) => Math.ceil(x / m) * m;

/** The F32 elements of the workspace: `tasks` slices (`workFloats` in zig/kernels/attention.zig). */
export function attentionWorkspace(params: AttentionParams): number {
  const evp = ceilTo(params.ev, PAD);
  const b = ATTENTION_BLOCK_KEYS;
  const perTask = ceilTo(b * params.e + b * evp + params.rows * evp + 3 * params.rows + 8 * b, 16);
  return params.tasks * perTask;
}

// --- math.zig's exact exp and log, operation for operation ---

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
const LN2_HI = 6.93147180369123816490e-01;
const LN2_LO = 1.90821492927058770002e-10;
const LOG2E = 1.44269504088896338700e+00;
const SHIFTER = 6755399441055744; // 1.5·2^52
const EXP_MAX = 709.782712893384;
const EXP_MIN = -745.2;
const EXP_TAYLOR = [
  6227020800,
  479001600,
  39916800,
  3628800,
  362880,
  40320,
  5040,
  720,
  120,
  24,
  6,
  2,
  1,
  1,
].map((f) => 1 / f);
const ATANH = [23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3].map((d) => 1 / d);

function horner(r: number, c: readonly number[]): number {
  let q = c[0];
  for (let i = 1; i < c.length; i++) q = c[i] + r * q;
  return q;
}

/** 2^e for e in [−1022, 1023], from its bits. */
function pow2(e: number): number {
  u32[0] = 0;
  u32[1] = (e + 1023) << 20;
  return f64[0];
}

/** math.zig's exact exp (a Taylor polynomial of degree 13 after x = k·ln2 + r). */
export function exp64(x: number): number {
  if (x !== x) return x;
  if (x > EXP_MAX) return Infinity;
  if (x < EXP_MIN) return 0;
  const k = (x * LOG2E + SHIFTER) - SHIFTER;
  const r = (x - k * LN2_HI) - k * LN2_LO;
  const half = k >> 1;
  return horner(r, EXP_TAYLOR) * pow2(half) * pow2(k - half);
}

/** math.zig's exact log (2·atanh((m − 1)/(m + 1)) by its series to s^23, plus e·ln2 in two parts). */
export function log64(x: number): number {
  if (x < 0 || x !== x) return NaN;
  if (x === 0) return -Infinity;
  if (x === Infinity) return Infinity;
  const subnormal = x < 2 ** -1022;
  f64[0] = subnormal ? x * 2 ** 54 : x;
  let e = (u32[1] >>> 20) - 1023 - (subnormal ? 54 : 0);
  u32[1] = (u32[1] & 0x000fffff) | 0x3ff00000;
  let m = f64[0];
  if (m > Math.SQRT2) {
    m = m * 0.5;
    e += 1;
  }
  const f = m - 1;
  const s = f / (2 + f);
  const z = s * s;
  const w = z * horner(z, ATANH);
  const twoS = 2 * s;
  const logM = twoS + twoS * w;
  return e * LN2_HI + (e * LN2_LO + logM);
}

/** Element offsets of batch entry b in an operand with batch strides (the last batch axis fastest). */
function batchOffset(batch: readonly number[], o: KernelOperand, b: number): number {
  let at = o.offset;
  for (let d = batch.length - 1; d >= 0; d--) {
    at += (b % batch[d]) * o.strides[d];
    b = Math.floor(b / batch[d]);
  }
  return at;
}

/**
 * The reference kernel.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceAttention } from "./attention.ts";
 * import type { KernelOperand } from "./types.ts";
 * import type { NativePointer } from "../native/symbols.ts";
 * const operand = (values: number[], strides: number[]): KernelOperand =>
 *   ({ pointer: null as unknown as NativePointer, data: new Float32Array(values), offset: 0, strides });
 * // Two keys with equal scores: the output is the mean of their values; causal row 0 sees key 0 only.
 * const q = operand([0, 0], [1]);
 * const k = operand([1, 2], [1]);
 * const v = operand([4, 8], [1]);
 * const out = operand([9, 9], []);
 * const lse = operand([9, 9], []);
 * const params = { batch: [], l: 2, s: 2, e: 1, ev: 1, scale: 1, causal: true, rows: 2, tasks: 1 };
 * const work = operand([], []);
 * referenceAttention(params, { q, k, v, mask: null, boolMask: false, out, lse, work }, { mode: "exact", threads: 1 });
 * assert.deepEqual([...out.data], [4, 6]);
 * assert.deepEqual([...lse.data], [0, Math.fround(Math.LN2)]);
 * ```
 */
export const referenceAttention: AttentionKernel = (params, o) => {
  const { batch, l, s, e, ev, scale, causal } = params;
  const rank = batch.length;
  const [qd, kd, vd] = [o.q.data, o.k.data, o.v.data] as Float32Array[];
  const out = o.out.data as Float32Array;
  const lse = o.lse.data as Float32Array;
  const md = o.mask?.data as Float32Array | Uint8Array | undefined;
  const [qr, kr, vr] = [o.q, o.k, o.v].map((t) => t.strides[rank]);
  const count = batch.reduce((a, b) => a * b, 1);
  const acc = new Float64Array(ev);
  const sc = new Float64Array(ATTENTION_BLOCK_KEYS);
  const ok = new Uint8Array(ATTENTION_BLOCK_KEYS);
  for (let b = 0; b < count; b++) {
    const [qb, kb0, vb] = [o.q, o.k, o.v].map((t) => batchOffset(batch, t, b));
    const mb = o.mask === null ? 0 : batchOffset(batch, o.mask, b);
    for (let i = 0; i < l; i++) {
      const qi = qb + i * qr;
      acc.fill(0);
      let m = -Infinity;
      let sum = 0;
      let alive = false;
      const kend = causal ? Math.min(s, i + 1) : s;
      for (let kb = 0; kb < kend; kb += ATTENTION_BLOCK_KEYS) {
        const nk = Math.min(ATTENTION_BLOCK_KEYS, kend - kb);
        let bm = -Infinity;
        for (let t = 0; t < nk; t++) {
          const j = kb + t;
          const at = o.mask === null ? 0 : mb + i * o.mask.strides[rank] + j * o.mask.strides[rank + 1];
          ok[t] = o.mask === null || !o.boolMask || md![at] !== 0 ? 1 : 0;
          if (ok[t] === 0) continue;
          alive = true;
          const kj = kb0 + j * kr;
          let d = 0;
          for (let c = 0; c < e; c++) d += qd[qi + c] * kd[kj + c];
          const x = d * Math.fround(scale) + (o.mask !== null && !o.boolMask ? md![at] : 0);
          sc[t] = x;
          if (x > bm) bm = x;
        }
        const next = bm > m ? bm : m;
        const factor = next === -Infinity ? 1 : m === -Infinity ? 0 : exp64(m - next);
        const shift = next === -Infinity ? 0 : next;
        m = next;
        sum = sum * factor;
        for (let c = 0; c < ev; c++) acc[c] = acc[c] * factor;
        for (let t = 0; t < nk; t++) {
          if (ok[t] === 0) continue;
          const p = exp64(sc[t] - shift);
          sum = sum + p;
          const vj = vb + (kb + t) * vr;
          for (let c = 0; c < ev; c++) acc[c] = acc[c] + p * vd[vj + c];
        }
      }
      const row = o.out.offset + (b * l + i) * ev;
      const at = o.lse.offset + b * l + i;
      if (!alive) {
        out.fill(0, row, row + ev);
        lse[at] = Infinity;
        continue;
      }
      for (let c = 0; c < ev; c++) out[row + c] = acc[c] / sum;
      lse[at] = m + log64(sum);
    }
  }
};

const NULL = null as unknown as NativePointer;

/**
 * The argument block both attention kernels read: the batch extents, the q, k, v and mask operands, the
 * sizes, the flags (1 causal, 2 a Bool mask, 4 an F32 mask), the out, lse and work offsets, the task count,
 * the query rows per work item and the scale.
 */
function writeArgs(
  params: AttentionParams,
  o: AttentionOperands,
  settings: ComputeSettings,
  rows: number,
): typeof args {
  const mask = o.mask;
  const flags = (params.causal ? 1 : 0) | (mask === null ? 0 : o.boolMask ? 2 : 4);
  return args.shape(params.batch)
    .operand(0, o.q.offset, o.q.strides)
    .operand(1, o.k.offset, o.k.strides)
    .operand(2, o.v.offset, o.v.strides)
    .operand(3, mask?.offset ?? 0, mask?.strides ?? new Array(params.batch.length + 2).fill(0))
    .op(0, MODE_CODE[settings.mode], settings.threads)
    .int(0, params.l)
    .int(1, params.s)
    .int(2, params.e)
    .int(3, params.ev)
    .int(4, flags)
    .int(5, o.out.offset)
    .int(6, o.lse.offset)
    .int(7, o.work.offset)
    .int(8, params.tasks)
    .int(9, rows)
    .float(0, params.scale);
}

/** The native kernel (`zt_attention_f32`); operands validated and sized by the caller. */
export const nativeAttention: AttentionKernel = (params, o, settings) => {
  const mask = o.mask;
  writeArgs(params, o, settings, params.rows);
  native.zt_attention_f32(
    args.pointer,
    o.out.pointer,
    o.lse.pointer,
    o.q.pointer,
    o.k.pointer,
    o.v.pointer,
    mask?.pointer ?? NULL,
    o.work.pointer,
  );
};

/** The backward kernel's extra operands: the saved out and lse, the output gradient and where dq, dk, dv go. */
export interface AttentionGradients {
  /** The output gradient G [batch, L, Ev], contiguous. */
  readonly g: KernelOperand;
  /** dq [batch, L, E], dk [batch, S, E], dv [batch, S, Ev]: contiguous, of the batch's full extent. */
  readonly dq: KernelOperand;
  /** dk [batch, S, E]. */
  readonly dk: KernelOperand;
  /** dv [batch, S, Ev]. */
  readonly dv: KernelOperand;
}

/**
 * The gradients of one attention forward from its operands (out and lse the forward's; `work` of
 * `attentionBackwardWorkspace(params)` elements; `params.rows` = L, `params.tasks` ≤ the batch entries).
 * With P_ij = exp(s_ij − lse_i) over the keys row i sees and D_i = Σ_c G_ic·out_ic: dv_j = Σ_i P_ij·G_i,
 * dS_ij = P_ij·(G_i·v_j − D_i), dq_i = scale·Σ_j dS_ij·k_j, dk_j = scale·Σ_i dS_ij·q_i.
 */
export type AttentionBackwardKernel = (
  params: AttentionParams,
  operands: AttentionOperands,
  grads: AttentionGradients,
  settings: ComputeSettings,
) => void;

/** The F32 elements of the backward workspace (`backwardFloats` in zig/kernels/attention.zig, per task). */
export function attentionBackwardWorkspace(params: AttentionParams): number {
  const { l, s, e, ev } = params;
  const [ep, evp, b] = [ceilTo(e, PAD), ceilTo(ev, PAD), ATTENTION_BLOCK_KEYS];
  const exact = 2 * (e + s * e + s * ev + l);
  const fast = l * ep * 2 + l * evp + l + b * (e + ev) + b * ep * 2 + b * evp + 2 * BACKWARD_ROWS * b;
  return params.tasks * ceilTo(Math.max(exact, fast), 16);
}

/** Query rows per block of the native fast backward (`bwd_rows` in zig/kernels/attention.zig). */
const BACKWARD_ROWS = 48;

/**
 * The reference backward kernel, exact mode's meaning: per batch entry, rows i ascending and their visible
 * keys j ascending, s_ij as forward, p = exp(s_ij − lse_i), dp = G_i·v_j (f64, ascending), t = p·(dp − D_i)·
 * scale (D_i in f64, ascending), then dq_ic += t·k_jc, dk_jc += t·q_ic, dv_jc += p·G_ic in f64 (products,
 * then sums), each rounded once at the end.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { referenceAttentionBackward } from "./attention.ts";
 * import type { KernelOperand } from "./types.ts";
 * import type { NativePointer } from "../native/symbols.ts";
 * const operand = (values: number[], strides: number[]): KernelOperand =>
 *   ({ pointer: null as unknown as NativePointer, data: new Float32Array(values), offset: 0, strides });
 * // One query, one key: p = 1, so dv = g and dS = g·v − g·out = 0.
 * const params = { batch: [], l: 1, s: 1, e: 1, ev: 1, scale: 1, causal: false, rows: 1, tasks: 1 };
 * const fwd = {
 *   q: operand([2], [1]), k: operand([3], [1]), v: operand([5], [1]), mask: null, boolMask: false,
 *   out: operand([5], []), lse: operand([6], []), work: operand([], []),
 * };
 * const [dq, dk, dv] = [operand([9], []), operand([9], []), operand([9], [])];
 * referenceAttentionBackward(params, fwd, { g: operand([7], []), dq, dk, dv }, { mode: "exact", threads: 1 });
 * assert.deepEqual([dq.data[0], dk.data[0], dv.data[0]], [0, 0, 7]);
 * ```
 */
export const referenceAttentionBackward: AttentionBackwardKernel = (params, o, grads) => {
  const { batch, l, s, e, ev, causal } = params;
  const scale = Math.fround(params.scale);
  const rank = batch.length;
  const [qd, kd, vd] = [o.q.data, o.k.data, o.v.data] as Float32Array[];
  const od = o.out.data as Float32Array;
  const lse = o.lse.data as Float32Array;
  const gd = grads.g.data as Float32Array;
  const [dqd, dkd, dvd] = [grads.dq.data, grads.dk.data, grads.dv.data] as Float32Array[];
  const md = o.mask?.data as Float32Array | Uint8Array | undefined;
  const [qr, kr, vr] = [o.q, o.k, o.v].map((t) => t.strides[rank]);
  const count = batch.reduce((a, b) => a * b, 1);
  const dq = new Float64Array(e);
  const dk = new Float64Array(s * e);
  const dv = new Float64Array(s * ev);
  for (let b = 0; b < count; b++) {
    const [qb, kb, vb] = [o.q, o.k, o.v].map((t) => batchOffset(batch, t, b));
    const mb = o.mask === null ? 0 : batchOffset(batch, o.mask, b);
    const rowsAt = o.out.offset + b * l * ev;
    const gAt = grads.g.offset + b * l * ev;
    dk.fill(0);
    dv.fill(0);
    for (let i = 0; i < l; i++) {
      let d = 0;
      for (let c = 0; c < ev; c++) d += gd[gAt + i * ev + c] * od[rowsAt + i * ev + c];
      const qi = qb + i * qr;
      const gi = gAt + i * ev;
      const lam = lse[o.lse.offset + b * l + i];
      dq.fill(0);
      const kend = causal ? Math.min(s, i + 1) : s;
      for (let j = 0; j < kend; j++) {
        const at = o.mask === null ? 0 : mb + i * o.mask.strides[rank] + j * o.mask.strides[rank + 1];
        if (o.mask !== null && o.boolMask && md![at] === 0) continue;
        const kj = kb + j * kr;
        const vj = vb + j * vr;
        let dot = 0;
        for (let c = 0; c < e; c++) dot += qd[qi + c] * kd[kj + c];
        const x = dot * scale + (o.mask !== null && !o.boolMask ? md![at] : 0);
        const p = exp64(x - lam);
        let dp = 0;
        for (let c = 0; c < ev; c++) dp += gd[gi + c] * vd[vj + c];
        const t = p * (dp - d) * scale;
        for (let c = 0; c < e; c++) {
          dq[c] = dq[c] + t * kd[kj + c];
          dk[j * e + c] = dk[j * e + c] + t * qd[qi + c];
        }
        for (let c = 0; c < ev; c++) dv[j * ev + c] = dv[j * ev + c] + p * gd[gi + c];
      }
      dqd.set(dq, grads.dq.offset + (b * l + i) * e);
    }
    dkd.set(dk, grads.dk.offset + b * s * e);
    dvd.set(dv, grads.dv.offset + b * s * ev);
  }
};

/** The native backward kernel (`zt_attention_backward_f32`); operands validated and sized by the caller. */
export const nativeAttentionBackward: AttentionBackwardKernel = (params, o, grads, settings) => {
  const mask = o.mask;
  writeArgs(params, o, settings, params.l)
    .int(10, grads.g.offset)
    .int(11, grads.dq.offset)
    .int(12, grads.dk.offset)
    .int(13, grads.dv.offset);
  native.zt_attention_backward_f32(
    args.pointer,
    o.out.pointer,
    o.lse.pointer,
    o.q.pointer,
    o.k.pointer,
    o.v.pointer,
    mask?.pointer ?? NULL,
    grads.g.pointer,
    grads.dq.pointer,
    grads.dk.pointer,
    grads.dv.pointer,
    o.work.pointer,
  );
};

/**
 * Sequence operators: single-layer LSTM and GRU (batch-first, PyTorch's gate order and weight shapes), the
 * whole forward pass in one kernel call that runs per step two products and the fused cell
 * (`src/kernels/rnn.ts`, `zig/kernels/rnn.zig`), with records of their own whose rules run backward through
 * time with one cell kernel call and one product per step; and the
 * CTC loss, computed by the forward-backward algorithm in f64 by one kernel call (`src/kernels/ctc.ts`,
 * `zig/kernels/ctc.zig`) with a record of its own.
 *
 * @module
 */
import { DTypeError, OptionError, TensorShapeError } from "../core/errors.ts";
import { checkOptions, describe } from "../core/options.ts";
import { DType, dtypeInfo } from "../core/dtype.ts";
import { formatShape } from "../core/shape.ts";
import {
  allocate,
  blockSizeOf,
  dtypeOf,
  isContiguousOf,
  isTensor,
  operandOf,
  rankOf,
  shapeOf,
  sizeOf,
  Tensor,
} from "../tensor.ts";
import { tidy } from "../memory/scope.ts";
import { type BackwardRecord, record, type RecordAttributes, shouldRecord } from "../autograd/record.ts";
import { add, eq, ge, lt, mul } from "./elementwise.ts";
import { checkF32, checkParameter, newOutput } from "./common.ts";
import { matmul } from "./linalg.ts";
import { concat } from "./nn.ts";
import { reshape, select, slice, transpose, unsqueeze } from "./views.ts";
import { cast, clone, contiguous } from "./copy.ts";
import { sum } from "./reduce.ts";
import { computeSettings, GradMode, kernels } from "../context.ts";
import { type CtcParams, ctcWorkspace } from "../kernels/ctc.ts";
import { RnnCellOp, type RnnForwardParams } from "../kernels/rnn.ts";

/** The parameters of one recurrent layer, PyTorch's `weight_ih_l0` and friends (gates stacked on axis 0). */
export interface RnnWeights {
  /** [gates·H, I]: input to hidden, gates stacked in PyTorch's order (LSTM i, f, g, o; GRU r, z, n). */
  readonly weightIh: Tensor;
  /** [gates·H, H]: hidden to hidden, same order. */
  readonly weightHh: Tensor;
  /** [gates·H] */
  readonly biasIh?: Tensor;
  /** [gates·H] */
  readonly biasHh?: Tensor;
}

/** Initial states of `lstm`, each [1, N, H] (zeros when absent). */
export interface LstmOptions {
  /** The initial hidden state, [1, N, H]. */
  readonly h0?: Tensor;
  /** The initial cell state, [1, N, H]. */
  readonly c0?: Tensor;
}

/** What `lstm` returns: every step's hidden state and the final states, as PyTorch shapes them. */
export interface LstmResult {
  /** [N, T, H] */
  readonly output: Tensor;
  /** The last hidden state, [1, N, H]. */
  readonly h: Tensor;
  /** The last cell state, [1, N, H]. */
  readonly c: Tensor;
}

/** Initial state of `gru`, [1, N, H] (zeros when absent). */
export interface GruOptions {
  /** The initial hidden state, [1, N, H]. */
  readonly h0?: Tensor;
}

/** What `gru` returns. */
export interface GruResult {
  /** [N, T, H] */
  readonly output: Tensor;
  /** The last hidden state, [1, N, H]. */
  readonly h: Tensor;
}

/** The checked hidden size of a layer with `gates` gates over x [N, T, I]. */
function checkRecurrent(
  op: string,
  gates: number,
  x: Tensor,
  w: RnnWeights,
  states: (Tensor | undefined)[],
): number {
  checkF32(op, x, w.weightIh, w.weightHh);
  if (rankOf(x) !== 3 || shapeOf(x)[1] === 0) {
    throw new TensorShapeError(
      op,
      `x must be batch-first [N, T, I] with T ≥ 1, got ${formatShape(shapeOf(x))}`,
      [
        shapeOf(x),
      ],
    );
  }
  const [n, , inputs] = shapeOf(x);
  const rows = rankOf(w.weightIh) === 2 ? shapeOf(w.weightIh)[0] : -1;
  if (rows <= 0 || rows % gates !== 0) {
    throw new TensorShapeError(
      op,
      `weightIh must be [${gates}·hidden, ${inputs}] with hidden ≥ 1, got ${
        formatShape(shapeOf(w.weightIh))
      }`,
      [shapeOf(w.weightIh)],
    );
  }
  const hidden = rows / gates;
  checkParameter(op, "weightIh", w.weightIh, [rows, inputs]);
  checkParameter(op, "weightHh", w.weightHh, [rows, hidden]);
  checkParameter(op, "biasIh", w.biasIh, [rows]);
  checkParameter(op, "biasHh", w.biasHh, [rows]);
  for (const state of states) checkParameter(op, "an initial state", state, [1, n, hidden]);
  return hidden;
}

/** A [N, H] copy of a [1, N, H] initial state that no scope tracks (the record owns it), or zeros. */
function initialState(op: string, state: Tensor | undefined, n: number, hidden: number): Tensor {
  if (state === undefined) return allocate(op, [n, hidden], DType.F32, true);
  return GradMode.noGrad(() => clone(select(state, 0, 0)));
}

/** The checked geometry and operands of a layer. */
interface Layer {
  readonly op: "lstm" | "gru";
  readonly gates: number;
  readonly n: number;
  readonly steps: number;
  readonly hidden: number;
  readonly weights: RnnWeights;
  /** Whether the op records (the activations are then saved). */
  readonly record: boolean;
}

/** Whether a layer has no element to compute (the loop kernels need N, T and H ≥ 1; the outputs are empty). */
function isEmptyLayer(n: number, steps: number, hidden: number): boolean {
  return n === 0 || steps === 0 || hidden === 0;
}

/**
 * The forward pass, every step in one call of the forward kernel (src/kernels/rnn.ts `RnnForwardKernel`):
 * per step the input projection x_t·W_ihᵀ, the product h·W_hhᵀ and the fused cell, which writes the step's
 * h into `output` [N, T, H] (and, for the LSTM, c into [T, N, H] from element `cells` of the same buffer)
 * and its activations into `saved` [T, N, 4H] when recording.
 */
function forwardLoop(
  layer: Layer,
  x: Tensor,
  h0: Tensor,
  c0: Tensor | null,
  output: Tensor,
  saved: Tensor | null,
) {
  const { op, n, steps, hidden, weights } = layer;
  if (isEmptyLayer(n, steps, hidden)) return;
  // The kernel reads the biases as contiguous vectors: a strided one (a flipped view) is copied first.
  using biases = new DisposableStack();
  const dense = (t: Tensor | undefined) => {
    if (t === undefined) return null;
    return operandOf(
      isContiguousOf(t) ? t : biases.adopt(GradMode.noGrad(() => clone(t)), (c) => c.dispose()),
      op,
    );
  };
  const params: RnnForwardParams = {
    op: op === "lstm" ? RnnCellOp.LstmForward : RnnCellOp.GruForward,
    batch: n,
    steps,
    input: shapeOf(x)[2],
    hidden,
  };
  kernels().rnnForward(params, {
    x: operandOf(x, op),
    weightIhT: operandOf(transpose(weights.weightIh, 0, 1), op),
    weightHhT: operandOf(transpose(weights.weightHh, 0, 1), op),
    h0: operandOf(h0, op),
    c0: c0 === null ? null : operandOf(c0, op),
    out: operandOf(output, op),
    saved: saved === null ? null : operandOf(saved, op),
    biasHh: dense(weights.biasHh),
    biasIh: dense(weights.biasIh),
  }, computeSettings());
}

/** Checks a layer's operands and options and returns its geometry. */
function layerOf(
  op: "lstm" | "gru",
  x: Tensor,
  weights: RnnWeights,
  states: (Tensor | undefined)[],
): Layer {
  const gates = op === "lstm" ? 4 : 3;
  const hidden = checkRecurrent(op, gates, x, weights, states);
  const record = shouldRecord(...recordInputs(x, weights, states));
  return { op, gates, n: shapeOf(x)[0], steps: shapeOf(x)[1], hidden, weights, record };
}

/** The inputs of a layer's record: x, the weights, then whichever of the biases and states were given. */
function recordInputs(x: Tensor, w: RnnWeights, states: (Tensor | undefined)[]): Tensor[] {
  return [x, w.weightIh, w.weightHh, w.biasIh, w.biasHh, ...states].filter((t): t is Tensor =>
    t !== undefined
  );
}

/**
 * A single-layer LSTM over batch-first x [N, T, I], PyTorch's `nn.LSTM(batch_first=True)`: with gates
 * i, f, g, o stacked in `weightIh` [4H, I] and `weightHh` [4H, H], `c' = σ(f)·c + σ(i)·tanh(g)` and
 * `h' = σ(o)·tanh(c')`. Returns every step's `h` as `output` [N, T, H] and the final `h`, `c` as [1, N, H].
 * One kernel call runs every step: the products x_t·W_ihᵀ and h·W_hhᵀ, then the fused cell (src/kernels/rnn.ts),
 * with the arithmetic of the element-wise composition (the same bits in exact mode). `output` and the step cell states live in one buffer [N·T·H + T·N·H], the
 * op's result, which records Lstm (saved: x, weightIh, weightHh, that buffer, the gates' activations
 * [T, N, 4H] and the initial states as [N, H]; attributes: which biases and states were given); `output`,
 * `h` and `c` are views of it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.ones([1, 3, 2]);
 * using weightIh = Tensor.zeros([4, 2]); // hidden size 1, every gate 0: σ = 0.5, tanh = 0
 * using weightHh = Tensor.zeros([4, 1]);
 * const { output, h, c } = ops.lstm(x, { weightIh, weightHh }, { c0: Tensor.ones([1, 1, 1]) });
 * assert.deepEqual([...c.toArray()], [0.125]); // the cell state halves at each step
 * assert.deepEqual([...output.shape], [1, 3, 1]);
 * assert.equal(h.get(0, 0, 0), output.get(0, 2, 0));
 * ```
 */
export function lstm(x: Tensor, weights: RnnWeights, options?: LstmOptions): LstmResult {
  const op = "lstm";
  options = checkOptions(op, options, ["h0", "c0"]);
  const layer = layerOf(op, x, weights, [options.h0, options.c0]);
  const { n, steps, hidden } = layer;
  const cells = n * steps * hidden;
  const h0 = initialState(op, options.h0, n, hidden);
  const c0 = initialState(op, options.c0, n, hidden);
  const saved = layer.record ? allocate(op, [steps, n, 4 * hidden], DType.F32, false) : null;
  let all = newOutput(op, [2 * cells]);
  try {
    forwardLoop(layer, x, h0, c0, all, saved);
  } catch (error) {
    [all, saved, h0, c0].forEach((t) => t?.dispose());
    throw error;
  }
  if (saved === null) [h0, c0].forEach((t) => t.dispose());
  else {
    const attrs = {
      hasBiasIh: !!weights.biasIh,
      hasBiasHh: !!weights.biasHh,
      hasH0: !!options.h0,
      hasC0: !!options.c0,
    };
    all = record(all, "Lstm", recordInputs(x, weights, [options.h0, options.c0]), {
      saved: [x, weights.weightIh, weights.weightHh, all, saved, h0, c0],
      owned: [saved, h0, c0],
      attrs,
    });
  }
  const output = reshape(slice(all, 0, 0, cells), [n, steps, hidden]);
  const c = reshape(slice(all, 0, 2 * cells - n * hidden, 2 * cells), [1, n, hidden]);
  return { output, h: unsqueeze(select(output, 1, steps - 1), 0), c };
}

/**
 * A single-layer GRU over batch-first x [N, T, I], PyTorch's `nn.GRU(batch_first=True)`: with gates r, z, n
 * stacked in `weightIh` [3H, I] and `weightHh` [3H, H], `r = σ(x_r + h_r)`, `z = σ(x_z + h_z)`,
 * `n = tanh(x_n + r·h_n)` (each `h_·` including its hidden bias) and `h' = (1 − z)·n + z·h`. Returns
 * `output` [N, T, H] and the final `h` [1, N, H]. Computed as `lstm` is, every step in one kernel call;
 * `output` records Gru (saved: x, weightIh, weightHh, output, the activations r, z, n and W_hn·h + b_hn
 * [T, N, 4H] and h0 as [N, H]; attributes: which biases and state were given).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ops, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.ones([2, 4, 3]);
 * using weightIh = Tensor.zeros([3 * 5, 3]);
 * using weightHh = Tensor.zeros([3 * 5, 5]);
 * const { output, h } = ops.gru(x, { weightIh, weightHh }, { h0: Tensor.ones([1, 2, 5]) });
 * assert.deepEqual([...output.shape], [2, 4, 5]);
 * assert.equal(h.get(0, 1, 2), 0.0625); // z = 0.5 and n = 0: the state halves at each step
 * ```
 */
export function gru(x: Tensor, weights: RnnWeights, options?: GruOptions): GruResult {
  const op = "gru";
  options = checkOptions(op, options, ["h0"]);
  const layer = layerOf(op, x, weights, [options.h0]);
  const { n, steps, hidden } = layer;
  const h0 = initialState(op, options.h0, n, hidden);
  const saved = layer.record ? allocate(op, [steps, n, 4 * hidden], DType.F32, false) : null;
  let output = newOutput(op, [n, steps, hidden]);
  try {
    forwardLoop(layer, x, h0, null, output, saved);
  } catch (error) {
    [output, saved, h0].forEach((t) => t?.dispose());
    throw error;
  }
  if (saved === null) h0.dispose();
  else {
    const attrs = {
      hasBiasIh: !!weights.biasIh,
      hasBiasHh: !!weights.biasHh,
      hasH0: !!options.h0,
      hasC0: false,
    };
    output = record(output, "Gru", recordInputs(x, weights, [options.h0]), {
      saved: [x, weights.weightIh, weights.weightHh, output, saved, h0],
      owned: [saved, h0],
      attrs,
    });
  }
  return { output, h: unsqueeze(select(output, 1, steps - 1), 0) };
}

/**
 * The gradients of the weights, biases and x from the stacked pre-activation gradients of every step
 * (`dIh` [N, T, G·H] on the input side, `dHh` on the hidden side): dx = dIh·W_ih, dW_ih = dIhᵀ·x,
 * dW_hh = dHhᵀ·h_prev (h0 then output[:, :T − 1]), db_ih = Σ dIh, db_hh = Σ dHh, each one product or sum over
 * the N·T rows (one sum for both biases when the two sides are one tensor, as the LSTM's are); then the initial
 * states' gradients. In the record's input order, null where none is wanted.
 */
function layerGradients(
  r: BackwardRecord<"Lstm" | "Gru">,
  output: Tensor,
  dIh: Tensor,
  dHh: Tensor,
  states: Tensor[],
): (Tensor | null)[] {
  const [x, weightIh] = [0, 1].map((i) => r.savedTensor(i));
  const h0 = r.savedTensor(5);
  const [n, steps, inputs] = shapeOf(x);
  const hidden = shapeOf(h0)[1];
  const rows = (t: Tensor) => reshape(contiguous(t), [n * steps, shapeOf(t)[2]]);
  const out: (Tensor | null)[] = [];
  out.push(r.needsGrad(0) ? reshape(matmul(rows(dIh), weightIh), [n, steps, inputs]) : null);
  out.push(r.needsGrad(1) ? matmul(transpose(rows(dIh), 0, 1), rows(x)) : null);
  if (r.needsGrad(2)) {
    const previous = steps === 1
      ? unsqueeze(h0, 1)
      : concat([unsqueeze(h0, 1), slice(output, 1, 0, steps - 1)], 1);
    out.push(matmul(transpose(rows(dHh), 0, 1), rows(previous)));
  } else out.push(null);
  const a = r.attrs;
  let i = 3;
  const dbIh = a.hasBiasIh && r.needsGrad(i++) ? sum(rows(dIh), 0) : null;
  const dbHh = a.hasBiasHh && r.needsGrad(i++)
    ? (dHh === dIh && dbIh !== null ? dbIh : sum(rows(dHh), 0))
    : null;
  if (a.hasBiasIh) out.push(dbIh);
  if (a.hasBiasHh) out.push(dbHh);
  for (const [given, d] of [[a.hasH0, states[0]], [a.hasC0, states[1]]] as const) {
    if (given) out.push(r.needsGrad(i++) ? reshape(d, [1, n, hidden]) : null);
  }
  return out;
}

/**
 * The Lstm rule: backward through time from the last step in one kernel call (`RnnBackwardKernel`: per step
 * the cell's backward step, the gate gradients of step t into a stacked [N, T, 4H] buffer, dc carried in
 * place, and the product dh = dgates_t·W_hh); then
 * the weight gradients over all steps at once (`layerGradients`). `g` is the gradient of the op's buffer
 * [N·T·H + T·N·H]: the output's and each step cell state's.
 */
export function lstmBackward(r: BackwardRecord<"Lstm">, g: Tensor): (Tensor | null)[] {
  const op = "lstm";
  const [weightHh, all, saved, c0] = [2, 3, 4, 6].map((i) => r.savedTensor(i));
  const [steps, n, width] = shapeOf(saved);
  const h = width / 4;
  const cells = n * steps * h;
  const grad = contiguous(g);
  const gates = newOutput(op, [n, steps, 4 * h]);
  const dh = allocate(op, [n, h], DType.F32, true, { scoped: true });
  const dc = allocate(op, [n, h], DType.F32, true, { scoped: true });
  if (!isEmptyLayer(n, steps, h)) {
    kernels().rnnBackward({ op: RnnCellOp.LstmBackward, batch: n, steps, hidden: h }, {
      weightHh: operandOf(weightHh, op),
      saved: operandOf(saved, op),
      states: operandOf(all, op),
      initial: operandOf(c0, op),
      dh: operandOf(dh, op),
      carried: operandOf(dc, op),
      grad: operandOf(grad, op),
      gates: operandOf(gates, op),
      hiddenGates: null,
    }, computeSettings());
  }
  const output = reshape(slice(all, 0, 0, cells), [n, steps, h]);
  return layerGradients(r, output, gates, gates, [dh, dc]);
}

/**
 * The Gru rule: backward through time as `lstmBackward`, the cell kernel writing each step's input-side and
 * hidden-side gate gradients (they differ in n's, which the hidden side has times r) and dh·z along the z path,
 * one product dh = dgates_hh,t·W_hh per step; then `layerGradients`.
 */
export function gruBackward(r: BackwardRecord<"Gru">, g: Tensor): (Tensor | null)[] {
  const op = "gru";
  const [weightHh, output, saved, h0] = [2, 3, 4, 5].map((i) => r.savedTensor(i));
  const [steps, n, width] = shapeOf(saved);
  const h = width / 4;
  const grad = contiguous(g);
  const [dIh, dHh] = [0, 1].map(() => newOutput(op, [n, steps, 3 * h]));
  const dh = allocate(op, [n, h], DType.F32, true, { scoped: true });
  const dz = allocate(op, [n, h], DType.F32, true, { scoped: true });
  if (!isEmptyLayer(n, steps, h)) {
    kernels().rnnBackward({ op: RnnCellOp.GruBackward, batch: n, steps, hidden: h }, {
      weightHh: operandOf(weightHh, op),
      saved: operandOf(saved, op),
      states: operandOf(output, op),
      initial: operandOf(h0, op),
      dh: operandOf(dh, op),
      carried: operandOf(dz, op),
      grad: operandOf(grad, op),
      gates: operandOf(dIh, op),
      hiddenGates: operandOf(dHh, op),
    }, computeSettings());
  }
  return layerGradients(r, output, dIh, dHh, [add(dh, dz)]);
}

/** Options of `ctcLoss`. */
export interface CtcLossOptions {
  /** The blank class. @default 0 */
  readonly blank?: number;
  /**
   * `"mean"`: each sequence's loss divided by its target length (at least 1), then averaged over the batch;
   * `"sum"`: summed; `"none"`: one loss per sequence, [N]. @default "mean"
   */
  readonly reduction?: "mean" | "sum" | "none";
  /** Infinite losses (targets that no alignment reaches) and their gradients become 0. @default false */
  readonly zeroInfinity?: boolean;
}

const REDUCTIONS = ["none", "mean", "sum"] as const;

/** The checked CTC problem: the batch's lengths (host-side parameters) and its labels. */
interface CtcProblem {
  readonly steps: number;
  readonly batch: number;
  readonly classes: number;
  readonly blank: number;
  readonly inputLengths: readonly number[];
  readonly targetLengths: readonly number[];
  /** The labels of every sequence concatenated, I32, checked. */
  readonly labels: Tensor;
}

/**
 * The lengths as host numbers. They are parameters of the loss, not data it computes on (PyTorch's `ctc_loss`
 * takes them as an `IntArrayRef` too): an integer tensor of N entries is read once, here, to size the problem
 * and the kernel's workspace.
 */
function lengthsOf(op: string, name: string, value: Tensor | readonly number[], batch: number): number[] {
  let values: number[];
  if (isTensor(value)) {
    const info = dtypeInfo(dtypeOf(value));
    if (info.isFloat || info.isQuantized || info.name === "Bool") {
      throw new DTypeError(op, `${name} must be an integer tensor or an array of numbers, got ${info.name}`);
    }
    values = Array.from(value.toArray() as ArrayLike<number | bigint>, Number);
  } else if (Array.isArray(value)) {
    values = [...value];
  } else {
    throw new OptionError(
      op,
      `${name} must be an integer tensor or an array of numbers, got ${describe(value)}`,
    );
  }
  if (values.length !== batch || values.some((v) => !Number.isInteger(v) || v < 0)) {
    throw new TensorShapeError(op, `${name} must hold ${batch} integers ≥ 0, got [${values.join(", ")}]`);
  }
  return values;
}

/** The error for a target label that is not a class or is the blank; reads the labels only on this path. */
function badLabel(
  op: string,
  labels: Tensor,
  lengths: readonly number[],
  shape: readonly number[],
  classes: number,
  blank: number,
): never {
  const values = Array.from(labels.toArray() as ArrayLike<number | bigint>, Number);
  const at = values.findIndex((v) => v < 0 || v >= classes || v === blank);
  let sequence = 0;
  for (let end = lengths[0]; end <= at; end += lengths[sequence]) sequence++;
  throw new TensorShapeError(
    op,
    `target label ${values[at]} of sequence ${sequence} must be a class in 0 to ${
      classes - 1
    } other than the blank ${blank}`,
    [shape],
  );
}

/**
 * The targets ([N, S] padded, or 1-D concatenated) as one I32 tensor of the labels concatenated, copied by
 * native slices, and checked natively: element-wise tests on the labels (as F32, exact for any class count
 * below 2^24, which `checkCtc` requires) and one count read back.
 */
function ctcLabels(
  op: string,
  targets: Tensor,
  targetLengths: readonly number[],
  classes: number,
  blank: number,
): Tensor {
  const info = dtypeInfo(dtypeOf(targets));
  if (info.isFloat || info.isQuantized || info.name === "Bool" || blockSizeOf(targets) > 0) {
    throw new DTypeError(op, `targets must be an integer tensor of class indices, got ${info.name}`);
  }
  const total = targetLengths.reduce((s, v) => s + v, 0);
  const padded = rankOf(targets) === 2 && shapeOf(targets)[0] === targetLengths.length;
  if (
    !(padded && targetLengths.every((l) => l <= shapeOf(targets)[1])) &&
    !(rankOf(targets) === 1 && sizeOf(targets) === total)
  ) {
    throw new TensorShapeError(
      op,
      `targets must be [N, S] with every target length ≤ S, or 1-D with the ${total} labels concatenated; got ${
        formatShape(shapeOf(targets))
      }`,
      [shapeOf(targets)],
    );
  }
  return tidy(() => {
    const rows = padded
      ? targetLengths.map((length, i) => reshape(slice(slice(targets, 0, i, i + 1), 1, 0, length), [length]))
      : [targets];
    const labels = rows.length === 0 ? Tensor.zeros([0], { dtype: dtypeOf(targets) }) : concat(rows, 0);
    const values = cast(labels, DType.F32);
    const bad = sum(
      add(
        add(cast(lt(values, 0), DType.F32), cast(ge(values, classes), DType.F32)),
        cast(eq(values, blank), DType.F32),
      ),
    );
    if ((bad.item() as number) !== 0) badLabel(op, labels, targetLengths, shapeOf(targets), classes, blank);
    return cast(labels, DType.I32);
  });
}

function checkCtc(
  op: string,
  logProbs: Tensor,
  targets: Tensor,
  inputLengths: Tensor | readonly number[],
  targetLengths: Tensor | readonly number[],
  options: CtcLossOptions,
): CtcProblem {
  checkF32(op, logProbs);
  if (rankOf(logProbs) !== 3) {
    throw new TensorShapeError(op, `logProbs must be [T, N, C], got ${formatShape(shapeOf(logProbs))}`, [
      shapeOf(logProbs),
    ]);
  }
  const [steps, batch, classes] = shapeOf(logProbs);
  if (classes > 2 ** 24) {
    throw new TensorShapeError(op, `at most 2^24 classes are supported, got ${classes}`, [shapeOf(logProbs)]);
  }
  const blank = options.blank ?? 0;
  if (!Number.isInteger(blank) || blank < 0 || blank >= classes) {
    throw new TensorShapeError(op, `blank must be a class in 0 to ${classes - 1}, got ${String(blank)}`);
  }
  if (!REDUCTIONS.includes(options.reduction ?? "mean")) {
    throw new OptionError(op, `reduction must be "mean", "sum" or "none", got ${String(options.reduction)}`);
  }
  const inputs = lengthsOf(op, "inputLengths", inputLengths, batch);
  const lengths = lengthsOf(op, "targetLengths", targetLengths, batch);
  inputs.forEach((length, i) => {
    if (length > steps) {
      throw new TensorShapeError(op, `input length ${length} of sequence ${i} exceeds the ${steps} steps`);
    }
  });
  const labels = ctcLabels(op, targets, lengths, classes, blank);
  return { steps, batch, classes, blank, inputLengths: inputs, targetLengths: lengths, labels };
}

/**
 * The Connectionist Temporal Classification loss, PyTorch's `ctc_loss`: `logProbs` [T, N, C] (normally a
 * log-softmax over C), `targets` as [N, S] padded or 1-D concatenated class indices (never the blank),
 * `inputLengths` and `targetLengths` with N entries (integer tensors or arrays). The negative log-likelihood
 * of each target over every alignment is computed in f64 by the forward (α) recursion; when `logProbs`
 * requires gradients, the same kernel call runs the backward (β) recursion and writes the gradient, which the
 * record keeps (the backward pass multiplies it by the output gradient). The gradient is the derivative with
 * respect to `logProbs` itself; PyTorch's adds `exp(logProbs)`, which a log-softmax before the loss cancels,
 * so both give the same gradient to the logits. Records CtcLoss (saved and owned slot 0: the gradient, scaled
 * by the reduction).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DType, ops, Tensor } from "@zigtensor/zigtensor";
 * // Two steps, classes {blank, a}, uniform: "a" is reached by "aa", "a_" and "_a", probability 3/4.
 * using logProbs = Tensor.full([2, 1, 2], Math.log(0.5));
 * using targets = Tensor.from([[1]], { dtype: DType.I32 });
 * using loss = ops.ctcLoss(logProbs, targets, [2], [1], { reduction: "sum" });
 * assert.ok(Math.abs((loss.item() as number) + Math.log(0.75)) < 1e-6);
 * ```
 */
export function ctcLoss(
  logProbs: Tensor,
  targets: Tensor,
  inputLengths: Tensor | readonly number[],
  targetLengths: Tensor | readonly number[],
  options?: CtcLossOptions,
): Tensor {
  const op = "ctcLoss";
  options = checkOptions(op, options, ["blank", "reduction", "zeroInfinity"]);
  const problem = checkCtc(op, logProbs, targets, inputLengths, targetLengths, options);
  const reduction = REDUCTIONS.indexOf(options.reduction ?? "mean");
  const { steps, batch, classes, blank, inputLengths: inputs, targetLengths: lengths, labels } = problem;
  const starts: number[] = [];
  lengths.reduce((at, length) => (starts.push(at), at + length), 0);
  const width = 2 * Math.max(0, ...lengths) + 1;
  const params: CtcParams = {
    steps,
    batch,
    classes,
    blank,
    reduction,
    zeroInfinity: options.zeroInfinity ?? false,
    width,
  };
  const wantGrad = shouldRecord(logProbs);
  const out = newOutput(op, reduction === 0 ? [batch] : []);
  const grad = wantGrad ? allocate(op, [steps, batch, classes], DType.F32, false, { scoped: true }) : null;
  // A strided input is copied once (the kernel reads [T, N, C] row-major from the offset).
  const dense = isContiguousOf(logProbs) ? logProbs : GradMode.noGrad(() => contiguous(logProbs));
  try {
    // The kernel's I32 metadata: the lengths and label starts (host parameters), then the labels (native).
    using lengthsAndStarts = Tensor.from([...inputs, ...lengths, ...starts], [3 * batch], {
      dtype: DType.I32,
    });
    using meta = concat([lengthsAndStarts, labels], 0);
    using work = allocate(op, [Math.max(1, ctcWorkspace(params, wantGrad))], DType.F64, false, {
      scoped: true,
    });
    kernels().ctc(
      params,
      operandOf(dense, op),
      operandOf(meta, op),
      operandOf(out, op),
      grad ? operandOf(grad, op) : null,
      operandOf(work, op),
      computeSettings(),
    );
  } finally {
    if (dense !== logProbs) dense.dispose();
    labels.dispose();
  }
  if (grad === null) return out;
  return record(out, "CtcLoss", [logProbs], { saved: [grad], owned: [grad], attrs: { reduction } });
}

/**
 * The CtcLoss rule's gradient [T, N, C]: the gradient the forward pass computed (each sequence's part times
 * its reduction factor) times `g`, broadcast over each sequence's rows for reduction "none".
 */
export function ctcLossBackward(grad: Tensor, attrs: RecordAttributes["CtcLoss"], g: Tensor): Tensor {
  return mul(grad, attrs.reduction === 0 ? reshape(g, [1, shapeOf(grad)[1], 1]) : g);
}

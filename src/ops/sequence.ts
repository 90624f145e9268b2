/**
 * Sequence operators: single-layer LSTM and GRU (batch-first, PyTorch's gate order and weight shapes), built
 * step by step from linear, slices and the element-wise functions, whose records carry the gradient; and the
 * CTC loss, computed by the forward-backward algorithm in f64 by one kernel call (`src/kernels/ctc.ts`,
 * `zig/kernels/ctc.zig`) with a record of its own.
 *
 * @module
 */
import { DTypeError, OptionError, TensorShapeError } from "../core/errors.ts";
import { checkOptions, describe } from "../core/options.ts";
import { DType, dtypeInfo } from "../core/dtype.ts";
import { formatShape } from "../core/shape.ts";
import { allocate, Tensor } from "../tensor.ts";
import { tidy } from "../memory/scope.ts";
import { record, type RecordAttributes, shouldRecord } from "../autograd/record.ts";
import { add, eq, ge, lt, mul, sigmoid, sub, tanh } from "./elementwise.ts";
import { checkF32, checkParameter, newOutput } from "./common.ts";
import { linear } from "./linalg.ts";
import { concat } from "./nn.ts";
import { reshape, select, slice, unsqueeze } from "./views.ts";
import { cast, contiguous } from "./copy.ts";
import { sum } from "./reduce.ts";
import { computeSettings, GradMode, kernels } from "../context.ts";
import { type CtcParams, ctcWorkspace } from "../kernels/ctc.ts";

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
  if (x.rank !== 3 || x.shape[1] === 0) {
    throw new TensorShapeError(
      op,
      `x must be batch-first [N, T, I] with T ≥ 1, got ${formatShape(x.shape)}`,
      [
        x.shape,
      ],
    );
  }
  const [n, , inputs] = x.shape;
  const rows = w.weightIh.rank === 2 ? w.weightIh.shape[0] : -1;
  if (rows <= 0 || rows % gates !== 0) {
    throw new TensorShapeError(
      op,
      `weightIh must be [${gates}·hidden, ${inputs}] with hidden ≥ 1, got ${formatShape(w.weightIh.shape)}`,
      [w.weightIh.shape],
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

/** The [N, H] initial state: the given [1, N, H] one, or zeros. */
function initialState(op: string, state: Tensor | undefined, n: number, hidden: number): Tensor {
  return state === undefined
    ? allocate(op, [n, hidden], DType.F32, true, { scoped: true })
    : select(state, 0, 0);
}

/** Gate `i` of stacked [N, gates·H] pre-activations. */
function gate(t: Tensor, i: number, hidden: number): Tensor {
  return slice(t, 1, i * hidden, (i + 1) * hidden);
}

/** Runs `run` in a scope that keeps only its result when nothing records (the intermediates are garbage). */
function composite<T>(inputs: readonly (Tensor | undefined)[], run: () => T): T {
  return shouldRecord(...inputs.filter((t): t is Tensor => t !== undefined)) ? run() : tidy(run);
}

/**
 * A single-layer LSTM over batch-first x [N, T, I], PyTorch's `nn.LSTM(batch_first=True)`: with gates
 * i, f, g, o stacked in `weightIh` [4H, I] and `weightHh` [4H, H], `c' = σ(f)·c + σ(i)·tanh(g)` and
 * `h' = σ(o)·tanh(c')`. Returns every step's `h` as `output` [N, T, H] and the final `h`, `c` as [1, N, H].
 * Built from linear, slices and element-wise ops, whose records carry the gradient.
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
  const hidden = checkRecurrent(op, 4, x, weights, [options.h0, options.c0]);
  const { weightIh, weightHh, biasIh, biasHh } = weights;
  const [n, steps] = x.shape;
  return composite([x, weightIh, weightHh, biasIh, biasHh, options.h0, options.c0], () => {
    const projected = linear(x, weightIh, biasIh);
    let h = initialState(op, options.h0, n, hidden);
    let c = initialState(op, options.c0, n, hidden);
    const outputs: Tensor[] = [];
    for (let t = 0; t < steps; t++) {
      const gates = add(select(projected, 1, t), linear(h, weightHh, biasHh));
      const [i, f, o] = [0, 1, 3].map((g) => sigmoid(gate(gates, g, hidden)));
      c = add(mul(f, c), mul(i, tanh(gate(gates, 2, hidden))));
      h = mul(o, tanh(c));
      outputs.push(unsqueeze(h, 1));
    }
    return { output: concat(outputs, 1), h: unsqueeze(h, 0), c: unsqueeze(c, 0) };
  });
}

/**
 * A single-layer GRU over batch-first x [N, T, I], PyTorch's `nn.GRU(batch_first=True)`: with gates r, z, n
 * stacked in `weightIh` [3H, I] and `weightHh` [3H, H], `r = σ(x_r + h_r)`, `z = σ(x_z + h_z)`,
 * `n = tanh(x_n + r·h_n)` (each `h_·` including its hidden bias) and `h' = (1 − z)·n + z·h`. Returns
 * `output` [N, T, H] and the final `h` [1, N, H].
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
  const hidden = checkRecurrent(op, 3, x, weights, [options.h0]);
  const { weightIh, weightHh, biasIh, biasHh } = weights;
  const [n, steps] = x.shape;
  return composite([x, weightIh, weightHh, biasIh, biasHh, options.h0], () => {
    const projected = linear(x, weightIh, biasIh);
    let h = initialState(op, options.h0, n, hidden);
    const outputs: Tensor[] = [];
    for (let t = 0; t < steps; t++) {
      const fromInput = select(projected, 1, t);
      const fromHidden = linear(h, weightHh, biasHh);
      const [r, z] = [0, 1].map((g) => sigmoid(add(gate(fromInput, g, hidden), gate(fromHidden, g, hidden))));
      const candidate = tanh(add(gate(fromInput, 2, hidden), mul(r, gate(fromHidden, 2, hidden))));
      // (1 − z)·n + z·h, written as n + z·(h − n).
      h = add(candidate, mul(z, sub(h, candidate)));
      outputs.push(unsqueeze(h, 1));
    }
    return { output: concat(outputs, 1), h: unsqueeze(h, 0) };
  });
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
  if (value instanceof Tensor) {
    const info = dtypeInfo(value.dtype);
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
  const info = dtypeInfo(targets.dtype);
  if (info.isFloat || info.isQuantized || info.name === "Bool" || targets.blockSize > 0) {
    throw new DTypeError(op, `targets must be an integer tensor of class indices, got ${info.name}`);
  }
  const total = targetLengths.reduce((s, v) => s + v, 0);
  const padded = targets.rank === 2 && targets.shape[0] === targetLengths.length;
  if (
    !(padded && targetLengths.every((l) => l <= targets.shape[1])) &&
    !(targets.rank === 1 && targets.size === total)
  ) {
    throw new TensorShapeError(
      op,
      `targets must be [N, S] with every target length ≤ S, or 1-D with the ${total} labels concatenated; got ${
        formatShape(targets.shape)
      }`,
      [targets.shape],
    );
  }
  return tidy(() => {
    const rows = padded
      ? targetLengths.map((length, i) => reshape(slice(slice(targets, 0, i, i + 1), 1, 0, length), [length]))
      : [targets];
    const labels = rows.length === 0 ? Tensor.zeros([0], { dtype: targets.dtype }) : concat(rows, 0);
    const values = cast(labels, DType.F32);
    const bad = sum(
      add(
        add(cast(lt(values, 0), DType.F32), cast(ge(values, classes), DType.F32)),
        cast(eq(values, blank), DType.F32),
      ),
    );
    if ((bad.item() as number) !== 0) badLabel(op, labels, targetLengths, targets.shape, classes, blank);
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
  if (logProbs.rank !== 3) {
    throw new TensorShapeError(op, `logProbs must be [T, N, C], got ${formatShape(logProbs.shape)}`, [
      logProbs.shape,
    ]);
  }
  const [steps, batch, classes] = logProbs.shape;
  if (classes > 2 ** 24) {
    throw new TensorShapeError(op, `at most 2^24 classes are supported, got ${classes}`, [logProbs.shape]);
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
  const dense = logProbs.isContiguous ? logProbs : GradMode.noGrad(() => contiguous(logProbs));
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
      dense.operand(op),
      meta.operand(op),
      out.operand(op),
      grad?.operand(op) ?? null,
      work.operand(op),
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
  return mul(grad, attrs.reduction === 0 ? reshape(g, [1, grad.shape[1], 1]) : g);
}

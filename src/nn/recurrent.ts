/**
 * Recurrent layers: LSTM and GRU over `ops.lstm`/`ops.gru`, stacked `numLayers` deep, optionally
 * bidirectional (the reverse direction runs `ops.lstm`/`ops.gru` over the time-flipped input and flips its
 * output back) with dropout between layers, with PyTorch's parameter names (`weight_ih_l0`, `weight_hh_l0`,
 * `bias_ih_l0`, `bias_hh_l0`, `weight_ih_l0_reverse`, ...), all U(±1/√hidden).
 *
 * @module
 */
import { TensorShapeError } from "../core/errors.ts";
import { formatShape } from "../core/shape.ts";
import type { Tensor } from "../tensor.ts";
import * as ops from "../ops/mod.ts";
import { Xorshift128 } from "../core/random.ts";
import { drawSeed, fanInUniform } from "./init.ts";
import { Module } from "./module.ts";
import { rankOf, shapeOf } from "../tensor.ts";

/** Options of `LSTM` and `GRU`. */
export interface RecurrentOptions {
  /** Stacked layers, each reading the previous one's output. @default 1 */
  readonly numLayers?: number;
  /** @default true */
  readonly bias?: boolean;
  /** Input and output are [N, T, ·] instead of PyTorch's default [T, N, ·]. @default false */
  readonly batchFirst?: boolean;
  /** A second direction over the reversed sequence; outputs are concatenated [forward, reverse]. @default false */
  readonly bidirectional?: boolean;
  /** The dropout probability on each layer's output but the last, in training mode. @default 0 */
  readonly dropout?: number;
  /** The seed of the dropout masks' generator; one from `nn.manualSeed`'s stream when absent. */
  readonly seed?: number;
}

/** The layers shared by LSTM and GRU. */
abstract class Recurrent<State> extends Module<[Tensor, State?], [Tensor, State]> {
  readonly weights: ops.RnnWeights[] = [];
  readonly numLayers: number;
  readonly batchFirst: boolean;
  /** 2 when bidirectional, else 1. */
  readonly numDirections: number;
  /** The dropout probability between layers. */
  readonly dropout: number;
  readonly #random: Xorshift128;

  constructor(
    readonly name: string,
    gates: number,
    readonly inputSize: number,
    readonly hiddenSize: number,
    options: RecurrentOptions,
  ) {
    super();
    this.numLayers = options.numLayers ?? 1;
    this.batchFirst = options.batchFirst ?? false;
    this.numDirections = options.bidirectional ?? false ? 2 : 1;
    this.dropout = options.dropout ?? 0;
    if (typeof this.dropout !== "number" || !(this.dropout >= 0 && this.dropout <= 1)) {
      throw new RangeError(`${name}: dropout must be in [0, 1], got ${String(options.dropout)}`);
    }
    this.#random = new Xorshift128(options.seed ?? drawSeed());
    for (
      const [what, v] of [["inputSize", inputSize], ["hiddenSize", hiddenSize], ["numLayers", this.numLayers]]
    ) {
      if (!Number.isInteger(v) || (v as number) < 1) {
        throw new RangeError(`${name}: ${what} must be an integer ≥ 1, got ${String(v)}`);
      }
    }
    const rows = gates * hiddenSize;
    for (let l = 0; l < this.numLayers; l++) {
      for (const suffix of this.numDirections === 2 ? ["", "_reverse"] : [""]) {
        const columns = l === 0 ? inputSize : hiddenSize * this.numDirections;
        const u = (shape: number[]) => fanInUniform(shape, hiddenSize);
        const weightIh = this.parameter(`weight_ih_l${l}${suffix}`, u([rows, columns]));
        const weightHh = this.parameter(`weight_hh_l${l}${suffix}`, u([rows, hiddenSize]));
        const biases = options.bias ?? true
          ? {
            biasIh: this.parameter(`bias_ih_l${l}${suffix}`, u([rows])),
            biasHh: this.parameter(`bias_hh_l${l}${suffix}`, u([rows])),
          }
          : {};
        this.weights.push({ weightIh, weightHh, ...biases });
      }
    }
  }

  /**
   * Runs every layer and direction over batch-major `x` [N, T, I]: `step(input, weights, index)` runs one
   * direction (index `l·directions + d` into the weights and the stacked states) and returns its output
   * [N, T, H] and final states. Returns the last layer's output and each state stacked over layers and
   * directions.
   */
  protected stack<S extends Tensor[]>(
    x: Tensor,
    step: (input: Tensor, weights: ops.RnnWeights, index: number) => { output: Tensor; states: S },
  ): { output: Tensor; states: Tensor[] } {
    let y = x;
    const finals: Tensor[][] = [];
    for (let l = 0; l < this.numLayers; l++) {
      const outputs: Tensor[] = [];
      for (let d = 0; d < this.numDirections; d++) {
        const index = l * this.numDirections + d;
        const input = d === 0 ? y : ops.flip(y, 1);
        const r = step(input, this.weights[index], index);
        outputs.push(d === 0 ? r.output : ops.flip(r.output, 1));
        r.states.forEach((s, i) => (finals[i] ??= []).push(s));
      }
      y = outputs.length === 1 ? outputs[0] : ops.concat(outputs, 2);
      if (l < this.numLayers - 1 && this.training && this.dropout > 0) {
        y = ops.dropout(y, { p: this.dropout, seed: this.#random.next() });
      }
    }
    return { output: y, states: finals.map((t) => (t.length === 1 ? t[0] : ops.concat(t, 0))) };
  }

  /** x as batch-first [N, T, I], checked. */
  protected batchMajor(x: Tensor): Tensor {
    if (rankOf(x) !== 3) {
      throw new TensorShapeError(
        this.name,
        `expects ${this.batchFirst ? "[N, T, I]" : "[T, N, I]"}, got ${formatShape(shapeOf(x))}`,
        [shapeOf(x)],
      );
    }
    return this.batchFirst ? x : x.transpose(0, 1);
  }

  /** The output in the caller's layout. */
  protected callerMajor(y: Tensor): Tensor {
    return this.batchFirst ? y : y.transpose(0, 1);
  }

  /** Slice `i` [1, N, H] of a [numLayers·directions, N, H] state. */
  protected layerState(state: Tensor | undefined, i: number): Tensor | undefined {
    return state === undefined || this.weights.length === 1 ? state : state.slice(0, i, i + 1);
  }
}

/**
 * A stacked LSTM (PyTorch's `nn.LSTM`). `forward(x, [h0, c0]?)` returns `[output, [h, c]]` with `output`
 * [T, N, D·H] ([N, T, D·H] with `batchFirst`; D = 2 when bidirectional) and `h`, `c` [numLayers·D, N, H].
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using lstm = new nn.LSTM(3, 5, { numLayers: 2, batchFirst: true });
 * const [output, [h, c]] = lstm.forward(Tensor.ones([4, 7, 3]));
 * assert.deepEqual([output.shape, h.shape, c.shape], [[4, 7, 5], [2, 4, 5], [2, 4, 5]]);
 * assert.ok(lstm.stateDict().has("bias_hh_l1"));
 * ```
 */
export class LSTM extends Recurrent<[Tensor, Tensor]> {
  constructor(inputSize: number, hiddenSize: number, options: RecurrentOptions = {}) {
    super("LSTM", 4, inputSize, hiddenSize, options);
  }

  forward(x: Tensor, state?: [Tensor, Tensor]): [Tensor, [Tensor, Tensor]] {
    const { output, states } = this.stack(this.batchMajor(x), (input, w, i) => {
      const r = ops.lstm(input, w, {
        h0: this.layerState(state?.[0], i),
        c0: this.layerState(state?.[1], i),
      });
      return { output: r.output, states: [r.h, r.c] };
    });
    return [this.callerMajor(output), [states[0], states[1]]];
  }
}

/**
 * A stacked GRU (PyTorch's `nn.GRU`). `forward(x, h0?)` returns `[output, h]` with `output` [T, N, D·H]
 * ([N, T, D·H] with `batchFirst`; D = 2 when bidirectional) and `h` [numLayers·D, N, H].
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * using gru = new nn.GRU(3, 5);
 * const [output, h] = gru.forward(Tensor.ones([7, 4, 3]));
 * assert.deepEqual([output.shape, h.shape], [[7, 4, 5], [1, 4, 5]]);
 * ```
 */
export class GRU extends Recurrent<Tensor> {
  constructor(inputSize: number, hiddenSize: number, options: RecurrentOptions = {}) {
    super("GRU", 3, inputSize, hiddenSize, options);
  }

  forward(x: Tensor, state?: Tensor): [Tensor, Tensor] {
    const { output, states } = this.stack(this.batchMajor(x), (input, w, i) => {
      const r = ops.gru(input, w, { h0: this.layerState(state, i) });
      return { output: r.output, states: [r.h] };
    });
    return [this.callerMajor(output), states[0]];
  }
}

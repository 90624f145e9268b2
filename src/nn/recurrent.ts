/**
 * Recurrent layers: LSTM and GRU over `ops.lstm`/`ops.gru`, stacked `numLayers` deep, with PyTorch's
 * parameter names (`weight_ih_l0`, `weight_hh_l0`, `bias_ih_l0`, `bias_hh_l0`, ...), all U(±1/√hidden).
 *
 * @module
 */
import { TensorShapeError } from "../core/errors.ts";
import { formatShape } from "../core/shape.ts";
import type { Tensor } from "../tensor.ts";
import * as ops from "../ops/mod.ts";
import { fanInUniform } from "./init.ts";
import { Module } from "./module.ts";

/** Options of `LSTM` and `GRU`. */
export interface RecurrentOptions {
  /** Stacked layers, each reading the previous one's output. @default 1 */
  readonly numLayers?: number;
  /** @default true */
  readonly bias?: boolean;
  /** Input and output are [N, T, ·] instead of PyTorch's default [T, N, ·]. @default false */
  readonly batchFirst?: boolean;
}

/** The layers shared by LSTM and GRU. */
abstract class Recurrent<State> extends Module<[Tensor, State?], [Tensor, State]> {
  readonly weights: ops.RnnWeights[] = [];
  readonly numLayers: number;
  readonly batchFirst: boolean;

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
    for (
      const [what, v] of [["inputSize", inputSize], ["hiddenSize", hiddenSize], ["numLayers", this.numLayers]]
    ) {
      if (!Number.isInteger(v) || (v as number) < 1) {
        throw new RangeError(`${name}: ${what} must be an integer ≥ 1, got ${String(v)}`);
      }
    }
    const rows = gates * hiddenSize;
    for (let l = 0; l < this.numLayers; l++) {
      const columns = l === 0 ? inputSize : hiddenSize;
      const u = (shape: number[]) => fanInUniform(shape, hiddenSize);
      const weightIh = this.parameter(`weight_ih_l${l}`, u([rows, columns]));
      const weightHh = this.parameter(`weight_hh_l${l}`, u([rows, hiddenSize]));
      const biases = options.bias ?? true
        ? {
          biasIh: this.parameter(`bias_ih_l${l}`, u([rows])),
          biasHh: this.parameter(`bias_hh_l${l}`, u([rows])),
        }
        : {};
      this.weights.push({ weightIh, weightHh, ...biases });
    }
  }

  /** x as batch-first [N, T, I], checked. */
  protected batchMajor(x: Tensor): Tensor {
    if (x.rank !== 3) {
      throw new TensorShapeError(
        this.name,
        `expects ${this.batchFirst ? "[N, T, I]" : "[T, N, I]"}, got ${formatShape(x.shape)}`,
        [x.shape],
      );
    }
    return this.batchFirst ? x : x.transpose(0, 1);
  }

  /** The output in the caller's layout. */
  protected callerMajor(y: Tensor): Tensor {
    return this.batchFirst ? y : y.transpose(0, 1);
  }

  /** Layer `l`'s slice [1, N, H] of a [numLayers, N, H] state. */
  protected layerState(state: Tensor | undefined, l: number): Tensor | undefined {
    return state === undefined || this.numLayers === 1 ? state : state.slice(0, l, l + 1);
  }
}

/**
 * A stacked LSTM (PyTorch's `nn.LSTM`). `forward(x, [h0, c0]?)` returns `[output, [h, c]]` with `output`
 * [T, N, H] ([N, T, H] with `batchFirst`) and `h`, `c` [numLayers, N, H].
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
    let y = this.batchMajor(x);
    const hs: Tensor[] = [];
    const cs: Tensor[] = [];
    this.weights.forEach((w, l) => {
      const r = ops.lstm(y, w, { h0: this.layerState(state?.[0], l), c0: this.layerState(state?.[1], l) });
      y = r.output;
      hs.push(r.h);
      cs.push(r.c);
    });
    const stack = (t: Tensor[]) => (t.length === 1 ? t[0] : ops.concat(t, 0));
    return [this.callerMajor(y), [stack(hs), stack(cs)]];
  }
}

/**
 * A stacked GRU (PyTorch's `nn.GRU`). `forward(x, h0?)` returns `[output, h]` with `output` [T, N, H]
 * ([N, T, H] with `batchFirst`) and `h` [numLayers, N, H].
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
    let y = this.batchMajor(x);
    const hs: Tensor[] = [];
    this.weights.forEach((w, l) => {
      const r = ops.gru(y, w, { h0: this.layerState(state, l) });
      y = r.output;
      hs.push(r.h);
    });
    return [this.callerMajor(y), hs.length === 1 ? hs[0] : ops.concat(hs, 0)];
  }
}

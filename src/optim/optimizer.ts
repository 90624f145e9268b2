/**
 * The optimizer base: parameter groups with their hyperparameters, per-parameter state buffers owned by the
 * optimizer (allocated at the first step, reused after, so steady-state steps obtain no memory), one fused
 * kernel call per parameter, `zeroGrad`, and `stateDict`/`loadStateDict` in PyTorch's shape.
 *
 * @module
 */
import { computeSettings, kernels } from "../context.ts";
import { DTypeError, TensorShapeError } from "../core/errors.ts";
import { DType } from "../core/dtype.ts";
import { formatShape } from "../core/shape.ts";
import {
  dtypeOf,
  gradOf,
  isContiguousOf,
  isTensor,
  leafOf,
  operandOf,
  shapeOf,
  sizeOf,
  storageOf,
  Tensor,
} from "../tensor.ts";
import type { OptimizerStep } from "../kernels/optim.ts";
import { bumpStorageVersion } from "../memory/storage.ts";

/** Hyperparameters of a group: numbers and flags, as PyTorch's `param_groups` entries. */
export type Hyperparameters = Record<string, number | boolean>;

/** A group of parameters with its own hyperparameters (those not given come from the optimizer's options). */
export interface ParamGroup<H extends Hyperparameters = Hyperparameters> {
  readonly params: readonly Tensor[];
  /** The group's hyperparameters; schedules change `lr` here. */
  options: H;
}

/** What an optimizer takes: parameters, or groups of parameters with per-group options. */
export type ParamsInput<H extends Hyperparameters> =
  | Iterable<Tensor>
  | readonly { params: Iterable<Tensor>; options?: Partial<H> }[];

/** One parameter's optimizer state: the step count and its named buffers (owned by the optimizer). */
export interface ParamState {
  step: number;
  readonly buffers: Map<string, Tensor>;
}

/** An optimizer's state: per parameter index (counted across groups), and each group's hyperparameters. */
export interface OptimizerStateDict {
  readonly state: Map<number, { step: number; buffers: Map<string, Tensor> }>;
  readonly paramGroups: readonly (Hyperparameters & { params: number[] })[];
}

/**
 * The base of every optimizer. A subclass names its state buffers and turns a group's hyperparameters and a
 * parameter's step count into one `OptimizerStep`; the base runs it through the kernel set's
 * `optimizerStep` (native by default, the TypeScript reference under `TensorCompute.run({ kernels })`).
 */
export abstract class Optimizer<H extends Hyperparameters = Hyperparameters> implements Disposable {
  /** The parameter groups, in the order given. */
  readonly paramGroups: ParamGroup<H>[];
  readonly #state = new Map<Tensor, ParamState>();

  /** Collects the groups; `defaults` fills the options a group does not give. */
  protected constructor(readonly name: string, params: ParamsInput<H>, defaults: H) {
    const list = [...(params as Iterable<unknown>)];
    const grouped = list.length > 0 && !isTensor(list[0]);
    const groups = grouped
      ? (list as { params: Iterable<Tensor>; options?: Partial<H> }[])
      : [{ params: list as Tensor[] }];
    this.paramGroups = groups.map((g: { params: Iterable<Tensor>; options?: Partial<H> }) => ({
      params: [...g.params],
      options: { ...defaults, ...(g.options ?? {}) } as H,
    }));
    const seen = new Set<Tensor>();
    for (const group of this.paramGroups) {
      for (const p of group.params) {
        if (!isTensor(p) || leafOf(p) === null) {
          throw new TypeError(`${name}: every parameter must be a tensor made by withRequiresGrad()`);
        }
        if (seen.has(p)) throw new TypeError(`${name}: a parameter appears twice`);
        seen.add(p);
      }
    }
  }

  /**
   * The state buffers a parameter needs under `options`, by kernel slot (null: the slot is unused),
   * allocated as zeros at the first step.
   */
  protected abstract buffers(options: H): (string | null)[];

  /** The update of one parameter at its `step`-th step (counting from 1). */
  protected abstract update(options: H, step: number): OptimizerStep;

  /** Applies one update to every parameter that has a gradient; parameters without one are skipped. */
  step(): void {
    const set = kernels();
    const settings = computeSettings();
    for (const group of this.paramGroups) {
      const names = this.buffers(group.options);
      for (const p of group.params) {
        const grad = gradOf(p);
        if (grad === null) continue;
        this.#check(p, grad);
        const state = this.#stateOf(p, names);
        state.step++;
        const buffers = names.map((n) => (n === null ? null : state.buffers.get(n)!));
        set.optimizerStep(
          this.update(group.options, state.step),
          sizeOf(p),
          operandOf(p, this.name),
          operandOf(grad, this.name),
          [0, 1, 2].map((j) => (buffers[j] ? operandOf(buffers[j], this.name) : null)),
          settings,
        );
        bumpStorageVersion(storageOf(p));
        for (const b of buffers) if (b !== null && b !== undefined) bumpStorageVersion(storageOf(b));
      }
    }
  }

  /** Clears the gradients of every parameter: released (`setToNone`, PyTorch's default) or filled with 0. */
  zeroGrad(options: { setToNone?: boolean } = {}): void {
    for (const group of this.paramGroups) {
      for (const p of group.params) {
        if (options.setToNone ?? true) p.grad = null;
        else gradOf(p)?.fill(0);
      }
    }
  }

  /**
   * The state as PyTorch's `state_dict()`: per parameter index, its step and buffers (the optimizer's own
   * tensors, not copies: read them, do not dispose them), and every group's hyperparameters.
   */
  stateDict(): OptimizerStateDict {
    const state = new Map<number, { step: number; buffers: Map<string, Tensor> }>();
    const paramGroups: (Hyperparameters & { params: number[] })[] = [];
    let index = 0;
    for (const group of this.paramGroups) {
      const params: number[] = [];
      for (const p of group.params) {
        const s = this.#state.get(p);
        if (s !== undefined) state.set(index, { step: s.step, buffers: new Map(s.buffers) });
        params.push(index++);
      }
      paramGroups.push({ ...group.options, params });
    }
    return { state, paramGroups };
  }

  /** Restores a state from `stateDict()` (copies the buffers); the groups must match in size. */
  loadStateDict(dict: OptimizerStateDict): void {
    const op = `${this.name}.loadStateDict`;
    if (dict.paramGroups.length !== this.paramGroups.length) {
      throw new TypeError(
        `${op}: the state has ${dict.paramGroups.length} parameter groups, the optimizer ${this.paramGroups.length}`,
      );
    }
    const params = this.paramGroups.flatMap((g) => g.params);
    dict.paramGroups.forEach((saved, i) => {
      const group = this.paramGroups[i];
      if (saved.params.length !== group.params.length) {
        throw new TypeError(
          `${op}: group ${i} holds ${saved.params.length} parameters in the state, ${group.params.length} here`,
        );
      }
      const { params: _, ...options } = saved;
      group.options = { ...group.options, ...options } as H;
    });
    for (const [index, saved] of dict.state) {
      const p = params[index];
      if (p === undefined) throw new RangeError(`${op}: the state names parameter ${index}, which is absent`);
      const state = this.#stateOf(p, [...saved.buffers.keys()]);
      state.step = saved.step;
      for (const [name, source] of saved.buffers) {
        const target = state.buffers.get(name)!;
        if (shapeOf(source).join() !== shapeOf(target).join()) {
          throw new TensorShapeError(
            op,
            `state "${index}.${name}" has shape ${formatShape(shapeOf(source))}, the parameter ${
              formatShape(shapeOf(target))
            }`,
            [shapeOf(target), shapeOf(source)],
          );
        }
        target.copyFrom(source);
      }
    }
  }

  /** Releases every state buffer. */
  dispose(): void {
    for (const s of this.#state.values()) for (const b of s.buffers.values()) b.dispose();
    this.#state.clear();
  }

  /** Enables `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  #stateOf(p: Tensor, names: readonly (string | null)[]): ParamState {
    let state = this.#state.get(p);
    if (state === undefined) {
      state = { step: 0, buffers: new Map() };
      this.#state.set(p, state);
    }
    for (const n of names) {
      if (n !== null && !state.buffers.has(n)) state.buffers.set(n, Tensor.zeros(shapeOf(p)));
    }
    return state;
  }

  #check(p: Tensor, grad: Tensor): void {
    if (dtypeOf(p) !== DType.F32 || dtypeOf(grad) !== DType.F32) {
      throw new DTypeError(this.name, "parameters and gradients must be F32");
    }
    if (!isContiguousOf(p) || !isContiguousOf(grad) || shapeOf(grad).join() !== shapeOf(p).join()) {
      throw new TensorShapeError(
        this.name,
        `a parameter ${formatShape(shapeOf(p))} and its gradient ${
          formatShape(shapeOf(grad))
        } must be contiguous and of one shape`,
        [shapeOf(p), shapeOf(grad)],
      );
    }
  }
}

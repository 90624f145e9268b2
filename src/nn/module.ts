/**
 * The `Module` base: parameters, buffers and child modules registered by name, the training flag, the state
 * dictionary under PyTorch's dotted names, gradient clearing and disposal. A module owns its parameters and
 * buffers: `parameters()` and `stateDict()` hand out the module's own tensors, which the caller reads but does
 * not dispose; `dispose()` (or `using`) releases them all.
 *
 * @module
 */
import { GradMode } from "../context.ts";
import { DTypeError, TensorShapeError } from "../core/errors.ts";
import { dtypeInfo } from "../core/dtype.ts";
import { formatShape } from "../core/shape.ts";
import type { Tensor } from "../tensor.ts";
import { dtypeOf, gradOf, requiresGradOf, shapeOf } from "../tensor.ts";

/**
 * `loadStateDict` in strict mode found keys missing from the dictionary or keys the module does not have.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn } from "@zigtensor/zigtensor";
 * const error = new nn.StateDictError(["weight"], ["extra"]);
 * assert.ok(error.message.includes('"weight"') && error.unexpectedKeys[0] === "extra");
 * ```
 */
export class StateDictError extends Error {
  constructor(readonly missingKeys: readonly string[], readonly unexpectedKeys: readonly string[]) {
    const parts = [
      missingKeys.length > 0 ? `missing keys ${missingKeys.map((k) => `"${k}"`).join(", ")}` : "",
      unexpectedKeys.length > 0 ? `unexpected keys ${unexpectedKeys.map((k) => `"${k}"`).join(", ")}` : "",
    ].filter((p) => p !== "");
    super(`loadStateDict: ${parts.join("; ")}`);
    this.name = "StateDictError";
  }
}

/** What `loadStateDict` found: keys the dictionary lacked and keys the module does not have. */
export interface LoadResult {
  readonly missingKeys: string[];
  readonly unexpectedKeys: string[];
}

/** A state dictionary: a `Map` (as `io.loadSafetensors` gives) or a plain object of tensors by name. */
export type StateDict = ReadonlyMap<string, Tensor> | Readonly<Record<string, Tensor>>;

/**
 * The base of every layer and model. A subclass registers its parameters, buffers and child modules in its
 * constructor (PyTorch's names) and implements `forward`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nn, Tensor } from "@zigtensor/zigtensor";
 * class TwoLayer extends nn.Module {
 *   readonly fc1 = this.module("fc1", new nn.Linear(4, 8));
 *   readonly fc2 = this.module("fc2", new nn.Linear(8, 2));
 *   forward(x: Tensor): Tensor {
 *     return this.fc2.forward(this.fc1.forward(x).relu());
 *   }
 * }
 * using model = new TwoLayer();
 * assert.deepEqual([...model.stateDict().keys()], ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
 * assert.equal(model.parameters().length, 4);
 * ```
 */
export abstract class Module<In extends unknown[] = [Tensor], Out = Tensor> implements Disposable {
  /** Training mode (the default) or evaluation mode; see `train()` and `eval()`. */
  training = true;
  readonly #parameters = new Map<string, Tensor>();
  readonly #buffers = new Map<string, Tensor>();
  // deno-lint-ignore no-explicit-any
  readonly #modules = new Map<string, Module<any, any>>();
  #disposed = false;

  /** Computes the module's output. */
  abstract forward(...inputs: In): Out;

  /** Registers `tensor` as parameter `name` and returns it as a gradient leaf (the module owns it). */
  protected parameter(name: string, tensor: Tensor): Tensor {
    const p = requiresGradOf(tensor) ? tensor : tensor.withRequiresGrad();
    this.#parameters.set(name, p);
    return p;
  }

  /** Registers `tensor` as buffer `name` (state that is not trained, e.g. running statistics). */
  protected buffer(name: string, tensor: Tensor): Tensor {
    this.#buffers.set(name, tensor);
    return tensor;
  }

  /** Registers `child` as sub-module `name` and returns it. */
  // deno-lint-ignore no-explicit-any
  protected module<M extends Module<any, any>>(name: string, child: M): M {
    this.#modules.set(name, child);
    return child;
  }

  /** The direct sub-modules by name, in registration order. */
  // deno-lint-ignore no-explicit-any
  namedChildren(): [string, Module<any, any>][] {
    return [...this.#modules];
  }

  /** The direct sub-modules. */
  // deno-lint-ignore no-explicit-any
  children(): Module<any, any>[] {
    return [...this.#modules.values()];
  }

  /** This module and every sub-module, under dotted names ("" for this one). */
  // deno-lint-ignore no-explicit-any
  namedModules(prefix = ""): [string, Module<any, any>][] {
    // deno-lint-ignore no-explicit-any
    const out: [string, Module<any, any>][] = [[prefix, this]];
    for (const [name, child] of this.#modules) out.push(...child.namedModules(join(prefix, name)));
    return out;
  }

  /** Every parameter under its dotted name (PyTorch's `named_parameters()`), each once. */
  namedParameters(prefix = ""): [string, Tensor][] {
    return this.#collect(prefix, (m) => m.#parameters);
  }

  /** Every parameter, each once: the module's own tensors (do not dispose them). */
  parameters(): Tensor[] {
    return this.namedParameters().map(([, p]) => p);
  }

  /** Every buffer under its dotted name. */
  namedBuffers(prefix = ""): [string, Tensor][] {
    return this.#collect(prefix, (m) => m.#buffers);
  }

  /** Sets training mode (`mode = true`) or evaluation mode on this module and every sub-module. */
  train(mode = true): this {
    for (const [, m] of this.namedModules()) m.training = mode;
    return this;
  }

  /** Evaluation mode: dropout off, batch norm uses its running statistics. */
  eval(): this {
    return this.train(false);
  }

  /**
   * Parameters and buffers under PyTorch's dotted names, in PyTorch's order (a module's own parameters, its
   * buffers, then each child's). The values are the module's own tensors: read or save them, do not dispose.
   */
  stateDict(): Map<string, Tensor> {
    const out = new Map<string, Tensor>();
    const visit = (prefix: string, m: Module<unknown[], unknown>) => {
      for (const [name, t] of m.#parameters) out.set(join(prefix, name), t);
      for (const [name, t] of m.#buffers) out.set(join(prefix, name), t);
      for (const [name, child] of m.#modules) visit(join(prefix, name), child);
    };
    visit("", this as unknown as Module<unknown[], unknown>);
    return out;
  }

  /**
   * Copies the tensors of `dict` into the parameters and buffers of the same names. Every shape and dtype is
   * checked before anything is written (`TensorShapeError` / `DTypeError` naming the key); in strict mode (the
   * default) a missing or unexpected key throws `StateDictError`, otherwise they are returned.
   */
  loadStateDict(dict: StateDict, options: { strict?: boolean } = {}): LoadResult {
    const op = "loadStateDict";
    const entries: ReadonlyMap<string, Tensor> = dict instanceof Map
      ? dict
      : new Map(Object.entries(dict as Record<string, Tensor>));
    const own = this.stateDict();
    const missingKeys = [...own.keys()].filter((k) => !entries.has(k));
    const unexpectedKeys = [...entries.keys()].filter((k) => !own.has(k));
    if ((options.strict ?? true) && (missingKeys.length > 0 || unexpectedKeys.length > 0)) {
      throw new StateDictError(missingKeys, unexpectedKeys);
    }
    const pairs: [Tensor, Tensor][] = [];
    for (const [key, target] of own) {
      const source = entries.get(key);
      if (source === undefined) continue;
      if (
        shapeOf(source).length !== shapeOf(target).length ||
        shapeOf(source).some((e, i) => e !== shapeOf(target)[i])
      ) {
        throw new TensorShapeError(
          op,
          `"${key}" has shape ${formatShape(shapeOf(source))} in the dictionary but ${
            formatShape(shapeOf(target))
          } in the module`,
          [shapeOf(target), shapeOf(source)],
        );
      }
      if (dtypeOf(source) !== dtypeOf(target)) {
        throw new DTypeError(
          op,
          `"${key}" is ${dtypeInfo(dtypeOf(source)).name} in the dictionary but ${
            dtypeInfo(dtypeOf(target)).name
          } in the module`,
        );
      }
      pairs.push([target, source]);
    }
    GradMode.noGrad(() => {
      for (const [target, source] of pairs) target.copyFrom(source);
    });
    return { missingKeys, unexpectedKeys };
  }

  /** Clears every parameter's gradient: released (`setToNone`, PyTorch's default) or filled with 0. */
  zeroGrad(options: { setToNone?: boolean } = {}): void {
    for (const p of this.parameters()) {
      if (options.setToNone ?? true) p.grad = null;
      else gradOf(p)?.fill(0);
    }
  }

  /** Releases every parameter (and its gradient) and buffer of this module and its sub-modules; idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const p of this.#parameters.values()) {
      p.grad = null;
      p.dispose();
    }
    for (const b of this.#buffers.values()) b.dispose();
    for (const child of this.#modules.values()) child.dispose();
  }

  /** Enables `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  #collect(prefix: string, pick: (m: Module<unknown[], unknown>) => Map<string, Tensor>): [string, Tensor][] {
    const out: [string, Tensor][] = [];
    const seen = new Set<Tensor>();
    for (const [path, m] of this.namedModules(prefix)) {
      for (const [name, t] of pick(m as Module<unknown[], unknown>)) {
        if (seen.has(t)) continue;
        seen.add(t);
        out.push([join(path, name), t]);
      }
    }
    return out;
  }
}

function join(prefix: string, name: string): string {
  return prefix === "" ? name : `${prefix}.${name}`;
}

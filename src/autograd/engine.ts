/**
 * The backward engine: walks the records reachable from a tensor in topological order, sums each gradient to
 * its input's shape, accumulates into the leaves' `grad`, and releases the records it consumed. Every
 * intermediate gradient lives in a scope of the engine's own, so a backward pass leaves nothing behind but the
 * leaves' gradients.
 *
 * @module
 */
import { DType, dtypeInfo } from "../core/dtype.ts";
import { type ComputeSnapshot, computeSnapshot, kernelsOf, runBackwardRule } from "../context.ts";
import { addInto, binaryKernel } from "../ops/common.ts";
import { formatShape } from "../core/shape.ts";
import { TensorShapeError } from "../core/errors.ts";
import { BinaryOp } from "../kernels/types.ts";
import { ActivationScope } from "../memory/scope.ts";
import { ownership, type Storage, storageBytes } from "../memory/storage.ts";
import {
  allocate,
  dtypeOf,
  isContiguousOf,
  isReleasedOf,
  offsetOf,
  rankOf,
  shapeOf,
  sizeOf,
  storageOf,
  type Tensor,
} from "../tensor.ts";
import { type AutogradNode, BackwardRecord, LeafNode, nodeOf, setLeafGrad } from "./record.ts";
import { runRule } from "./rules.ts";

/** Records reachable from `root`, each after every record that consumes its output. */
function topologicalOrder(root: BackwardRecord): BackwardRecord[] {
  const order: BackwardRecord[] = [];
  const visited = new Set<BackwardRecord>();
  const stack: [BackwardRecord, number][] = [[root, 0]];
  visited.add(root);
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    const [record, next] = top;
    if (next < record.inputs.length) {
      top[1]++;
      const node = record.inputs[next].node;
      if (node instanceof BackwardRecord && !visited.has(node)) {
        visited.add(node);
        stack.push([node, 0]);
      }
      continue;
    }
    stack.pop();
    order.push(record);
  }
  return order.reverse();
}

/** A gradient on its way to a leaf, with the compute settings of the record that made it. */
interface LeafGradient {
  readonly settings: ComputeSnapshot;
  readonly g: Tensor;
}

/**
 * The storages of the gradients a backward pass holds, each with how many of its pending gradients (the
 * records' and the leaves') refer to it. A storage the pass made (its scope tracks it) is released as soon as
 * no pending gradient refers to it, so that later rules reuse its memory while it is still in cache.
 */
class Holds {
  readonly scope: ActivationScope;
  readonly #counts = new Map<Storage, number>();

  constructor(scope: ActivationScope) {
    this.scope = scope;
  }

  /** Whether the pass made `storage` (and so may release it or hand it to a leaf). */
  made(storage: Storage): boolean {
    return ownership.ownerOf(storage)?.owner === this.scope;
  }

  /** How many pending gradients refer to `storage`. */
  count(storage: Storage): number {
    return this.#counts.get(storage) ?? 0;
  }

  hold(t: Tensor): Tensor {
    const storage = storageOf(t);
    this.#counts.set(storage, this.count(storage) + 1);
    return t;
  }

  drop(t: Tensor): void {
    const storage = storageOf(t);
    const left = this.count(storage) - 1;
    if (left > 0) {
      this.#counts.set(storage, left);
      return;
    }
    this.#counts.delete(storage);
    if (this.made(storage)) storage.release();
  }
}

/**
 * Runs a pass's work under the compute settings of the record it belongs to, with recording off, entering a
 * context of its own only where those settings differ from the ones in force: entering one costs microseconds
 * (Deno's AsyncLocalStorage), and the records of a pass usually share their settings, so a pass enters one.
 */
class RuleContext {
  #current: ComputeSnapshot | null = null;

  run<T>(settings: ComputeSnapshot, fn: () => T): T {
    const current = this.#current;
    if (
      current !== null && current.mode === settings.mode && current.threads === settings.threads &&
      kernelsOf(current) === kernelsOf(settings)
    ) {
      return fn();
    }
    this.#current = settings;
    try {
      return runBackwardRule(settings, fn);
    } finally {
      this.#current = current;
    }
  }
}

/**
 * The gradients of a record's inputs by its rule, run in a scope of its own: what the rule made and does not
 * return is released as it returns, and what it returns moves to the pass's scope.
 */
function gradientsOf(context: RuleContext, record: BackwardRecord, g: Tensor): (Tensor | null)[] {
  return context.run(record.settings, () => {
    const scope = new ActivationScope();
    try {
      const inputs = runRule(record, g);
      for (const gi of inputs) {
        if (gi !== null && ownership.ownerOf(storageOf(gi))?.owner === scope) ActivationScope.keep(gi);
      }
      return inputs;
    } finally {
      scope.dispose();
    }
  });
}

/**
 * Whether the leaf may keep `g` itself rather than a copy: a contiguous tensor over the whole of a storage the
 * backward pass made (neither the caller's `grad` nor a saved tensor) that no other pending gradient shares.
 */
function isSoleOwner(g: Tensor, holds: Holds): boolean {
  const storage = storageOf(g);
  const info = dtypeInfo(dtypeOf(g));
  return holds.made(storage) && holds.count(storage) === 1 && offsetOf(g) === 0 && isContiguousOf(g) &&
    storageBytes(storage) === (sizeOf(g) / info.blockElements) * info.blockBytes;
}

/**
 * Adds each gradient into its leaf's `grad`, in the order they came: the first one into an empty leaf is
 * taken as it is when the pass is its sole owner (out of the pass's scope, so that the scope does not
 * release it), a copy no scope tracks otherwise; the rest are added in place. Runs after every rule, so that
 * no rule reads a gradient a leaf has taken.
 */
function accumulate(context: RuleContext, leaves: Map<LeafNode, LeafGradient[]>, holds: Holds): void {
  for (const [leaf, list] of leaves) {
    for (const { settings, g } of list) {
      context.run(settings, () => {
        if (leaf.grad !== null && !isReleasedOf(leaf.grad)) {
          addInto("backward", leaf.grad, g);
          holds.drop(g);
        } else if (isSoleOwner(g, holds)) {
          ownership.moveTo(storageOf(g), null);
          setLeafGrad(leaf, g);
        } else {
          setLeafGrad(leaf, g.clone());
          holds.drop(g);
        }
      });
    }
  }
}

/** `root.backward(grad)`: a scalar root needs no `grad`; otherwise `grad` has the root's shape. */
export function backward(root: Tensor, grad?: Tensor): void {
  const start = nodeOf(root);
  if (start === null) {
    throw new TypeError(
      "backward: this tensor does not require gradients (no input was made with withRequiresGrad(), or gradients were off)",
    );
  }
  if (
    grad !== undefined &&
    (rankOf(grad) !== rankOf(root) || shapeOf(grad).some((e, i) => e !== shapeOf(root)[i]))
  ) {
    throw new TensorShapeError(
      "backward",
      `the gradient has shape ${formatShape(shapeOf(grad))} but the tensor has ${formatShape(shapeOf(root))}`,
      [shapeOf(root), shapeOf(grad)],
    );
  }
  if (grad === undefined && sizeOf(root) !== 1) {
    throw new TensorShapeError(
      "backward",
      `backward() without a gradient needs a one-element tensor, got ${
        formatShape(shapeOf(root))
      }; pass backward(grad)`,
      [shapeOf(root)],
    );
  }
  if (start instanceof BackwardRecord && start.isReleased) {
    throw new Error(
      "backward: this graph was already consumed by a backward pass; run the forward pass again",
    );
  }
  using scope = new ActivationScope();
  const holds = new Holds(scope);
  const seed = grad ?? allocate("backward", shapeOf(root), DType.F32, false, { scoped: true });
  if (grad === undefined) seed.fill(1);
  holds.hold(seed);
  const leaves = new Map<LeafNode, LeafGradient[]>();
  const context = new RuleContext();
  if (start instanceof LeafNode) {
    leaves.set(start, [{ settings: computeSnapshot(), g: seed }]);
    accumulate(context, leaves, holds);
    return;
  }
  context.run(start.settings, () => propagate(context, start, seed, leaves, holds));
  accumulate(context, leaves, holds);
}

/**
 * Runs every rule from `start` down, in topological order: each record's gradient summed over its consumers,
 * and the gradients reaching leaves gathered in `leaves` (added in after every rule has run).
 */
function propagate(
  context: RuleContext,
  start: BackwardRecord,
  seed: Tensor,
  leaves: Map<LeafNode, LeafGradient[]>,
  holds: Holds,
): void {
  const grads = new Map<AutogradNode, Tensor>([[start, seed]]);
  for (const record of topologicalOrder(start)) {
    const g = grads.get(record);
    grads.delete(record);
    if (g === undefined) continue;
    const inputs = gradientsOf(context, record, g);
    record.release();
    inputs.forEach((gi, i) => {
      const node = record.inputs[i].node;
      if (gi === null || node === null) return;
      holds.hold(gi);
      if (node instanceof LeafNode) {
        const list = leaves.get(node);
        const entry = { settings: record.settings, g: gi };
        if (list === undefined) leaves.set(node, [entry]);
        else list.push(entry);
        return;
      }
      const previous = grads.get(node);
      if (previous === undefined) {
        grads.set(node, gi);
        return;
      }
      if (isSoleOwner(previous, holds)) {
        // No other pending gradient refers to the sum so far: gi is added into it in place (previous + gi, the
        // bits of a new sum), with no new tensor.
        context.run(record.settings, () => addInto("backward", previous, gi));
        holds.drop(gi);
        return;
      }
      grads.set(
        node,
        holds.hold(
          context.run(record.settings, () => binaryKernel("backward", BinaryOp.Add, previous, gi)),
        ),
      );
      holds.drop(previous);
      holds.drop(gi);
    });
    holds.drop(g);
  }
}

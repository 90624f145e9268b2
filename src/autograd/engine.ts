/**
 * The backward engine: walks the records reachable from a tensor in topological order, sums each gradient to
 * its input's shape, accumulates into the leaves' `grad`, and releases the records it consumed. Every
 * intermediate gradient lives in a scope of the engine's own, so a backward pass leaves nothing behind but the
 * leaves' gradients.
 *
 * @module
 */
import { DType, dtypeInfo } from "../core/dtype.ts";
import { type ComputeSnapshot, computeSnapshot, runBackwardRule } from "../context.ts";
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
 * Whether the leaf may keep `g` itself rather than a copy: a contiguous tensor over the whole of a storage the
 * backward pass made (so its scope tracks it: neither the caller's `grad` nor a saved tensor), and that no
 * other leaf gradient of this pass shares (`uses` counts the storages of them all).
 */
function isSoleOwner(g: Tensor, scope: ActivationScope, uses: Map<Storage, number>): boolean {
  const storage = storageOf(g);
  const info = dtypeInfo(dtypeOf(g));
  return ownership.ownerOf(storage)?.owner === scope && uses.get(storage) === 1 && offsetOf(g) === 0 &&
    isContiguousOf(g) && storageBytes(storage) === (sizeOf(g) / info.blockElements) * info.blockBytes;
}

/**
 * Adds each gradient into its leaf's `grad`, in the order they came: the first one into an empty leaf is
 * taken as it is when the pass is its sole owner (out of the pass's scope, so that the scope does not
 * release it), a copy no scope tracks otherwise; the rest are added in place. Runs after every rule, so that
 * no rule reads a gradient a leaf has taken.
 */
function accumulate(leaves: Map<LeafNode, LeafGradient[]>, scope: ActivationScope): void {
  const uses = new Map<Storage, number>();
  for (const list of leaves.values()) {
    for (const { g } of list) uses.set(storageOf(g), (uses.get(storageOf(g)) ?? 0) + 1);
  }
  for (const [leaf, list] of leaves) {
    for (const { settings, g } of list) {
      runBackwardRule(settings, () => {
        if (leaf.grad !== null && !isReleasedOf(leaf.grad)) {
          addInto("backward", leaf.grad, g);
        } else if (isSoleOwner(g, scope, uses)) {
          ownership.moveTo(storageOf(g), null);
          setLeafGrad(leaf, g);
        } else {
          setLeafGrad(leaf, g.clone());
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
  const seed = grad ?? allocate("backward", shapeOf(root), DType.F32, false, { scoped: true });
  if (grad === undefined) seed.fill(1);
  const leaves = new Map<LeafNode, LeafGradient[]>();
  if (start instanceof LeafNode) {
    leaves.set(start, [{ settings: computeSnapshot(), g: seed }]);
    accumulate(leaves, scope);
    return;
  }
  const grads = new Map<AutogradNode, Tensor>([[start, seed]]);
  for (const record of topologicalOrder(start)) {
    const g = grads.get(record);
    grads.delete(record);
    if (g === undefined) continue;
    const inputs = runBackwardRule(record.settings, () => runRule(record, g));
    record.release();
    inputs.forEach((gi, i) => {
      const node = record.inputs[i].node;
      if (gi === null || node === null) return;
      if (node instanceof LeafNode) {
        const list = leaves.get(node);
        const entry = { settings: record.settings, g: gi };
        if (list === undefined) leaves.set(node, [entry]);
        else list.push(entry);
        return;
      }
      const previous = grads.get(node);
      grads.set(
        node,
        previous === undefined
          ? gi
          : runBackwardRule(record.settings, () => binaryKernel("backward", BinaryOp.Add, previous, gi)),
      );
    });
  }
  accumulate(leaves, scope);
}

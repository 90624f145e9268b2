/**
 * The backward engine: walks the records reachable from a tensor in topological order, sums each gradient to
 * its input's shape, accumulates into the leaves' `grad`, and releases the records it consumed. Every
 * intermediate gradient lives in a scope of the engine's own, so a backward pass leaves nothing behind but the
 * leaves' gradients.
 *
 * @module
 */
import { DType } from "../core/dtype.ts";
import { runBackwardRule } from "../context.ts";
import { addInto, binaryKernel } from "../ops/common.ts";
import { formatShape } from "../core/shape.ts";
import { TensorShapeError } from "../core/errors.ts";
import { BinaryOp } from "../kernels/types.ts";
import { ActivationScope } from "../memory/scope.ts";
import { allocate, isReleasedOf, rankOf, shapeOf, sizeOf, type Tensor } from "../tensor.ts";
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

/** Adds `g` into the leaf's gradient: a copy no scope tracks the first time, in place afterwards. */
function accumulate(leaf: LeafNode, g: Tensor): void {
  if (leaf.grad === null || isReleasedOf(leaf.grad)) {
    setLeafGrad(leaf, g.clone());
    return;
  }
  addInto("backward", leaf.grad, g);
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
  using _scope = new ActivationScope();
  const seed = grad ?? allocate("backward", shapeOf(root), DType.F32, false, { scoped: true });
  if (grad === undefined) seed.fill(1);
  if (start instanceof LeafNode) {
    accumulate(start, seed);
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
        runBackwardRule(record.settings, () => accumulate(node, gi));
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
}

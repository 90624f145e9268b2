// Worker of safety_worker_child.ts: rents two 1 MiB tensors, disposes them or not, and reports.
import { Tensor } from "../../mod.ts";

const scope = globalThis as unknown as {
  onmessage: (event: MessageEvent<{ dispose: boolean }>) => void;
  postMessage(data: unknown): void;
};
const kept: Tensor[] = [];
scope.onmessage = (event) => {
  const a = Tensor.full([1 << 18], 1);
  const b = Tensor.full([1 << 18], 2);
  if (event.data.dispose) {
    a.dispose();
    b.dispose();
  } else {
    kept.push(a, b);
  }
  scope.postMessage({ sum: a.isReleased ? 0 : (a.get(0) as number) + (b.get(0) as number) });
};

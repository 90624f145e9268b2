/**
 * TensorFlow.js as a peer: an f32 GEMM n³ on tfjs-node, or on the WebAssembly backend where tfjs-node could
 * not be installed.
 *
 * @module
 */
import { bestOf, PEERS, requirePeer } from "./common.ts";

// TensorFlow.js's API, as far as this module uses it.
interface TfTensor {
  dataSync(): Float32Array;
  dispose(): void;
}
interface Tf {
  setBackend(name: string): Promise<boolean>;
  ready(): Promise<void>;
  getBackend(): string;
  randomUniform(shape: number[]): TfTensor;
  matMul(a: TfTensor, b: TfTensor): TfTensor;
}

/** TensorFlow.js's GEMM rate (flop/s) and backend, with notes, or why it was skipped. */
export async function measureTfGemm(
  n: number,
  notes: string[],
): Promise<{ rate: number; backend: string } | null> {
  const node = requirePeer<Tf>("tfjs-node", "@tensorflow/tfjs-node");
  const tf = node ?? requirePeer<Tf>("node", "@tensorflow/tfjs");
  if (tf === null) {
    notes.push("TensorFlow.js skipped: @tensorflow/tfjs is not installed (`bash bench/peers.sh`)");
    return null;
  }
  if (node === null) {
    const wasm = requirePeer<{ setWasmPaths(path: string): void }>("node", "@tensorflow/tfjs-backend-wasm");
    wasm?.setWasmPaths(`${PEERS}node/node_modules/@tensorflow/tfjs-backend-wasm/dist/`);
    if (wasm === null || !(await tf.setBackend("wasm").catch(() => false))) {
      notes.push("TensorFlow.js skipped: neither tfjs-node nor the wasm backend loads");
      return null;
    }
    notes.push(
      "TensorFlow.js runs its WebAssembly backend: @tensorflow/tfjs-node could not be installed here",
    );
  }
  await tf.ready();
  const [a, b] = [tf.randomUniform([n, n]), tf.randomUniform([n, n])];
  const seconds = await bestOf(5, () => {
    const c = tf.matMul(a, b);
    c.dataSync();
    c.dispose();
  });
  return { rate: (2 * n ** 3) / seconds, backend: tf.getBackend() };
}

/**
 * ONNX Runtime for Node as a peer: an f32 GEMM n³ as a one-node ONNX model, built here.
 *
 * @module
 */
import { bestOf, requirePeer } from "./common.ts";

/** Protobuf: a field's key and a varint or length-delimited value. */
function protoField(field: number, value: number | string | number[]): number[] {
  const varint = (n: number): number[] => {
    const out: number[] = [];
    for (; n >= 0x80; n = Math.floor(n / 128)) out.push((n & 0x7f) | 0x80);
    out.push(n);
    return out;
  };
  if (typeof value === "number") return [...varint(field << 3), ...varint(value)];
  const bytes = typeof value === "string" ? [...new TextEncoder().encode(value)] : value;
  return [...varint((field << 3) | 2), ...varint(bytes.length), ...bytes];
}

/** An ONNX model (IR 8, opset 13) of one MatMul: Y = A·B with A, B, Y float [n, n]. */
function onnxMatMulModel(n: number): Uint8Array {
  const tensorType = (dims: number[]) =>
    protoField(1, [
      ...protoField(1, 1),
      ...protoField(2, dims.flatMap((d) => protoField(1, protoField(1, d)))),
    ]);
  const valueInfo = (name: string) => [...protoField(1, name), ...protoField(2, tensorType([n, n]))];
  const node = [
    ...protoField(1, "A"),
    ...protoField(1, "B"),
    ...protoField(2, "Y"),
    ...protoField(4, "MatMul"),
  ];
  const graph = [
    ...protoField(1, node),
    ...protoField(2, "matmul"),
    ...protoField(11, valueInfo("A")),
    ...protoField(11, valueInfo("B")),
    ...protoField(12, valueInfo("Y")),
  ];
  const opset = [...protoField(1, ""), ...protoField(2, 13)];
  return new Uint8Array([...protoField(1, 8), ...protoField(8, opset), ...protoField(7, graph)]);
}

// ONNX Runtime's JavaScript API, as far as this module uses it.
interface OrtTensor {
  readonly data: Float32Array;
}
interface Ort {
  Tensor: new (type: "float32", data: Float32Array, dims: number[]) => OrtTensor;
  InferenceSession: {
    create(model: Uint8Array, options: Record<string, unknown>): Promise<{
      run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>;
    }>;
  };
}

/**
 * The GEMM rate (flop/s) of ONNX Runtime on each thread count for the n×n f32 matrices `a` and `b`, or why it
 * was skipped.
 */
export async function measureOrtGemm(
  n: number,
  a32: Float32Array,
  b32: Float32Array,
  threadCounts: readonly number[],
): Promise<Map<number, number> | { skipped: string }> {
  const ort = requirePeer<Ort>("node", "onnxruntime-node");
  if (ort === null) {
    return { skipped: "ONNX Runtime skipped: onnxruntime-node is not installed (`bash bench/peers.sh`)" };
  }
  const a = new ort.Tensor("float32", a32.slice(), [n, n]);
  const b = new ort.Tensor("float32", b32.slice(), [n, n]);
  const rates = new Map<number, number>();
  for (const threads of threadCounts) {
    const session = await ort.InferenceSession.create(onnxMatMulModel(n), {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      executionMode: "sequential",
    });
    const seconds = await bestOf(15, () => session.run({ A: a, B: b }));
    rates.set(threads, (2 * n ** 3) / seconds);
  }
  return rates;
}

/**
 * zigtensor: tensors with autograd for Deno and Bun. The memory and the kernels live in a Zig shared library
 * (`libzigtensor`): strided zero-copy views, the ONNX element types, a pooled 64-byte aligned allocator with
 * arenas, use-after-free that throws, and SIMD kernels (AVX2, AVX-512, NEON) picked at startup.
 *
 * @example
 * ```ts
 * import { kernelInfo } from "@zigtensor/zigtensor";
 * console.assert(["baseline", "avx2", "avx512", "neon"].includes(kernelInfo().isa));
 * ```
 *
 * @module
 */
export {
  DTypeError,
  NativeLibraryError,
  StaleTensorError,
  TensorShapeError,
  TensorVersionError,
} from "./src/errors.ts";
export { type KernelInfo, kernelInfo } from "./src/kernel_info.ts";
export type { IsaName } from "./src/native/library.ts";

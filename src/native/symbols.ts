/**
 * The one neutral symbol table of libzigtensor. Each runtime binding maps these types to its own dialect
 * once (`ptr` is a Deno `pointer` and a Bun `ptr`); the hot path uses only pointers, 32-bit integers and
 * floats, so no call needs a BigInt.
 *
 * @module
 */

/** Parameter and result types of the neutral table. */
export type NativeType = "ptr" | "i32" | "u32" | "f32" | "f64" | "void";

/** A native address, opaque to TypeScript: a Deno pointer object or a Bun number. */
export type NativePointer = { readonly __nativePointer: unique symbol };

interface SymbolSpec {
  readonly parameters: readonly NativeType[];
  readonly result: NativeType;
}

/** Every export the binding uses, with its C signature. */
export const symbols = {
  zt_abi_version: { parameters: [], result: "u32" },
  zt_abi_layout: { parameters: ["ptr", "u32"], result: "u32" },
  zt_checked: { parameters: [], result: "u32" },
  zt_init: { parameters: ["i32"], result: "i32" },
  zt_isa_selected: { parameters: [], result: "i32" },
  zt_isa_compiled: { parameters: [], result: "u32" },
  zt_isa_supported: { parameters: [], result: "u32" },
  // buffer pool and arenas
  zt_pool_rent: { parameters: ["u32", "u32"], result: "ptr" },
  zt_pool_release: { parameters: ["ptr", "u32"], result: "u32" },
  zt_pool_stats: { parameters: ["ptr"], result: "void" },
  zt_pool_set_max_idle_bytes: { parameters: ["f64"], result: "void" },
  zt_pool_trim: { parameters: [], result: "void" },
  zt_pool_size_class: { parameters: ["u32"], result: "u32" },
  zt_arena_create: { parameters: ["u32"], result: "ptr" },
  zt_arena_destroy: { parameters: ["ptr"], result: "u32" },
  zt_arena_alloc: { parameters: ["ptr", "u32", "u32"], result: "ptr" },
  zt_arena_reset: { parameters: ["ptr"], result: "u32" },
  zt_arena_retire: { parameters: ["ptr", "u32"], result: "u32" },
  zt_arena_stats: { parameters: ["ptr", "ptr"], result: "void" },
  // buffer pool and arenas, tests and benchmarks only
  zt_test_write_past_end: { parameters: ["ptr", "u32", "u32"], result: "void" },
  zt_test_os_alloc: { parameters: ["u32"], result: "ptr" },
  zt_test_os_free: { parameters: ["ptr", "u32"], result: "void" },
  zt_thread_jobs: { parameters: [], result: "u32" },
  // data movement: strided copy, casts, f16/bf16, layouts, quantized blocks
  zt_copy: { parameters: ["ptr", "ptr", "ptr"], result: "void" },
  zt_cast: { parameters: ["ptr", "ptr", "ptr"], result: "void" },
  zt_to_blocked: { parameters: ["ptr", "ptr", "ptr"], result: "void" },
  zt_from_blocked: { parameters: ["ptr", "ptr", "ptr"], result: "void" },
  zt_quantize: { parameters: ["ptr", "ptr", "ptr"], result: "void" },
  zt_dequantize: { parameters: ["ptr", "ptr", "ptr"], result: "void" },
  // kernels: element-wise, reductions, softmax, GEMM, pooling
  zt_binary_f32: { parameters: ["ptr", "ptr", "ptr", "ptr"], result: "void" },
  zt_unary_f32: { parameters: ["ptr", "ptr", "ptr"], result: "void" },
  zt_reduce_f32: { parameters: ["ptr", "ptr", "ptr"], result: "void" },
  zt_binary_int: { parameters: ["ptr", "ptr", "ptr", "ptr"], result: "void" },
  zt_reduce_int: { parameters: ["ptr", "ptr", "ptr"], result: "void" },
  zt_softmax_f32: { parameters: ["ptr", "ptr", "ptr"], result: "void" },
  zt_maxpool2d_f32: { parameters: ["ptr", "ptr", "ptr", "ptr"], result: "void" },
  zt_index_add_f32: { parameters: ["ptr", "ptr", "ptr", "ptr"], result: "void" },
  // GEMM
  zt_matmul_f32: { parameters: ["ptr", "ptr", "ptr", "ptr"], result: "i32" },
  zt_matmul_packed_panel: { parameters: ["i32"], result: "i32" },
  zt_matmul_pack_b_f32: { parameters: ["ptr", "ptr", "ptr"], result: "void" },
  zt_matmul_packed_f32: { parameters: ["ptr", "ptr", "ptr", "ptr"], result: "i32" },
  zt_conv_fold_f32: { parameters: ["ptr", "ptr", "ptr"], result: "void" },
  zt_conv_product_f32: { parameters: ["ptr", "ptr", "ptr", "ptr"], result: "i32" },
  zt_optim_step_f32: { parameters: ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr"], result: "void" },
  zt_index_f32: { parameters: ["ptr", "ptr", "ptr", "ptr"], result: "i32" },
  zt_nll_f32: { parameters: ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr"], result: "i32" },
  zt_select: { parameters: ["ptr", "ptr", "ptr", "ptr", "ptr"], result: "void" },
  zt_ctc_f32: { parameters: ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr"], result: "void" },
  zt_rnn_cell_f32: {
    parameters: ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr"],
    result: "void",
  },
  zt_rnn_loop_f32: {
    parameters: ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr"],
    result: "i32",
  },
  zt_norm_f32: {
    parameters: ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr"],
    result: "void",
  },
  zt_attention_f32: {
    parameters: ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr"],
    result: "void",
  },
  zt_attention_backward_f32: {
    parameters: ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr"],
    result: "void",
  },
  zt_norm_backward_f32: {
    parameters: ["ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr"],
    result: "void",
  },
  // benchmarks only: the machine's limits, measured by the selected variant
  zt_bench_fma_f32: { parameters: ["u32"], result: "f64" },
  zt_bench_fma_f64: { parameters: ["u32"], result: "f64" },
  zt_bench_stream_add_f32: { parameters: ["ptr", "ptr", "ptr", "u32", "u32", "u32"], result: "void" },
} as const satisfies Record<string, SymbolSpec>;

type JsValue<T extends NativeType> = T extends "ptr" ? NativePointer | null
  : T extends "void" ? void
  : number;

type JsParameters<P extends readonly NativeType[]> = {
  [K in keyof P]: P[K] extends "ptr" ? NativePointer : number;
};

/** The bound functions, typed from the table. */
export type NativeSymbols = {
  [K in keyof typeof symbols]: (
    ...args: JsParameters<(typeof symbols)[K]["parameters"]>
  ) => JsValue<(typeof symbols)[K]["result"]>;
};

/** Status codes of `abi.Status` in `zig/abi.zig`. */
export const Status = {
  ok: 0,
  unsupportedIsa: -1,
  outOfMemory: -2,
  canaryOverrun: -3,
  invalidArgument: -4,
} as const;

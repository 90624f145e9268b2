//! Every export of libzigtensor, prefixed `zt_`, and nothing else: each is a thin wrapper over the module
//! that does the work. Status codes cross the boundary (see `abi.Status`), never panics or Zig errors: the
//! modules return error unions, and `status` below is the one place an error becomes a code (a function that
//! returns a pointer returns null for `error.OutOfMemory`).
//! The binding validates every argument first; the wrappers assume valid input.
const std = @import("std");
const options = @import("build_options");
const abi = @import("abi.zig");
const cpu = @import("cpu.zig");
const dispatch = @import("dispatch.zig");
const loader = @import("loader.zig");
const Arena = @import("memory/Arena.zig");
const BufferPool = @import("memory/BufferPool.zig");
const aligned = @import("memory/aligned.zig");
const ThreadPool = @import("ThreadPool.zig");
// data movement
const convert = @import("movement/convert.zig");
const copy = @import("movement/copy.zig");
const layout = @import("movement/layout.zig");
const quant = @import("movement/quant.zig");

// --- library and ABI ---

/// Every error a module returns to these wrappers.
const Error = error{ OutOfMemory, UnsupportedIsa };

/// The one mapping from Zig errors to the ABI's status codes.
fn status(err: Error) i32 {
    const code: abi.Status = switch (err) {
        error.OutOfMemory => .out_of_memory,
        error.UnsupportedIsa => .unsupported_isa,
    };
    return @intFromEnum(code);
}

export fn zt_abi_version() u32 {
    return abi.version;
}

/// Writes up to `capacity` entries of `abi.layout` to `out` and returns how many it has.
export fn zt_abi_layout(out: [*]i32, capacity: u32) u32 {
    const count = @min(capacity, abi.layout.len);
    @memcpy(out[0..count], abi.layout[0..count]);
    return abi.layout.len;
}

export fn zt_checked() u32 {
    return @intFromBool(options.checked);
}

// --- CPU detection and dispatch ---

export fn zt_init(requested_isa: i32) i32 {
    loader.pinInMemory();
    const isa = dispatch.init(requested_isa) catch |err| return status(err);
    return @intFromEnum(isa);
}

export fn zt_isa_selected() i32 {
    return dispatch.selectedId();
}

export fn zt_isa_compiled() u32 {
    return dispatch.compiledMask();
}

export fn zt_isa_supported() u32 {
    return cpu.supportedMask();
}

// --- buffer pool and arenas ---

export fn zt_pool_rent(bytes: u32, zero: u32) ?*anyopaque {
    return BufferPool.global.rent(bytes, zero != 0);
}

export fn zt_pool_release(ptr: *anyopaque, bytes: u32) u32 {
    return BufferPool.global.release(@ptrCast(@alignCast(ptr)), bytes);
}

export fn zt_pool_stats(out: *BufferPool.Stats) void {
    out.* = BufferPool.global.stats();
}

/// The cap travels as an f64 (exact to 2^53) because exports take no 64-bit integers.
export fn zt_pool_set_max_idle_bytes(bytes: f64) void {
    BufferPool.global.setMaxIdleBytes(@intFromFloat(bytes));
}

export fn zt_pool_trim() void {
    BufferPool.global.trim();
}

export fn zt_pool_size_class(bytes: u32) u32 {
    return @intCast(BufferPool.sizeClass(bytes));
}

export fn zt_arena_create(chunk_bytes: u32) ?*Arena {
    return Arena.create(std.heap.c_allocator, chunk_bytes) catch null;
}

export fn zt_arena_destroy(arena: *Arena) u32 {
    return Arena.destroy(arena);
}

export fn zt_arena_alloc(arena: *Arena, bytes: u32, zero: u32) ?*anyopaque {
    return arena.alloc(bytes, zero != 0) catch null;
}

export fn zt_arena_reset(arena: *Arena) u32 {
    return arena.reset();
}

export fn zt_arena_retire(ptr: *anyopaque, bytes: u32) u32 {
    return Arena.retire(@ptrCast(@alignCast(ptr)), bytes);
}

export fn zt_arena_stats(arena: *const Arena, out: *Arena.Stats) void {
    out.* = arena.stats();
}

// --- data movement: strided copy, casts, f16/bf16, layouts, quantized blocks ---

export fn zt_copy(args: *const abi.ArgBlock, dst: *anyopaque, src: *const anyopaque) void {
    copy.copy(&ThreadPool.runtime, args, @ptrCast(dst), @ptrCast(src));
}

export fn zt_cast(args: *const abi.ArgBlock, dst: *anyopaque, src: *const anyopaque) void {
    convert.cast(&ThreadPool.runtime, &dispatch.active().movement, args, @ptrCast(dst), @ptrCast(src));
}

export fn zt_to_blocked(args: *const abi.ArgBlock, dst: *anyopaque, src: *const anyopaque) void {
    layout.toBlocked(&ThreadPool.runtime, args, @ptrCast(dst), @ptrCast(src));
}

export fn zt_from_blocked(args: *const abi.ArgBlock, dst: *anyopaque, src: *const anyopaque) void {
    layout.fromBlocked(&ThreadPool.runtime, args, @ptrCast(dst), @ptrCast(src));
}

export fn zt_quantize(args: *const abi.ArgBlock, dst: *anyopaque, src: *const anyopaque) void {
    quant.quantize(&ThreadPool.runtime, args, @ptrCast(dst), @ptrCast(@alignCast(src)));
}

export fn zt_dequantize(args: *const abi.ArgBlock, dst: *anyopaque, src: *const anyopaque) void {
    quant.dequantize(&ThreadPool.runtime, args, @ptrCast(@alignCast(dst)), @ptrCast(src));
}

// --- kernels: element-wise, reductions, softmax, GEMM, pooling ---

// Element-wise, reductions, softmax and pooling (zig/kernels/elementwise.zig's family table; each file's
// comment documents its argument block). All take (args, out, inputs...) with operand 0 the output;
// args.mode is 0 for fast and 1 for exact, args.threads the most threads the kernel may use.

/// args.op: a `BinaryOp` (add sub mul div max min pow eq ne lt le gt ge, the logical ops, relu_backward
/// gelu_backward); operands 0, 1, 2 = out, a, b over args.shape. Comparisons and logical ops write Bool bytes, and
/// operand 0's offset and strides count those bytes.
export fn zt_binary_f32(args: *const abi.ArgBlock, out: *anyopaque, a: *const anyopaque, b: *const anyopaque) void {
    dispatch.active().elementwise.binary_f32(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(a), @ptrCast(b));
}

/// args.op: a `UnaryOp` (neg abs relu exp log sqrt tanh sigmoid gelu erf); operands 0, 1 = out, a.
export fn zt_unary_f32(args: *const abi.ArgBlock, out: *anyopaque, a: *const anyopaque) void {
    dispatch.active().elementwise.unary_f32(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(a));
}

/// args.op: a `ReduceOp` (sum mean max min argmax); ints[0]: how many trailing axes of args.shape are
/// reduced. Operand 0 (out) has strides for the kept axes only (i64 elements for argmax), operand 1 for all.
export fn zt_reduce_f32(args: *const abi.ArgBlock, out: *anyopaque, a: *const anyopaque) void {
    dispatch.active().elementwise.reduce_f32(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(a));
}

/// `zt_binary_f32` over integer or Bool elements (zig/kernels/integer.zig): args.ints[0] is their dtype's
/// code; args.op is add, sub or mul (integers, wrapping), a comparison or a logical op.
export fn zt_binary_int(args: *const abi.ArgBlock, out: *anyopaque, a: *const anyopaque, b: *const anyopaque) void {
    dispatch.active().integer.binary_int(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(a), @ptrCast(b));
}

/// `zt_reduce_f32` over integer or Bool elements: args.ints[1] is their dtype's code; args.op is sum (i64
/// output), max, min (the element type), argmax or argmin (i64).
export fn zt_reduce_int(args: *const abi.ArgBlock, out: *anyopaque, a: *const anyopaque) void {
    dispatch.active().integer.reduce_int(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(a));
}

/// args.op: 0 softmax, 1 log-softmax, over the last axis of args.shape (rank >= 1); operands 0, 1 = out, a.
export fn zt_softmax_f32(args: *const abi.ArgBlock, out: *anyopaque, a: *const anyopaque) void {
    dispatch.active().elementwise.softmax_f32(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(a));
}

/// args.shape: [N, C, OH, OW]; operands 0, 1, 2 = out (N, C, OH, OW strides), x (N, C, H, W strides),
/// indices (Int32, N, C, OH, OW strides). ints: kernelH, kernelW, strideH, strideW, padH, padW, H, W,
/// wantIndices (0: `indices` may be null and is not written). args.op 1: the input gradient, operands 0, 1, 2 =
/// grad input (N, C, H, W strides), output gradient and local indices (N, C, OH, OW strides); see pool.zig.
export fn zt_maxpool2d_f32(args: *const abi.ArgBlock, out: *anyopaque, x: *const anyopaque, indices: ?*anyopaque) void {
    dispatch.active().elementwise.maxpool2d_f32(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(x), @ptrCast(indices));
}

/// Grouped index add (zig/kernels/scatter.zig): args.shape [B, K, D, M]; operands 0, 1, 2 = out (B, M, D
/// strides), src (B, K, D strides), index (Int32, B, K strides); ints[0]: 1 when the indices are flat over B·M.
export fn zt_index_add_f32(args: *const abi.ArgBlock, out: *anyopaque, src: *const anyopaque, index: *const anyopaque) void {
    dispatch.active().elementwise.index_add_f32(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(src), @ptrCast(@constCast(index)));
}

// GEMM

/// Batched matmul (zig/kernels/gemm.zig): args.shape = out's [...batch, M, N] (rank >= 2), ints[0] = K;
/// operands 0, 1, 2 = out [...batch, M, N], a [...batch, M, K], b [...batch, K, N] strides (batch strides 0
/// where broadcast). Returns 0, or `Status.out_of_memory` before writing anything.
export fn zt_matmul_f32(args: *const abi.ArgBlock, out: *anyopaque, a: *const anyopaque, b: *const anyopaque) i32 {
    return dispatch.active().gemm.matmul_f32(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(a), @ptrCast(b));
}

/// The panel width NR of a B packed for `mode` (0 fast, 1 exact) by the active variant: a packed [K, N] B holds
/// roundUp(N, NR)·K values of 4 (fast) or 8 (exact) bytes (zig/kernels/gemm.zig `packedPanel`).
export fn zt_matmul_packed_panel(mode: i32) i32 {
    return dispatch.active().gemm.packed_panel(mode);
}

/// Packs b for many products (zig/kernels/gemm.zig `packBF32`): args.shape = [K, N], operand 0 = b's offset and
/// strides, args.mode the products' mode; `packed_b` holds zt_matmul_packed_panel's size, 64-byte aligned.
export fn zt_matmul_pack_b_f32(args: *const abi.ArgBlock, packed_b: *anyopaque, b: *const anyopaque) void {
    dispatch.active().gemm.pack_b_f32(args, @ptrCast(packed_b), @ptrCast(b));
}

/// out [M, N] = a [M, K] · a B packed by zt_matmul_pack_b_f32 in the same mode (zig/kernels/gemm.zig
/// `matmulPackedF32`): args.shape = [M, N], ints[0] = K, operands 0, 1 = out, a. Returns 0, or
/// `Status.out_of_memory` before writing anything.
export fn zt_matmul_packed_f32(args: *const abi.ArgBlock, out: *anyopaque, a: *const anyopaque, packed_b: *const anyopaque) i32 {
    return dispatch.active().gemm.matmul_packed_f32(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(a), @ptrCast(packed_b));
}

/// im2col (args.op 0) or col2im (1) of convolution (zig/kernels/conv.zig): args.shape = [N, C, KH, KW, OH, OW];
/// operands 0, 1 = out, a (the columns' six strides and the image's N, C, H, W strides, in that order for
/// im2col, swapped for col2im); ints: strideH, strideW, padH, padW, dilationH, dilationW, H, W.
export fn zt_conv_fold_f32(args: *const abi.ArgBlock, out: *anyopaque, a: *const anyopaque) void {
    dispatch.active().gemm.conv_fold_f32(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(a));
}

/// Convolution as an implicit GEMM (zig/kernels/conv.zig `productF32` documents the argument block): args.op 0
/// forward (out, weight, image), 1 per-image weight gradient (out, gradient, image). Returns 0, or
/// `Status.out_of_memory` before writing anything.
export fn zt_conv_product_f32(args: *const abi.ArgBlock, out: *anyopaque, a: *const anyopaque, image: *const anyopaque) i32 {
    return dispatch.active().gemm.conv_product_f32(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(a), @ptrCast(image));
}

// Optimizers

/// One optimizer update over a contiguous f32 parameter (zig/kernels/optim.zig documents the argument block);
/// state pointers the algorithm does not use may be null.
export fn zt_optim_step_f32(args: *const abi.ArgBlock, param: *anyopaque, grad: *const anyopaque, s0: ?*anyopaque, s1: ?*anyopaque, s2: ?*anyopaque) void {
    dispatch.active().optim.step_f32(&ThreadPool.runtime, args, @ptrCast(@alignCast(param)), @ptrCast(@alignCast(grad)), @ptrCast(@alignCast(s0)), @ptrCast(@alignCast(s1)), @ptrCast(@alignCast(s2)));
}

// Indexing (gather, scatter-add) and cumsum

/// One `IndexOp` (zig/kernels/index.zig documents the argument block): operands 0, 1, 2 = table, flat, index
/// (null for cumsum). Returns 1, writing nothing, when an index is outside [0, ints[1]); otherwise 0.
export fn zt_index_f32(args: *const abi.ArgBlock, tbl: *anyopaque, flat: *anyopaque, index: ?*const anyopaque) i32 {
    return dispatch.active().index.index_f32(&ThreadPool.runtime, args, @ptrCast(tbl), @ptrCast(flat), @ptrCast(index));
}

// Selection

/// out = cond ? a : b (zig/kernels/select.zig): operands 0, 1, 2, 3 = out, cond (Bool bytes), a, b over
/// args.shape; ints[0]: the element size of out, a and b (1, 2, 4 or 8 bytes).
export fn zt_select(args: *const abi.ArgBlock, out: *anyopaque, cond: *const anyopaque, a: *const anyopaque, b: *const anyopaque) void {
    dispatch.active().select.select(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(cond), @ptrCast(a), @ptrCast(b));
}

// Sequence losses

/// The CTC loss of a batch, and its gradient when wanted (zig/kernels/ctc.zig documents the argument block);
/// `grad` may be null when ints[6] (wantGrad) is 0.
export fn zt_ctc_f32(args: *const abi.ArgBlock, log_probs: *const anyopaque, meta: *const anyopaque, out: *anyopaque, grad: ?*anyopaque, work: *anyopaque) void {
    dispatch.active().ctc.ctc_f32(&ThreadPool.runtime, args, @ptrCast(@alignCast(log_probs)), @ptrCast(@alignCast(meta)), @ptrCast(@alignCast(out)), @ptrCast(@alignCast(grad)), @ptrCast(@alignCast(work)));
}

// The class losses: nllLoss and crossEntropy

/// One `NllOp`, forward or backward (zig/kernels/nll.zig documents the argument block): x, target, weight
/// (null for none), out (the loss, or a gradient), the f64 work, g (backward only). Returns 1, writing
/// nothing, when an index target is neither ignoreIndex nor a class; otherwise 0.
export fn zt_nll_f32(args: *const abi.ArgBlock, x: *const anyopaque, target: *const anyopaque, weight: ?*const anyopaque, out: *anyopaque, work: *anyopaque, g: ?*const anyopaque) i32 {
    return dispatch.active().nll.nll_f32(&ThreadPool.runtime, args, @ptrCast(x), @ptrCast(target), @ptrCast(weight), @ptrCast(out), @ptrCast(work), @ptrCast(g));
}

// Recurrent cells

/// One step of an LSTM or GRU cell's point-wise part, forward or backward (zig/kernels/rnn.zig documents the
/// argument block and the eight operands; an unused one may be any valid address).
export fn zt_rnn_cell_f32(args: *const abi.ArgBlock, p0: *anyopaque, p1: *anyopaque, p2: *anyopaque, p3: *anyopaque, p4: *anyopaque, p5: *anyopaque, p6: *anyopaque, p7: *anyopaque) void {
    const operands: [8][*]f32 = .{ @ptrCast(@alignCast(p0)), @ptrCast(@alignCast(p1)), @ptrCast(@alignCast(p2)), @ptrCast(@alignCast(p3)), @ptrCast(@alignCast(p4)), @ptrCast(@alignCast(p5)), @ptrCast(@alignCast(p6)), @ptrCast(@alignCast(p7)) };
    dispatch.active().rnn.cell_f32(&ThreadPool.runtime, args, &operands);
}

/// The time loop of one LSTM or GRU layer, forward (op 0, 2) or backward (op 1, 3); zig/kernels/rnn.zig
/// `Forward` and `Backward` document the argument block and the nine pointers (an unused one may be any
/// valid address). Returns a status.
export fn zt_rnn_loop_f32(args: *const abi.ArgBlock, p0: *anyopaque, p1: *anyopaque, p2: *anyopaque, p3: *anyopaque, p4: *anyopaque, p5: *anyopaque, p6: *anyopaque, p7: *anyopaque, p8: *anyopaque) i32 {
    const operands: [9][*]f32 = .{ @ptrCast(@alignCast(p0)), @ptrCast(@alignCast(p1)), @ptrCast(@alignCast(p2)), @ptrCast(@alignCast(p3)), @ptrCast(@alignCast(p4)), @ptrCast(@alignCast(p5)), @ptrCast(@alignCast(p6)), @ptrCast(@alignCast(p7)), @ptrCast(@alignCast(p8)) };
    return dispatch.active().rnn.loop_f32(&ThreadPool.runtime, args, &operands);
}

// Normalization

/// Layer or batch normalization (zig/kernels/norm.zig documents the argument block); `xhat`, `weight`,
/// `bias`, `mean` and `variance` may be null when their flags are off.
export fn zt_norm_f32(args: *const abi.ArgBlock, y: *anyopaque, xhat: ?*anyopaque, rstd: *anyopaque, x: *const anyopaque, weight: ?*const anyopaque, bias: ?*const anyopaque, mean: ?*anyopaque, variance: ?*anyopaque) void {
    dispatch.active().norm.norm_f32(&ThreadPool.runtime, args, @ptrCast(@alignCast(y)), @ptrCast(@alignCast(xhat)), @ptrCast(@alignCast(rstd)), @ptrCast(@alignCast(x)), @ptrCast(@alignCast(weight)), @ptrCast(@alignCast(bias)), @ptrCast(@alignCast(mean)), @ptrCast(@alignCast(variance)));
}

/// The gradients of a normalization: dx, dweight and dbias (each null when not wanted), from g, the saved x̂
/// and rstd, the weight (null without one) and an f64 workspace (null unless a per-position dweight or dbias).
export fn zt_norm_backward_f32(args: *const abi.ArgBlock, dx: ?*anyopaque, dw: ?*anyopaque, db: ?*anyopaque, g: *const anyopaque, xhat: *const anyopaque, rstd: *const anyopaque, weight: ?*const anyopaque, work: ?*anyopaque) void {
    dispatch.active().norm.norm_backward_f32(&ThreadPool.runtime, args, @ptrCast(@alignCast(dx)), @ptrCast(@alignCast(dw)), @ptrCast(@alignCast(db)), @ptrCast(@alignCast(g)), @ptrCast(@alignCast(xhat)), @ptrCast(@alignCast(rstd)), @ptrCast(@alignCast(weight)), @ptrCast(@alignCast(work)));
}

// Attention

/// Scaled dot-product attention forward, flash style (zig/kernels/attention.zig documents the argument
/// block): out and each row's log-sum-exp from q, k, v and an optional Bool (u8) or f32 mask (null without).
export fn zt_attention_f32(args: *const abi.ArgBlock, out: *anyopaque, lse: *anyopaque, q: *const anyopaque, k: *const anyopaque, v: *const anyopaque, mask: ?*const anyopaque, work: *anyopaque) void {
    dispatch.active().attention.attention_f32(&ThreadPool.runtime, args, @ptrCast(@alignCast(out)), @ptrCast(@alignCast(lse)), @ptrCast(@alignCast(q)), @ptrCast(@alignCast(k)), @ptrCast(@alignCast(v)), @ptrCast(mask), @ptrCast(@alignCast(work)));
}

/// Its gradients: dq, dk and dv (each of the batch's full extent) from the saved out
/// and log-sum-exp, q, k, v, the mask (null without) and the output gradient g.
export fn zt_attention_backward_f32(args: *const abi.ArgBlock, out: *const anyopaque, lse: *const anyopaque, q: *const anyopaque, k: *const anyopaque, v: *const anyopaque, mask: ?*const anyopaque, g: *const anyopaque, dq: *anyopaque, dk: *anyopaque, dv: *anyopaque, work: *anyopaque) void {
    dispatch.active().attention.attention_backward_f32(&ThreadPool.runtime, args, @ptrCast(@alignCast(out)), @ptrCast(@alignCast(lse)), @ptrCast(@alignCast(q)), @ptrCast(@alignCast(k)), @ptrCast(@alignCast(v)), @ptrCast(mask), @ptrCast(@alignCast(g)), @ptrCast(@alignCast(dq)), @ptrCast(@alignCast(dk)), @ptrCast(@alignCast(dv)), @ptrCast(@alignCast(work)));
}

// --- benchmark only: the machine's limits, measured by the selected variant (zig/bench.zig) ---

export fn zt_bench_fma_f32(iterations: u32) f64 {
    return dispatch.active().gemm.bench.fma_f32(iterations);
}

export fn zt_bench_fma_f64(iterations: u32) f64 {
    return dispatch.active().gemm.bench.fma_f64(iterations);
}

export fn zt_bench_stream_add_f32(out: *anyopaque, a: *const anyopaque, b: *const anyopaque, n: u32, threads: u32, streaming: u32) void {
    dispatch.active().gemm.bench.stream_add_f32(&ThreadPool.runtime, @ptrCast(@alignCast(out)), @ptrCast(@alignCast(a)), @ptrCast(@alignCast(b)), n, threads, streaming);
}

// --- test and benchmark only: memory (never called by the library itself) ---

/// Overwrites `count` bytes after the first `bytes` bytes of a block with 0x5A, as a kernel that ran past
/// the end would; for the CHECKED canary tests (the caller keeps `count` within the 64 canary bytes).
/// Tests only: how many jobs the thread pool has run with helper threads since load.
export fn zt_thread_jobs() u32 {
    return ThreadPool.global.jobs.load(.monotonic);
}

export fn zt_test_write_past_end(ptr: *anyopaque, bytes: u32, count: u32) void {
    const base: [*]u8 = @ptrCast(ptr);
    @memset(base[bytes..][0..count], 0x5A);
}

/// A fresh 64-byte aligned allocation straight from the C heap, bypassing the pool (the benchmark's baseline).
export fn zt_test_os_alloc(bytes: u32) ?*anyopaque {
    return aligned.alloc(bytes);
}

/// Frees a block of `zt_test_os_alloc(bytes)`, with the same `bytes`.
export fn zt_test_os_free(ptr: *anyopaque, bytes: u32) void {
    aligned.free(@ptrCast(@alignCast(ptr)), bytes);
}

//! Every export of libzigtensor, prefixed `zt_`, and nothing else: each is a thin wrapper over the module
//! that does the work. Status codes cross the boundary (see `abi.Status`), never panics or Zig errors.
//! The binding validates every argument first; the wrappers assume valid input.
const std = @import("std");
const options = @import("build_options");
const abi = @import("abi.zig");
const cpu = @import("cpu.zig");
const dispatch = @import("dispatch.zig");
const BufferPool = @import("memory/BufferPool.zig");
const ThreadPool = @import("ThreadPool.zig");

// --- library and ABI ---

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
    return dispatch.init(requested_isa);
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

// --- data movement: strided copy, casts, f16/bf16, layouts, quantized blocks ---

// --- kernels: element-wise, reductions, softmax, GEMM, pooling ---

export fn zt_binary_f32(args: *const abi.ArgBlock, out: *anyopaque, a: *const anyopaque, b: *const anyopaque) void {
    dispatch.active().elementwise.binary_f32(&ThreadPool.runtime, args, @ptrCast(out), @ptrCast(a), @ptrCast(b));
}

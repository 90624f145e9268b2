//! Native loops that measure the machine, so that the benchmarks can put every figure beside a physical
//! limit measured in the same run: the FMA peak of one core (independent FMA chains in the variant's widest
//! vectors, enough of them to hide the latency) and memory bandwidth (a STREAM "add", c = a + b, with
//! ordinary stores and with streaming stores that skip the read-for-ownership). They are compiled once per
//! ISA with the kernels (through `gemm.Table`), so the peak is the peak of the variant that runs.
const std = @import("std");
const builtin = @import("builtin");
const table = @import("kernels/table.zig");
const gemm = @import("kernels/gemm.zig");

/// The measuring loops in one variant's kernel table.
pub const Table = extern struct {
    /// Runs `iterations` rounds of independent f32 FMAs on one thread; returns the floating-point operations
    /// done (2 per lane per FMA).
    fma_f32: *const fn (iterations: u32) callconv(.c) f64,
    /// The same in f64, the arithmetic of exact mode.
    fma_f64: *const fn (iterations: u32) callconv(.c) f64,
    /// out[i] = a[i] + b[i] for i < n on up to `threads` threads, with streaming stores when `streaming` is
    /// nonzero (x86 only; elsewhere ordinary stores).
    stream_add_f32: *const fn (rt: *const table.Runtime, out: [*]f32, a: [*]const f32, b: [*]const f32, n: u32, threads: u32, streaming: u32) callconv(.c) void,
};

pub const table_entries: Table = .{
    .fma_f32 = fmaPeak(f32),
    .fma_f64 = fmaPeak(f64),
    .stream_add_f32 = streamAdd,
};

/// Independent accumulator chains: enough to cover the FMA latency times the FMA ports of current cores
/// (4 cycles × 2 ports), while leaving registers for the two operands.
const chains = if (gemm.vector_registers == 32) 24 else 12;

fn fmaPeak(comptime T: type) *const fn (iterations: u32) callconv(.c) f64 {
    return struct {
        fn run(iterations: u32) callconv(.c) f64 {
            const lanes = gemm.vector_bytes / @sizeOf(T);
            const V = @Vector(lanes, T);
            // Operands that depend on the argument, so the compiler cannot fold the loop; acc·x + y converges
            // to y/(1−x) and stays finite.
            const seed: T = @floatFromInt(iterations & 7);
            const x: V = @splat(0.999 - seed * 1e-6);
            const y: V = @splat(1e-3);
            var acc: [chains]V = undefined;
            inline for (0..chains) |c| acc[c] = @splat(@as(T, @floatFromInt(c)) + seed);
            for (0..iterations) |_| {
                inline for (0..chains) |c| acc[c] = gemm.mulAdd(V, acc[c], x, y);
            }
            var total: V = @splat(0);
            inline for (0..chains) |c| total += acc[c];
            std.mem.doNotOptimizeAway(total);
            return @as(f64, @floatFromInt(iterations)) * chains * lanes * 2;
        }
    }.run;
}

const lanes32 = gemm.vector_bytes / @sizeOf(f32);
const V32 = @Vector(lanes32, f32);

const StreamJob = struct {
    out: [*]f32,
    a: [*]const f32,
    b: [*]const f32,
    n: usize,
    per_task: usize,
    streaming: bool,

    fn run(context: *anyopaque, task: u32) callconv(.c) void {
        const job: *const StreamJob = @ptrCast(@alignCast(context));
        const first = @min(job.n, task * job.per_task);
        const end = @min(job.n, first + job.per_task);
        addRange(job.out + first, job.a + first, job.b + first, end - first, job.streaming);
    }
};

fn streamAdd(rt: *const table.Runtime, out: [*]f32, a: [*]const f32, b: [*]const f32, n: u32, threads: u32, streaming: u32) callconv(.c) void {
    const tasks = @max(1, threads);
    // Whole cache lines per task, so that no two threads write one line.
    const per_task = (n / tasks + 16) / 16 * 16;
    var job: StreamJob = .{ .out = out, .a = a, .b = b, .n = n, .per_task = per_task, .streaming = streaming != 0 };
    rt.parallelFor(&job, tasks, tasks, StreamJob.run);
}

fn addRange(out: [*]f32, a: [*]const f32, b: [*]const f32, n: usize, streaming: bool) void {
    var i: usize = 0;
    // Scalar head up to the vector alignment that streaming stores require.
    while (i < n and (@intFromPtr(out + i) % gemm.vector_bytes) != 0) : (i += 1) out[i] = a[i] + b[i];
    if (builtin.cpu.arch == .x86_64 and streaming) {
        while (i + lanes32 <= n) : (i += lanes32) {
            const v: V32 = @as(V32, a[i..][0..lanes32].*) + @as(V32, b[i..][0..lanes32].*);
            storeStreaming(out + i, v);
        }
        asm volatile ("sfence" ::: .{ .memory = true });
    } else {
        while (i + lanes32 <= n) : (i += lanes32) {
            out[i..][0..lanes32].* = @as(V32, a[i..][0..lanes32].*) + @as(V32, b[i..][0..lanes32].*);
        }
    }
    while (i < n) : (i += 1) out[i] = a[i] + b[i];
}

/// A non-temporal store of one aligned vector (x86): the line goes to memory without being read first.
inline fn storeStreaming(dst: [*]f32, v: V32) void {
    if (builtin.cpu.arch != .x86_64) unreachable;
    if (gemm.vector_bytes == 16) {
        asm volatile ("movntps %[v], (%[p])"
            :
            : [v] "x" (v),
              [p] "r" (dst),
            : .{ .memory = true });
    } else {
        asm volatile ("vmovntps %[v], (%[p])"
            :
            : [v] "v" (v),
              [p] "r" (dst),
            : .{ .memory = true });
    }
}

test "the FMA loop counts two operations per lane per chain per iteration" {
    const flops = fmaPeak(f32)(10);
    try std.testing.expectEqual(@as(f64, 10 * chains * lanes32 * 2), flops);
}

test "the stream add adds, with and without streaming stores, on several threads" {
    const ThreadPool = @import("ThreadPool.zig");
    const n = 1000;
    var a: [n]f32 = undefined;
    var b: [n]f32 = undefined;
    for (0..n) |i| {
        a[i] = @floatFromInt(i);
        b[i] = 0.5;
    }
    for ([_]u32{ 0, 1 }) |streaming| {
        for ([_]u32{ 1, 3 }) |threads| {
            var out: [n + 16]f32 align(64) = @splat(-1);
            // Start one element in, so the scalar head runs too.
            streamAdd(&ThreadPool.runtime, out[1..].ptr, &a, &b, n, threads, streaming);
            try std.testing.expectEqual(@as(f32, -1), out[0]);
            for (0..n) |i| try std.testing.expectEqual(a[i] + 0.5, out[i + 1]);
            try std.testing.expectEqual(@as(f32, -1), out[n + 1]);
        }
    }
}

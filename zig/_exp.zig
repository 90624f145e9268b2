const std = @import("std");
const gemm = @import("kernels/gemm.zig");
const abi = @import("abi.zig");
const table = @import("kernels/table.zig");
const serial: table.Runtime = .{ .parallel_for = struct {
    fn run(context: *anyopaque, tasks: u32, _: u32, task: table.TaskFn) callconv(.c) void {
        for (0..tasks) |i| task(context, @intCast(i));
    }
}.run };
fn now() u64 {
    var ts: std.os.linux.timespec = undefined;
    _ = std.os.linux.clock_gettime(.MONOTONIC, &ts);
    return @as(u64, @intCast(ts.sec)) * 1_000_000_000 + @as(u64, @intCast(ts.nsec));
}
pub fn main() !void {
    const alloc = std.heap.page_allocator;
    const shapes = [_][3]usize{ .{ 512, 512, 512 }, .{ 30, 1024, 256 }, .{ 32, 1024, 256 }, .{ 36, 1024, 256 }, .{ 2048, 1024, 128 } };
    for (shapes) |s| {
        const m = s[0];
        const n = s[1];
        const k = s[2];
        const a = try alloc.alloc(f32, m * k);
        const b = try alloc.alloc(f32, k * n);
        const c = try alloc.alloc(f32, m * n);
        for (a, 0..) |*x, i| x.* = @floatFromInt(i % 17);
        for (b, 0..) |*x, i| x.* = @floatFromInt(i % 13);
        var args: abi.ArgBlock = std.mem.zeroes(abi.ArgBlock);
        args.rank = 2;
        args.shape[0] = @intCast(m);
        args.shape[1] = @intCast(n);
        args.ints[0] = @intCast(k);
        args.threads = 1;
        args.operands[0] = .{ .offset = 0, .strides = .{ @intCast(n), 1, 0, 0, 0, 0, 0, 0 } };
        args.operands[1] = .{ .offset = 0, .strides = .{ @intCast(k), 1, 0, 0, 0, 0, 0, 0 } };
        args.operands[2] = .{ .offset = 0, .strides = .{ @intCast(n), 1, 0, 0, 0, 0, 0, 0 } };
        for ([_]i32{ 0, 1 }) |mode| {
            args.mode = mode;
            var best: u64 = std.math.maxInt(u64);
            const reps: usize = if (m * n * k > 10_000_000) 20 else 200;
            for (0..reps) |_| {
                const t0 = now();
                _ = gemm.matmulF32(&serial, &args, @ptrCast(c.ptr), @ptrCast(a.ptr), @ptrCast(b.ptr));
                best = @min(best, now() - t0);
            }
            const gf = 2.0 * @as(f64, @floatFromInt(m * n * k)) / @as(f64, @floatFromInt(best));
            std.debug.print("{d}x{d}x{d} mode {d}: {d:.3} ms {d:.1} GFLOP/s\n", .{ m, n, k, mode, @as(f64, @floatFromInt(best)) / 1e6, gf });
            const packed_b = try alloc.alignedAlloc(f64, .@"64", (n + 64) * k);
            var pa = args;
            pa.shape[0] = @intCast(k);
            pa.shape[1] = @intCast(n);
            pa.operands[0] = args.operands[2];
            gemm.packBF32(&pa, @ptrCast(packed_b.ptr), @ptrCast(b.ptr));
            best = std.math.maxInt(u64);
            for (0..reps) |_| {
                const t0 = now();
                _ = gemm.matmulPackedF32(&serial, &args, @ptrCast(c.ptr), @ptrCast(a.ptr), @ptrCast(packed_b.ptr));
                best = @min(best, now() - t0);
            }
            const gp = 2.0 * @as(f64, @floatFromInt(m * n * k)) / @as(f64, @floatFromInt(best));
            std.debug.print("   packed: {d:.3} ms {d:.1} GFLOP/s\n", .{ @as(f64, @floatFromInt(best)) / 1e6, gp });
        }
    }
}

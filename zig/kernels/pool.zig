//! 2-D max pooling over an NCHW input with any strides, by the rules of spec 000 §9: the window of output
//! (oy, ox) starts at (oy·strideH − padH, ox·strideW − padW), its taps are `dilation` apart, and it holds only
//! its in-bounds taps (padding never wins); the window is read in row-major order and the first element wins
//! ties; a NaN wins, and the first NaN is the one reported. Winner indices, when asked for, are flat row-major NCHW positions of the
//! logical input, ((n·C + c)·H + y)·W + x. The same bits in both modes and for any thread count.
//!
//! Argument block: shape [N, C, OH, OW]; operand 0 the output's strides (N, C, OH, OW), operand 1 the
//! input's (N, C, H, W), operand 2 the indices' (N, C, OH, OW; Int32); ints: kernelH, kernelW, strideH,
//! strideW, padH, padW, H, W, wantIndices (1 to write indices; `indices` may be null when 0), dilationH,
//! dilationW, localIndices (1: indices count within each (n, c) plane, y·W + x, as PyTorch's `return_indices`).
//! The output extents are the caller's (floor or ceil mode); every window must hold a tap.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const ew = @import("elementwise.zig");

pub const Geometry = struct {
    kernel: [2]isize,
    stride: [2]isize,
    pad: [2]isize,
    dilation: [2]isize,
    size: [2]isize,
    channels: isize,
    out_w: usize,

    fn fromArgs(args: *const abi.ArgBlock) Geometry {
        const ints = args.ints;
        return .{
            .kernel = .{ ints[0], ints[1] },
            .stride = .{ ints[2], ints[3] },
            .pad = .{ ints[4], ints[5] },
            .dilation = .{ ints[9], ints[10] },
            .size = .{ ints[6], ints[7] },
            .channels = args.shape[1],
            .out_w = @intCast(args.shape[3]),
        };
    }

    /// The in-bounds taps of window `o` along `axis`: positions start + j·dilation for j in [lo, hi); the
    /// caller checked that there is at least one.
    fn window(g: *const Geometry, axis: usize, o: usize) Window {
        const start = @as(isize, @intCast(o)) * g.stride[axis] - g.pad[axis];
        const d = g.dilation[axis];
        const lo = if (start >= 0) 0 else @divFloor(-start + d - 1, d);
        const hi = @min(g.kernel[axis], @divFloor(g.size[axis] - 1 - start, d) + 1);
        std.debug.assert(lo < hi);
        return .{ .start = start, .step = d, .lo = lo, .hi = hi };
    }
};

const Window = struct {
    start: isize,
    step: isize,
    lo: isize,
    hi: isize,

    fn at(w: Window, j: isize) isize {
        return w.start + j * w.step;
    }
};

const Pool = struct {
    args: *const abi.ArgBlock,
    geometry: Geometry,
    out: [*]f32,
    x: [*]const f32,
    indices: ?[*]i32,

    /// Output rows (n, c, oy) `first..end`, in the flat order of [N, C, OH].
    pub fn range(pool: *const Pool, first: usize, end: usize) void {
        const shape = pool.args.shape;
        const out_h: usize = @intCast(shape[2]);
        const channels: usize = @intCast(shape[1]);
        for (first..end) |r| {
            const oy = r % out_h;
            const c = (r / out_h) % channels;
            const n = r / out_h / channels;
            pool.outputRow(n, c, oy);
        }
    }

    fn outputRow(pool: *const Pool, n: usize, c: usize, oy: usize) void {
        const g = &pool.geometry;
        const ops = &pool.args.operands;
        const xs = ops[1].strides;
        const plane = @as(isize, @intCast(n)) * xs[0] + @as(isize, @intCast(c)) * xs[1] + ops[1].offset;
        const ys = g.window(0, oy);
        const index_base = if (pool.args.ints[11] != 0) 0 else ((@as(isize, @intCast(n)) * g.channels + @as(isize, @intCast(c))) * g.size[0]) * g.size[1];
        const out_row = rowOffset(&ops[0], n, c, oy);
        const index_row = rowOffset(&ops[2], n, c, oy);
        for (0..g.out_w) |ox| {
            const xw = g.window(1, ox);
            var best_y = ys.at(ys.lo);
            var best_x = xw.at(xw.lo);
            var best = ew.at([*]const f32, pool.x, plane + best_y * xs[2] + best_x * xs[3])[0];
            scan: {
                if (best != best) break :scan;
                var j = ys.lo;
                while (j < ys.hi) : (j += 1) {
                    const y = ys.at(j);
                    const row = ew.at([*]const f32, pool.x, plane + y * xs[2]);
                    var i = if (j == ys.lo) xw.lo + 1 else xw.lo;
                    while (i < xw.hi) : (i += 1) {
                        const xi = xw.at(i);
                        const v = ew.at([*]const f32, row, xi * xs[3])[0];
                        if (v > best or v != v) {
                            best = v;
                            best_y = y;
                            best_x = xi;
                            if (v != v) break :scan;
                        }
                    }
                }
            }
            const oxi: isize = @intCast(ox);
            ew.at([*]f32, pool.out, out_row + oxi * ops[0].strides[3])[0] = best;
            if (pool.indices) |indices| {
                ew.at([*]i32, indices, index_row + oxi * ops[2].strides[3])[0] = @intCast(index_base + best_y * g.size[1] + best_x);
            }
        }
    }
};

fn rowOffset(operand: *const abi.Operand, n: usize, c: usize, oy: usize) isize {
    return operand.offset + @as(isize, @intCast(n)) * operand.strides[0] + @as(isize, @intCast(c)) * operand.strides[1] +
        @as(isize, @intCast(oy)) * operand.strides[2];
}

/// `zt_maxpool2d_f32`: see the file comment for the argument block. Assumes validated geometry (every window
/// holds a tap) and, when `ints[8]` is 1, a non-null `indices`.
pub fn maxPool2dF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, x: [*]const u8, indices: ?[*]u8) callconv(.c) void {
    std.debug.assert(args.rank == 4);
    const geometry = Geometry.fromArgs(args);
    const want = args.ints[8] != 0;
    std.debug.assert(!want or indices != null);
    var rows: usize = 1;
    for (args.shape[0..3]) |extent| rows *= @intCast(extent);
    if (rows == 0 or geometry.out_w == 0) return;
    const pool: Pool = .{
        .args = args,
        .geometry = geometry,
        .out = @ptrCast(@alignCast(out)),
        .x = @ptrCast(@alignCast(x)),
        .indices = if (want) @ptrCast(@alignCast(indices.?)) else null,
    };
    const work_per_row = geometry.out_w * @as(usize, @intCast(geometry.kernel[0] * geometry.kernel[1]));
    ew.parallelRange(rt, args.threads, rows, @max(2, ew.parallel_min_elements / @max(1, work_per_row)), 1, &pool);
}

// --- tests ---

const testing = std.testing;

fn poolArgs(n: i32, c: i32, h: i32, w: i32, kernel: [2]i32, stride: [2]i32, pad: [2]i32, want: bool) abi.ArgBlock {
    const oh = @divFloor(h + 2 * pad[0] - kernel[0], stride[0]) + 1;
    const ow = @divFloor(w + 2 * pad[1] - kernel[1], stride[1]) + 1;
    const out_strides = [_]i32{ c * oh * ow, oh * ow, ow, 1 };
    const x_strides = [_]i32{ c * h * w, h * w, w, 1 };
    var args = ew.testArgs(&.{ n, c, oh, ow }, &.{ &out_strides, &x_strides, &out_strides }, &.{ 0, 0, 0 }, 0, 0, 1);
    const ints = [_]i32{ kernel[0], kernel[1], stride[0], stride[1], pad[0], pad[1], h, w, @intFromBool(want), 1, 1, 0 };
    @memcpy(args.ints[0..ints.len], &ints);
    return args;
}

test "padding never wins, the first of equals wins, and a NaN wins at its first position" {
    const nan = std.math.nan(f32);
    // One 3x4 plane; 2x2 windows, stride 2, padding 1: output 2x3.
    const x = [_]f32{
        -5, -5,  -7, 2,
        -5, 3,   3,  nan,
        1,  nan, 4,  nan,
    };
    var out: [6]f32 = undefined;
    var indices: [6]i32 = @splat(-9);
    const args = poolArgs(1, 1, 3, 4, .{ 2, 2 }, .{ 2, 2 }, .{ 1, 1 }, true);
    maxPool2dF32(&ew.test_runtime, &args, @ptrCast(&out), @ptrCast(&x), @ptrCast(&indices));
    // Windows: rows {0} x cols {0}, {1,2}, {3}; rows {1,2} x cols {0}, {1,2}, {3}.
    try testing.expectEqual(@as(f32, -5), out[0]);
    try testing.expectEqual(@as(f32, -5), out[1]);
    try testing.expectEqual(@as(f32, 2), out[2]);
    try testing.expectEqual(@as(f32, 1), out[3]);
    try testing.expect(std.math.isNan(out[4]) and std.math.isNan(out[5]));
    try testing.expectEqualSlices(i32, &.{ 0, 1, 3, 8, 9, 7 }, &indices);
}

test "indices are left alone unless asked for, and channels and batches index the logical input" {
    var x: [2 * 3 * 4 * 5]f32 = undefined;
    for (&x, 0..) |*v, i| v.* = @floatFromInt((i * 13) % 29);
    var out: [2 * 3 * 2 * 2]f32 = undefined;
    var indices: [out.len]i32 = @splat(-9);
    const args = poolArgs(2, 3, 4, 5, .{ 3, 2 }, .{ 1, 3 }, .{ 0, 0 }, false);
    maxPool2dF32(&ew.test_runtime, &args, @ptrCast(&out), @ptrCast(&x), null);
    for (indices) |i| try testing.expectEqual(@as(i32, -9), i);
    const with = poolArgs(2, 3, 4, 5, .{ 3, 2 }, .{ 1, 3 }, .{ 0, 0 }, true);
    var out2: [out.len]f32 = undefined;
    maxPool2dF32(&ew.test_runtime, &with, @ptrCast(&out2), @ptrCast(&x), @ptrCast(&indices));
    try testing.expectEqualSlices(f32, &out, &out2);
    for (out2, indices) |v, i| try testing.expectEqual(v, x[@intCast(i)]);
}

test "dilated taps skip positions, and a ceil-mode window past the edge holds only its in-bounds taps" {
    // One 1x5 row, kernel 1x2 dilated by 3, stride 2: taps (0, 3), (2, 5 out of bounds).
    const x = [_]f32{ 1, 9, 4, 2, 8 };
    var out: [2]f32 = undefined;
    var indices: [2]i32 = undefined;
    const out_strides = [_]i32{ 2, 2, 2, 1 };
    const x_strides = [_]i32{ 5, 5, 5, 1 };
    var args = ew.testArgs(&.{ 1, 1, 1, 2 }, &.{ &out_strides, &x_strides, &out_strides }, &.{ 0, 0, 0 }, 0, 0, 1);
    const ints = [_]i32{ 1, 2, 1, 2, 0, 0, 1, 5, 1, 1, 3, 0 };
    @memcpy(args.ints[0..ints.len], &ints);
    maxPool2dF32(&ew.test_runtime, &args, @ptrCast(&out), @ptrCast(&x), @ptrCast(&indices));
    try testing.expectEqualSlices(f32, &.{ 2, 4 }, &out);
    try testing.expectEqualSlices(i32, &.{ 3, 2 }, &indices);
}

test "local indices count within each plane" {
    var x: [2 * 2 * 2]f32 = undefined;
    for (&x, 0..) |*v, i| v.* = @floatFromInt(i);
    var out: [2]f32 = undefined;
    var indices: [2]i32 = undefined;
    var args = poolArgs(2, 1, 2, 2, .{ 2, 2 }, .{ 2, 2 }, .{ 0, 0 }, true);
    args.ints[11] = 1;
    maxPool2dF32(&ew.test_runtime, &args, @ptrCast(&out), @ptrCast(&x), @ptrCast(&indices));
    try testing.expectEqualSlices(f32, &.{ 3, 7 }, &out);
    try testing.expectEqualSlices(i32, &.{ 3, 3 }, &indices);
}

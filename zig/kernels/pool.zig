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
//! The output extents are the caller's (floor or ceil mode); every window must hold a tap. The common 2×2
//! window of stride 2 without padding, over rows that step by one, runs in vectors (`pairs`): the same four
//! comparisons in the same order, so the same bits.
//!
//! args.op 1 is the backward pass: operand 0 the input gradient's strides (N, C, H, W), operand 1 the output
//! gradient's (N, C, OH, OW), operand 2 the winners' (local) indices'; the same ints. Each input gradient
//! element is +0 plus the gradients of the outputs it won, in output order (one f32 addition each). Where the
//! windows are disjoint (each window's extent dilation·(k − 1) + 1 at most the stride, the common case), an
//! element belongs to at most one window, so each is written once, +0 + g or +0, without a zero-fill pass;
//! otherwise each plane is zeroed and the gradients added at their winners in output order.
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
    /// 2×2 windows of stride 2, no padding or dilation, and rows that step by one: `pairRow` runs.
    pairs: bool,

    /// Output rows (n, c, oy) `first..end`, in the flat order of [N, C, OH].
    pub fn range(pool: *const Pool, first: usize, end: usize) void {
        const shape = pool.args.shape;
        const out_h: usize = @intCast(shape[2]);
        const channels: usize = @intCast(shape[1]);
        // Counted, not divided out of each row's flat index: a row of a small plane is a few vector steps.
        var oy = first % out_h;
        var c = (first / out_h) % channels;
        var n = first / out_h / channels;
        for (first..end) |_| {
            pool.outputRow(n, c, oy);
            oy += 1;
            if (oy == out_h) {
                oy = 0;
                c += 1;
                if (c == channels) {
                    c = 0;
                    n += 1;
                }
            }
        }
    }

    fn outputRow(pool: *const Pool, n: usize, c: usize, oy: usize) void {
        const g = &pool.geometry;
        const ops = &pool.args.operands;
        const xs = ops[1].strides;
        const plane = @as(isize, @intCast(n)) * xs[0] + @as(isize, @intCast(c)) * xs[1] + ops[1].offset;
        const index_base = if (pool.args.ints[11] != 0) 0 else ((@as(isize, @intCast(n)) * g.channels + @as(isize, @intCast(c))) * g.size[0]) * g.size[1];
        const out_row = rowOffset(&ops[0], n, c, oy);
        const index_row = rowOffset(&ops[2], n, c, oy);
        if (pool.pairs) {
            const top: isize = @intCast(2 * oy);
            return pairRow(pool, plane + top * xs[2], index_base + top * g.size[1], out_row, index_row);
        }
        const ys = g.window(0, oy);
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

/// The widths of the pair kernels' steps, widest first: a row of any width runs in whole vectors, without
/// buffers (a 14-wide row as 8 + 4 + 2 on AVX-512).
const widths = blk: {
    var list: [std.math.log2_int(usize, ew.lanes) + 1]usize = undefined;
    for (&list, 0..) |*w, i| w.* = ew.lanes >> @intCast(i);
    break :blk list;
};

/// The maxima of output row `out_row`'s 2×2 windows over input rows `row` and the next (index of the first
/// element `index`).
fn pairRow(pool: *const Pool, row: isize, index: isize, out_row: isize, index_row: isize) void {
    const out_w = pool.geometry.out_w;
    const below = pool.args.operands[1].strides[2];
    const width: i32 = @intCast(pool.geometry.size[1]);
    var ox: usize = 0;
    inline for (widths) |N| {
        while (ox + N <= out_w) : (ox += N) {
            const top = ew.at([*]const f32, pool.x, row + @as(isize, @intCast(2 * ox)));
            const first = @as(@Vector(N, i32), @splat(@intCast(index + @as(isize, @intCast(2 * ox))))) + comptime iota(N, 2);
            const m = pairMaxima(N, top[0 .. 2 * N].*, ew.at([*]const f32, top, below)[0 .. 2 * N].*, first, width);
            ew.at([*]f32, pool.out, out_row + @as(isize, @intCast(ox)))[0..N].* = m.best;
            if (pool.indices) |indices| ew.at([*]i32, indices, index_row + @as(isize, @intCast(ox)))[0..N].* = m.at;
        }
    }
}

/// The maxima of `N` 2×2 windows whose rows are `top` and `bottom`, and their indices (`first` those of the
/// windows' first elements, `width` the step to the next row). Candidates are taken in window order, (0, 0),
/// (0, 1), (1, 0), (1, 1), by the scalar rule: a later one wins when it is larger, or a NaN while the best is not.
inline fn pairMaxima(comptime N: usize, top: @Vector(2 * N, f32), bottom: @Vector(2 * N, f32), first: @Vector(N, i32), width: i32) struct { best: @Vector(N, f32), at: @Vector(N, i32) } {
    const Mask = @Vector(N, bool);
    const evens = comptime everyOther(N, 0);
    const odds = comptime everyOther(N, 1);
    var best = @shuffle(f32, top, undefined, evens);
    var at = first;
    inline for (.{
        .{ @shuffle(f32, top, undefined, odds), 1 },
        .{ @shuffle(f32, bottom, undefined, evens), 0 },
        .{ @shuffle(f32, bottom, undefined, odds), 1 },
    }, 0..) |candidate, k| {
        const v = candidate[0];
        const nan_wins = @select(bool, best == best, v != v, @as(Mask, @splat(false)));
        const take = @select(bool, v > best, @as(Mask, @splat(true)), nan_wins);
        best = @select(f32, take, v, best);
        const shift: i32 = if (k == 0) candidate[1] else width + candidate[1];
        at = @select(i32, take, first + @as(@Vector(N, i32), @splat(shift)), at);
    }
    return .{ .best = best, .at = at };
}

/// 0, step, 2·step, ... over `N` lanes.
fn iota(comptime N: usize, comptime step: i32) @Vector(N, i32) {
    var v: [N]i32 = undefined;
    for (&v, 0..) |*e, i| e.* = step * @as(i32, @intCast(i));
    return v;
}

/// The shuffle mask of `N` lanes picking elements `parity`, `parity` + 2, ... of a vector of 2·N.
fn everyOther(comptime N: usize, comptime parity: i32) @Vector(N, i32) {
    var mask: [N]i32 = undefined;
    for (&mask, 0..) |*m, i| m.* = 2 * @as(i32, @intCast(i)) + parity;
    return mask;
}

/// The shuffle mask of 2·`N` lanes repeating each of `N` lanes twice.
fn twice(comptime N: usize) @Vector(2 * N, i32) {
    var mask: [2 * N]i32 = undefined;
    for (&mask, 0..) |*m, i| m.* = @intCast(i / 2);
    return mask;
}

fn rowOffset(operand: *const abi.Operand, n: usize, c: usize, oy: usize) isize {
    return operand.offset + @as(isize, @intCast(n)) * operand.strides[0] + @as(isize, @intCast(c)) * operand.strides[1] +
        @as(isize, @intCast(oy)) * operand.strides[2];
}

/// The gradient of the input (args.op 1): planes (n, c) `first..end`, in the flat order of [N, C].
const Backward = struct {
    args: *const abi.ArgBlock,
    geometry: Geometry,
    grad: [*]f32,
    g: [*]const f32,
    indices: [*]const i32,
    /// Each window's extent is at most its stride on both axes: no two windows share an element.
    disjoint: bool,
    /// 2×2 windows of stride 2 without padding or dilation, over rows that step by one: `pairPlane` runs.
    pairs: bool,

    pub fn range(b: *const Backward, first: usize, end: usize) void {
        const channels: usize = @intCast(b.geometry.channels);
        for (first..end) |p| {
            const n = p / channels;
            const c = p % channels;
            if (b.pairs) b.pairPlane(n, c) else if (b.disjoint) b.disjointPlane(n, c) else b.plane(n, c);
        }
    }

    /// Row y of the input belongs to window row (y + padH) / strideH alone, column x to (x + padW) / strideW;
    /// it takes that window's gradient when it is its winner.
    fn disjointPlane(b: *const Backward, n: usize, c: usize) void {
        const geo = &b.geometry;
        const ops = &b.args.operands;
        const grad_step: isize = ops[0].strides[3];
        const g_step: isize = ops[1].strides[3];
        const index_step: isize = ops[2].strides[3];
        const out_h: usize = @intCast(b.args.shape[2]);
        const out_w = geo.out_w;
        const h: usize = @intCast(geo.size[0]);
        const w: usize = @intCast(geo.size[1]);
        const sh: usize = @intCast(geo.stride[0]);
        const sw: usize = @intCast(geo.stride[1]);
        const ph: usize = @intCast(geo.pad[0]);
        const pw: usize = @intCast(geo.pad[1]);
        for (0..h) |y| {
            const row = ew.at([*]f32, b.grad, rowOffset(&ops[0], n, c, y));
            const oy = (y + ph) / sh;
            var x: usize = 0;
            if (oy < out_h) {
                const g_row = ew.at([*]const f32, b.g, rowOffset(&ops[1], n, c, oy));
                const index_row = ew.at([*]const i32, b.indices, rowOffset(&ops[2], n, c, oy));
                const code: isize = @intCast(y * w);
                for (0..out_w) |ox| {
                    const oxi: isize = @intCast(ox);
                    const winner = ew.at([*]const i32, index_row, oxi * index_step)[0] - code;
                    const value = @as(f32, 0) + ew.at([*]const f32, g_row, oxi * g_step)[0];
                    const end = @min(w, (ox + 1) * sw - pw);
                    while (x < end) : (x += 1) {
                        const xi: isize = @intCast(x);
                        ew.at([*]f32, row, xi * grad_step)[0] = if (winner == xi) value else 0;
                    }
                }
            }
            while (x < w) : (x += 1) ew.at([*]f32, row, @as(isize, @intCast(x)) * grad_step)[0] = 0;
        }
    }

    /// `disjointPlane` for 2×2 windows of stride 2, `N` windows (2·N elements of a row) at a time.
    fn pairPlane(b: *const Backward, n: usize, c: usize) void {
        const geo = &b.geometry;
        const ops = &b.args.operands;
        const out_h: usize = @intCast(b.args.shape[2]);
        const out_w = geo.out_w;
        const h: usize = @intCast(geo.size[0]);
        const w: usize = @intCast(geo.size[1]);
        for (0..h) |y| {
            const row = ew.at([*]f32, b.grad, rowOffset(&ops[0], n, c, y));
            const oy = y / 2;
            var x: usize = 0;
            if (oy < out_h) {
                const g_row = ew.at([*]const f32, b.g, rowOffset(&ops[1], n, c, oy));
                const index_row = ew.at([*]const i32, b.indices, rowOffset(&ops[2], n, c, oy));
                var ox: usize = 0;
                inline for (widths[1..]) |N| {
                    // The last window of a ceil-mode row may hold one element: the scalar loop below takes it.
                    while (ox + N <= out_w and 2 * (ox + N) <= w) : (ox += N) {
                        const zero: @Vector(2 * N, f32) = @splat(0);
                        const winners = @shuffle(i32, @as(@Vector(N, i32), index_row[ox..][0..N].*), undefined, twice(N));
                        const values = @shuffle(f32, @as(@Vector(N, f32), g_row[ox..][0..N].*), undefined, twice(N));
                        const here = @as(@Vector(2 * N, i32), @splat(@intCast(y * w + 2 * ox))) + comptime iota(2 * N, 1);
                        row[2 * ox ..][0 .. 2 * N].* = @select(f32, winners == here, zero + values, zero);
                    }
                }
                x = 2 * ox;
                while (ox < out_w) : (ox += 1) {
                    const value = @as(f32, 0) + g_row[ox];
                    while (x < @min(w, 2 * ox + 2)) : (x += 1) row[x] = if (@as(isize, index_row[ox]) == @as(isize, @intCast(y * w + x))) value else 0;
                }
            }
            while (x < w) : (x += 1) row[x] = 0;
        }
    }

    /// Overlapping windows: the plane zeroed, then each output's gradient added at its winner, in output order.
    fn plane(b: *const Backward, n: usize, c: usize) void {
        const geo = &b.geometry;
        const ops = &b.args.operands;
        const grad_steps = [2]isize{ ops[0].strides[2], ops[0].strides[3] };
        const g_step: isize = ops[1].strides[3];
        const index_step: isize = ops[2].strides[3];
        const out_h: usize = @intCast(b.args.shape[2]);
        const h: usize = @intCast(geo.size[0]);
        const w: usize = @intCast(geo.size[1]);
        const base = rowOffset(&ops[0], n, c, 0);
        for (0..h) |y| {
            for (0..w) |x| ew.at([*]f32, b.grad, base + @as(isize, @intCast(y)) * grad_steps[0] + @as(isize, @intCast(x)) * grad_steps[1])[0] = 0;
        }
        for (0..out_h) |oy| {
            const g_row = rowOffset(&ops[1], n, c, oy);
            const index_row = rowOffset(&ops[2], n, c, oy);
            for (0..geo.out_w) |ox| {
                const oxi: isize = @intCast(ox);
                const winner: usize = @intCast(ew.at([*]const i32, b.indices, index_row + oxi * index_step)[0]);
                std.debug.assert(winner < h * w);
                const target = ew.at([*]f32, b.grad, base + @as(isize, @intCast(winner / w)) * grad_steps[0] + @as(isize, @intCast(winner % w)) * grad_steps[1]);
                target[0] += ew.at([*]const f32, b.g, g_row + oxi * g_step)[0];
            }
        }
    }
};

/// 2×2 windows of stride 2 without padding or dilation, and operands whose rows step by one.
fn isPairs(geometry: *const Geometry, ops: *const [abi.max_operands]abi.Operand, operands: usize) bool {
    for (0..2) |axis| {
        if (geometry.kernel[axis] != 2 or geometry.stride[axis] != 2 or geometry.pad[axis] != 0 or geometry.dilation[axis] != 1) return false;
    }
    for (ops[0..operands]) |op| if (op.strides[3] != 1) return false;
    return true;
}

/// `zt_maxpool2d_f32`: see the file comment for the argument block. Assumes validated geometry (every window
/// holds a tap) and, when `ints[8]` is 1 or args.op is 1, a non-null `indices` (the backward pass's are local,
/// each within its plane).
pub fn maxPool2dF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, x: [*]const u8, indices: ?[*]u8) callconv(.c) void {
    std.debug.assert(args.rank == 4);
    const geometry = Geometry.fromArgs(args);
    if (args.op == 1) return backward(rt, args, geometry, out, x, indices.?);
    const want = args.ints[8] != 0;
    std.debug.assert(!want or indices != null);
    var rows: usize = 1;
    for (args.shape[0..3]) |extent| rows *= @intCast(extent);
    if (rows == 0 or geometry.out_w == 0) return;
    const ops = &args.operands;
    const pool: Pool = .{
        .args = args,
        .geometry = geometry,
        .out = @ptrCast(@alignCast(out)),
        .x = @ptrCast(@alignCast(x)),
        .indices = if (want) @ptrCast(@alignCast(indices.?)) else null,
        // Every window whole (no ceil-mode window past the edge).
        .pairs = isPairs(&geometry, ops, if (want) 3 else 2) and 2 * geometry.out_w <= geometry.size[1] and 2 * args.shape[2] <= geometry.size[0],
    };
    const work_per_row = geometry.out_w * @as(usize, @intCast(geometry.kernel[0] * geometry.kernel[1]));
    ew.parallelRange(rt, args.threads, rows, @max(2, ew.parallel_min_elements / @max(1, work_per_row)), 1, &pool);
}

fn backward(rt: *const table.Runtime, args: *const abi.ArgBlock, geometry: Geometry, grad: [*]u8, g: [*]const u8, indices: [*]u8) void {
    const planes: usize = @intCast(args.shape[0] * args.shape[1]);
    const plane_elems: usize = @intCast(geometry.size[0] * geometry.size[1]);
    if (planes == 0 or plane_elems == 0) return;
    const work: Backward = .{
        .args = args,
        .geometry = geometry,
        .grad = @ptrCast(@alignCast(grad)),
        .g = @ptrCast(@alignCast(g)),
        .indices = @ptrCast(@alignCast(indices)),
        .disjoint = for (0..2) |axis| {
            if (geometry.dilation[axis] * (geometry.kernel[axis] - 1) + 1 > geometry.stride[axis]) break false;
        } else true,
        .pairs = isPairs(&geometry, &args.operands, 3),
    };
    ew.parallelRange(rt, args.threads, planes, @max(2, ew.parallel_min_elements / plane_elems), 1, &work);
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

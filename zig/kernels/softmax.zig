//! Softmax and log-softmax over the last axis of the iteration shape (operand 0 the output, operand 1 the
//! input, both with strides for every axis).
//!
//! Exact mode, the reference's definition: m = the row's maximum (f32; a NaN anywhere makes it NaN);
//! e_i = exp(f64(x_i) − f64(m)) in f64; s = Σ e_i in f64, ascending; softmax y_i = f32(e_i / s) and
//! log-softmax y_i = f32((f64(x_i) − f64(m)) − log(s)), with `math.exp` and `math.log`, so the bits are the
//! same on every ISA and thread count and within 1 ulp of the reference.
//!
//! Fast mode: the same steps with `math.expFast` in f32 vectors (x_i − m kept exact as a rounded difference
//! and its error, the sum and the row's log s still in f64), softmax as e_i · (1/s); within
//! `math.fast_bounds.softmax` and `math.fast_bounds.log_softmax` of exact mode.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const math = @import("math.zig");
const ew = @import("elementwise.zig");
const Rows = @import("rows.zig").Rows;

const lanes = ew.lanes;
const V = ew.V;
const V64 = @Vector(lanes, f64);

/// Numbered by the op table (`zig/kernels/ops.zig`, generated from src/core/op_table.ts).
pub const SoftmaxOp = @import("ops.zig").SoftmaxOp;

/// One row: `len` elements, `stride` apart in the input and `out_stride` apart in the output.
const Line = struct {
    len: usize,
    stride: isize,
    out_stride: isize,

    inline fn load(line: Line, x: [*]const f32, i: usize) f32 {
        return ew.at([*]const f32, x, @as(isize, @intCast(i)) * line.stride)[0];
    }

    inline fn store(line: Line, y: [*]f32, i: usize, value: f32) void {
        ew.at([*]f32, y, @as(isize, @intCast(i)) * line.out_stride)[0] = value;
    }
};

/// The row's maximum, NaN when the row holds one (the sign of a zero maximum does not matter here:
/// x - (+0) and x - (-0) have the same exponential).
fn rowMax(x: [*]const f32, line: Line) f32 {
    var m = -std.math.inf(f32);
    for (0..line.len) |i| {
        const v = line.load(x, i);
        if (v != v) return v;
        if (v > m) m = v;
    }
    return m;
}

fn exactRow(comptime op: SoftmaxOp, x: [*]const f32, y: [*]f32, line: Line) void {
    const m: V64 = @splat(rowMax(x, line));
    var s: f64 = 0;
    var i: usize = 0;
    while (i < line.len) : (i += lanes) {
        const e: [lanes]f64 = math.expV(lanes, @as(V64, @floatCast(piece(x, line, i))) - m);
        // One element after another: the sum's order is the row's.
        for (e[0..@min(lanes, line.len - i)]) |v| s += v;
    }
    i = 0;
    switch (op) {
        .softmax => while (i < line.len) : (i += lanes) {
            const e = math.expV(lanes, @as(V64, @floatCast(piece(x, line, i))) - m);
            putPiece(y, line, i, @floatCast(e / @as(V64, @splat(s))));
        },
        .log_softmax => {
            const log_s: V64 = @splat(math.log(s));
            while (i < line.len) : (i += lanes) {
                putPiece(y, line, i, @floatCast((@as(V64, @floatCast(piece(x, line, i))) - m) - log_s));
            }
        },
    }
}

/// Loads lane-sized pieces of a row, straight from memory when it steps by one.
inline fn piece(x: [*]const f32, line: Line, i: usize) V {
    const count = @min(lanes, line.len - i);
    if (line.stride == 1 and count == lanes) return x[i..][0..lanes].*;
    return ew.gather(f32, ew.at([*]const f32, x, @as(isize, @intCast(i)) * line.stride), line.stride, count, -std.math.inf(f32));
}

inline fn putPiece(y: [*]f32, line: Line, i: usize, v: V) void {
    const count = @min(lanes, line.len - i);
    if (line.out_stride == 1 and count == lanes) {
        y[i..][0..lanes].* = v;
    } else {
        ew.scatter(f32, ew.at([*]f32, y, @as(isize, @intCast(i)) * line.out_stride), line.out_stride, count, v);
    }
}

/// x - m as a rounded difference and its exact rounding error (Knuth's two-sum), so that the error of f32
/// subtraction does not grow with |x - m| in the exponent.
inline fn difference(x: V, m: V) struct { hi: V, lo: V } {
    const hi = x - m;
    const back = hi - x;
    const lo = (x - (hi - back)) + (-m - back);
    // Infinite and NaN differences carry no error term (their two-sum residual would be NaN).
    const finite = @abs(hi) < @as(V, @splat(std.math.inf(f32)));
    return .{ .hi = hi, .lo = @select(f32, finite, lo, @as(V, @splat(0))) };
}

fn fastRow(comptime op: SoftmaxOp, x: [*]const f32, y: [*]f32, line: Line) void {
    // Padding lanes hold -inf: they never win the maximum and their exponential is 0.
    var acc: V = @splat(-std.math.inf(f32));
    var nan = @as(@Vector(lanes, bool), @splat(false));
    var i: usize = 0;
    while (i < line.len) : (i += lanes) {
        const v = piece(x, line, i);
        nan = @select(bool, v != v, v != v, nan);
        acc = @select(f32, v > acc, v, acc);
    }
    const m: V = @splat(if (@reduce(.Or, nan)) std.math.nan(f32) else @reduce(.Max, acc));
    var sum: V64 = @splat(0);
    i = 0;
    while (i < line.len) : (i += lanes) {
        const d = difference(piece(x, line, i), m);
        const e = math.expFast(lanes, d.hi) * (@as(V, @splat(1)) + d.lo);
        sum += @as(V64, @floatCast(e));
        if (op == .softmax) putPiece(y, line, i, e);
    }
    const s = @reduce(.Add, sum);
    i = 0;
    switch (op) {
        .softmax => {
            const r: V = @splat(@floatCast(1 / s));
            while (i < line.len) : (i += lanes) putPiece(y, line, i, piece(y, .{ .len = line.len, .stride = line.out_stride, .out_stride = line.out_stride }, i) * r);
        },
        .log_softmax => {
            // Once per row, so the exact f64 logarithm costs nothing; an f32 one would lose log s when s is
            // within an f32 step of 1 (one dominant element).
            const log_s: V = @splat(@floatCast(math.log(s)));
            while (i < line.len) : (i += lanes) {
                const d = difference(piece(x, line, i), m);
                putPiece(y, line, i, (d.hi - log_s) + d.lo);
            }
        },
    }
}

fn SoftmaxSpan(comptime op: SoftmaxOp, comptime exact: bool) type {
    return struct {
        out: [*]f32,
        a: [*]const f32,
        line: Line,
        outer: [2]isize,

        pub fn span(self: *const @This(), offsets: [2]isize, begin: usize, end: usize) void {
            for (begin..end) |j| {
                const jj: isize = @intCast(j);
                const x = ew.at([*]const f32, self.a, offsets[1] + jj * self.outer[1]);
                const y = ew.at([*]f32, self.out, offsets[0] + jj * self.outer[0]);
                if (exact) exactRow(op, x, y, self.line) else fastRow(op, x, y, self.line);
            }
        }
    };
}

/// `zt_softmax_f32`: softmax (`args.op` 0) or log-softmax (1) over the last axis; assumes rank >= 1.
pub fn softmaxF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8) callconv(.c) void {
    std.debug.assert(args.rank >= 1 and (args.op == 0 or args.op == 1));
    const rank: usize = @intCast(args.rank);
    const shape = args.shapeSlice();
    const line: Line = .{
        .len = @intCast(shape[rank - 1]),
        .stride = args.operands[1].strides[rank - 1],
        .out_stride = args.operands[0].strides[rank - 1],
    };
    if (line.len == 0) return;
    const outer = Rows(2).init(shape[0 .. rank - 1], .{ &args.operands[0], &args.operands[1] });
    switch (@as(SoftmaxOp, @enumFromInt(args.op))) {
        inline else => |op| {
            if (ew.isExact(args)) run(op, true, rt, args, &outer, line, out, a) else run(op, false, rt, args, &outer, line, out, a);
        },
    }
}

fn run(comptime op: SoftmaxOp, comptime exact: bool, rt: *const table.Runtime, args: *const abi.ArgBlock, outer: *const Rows(2), line: Line, out: [*]u8, a: [*]const u8) void {
    const visit: SoftmaxSpan(op, exact) = .{
        .out = @ptrCast(@alignCast(out)),
        .a = @ptrCast(@alignCast(a)),
        .line = line,
        .outer = outer.innerStrides(),
    };
    const min_rows = (ew.parallel_min_elements / 8) / line.len;
    ew.runSpans(rt, args, outer, &visit, @max(2, min_rows), 1);
}

// --- tests ---

const testing = std.testing;

fn softmaxOnce(op: SoftmaxOp, mode: i32, shape: []const i32, strides: []const i32, out: []f32, a: []const f32) void {
    const args = ew.testArgs(shape, &.{ strides, strides }, &.{ 0, 0 }, @intFromEnum(op), mode, 1);
    softmaxF32(&ew.test_runtime, &args, @ptrCast(out.ptr), @ptrCast(a.ptr));
}

test "exact softmax follows the definition and sums to one" {
    const a = [_]f32{ 1, 2, 3, -1000, 0, 0, 0, 0 };
    var out: [8]f32 = undefined;
    softmaxOnce(.softmax, 1, &.{ 2, 4 }, &.{ 4, 1 }, &out, &a);
    const s = math.exp(-2) + math.exp(-1) + 1 + math.exp(-1003);
    try testing.expectEqual(@as(f32, @floatCast(math.exp(-2) / s)), out[0]);
    try testing.expectEqual(@as(f32, @floatCast(1 / s)), out[2]);
    try testing.expectEqual(@as(f32, 0), out[3]);
    try testing.expectEqual(@as(f32, 0.25), out[4]);
    softmaxOnce(.log_softmax, 1, &.{ 2, 4 }, &.{ 4, 1 }, &out, &a);
    try testing.expectEqual(@as(f32, @floatCast(-1 - math.log(s))), out[1]);
    try testing.expectEqual(@as(f32, @floatCast(-1003 - math.log(s))), out[3]);
}

test "fast softmax is within its bound, strided or not, and NaN rows stay NaN" {
    const len = 3 * lanes + 3;
    var a: [2 * len]f32 = undefined;
    for (&a, 0..) |*v, i| v.* = @as(f32, @floatFromInt((i * 37) % 101)) * 0.2 - 10;
    a[len + 4] = std.math.nan(f32);
    inline for (.{ SoftmaxOp.softmax, .log_softmax }) |op| {
        var exact: [2 * len]f32 = undefined;
        var fast: [2 * len]f32 = undefined;
        var strided: [2 * len]f32 = undefined;
        softmaxOnce(op, 1, &.{ 2, len }, &.{ len, 1 }, &exact, &a);
        softmaxOnce(op, 0, &.{ 2, len }, &.{ len, 1 }, &fast, &a);
        // The same rows read as a [len, 2] transpose's columns... as a strided row of stride 2 over a copy.
        var interleaved: [2 * len]f32 = undefined;
        for (0..len) |i| {
            interleaved[2 * i] = a[i];
            interleaved[2 * i + 1] = a[len + i];
        }
        softmaxOnce(op, 0, &.{ 2, len }, &.{ 1, 2 }, &strided, &interleaved);
        for (0..len) |i| {
            const want = exact[i];
            const bound = math.fast_bounds.softmax.ulps * @abs(want) * 0x1p-23 + 0x1p-149;
            try testing.expect(@abs(fast[i] - want) <= bound);
            try testing.expectEqual(fast[i], strided[2 * i]);
            try testing.expect(std.math.isNan(fast[len + i]) and std.math.isNan(exact[len + i]));
        }
    }
}

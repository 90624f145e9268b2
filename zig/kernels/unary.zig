//! Element-wise unary kernels. neg, abs, relu and sqrt are single IEEE f32 operations in both modes. The
//! transcendental ones (exp, log, tanh, sigmoid, gelu, erf) are, in exact mode, the f64 functions of
//! `math.zig` rounded once (the same bits on every ISA and thread count), and in fast mode its f32 vector
//! approximations. Rows run as in `elementwise.zig`: vectors straight from memory when both inner strides
//! are 1, the same vector function on gathered lanes otherwise.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const math = @import("math.zig");
const ew = @import("elementwise.zig");
const Rows = @import("rows.zig").Rows;

const lanes = ew.lanes;
const V = ew.V;

/// Unary operations, numbered by the op table (`zig/kernels/ops.zig`, generated from src/core/op_table.ts).
pub const UnaryOp = @import("ops.zig").UnaryOp;

/// Whether exact and fast mode compute `op` differently.
fn isTranscendental(op: UnaryOp) bool {
    return switch (op) {
        .neg, .abs, .relu, .sqrt => false,
        else => true,
    };
}

/// The exact function of `op` on f64 lanes (one algorithm for every ISA and vector width).
inline fn exactV(comptime op: UnaryOp, x: @Vector(lanes, f64)) @Vector(lanes, f64) {
    return switch (op) {
        .exp => math.expV(lanes, x),
        .log => math.logV(lanes, x),
        .tanh => math.tanhV(lanes, x),
        .sigmoid => math.sigmoidV(lanes, x),
        .gelu => math.geluV(lanes, x),
        .erf => math.erfV(lanes, x),
        else => comptime unreachable,
    };
}

/// One element in exact mode, for the tests.
fn exactScalar(comptime op: UnaryOp, x: f32) f32 {
    const xf: f64 = x;
    return @floatCast(switch (op) {
        .exp => math.exp(xf),
        .log => math.log(xf),
        .tanh => math.tanh(xf),
        .sigmoid => math.sigmoid(xf),
        .gelu => math.gelu(xf),
        .erf => math.erf(xf),
        else => comptime unreachable,
    });
}

inline fn applyUnary(comptime op: UnaryOp, comptime exact: bool, x: V) V {
    const zero: V = @splat(0);
    switch (op) {
        .neg => return -x,
        .abs => return @abs(x),
        // relu(NaN) = NaN and relu(-0) = +0.
        .relu => return @select(f32, x > zero, x, @select(f32, x != x, x, zero)),
        .sqrt => return @sqrt(x),
        else => {},
    }
    if (exact) return @floatCast(exactV(op, @floatCast(x)));
    return switch (op) {
        .exp => math.expFast(lanes, x),
        .log => math.logFast(lanes, x),
        .tanh => math.tanhFast(lanes, x),
        .sigmoid => math.sigmoidFast(lanes, x),
        .gelu => math.geluFast(lanes, x),
        .erf => math.erfFast(lanes, x),
        else => comptime unreachable,
    };
}

fn UnarySpan(comptime op: UnaryOp, comptime exact: bool) type {
    return struct {
        out: [*]f32,
        a: [*]const f32,
        inner: [2]isize,

        pub fn span(self: *const @This(), offsets: [2]isize, begin: usize, end: usize) void {
            const s = self.inner;
            const b_at: isize = @intCast(begin);
            const out = ew.at([*]f32, self.out, offsets[0] + b_at * s[0]);
            const a = ew.at([*]const f32, self.a, offsets[1] + b_at * s[1]);
            const n = end - begin;
            var i: usize = 0;
            if (s[0] == 1 and s[1] == 1) {
                while (i + lanes <= n) : (i += lanes) out[i..][0..lanes].* = applyUnary(op, exact, a[i..][0..lanes].*);
            }
            while (i < n) : (i += lanes) {
                const count = @min(lanes, n - i);
                const ii: isize = @intCast(i);
                const x = ew.gather(f32, ew.at([*]const f32, a, ii * s[1]), s[1], count, 0);
                ew.scatter(f32, ew.at([*]f32, out, ii * s[0]), s[0], count, applyUnary(op, exact, x));
            }
        }
    };
}

/// `zt_unary_f32`: out = op(a), `args.op` a `UnaryOp`, `args.mode` 1 for exact. Assumes a validated shape.
pub fn unaryF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8) callconv(.c) void {
    std.debug.assert(args.op >= 0 and args.op <= @intFromEnum(UnaryOp.erf));
    const rows = Rows(2).init(args.shapeSlice(), .{ &args.operands[0], &args.operands[1] });
    switch (@as(UnaryOp, @enumFromInt(args.op))) {
        inline else => |op| {
            if (isTranscendental(op) and ew.isExact(args)) {
                runUnary(op, true, rt, args, &rows, out, a);
            } else {
                runUnary(op, false, rt, args, &rows, out, a);
            }
        },
    }
}

fn runUnary(comptime op: UnaryOp, comptime exact: bool, rt: *const table.Runtime, args: *const abi.ArgBlock, rows: *const Rows(2), out: [*]u8, a: [*]const u8) void {
    const visit: UnarySpan(op, exact) = .{
        .out = @ptrCast(@alignCast(out)),
        .a = @ptrCast(@alignCast(a)),
        .inner = rows.innerStrides(),
    };
    // Transcendental elements cost tens of operations: they pay for a thread sooner.
    const min_elements: usize = if (isTranscendental(op)) ew.parallel_min_elements / 8 else ew.streaming_min_elements;
    ew.runSpans(rt, args, rows, &visit, min_elements, 64);
}

// --- tests ---

const testing = std.testing;

fn sameBits(x: f32, y: f32) bool {
    return @as(u32, @bitCast(x)) == @as(u32, @bitCast(y)) or (std.math.isNan(x) and std.math.isNan(y));
}

fn unaryOnce(op: UnaryOp, mode: i32, threads: i32, x: []const f32, out: []f32, stride: i32) void {
    const n: i32 = @intCast(@divExact(x.len, @as(usize, @intCast(stride))));
    const args = ew.testArgs(&.{n}, &.{ &.{stride}, &.{stride} }, &.{ 0, 0 }, @intFromEnum(op), mode, threads);
    unaryF32(&ew.test_runtime, &args, @ptrCast(out.ptr), @ptrCast(x.ptr));
}

test "exact mode rounds the f64 functions once, on every path" {
    var x: [3 * 67]f32 = undefined;
    for (&x, 0..) |*v, i| v.* = @as(f32, @floatFromInt(i)) * 0.061 - 6;
    inline for (.{ UnaryOp.exp, .log, .tanh, .sigmoid, .gelu, .erf }) |op| {
        var contiguous: [3 * 67]f32 = undefined;
        var strided: [3 * 67]f32 = @splat(7);
        unaryOnce(op, 1, 1, &x, &contiguous, 1);
        unaryOnce(op, 1, 1, &x, &strided, 3);
        for (0..x.len) |i| {
            const want = exactScalar(op, x[i]);
            try testing.expect(sameBits(want, contiguous[i]));
            if (i % 3 == 0) {
                try testing.expect(sameBits(contiguous[i], strided[i / 3 * 3]));
            } else {
                try testing.expectEqual(@as(f32, 7), strided[i]);
            }
        }
    }
}

test "fast mode gives the same value whether an element sits in a vector or in the tail" {
    var x: [lanes * 3 + 3]f32 = undefined;
    for (&x, 0..) |*v, i| v.* = @as(f32, @floatFromInt(i)) * 0.31 - 4;
    inline for (.{ UnaryOp.exp, .tanh, .gelu, .erf }) |op| {
        var whole: [x.len]f32 = undefined;
        unaryOnce(op, 0, 1, &x, &whole, 1);
        for (0..x.len) |i| {
            var one: [1]f32 = undefined;
            unaryOnce(op, 0, 1, x[i..][0..1], &one, 1);
            try testing.expectEqual(whole[i], one[0]);
        }
    }
}

test "relu, abs, neg and sqrt handle the zeros and NaN" {
    const nan = std.math.nan(f32);
    const x = [_]f32{ -0.0, 0.0, -2, 3, nan, 4 };
    var out: [6]f32 = undefined;
    unaryOnce(.relu, 0, 1, &x, &out, 1);
    try testing.expect(!std.math.signbit(out[0]) and out[0] == 0 and out[2] == 0 and out[3] == 3 and std.math.isNan(out[4]));
    unaryOnce(.abs, 1, 1, &x, &out, 1);
    try testing.expect(!std.math.signbit(out[0]) and out[2] == 2);
    unaryOnce(.neg, 1, 1, &x, &out, 1);
    try testing.expect(!std.math.signbit(out[0]) and std.math.signbit(out[1]) and out[2] == 2);
    unaryOnce(.sqrt, 0, 1, &x, &out, 1);
    try testing.expect(std.math.signbit(out[0]) and std.math.isNan(out[2]) and out[5] == 2);
}

test "a split over tasks gives the bits of one thread" {
    const n = 70_001;
    const x = try testing.allocator.alloc(f32, n);
    defer testing.allocator.free(x);
    const one = try testing.allocator.alloc(f32, n);
    defer testing.allocator.free(one);
    const four = try testing.allocator.alloc(f32, n);
    defer testing.allocator.free(four);
    for (x, 0..) |*v, i| v.* = @as(f32, @floatFromInt(i % 977)) * 0.013 - 6;
    unaryOnce(.tanh, 1, 1, x, one, 1);
    unaryOnce(.tanh, 1, 4, x, four, 1);
    try testing.expectEqualSlices(f32, one, four);
}

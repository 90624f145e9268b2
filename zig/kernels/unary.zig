//! Element-wise unary kernels. neg, abs, relu and sqrt are single IEEE f32 operations in both modes. The
//! transcendental ones (exp, log, tanh, sigmoid, gelu in its two forms, erf) are, in exact mode, the f64 functions of
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
/// The variant's full vector width (zmm on AVX-512, where `ew.lanes` is a ymm): the fast transcendental
/// functions of contiguous rows run at it, each lane's result the same at either width.
const wide = @import("gemm.zig").vector_bytes / @sizeOf(f32);

/// Unary operations, numbered by the op table (`zig/kernels/ops.zig`, generated from src/core/op_table.ts).
pub const UnaryOp = @import("ops.zig").UnaryOp;

/// Whether exact and fast mode compute `op` differently.
fn isTranscendental(op: UnaryOp) bool {
    return switch (op) {
        .neg, .abs, .relu, .sqrt, .leaky_relu, .clamp, .sign, .reciprocal, .rsqrt, .square => false,
        else => true,
    };
}

/// The exact function of `op` on f64 lanes (one algorithm for every ISA and vector width).
inline fn exactV(comptime op: UnaryOp, x: @Vector(lanes, f64), p: Params) @Vector(lanes, f64) {
    return switch (op) {
        .log1p => math.log1pV(lanes, x),
        .expm1 => math.expm1V(lanes, x),
        .silu => math.siluV(lanes, x),
        .softplus => math.softplusV(lanes, @floatCast(x), p.a, p.b),
        .elu => math.eluV(lanes, x, p.a),
        .exp => math.expV(lanes, x),
        .log => math.logV(lanes, x),
        .tanh => math.tanhV(lanes, x),
        .sigmoid => math.sigmoidV(lanes, x),
        .gelu => math.geluV(lanes, x),
        .gelu_erf => math.geluErfV(lanes, x),
        .erf => math.erfV(lanes, x),
        else => comptime unreachable,
    };
}

/// One element in exact mode, for the tests.
fn exactScalar(comptime op: UnaryOp, x: f32, p: Params) f32 {
    const xf: f64 = x;
    return @floatCast(switch (op) {
        .log1p, .expm1, .silu, .softplus, .elu => exactV(op, @splat(xf), p)[0],
        .exp => math.exp(xf),
        .log => math.log(xf),
        .tanh => math.tanh(xf),
        .sigmoid => math.sigmoid(xf),
        .gelu => math.gelu(xf),
        .gelu_erf => math.geluErf(xf),
        .erf => math.erf(xf),
        else => comptime unreachable,
    });
}

/// The parameters of the parameterized ops, from the argument block's floats 0 and 1 (f32 values): softplus
/// beta and threshold, leaky_relu's negative slope, elu's alpha, clamp's lower and upper bound.
pub const Params = struct { a: f32 = 0, b: f32 = 0 };

inline fn applyUnary(comptime op: UnaryOp, comptime exact: bool, x: V, p: Params) V {
    const zero: V = @splat(0);
    const one: V = @splat(1);
    switch (op) {
        // x > 0 ? x : x·slope, as PyTorch (NaN stays NaN).
        .leaky_relu => return @select(f32, x > zero, x, x * @as(V, @splat(p.a))),
        // m = x < lo ? lo : x, then hi < m ? hi : m (PyTorch's): NaN stays NaN, -0 stays -0, hi where lo > hi.
        .clamp => {
            const lo: V = @splat(p.a);
            const hi: V = @splat(p.b);
            const m = @select(f32, x < lo, lo, x);
            return @select(f32, hi < m, hi, m);
        },
        // ±1, and 0 for ±0 and NaN (PyTorch's sign).
        .sign => return @select(f32, x > zero, one, @select(f32, x < zero, -one, zero)),
        .reciprocal => return one / x,
        .rsqrt => return one / @sqrt(x),
        .square => return x * x,
        .neg => return -x,
        .abs => return @abs(x),
        // relu(NaN) = NaN and relu(-0) = +0.
        .relu => return @select(f32, x > zero, x, @select(f32, x != x, x, zero)),
        .sqrt => return @sqrt(x),
        else => {},
    }
    if (exact) return @floatCast(exactV(op, @floatCast(x), p));
    return fastV(op, lanes, x, p);
}

/// The fast function of a transcendental `op` on `n` lanes.
inline fn fastV(comptime op: UnaryOp, comptime n: usize, x: @Vector(n, f32), p: Params) @Vector(n, f32) {
    return switch (op) {
        .log1p => math.log1pFast(n, x),
        .expm1 => math.expm1Fast(n, x),
        .silu => math.siluFast(n, x),
        .softplus => math.softplusFast(n, x, p.a, p.b),
        .elu => math.eluFast(n, x, p.a),
        .exp => math.expFast(n, x),
        .log => math.logFast(n, x),
        .tanh => math.tanhFast(n, x),
        .sigmoid => math.sigmoidFast(n, x),
        .gelu => math.geluFast(n, x),
        .gelu_erf => math.geluErfFast(n, x),
        .erf => math.erfFast(n, x),
        else => comptime unreachable,
    };
}

fn UnarySpan(comptime op: UnaryOp, comptime exact: bool) type {
    return struct {
        out: [*]f32,
        a: [*]const f32,
        inner: [2]isize,
        params: Params,

        pub fn span(self: *const @This(), offsets: [2]isize, begin: usize, end: usize) void {
            const s = self.inner;
            const b_at: isize = @intCast(begin);
            const out = ew.at([*]f32, self.out, offsets[0] + b_at * s[0]);
            const a = ew.at([*]const f32, self.a, offsets[1] + b_at * s[1]);
            const n = end - begin;
            var i: usize = 0;
            if (s[0] == 1 and s[1] == 1) {
                if (!exact and comptime isTranscendental(op)) {
                    while (i + wide <= n) : (i += wide) out[i..][0..wide].* = fastV(op, wide, a[i..][0..wide].*, self.params);
                }
                while (i + lanes <= n) : (i += lanes) out[i..][0..lanes].* = applyUnary(op, exact, a[i..][0..lanes].*, self.params);
            }
            while (i < n) : (i += lanes) {
                const count = @min(lanes, n - i);
                const ii: isize = @intCast(i);
                const x = ew.gather(f32, ew.at([*]const f32, a, ii * s[1]), s[1], count, 0);
                ew.scatter(f32, ew.at([*]f32, out, ii * s[0]), s[0], count, applyUnary(op, exact, x, self.params));
            }
        }
    };
}

/// `zt_unary_f32`: out = op(a), `args.op` a `UnaryOp`, `args.mode` 1 for exact. Assumes a validated shape.
pub fn unaryF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8) callconv(.c) void {
    std.debug.assert(args.op >= 0 and args.op < @typeInfo(UnaryOp).@"enum".fields.len);
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
        .params = .{ .a = @floatCast(args.floats[0]), .b = @floatCast(args.floats[1]) },
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
    unaryWith(op, mode, threads, x, out, stride, .{});
}

fn unaryWith(op: UnaryOp, mode: i32, threads: i32, x: []const f32, out: []f32, stride: i32, p: Params) void {
    const n: i32 = @intCast(@divExact(x.len, @as(usize, @intCast(stride))));
    var args = ew.testArgs(&.{n}, &.{ &.{stride}, &.{stride} }, &.{ 0, 0 }, @intFromEnum(op), mode, threads);
    args.floats[0] = p.a;
    args.floats[1] = p.b;
    unaryF32(&ew.test_runtime, &args, @ptrCast(out.ptr), @ptrCast(x.ptr));
}

test "exact mode rounds the f64 functions once, on every path" {
    var x: [3 * 67]f32 = undefined;
    for (&x, 0..) |*v, i| v.* = @as(f32, @floatFromInt(i)) * 0.061 - 6;
    inline for (.{ UnaryOp.exp, .log, .tanh, .sigmoid, .gelu, .gelu_erf, .erf, .log1p, .expm1, .silu, .softplus, .elu }) |op| {
        var contiguous: [3 * 67]f32 = undefined;
        var strided: [3 * 67]f32 = @splat(7);
        unaryOnce(op, 1, 1, &x, &contiguous, 1);
        unaryOnce(op, 1, 1, &x, &strided, 3);
        for (0..x.len) |i| {
            const want = exactScalar(op, x[i], .{});
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
    inline for (.{ UnaryOp.exp, .tanh, .gelu, .gelu_erf, .erf }) |op| {
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

test "the parameterized ops read their parameters, and sign, clamp and leaky_relu handle zeros and NaN" {
    const nan = std.math.nan(f32);
    const x = [_]f32{ -0.0, 0.0, -2, 3, nan, 0.5 };
    var out: [6]f32 = undefined;
    unaryWith(.sign, 0, 1, &x, &out, 1, .{});
    try testing.expectEqualSlices(f32, &.{ 0, 0, -1, 1, 0, 1 }, &out);
    unaryWith(.clamp, 1, 1, &x, &out, 1, .{ .a = -1, .b = 1 });
    try testing.expect(std.math.signbit(out[0]) and out[2] == -1 and out[3] == 1 and std.math.isNan(out[4]) and out[5] == 0.5);
    unaryWith(.clamp, 1, 1, &x, &out, 1, .{ .a = 2, .b = 1 });
    try testing.expectEqual(@as(f32, 1), out[2]);
    unaryWith(.leaky_relu, 0, 1, &x, &out, 1, .{ .a = 0.25 });
    try testing.expect(std.math.signbit(out[0]) and out[2] == -0.5 and out[3] == 3 and std.math.isNan(out[4]));
    unaryWith(.elu, 1, 1, &x, &out, 1, .{ .a = 2 });
    try testing.expect(out[3] == 3 and sameBits(out[2], @floatCast(2 * math.expm1(-2))));
    unaryWith(.softplus, 1, 1, &x, &out, 1, .{ .a = 2, .b = 5 });
    try testing.expect(out[3] == 3 and sameBits(out[2], @floatCast(math.log(1 + math.exp(-4)) / 2)));
}

//! Reductions over the trailing axes: sum, mean, max, min and argmax. The caller moves the reduced axes to
//! the end (a view), so the iteration shape is [kept..., reduced...]; operand 0 (the output) has strides for
//! the kept axes, operand 1 for all of them, and `args.ints[0]` says how many trailing axes are reduced.
//!
//! Meaning (the TypeScript reference's): sum and mean add the reduced elements in f64 in ascending
//! row-major order and round once (mean divides the f64 sum by the count first); max and min keep the first
//! of equal values and return the first NaN; argmax returns the row-major position (within the reduced
//! axes) of the first maximum, or of the first NaN. An empty sum is 0 and an empty mean NaN; the binding
//! refuses empty max, min and argmax. Every output is computed by one thread in that order, in both modes,
//! except that fast-mode sums of rows that step by one add in vector lanes (still in f64).
//!
//! When the kept axes step by one in the input (a reduction over a leading axis, say) a vector's worth of
//! outputs is reduced at once, lane by lane, in the same order as the scalar loop: the same bits, faster.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const ew = @import("elementwise.zig");
const Rows = @import("rows.zig").Rows;

const lanes = ew.lanes;
const V = ew.V;
const V64 = @Vector(lanes, f64);

/// Reductions, numbered by the op table (`zig/kernels/ops.zig`, generated from src/core/op_table.ts).
pub const ReduceOp = @import("ops.zig").ReduceOp;

/// Where the reduced elements of one output lie: rows of `len` elements `stride` apart, at the offsets
/// `rows` produces from the output's base offset.
const Inner = struct {
    rows: *const Rows(1),
    len: usize,
    stride: isize,
    count: usize,
};

// --- one output at a time ---

fn SumRow(comptime exact: bool) type {
    return struct {
        a: [*]const f32,
        inner: *const Inner,
        sum: f64 = 0,

        pub fn row(self: *@This(), offsets: [1]isize) void {
            const p = ew.at([*]const f32, self.a, offsets[0]);
            const len = self.inner.len;
            var s = self.sum;
            if (!exact and self.inner.stride == 1 and len >= 4 * lanes) {
                var acc: [4]V64 = @splat(@splat(0));
                var i: usize = 0;
                while (i + 4 * lanes <= len) : (i += 4 * lanes) {
                    inline for (0..4) |k| acc[k] += @as(V64, @floatCast(@as(V, p[i + k * lanes ..][0..lanes].*)));
                }
                s += @reduce(.Add, (acc[0] + acc[1]) + (acc[2] + acc[3]));
                while (i < len) : (i += 1) s += p[i];
            } else {
                var o: isize = 0;
                for (0..len) |_| {
                    s += ew.at([*]const f32, p, o)[0];
                    o += self.inner.stride;
                }
            }
            self.sum = s;
        }
    };
}

/// The first maximum (or minimum), or the first NaN; vectors find the value when the row steps by one and
/// the scalar loop settles the cases where the vector's answer could differ (a NaN, or a zero of either sign).
fn ExtremeRow(comptime is_max: bool) type {
    return struct {
        a: [*]const f32,
        inner: *const Inner,
        best: f32 = if (is_max) -std.math.inf(f32) else std.math.inf(f32),
        found_nan: bool = false,

        inline fn better(v: f32, best: f32) bool {
            return if (is_max) v > best else v < best;
        }

        fn scalar(self: *@This(), p: [*]const f32, len: usize, stride: isize) void {
            var o: isize = 0;
            for (0..len) |_| {
                const v = ew.at([*]const f32, p, o)[0];
                if (v != v) {
                    self.best = v;
                    self.found_nan = true;
                    return;
                }
                if (better(v, self.best)) self.best = v;
                o += stride;
            }
        }

        pub fn row(self: *@This(), offsets: [1]isize) void {
            if (self.found_nan) return;
            const p = ew.at([*]const f32, self.a, offsets[0]);
            const len = self.inner.len;
            if (self.inner.stride != 1 or len < 2 * lanes) return self.scalar(p, len, self.inner.stride);
            var acc: V = @splat(self.best);
            var nan = @as(@Vector(lanes, bool), @splat(false));
            var i: usize = 0;
            while (i + lanes <= len) : (i += lanes) {
                const v: V = p[i..][0..lanes].*;
                nan = @select(bool, v != v, v != v, nan);
                acc = @select(f32, if (is_max) v > acc else v < acc, v, acc);
            }
            var value = if (is_max) @reduce(.Max, acc) else @reduce(.Min, acc);
            while (i < len) : (i += 1) {
                if (p[i] != p[i]) nan[0] = true;
                if (better(p[i], value)) value = p[i];
            }
            if (@reduce(.Or, nan) or value == 0) return self.scalar(p, len, 1);
            if (better(value, self.best)) self.best = value;
        }
    };
}

const ArgMaxRow = struct {
    a: [*]const f32,
    inner: *const Inner,
    best: f32 = -std.math.inf(f32),
    index: i64 = 0,
    position: i64 = 0,
    done: bool = false,

    pub fn row(self: *@This(), offsets: [1]isize) void {
        if (self.done) return;
        const p = ew.at([*]const f32, self.a, offsets[0]);
        var o: isize = 0;
        for (0..self.inner.len) |_| {
            const v = ew.at([*]const f32, p, o)[0];
            if (v != v) {
                self.index = self.position;
                self.done = true;
                return;
            }
            if (v > self.best) {
                self.best = v;
                self.index = self.position;
            }
            self.position += 1;
            o += self.inner.stride;
        }
    }
};

fn Result(comptime op: ReduceOp) type {
    return if (op.writesI64()) i64 else f32;
}

fn reduceOne(comptime op: ReduceOp, comptime exact: bool, a: [*]const f32, inner: *const Inner) Result(op) {
    const base = ew.at([*]const f32, a, 0);
    switch (op) {
        .sum, .mean => {
            var visit: SumRow(exact) = .{ .a = base, .inner = inner };
            inner.rows.forEachRow(0, inner.rows.rowCount(), &visit);
            const value = if (op == .mean) visit.sum / @as(f64, @floatFromInt(inner.count)) else visit.sum;
            return @floatCast(value);
        },
        .max, .min => {
            var visit: ExtremeRow(op == .max) = .{ .a = base, .inner = inner };
            inner.rows.forEachRow(0, inner.rows.rowCount(), &visit);
            return visit.best;
        },
        .arg_max => {
            var visit: ArgMaxRow = .{ .a = base, .inner = inner };
            inner.rows.forEachRow(0, inner.rows.rowCount(), &visit);
            return visit.index;
        },
    }
}

// --- a vector of outputs at a time ---

/// Vectors of neighbouring outputs reduced together: a strip of `max_groups * lanes` outputs reads whole
/// runs of its input rows instead of one vector per row.
const max_groups = 16;

/// Reduces `groups` vectors of neighbouring outputs whose inputs are neighbours too, each lane in the scalar
/// order.
fn GroupRow(comptime op: ReduceOp) type {
    const init: f32 = if (op == .max) -std.math.inf(f32) else std.math.inf(f32);
    return struct {
        a: [*]const f32,
        inner: *const Inner,
        groups: usize,
        sum: [max_groups]V64 = @splat(@splat(0)),
        best: [max_groups]V = @splat(@splat(init)),

        pub fn row(self: *@This(), offsets: [1]isize) void {
            var o = offsets[0];
            for (0..self.inner.len) |_| {
                const p = ew.at([*]const f32, self.a, o);
                for (0..self.groups) |g| {
                    const v: V = p[g * lanes ..][0..lanes].*;
                    switch (op) {
                        .sum, .mean => self.sum[g] += @as(V64, @floatCast(v)),
                        .max, .min => {
                            const best = self.best[g];
                            const take = if (op == .max) v > best else v < best;
                            self.best[g] = @select(f32, best != best, best, @select(f32, v != v, v, @select(f32, take, v, best)));
                        },
                        .arg_max => comptime unreachable,
                    }
                }
                o += self.inner.stride;
            }
        }
    };
}

/// Reduces `groups * lanes` neighbouring outputs starting at input `a` and stores them `out_stride` apart.
fn reduceGroups(comptime op: ReduceOp, a: [*]const f32, inner: *const Inner, groups: usize, out: [*]f32, out_stride: isize) void {
    var visit: GroupRow(op) = .{ .a = a, .inner = inner, .groups = groups };
    inner.rows.forEachRow(0, inner.rows.rowCount(), &visit);
    for (0..groups) |g| {
        const values: V = switch (op) {
            .sum => @floatCast(visit.sum[g]),
            .mean => @floatCast(visit.sum[g] / @as(V64, @splat(@floatFromInt(inner.count)))),
            .max, .min => visit.best[g],
            .arg_max => comptime unreachable,
        };
        const at: isize = @intCast(g * lanes);
        ew.scatter(f32, ew.at([*]f32, out, at * out_stride), out_stride, lanes, values);
    }
}

fn ReduceSpan(comptime op: ReduceOp, comptime exact: bool) type {
    const T = Result(op);
    return struct {
        out: [*]T,
        a: [*]const f32,
        inner: *const Inner,
        kept: [2]isize,

        pub fn span(self: *const @This(), offsets: [2]isize, begin: usize, end: usize) void {
            var j = begin;
            if (op != .arg_max and self.kept[1] == 1) {
                while (j + lanes <= end) {
                    const groups: usize = @min(max_groups, (end - j) / lanes);
                    const jj: isize = @intCast(j);
                    const out = ew.at([*]T, self.out, offsets[0] + jj * self.kept[0]);
                    reduceGroups(op, ew.at([*]const f32, self.a, offsets[1] + jj), self.inner, groups, out, self.kept[0]);
                    j += groups * lanes;
                }
            }
            while (j < end) : (j += 1) {
                const jj: isize = @intCast(j);
                const a = ew.at([*]const f32, self.a, offsets[1] + jj * self.kept[1]);
                ew.at([*]T, self.out, offsets[0] + jj * self.kept[0])[0] = reduceOne(op, exact, a, self.inner);
            }
        }
    };
}

/// `zt_reduce_f32`: reduces the trailing `args.ints[0]` axes of `args.shape`, `args.op` a `ReduceOp`
/// (argmax writes i64). Assumes a validated shape, and a non-empty reduction for max, min and argmax.
pub fn reduceF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8) callconv(.c) void {
    std.debug.assert(args.op >= 0 and args.op <= @intFromEnum(ReduceOp.arg_max));
    const rank: usize = @intCast(args.rank);
    const reduced: usize = @intCast(args.ints[0]);
    std.debug.assert(reduced <= rank);
    const kept = rank - reduced;
    const shape = args.shapeSlice();
    var inner_operand: abi.Operand = .{ .offset = 0, .strides = @splat(0) };
    @memcpy(inner_operand.strides[0..reduced], args.operands[1].strides[kept..rank]);
    const inner_rows = Rows(1).init(shape[kept..], .{&inner_operand});
    var count: usize = 1;
    for (shape[kept..]) |extent| count *= @intCast(extent);
    const inner: Inner = .{ .rows = &inner_rows, .len = inner_rows.rowLength(), .stride = inner_rows.innerStrides()[0], .count = count };
    std.debug.assert(count > 0 or args.op <= @intFromEnum(ReduceOp.mean));
    const outer = Rows(2).init(shape[0..kept], .{ &args.operands[0], &args.operands[1] });
    switch (@as(ReduceOp, @enumFromInt(args.op))) {
        inline else => |op| {
            if (op == .sum or op == .mean) {
                if (ew.isExact(args)) runReduce(op, true, rt, args, &outer, &inner, out, a) else runReduce(op, false, rt, args, &outer, &inner, out, a);
            } else {
                runReduce(op, true, rt, args, &outer, &inner, out, a);
            }
        },
    }
}

fn runReduce(comptime op: ReduceOp, comptime exact: bool, rt: *const table.Runtime, args: *const abi.ArgBlock, outer: *const Rows(2), inner: *const Inner, out: [*]u8, a: [*]const u8) void {
    const kept = outer.innerStrides();
    const visit: ReduceSpan(op, exact) = .{
        .out = @ptrCast(@alignCast(out)),
        .a = @ptrCast(@alignCast(a)),
        .inner = inner,
        .kept = kept,
    };
    const min_outputs = ew.parallel_min_elements / @max(1, inner.count);
    ew.runSpans(rt, args, outer, &visit, @max(2, min_outputs), if (kept[1] == 1) lanes else 1);
}

// --- tests ---

const testing = std.testing;

fn reduceOnce(op: ReduceOp, mode: i32, threads: i32, shape: []const i32, reduced: i32, out_strides: []const i32, a_strides: []const i32, out: [*]u8, a: []const f32) void {
    var args = ew.testArgs(shape, &.{ out_strides, a_strides }, &.{ 0, 0 }, @intFromEnum(op), mode, threads);
    args.ints[0] = reduced;
    reduceF32(&ew.test_runtime, &args, out, @ptrCast(a.ptr));
}

test "sum adds in f64 in ascending order and rounds once" {
    // 2^24 + 1 + 1 in f32 steps would stay 2^24; in f64 it reaches 2^24 + 2.
    const a = [_]f32{ 0x1p24, 1, 1, -3, 0.5 };
    var out: [1]f32 = undefined;
    reduceOnce(.sum, 1, 1, &.{5}, 1, &.{}, &.{1}, @ptrCast(&out), &a);
    try testing.expectEqual(@as(f32, 0x1p24), out[0]);
    reduceOnce(.mean, 1, 1, &.{5}, 1, &.{}, &.{1}, @ptrCast(&out), &a);
    try testing.expectEqual(@as(f32, @floatCast((0x1p24 - 0.5) / 5.0)), out[0]);
    reduceOnce(.sum, 1, 1, &.{0}, 1, &.{}, &.{1}, @ptrCast(&out), &a);
    try testing.expectEqual(@as(f32, 0), out[0]);
    reduceOnce(.mean, 1, 1, &.{0}, 1, &.{}, &.{1}, @ptrCast(&out), &a);
    try testing.expect(std.math.isNan(out[0]));
}

test "max, min and argmax take the first of equals and the first NaN" {
    const nan = std.math.nan(f32);
    var a: [64]f32 = @splat(-1);
    a[10] = -0.0;
    a[20] = 0.0;
    a[30] = nan;
    a[40] = 5;
    var out: [1]f32 = undefined;
    var index: [1]i64 = undefined;
    reduceOnce(.max, 0, 1, &.{30}, 1, &.{}, &.{1}, @ptrCast(&out), &a);
    try testing.expect(out[0] == 0 and std.math.signbit(out[0]));
    reduceOnce(.arg_max, 0, 1, &.{30}, 1, &.{}, &.{1}, @ptrCast(&index), &a);
    try testing.expectEqual(@as(i64, 10), index[0]);
    reduceOnce(.max, 0, 1, &.{64}, 1, &.{}, &.{1}, @ptrCast(&out), &a);
    try testing.expect(std.math.isNan(out[0]));
    reduceOnce(.arg_max, 0, 1, &.{64}, 1, &.{}, &.{1}, @ptrCast(&index), &a);
    try testing.expectEqual(@as(i64, 30), index[0]);
    reduceOnce(.min, 0, 1, &.{ 2, 15 }, 2, &.{}, &.{ 15, 1 }, @ptrCast(&out), &a);
    try testing.expectEqual(@as(f32, -1), out[0]);
}

test "a leading-axis reduction in vector groups gives the scalar loop's bits" {
    const rows = 37;
    const cols = 19 * lanes + 5;
    var a: [rows * cols]f32 = undefined;
    for (&a, 0..) |*v, i| v.* = @as(f32, @floatFromInt((i * 7919) % 1000)) * 0.001 - 0.5 + if (i % 97 == 0) @as(f32, 1e7) else 0;
    a[5 * cols + 3] = std.math.nan(f32);
    inline for (.{ ReduceOp.sum, .mean, .max, .min }) |op| {
        var grouped: [cols]f32 = undefined;
        var scalar: [cols]f32 = undefined;
        // Reduce axis 0: the view [cols, rows] with strides [1, cols]; kept stride 1 takes the group path.
        reduceOnce(op, @intFromBool(op != .sum), 1, &.{ cols, rows }, 1, &.{1}, &.{ 1, cols }, @ptrCast(&grouped), &a);
        for (0..cols) |c| {
            reduceOnce(op, 1, 1, &.{rows}, 1, &.{}, &.{cols}, @ptrCast(scalar[c..].ptr), a[c..]);
        }
        for (grouped, scalar) |g, s| {
            try testing.expect(@as(u32, @bitCast(g)) == @as(u32, @bitCast(s)) or (std.math.isNan(g) and std.math.isNan(s)));
        }
    }
}

//! Reductions over the trailing axes: sum, mean, max, min, argmax, argmin and prod. The caller moves the reduced axes to
//! the end (a view), so the iteration shape is [kept..., reduced...]; operand 0 (the output) has strides for
//! the kept axes, operand 1 for all of them, and `args.ints[0]` says how many trailing axes are reduced.
//!
//! Meaning (the TypeScript reference's): sum and mean add the reduced elements in f64 in ascending
//! row-major order within blocks of `sum_block` elements, add the block sums in ascending order, and round
//! once (mean divides the f64 sum by the count first). The blocks are fixed by position alone, so a sum too
//! large for its outputs to keep the threads busy (a full sum) splits its blocks across threads and still
//! gives the same bits on every thread count. Max and min keep the first
//! of equal values and return the first NaN; argmax returns the row-major position (within the reduced
//! axes) of the first maximum, or of the first NaN, and argmin of the first minimum or NaN. Prod multiplies
//! in f64 in ascending row-major order and rounds once. An empty sum is 0, an empty product 1 and an empty
//! mean NaN; the binding refuses empty max, min, argmax and argmin. Every output is computed in that order, in both modes, except that
//! fast-mode sums of rows that step by one add in vector lanes (still in f64).
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

/// Elements of a sum per block: the blocks' sums are added in ascending order (see the file's doc).
pub const sum_block = 1 << 16;

/// Block sums one pass fills at most: a sum of more blocks is done in rounds of this many.
const max_round_blocks = 1024;

/// `s` plus `len` elements `stride` apart from `p`, in f64, ascending (in vector lanes in fast mode when
/// the elements are neighbours).
fn addRun(comptime exact: bool, p: [*]const f32, len: usize, stride: isize, s_in: f64) f64 {
    var s = s_in;
    if (!exact and stride == 1 and len >= 4 * lanes) {
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
            o += stride;
        }
    }
    return s;
}

/// Adds the elements at the reduced positions it is shown, in row-major order, to the sum of each one's
/// block: `sums[position / sum_block - first_block]`.
fn BlockSums(comptime exact: bool) type {
    return struct {
        a: [*]const f32,
        stride: isize,
        position: usize,
        first_block: usize,
        sums: [*]f64,

        pub fn span(self: *@This(), offsets: [1]isize, begin: usize, end: usize) void {
            var i = begin;
            while (i < end) {
                const block = self.position / sum_block;
                const take = @min(end - i, (block + 1) * sum_block - self.position);
                const p = ew.at([*]const f32, self.a, offsets[0] + @as(isize, @intCast(i)) * self.stride);
                const sum = &self.sums[block - self.first_block];
                sum.* = addRun(exact, p, take, self.stride, sum.*);
                i += take;
                self.position += take;
            }
        }
    };
}

/// The threads a sum may split its blocks across, when it is the only work being done.
const Parallel = struct { rt: *const table.Runtime, threads: i32 };

/// The f64 sum of one output's reduced elements (from `a`), block by block; the blocks of a round are
/// split across `parallel`'s threads when given.
fn sumOne(comptime exact: bool, a: [*]const f32, inner: *const Inner, parallel: ?Parallel) f64 {
    var total: f64 = 0;
    var sums: [max_round_blocks]f64 = undefined;
    var first: usize = 0;
    while (first < inner.count) {
        const end = @min(inner.count, first + max_round_blocks * sum_block);
        const first_block = first / sum_block;
        const blocks = (end - first + sum_block - 1) / sum_block;
        @memset(sums[0..blocks], 0);
        const Round = struct {
            a: [*]const f32,
            inner: *const Inner,
            first: usize,
            first_block: usize,
            sums: [*]f64,

            pub fn range(round: *const @This(), begin: usize, stop: usize) void {
                var visit: BlockSums(exact) = .{
                    .a = round.a,
                    .stride = round.inner.stride,
                    .position = round.first + begin,
                    .first_block = round.first_block,
                    .sums = round.sums,
                };
                ew.forEachSpan(round.inner.rows, round.first + begin, round.first + stop, &visit);
            }
        };
        const round: Round = .{ .a = a, .inner = inner, .first = first, .first_block = first_block, .sums = &sums };
        if (parallel) |pool| {
            // Tasks in whole blocks: each block is summed by one thread, in order.
            ew.parallelRange(pool.rt, pool.threads, end - first, ew.parallel_min_elements, sum_block, &round);
        } else {
            round.range(0, end - first);
        }
        for (sums[0..blocks]) |sum| total += sum;
        first = end;
    }
    return total;
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

/// The row-major position of the first maximum (or minimum), or of the first NaN.
fn ArgRow(comptime is_max: bool) type {
    return struct {
        a: [*]const f32,
        inner: *const Inner,
        best: f32 = if (is_max) -std.math.inf(f32) else std.math.inf(f32),
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
                if (if (is_max) v > self.best else v < self.best) {
                    self.best = v;
                    self.index = self.position;
                }
                self.position += 1;
                o += self.inner.stride;
            }
        }
    };
}

/// The product in f64, in ascending row-major order (rounded once by the caller).
const ProdRow = struct {
    a: [*]const f32,
    inner: *const Inner,
    product: f64 = 1,

    pub fn row(self: *@This(), offsets: [1]isize) void {
        const p = ew.at([*]const f32, self.a, offsets[0]);
        var o: isize = 0;
        for (0..self.inner.len) |_| {
            self.product *= ew.at([*]const f32, p, o)[0];
            o += self.inner.stride;
        }
    }
};

fn Result(comptime op: ReduceOp) type {
    return if (op.writesI64()) i64 else f32;
}

fn reduceOne(comptime op: ReduceOp, comptime exact: bool, a: [*]const f32, inner: *const Inner, parallel: ?Parallel) Result(op) {
    const base = ew.at([*]const f32, a, 0);
    switch (op) {
        .sum, .mean => {
            const sum = sumOne(exact, base, inner, parallel);
            const value = if (op == .mean) sum / @as(f64, @floatFromInt(inner.count)) else sum;
            return @floatCast(value);
        },
        .max, .min => {
            var visit: ExtremeRow(op == .max) = .{ .a = base, .inner = inner };
            inner.rows.forEachRow(0, inner.rows.rowCount(), &visit);
            return visit.best;
        },
        .arg_max, .arg_min => {
            var visit: ArgRow(op == .arg_max) = .{ .a = base, .inner = inner };
            inner.rows.forEachRow(0, inner.rows.rowCount(), &visit);
            return visit.index;
        },
        .prod => {
            var visit: ProdRow = .{ .a = base, .inner = inner };
            inner.rows.forEachRow(0, inner.rows.rowCount(), &visit);
            return @floatCast(visit.product);
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
        /// Sums of the finished blocks, and of the current one (`filled` elements so far).
        sum: [max_groups]V64 = @splat(@splat(0)),
        block: [max_groups]V64 = @splat(@splat(0)),
        filled: usize = 0,
        best: [max_groups]V = @splat(@splat(init)),

        pub fn row(self: *@This(), offsets: [1]isize) void {
            var o = offsets[0];
            for (0..self.inner.len) |_| {
                const p = ew.at([*]const f32, self.a, o);
                if ((op == .sum or op == .mean) and self.filled == sum_block) {
                    for (0..self.groups) |g| self.sum[g] += self.block[g];
                    self.block = @splat(@splat(0));
                    self.filled = 0;
                }
                self.filled += 1;
                for (0..self.groups) |g| {
                    const v: V = p[g * lanes ..][0..lanes].*;
                    switch (op) {
                        .sum, .mean => self.block[g] += @as(V64, @floatCast(v)),
                        .max, .min => {
                            const best = self.best[g];
                            const take = if (op == .max) v > best else v < best;
                            self.best[g] = @select(f32, best != best, best, @select(f32, v != v, v, @select(f32, take, v, best)));
                        },
                        .arg_max, .arg_min, .prod => comptime unreachable,
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
        const sum = visit.sum[g] + visit.block[g];
        const values: V = switch (op) {
            .sum => @floatCast(sum),
            .mean => @floatCast(sum / @as(V64, @splat(@floatFromInt(inner.count)))),
            .max, .min => visit.best[g],
            .arg_max, .arg_min, .prod => comptime unreachable,
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
        /// Set when the outputs are too few to share out: each one's blocks are split across threads.
        parallel: ?Parallel = null,

        pub fn span(self: *const @This(), offsets: [2]isize, begin: usize, end: usize) void {
            var j = begin;
            if ((op == .sum or op == .mean or op == .max or op == .min) and self.kept[1] == 1 and self.parallel == null) {
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
                ew.at([*]T, self.out, offsets[0] + jj * self.kept[0])[0] = reduceOne(op, exact, a, self.inner, self.parallel);
            }
        }
    };
}

/// The rows of a reduction, from the argument block: `inner` walks one output's reduced elements (from
/// offset 0 of the input), `outer` the outputs (operands 0 and 1 over the kept axes); `count` elements each.
pub const Shape = struct {
    inner: Rows(1),
    outer: Rows(2),
    count: usize,

    pub fn of(args: *const abi.ArgBlock) Shape {
        std.debug.assert(args.op >= 0 and args.op < @typeInfo(ReduceOp).@"enum".fields.len);
        const rank: usize = @intCast(args.rank);
        const reduced: usize = @intCast(args.ints[0]);
        std.debug.assert(reduced <= rank);
        const kept = rank - reduced;
        const shape = args.shapeSlice();
        var inner_operand: abi.Operand = .{ .offset = 0, .strides = @splat(0) };
        @memcpy(inner_operand.strides[0..reduced], args.operands[1].strides[kept..rank]);
        var count: usize = 1;
        for (shape[kept..]) |extent| count *= @intCast(extent);
        return .{
            .inner = Rows(1).init(shape[kept..], .{&inner_operand}),
            .outer = Rows(2).init(shape[0..kept], .{ &args.operands[0], &args.operands[1] }),
            .count = count,
        };
    }
};

/// `zt_reduce_f32`: reduces the trailing `args.ints[0]` axes of `args.shape`, `args.op` a `ReduceOp`
/// (argmax writes i64). Assumes a validated shape, and a non-empty reduction for max, min and argmax.
pub fn reduceF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8) callconv(.c) void {
    const shape = Shape.of(args);
    const inner: Inner = .{ .rows = &shape.inner, .len = shape.inner.rowLength(), .stride = shape.inner.innerStrides()[0], .count = shape.count };
    std.debug.assert(shape.count > 0 or args.op <= @intFromEnum(ReduceOp.mean) or args.op == @intFromEnum(ReduceOp.prod));
    const outer = &shape.outer;
    switch (@as(ReduceOp, @enumFromInt(args.op))) {
        inline else => |op| {
            if (op == .sum or op == .mean) {
                if (ew.isExact(args)) runReduce(op, true, rt, args, outer, &inner, out, a) else runReduce(op, false, rt, args, outer, &inner, out, a);
            } else {
                runReduce(op, true, rt, args, outer, &inner, out, a);
            }
        },
    }
}

fn runReduce(comptime op: ReduceOp, comptime exact: bool, rt: *const table.Runtime, args: *const abi.ArgBlock, outer: *const Rows(2), inner: *const Inner, out: [*]u8, a: [*]const u8) void {
    const kept = outer.innerStrides();
    var visit: ReduceSpan(op, exact) = .{
        .out = @ptrCast(@alignCast(out)),
        .a = @ptrCast(@alignCast(a)),
        .inner = inner,
        .kept = kept,
    };
    const outputs = outer.rowCount() * outer.rowLength();
    if ((op == .sum or op == .mean) and args.threads > 1 and outputs < args.threads and inner.count >= 2 * sum_block) {
        // Fewer outputs than threads: one output at a time, its blocks across the threads.
        visit.parallel = .{ .rt = rt, .threads = args.threads };
        ew.forEachSpan(outer, 0, outputs, &visit);
        return;
    }
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
    a[3] = -2;
    a[7] = -2;
    reduceOnce(.arg_min, 0, 1, &.{30}, 1, &.{}, &.{1}, @ptrCast(&index), &a);
    try testing.expectEqual(@as(i64, 3), index[0]);
    // The NaN at 30 wins over the smaller values before it.
    reduceOnce(.arg_min, 0, 1, &.{64}, 1, &.{}, &.{1}, @ptrCast(&index), &a);
    try testing.expectEqual(@as(i64, 30), index[0]);
}

test "prod multiplies in f64 and rounds once; an empty product is 1" {
    // 3 * (1 + 2^-23) * (1 - 2^-23) rounded once keeps 3; f32 steps would not.
    const a = [_]f32{ 3, 1 + 0x1p-23, 1 - 0x1p-24, -2 };
    var out: [1]f32 = undefined;
    reduceOnce(.prod, 0, 1, &.{4}, 1, &.{}, &.{1}, @ptrCast(&out), &a);
    const want: f64 = 3.0 * (1 + 0x1p-23) * (1 - 0x1p-24) * -2.0;
    try testing.expectEqual(@as(f32, @floatCast(want)), out[0]);
    reduceOnce(.prod, 0, 1, &.{0}, 1, &.{}, &.{1}, @ptrCast(&out), &a);
    try testing.expectEqual(@as(f32, 1), out[0]);
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

test "sums add in fixed blocks, so a full sum split across threads keeps its bits" {
    // Three and a half blocks, with large values that make the block structure visible in the bits.
    const count = 3 * sum_block + sum_block / 2;
    const a = try testing.allocator.alloc(f32, count);
    defer testing.allocator.free(a);
    for (a, 0..) |*v, i| v.* = @as(f32, @floatFromInt((i * 7919) % 1000)) * 0.001 - 0.5 + if (i % 4099 == 0) @as(f32, 3e7) else 0;
    var blocked: f64 = 0;
    var plain: f64 = 0;
    var b: usize = 0;
    while (b < count) : (b += sum_block) {
        var block: f64 = 0;
        for (a[b..@min(count, b + sum_block)]) |v| block += v;
        blocked += block;
    }
    for (a) |v| plain += v;
    // Otherwise this test could not tell the blocks from one running sum.
    try testing.expect(blocked != plain);
    const want: f32 = @floatCast(blocked);
    // The same elements in 64 rows of 3584 with a gap after each, so rows cross block edges.
    const cols = count / 64;
    const pitch = cols + 16;
    const padded = try testing.allocator.alloc(f32, 64 * pitch);
    defer testing.allocator.free(padded);
    for (0..64) |r| @memcpy(padded[r * pitch ..][0..cols], a[r * cols ..][0..cols]);
    // Vector groups of neighbouring outputs (a leading-axis reduction) with more rows than a block.
    const rows = sum_block + sum_block / 3;
    const wide = try testing.allocator.alloc(f32, rows * lanes);
    defer testing.allocator.free(wide);
    for (wide, 0..) |*v, i| v.* = a[i % count] * @as(f32, @floatFromInt(i % 3 + 1));
    for ([_]i32{ 1, 2, 3, 4 }) |threads| {
        var out: [1]f32 = undefined;
        reduceOnce(.sum, 1, threads, &.{@intCast(count)}, 1, &.{}, &.{1}, @ptrCast(&out), a);
        try testing.expectEqual(@as(u32, @bitCast(want)), @as(u32, @bitCast(out[0])));
        reduceOnce(.sum, 1, threads, &.{ 64, @intCast(cols) }, 2, &.{}, &.{ @intCast(pitch), 1 }, @ptrCast(&out), padded);
        try testing.expectEqual(@as(u32, @bitCast(want)), @as(u32, @bitCast(out[0])));
        reduceOnce(.mean, 1, threads, &.{@intCast(count)}, 1, &.{}, &.{1}, @ptrCast(&out), a);
        try testing.expectEqual(@as(f32, @floatCast(blocked / count)), out[0]);
        var grouped: [lanes]f32 = undefined;
        reduceOnce(.sum, 1, threads, &.{ lanes, @intCast(rows) }, 1, &.{1}, &.{ 1, lanes }, @ptrCast(&grouped), wide);
        for (0..lanes) |c| {
            var one: [1]f32 = undefined;
            reduceOnce(.sum, 1, 1, &.{@intCast(rows)}, 1, &.{}, &.{lanes}, @ptrCast(&one), wide[c..]);
            try testing.expectEqual(@as(u32, @bitCast(one[0])), @as(u32, @bitCast(grouped[c])));
        }
    }
}

//! Element-wise and reduction kernels over integer and Bool tensors: `zt_binary_int` and `zt_reduce_int`.
//! `args.ints` carries the element dtype (its ONNX code, the binding's `DType`): ints[0] for the binary
//! kernel, ints[1] for the reduction (whose ints[0] is the count of reduced axes, as for f32).
//!
//! The binary kernel is elementwise.zig's, instantiated over the element type instead of f32: add, sub and
//! mul wrap around (two's complement, as PyTorch's integer arithmetic), the comparisons and the logical ops
//! write Bool bytes. A Bool operand reads any nonzero byte as true (1), so Bool compares as 0 < 1.
//!
//! The reductions, over the trailing axes laid out as for f32 (`reduce.Shape`): sum adds in i64 with
//! wrap-around in row-major order (every integer and Bool sum is I64, PyTorch's promotion; a U64 sum is the
//! bits of the sum modulo 2^64), max and min keep the element type (Bool max is "any", min "all", and an
//! empty Bool max is false, min true: the identities `any` and `all` need), argmax and argmin give the
//! row-major position of the first maximum or minimum. Integers are exact, so every ISA, mode and thread
//! count gives the same bits.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const ew = @import("elementwise.zig");
const reduce = @import("reduce.zig");
const Rows = @import("rows.zig").Rows;

const BinaryOp = ew.BinaryOp;
const ReduceOp = reduce.ReduceOp;
const Storage = ew.Storage;

/// This family's entries in the kernel table.
pub const Table = extern struct {
    binary_int: ew.BinaryFn,
    reduce_int: ew.UnaryFn,
};

pub const table_entries: Table = .{ .binary_int = binaryInt, .reduce_int = reduceInt };

/// Calls `run(T)` with the element type of dtype `code` (ONNX codes: U8 2, I8 3, U16 4, I16 5, I32 6, I64 7,
/// Bool 9, U32 12, U64 13).
inline fn withType(code: i32, run: anytype) void {
    switch (code) {
        2 => run.call(u8),
        3 => run.call(i8),
        4 => run.call(u16),
        5 => run.call(i16),
        6 => run.call(i32),
        7 => run.call(i64),
        9 => run.call(bool),
        12 => run.call(u32),
        13 => run.call(u64),
        else => unreachable,
    }
}

/// `zt_binary_int`: out = a (op) b over integer or Bool elements of dtype `args.ints[0]`, `args.op` one of
/// add, sub, mul (not Bool), the comparisons and the logical ops. Assumes the caller validated everything.
pub fn binaryInt(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8, b: [*]const u8) callconv(.c) void {
    const rows = Rows(3).init(args.shapeSlice(), .{ &args.operands[0], &args.operands[1], &args.operands[2] });
    const Run = struct {
        rt: *const table.Runtime,
        args: *const abi.ArgBlock,
        rows: *const Rows(3),
        out: [*]u8,
        a: [*]const u8,
        b: [*]const u8,

        inline fn call(self: @This(), comptime T: type) void {
            switch (@as(BinaryOp, @enumFromInt(self.args.op))) {
                inline .add, .sub, .mul => |op| if (T == bool) unreachable else self.run(T, op),
                inline .eq, .ne, .lt, .le, .gt, .ge, .logical_and, .logical_or, .logical_xor => |op| self.run(T, op),
                else => unreachable,
            }
        }

        inline fn run(self: @This(), comptime T: type, comptime op: BinaryOp) void {
            ew.runBinary(T, op, false, self.rt, self.args, self.rows, self.out, self.a, self.b);
        }
    };
    withType(args.ints[0], Run{ .rt = rt, .args = args, .rows = &rows, .out = out, .a = a, .b = b });
}

/// The value an element contributes: Bool as 0/1, the others as themselves.
inline fn load(comptime T: type, p: [*]const Storage(T), offset: isize) Storage(T) {
    const v = ew.at([*]const Storage(T), p, offset)[0];
    return if (T == bool) @intFromBool(v != 0) else v;
}

/// An element as an i64 term of a sum (a U64 by its bits: the sum is taken modulo 2^64).
inline fn widen(comptime T: type, v: Storage(T)) i64 {
    return if (Storage(T) == u64) @bitCast(v) else v;
}

fn Result(comptime T: type, comptime op: ReduceOp) type {
    return if (op == .max or op == .min) Storage(T) else i64;
}

/// One output's reduction, visiting the rows of its reduced elements in row-major order.
fn Reducer(comptime T: type, comptime op: ReduceOp) type {
    const S = Storage(T);
    const lowest: S = if (T == bool) 0 else std.math.minInt(S);
    const highest: S = if (T == bool) 1 else std.math.maxInt(S);
    return struct {
        a: [*]const S,
        len: usize,
        stride: isize,
        sum: i64 = 0,
        best: S = if (op == .max or op == .arg_max) lowest else highest,
        index: i64 = 0,
        position: i64 = 0,

        pub fn row(self: *@This(), offsets: [1]isize) void {
            const p = ew.at([*]const S, self.a, offsets[0]);
            var o: isize = 0;
            for (0..self.len) |_| {
                const v = load(T, p, o);
                switch (op) {
                    .sum => self.sum +%= widen(T, v),
                    .max => self.best = @max(self.best, v),
                    .min => self.best = @min(self.best, v),
                    .arg_max, .arg_min => {
                        if (if (op == .arg_max) v > self.best else v < self.best) {
                            self.best = v;
                            self.index = self.position;
                        }
                        self.position += 1;
                    },
                    else => comptime unreachable,
                }
                o += self.stride;
            }
        }

        fn result(self: *const @This()) Result(T, op) {
            return switch (op) {
                .sum => self.sum,
                .max, .min => self.best,
                else => self.index,
            };
        }
    };
}

fn ReduceSpan(comptime T: type, comptime op: ReduceOp) type {
    const R = Result(T, op);
    return struct {
        out: [*]R,
        a: [*]const Storage(T),
        inner: *const Rows(1),
        kept: [2]isize,

        pub fn span(self: *const @This(), offsets: [2]isize, begin: usize, end: usize) void {
            for (begin..end) |j| {
                const jj: isize = @intCast(j);
                var visit: Reducer(T, op) = .{
                    .a = ew.at([*]const Storage(T), self.a, offsets[1] + jj * self.kept[1]),
                    .len = self.inner.rowLength(),
                    .stride = self.inner.innerStrides()[0],
                };
                self.inner.forEachRow(0, self.inner.rowCount(), &visit);
                ew.at([*]R, self.out, offsets[0] + jj * self.kept[0])[0] = visit.result();
            }
        }
    };
}

/// `zt_reduce_int`: reduces the trailing `args.ints[0]` axes of integer or Bool elements of dtype
/// `args.ints[1]`; `args.op` is sum (writes i64), max or min (the element type), argmax or argmin (i64).
/// Assumes a validated shape, and a non-empty reduction for argmax and argmin and for max and min of a
/// non-Bool type.
pub fn reduceInt(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8) callconv(.c) void {
    const shape = reduce.Shape.of(args);
    const Run = struct {
        rt: *const table.Runtime,
        args: *const abi.ArgBlock,
        shape: *const reduce.Shape,
        out: [*]u8,
        a: [*]const u8,

        inline fn call(self: @This(), comptime T: type) void {
            switch (@as(ReduceOp, @enumFromInt(self.args.op))) {
                inline .sum, .max, .min, .arg_max, .arg_min => |op| self.run(T, op),
                else => unreachable,
            }
        }

        fn run(self: @This(), comptime T: type, comptime op: ReduceOp) void {
            const visit: ReduceSpan(T, op) = .{
                .out = @ptrCast(@alignCast(self.out)),
                .a = @ptrCast(@alignCast(self.a)),
                .inner = &self.shape.inner,
                .kept = self.shape.outer.innerStrides(),
            };
            const min_outputs = ew.parallel_min_elements / @max(1, self.shape.count);
            ew.runSpans(self.rt, self.args, &self.shape.outer, &visit, @max(2, min_outputs), 1);
        }
    };
    withType(args.ints[1], Run{ .rt = rt, .args = args, .shape = &shape, .out = out, .a = a });
}

// --- tests ---

const testing = std.testing;

fn binaryOnce(comptime T: type, code: i32, op: BinaryOp, x: []const Storage(T), y: []const Storage(T), out: [*]u8) void {
    const n: i32 = @intCast(x.len);
    var args = ew.testArgs(&.{n}, &.{ &.{1}, &.{1}, &.{1} }, &.{ 0, 0, 0 }, @intFromEnum(op), 0, 1);
    args.ints[0] = code;
    binaryInt(&ew.test_runtime, &args, out, @ptrCast(x.ptr), @ptrCast(y.ptr));
}

test "integer add, sub and mul wrap around; comparisons are exact at the extremes" {
    const x = [_]i8{ 100, -100, 127, -128, 5, 0, -1, 3, 9, 10, 11 };
    const y = [_]i8{ 100, 100, 1, -1, -5, 0, -1, 3, -9, 10, 12 };
    var out: [11]i8 = undefined;
    binaryOnce(i8, 3, .add, &x, &y, @ptrCast(&out));
    try testing.expectEqualSlices(i8, &.{ -56, 0, -128, 127, 0, 0, -2, 6, 0, 20, 23 }, &out);
    binaryOnce(i8, 3, .sub, &x, &y, @ptrCast(&out));
    try testing.expectEqualSlices(i8, &.{ 0, 56, 126, -127, 10, 0, 0, 0, 18, 0, -1 }, &out);
    binaryOnce(i8, 3, .mul, &x, &y, @ptrCast(&out));
    try testing.expectEqualSlices(i8, &.{ 16, -16, 127, -128, -25, 0, 1, 9, -81, 100, -124 }, &out);
    const big = [_]i64{ std.math.maxInt(i64), std.math.minInt(i64), -3 };
    const one = [_]i64{ 1, std.math.maxInt(i64), -3 };
    var bools: [3]u8 = undefined;
    binaryOnce(i64, 7, .lt, &big, &one, &bools);
    try testing.expectEqualSlices(u8, &.{ 0, 1, 0 }, &bools);
    var sums: [3]i64 = undefined;
    binaryOnce(i64, 7, .add, &big, &one, @ptrCast(&sums));
    try testing.expectEqualSlices(i64, &.{ std.math.minInt(i64), -1, -6 }, &sums);
    const u = [_]u64{ std.math.maxInt(u64), 0, 7 };
    const v = [_]u64{ 1, 1, 7 };
    binaryOnce(u64, 13, .gt, &u, &v, &bools);
    try testing.expectEqualSlices(u8, &.{ 1, 0, 0 }, &bools);
}

test "Bool reads any nonzero byte as true in comparisons and logical ops" {
    const x = [_]u8{ 0, 1, 2, 0, 255, 1 };
    const y = [_]u8{ 0, 0, 1, 7, 0, 1 };
    const cases = [_]struct { op: BinaryOp, want: [6]u8 }{
        .{ .op = .eq, .want = .{ 1, 0, 1, 0, 0, 1 } },
        .{ .op = .lt, .want = .{ 0, 0, 0, 1, 0, 0 } },
        .{ .op = .logical_and, .want = .{ 0, 0, 1, 0, 0, 1 } },
        .{ .op = .logical_or, .want = .{ 0, 1, 1, 1, 1, 1 } },
        .{ .op = .logical_xor, .want = .{ 0, 1, 0, 1, 1, 0 } },
    };
    for (cases) |c| {
        var out: [6]u8 = @splat(9);
        binaryOnce(bool, 9, c.op, &x, &y, &out);
        try testing.expectEqualSlices(u8, &c.want, &out);
    }
}

fn reduceOnce(code: i32, op: ReduceOp, shape: []const i32, reduced: i32, out_strides: []const i32, a_strides: []const i32, out: [*]u8, a: [*]const u8) void {
    var args = ew.testArgs(shape, &.{ out_strides, a_strides }, &.{ 0, 0 }, @intFromEnum(op), 0, 3);
    args.ints[0] = reduced;
    args.ints[1] = code;
    reduceInt(&ew.test_runtime, &args, out, a);
}

test "integer sums wrap in i64; max, min and the arg forms take the first extreme" {
    const a = [_]i32{ 3, -7, 3, std.math.maxInt(i32), -7, 0 };
    var sum: [2]i64 = undefined;
    // [2, 3] reduced along its last axis.
    reduceOnce(6, .sum, &.{ 2, 3 }, 1, &.{1}, &.{ 3, 1 }, @ptrCast(&sum), @ptrCast(&a));
    try testing.expectEqualSlices(i64, &.{ -1, @as(i64, std.math.maxInt(i32)) - 7 }, &sum);
    const huge = [_]i64{ std.math.maxInt(i64), 2 };
    var one: [1]i64 = undefined;
    reduceOnce(7, .sum, &.{2}, 1, &.{}, &.{1}, @ptrCast(&one), @ptrCast(&huge));
    try testing.expectEqual(@as(i64, std.math.minInt(i64) + 1), one[0]);
    var best: [1]i32 = undefined;
    reduceOnce(6, .max, &.{6}, 1, &.{}, &.{1}, @ptrCast(&best), @ptrCast(&a));
    try testing.expectEqual(@as(i32, std.math.maxInt(i32)), best[0]);
    reduceOnce(6, .min, &.{6}, 1, &.{}, &.{1}, @ptrCast(&best), @ptrCast(&a));
    try testing.expectEqual(@as(i32, -7), best[0]);
    // The transposed view [3, 2] reduced along its first axis (strides 1, 3): columns (3, 3), (-7, -7)...
    var index: [3]i64 = undefined;
    reduceOnce(6, .arg_min, &.{ 3, 2 }, 1, &.{1}, &.{ 1, 3 }, @ptrCast(&index), @ptrCast(&a));
    try testing.expectEqualSlices(i64, &.{ 0, 0, 1 }, &index);
    reduceOnce(6, .arg_max, &.{6}, 1, &.{}, &.{1}, @ptrCast(&one), @ptrCast(&a));
    try testing.expectEqual(@as(i64, 3), one[0]);
}

test "Bool max and min are any and all, with false and true over nothing" {
    const a = [_]u8{ 0, 2, 0, 0 };
    var out: [2]u8 = @splat(9);
    reduceOnce(9, .max, &.{ 2, 2 }, 1, &.{1}, &.{ 2, 1 }, &out, &a);
    try testing.expectEqualSlices(u8, &.{ 1, 0 }, &out);
    reduceOnce(9, .min, &.{ 2, 2 }, 1, &.{1}, &.{ 2, 1 }, &out, &a);
    try testing.expectEqualSlices(u8, &.{ 0, 0 }, &out);
    reduceOnce(9, .max, &.{0}, 1, &.{}, &.{1}, &out, &a);
    try testing.expectEqual(@as(u8, 0), out[0]);
    reduceOnce(9, .min, &.{0}, 1, &.{}, &.{1}, &out, &a);
    try testing.expectEqual(@as(u8, 1), out[0]);
    var sum: [1]i64 = undefined;
    reduceOnce(9, .sum, &.{4}, 1, &.{}, &.{1}, @ptrCast(&sum), &a);
    try testing.expectEqual(@as(i64, 1), sum[0]);
}

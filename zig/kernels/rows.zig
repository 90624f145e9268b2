//! The row loop: walks strided operands row by row. Axes of extent 1 are dropped and neighbouring axes that
//! every operand steps through as one are merged, so most views shrink to one or two axes. The outer axes
//! advance like an odometer: no division or modulo per element, only when a thread starts its range.
const std = @import("std");
const abi = @import("../abi.zig");

pub fn Rows(comptime n: usize) type {
    return struct {
        const Self = @This();

        /// Axes after coalescing; at least 1 (a rank-0 tensor is one row of one element).
        rank: usize,
        shape: [abi.max_rank]usize,
        strides: [n][abi.max_rank]isize,
        offsets: [n]isize,

        /// Asserts that every extent is non-negative.
        pub fn init(shape: []const i32, operands: [n]*const abi.Operand) Self {
            var self: Self = .{ .rank = 0, .shape = undefined, .strides = undefined, .offsets = undefined };
            for (operands, 0..) |operand, k| self.offsets[k] = operand.offset;
            for (shape, 0..) |extent_i32, axis| {
                std.debug.assert(extent_i32 >= 0);
                const extent: usize = @intCast(extent_i32);
                if (extent == 1) continue;
                if (self.rank > 0 and self.mergesWithLast(extent, operands, axis)) {
                    self.shape[self.rank - 1] *= extent;
                    for (operands, 0..) |operand, k| self.strides[k][self.rank - 1] = operand.strides[axis];
                    continue;
                }
                self.shape[self.rank] = extent;
                for (operands, 0..) |operand, k| self.strides[k][self.rank] = operand.strides[axis];
                self.rank += 1;
            }
            if (self.rank == 0) {
                self.rank = 1;
                self.shape[0] = 1;
                for (0..n) |k| self.strides[k][0] = 1;
            }
            return self;
        }

        /// Axis `axis` (extent `extent`) continues the last kept axis when, for every operand, the last
        /// kept axis's stride equals this axis's stride times its extent.
        fn mergesWithLast(self: *const Self, extent: usize, operands: [n]*const abi.Operand, axis: usize) bool {
            for (operands, 0..) |operand, k| {
                const inner: isize = operand.strides[axis];
                if (self.strides[k][self.rank - 1] != inner * @as(isize, @intCast(extent))) return false;
            }
            return true;
        }

        pub fn rowLength(self: *const Self) usize {
            return self.shape[self.rank - 1];
        }

        pub fn rowCount(self: *const Self) usize {
            var count: usize = 1;
            for (self.shape[0 .. self.rank - 1]) |extent| count *= extent;
            return count;
        }

        pub fn innerStrides(self: *const Self) [n]isize {
            var inner: [n]isize = undefined;
            for (0..n) |k| inner[k] = self.strides[k][self.rank - 1];
            return inner;
        }

        /// Calls `visit.row(offsets)` for rows `first..end` in row-major order, with the element offset
        /// of the row's start in every operand.
        pub fn forEachRow(self: *const Self, first: usize, end: usize, visit: anytype) void {
            if (first >= end) return;
            const outer = self.rank - 1;
            var index: [abi.max_rank]usize = @splat(0);
            var offsets = self.offsets;
            // Position the odometer at `first`: the only division, once per range.
            var rest = first;
            var axis = outer;
            while (axis > 0) {
                axis -= 1;
                index[axis] = rest % self.shape[axis];
                rest /= self.shape[axis];
                for (0..n) |k| offsets[k] += @as(isize, @intCast(index[axis])) * self.strides[k][axis];
            }
            var row = first;
            while (true) {
                visit.row(offsets);
                row += 1;
                if (row == end) return;
                axis = outer;
                while (axis > 0) {
                    axis -= 1;
                    index[axis] += 1;
                    for (0..n) |k| offsets[k] += self.strides[k][axis];
                    if (index[axis] < self.shape[axis]) break;
                    for (0..n) |k| offsets[k] -= @as(isize, @intCast(self.shape[axis])) * self.strides[k][axis];
                    index[axis] = 0;
                }
            }
        }
    };
}

const testing = std.testing;

fn testOperand(offset: i32, strides: []const i32) abi.Operand {
    var result: abi.Operand = .{ .offset = offset, .strides = @splat(0) };
    @memcpy(result.strides[0..strides.len], strides);
    return result;
}

test "contiguous axes merge into one row and extent-1 axes vanish" {
    const a = testOperand(0, &.{ 12, 4, 4, 1 });
    const rows = Rows(1).init(&.{ 2, 3, 1, 4 }, .{&a});
    try testing.expectEqual(@as(usize, 1), rows.rank);
    try testing.expectEqual(@as(usize, 24), rows.rowLength());
}

test "rows of a transposed view come out in row-major order" {
    // A 3x2 view of a 2x3 row-major buffer (strides 1, 3).
    const a = testOperand(0, &.{ 1, 3 });
    const rows = Rows(1).init(&.{ 3, 2 }, .{&a});
    const Collect = struct {
        starts: std.ArrayList(isize) = .empty,
        fn row(self: *@This(), offsets: [1]isize) void {
            self.starts.append(testing.allocator, offsets[0]) catch unreachable;
        }
    };
    var collect: Collect = .{};
    defer collect.starts.deinit(testing.allocator);
    rows.forEachRow(0, rows.rowCount(), &collect);
    try testing.expectEqualSlices(isize, &.{ 0, 1, 2 }, collect.starts.items);
    try testing.expectEqual(@as(isize, 3), rows.innerStrides()[0]);
}

test "a range that starts mid-tensor positions the odometer" {
    const a = testOperand(5, &.{ 20, 5, 1 });
    const rows = Rows(1).init(&.{ 2, 3, 4 }, .{&a});
    try testing.expectEqual(@as(usize, 3), rows.rank);
    const Collect = struct {
        starts: [6]isize = undefined,
        count: usize = 0,
        fn row(self: *@This(), offsets: [1]isize) void {
            self.starts[self.count] = offsets[0];
            self.count += 1;
        }
    };
    var collect: Collect = .{};
    rows.forEachRow(2, 5, &collect);
    try testing.expectEqualSlices(isize, &.{ 15, 25, 30 }, collect.starts[0..collect.count]);
}

//! The select kernel behind `where`: out = cond ? a : b, element by element over one broadcast shape, for
//! elements of 1, 2, 4 or 8 bytes (every plain dtype: the kernel moves bits and never reads them as numbers,
//! so NaN payloads and signed zeros pass unchanged). `cond` is Bool bytes, any nonzero byte true. Rows run
//! as in `elementwise.zig`: a plain loop (which the compiler vectorizes) when every inner stride is 1, a
//! strided one otherwise; threads split the flat element range from 2^18 elements, so the result never
//! depends on the thread count.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const ew = @import("elementwise.zig");
const Rows = @import("rows.zig").Rows;

/// out = cond ? a : b; operands 0, 1, 2, 3 of the argument block are out, cond, a and b.
pub const SelectFn = *const fn (rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, cond: [*]const u8, a: [*]const u8, b: [*]const u8) callconv(.c) void;

/// This family's entries in the kernel table.
pub const Table = extern struct {
    select: SelectFn,
};

pub const table_entries: Table = .{ .select = select };

/// `zt_select`: `args.ints[0]` is the element size of out, a and b (1, 2, 4 or 8 bytes); cond's offset
/// and strides count bytes. Assumes a validated shape and operands inside their buffers.
pub fn select(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, cond: [*]const u8, a: [*]const u8, b: [*]const u8) callconv(.c) void {
    const ops = &args.operands;
    const rows = Rows(4).init(args.shapeSlice(), .{ &ops[0], &ops[1], &ops[2], &ops[3] });
    switch (args.ints[0]) {
        inline 1, 2, 4, 8 => |size| {
            const T = std.meta.Int(.unsigned, 8 * size);
            const visit: Span(T) = .{
                .out = @ptrCast(@alignCast(out)),
                .cond = cond,
                .a = @ptrCast(@alignCast(a)),
                .b = @ptrCast(@alignCast(b)),
                .inner = rows.innerStrides(),
            };
            ew.runSpans(rt, args, &rows, &visit, ew.streaming_min_elements, 64);
        },
        else => unreachable,
    }
}

fn Span(comptime T: type) type {
    return struct {
        out: [*]T,
        cond: [*]const u8,
        a: [*]const T,
        b: [*]const T,
        inner: [4]isize,

        pub fn span(self: *const @This(), offsets: [4]isize, begin: usize, end: usize) void {
            const s = self.inner;
            const first: isize = @intCast(begin);
            const out = ew.at([*]T, self.out, offsets[0] + first * s[0]);
            const cond = ew.at([*]const u8, self.cond, offsets[1] + first * s[1]);
            const a = ew.at([*]const T, self.a, offsets[2] + first * s[2]);
            const b = ew.at([*]const T, self.b, offsets[3] + first * s[3]);
            const n = end - begin;
            if (s[0] == 1 and s[1] == 1 and s[2] == 1 and s[3] == 1) {
                for (out[0..n], cond[0..n], a[0..n], b[0..n]) |*o, c, x, y| o.* = if (c != 0) x else y;
                return;
            }
            var k: [4]isize = @splat(0);
            for (0..n) |_| {
                ew.at([*]T, out, k[0])[0] = if (ew.at([*]const u8, cond, k[1])[0] != 0)
                    ew.at([*]const T, a, k[2])[0]
                else
                    ew.at([*]const T, b, k[3])[0];
                inline for (0..4) |i| k[i] += s[i];
            }
        }
    };
}

// --- tests ---

const testing = std.testing;

fn selectOnce(comptime T: type, shape: []const i32, strides: []const []const i32, offsets: []const i32, threads: i32, out: []T, cond: []const u8, a: []const T, b: []const T) void {
    var args = ew.testArgs(shape, strides, offsets, 0, 0, threads);
    args.ints[0] = @sizeOf(T);
    select(&ew.test_runtime, &args, @ptrCast(out.ptr), cond.ptr, @ptrCast(a.ptr), @ptrCast(b.ptr));
}

test "select picks a where cond is nonzero, b elsewhere, for every element size, contiguous and broadcast" {
    inline for (.{ u8, u16, u32, u64 }) |T| {
        const cond = [_]u8{ 1, 0, 2, 0, 0, 255 };
        const a = [_]T{ 10, 11, 12, 13, 14, 15 };
        const b = [_]T{ 20, 21, 22, 23, 24, 25 };
        var out: [6]T = undefined;
        selectOnce(T, &.{6}, &.{ &.{1}, &.{1}, &.{1}, &.{1} }, &.{ 0, 0, 0, 0 }, 1, &out, &cond, &a, &b);
        try testing.expectEqualSlices(T, &.{ 10, 21, 12, 23, 24, 15 }, &out);
        // [2, 3]: cond a column [2, 1], a a row [3] reversed, b a scalar.
        selectOnce(T, &.{ 2, 3 }, &.{ &.{ 3, 1 }, &.{ 1, 0 }, &.{ 0, -1 }, &.{ 0, 0 } }, &.{ 0, 0, 2, 4 }, 1, &out, &cond, &a, &b);
        try testing.expectEqualSlices(T, &.{ 12, 11, 10, 24, 24, 24 }, &out);
    }
}

test "a select split over threads gives the bits of one thread" {
    const n = 300_001;
    const cond = try testing.allocator.alloc(u8, n);
    defer testing.allocator.free(cond);
    const a = try testing.allocator.alloc(u32, n);
    defer testing.allocator.free(a);
    const b = try testing.allocator.alloc(u32, n);
    defer testing.allocator.free(b);
    const one = try testing.allocator.alloc(u32, n);
    defer testing.allocator.free(one);
    const four = try testing.allocator.alloc(u32, n);
    defer testing.allocator.free(four);
    for (0..n) |i| {
        cond[i] = @intFromBool(i % 7 < 3);
        a[i] = @intCast(i);
        b[i] = @intCast(n + i);
    }
    const contiguous: []const []const i32 = &.{ &.{1}, &.{1}, &.{1}, &.{1} };
    selectOnce(u32, &.{n}, contiguous, &.{ 0, 0, 0, 0 }, 1, one, cond, a, b);
    selectOnce(u32, &.{n}, contiguous, &.{ 0, 0, 0, 0 }, 4, four, cond, a, b);
    try testing.expectEqualSlices(u32, one, four);
    for (0..n) |i| try testing.expectEqual(if (i % 7 < 3) a[i] else b[i], one[i]);
}

//! Indexing along one axis and the running sum: gather, scatter-add and cumsum over f32 data, with i32 or i64
//! indices. One call walks the iteration shape `args.shape` in row-major order:
//!
//! - gather: `flat[p] = table[p with coordinate axis replaced by index[p]]`;
//! - scatter_add: `table[p with coordinate axis replaced by index[p]] += flat[p]`, one f32 addition at a
//!   time in row-major order of p (the order PyTorch's CPU kernel adds in);
//! - cum_sum: `flat[p] = Σ table[q]` over the q that equal p except along axis, up to p's coordinate there,
//!   added in f64 in ascending order and rounded once per output; the index is unused (may be null).
//!
//! Argument block: operand 0 = table (strides over the iteration shape; its stride along axis is applied to the
//! index), 1 = flat, 2 = index; ints[0] = axis, ints[1] = the table's extent along axis (the bound of the
//! indices), ints[2] = the index element size in bytes (4 or 8). Gather and scatter_add first check every index
//! against [0, bound) and return 1, writing nothing, when one is outside; otherwise 0. Every result is the same
//! in both arithmetic modes, on every ISA and for every thread count (a gather's rows split across threads,
//! each row copied by one; scatter_add and cum_sum on one thread), and equal to the TypeScript reference
//! (`src/kernels/indexing.ts`).
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const ew = @import("elementwise.zig");

/// The operations, numbered by the op table (`zig/kernels/ops.zig`, generated from src/core/op_table.ts).
pub const IndexOp = @import("ops.zig").IndexOp;

/// One indexing call; see the file comment for the argument block.
pub const IndexFn = *const fn (
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    tbl: [*]u8,
    flat: [*]u8,
    index: ?[*]const u8,
) callconv(.c) i32;

/// This family's entries in the kernel table.
pub const Table = extern struct {
    index_f32: IndexFn,
};

/// The family's table.
pub const table_entries: Table = .{ .index_f32 = indexF32 };

/// Offsets of `n` operands over a shape, advanced in row-major order.
fn Odometer(comptime n: usize) type {
    return struct {
        coord: [abi.max_rank]i32 = @splat(0),
        offsets: [n]isize,
        strides: [n][abi.max_rank]i32,

        /// Moves from the start (every coordinate 0) to the `flat`-th position in row-major order.
        fn seek(self: *@This(), shape: []const i32, flat: usize) void {
            var rest = flat;
            var d = shape.len;
            while (d > 0) {
                d -= 1;
                const extent: usize = @intCast(shape[d]);
                const c = rest % extent;
                rest /= extent;
                self.coord[d] = @intCast(c);
                for (0..n) |k| self.offsets[k] += @as(isize, @intCast(c)) * self.strides[k][d];
            }
        }

        fn next(self: *@This(), shape: []const i32) void {
            var d = shape.len;
            while (d > 0) {
                d -= 1;
                self.coord[d] += 1;
                for (0..n) |k| self.offsets[k] += self.strides[k][d];
                if (self.coord[d] < shape[d]) return;
                for (0..n) |k| self.offsets[k] -= @as(isize, shape[d]) * self.strides[k][d];
                self.coord[d] = 0;
            }
        }
    };
}

fn readIndex(index: [*]const u8, bytes: i32, at: isize) i64 {
    if (bytes == 8) return ew.at([*]const i64, @ptrCast(@alignCast(index)), at)[0];
    return ew.at([*]const i32, @ptrCast(@alignCast(index)), at)[0];
}

/// `zt_index_f32`: see the file comment.
pub fn indexF32(rt: *const table.Runtime, args: *const abi.ArgBlock, tbl_raw: [*]u8, flat_raw: [*]u8, index_raw: ?[*]const u8) callconv(.c) i32 {
    std.debug.assert(args.op >= 0 and args.op < @typeInfo(IndexOp).@"enum".fields.len);
    const shape = args.shapeSlice();
    const axis: usize = @intCast(args.ints[0]);
    std.debug.assert(axis < shape.len);
    const bound: i64 = args.ints[1];
    const bytes = args.ints[2];
    const tbl: [*]f32 = @ptrCast(@alignCast(tbl_raw));
    const flat: [*]f32 = @ptrCast(@alignCast(flat_raw));
    var total: usize = 1;
    for (shape) |e| total *= @intCast(e);
    if (total == 0) return 0;
    const op: IndexOp = @enumFromInt(args.op);
    if (op == .cum_sum) {
        cumSum(args, shape, axis, tbl, flat);
        return 0;
    }
    const index = index_raw.?;
    // Rows along the last axis: an index constant along it (stride 0, as an expanded index_select or
    // embedding index) is read once per row, and such a gather of a unit-stride row is one copy.
    const last = shape.len - 1;
    const inner: usize = @intCast(shape[last]);
    var outer: [abi.max_rank]i32 = undefined;
    @memcpy(outer[0..shape.len], shape);
    outer[last] = 1;
    const outer_shape = outer[0..shape.len];
    const rows = total / inner;
    const index_step: isize = args.operands[2].strides[last];
    const index_reads: usize = if (index_step == 0) 1 else inner;
    // Every index first: nothing is written when one is out of range.
    var check: Odometer(1) = .{ .offsets = .{args.operands[2].offset}, .strides = .{args.operands[2].strides} };
    for (0..rows) |_| {
        var at = check.offsets[0];
        for (0..index_reads) |_| {
            const v = readIndex(index, bytes, at);
            if (v < 0 or v >= bound) return 1;
            at += index_step;
        }
        check.next(outer_shape);
    }
    const axis_stride: isize = args.operands[0].strides[axis];
    var table_strides = args.operands[0].strides;
    table_strides[axis] = 0;
    const walk: Walk = .{
        .op = op,
        .tbl = tbl,
        .flat = flat,
        .index = index,
        .bytes = bytes,
        .shape = outer_shape,
        .inner = inner,
        .axis_stride = axis_stride,
        .index_step = index_step,
        .table_step = table_strides[last],
        .flat_step = args.operands[1].strides[last],
        .start = .{
            .offsets = .{ args.operands[0].offset, args.operands[1].offset, args.operands[2].offset },
            .strides = .{ table_strides, args.operands[1].strides, args.operands[2].strides },
        },
    };
    // A gather writes each row of flat once, so its rows split across threads; scatter_add stays on one
    // thread, in row-major order (two rows may add to the same table element).
    if (op == .gather) {
        ew.parallelRange(rt, args.threads, rows, @max(1, ew.streaming_min_elements / inner), 1, &walk);
    } else {
        walk.range(0, rows);
    }
    return 0;
}

/// How many rows ahead a gather of whole rows prefetches.
const prefetch_rows = 2;

/// The rows of a gather or scatter_add (the last axis of the iteration shape), walked from any row.
const Walk = struct {
    op: IndexOp,
    tbl: [*]f32,
    flat: [*]f32,
    index: [*]const u8,
    bytes: i32,
    /// The iteration shape with the last axis set to 1: one step per row.
    shape: []const i32,
    inner: usize,
    axis_stride: isize,
    index_step: isize,
    table_step: isize,
    flat_step: isize,
    /// The odometer at row 0.
    start: Odometer(3),

    /// Where row `walk`'s gathered run starts in the table.
    fn source(w: *const Walk, walk: *const Odometer(3)) [*]f32 {
        return ew.at([*]f32, w.tbl, walk.offsets[0] + @as(isize, @intCast(readIndex(w.index, w.bytes, walk.offsets[2]))) * w.axis_stride);
    }

    pub fn range(w: *const Walk, first: usize, end: usize) void {
        var walk = w.start;
        walk.seek(w.shape, first);
        const copies = w.op == .gather and w.index_step == 0 and w.table_step == 1 and w.flat_step == 1;
        // Copied rows lie anywhere in the table (an embedding's), out of the hardware prefetcher's sight:
        // the row `prefetch_rows` ahead is requested while this one is copied.
        var ahead = walk;
        if (copies) {
            for (0..@min(prefetch_rows, end - first)) |_| ahead.next(w.shape);
        }
        for (first..end) |row| {
            var t = walk.offsets[0];
            var f = walk.offsets[1];
            var i = walk.offsets[2];
            if (copies) {
                if (row + prefetch_rows < end) {
                    const next = w.source(&ahead);
                    var line: usize = 0;
                    while (line < w.inner) : (line += 64 / @sizeOf(f32)) @prefetch(next + line, .{});
                    ahead.next(w.shape);
                }
                @memcpy(ew.at([*]f32, w.flat, f)[0..w.inner], w.source(&walk)[0..w.inner]);
            } else {
                // In row-major order, one element at a time (scatter_add adds in this order).
                for (0..w.inner) |_| {
                    const at = t + @as(isize, @intCast(readIndex(w.index, w.bytes, i))) * w.axis_stride;
                    switch (w.op) {
                        .gather => ew.at([*]f32, w.flat, f)[0] = ew.at([*]f32, w.tbl, at)[0],
                        .scatter_add => ew.at([*]f32, w.tbl, at)[0] += ew.at([*]f32, w.flat, f)[0],
                        .cum_sum => unreachable,
                    }
                    t += w.table_step;
                    f += w.flat_step;
                    i += w.index_step;
                }
            }
            walk.next(w.shape);
        }
    }
};

fn cumSum(args: *const abi.ArgBlock, shape: []const i32, axis: usize, a: [*]const f32, out: [*]f32) void {
    var outer: [abi.max_rank]i32 = undefined;
    @memcpy(outer[0..shape.len], shape);
    outer[axis] = 1;
    var count: usize = 1;
    for (outer[0..shape.len]) |e| count *= @intCast(e);
    const len: usize = @intCast(shape[axis]);
    const a_step: isize = args.operands[0].strides[axis];
    const out_step: isize = args.operands[1].strides[axis];
    var walk: Odometer(2) = .{
        .offsets = .{ args.operands[0].offset, args.operands[1].offset },
        .strides = .{ args.operands[0].strides, args.operands[1].strides },
    };
    for (0..count) |_| {
        var sum: f64 = 0;
        var ai = walk.offsets[0];
        var oi = walk.offsets[1];
        for (0..len) |_| {
            sum += ew.at([*]const f32, a, ai)[0];
            ew.at([*]f32, out, oi)[0] = @floatCast(sum);
            ai += a_step;
            oi += out_step;
        }
        walk.next(outer[0..shape.len]);
    }
}

// --- tests ---

const testing = std.testing;

test "gather and scatter_add follow the index along the axis; an index out of range writes nothing" {
    // table [2, 3] row-major; gather along axis 1 with index [[2, 0], [1, 1]].
    var src = [_]f32{ 1, 2, 3, 4, 5, 6 };
    const index = [_]i64{ 2, 0, 1, 1 };
    var out: [4]f32 = @splat(-1);
    var args = ew.testArgs(&.{ 2, 2 }, &.{ &.{ 3, 1 }, &.{ 2, 1 }, &.{ 2, 1 } }, &.{ 0, 0, 0 }, @intFromEnum(IndexOp.gather), 1, 1);
    args.ints[0] = 1;
    args.ints[1] = 3;
    args.ints[2] = 8;
    try testing.expectEqual(@as(i32, 0), indexF32(&ew.test_runtime, &args, @ptrCast(&src), @ptrCast(&out), @ptrCast(&index)));
    try testing.expectEqualSlices(f32, &.{ 3, 1, 5, 5 }, &out);
    args.op = @intFromEnum(IndexOp.scatter_add);
    try testing.expectEqual(@as(i32, 0), indexF32(&ew.test_runtime, &args, @ptrCast(&src), @ptrCast(&out), @ptrCast(&index)));
    try testing.expectEqualSlices(f32, &.{ 2, 2, 6, 4, 15, 6 }, &src);
    const bad = [_]i32{ 0, 3, 0, 0 };
    args.ints[2] = 4;
    try testing.expectEqual(@as(i32, 1), indexF32(&ew.test_runtime, &args, @ptrCast(&src), @ptrCast(&out), @ptrCast(&bad)));
    try testing.expectEqualSlices(f32, &.{ 2, 2, 6, 4, 15, 6 }, &src);
}

test "a gather with an index constant along the last axis copies whole rows, and checks each row's index" {
    // table [3, 2]; index_select of rows 2, 0 along axis 0: the index [2, 1] expanded to [2, 2] (stride 0).
    var src = [_]f32{ 1, 2, 3, 4, 5, 6 };
    const index = [_]i32{ 2, 0 };
    var out: [4]f32 = @splat(-1);
    var args = ew.testArgs(&.{ 2, 2 }, &.{ &.{ 2, 1 }, &.{ 2, 1 }, &.{ 1, 0 } }, &.{ 0, 0, 0 }, @intFromEnum(IndexOp.gather), 1, 1);
    args.ints[0] = 0;
    args.ints[1] = 3;
    args.ints[2] = 4;
    try testing.expectEqual(@as(i32, 0), indexF32(&ew.test_runtime, &args, @ptrCast(&src), @ptrCast(&out), @ptrCast(&index)));
    try testing.expectEqualSlices(f32, &.{ 5, 6, 1, 2 }, &out);
    const bad = [_]i32{ 0, 3 };
    out = @splat(-1);
    try testing.expectEqual(@as(i32, 1), indexF32(&ew.test_runtime, &args, @ptrCast(&src), @ptrCast(&out), @ptrCast(&bad)));
    try testing.expectEqualSlices(f32, &.{ -1, -1, -1, -1 }, &out);
}

test "cum_sum adds in f64 and rounds each output once" {
    var a = [_]f32{ 0x1p24, 1, 1, 2 };
    var out: [4]f32 = undefined;
    var args = ew.testArgs(&.{4}, &.{ &.{1}, &.{1} }, &.{ 0, 0 }, @intFromEnum(IndexOp.cum_sum), 1, 1);
    args.ints[0] = 0;
    try testing.expectEqual(@as(i32, 0), indexF32(&ew.test_runtime, &args, @ptrCast(&a), @ptrCast(&out), null));
    try testing.expectEqualSlices(f32, &.{ 0x1p24, 0x1p24, 0x1p24 + 2, 0x1p24 + 4 }, &out);
}

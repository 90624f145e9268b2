//! Grouped index add (scatter-add), the backward pass of lookups and max pooling: for each group b and column
//! d, `out[b, index[b, k] − base(b), d] += src[b, k, d]` for k = 0, 1, ... in order, where base(b) is b·M when
//! the indices are flat over all groups' rows (max pooling's winner positions) and 0 otherwise (embedding rows).
//! Each output element takes its additions in k order, and the work is split over (b, d) only, so the bits are
//! the same in both modes and for any thread count, and equal to the reference kernel's.
//!
//! Argument block: shape [B, K, D, M]; operand 0 out's strides (B, M, D), operand 1 src's strides (B, K, D),
//! operand 2 the Int32 indices' strides (B, K); ints[0]: 1 when the indices are flat. The indices must be
//! checked (each in [base(b), base(b) + M)) by the caller.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const ew = @import("elementwise.zig");

const Scatter = struct {
    args: *const abi.ArgBlock,
    out: [*]f32,
    src: [*]const f32,
    index: [*]const i32,

    /// Units `first..end` of the flat [B, D] order; a run of one group adds row by row over its columns.
    pub fn range(s: *const Scatter, first: usize, end: usize) void {
        const a = s.args;
        const count: usize = @intCast(a.shape[1]);
        const width: usize = @intCast(a.shape[2]);
        const rows: isize = a.shape[3];
        const flat = a.ints[0] != 0;
        const o = &a.operands[0];
        const sr = &a.operands[1];
        const ix = &a.operands[2];
        var u = first;
        while (u < end) {
            const b: isize = @intCast(u / width);
            const d_lo = u % width;
            const d_hi = @min(width, d_lo + (end - u));
            const base: isize = if (flat) b * rows else 0;
            for (0..count) |k| {
                const ki: isize = @intCast(k);
                const row = @as(isize, ew.at([*]const i32, s.index, ix.offset + b * ix.strides[0] + ki * ix.strides[1])[0]) - base;
                std.debug.assert(row >= 0 and row < rows);
                const out_row = o.offset + b * o.strides[0] + row * o.strides[1];
                const src_row = sr.offset + b * sr.strides[0] + ki * sr.strides[1];
                for (d_lo..d_hi) |d| {
                    const di: isize = @intCast(d);
                    const target = ew.at([*]f32, s.out, out_row + di * o.strides[2]);
                    target[0] += ew.at([*]const f32, s.src, src_row + di * sr.strides[2])[0];
                }
            }
            u += d_hi - d_lo;
        }
    }
};

/// `zt_index_add_f32`: see the file comment for the argument block.
pub fn indexAddF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, src: [*]const u8, index: ?[*]u8) callconv(.c) void {
    std.debug.assert(args.rank == 4);
    const groups: usize = @intCast(args.shape[0]);
    const count: usize = @intCast(args.shape[1]);
    const width: usize = @intCast(args.shape[2]);
    if (groups == 0 or count == 0 or width == 0) return;
    const scatter: Scatter = .{
        .args = args,
        .out = @ptrCast(@alignCast(out)),
        .src = @ptrCast(@alignCast(src)),
        .index = @ptrCast(@alignCast(index.?)),
    };
    ew.parallelRange(rt, args.threads, groups * width, @max(2, ew.parallel_min_elements / count), 1, &scatter);
}

// --- tests ---

const testing = std.testing;

test "repeated indices add in order, a group's flat indices start at b·M, and strides are honoured" {
    // Two groups of M = 3 rows, D = 2 columns; K = 3 additions each.
    var out: [2 * 3 * 2]f32 = @splat(0);
    const src = [_]f32{ 1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60 };
    const index = [_]i32{ 2, 0, 2, 3, 5, 3 };
    const out_strides = [_]i32{ 6, 2, 1 };
    const src_strides = [_]i32{ 6, 2, 1 };
    const index_strides = [_]i32{ 3, 1 };
    var args = ew.testArgs(&.{ 2, 3, 2, 3 }, &.{ &out_strides, &src_strides, &index_strides }, &.{ 0, 0, 0 }, 0, 0, 1);
    args.ints[0] = 1;
    indexAddF32(&ew.test_runtime, &args, @ptrCast(&out), @ptrCast(&src), @ptrCast(@constCast(&index)));
    try testing.expectEqualSlices(f32, &.{ 3, 4, 0, 0, 6, 8, 60, 80, 0, 0, 30, 40 }, &out);
}

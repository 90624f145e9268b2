//! The window movements of convolution over NCHW images: im2col (the windows of an image as columns
//! [N, C, KH, KW, OH, OW], zeros where a tap falls in the padding) and col2im (its adjoint: columns summed back
//! into an image). Tap (ky, kx) of output (oy, ox) reads image position (oy·strideH − padH + ky·dilationH,
//! ox·strideW − padW + kx·dilationW). im2col only moves values; col2im starts each image element at +0 and
//! adds its taps in ascending (ky, kx) order, one f32 addition each, so both are the same bits in both modes,
//! on every ISA and for any thread count (threads split whole (n, c) rows or planes, never one element's sum).
//!
//! Argument block: shape [N, C, KH, KW, OH, OW]; args.op 0 im2col (operand 0 the columns' strides over the six
//! axes, operand 1 the image's over N, C, H, W), 1 col2im (operand 0 the image's, operand 1 the columns');
//! ints: strideH, strideW, padH, padW, dilationH, dilationW, H, W.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const ew = @import("elementwise.zig");

/// im2col or col2im (args.op 0 or 1); operands 0 and 1 are out and a.
pub const FoldFn = *const fn (rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8) callconv(.c) void;

const Geometry = struct {
    n: usize,
    c: usize,
    kernel: [2]usize,
    output: [2]usize,
    stride: [2]isize,
    pad: [2]isize,
    dilation: [2]isize,
    size: [2]isize,

    fn fromArgs(args: *const abi.ArgBlock) Geometry {
        const s = args.shape;
        const i = args.ints;
        return .{
            .n = @intCast(s[0]),
            .c = @intCast(s[1]),
            .kernel = .{ @intCast(s[2]), @intCast(s[3]) },
            .output = .{ @intCast(s[4]), @intCast(s[5]) },
            .stride = .{ i[0], i[1] },
            .pad = .{ i[2], i[3] },
            .dilation = .{ i[4], i[5] },
            .size = .{ i[6], i[7] },
        };
    }

    /// The outputs [lo, hi) along `axis` whose tap `k` lands inside the image (lo ≤ hi).
    fn valid(g: *const Geometry, axis: usize, k: usize) [2]usize {
        const shift = @as(isize, @intCast(k)) * g.dilation[axis] - g.pad[axis];
        const out: isize = @intCast(g.output[axis]);
        // The first o with o·stride + shift ≥ 0, and the first with o·stride + shift ≥ size.
        const lo = std.math.clamp(divCeil(-shift, g.stride[axis]), 0, out);
        const hi = std.math.clamp(divCeil(g.size[axis] - shift, g.stride[axis]), lo, out);
        return .{ @intCast(lo), @intCast(hi) };
    }

    /// The image coordinate of output `o`, tap `k` along `axis`.
    inline fn source(g: *const Geometry, axis: usize, o: usize, k: usize) isize {
        return @as(isize, @intCast(o)) * g.stride[axis] - g.pad[axis] + @as(isize, @intCast(k)) * g.dilation[axis];
    }
};

fn divCeil(a: isize, b: isize) isize {
    return -@divFloor(-a, b);
}

inline fn offset(operand: *const abi.Operand, index: []const usize) isize {
    var at: isize = operand.offset;
    for (index, 0..) |i, axis| at += @as(isize, @intCast(i)) * operand.strides[axis];
    return at;
}

const Unfold = struct {
    g: Geometry,
    cols_op: *const abi.Operand,
    image_op: *const abi.Operand,
    cols: [*]f32,
    image: [*]const f32,

    /// Column rows (n, c, ky, kx) `first..end`, in the flat order of [N, C, KH, KW].
    pub fn range(u: *const Unfold, first: usize, end: usize) void {
        const g = &u.g;
        const cs = u.cols_op.strides;
        const xs = u.image_op.strides;
        for (first..end) |r| {
            const kx = r % g.kernel[1];
            const ky = (r / g.kernel[1]) % g.kernel[0];
            const c = (r / g.kernel[1] / g.kernel[0]) % g.c;
            const n = r / g.kernel[1] / g.kernel[0] / g.c;
            const row = offset(u.cols_op, &.{ n, c, ky, kx });
            const plane = offset(u.image_op, &.{ n, c });
            const ys = g.valid(0, ky);
            const xr = g.valid(1, kx);
            for (0..g.output[0]) |oy| {
                const out_row = row + @as(isize, @intCast(oy)) * cs[4];
                const inside = oy >= ys[0] and oy < ys[1];
                const lo = if (inside) xr[0] else g.output[1];
                const hi = if (inside) xr[1] else g.output[1];
                for (0..lo) |ox| ew.at([*]f32, u.cols, out_row + @as(isize, @intCast(ox)) * cs[5])[0] = 0;
                if (inside) {
                    const in_row = plane + g.source(0, oy, ky) * xs[2];
                    const step = g.stride[1] * xs[3];
                    var from = in_row + g.source(1, lo, kx) * xs[3];
                    if (cs[5] == 1 and step == 1) {
                        const dst = ew.at([*]f32, u.cols, out_row + @as(isize, @intCast(lo)));
                        const src = ew.at([*]const f32, u.image, from);
                        @memcpy(dst[0 .. hi - lo], src[0 .. hi - lo]);
                    } else {
                        for (lo..hi) |ox| {
                            ew.at([*]f32, u.cols, out_row + @as(isize, @intCast(ox)) * cs[5])[0] = ew.at([*]const f32, u.image, from)[0];
                            from += step;
                        }
                    }
                }
                for (hi..g.output[1]) |ox| ew.at([*]f32, u.cols, out_row + @as(isize, @intCast(ox)) * cs[5])[0] = 0;
            }
        }
    }
};

const Fold = struct {
    g: Geometry,
    image_op: *const abi.Operand,
    cols_op: *const abi.Operand,
    image: [*]f32,
    cols: [*]const f32,

    /// Image planes (n, c) `first..end`, in the flat order of [N, C].
    pub fn range(f: *const Fold, first: usize, end: usize) void {
        const g = &f.g;
        const cs = f.cols_op.strides;
        const xs = f.image_op.strides;
        const h: usize = @intCast(g.size[0]);
        const w: usize = @intCast(g.size[1]);
        for (first..end) |p| {
            const c = p % g.c;
            const n = p / g.c;
            const plane = offset(f.image_op, &.{ n, c });
            for (0..h) |y| {
                const row = plane + @as(isize, @intCast(y)) * xs[2];
                if (xs[3] == 1) {
                    @memset(ew.at([*]f32, f.image, row)[0..w], 0);
                } else {
                    for (0..w) |x| ew.at([*]f32, f.image, row + @as(isize, @intCast(x)) * xs[3])[0] = 0;
                }
            }
            for (0..g.kernel[0]) |ky| {
                const ys = g.valid(0, ky);
                for (0..g.kernel[1]) |kx| {
                    const xr = g.valid(1, kx);
                    const tap = offset(f.cols_op, &.{ n, c, ky, kx });
                    const step = g.stride[1] * xs[3];
                    for (ys[0]..ys[1]) |oy| {
                        const src_row = tap + @as(isize, @intCast(oy)) * cs[4];
                        var to = plane + g.source(0, oy, ky) * xs[2] + g.source(1, xr[0], kx) * xs[3];
                        for (xr[0]..xr[1]) |ox| {
                            const dst = ew.at([*]f32, f.image, to);
                            dst[0] += ew.at([*]const f32, f.cols, src_row + @as(isize, @intCast(ox)) * cs[5])[0];
                            to += step;
                        }
                    }
                }
            }
        }
    }
};

/// `zt_conv_fold_f32`: see the file comment for the argument block. Assumes validated geometry (positive
/// strides and dilations, output extents that fit the operands).
pub fn foldF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8) callconv(.c) void {
    std.debug.assert(args.rank == 6);
    const g = Geometry.fromArgs(args);
    const taps = g.kernel[0] * g.kernel[1];
    const per_plane = taps * g.output[0] * g.output[1];
    if (g.n * g.c == 0) return;
    if (args.op == 0) {
        if (per_plane == 0) return;
        const work: Unfold = .{
            .g = g,
            .cols_op = &args.operands[0],
            .image_op = &args.operands[1],
            .cols = @ptrCast(@alignCast(out)),
            .image = @ptrCast(@alignCast(a)),
        };
        const per_row = g.output[0] * g.output[1];
        ew.parallelRange(rt, args.threads, g.n * g.c * taps, @max(2, ew.parallel_min_elements / @max(1, per_row)), 1, &work);
    } else {
        const work: Fold = .{
            .g = g,
            .image_op = &args.operands[0],
            .cols_op = &args.operands[1],
            .image = @ptrCast(@alignCast(out)),
            .cols = @ptrCast(@alignCast(a)),
        };
        const cost = per_plane + @as(usize, @intCast(g.size[0] * g.size[1]));
        ew.parallelRange(rt, args.threads, g.n * g.c, @max(2, ew.parallel_min_elements / @max(1, cost)), 1, &work);
    }
}

// --- tests ---

const testing = std.testing;

fn foldArgs(op: i32, n: i32, c: i32, h: i32, w: i32, kernel: [2]i32, stride: [2]i32, pad: [2]i32, dil: [2]i32) abi.ArgBlock {
    const oh = @divFloor(h + 2 * pad[0] - dil[0] * (kernel[0] - 1) - 1, stride[0]) + 1;
    const ow = @divFloor(w + 2 * pad[1] - dil[1] * (kernel[1] - 1) - 1, stride[1]) + 1;
    const cols = [_]i32{ c * kernel[0] * kernel[1] * oh * ow, kernel[0] * kernel[1] * oh * ow, kernel[1] * oh * ow, oh * ow, ow, 1 };
    const image = [_]i32{ c * h * w, h * w, w, 1 };
    const operands: [2][]const i32 = if (op == 0) .{ &cols, &image } else .{ &image, &cols };
    var args = ew.testArgs(&.{ n, c, kernel[0], kernel[1], oh, ow }, &operands, &.{ 0, 0 }, op, 1, 1);
    const ints = [_]i32{ stride[0], stride[1], pad[0], pad[1], dil[0], dil[1], h, w };
    @memcpy(args.ints[0..ints.len], &ints);
    return args;
}

test "im2col pads with zeros and col2im sums every tap back in place" {
    // One 3x3 plane 1..9; 2x2 kernel, stride 1, padding 1: a 4x4 output per tap.
    var x: [9]f32 = undefined;
    for (&x, 0..) |*v, i| v.* = @floatFromInt(i + 1);
    var cols: [4 * 16]f32 = undefined;
    const unfold = foldArgs(0, 1, 1, 3, 3, .{ 2, 2 }, .{ 1, 1 }, .{ 1, 1 }, .{ 1, 1 });
    foldF32(&ew.test_runtime, &unfold, @ptrCast(&cols), @ptrCast(&x));
    // Tap (0, 0) reads (oy − 1, ox − 1): row 0 and column 0 are padding.
    try testing.expectEqualSlices(f32, &.{ 0, 0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9 }, cols[0..16]);
    // Tap (1, 1) reads (oy, ox): row 3 and column 3 are padding.
    try testing.expectEqualSlices(f32, &.{ 1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9, 0, 0, 0, 0, 0 }, cols[48..64]);
    var back: [9]f32 = @splat(-1);
    const fold = foldArgs(1, 1, 1, 3, 3, .{ 2, 2 }, .{ 1, 1 }, .{ 1, 1 }, .{ 1, 1 });
    foldF32(&ew.test_runtime, &fold, @ptrCast(&back), @ptrCast(&cols));
    // Every pixel lies in all four taps' windows.
    for (back, x) |b, v| try testing.expectEqual(4 * v, b);
}

test "strided, dilated windows fold back the number of windows covering each pixel" {
    var x: [2 * 5 * 6]f32 = @splat(1);
    var cols: [2 * 2 * 3 * 2 * 3]f32 = undefined;
    const unfold = foldArgs(0, 1, 2, 5, 6, .{ 2, 3 }, .{ 2, 2 }, .{ 0, 1 }, .{ 2, 1 });
    foldF32(&ew.test_runtime, &unfold, @ptrCast(&cols), @ptrCast(&x));
    var back: [x.len]f32 = undefined;
    const fold = foldArgs(1, 1, 2, 5, 6, .{ 2, 3 }, .{ 2, 2 }, .{ 0, 1 }, .{ 2, 1 });
    foldF32(&ew.test_runtime, &fold, @ptrCast(&back), @ptrCast(&cols));
    // Rows: windows start at 0 and 2, taps at +0 and +2, so rows 0, 4 are hit once, row 2 twice, rows 1, 3 never.
    // Columns: windows start at −1, 1, 3 with taps +0..2, so columns 1 and 3 are hit twice, the rest once.
    const rows = [_]f32{ 1, 0, 2, 0, 1 };
    const columns = [_]f32{ 1, 2, 1, 2, 1, 1 };
    for (0..2) |c| for (0..5) |y| for (0..6) |xi| {
        try testing.expectEqual(rows[y] * columns[xi], back[c * 30 + y * 6 + xi]);
    };
}

//! The blocked image layout NchwC(B) (spec 000 §5): storage `[N][ceil(C/B)][H][W][B]`, channel c at block
//! c / B, lane c % B, lanes past C in the last block zero. Both directions are strided copies: the full
//! blocks as one 5-axis copy `[N, C/B, H, W, B]` (the logical side steps B·stride_C between blocks and
//! stride_C between lanes), the partial last block as a second copy of its live lanes, and (into blocked
//! storage) a broadcast fill of zeros for its dead lanes.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("../kernels/table.zig");
const copy = @import("copy.zig");

pub const block_max = 256;

/// The geometry of one conversion, from the argument block: `args.shape` is the logical [N, C, H, W],
/// `args.ints[0]` the block size B and `args.ints[1]` the element size in bytes.
const Geometry = struct {
    n: i64,
    c: i64,
    h: i64,
    w: i64,
    b: i64,
    elem_bytes: usize,
    threads: usize,

    fn init(args: *const abi.ArgBlock) Geometry {
        std.debug.assert(args.rank == 4);
        std.debug.assert(args.ints[0] >= 1 and args.ints[0] <= block_max);
        std.debug.assert(args.ints[1] > 0);
        return .{
            .n = args.shape[0],
            .c = args.shape[1],
            .h = args.shape[2],
            .w = args.shape[3],
            .b = args.ints[0],
            .elem_bytes = @intCast(args.ints[1]),
            .threads = copy.threadCount(args),
        };
    }

    fn blocks(g: Geometry) i64 {
        return @divFloor(g.c + g.b - 1, g.b);
    }

    /// The blocked storage as a 5-axis operand [N, blocks, H, W, lanes], from block `first` and lane `lane`.
    fn blocked(g: Geometry, offset: i32, first: i64, lane: i64) abi.Operand {
        const plane = g.h * g.w * g.b;
        var op: abi.Operand = .{ .offset = 0, .strides = @splat(0) };
        op.offset = @intCast(offset + first * plane + lane);
        const strides = [_]i64{ g.blocks() * plane, plane, g.w * g.b, g.b, 1 };
        for (strides, 0..) |s, i| op.strides[i] = narrow(s);
        return op;
    }

    /// The logical NCHW operand seen as [N, blocks, H, W, lanes], from block `first`; `full` says whether
    /// the block axis is stepped (otherwise its stride is never used and may not fit in 32 bits).
    fn logical(g: Geometry, op: *const abi.Operand, first: i64, stepped: bool) abi.Operand {
        var out: abi.Operand = .{ .offset = 0, .strides = @splat(0) };
        const stride_c: i64 = op.strides[1];
        out.offset = @intCast(op.offset + first * g.b * stride_c);
        const strides = [_]i64{ op.strides[0], if (stepped) g.b * stride_c else 0, op.strides[2], op.strides[3], stride_c };
        for (strides, 0..) |s, i| out.strides[i] = narrow(s);
        return out;
    }
};

/// A stride that fits in 32 bits, or 0 for one whose axis is never stepped (the caller's arithmetic keeps
/// every stepped stride within the buffer).
fn narrow(stride: i64) i32 {
    return std.math.cast(i32, stride) orelse 0;
}

fn shape5(g: Geometry, blocks: i64, lanes: i64) [5]i32 {
    return .{ @intCast(g.n), @intCast(blocks), @intCast(g.h), @intCast(g.w), @intCast(lanes) };
}

const zeros: [16]u8 align(16) = @splat(0);

/// `zt_to_blocked`: logical NCHW (operand 1, strided, at `src`) → blocked storage (operand 0: its offset in
/// elements, at `dst`). Assumes a valid geometry and strides inside the source buffer.
pub fn toBlocked(rt: *const table.Runtime, args: *const abi.ArgBlock, dst: [*]u8, src: [*]const u8) void {
    const g = Geometry.init(args);
    const full = @divFloor(g.c, g.b);
    const rest = g.c - full * g.b;
    const dst_offset = args.operands[0].offset;
    const src_op = &args.operands[1];
    if (full > 0) {
        const d = g.blocked(dst_offset, 0, 0);
        const s = g.logical(src_op, 0, full > 1);
        copy.copyStrided(rt, g.threads, g.elem_bytes, &shape5(g, full, g.b), &d, &s, dst, src);
    }
    if (rest > 0) {
        const d = g.blocked(dst_offset, full, 0);
        const s = g.logical(src_op, full, false);
        copy.copyStrided(rt, g.threads, g.elem_bytes, &shape5(g, 1, rest), &d, &s, dst, src);
        const pad = g.blocked(dst_offset, full, rest);
        const zero: abi.Operand = .{ .offset = 0, .strides = @splat(0) };
        std.debug.assert(g.elem_bytes <= zeros.len);
        copy.copyStrided(rt, g.threads, g.elem_bytes, &shape5(g, 1, g.b - rest), &pad, &zero, dst, &zeros);
    }
}

/// `zt_from_blocked`: blocked storage (operand 1: its offset in elements, at `src`) → logical NCHW
/// (operand 0, strided, at `dst`). Assumes a valid geometry and strides inside the destination buffer.
pub fn fromBlocked(rt: *const table.Runtime, args: *const abi.ArgBlock, dst: [*]u8, src: [*]const u8) void {
    const g = Geometry.init(args);
    const full = @divFloor(g.c, g.b);
    const rest = g.c - full * g.b;
    const src_offset = args.operands[1].offset;
    const dst_op = &args.operands[0];
    if (full > 0) {
        const d = g.logical(dst_op, 0, full > 1);
        const s = g.blocked(src_offset, 0, 0);
        copy.copyStrided(rt, g.threads, g.elem_bytes, &shape5(g, full, g.b), &d, &s, dst, src);
    }
    if (rest > 0) {
        const d = g.logical(dst_op, full, false);
        const s = g.blocked(src_offset, full, 0);
        copy.copyStrided(rt, g.threads, g.elem_bytes, &shape5(g, 1, rest), &d, &s, dst, src);
    }
}

// --- tests ---

const testing = std.testing;

fn testArgs(shape: [4]i32, b: i32, elem_bytes: i32, threads: i32) abi.ArgBlock {
    var args: abi.ArgBlock = std.mem.zeroes(abi.ArgBlock);
    args.rank = 4;
    @memcpy(args.shape[0..4], &shape);
    args.ints[0] = b;
    args.ints[1] = elem_bytes;
    args.threads = threads;
    return args;
}

test "NCHW and NHWC to NchwC(B) and back, lanes past C zero, for several block sizes" {
    const ThreadPool = @import("../ThreadPool.zig");
    const n = 2;
    const c = 5;
    const h = 3;
    const w = 4;
    var src: [n * c * h * w]u32 = undefined;
    for (&src, 0..) |*x, i| x.* = @intCast(i + 1);
    for ([_]i32{ 1, 2, 3, 5, 8, 256 }) |b| {
        const blocks: usize = @intCast(@divFloor(c + b - 1, b));
        const bu: usize = @intCast(b);
        const out = try testing.allocator.alloc(u32, n * blocks * h * w * bu);
        defer testing.allocator.free(out);
        @memset(out, 0xDEAD);
        // The source as NHWC storage viewed over logical NCHW: strides (H·W·C, 1, W·C, C).
        var args = testArgs(.{ n, c, h, w }, b, 4, 2);
        args.operands[1] = .{ .offset = 0, .strides = .{ h * w * c, 1, w * c, c, 0, 0, 0, 0 } };
        toBlocked(&ThreadPool.runtime, &args, @ptrCast(out.ptr), @ptrCast(&src));
        for (0..n) |in| for (0..blocks) |cb| for (0..h) |ih| for (0..w) |iw| for (0..bu) |lane| {
            const ch = cb * bu + lane;
            const got = out[(((in * blocks + cb) * h + ih) * w + iw) * bu + lane];
            const expected: u32 = if (ch < c) src[((in * h + ih) * w + iw) * c + ch] else 0;
            try testing.expectEqual(expected, got);
        };
        var back: [n * c * h * w]u32 = @splat(0);
        args.operands[0] = .{ .offset = 0, .strides = .{ c * h * w, h * w, w, 1, 0, 0, 0, 0 } };
        args.operands[1] = .{ .offset = 0, .strides = @splat(0) };
        fromBlocked(&ThreadPool.runtime, &args, @ptrCast(&back), @ptrCast(out.ptr));
        for (0..n) |in| for (0..c) |ch| for (0..h) |ih| for (0..w) |iw| {
            try testing.expectEqual(src[((in * h + ih) * w + iw) * c + ch], back[((in * c + ch) * h + ih) * w + iw]);
        };
    }
}

//! GGML's Q8_0 and Q4_0 blocks: 32 consecutive elements of a row with one f16 scale `d`, stored
//! little-endian in the block's first two bytes.
//!
//!   Q8_0 (34 bytes): d, then 32 signed bytes q.   x ≈ d · q
//!   Q4_0 (18 bytes): d, then 16 bytes; byte j holds element j in its low nibble and element j + 16 in its
//!                    high nibble.                  x ≈ d · (q − 8)
//!
//! Quantization follows GGML's reference functions (`quantize_row_q8_0_ref`, `quantize_row_q4_0_ref`)
//! operation for operation, in f32: Q8_0 takes amax = max |x| (as C's `MAX` macro does), d = amax / 127,
//! id = 1/d (0 when d is 0), q = round-half-away(x · id); Q4_0 takes the value of largest magnitude
//! (the first one wins), d = max / −8, id = 1/d (0 when d is 0), q = min(15, trunc(x · id + 8.5)). The scale
//! stored is d rounded to f16 (nearest even), the one used for q is the f32 d, as in GGML. Where C leaves
//! the conversion of q to an integer undefined (a NaN input) the cast rule applies: NaN gives 0 and values
//! saturate. Dequantization is one f32 multiply per element.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("../kernels/table.zig");
const convert = @import("convert.zig");
const copy = @import("copy.zig");

pub const block_elements = 32;

/// The block formats, by the codes of `src/core/dtype.ts` (0x100 + the GGML type id).
pub const Format = enum(i32) {
    q4_0 = 0x102,
    q8_0 = 0x108,

    pub fn blockBytes(format: Format) usize {
        return switch (format) {
            .q4_0 => 18,
            .q8_0 => 34,
        };
    }
};

/// Round half away from zero, then the cast rule to i8 (saturating, NaN → 0).
fn roundToI8(x: f32) i8 {
    return convert.castValue(.i8, .f32, @round(x));
}

pub fn quantizeQ8(x: *const [block_elements]f32, out: *[34]u8) void {
    var amax: f32 = 0;
    for (x) |v| {
        const a = @abs(v);
        amax = if (amax > a) amax else a;
    }
    const d = amax / 127;
    const id: f32 = if (d != 0) 1 / d else 0;
    std.mem.writeInt(u16, out[0..2], convert.f32ToF16(@bitCast(d)), .little);
    for (x, out[2..]) |v, *q| q.* = @bitCast(roundToI8(v * id));
}

pub fn quantizeQ4(x: *const [block_elements]f32, out: *[18]u8) void {
    var amax: f32 = 0;
    var max: f32 = 0;
    for (x) |v| {
        if (amax < @abs(v)) {
            amax = @abs(v);
            max = v;
        }
    }
    const d = max / -8;
    const id: f32 = if (d != 0) 1 / d else 0;
    std.mem.writeInt(u16, out[0..2], convert.f32ToF16(@bitCast(d)), .little);
    for (0..block_elements / 2) |j| {
        const lo: u8 = @bitCast(@min(15, convert.castValue(.i8, .f32, x[j] * id + 8.5)));
        const hi: u8 = @bitCast(@min(15, convert.castValue(.i8, .f32, x[j + 16] * id + 8.5)));
        out[2 + j] = lo | hi << 4;
    }
}

fn scale(block: []const u8) f32 {
    return @bitCast(convert.f16ToF32(std.mem.readInt(u16, block[0..2], .little)));
}

pub fn dequantizeQ8(block: *const [34]u8, y: *[block_elements]f32) void {
    const d = scale(block);
    for (block[2..], y) |q, *v| v.* = @as(f32, @floatFromInt(@as(i8, @bitCast(q)))) * d;
}

pub fn dequantizeQ4(block: *const [18]u8, y: *[block_elements]f32) void {
    const d = scale(block);
    for (0..block_elements / 2) |j| {
        const q = block[2 + j];
        y[j] = @as(f32, @floatFromInt(@as(i32, q & 0x0F) - 8)) * d;
        y[j + 16] = @as(f32, @floatFromInt(@as(i32, q >> 4) - 8)) * d;
    }
}

/// Blocks per work unit when a conversion is split over threads.
const unit_blocks = 256;

const Direction = enum { quantize, dequantize };

fn Job(comptime direction: Direction, comptime format: Format) type {
    const bytes = comptime format.blockBytes();
    return struct {
        blocks: [*]u8,
        values: [*]f32,
        count: usize,

        fn runRange(job: *const @This(), first: usize, end: usize) void {
            for (first..end) |i| {
                const block = job.blocks[i * bytes ..][0..bytes];
                const values = job.values[i * block_elements ..][0..block_elements];
                switch (direction) {
                    .quantize => if (format == .q8_0) quantizeQ8(values, block) else quantizeQ4(values, block),
                    .dequantize => if (format == .q8_0) dequantizeQ8(block, values) else dequantizeQ4(block, values),
                }
            }
        }

        fn run(context: *anyopaque, task: u32) callconv(.c) void {
            const job: *const @This() = @ptrCast(@alignCast(context));
            const first = @min(job.count, task * unit_blocks);
            job.runRange(first, @min(job.count, first + unit_blocks));
        }
    };
}

fn convertBlocks(comptime direction: Direction, rt: *const table.Runtime, args: *const abi.ArgBlock, blocks: [*]u8, values: [*]f32) void {
    std.debug.assert(args.ints[1] >= 0);
    const count: usize = @intCast(args.ints[1]);
    switch (@as(Format, @enumFromInt(args.ints[0]))) {
        inline else => |format| {
            const job: Job(direction, format) = .{ .blocks = blocks, .values = values, .count = count };
            const threads = copy.threadCount(args);
            if (threads == 1 or count * block_elements < copy.parallel_min_elements) {
                job.runRange(0, count);
            } else {
                const tasks = (count + unit_blocks - 1) / unit_blocks;
                rt.parallelFor(@constCast(&job), @intCast(tasks), @intCast(threads), @TypeOf(job).run);
            }
        },
    }
}

fn offset(args: *const abi.ArgBlock, k: usize) usize {
    std.debug.assert(args.operands[k].offset >= 0);
    return @intCast(args.operands[k].offset);
}

/// `zt_quantize`: `args.ints[1]` blocks of format `args.ints[0]` from contiguous f32 values. Operand 0's
/// offset (in blocks) places the output in `dst`, operand 1's (in elements) the input in `src`.
pub fn quantize(rt: *const table.Runtime, args: *const abi.ArgBlock, dst: [*]u8, src: [*]const f32) void {
    const bytes = @as(Format, @enumFromInt(args.ints[0])).blockBytes();
    convertBlocks(.quantize, rt, args, dst + offset(args, 0) * bytes, @constCast(src + offset(args, 1)));
}

/// `zt_dequantize`: `args.ints[1]` blocks of format `args.ints[0]` to contiguous f32 values. Operand 0's
/// offset (in elements) places the output in `dst`, operand 1's (in blocks) the input in `src`.
pub fn dequantize(rt: *const table.Runtime, args: *const abi.ArgBlock, dst: [*]f32, src: [*]const u8) void {
    const bytes = @as(Format, @enumFromInt(args.ints[0])).blockBytes();
    convertBlocks(.dequantize, rt, args, @constCast(src + offset(args, 1) * bytes), dst + offset(args, 0));
}

// --- tests ---

const testing = std.testing;

test "Q8_0 of a hand-computed block" {
    // amax = 127 gives d = 1, so q = round(x): halves round away from zero.
    var x: [32]f32 = undefined;
    for (&x, 0..) |*v, i| v.* = @as(f32, @floatFromInt(i)) - 16;
    x[0] = -127;
    x[1] = 2.5;
    x[2] = -2.5;
    x[3] = 0.49;
    var block: [34]u8 = undefined;
    quantizeQ8(&x, &block);
    try testing.expectEqual(@as(u16, 0x3C00), std.mem.readInt(u16, block[0..2], .little));
    try testing.expectEqual(@as(i8, -127), @as(i8, @bitCast(block[2])));
    try testing.expectEqual(@as(i8, 3), @as(i8, @bitCast(block[3])));
    try testing.expectEqual(@as(i8, -3), @as(i8, @bitCast(block[4])));
    try testing.expectEqual(@as(i8, 0), @as(i8, @bitCast(block[5])));
    try testing.expectEqual(@as(i8, 15), @as(i8, @bitCast(block[2 + 31])));
    var y: [32]f32 = undefined;
    dequantizeQ8(&block, &y);
    try testing.expectEqual(@as(f32, -127), y[0]);
    try testing.expectEqual(@as(f32, 3), y[1]);
    try testing.expectEqual(@as(f32, 15), y[31]);
}

test "Q4_0 of a hand-computed block" {
    // The value of largest magnitude is -16 (first of ±16), so d = 2, id = 0.5: q = min(15, trunc(x/2 + 8.5)).
    var x: [32]f32 = @splat(0);
    x[0] = -16;
    x[1] = 16; // 8 + 8.5 = 16.5 → 16 → clamped to 15
    x[2] = 3; // 1.5 + 8.5 = 10
    x[16] = -3; // -1.5 + 8.5 = 7
    x[17] = 1; // 0.5 + 8.5 = 9
    var block: [18]u8 = undefined;
    quantizeQ4(&x, &block);
    try testing.expectEqual(@as(u16, 0x4000), std.mem.readInt(u16, block[0..2], .little)); // 2.0
    try testing.expectEqual(@as(u8, 0 | 7 << 4), block[2]);
    try testing.expectEqual(@as(u8, 15 | 9 << 4), block[3]);
    try testing.expectEqual(@as(u8, 10 | 8 << 4), block[4]);
    try testing.expectEqual(@as(u8, 8 | 8 << 4), block[5]);
    var y: [32]f32 = undefined;
    dequantizeQ4(&block, &y);
    try testing.expectEqual(@as(f32, -16), y[0]);
    try testing.expectEqual(@as(f32, 14), y[1]);
    try testing.expectEqual(@as(f32, 4), y[2]);
    try testing.expectEqual(@as(f32, -2), y[16]);
    try testing.expectEqual(@as(f32, 2), y[17]);
    try testing.expectEqual(@as(f32, 0), y[31]);
}

test "an all-zero block has d = 0 and dequantizes to zeros; NaN inputs give q = 0" {
    var x: [32]f32 = @splat(0);
    var b8: [34]u8 = undefined;
    quantizeQ8(&x, &b8);
    for (b8) |byte| try testing.expectEqual(@as(u8, 0), byte);
    x[5] = std.math.nan(f32);
    var b4: [18]u8 = undefined;
    quantizeQ4(&x, &b4);
    // GGML's max starts at +0, so d = 0 / -8 = -0: the stored scale is f16 -0.
    try testing.expectEqual(@as(u16, 0x8000), std.mem.readInt(u16, b4[0..2], .little));
    try testing.expectEqual(@as(u8, 8 | 8 << 4), b4[2]);
    try testing.expectEqual(@as(u8, 0 | 8 << 4), b4[2 + 5]);
}

test "threaded quantize and dequantize of many blocks match one block at a time" {
    const ThreadPool = @import("../ThreadPool.zig");
    const count = 3000;
    const values = try testing.allocator.alloc(f32, count * 32);
    defer testing.allocator.free(values);
    var prng = std.Random.DefaultPrng.init(4);
    for (values) |*v| v.* = (prng.random().float(f32) - 0.5) * 20;
    inline for ([_]Format{ .q4_0, .q8_0 }) |format| {
        const bytes = comptime format.blockBytes();
        const blocks = try testing.allocator.alloc(u8, count * bytes);
        defer testing.allocator.free(blocks);
        const back = try testing.allocator.alloc(f32, count * 32);
        defer testing.allocator.free(back);
        var args: abi.ArgBlock = std.mem.zeroes(abi.ArgBlock);
        args.ints[0] = @intFromEnum(format);
        args.ints[1] = count;
        args.threads = 3;
        quantize(&ThreadPool.runtime, &args, blocks.ptr, values.ptr);
        dequantize(&ThreadPool.runtime, &args, back.ptr, blocks.ptr);
        for (0..count) |i| {
            var block: [bytes]u8 = undefined;
            var y: [32]f32 = undefined;
            if (format == .q8_0) quantizeQ8(values[i * 32 ..][0..32], &block) else quantizeQ4(values[i * 32 ..][0..32], &block);
            try testing.expectEqualSlices(u8, &block, blocks[i * bytes ..][0..bytes]);
            if (format == .q8_0) dequantizeQ8(&block, &y) else dequantizeQ4(&block, &y);
            try testing.expectEqualSlices(f32, &y, back[i * 32 ..][0..32]);
        }
    }
}

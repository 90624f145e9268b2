//! Data movement kernels that profit from the ISA: bulk conversions between f32 and f16 or bf16 over
//! contiguous runs, bit for bit equal to the scalar rules of spec 000 §10 (`convert.zig`) on every variant.
//!
//! f16: the avx2 and avx512 variants convert with F16C (`vcvtps2ph` rounding to nearest even,
//! `vcvtph2ps`), the neon variant with `fcvtn`/`fcvtl`; the baseline variant runs the scalar rule. A vector
//! that holds a NaN is redone by the scalar rule, so the result never depends on how the hardware treats
//! NaN payloads (or on a default-NaN mode). bf16: integer vector code of the §10 formula on every variant.
const std = @import("std");
const builtin = @import("builtin");
const convert = @import("../movement/convert.zig");

/// Converts `n` contiguous elements from `src` to `dst` (both aligned to their element size).
pub const BulkFn = *const fn (dst: [*]u8, src: [*]const u8, n: usize) callconv(.c) void;

/// This family's entries in the kernel table.
pub const Table = extern struct {
    f32_to_f16: BulkFn,
    f16_to_f32: BulkFn,
    f32_to_bf16: BulkFn,
    bf16_to_f32: BulkFn,
};

pub const table_entries: Table = .{
    .f32_to_f16 = f32ToF16,
    .f16_to_f32 = f16ToF32,
    .f32_to_bf16 = f32ToBf16,
    .bf16_to_f32 = bf16ToF32,
};

/// Whether this variant converts f16 in hardware.
pub const hardware_f16 = switch (builtin.cpu.arch) {
    .x86_64 => std.Target.x86.featureSetHas(builtin.cpu.features, .f16c),
    .aarch64 => true,
    else => false,
};

const lanes = @import("elementwise.zig").lanes;
const VU32 = @Vector(lanes, u32);
const VU16 = @Vector(lanes, u16);

fn f32ToF16(dst_bytes: [*]u8, src_bytes: [*]const u8, n: usize) callconv(.c) void {
    const dst: [*]u16 = @ptrCast(@alignCast(dst_bytes));
    const src: [*]const u32 = @ptrCast(@alignCast(src_bytes));
    var i: usize = 0;
    if (hardware_f16) {
        while (i + lanes <= n) : (i += lanes) {
            const bits: VU32 = src[i..][0..lanes].*;
            if (@reduce(.Or, bits & @as(VU32, @splat(0x7FFF_FFFF)) > @as(VU32, @splat(0x7F80_0000)))) {
                for (i..i + lanes) |k| dst[k] = convert.f32ToF16(src[k]);
                continue;
            }
            const wide: @Vector(lanes, f32) = @bitCast(bits);
            const narrow: @Vector(lanes, f16) = @floatCast(wide);
            dst[i..][0..lanes].* = @bitCast(narrow);
        }
    }
    while (i < n) : (i += 1) dst[i] = convert.f32ToF16(src[i]);
}

fn f16ToF32(dst_bytes: [*]u8, src_bytes: [*]const u8, n: usize) callconv(.c) void {
    const dst: [*]u32 = @ptrCast(@alignCast(dst_bytes));
    const src: [*]const u16 = @ptrCast(@alignCast(src_bytes));
    var i: usize = 0;
    if (hardware_f16) {
        while (i + lanes <= n) : (i += lanes) {
            const bits: VU16 = src[i..][0..lanes].*;
            if (@reduce(.Or, bits & @as(VU16, @splat(0x7FFF)) > @as(VU16, @splat(0x7C00)))) {
                for (i..i + lanes) |k| dst[k] = convert.f16ToF32(src[k]);
                continue;
            }
            const narrow: @Vector(lanes, f16) = @bitCast(bits);
            const wide: @Vector(lanes, f32) = @floatCast(narrow);
            dst[i..][0..lanes].* = @bitCast(wide);
        }
    }
    while (i < n) : (i += 1) dst[i] = convert.f16ToF32(src[i]);
}

fn f32ToBf16(dst_bytes: [*]u8, src_bytes: [*]const u8, n: usize) callconv(.c) void {
    const dst: [*]u16 = @ptrCast(@alignCast(dst_bytes));
    const src: [*]const u32 = @ptrCast(@alignCast(src_bytes));
    var i: usize = 0;
    while (i + lanes <= n) : (i += lanes) {
        const bits: VU32 = src[i..][0..lanes].*;
        const nan = bits & @as(VU32, @splat(0x7FFF_FFFF)) > @as(VU32, @splat(0x7F80_0000));
        const quiet = (bits >> @splat(16)) | @as(VU32, @splat(0x40));
        const rounded = (bits +% @as(VU32, @splat(0x7FFF)) +% ((bits >> @splat(16)) & @as(VU32, @splat(1)))) >> @splat(16);
        const narrow: VU16 = @truncate(@select(u32, nan, quiet, rounded));
        dst[i..][0..lanes].* = narrow;
    }
    while (i < n) : (i += 1) dst[i] = convert.f32ToBf16(src[i]);
}

fn bf16ToF32(dst_bytes: [*]u8, src_bytes: [*]const u8, n: usize) callconv(.c) void {
    const dst: [*]u32 = @ptrCast(@alignCast(dst_bytes));
    const src: [*]const u16 = @ptrCast(@alignCast(src_bytes));
    var i: usize = 0;
    while (i + lanes <= n) : (i += lanes) {
        const half: VU16 = src[i..][0..lanes].*;
        const bits = @as(VU32, half) << @splat(16);
        const nan = bits & @as(VU32, @splat(0x7FFF_FFFF)) > @as(VU32, @splat(0x7F80_0000));
        dst[i..][0..lanes].* = bits | @select(u32, nan, @as(VU32, @splat(0x40_0000)), @as(VU32, @splat(0)));
    }
    while (i < n) : (i += 1) dst[i] = convert.bf16ToF32(src[i]);
}

// --- tests: the bulk paths of the variant under test against the scalar rule ---

const testing = std.testing;

fn expectBulkMatchesScalar(comptime Src: type, comptime Dst: type, bulk: BulkFn, scalar: fn (Src) Dst, src: []const Src) !void {
    const dst = try testing.allocator.alloc(Dst, src.len);
    defer testing.allocator.free(dst);
    bulk(@ptrCast(dst.ptr), @ptrCast(src.ptr), src.len);
    for (src, dst) |x, y| {
        if (scalar(x) != y) {
            std.debug.print("input 0x{x}: bulk 0x{x}, scalar 0x{x}\n", .{ x, y, scalar(x) });
            return error.TestExpectedEqual;
        }
    }
}

test "bulk f16 and bf16 to f32 match the scalar rule on all 65536 patterns" {
    const all = try testing.allocator.alloc(u16, 1 << 16);
    defer testing.allocator.free(all);
    for (all, 0..) |*x, i| x.* = @intCast(i);
    try expectBulkMatchesScalar(u16, u32, table_entries.f16_to_f32, convert.f16ToF32, all);
    try expectBulkMatchesScalar(u16, u32, table_entries.bf16_to_f32, convert.bf16ToF32, all);
    // An odd start and length exercise the scalar tail.
    try expectBulkMatchesScalar(u16, u32, table_entries.f16_to_f32, convert.f16ToF32, all[3 .. all.len - 2]);
}

test "bulk f32 to f16 and bf16 match the scalar rule on random, tie and NaN patterns" {
    const n = 1 << 18;
    const src = try testing.allocator.alloc(u32, n);
    defer testing.allocator.free(src);
    var prng = std.Random.DefaultPrng.init(0xf16);
    const random = prng.random();
    for (src, 0..) |*x, i| {
        x.* = switch (i % 4) {
            0 => random.int(u32),
            // Exponents around the f16 range, with low bits that make ties and near-ties.
            1 => (random.uintLessThan(u32, 64) + 96) << 23 | (random.int(u32) & 0x7F_E000) | (random.uintLessThan(u32, 3) << 11 & 0x1FFF),
            2 => (random.int(u32) & 0xFFFF_0000) | 0x8000 | random.uintLessThan(u32, 2),
            else => 0x7F80_0000 | (random.int(u32) & 0x807F_FFFF),
        };
    }
    try expectBulkMatchesScalar(u32, u16, table_entries.f32_to_f16, convert.f32ToF16, src);
    try expectBulkMatchesScalar(u32, u16, table_entries.f32_to_bf16, convert.f32ToBf16, src);
    try expectBulkMatchesScalar(u32, u16, table_entries.f32_to_f16, convert.f32ToF16, src[1 .. n - 5]);
}

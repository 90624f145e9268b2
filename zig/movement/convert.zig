//! Numeric conversions (spec 000 §10) and element-wise casts between the 13 plain dtypes.
//!
//! The scalar f32↔f16 and f32↔bf16 conversions are written exactly as §10 gives them, as integer operations
//! on the f32 bits; the per-ISA bulk conversions in `kernels/movement.zig` are tested bit for bit against
//! them. Cast rules: float → float by those conversions (f64 → f16/bf16 goes through f32, so it rounds
//! twice); integer or bool → float rounds once to nearest even; float → integer truncates toward zero,
//! saturates to the target range and sends NaN to 0; integer → integer wraps modulo 2^bits; any → bool is
//! "≠ 0" with NaN true; bool → number is 0 or 1 (any nonzero bool byte counts as 1).
//!
//! NaN payloads between f32 and f64, which §10 leaves to IEEE 754, follow what x86 and AArch64 hardware
//! does, written out so that every ISA gives the same bits: f64 → f32 keeps the top 23 payload bits and
//! forces the quiet bit; f32 → f64 shifts the payload left by 29 and forces the quiet bit.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("../kernels/table.zig");
const movement = @import("../kernels/movement.zig");
const copy = @import("copy.zig");
const Rows = @import("../kernels/rows.zig").Rows;

// --- scalar conversions, exactly as spec 000 §10 writes them ---

/// f32 bits → binary16 bits, round to nearest, ties to even.
pub fn f32ToF16(bits: u32) u16 {
    const sign: u16 = @truncate((bits >> 16) & 0x8000);
    const a = bits & 0x7FFF_FFFF;
    if (a > 0x7F80_0000) return sign | 0x7E00 | @as(u16, @truncate((a >> 13) & 0x1FF));
    if (a == 0x7F80_0000 or a >= 0x477F_F000) return sign | 0x7C00;
    if (a >= 0x3880_0000) {
        const m = a - (112 << 23);
        return sign | @as(u16, @truncate((m + 0xFFF + ((m >> 13) & 1)) >> 13));
    }
    if (a <= 0x3300_0000) return sign;
    const e = a >> 23;
    const mant = (a & 0x7F_FFFF) | 0x80_0000;
    const shift: u5 = @intCast(126 - e);
    var r = mant >> shift;
    const rem = mant & ((@as(u32, 1) << shift) - 1);
    const half = @as(u32, 1) << (shift - 1);
    if (rem > half or (rem == half and r & 1 == 1)) r += 1;
    return sign | @as(u16, @truncate(r));
}

/// binary16 bits → f32 bits, exact; a NaN keeps its payload shifted left 13 with the quiet bit forced.
pub fn f16ToF32(h: u16) u32 {
    const sign = @as(u32, h & 0x8000) << 16;
    const e = (h >> 10) & 0x1F;
    const man: u32 = h & 0x3FF;
    if (e == 0x1F) return if (man == 0) sign | 0x7F80_0000 else sign | 0x7FC0_0000 | (man << 13);
    if (e == 0) {
        // A subnormal is man · 2^-24, exact in f32.
        const value = @as(f32, @floatFromInt(man)) * 0x1p-24;
        return sign | @as(u32, @bitCast(value));
    }
    return sign | ((@as(u32, e) + 112) << 23) | (man << 13);
}

/// f32 bits → bfloat16 bits, round to nearest, ties to even; NaN → `(bits >> 16) | 0x40`.
pub fn f32ToBf16(bits: u32) u16 {
    if (bits & 0x7FFF_FFFF > 0x7F80_0000) return @truncate((bits >> 16) | 0x40);
    return @truncate((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

/// bfloat16 bits → f32 bits: `bits << 16`, the quiet bit forced for NaN.
pub fn bf16ToF32(b: u16) u32 {
    const bits = @as(u32, b) << 16;
    return if (bits & 0x7FFF_FFFF > 0x7F80_0000) bits | 0x40_0000 else bits;
}

/// f64 → f32 bits, round to nearest even; NaN keeps its top 23 payload bits and is made quiet.
pub fn f64ToF32(x: f64) u32 {
    const bits: u64 = @bitCast(x);
    if (bits & 0x7FFF_FFFF_FFFF_FFFF > 0x7FF0_0000_0000_0000) {
        const sign: u32 = @truncate((bits >> 32) & 0x8000_0000);
        return sign | 0x7FC0_0000 | @as(u32, @truncate((bits >> 29) & 0x7F_FFFF));
    }
    return @bitCast(@as(f32, @floatCast(x)));
}

/// f32 bits → f64, exact; NaN payload shifted left 29 with the quiet bit forced.
pub fn f32ToF64(bits: u32) f64 {
    if (bits & 0x7FFF_FFFF > 0x7F80_0000) {
        const sign = @as(u64, bits & 0x8000_0000) << 32;
        return @bitCast(sign | 0x7FF8_0000_0000_0000 | (@as(u64, bits & 0x7F_FFFF) << 29));
    }
    return @as(f32, @bitCast(bits));
}

// --- casts ---

/// The plain dtypes by their ONNX codes (as in `src/core/dtype.ts`).
pub const DType = enum(i32) {
    f32 = 1,
    u8 = 2,
    i8 = 3,
    u16 = 4,
    i16 = 5,
    i32 = 6,
    i64 = 7,
    bool = 9,
    f16 = 10,
    f64 = 11,
    u32 = 12,
    u64 = 13,
    bf16 = 16,

    /// Whether `code` names a plain dtype.
    pub fn valid(code: i32) bool {
        return std.enums.fromInt(DType, code) != null;
    }
};

/// How a dtype's elements are stored: f16 and bf16 as raw bits, bool as a byte.
pub fn Storage(comptime t: DType) type {
    return switch (t) {
        .f32 => f32,
        .f64 => f64,
        .f16, .bf16, .u16 => u16,
        .bool, .u8 => u8,
        .i8 => i8,
        .i16 => i16,
        .i32 => i32,
        .i64 => i64,
        .u32 => u32,
        .u64 => u64,
    };
}

fn isFloat(comptime t: DType) bool {
    return switch (t) {
        .f32, .f64, .f16, .bf16 => true,
        else => false,
    };
}

/// The f32 bits of a float element of type `t` other than f64 (exact).
inline fn floatBits(comptime t: DType, x: Storage(t)) u32 {
    return switch (t) {
        .f32 => @bitCast(x),
        .f16 => f16ToF32(x),
        .bf16 => bf16ToF32(x),
        else => @compileError("not a 32-bit or narrower float"),
    };
}

/// An f32 (as bits) stored as a float dtype `t` other than f64.
inline fn fromFloatBits(comptime t: DType, bits: u32) Storage(t) {
    return switch (t) {
        .f32 => @bitCast(bits),
        .f16 => f32ToF16(bits),
        .bf16 => f32ToBf16(bits),
        else => @compileError("not a 32-bit or narrower float"),
    };
}

/// Truncates toward zero and saturates to `I`'s range; NaN → 0.
fn floatToInt(comptime I: type, v: f64) I {
    if (v != v) return 0;
    const bits = @typeInfo(I).int.bits;
    const signed = @typeInfo(I).int.signedness == .signed;
    const low: f64 = if (signed) -std.math.ldexp(@as(f64, 1), bits - 1) else 0;
    const high: f64 = std.math.ldexp(@as(f64, 1), if (signed) bits - 1 else bits);
    if (v <= low) return std.math.minInt(I);
    if (v >= high) return std.math.maxInt(I);
    return @intFromFloat(v);
}

/// An integer of magnitude `mag` rounded once, to nearest even, to bfloat16 bits.
fn intToBf16(negative: bool, mag: u64) u16 {
    const sign: u32 = if (negative) 0x8000_0000 else 0;
    if (mag < 1 << 24) return f32ToBf16(sign | @as(u32, @bitCast(@as(f32, @floatFromInt(mag)))));
    // Keep the top 8 significant bits, rounding the rest away to nearest even, then scale exactly.
    const shift: u6 = @intCast(64 - @clz(mag) - 8);
    var q = mag >> shift;
    const rem = mag & ((@as(u64, 1) << shift) - 1);
    const half = @as(u64, 1) << (shift - 1);
    if (rem > half or (rem == half and q & 1 == 1)) q += 1;
    const value = std.math.ldexp(@as(f32, @floatFromInt(q)), shift);
    return f32ToBf16(sign | @as(u32, @bitCast(value)));
}

/// One element of `src` type cast to `dst` type by the rules above.
pub inline fn castValue(comptime dst: DType, comptime src: DType, x: Storage(src)) Storage(dst) {
    if (comptime isFloat(src)) return castFloat(dst, src, x);
    const v = if (src == .bool) @as(u8, @intFromBool(x != 0)) else x;
    const V = @TypeOf(v);
    return switch (dst) {
        .bool => @intFromBool(v != 0),
        .f64 => @floatFromInt(v),
        .f32 => @floatFromInt(v),
        // Integers beyond 2^24 round to at least 2^24 in f32, which is infinite in f16 either way.
        .f16 => f32ToF16(@bitCast(@as(f32, @floatFromInt(v)))),
        .bf16 => intToBf16(v < 0, @abs(v)),
        else => blk: {
            const D = Storage(dst);
            const wide: u64 = @bitCast(@as(i64, if (@typeInfo(V).int.signedness == .signed) v else @as(i64, @bitCast(@as(u64, v)))));
            const UD = std.meta.Int(.unsigned, @bitSizeOf(D));
            break :blk @bitCast(@as(UD, @truncate(wide)));
        },
    };
}

inline fn castFloat(comptime dst: DType, comptime src: DType, x: Storage(src)) Storage(dst) {
    if (dst == src) {
        return x;
    } else if (dst == .f64) {
        return f32ToF64(floatBits(src, x));
    } else if (comptime isFloat(dst)) {
        return fromFloatBits(dst, if (src == .f64) f64ToF32(x) else floatBits(src, x));
    } else {
        const value: f64 = if (src == .f64) x else @as(f32, @bitCast(floatBits(src, x)));
        if (dst == .bool) return @intFromBool(value != 0 or value != value);
        return floatToInt(Storage(dst), value);
    }
}

/// Casts `n` elements, stepping `d_step` / `s_step` elements from element offsets `d` / `s`.
const StridedFn = *const fn (dst: [*]u8, src: [*]const u8, d: isize, s: isize, d_step: isize, s_step: isize, n: usize) void;

fn stridedCast(comptime dst_type: DType, comptime src_type: DType) StridedFn {
    return struct {
        fn run(dst: [*]u8, src: [*]const u8, d: isize, s: isize, d_step: isize, s_step: isize, n: usize) void {
            const out: [*]Storage(dst_type) = @ptrCast(@alignCast(dst));
            const in: [*]const Storage(src_type) = @ptrCast(@alignCast(src));
            if (d_step == 1 and s_step == 1) {
                const o = out + @as(usize, @intCast(d));
                const i = in + @as(usize, @intCast(s));
                for (0..n) |k| o[k] = castValue(dst_type, src_type, i[k]);
                return;
            }
            var po = d;
            var pi = s;
            for (0..n) |_| {
                out[@intCast(po)] = castValue(dst_type, src_type, in[@intCast(pi)]);
                po += d_step;
                pi += s_step;
            }
        }
    }.run;
}

/// The bulk (per-ISA) conversion for a pair, if it has one.
fn bulkFor(bulk: *const movement.Table, dst_type: DType, src_type: DType) ?movement.BulkFn {
    return switch (dst_type) {
        .f16 => if (src_type == .f32) bulk.f32_to_f16 else null,
        .bf16 => if (src_type == .f32) bulk.f32_to_bf16 else null,
        .f32 => switch (src_type) {
            .f16 => bulk.f16_to_f32,
            .bf16 => bulk.bf16_to_f32,
            else => null,
        },
        else => null,
    };
}

const CastSpan = struct {
    dst: [*]u8,
    src: [*]const u8,
    dst_size: usize,
    src_size: usize,
    inner: [2]isize,
    bulk: ?movement.BulkFn,
    strided: StridedFn,

    pub fn span(self: *const CastSpan, offsets: [2]isize, n: usize) void {
        if (self.bulk) |bulk| {
            if (self.inner[0] == 1 and self.inner[1] == 1) {
                const d: usize = @intCast(offsets[0]);
                const s: usize = @intCast(offsets[1]);
                bulk(self.dst + d * self.dst_size, self.src + s * self.src_size, n);
                return;
            }
        }
        self.strided(self.dst, self.src, offsets[0], offsets[1], self.inner[0], self.inner[1], n);
    }
};

/// `zt_cast`: casts `args.shape` elements of dtype `args.ints[1]` (operand 1, at `src`) to dtype
/// `args.ints[0]` (operand 0, at `dst`). `bulk` holds the selected ISA's f16/bf16 conversions. Assumes valid
/// dtype codes, shape and strides, and no overlap.
pub fn cast(rt: *const table.Runtime, bulk: *const movement.Table, args: *const abi.ArgBlock, dst: [*]u8, src: [*]const u8) void {
    std.debug.assert(DType.valid(args.ints[0]) and DType.valid(args.ints[1]));
    const dst_type: DType = @enumFromInt(args.ints[0]);
    const src_type: DType = @enumFromInt(args.ints[1]);
    const shape = args.shapeSlice();
    for (shape) |extent| if (extent == 0) return;
    const rows = Rows(2).init(shape, .{ &args.operands[0], &args.operands[1] });
    const strided = switch (dst_type) {
        inline else => |d| switch (src_type) {
            inline else => |s| stridedCast(d, s),
        },
    };
    const visit: CastSpan = .{
        .dst = dst,
        .src = src,
        .dst_size = sizeOf(dst_type),
        .src_size = sizeOf(src_type),
        .inner = rows.innerStrides(),
        .bulk = bulkFor(bulk, dst_type, src_type),
        .strided = strided,
    };
    copy.forEachSpan(rt, copy.threadCount(args), &rows, &visit);
}

pub fn sizeOf(t: DType) usize {
    return switch (t) {
        inline else => |c| @sizeOf(Storage(c)),
    };
}

// --- tests ---

const testing = std.testing;

test "f32 to f16 on hand-picked values: ties to even, overflow, subnormals and NaN payloads" {
    const cases = [_][2]u32{
        .{ 0x3F80_0000, 0x3C00 }, // 1
        .{ 0xBF80_0000, 0xBC00 }, // -1
        .{ 0x477F_E000, 0x7BFF }, // 65504
        .{ 0x477F_EFFF, 0x7BFF }, // just below 65520
        .{ 0x477F_F000, 0x7C00 }, // 65520 ties to even: infinity
        .{ 0x3F80_1000, 0x3C00 }, // 1 + 2^-11: tie, 0x3C00 is even
        .{ 0x3F80_3000, 0x3C02 }, // 1 + 3·2^-11: tie, rounds up to even
        .{ 0x3380_0000, 0x0001 }, // 2^-24, the smallest subnormal
        .{ 0x3300_0000, 0x0000 }, // 2^-25 ties to zero
        .{ 0x3300_0001, 0x0001 }, // just above 2^-25
        .{ 0x33C0_0000, 0x0002 }, // 1.5·2^-24 ties to even 2
        .{ 0x387F_C000, 0x03FF }, // largest subnormal
        .{ 0x387F_F000, 0x0400 }, // rounds up into the smallest normal
        .{ 0x8000_0000, 0x8000 }, // -0
        .{ 0xFF80_0000, 0xFC00 }, // -inf
        .{ 0x7FC0_0000, 0x7E00 }, // quiet NaN
        .{ 0x7F80_0001, 0x7E00 }, // signalling NaN with a low payload: made quiet
        .{ 0xFFBF_E000, 0xFFFF }, // negative NaN with all nine top payload bits
    };
    for (cases) |case| try testing.expectEqual(@as(u16, @intCast(case[1])), f32ToF16(case[0]));
}

test "every f16 pattern converts to f32 and back to itself (NaNs come back quiet)" {
    for (0..1 << 16) |i| {
        const h: u16 = @intCast(i);
        const f = f16ToF32(h);
        const is_nan = h & 0x7C00 == 0x7C00 and h & 0x3FF != 0;
        const expected = if (is_nan) h | 0x200 else h;
        try testing.expectEqual(expected, f32ToF16(f));
        if (!is_nan) {
            // Independent decoding of the value.
            const e = (h >> 10) & 0x1F;
            const m: f64 = @floatFromInt(h & 0x3FF);
            const mag: f64 = if (e == 0) m * 0x1p-24 else if (e == 0x1F) std.math.inf(f64) else (1 + m / 1024) * std.math.ldexp(@as(f64, 1), @as(i32, e) - 15);
            const value = if (h & 0x8000 != 0) -mag else mag;
            try testing.expectEqual(value, @as(f64, @as(f32, @bitCast(f))));
        }
    }
}

test "every bf16 pattern converts to f32 and back to itself (NaNs come back quiet)" {
    for (0..1 << 16) |i| {
        const b: u16 = @intCast(i);
        const is_nan = b & 0x7F80 == 0x7F80 and b & 0x7F != 0;
        try testing.expectEqual(if (is_nan) b | 0x40 else b, f32ToBf16(bf16ToF32(b)));
    }
    try testing.expectEqual(@as(u16, 0x3F80), f32ToBf16(0x3F80_8000)); // tie to even
    try testing.expectEqual(@as(u16, 0x3F82), f32ToBf16(0x3F81_8000)); // tie to even, up
    try testing.expectEqual(@as(u16, 0x7F80), f32ToBf16(0x7F7F_FFFF)); // max f32 rounds to infinity
}

test "cast rules on edge values" {
    try testing.expectEqual(@as(i32, 0), castValue(.i32, .f32, std.math.nan(f32)));
    try testing.expectEqual(@as(i32, std.math.maxInt(i32)), castValue(.i32, .f32, 3e9));
    try testing.expectEqual(@as(i32, std.math.minInt(i32)), castValue(.i32, .f64, -1e300));
    try testing.expectEqual(@as(u8, 0), castValue(.u8, .f32, -0.9));
    try testing.expectEqual(@as(u8, 0), castValue(.u8, .f32, -7));
    try testing.expectEqual(@as(u8, 255), castValue(.u8, .f64, 255.99));
    try testing.expectEqual(@as(i8, -2), castValue(.i8, .f32, -2.7));
    try testing.expectEqual(@as(u64, std.math.maxInt(u64)), castValue(.u64, .f32, std.math.inf(f32)));
    try testing.expectEqual(@as(i64, std.math.minInt(i64)), castValue(.i64, .f64, -0x1p63));
    try testing.expectEqual(@as(u8, 44), castValue(.u8, .i32, 300));
    try testing.expectEqual(@as(u8, 255), castValue(.u8, .i8, -1));
    try testing.expectEqual(@as(i16, -1), castValue(.i16, .u64, std.math.maxInt(u64)));
    try testing.expectEqual(@as(u64, std.math.maxInt(u64)), castValue(.u64, .i8, -1));
    try testing.expectEqual(@as(u8, 1), castValue(.bool, .f32, std.math.nan(f32)));
    try testing.expectEqual(@as(u8, 0), castValue(.bool, .f32, -0.0));
    try testing.expectEqual(@as(u8, 1), castValue(.bool, .bf16, 0x0001));
    try testing.expectEqual(@as(f32, 1), castValue(.f32, .bool, 7));
    try testing.expectEqual(@as(i64, 1), castValue(.i64, .bool, 1));
    try testing.expectEqual(@as(f32, 16777216), castValue(.f32, .i32, 16777217)); // tie to even
    try testing.expectEqual(@as(f32, 16777220), castValue(.f32, .i32, 16777219)); // tie to even, up
    try testing.expectEqual(@as(f64, 0x1p64), castValue(.f64, .u64, std.math.maxInt(u64)));
    try testing.expectEqual(@as(u16, 0x7C00), castValue(.f16, .i32, 65520)); // tie to even: infinity
    try testing.expectEqual(@as(u16, 0x7BFF), castValue(.f16, .i32, 65519));
    try testing.expectEqual(@as(u16, 0xFC00), castValue(.f16, .i64, -(1 << 40)));
    // 2^25 + 2^17 + 1 rounds once (up) to bf16; through f32 it would tie and round down.
    try testing.expectEqual(@as(u16, 0x4C00 + 1), castValue(.bf16, .i32, (1 << 25) + (1 << 17) + 1));
    try testing.expectEqual(@as(u16, 0x4C00), castValue(.bf16, .i32, (1 << 25) + (1 << 17)));
    try testing.expectEqual(@as(u16, 0x5F80), castValue(.bf16, .u64, std.math.maxInt(u64))); // 2^64
    try testing.expectEqual(@as(u16, 0xDF00), castValue(.bf16, .i64, std.math.minInt(i64))); // -2^63
    // f64 → f16 rounds twice: 1 + 2^-11 + 2^-40 rounds to f32 1 + 2^-11, a tie that goes to 1.
    try testing.expectEqual(@as(u16, 0x3C00), castValue(.f16, .f64, 1 + 0x1p-11 + 0x1p-40));
    try testing.expectEqual(@as(u32, 0x7FC0_0001), @as(u32, @bitCast(castValue(.f32, .f64, @as(f64, @bitCast(@as(u64, 0x7FF0_0000_2000_0000)))))));
    try testing.expectEqual(@as(u64, 0xFFF8_0000_2000_0000), @as(u64, @bitCast(castValue(.f64, .f32, @as(f32, @bitCast(@as(u32, 0xFF80_0001)))))));
    try testing.expectEqual(@as(u16, 0x7E08), castValue(.f16, .bf16, 0x7F81)); // NaN through f32: 0x7FC10000
}

test "a strided cast of every pair matches castValue element by element" {
    const ThreadPool = @import("../ThreadPool.zig");
    var src_bytes: [64 * 8]u8 align(8) = undefined;
    var prng = std.Random.DefaultPrng.init(7);
    prng.random().bytes(&src_bytes);
    var args: abi.ArgBlock = std.mem.zeroes(abi.ArgBlock);
    args.rank = 2;
    args.shape[0] = 4;
    args.shape[1] = 5;
    args.threads = 1;
    args.operands[0] = .{ .offset = 0, .strides = .{ 5, 1, 0, 0, 0, 0, 0, 0 } };
    args.operands[1] = .{ .offset = 15, .strides = .{ -3, 12, 0, 0, 0, 0, 0, 0 } };
    @setEvalBranchQuota(100_000);
    inline for (std.meta.fields(DType)) |df| inline for (std.meta.fields(DType)) |sf| {
        const d: DType = @enumFromInt(df.value);
        const s: DType = @enumFromInt(sf.value);
        var dst: [20]Storage(d) = undefined;
        args.ints[0] = df.value;
        args.ints[1] = sf.value;
        cast(&ThreadPool.runtime, &movement.table_entries, &args, @ptrCast(&dst), &src_bytes);
        const in: [*]const Storage(s) = @ptrCast(@alignCast(&src_bytes));
        for (0..4) |i| for (0..5) |j| {
            const x = in[15 - 3 * i + 12 * j];
            const expected = castValue(d, s, x);
            const E = std.meta.Int(.unsigned, @bitSizeOf(Storage(d)));
            try testing.expectEqual(@as(E, @bitCast(expected)), @as(E, @bitCast(dst[i * 5 + j])));
        };
    };
}

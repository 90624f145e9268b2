//! Softmax and log-softmax over the last axis of the iteration shape (operand 0 the output, operand 1 the
//! input, both with strides for every axis).
//!
//! Exact mode, the reference's definition: m = the row's maximum (f32; a NaN anywhere makes it NaN);
//! e_i = exp(f64(x_i) − f64(m)) in f64; s = Σ e_i in f64, ascending; softmax y_i = f32(e_i / s) and
//! log-softmax y_i = f32((f64(x_i) − f64(m)) − log(s)), with `math.exp` and `math.log`, so the bits are the
//! same on every ISA and thread count and within 1 ulp of the reference.
//!
//! Fast mode: the same steps in f32 vectors with math.expFast's polynomial (x_i − m kept exact as a rounded
//! difference and its error; 2^n by vscalefps on AVX-512), each two pieces of exponentials added in f32 and
//! then summed in f64 (the row's log s in f64 too), softmax as e_i · (1/s); within
//! `math.fast_bounds.softmax` and `math.fast_bounds.log_softmax` of exact mode. A row is read twice (max, then
//! exponentials and their sum, written once) and softmax's output rescaled in place while it is still in
//! cache; a row whose maximum is not finite (NaN, +∞, all −∞) is NaN without further work.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const math = @import("math.zig");
const ew = @import("elementwise.zig");
const Rows = @import("rows.zig").Rows;

const lanes = ew.lanes;
const V = ew.V;
const V64 = @Vector(lanes, f64);

/// Numbered by the op table (`zig/kernels/ops.zig`, generated from src/core/op_table.ts).
pub const SoftmaxOp = @import("ops.zig").SoftmaxOp;

/// One row: `len` elements, `stride` apart in the input and `out_stride` apart in the output.
const Line = struct {
    len: usize,
    stride: isize,
    out_stride: isize,

    inline fn load(line: Line, x: [*]const f32, i: usize) f32 {
        return ew.at([*]const f32, x, @as(isize, @intCast(i)) * line.stride)[0];
    }

    inline fn store(line: Line, y: [*]f32, i: usize, value: f32) void {
        ew.at([*]f32, y, @as(isize, @intCast(i)) * line.out_stride)[0] = value;
    }
};

/// The row's maximum, NaN when the row holds one (the sign of a zero maximum does not matter here:
/// x - (+0) and x - (-0) have the same exponential).
fn rowMax(x: [*]const f32, line: Line) f32 {
    var m = -std.math.inf(f32);
    for (0..line.len) |i| {
        const v = line.load(x, i);
        if (v != v) return v;
        if (v > m) m = v;
    }
    return m;
}

fn exactRow(comptime op: SoftmaxOp, x: [*]const f32, y: [*]f32, line: Line) void {
    const m: V64 = @splat(rowMax(x, line));
    var s: f64 = 0;
    var i: usize = 0;
    while (i < line.len) : (i += lanes) {
        const e: [lanes]f64 = math.expV(lanes, @as(V64, @floatCast(piece(x, line, i))) - m);
        // One element after another: the sum's order is the row's.
        for (e[0..@min(lanes, line.len - i)]) |v| s += v;
    }
    i = 0;
    switch (op) {
        .softmax => while (i < line.len) : (i += lanes) {
            const e = math.expV(lanes, @as(V64, @floatCast(piece(x, line, i))) - m);
            putPiece(y, line, i, @floatCast(e / @as(V64, @splat(s))));
        },
        .log_softmax => {
            const log_s: V64 = @splat(math.log(s));
            while (i < line.len) : (i += lanes) {
                putPiece(y, line, i, @floatCast((@as(V64, @floatCast(piece(x, line, i))) - m) - log_s));
            }
        },
    }
}

/// Loads lane-sized pieces of a row, straight from memory when it steps by one.
inline fn piece(x: [*]const f32, line: Line, i: usize) V {
    const count = @min(lanes, line.len - i);
    if (line.stride == 1 and count == lanes) return x[i..][0..lanes].*;
    return ew.gather(f32, ew.at([*]const f32, x, @as(isize, @intCast(i)) * line.stride), line.stride, count, -std.math.inf(f32));
}

inline fn putPiece(y: [*]f32, line: Line, i: usize, v: V) void {
    const count = @min(lanes, line.len - i);
    if (line.out_stride == 1 and count == lanes) {
        y[i..][0..lanes].* = v;
    } else {
        ew.scatter(f32, ew.at([*]f32, y, @as(isize, @intCast(i)) * line.out_stride), line.out_stride, count, v);
    }
}

/// Whether this variant's ISA has a fused multiply-add (as in math.zig: without one, a multiply and an add).
const has_fma = switch (@import("builtin").cpu.arch) {
    .x86_64 => std.Target.x86.featureSetHas(@import("builtin").cpu.features, .fma),
    .aarch64 => true,
    else => false,
};

inline fn mulAdd(comptime T: type, a: T, b: T, c: T) T {
    return if (has_fma) @mulAdd(T, a, b, c) else a * b + c;
}

/// The width of the contiguous loops: 16 lanes where AVX-512 has them (ew.lanes stays at 8 there), else
/// ew.lanes.
pub const wide = if (@import("builtin").cpu.arch == .x86_64 and
    std.Target.x86.featureSetHas(@import("builtin").cpu.features, .avx512f)) @max(16, lanes) else lanes;
const W = @Vector(wide, f32);
const W64 = @Vector(wide, f64);

/// Whether this variant has AVX-512 (with VL, as x86-64-v4): vscalefps scales by a power of two in one step.
const has_avx512 = @import("builtin").cpu.arch == .x86_64 and
    std.Target.x86.featureSetHas(@import("builtin").cpu.features, .avx512f) and
    std.Target.x86.featureSetHas(@import("builtin").cpu.features, .avx512vl);

/// p · 2^k for an integral k in [−150, 0] and p in [0.7, 1.5]: one rounding, so a subnormal result is p·2^k
/// rounded once. AVX-512's vscalefps does that in one instruction; elsewhere 2^k is applied as 2^h · 2^(k−h)
/// (h = ⌊k/2⌋), the first product exact, the same bits.
inline fn scaleBy2(comptime n: usize, p: @Vector(n, f32), k: @Vector(n, f32)) @Vector(n, f32) {
    if (has_avx512 and (n == 8 or n == 16)) {
        return asm ("vscalefps %[k], %[p], %[r]"
            : [r] "=v" (-> @Vector(n, f32)),
            : [p] "v" (p),
              [k] "v" (k),
        );
    }
    const I = @Vector(n, i32);
    const ni: I = @intFromFloat(k);
    const half = ni >> @splat(1);
    const s1: @Vector(n, f32) = @bitCast((half + @as(I, @splat(127))) << @splat(23));
    const s2: @Vector(n, f32) = @bitCast((ni - half + @as(I, @splat(127))) << @splat(23));
    return p * s1 * s2;
}

/// exp(x − m) for a finite row maximum m and x ≤ m (−∞ allowed; no NaN): x − m as a rounded part and its
/// exact rounding error (Knuth's two-sum), the error then added to the reduced argument, so the exponential's
/// error does not grow with |x − m|; a difference below `floor` (−104, whose exponential rounds to 0 in f32,
/// and −∞ or an overflow) is raised to it without an error term. Then math.expFast's steps: n = round((x − m) log2e),
/// r = (x − m) − n ln2 in two parts (fused), exp(r) by its Taylor polynomial of degree 7, times 2^n
/// (`scaleBy2`, so subnormal results come out). Neither overflow nor NaN can occur, so no clamp or NaN
/// select is needed.
inline fn expBelow(comptime n: usize, x: @Vector(n, f32), m: @Vector(n, f32), floor: @Vector(n, f32)) @Vector(n, f32) {
    const V_ = @Vector(n, f32);
    const raw = x - m;
    const back = raw - x;
    const in_range = raw >= floor;
    const hi = @select(f32, in_range, raw, floor);
    const lo = @select(f32, in_range, (x - (raw - back)) + (-m - back), @as(V_, @splat(0)));
    const shifter: V_ = @splat(0x1.8p23);
    const nf = mulAdd(V_, hi, @splat(1.44269504088896341), shifter) - shifter;
    // n·ln2_hi is exact (ln2_hi has 9 significant bits, |n| ≤ 150), so the first step is exact either way.
    var r = mulAdd(V_, -nf, @splat(0.693359375), hi);
    r = mulAdd(V_, -nf, @splat(-2.12194440e-4), r) + lo;
    var p: V_ = @splat(1.0 / 5040.0);
    inline for (.{ 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0 }) |c| p = mulAdd(V_, p, r, @splat(c));
    return scaleBy2(n, p, nf);
}

/// Two pieces of exponentials added lane by lane in f32 (one rounding, 2^-24 relative, of two positive
/// terms), then widened for the f64 sum: half the conversions of widening each piece.
inline fn pairSum(e0: W, e1: W) W64 {
    return @floatCast(e0 + e1);
}

/// The row's maximum, or NaN when the row holds a NaN; two independent accumulators.
fn fastMax(x: [*]const f32, line: Line) f32 {
    const ninf: W = @splat(-std.math.inf(f32));
    var acc = [2]W{ ninf, ninf };
    var nan = @as(@Vector(wide, bool), @splat(false));
    var i: usize = 0;
    if (line.stride == 1) {
        while (i + 2 * wide <= line.len) : (i += 2 * wide) {
            inline for (0..2) |u| {
                const v: W = x[i + u * wide ..][0..wide].*;
                nan = @select(bool, v != v, v != v, nan);
                acc[u] = @select(f32, v > acc[u], v, acc[u]);
            }
        }
    }
    var m = @max(@reduce(.Max, acc[0]), @reduce(.Max, acc[1]));
    var tail: V = @splat(-std.math.inf(f32));
    var tail_nan = @as(@Vector(lanes, bool), @splat(false));
    while (i < line.len) : (i += lanes) {
        const v = piece(x, line, i);
        tail_nan = @select(bool, v != v, v != v, tail_nan);
        tail = @select(f32, v > tail, v, tail);
    }
    if (@reduce(.Or, nan) or @reduce(.Or, tail_nan)) return std.math.nan(f32);
    m = @max(m, @reduce(.Max, tail));
    return m;
}

/// (x − m) − log s with x − m as a two-sum, its error added last.
inline fn logDifference(comptime n: usize, x: @Vector(n, f32), max: f32, log_s: f32) @Vector(n, f32) {
    const m: @Vector(n, f32) = @splat(max);
    const hi = x - m;
    const back = hi - x;
    const lo = (x - (hi - back)) + (-m - back);
    // −∞ inputs have no error term (their two-sum residual would be NaN).
    const finite = hi > @as(@Vector(n, f32), @splat(-std.math.inf(f32)));
    return (hi - @as(@Vector(n, f32), @splat(log_s))) + @select(f32, finite, lo, @as(@Vector(n, f32), @splat(0)));
}

fn fastRow(comptime op: SoftmaxOp, x: [*]const f32, y: [*]f32, line: Line) void {
    const max = fastMax(x, line);
    var i: usize = 0;
    if (!std.math.isFinite(max)) {
        // A NaN, +∞ (∞ − ∞) or a row of −∞ (−∞ − (−∞)) makes every output NaN, as in the definition.
        while (i < line.len) : (i += lanes) putPiece(y, line, i, @splat(std.math.nan(f32)));
        return;
    }
    const m: V = @splat(max);
    const floor: V = @splat(-104);
    var sum: W64 = @splat(0);
    if (line.stride == 1 and line.out_stride == 1) {
        const mw: W = @splat(max);
        const fw: W = @splat(-104);
        while (i + 2 * wide <= line.len) : (i += 2 * wide) {
            const e0 = expBelow(wide, x[i..][0..wide].*, mw, fw);
            const e1 = expBelow(wide, x[i + wide ..][0..wide].*, mw, fw);
            if (op == .softmax) {
                y[i..][0..wide].* = e0;
                y[i + wide ..][0..wide].* = e1;
            }
            sum += pairSum(e0, e1);
        }
    }
    var tail: V64 = @splat(0);
    while (i < line.len) : (i += lanes) {
        // Padding lanes read −∞, whose exponential is 0.
        const e = expBelow(lanes, piece(x, line, i), m, floor);
        tail += @as(V64, @floatCast(e));
        if (op == .softmax) putPiece(y, line, i, e);
    }
    const s = @reduce(.Add, sum) + @reduce(.Add, tail);
    i = 0;
    switch (op) {
        .softmax => {
            const r: V = @splat(@floatCast(1 / s));
            const out: Line = .{ .len = line.len, .stride = line.out_stride, .out_stride = line.out_stride };
            if (line.out_stride == 1) {
                const rw: W = @splat(r[0]);
                while (i + wide <= line.len) : (i += wide) y[i..][0..wide].* = @as(W, y[i..][0..wide].*) * rw;
            }
            while (i < line.len) : (i += lanes) putPiece(y, line, i, piece(y, out, i) * r);
        },
        .log_softmax => {
            // Once per row, so the exact f64 logarithm costs nothing; an f32 one would lose log s when s is
            // within an f32 step of 1 (one dominant element). x − m again as a two-sum (x ≥ m − 104 is not
            // needed here: a difference past f32's range is −∞, as in the definition).
            const log_s: f32 = @floatCast(math.log(s));
            if (line.stride == 1 and line.out_stride == 1) {
                while (i + wide <= line.len) : (i += wide) y[i..][0..wide].* = logDifference(wide, x[i..][0..wide].*, max, log_s);
            }
            while (i < line.len) : (i += lanes) putPiece(y, line, i, logDifference(lanes, piece(x, line, i), max, log_s));
        },
    }
}

fn SoftmaxSpan(comptime op: SoftmaxOp, comptime exact: bool) type {
    return struct {
        out: [*]f32,
        a: [*]const f32,
        line: Line,
        outer: [2]isize,

        pub fn span(self: *const @This(), offsets: [2]isize, begin: usize, end: usize) void {
            for (begin..end) |j| {
                const jj: isize = @intCast(j);
                const x = ew.at([*]const f32, self.a, offsets[1] + jj * self.outer[1]);
                const y = ew.at([*]f32, self.out, offsets[0] + jj * self.outer[0]);
                if (exact) exactRow(op, x, y, self.line) else fastRow(op, x, y, self.line);
            }
        }
    };
}

/// `zt_softmax_f32`: softmax (`args.op` 0) or log-softmax (1) over the last axis; assumes rank >= 1.
pub fn softmaxF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8) callconv(.c) void {
    std.debug.assert(args.rank >= 1 and (args.op == 0 or args.op == 1));
    const rank: usize = @intCast(args.rank);
    const shape = args.shapeSlice();
    const line: Line = .{
        .len = @intCast(shape[rank - 1]),
        .stride = args.operands[1].strides[rank - 1],
        .out_stride = args.operands[0].strides[rank - 1],
    };
    if (line.len == 0) return;
    const outer = Rows(2).init(shape[0 .. rank - 1], .{ &args.operands[0], &args.operands[1] });
    switch (@as(SoftmaxOp, @enumFromInt(args.op))) {
        inline else => |op| {
            if (ew.isExact(args)) run(op, true, rt, args, &outer, line, out, a) else run(op, false, rt, args, &outer, line, out, a);
        },
    }
}

fn run(comptime op: SoftmaxOp, comptime exact: bool, rt: *const table.Runtime, args: *const abi.ArgBlock, outer: *const Rows(2), line: Line, out: [*]u8, a: [*]const u8) void {
    const visit: SoftmaxSpan(op, exact) = .{
        .out = @ptrCast(@alignCast(out)),
        .a = @ptrCast(@alignCast(a)),
        .line = line,
        .outer = outer.innerStrides(),
    };
    const min_rows = (ew.parallel_min_elements / 8) / line.len;
    ew.runSpans(rt, args, outer, &visit, @max(2, min_rows), 1);
}

// --- tests ---

const testing = std.testing;

fn softmaxOnce(op: SoftmaxOp, mode: i32, shape: []const i32, strides: []const i32, out: []f32, a: []const f32) void {
    const args = ew.testArgs(shape, &.{ strides, strides }, &.{ 0, 0 }, @intFromEnum(op), mode, 1);
    softmaxF32(&ew.test_runtime, &args, @ptrCast(out.ptr), @ptrCast(a.ptr));
}

test "exact softmax follows the definition and sums to one" {
    const a = [_]f32{ 1, 2, 3, -1000, 0, 0, 0, 0 };
    var out: [8]f32 = undefined;
    softmaxOnce(.softmax, 1, &.{ 2, 4 }, &.{ 4, 1 }, &out, &a);
    const s = math.exp(-2) + math.exp(-1) + 1 + math.exp(-1003);
    try testing.expectEqual(@as(f32, @floatCast(math.exp(-2) / s)), out[0]);
    try testing.expectEqual(@as(f32, @floatCast(1 / s)), out[2]);
    try testing.expectEqual(@as(f32, 0), out[3]);
    try testing.expectEqual(@as(f32, 0.25), out[4]);
    softmaxOnce(.log_softmax, 1, &.{ 2, 4 }, &.{ 4, 1 }, &out, &a);
    try testing.expectEqual(@as(f32, @floatCast(-1 - math.log(s))), out[1]);
    try testing.expectEqual(@as(f32, @floatCast(-1003 - math.log(s))), out[3]);
}

test "fast softmax is within its bound, strided or not, and NaN rows stay NaN" {
    const len = 3 * lanes + 3;
    var a: [2 * len]f32 = undefined;
    for (&a, 0..) |*v, i| v.* = @as(f32, @floatFromInt((i * 37) % 101)) * 0.2 - 10;
    a[len + 4] = std.math.nan(f32);
    inline for (.{ SoftmaxOp.softmax, .log_softmax }) |op| {
        var exact: [2 * len]f32 = undefined;
        var fast: [2 * len]f32 = undefined;
        var strided: [2 * len]f32 = undefined;
        softmaxOnce(op, 1, &.{ 2, len }, &.{ len, 1 }, &exact, &a);
        softmaxOnce(op, 0, &.{ 2, len }, &.{ len, 1 }, &fast, &a);
        // The same rows read as a [len, 2] transpose's columns... as a strided row of stride 2 over a copy.
        var interleaved: [2 * len]f32 = undefined;
        for (0..len) |i| {
            interleaved[2 * i] = a[i];
            interleaved[2 * i + 1] = a[len + i];
        }
        softmaxOnce(op, 0, &.{ 2, len }, &.{ 1, 2 }, &strided, &interleaved);
        for (0..len) |i| {
            const want = exact[i];
            const bound = math.fast_bounds.softmax.ulps * @abs(want) * 0x1p-23 + 0x1p-149;
            try testing.expect(@abs(fast[i] - want) <= bound);
            try testing.expectEqual(fast[i], strided[2 * i]);
            try testing.expect(std.math.isNan(fast[len + i]) and std.math.isNan(exact[len + i]));
        }
    }
}

test "fast softmax: extreme maxima, −∞ entries and long contiguous rows stay within the bound" {
    const len = 5 * 16 + 3;
    var a: [2 * len]f32 = undefined;
    for (&a, 0..) |*v, i| v.* = @as(f32, @floatFromInt((i * 53) % 97)) * 1.3 - 60;
    a[0] = 3e38;
    a[1] = -3e38;
    a[2] = 3e38 - 1e32;
    a[len + 7] = -std.math.inf(f32);
    a[len + 9] = -std.math.inf(f32);
    inline for (.{ SoftmaxOp.softmax, .log_softmax }) |op| {
        var exact: [2 * len]f32 = undefined;
        var fast: [2 * len]f32 = undefined;
        softmaxOnce(op, 1, &.{ 2, len }, &.{ len, 1 }, &exact, &a);
        softmaxOnce(op, 0, &.{ 2, len }, &.{ len, 1 }, &fast, &a);
        for (exact, fast) |want, got| {
            const bound = math.fast_bounds.softmax.ulps * @abs(want) * 0x1p-23 + 0x1p-149 + if (op == .log_softmax) math.fast_bounds.log_softmax.abs else 0;
            try testing.expect(@abs(got - want) <= bound or got == want);
        }
    }
}

//! Transcendental functions of the kernels, in two kinds.
//!
//! Exact (f64, scalar): `exp`, `expm1`, `log`, `tanh`, `sigmoid`, `gelu`, `geluErf`, `erf`, `pow`. Each is one
//! algorithm made only of IEEE f64 additions, multiplications, divisions and comparisons (no libm call, no
//! fused multiply-add: Zig's strict float mode never contracts), so every ISA and every thread count gives the
//! same bits. Each is accurate to a few f64 ulps, so once rounded to f32 it is within 1 f32 ulp of the
//! TypeScript reference (which uses `Math.exp` and friends); `erf` and `gelu` follow the reference's formulas
//! operation for operation (`src/kernels/reference.ts`).
//!
//! Fast (f32 vectors of any width): `expFast`, `exp2Fast`, `expDiffFast`, `logFast`, `tanhFast`, `sigmoidFast`, `geluFast`, `geluErfFast`, `erfFast`,
//! `powFast`. Polynomial approximations evaluated in f32, with fused multiply-adds where the ISA has them, so
//! their bits may differ between ISAs. Their error bounds against the exact functions, checked by the tests
//! at the bottom of this file and by `tests/kernels_elementwise.test.ts`, are in `fast_bounds` (`exp2Fast`
//! and `expDiffFast`, which no element-wise op exposes, state their own).
const std = @import("std");
const builtin = @import("builtin");

const inf64 = std.math.inf(f64);
const nan64 = std.math.nan(f64);

// --- exact, f64 ---
//
// Each function is written once over vectors of f64 (`n` lanes, 1 for the scalar wrappers) without
// branches on the data, so a lane's bits never depend on the vector width or on its neighbours.

fn F(comptime n: usize) type {
    return @Vector(n, f64);
}

inline fn splat64(comptime n: usize, value: f64) F(n) {
    return @splat(value);
}

/// Horner evaluation, highest degree first: c[0] r^k + ... + c[k], as c[k] + r (c[k-1] + r (...)).
inline fn horner64(comptime n: usize, r: F(n), comptime c: []const f64) F(n) {
    var q: F(n) = @splat(c[0]);
    inline for (c[1..]) |k| q = splat64(n, k) + r * q;
    return q;
}

/// The sign of `sign` on the magnitude of `magnitude`.
inline fn copysign64(comptime n: usize, magnitude: F(n), sign: F(n)) F(n) {
    const U = @Vector(n, u64);
    const mask: U = @splat(0x8000_0000_0000_0000);
    return @bitCast((@as(U, @bitCast(magnitude)) & ~mask) | (@as(U, @bitCast(sign)) & mask));
}

/// ln 2 split so that `n * ln2_hi` is exact for |n| < 2^21 (ln2_hi has 32 significant bits).
const ln2_hi: f64 = 6.93147180369123816490e-01;
const ln2_lo: f64 = 1.90821492927058770002e-10;
const log2e: f64 = 1.44269504088896338700e+00;
/// Adding and subtracting 1.5 * 2^52 rounds a double of magnitude below 2^51 to an integer (ties to even).
const round_shifter: f64 = 0x1.8p52;
const exp_max: f64 = 709.782712893384;
const exp_min: f64 = -745.2;

/// 1/k! for k = 13 down to 0.
const exp_taylor = [_]f64{
    1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
    1.0 / 40320.0,      1.0 / 5040.0,      1.0 / 720.0,      1.0 / 120.0,     1.0 / 24.0,
    1.0 / 6.0,          1.0 / 2.0,         1.0,              1.0,
};

/// 2^e for e in [-1022, 1023].
inline fn pow2(comptime n: usize, e: @Vector(n, i32)) F(n) {
    const biased: @Vector(n, u64) = @intCast(e + @as(@Vector(n, i32), @splat(1023)));
    return @bitCast(biased << @splat(52));
}

/// exp(x). exp(r) for |r| <= ln2/2 by its Taylor polynomial of degree 13 (truncation below 5e-18), after
/// the reduction x = k ln2 + r; 2^k is applied as 2^h · 2^(k-h), the first product exact, so subnormal
/// results round once.
pub fn expV(comptime n: usize, x: F(n)) F(n) {
    const I = @Vector(n, i32);
    const xc = @min(@max(x, splat64(n, exp_min)), splat64(n, exp_max));
    const k = (xc * splat64(n, log2e) + splat64(n, round_shifter)) - splat64(n, round_shifter);
    const r = (xc - k * splat64(n, ln2_hi)) - k * splat64(n, ln2_lo);
    const p = horner64(n, r, &exp_taylor);
    const ki: I = @intFromFloat(k);
    const half = ki >> @splat(1);
    const y = p * pow2(n, half) * pow2(n, ki - half);
    const out = @select(f64, x > splat64(n, exp_max), splat64(n, inf64), @select(f64, x < splat64(n, exp_min), splat64(n, 0), y));
    return @select(f64, x != x, x, out);
}

/// 1/k! for k = 16 down to 1: expm1(x) = x (1 + x/2! + ... + x^15/16!).
const expm1_taylor = [_]f64{
    1.0 / 20922789888000.0, 1.0 / 1307674368000.0, 1.0 / 87178291200.0, 1.0 / 6227020800.0,
    1.0 / 479001600.0,      1.0 / 39916800.0,      1.0 / 3628800.0,     1.0 / 362880.0,
    1.0 / 40320.0,          1.0 / 5040.0,          1.0 / 720.0,         1.0 / 120.0,
    1.0 / 24.0,             1.0 / 6.0,             1.0 / 2.0,           1.0,
};

/// exp(x) - 1 without cancellation near 0: its Taylor polynomial for |x| < 0.5 (truncation below 1e-19
/// relative), exp(x) - 1 beyond (where the cancellation costs at most a factor 2.6).
pub fn expm1V(comptime n: usize, x: F(n)) F(n) {
    const small = x * horner64(n, x, &expm1_taylor);
    return @select(f64, @abs(x) < splat64(n, 0.5), small, expV(n, x) - splat64(n, 1));
}

/// 1/(2k+1) for k = 11 down to 1.
const atanh_series = [_]f64{
    1.0 / 23.0, 1.0 / 21.0, 1.0 / 19.0, 1.0 / 17.0, 1.0 / 15.0, 1.0 / 13.0,
    1.0 / 11.0, 1.0 / 9.0,  1.0 / 7.0,  1.0 / 5.0,  1.0 / 3.0,
};

/// log(x). With x = 2^e m and m in [sqrt(1/2), sqrt(2)): log m = 2 atanh(s), s = (m - 1)/(m + 1), by its odd
/// series to s^23 (|s| <= 0.172, truncation below 1e-18), plus e ln2 in two parts.
pub fn logV(comptime n: usize, x_in: F(n)) F(n) {
    const I = @Vector(n, i32);
    const U = @Vector(n, u64);
    const subnormal = x_in < splat64(n, 0x1p-1022);
    const x = @select(f64, subnormal, x_in * splat64(n, 0x1p54), x_in);
    const bits: U = @bitCast(x);
    var e: I = @as(I, @intCast(bits >> @splat(52))) - @as(I, @splat(1023));
    e -= @select(i32, subnormal, @as(I, @splat(54)), @as(I, @splat(0)));
    var m: F(n) = @bitCast((bits & @as(U, @splat(0x000f_ffff_ffff_ffff))) | @as(U, @splat(0x3ff0_0000_0000_0000)));
    const big = m > splat64(n, std.math.sqrt2);
    m = @select(f64, big, m * splat64(n, 0.5), m);
    e += @select(i32, big, @as(I, @splat(1)), @as(I, @splat(0)));
    const f = m - splat64(n, 1);
    const s = f / (splat64(n, 2) + f);
    const z = s * s;
    const w = z * horner64(n, z, &atanh_series);
    const two_s = splat64(n, 2) * s;
    const log_m = two_s + two_s * w;
    const ef: F(n) = @floatFromInt(e);
    const y = ef * splat64(n, ln2_hi) + (ef * splat64(n, ln2_lo) + log_m);
    const inf = splat64(n, inf64);
    var out = @select(f64, x_in == inf, inf, y);
    out = @select(f64, x_in == splat64(n, 0), -inf, out);
    return @select(f64, either(x_in < splat64(n, 0), x_in != x_in), splat64(n, nan64), out);
}

/// tanh(x) = t / (t + 2) with t = expm1(2|x|), the sign restored; ±1 beyond |x| = 22.
pub fn tanhV(comptime n: usize, x: F(n)) F(n) {
    const a = @abs(x);
    const t = expm1V(n, splat64(n, 2) * a);
    const r = @select(f64, a >= splat64(n, 22), splat64(n, 1), t / (t + splat64(n, 2)));
    return copysign64(n, r, x);
}

/// 1 / (1 + exp(-x)): relatively accurate over the whole range.
pub fn sigmoidV(comptime n: usize, x: F(n)) F(n) {
    return splat64(n, 1) / (splat64(n, 1) + expV(n, -x));
}

/// √(2/π) and the cubic coefficient of the tanh form of GELU.
pub const gelu_c: f64 = 0.7978845608028654;
pub const gelu_a: f64 = 0.044715;

/// GELU, tanh form: 0.5 x (1 + tanh(u)) with u = √(2/π)(x + 0.044715 x³), computed as the equal
/// x / (1 + exp(-2u)), which keeps its relative accuracy for negative x. gelu(-inf) = -0.
pub fn geluV(comptime n: usize, x: F(n)) F(n) {
    const u = splat64(n, gelu_c) * (x + splat64(n, gelu_a) * (x * x * x));
    const y = x / (splat64(n, 1) + expV(n, splat64(n, -2) * u));
    return @select(f64, x == splat64(n, -inf64), splat64(n, -0.0), y);
}

pub const two_over_sqrt_pi: f64 = 1.1283791670955126;

/// erf(x) = (2/√π) e^(-x²) Σ (2x²)^k x / (1·3·5···(2k+1)): a series of positive terms (no cancellation),
/// summed until a term falls below 2^-56 of the sum (each lane stops on its own); ±1 for |x| >= 4, where
/// erf rounds to ±1 in f32.
pub fn erfV(comptime n: usize, x: F(n)) F(n) {
    const B = @Vector(n, bool);
    const a = @abs(x);
    const in_series = a < splat64(n, 4);
    // Lanes outside the series (|x| >= 4, NaN) sum from 0, which stops at once.
    const as = @select(f64, in_series, a, splat64(n, 0));
    const x2 = as * as;
    const t = splat64(n, 2) * x2;
    var term = as;
    var sum = as;
    var denominator = splat64(n, 1);
    var active: B = @splat(true);
    while (@reduce(.Or, active)) {
        denominator += splat64(n, 2);
        const next_term = term * t / denominator;
        const next_sum = sum + next_term;
        term = @select(f64, active, next_term, term);
        sum = @select(f64, active, next_sum, sum);
        active = @select(bool, next_term <= next_sum * splat64(n, 0x1p-56), @as(B, @splat(false)), active);
    }
    const series = sum * expV(n, -x2) * splat64(n, two_over_sqrt_pi);
    const r = copysign64(n, @select(f64, in_series, series, splat64(n, 1)), x);
    return @select(f64, x != x, x, r);
}

/// 1/√2 and 1/√π.
pub const sqrt1_2: f64 = 0.7071067811865476;
pub const one_over_sqrt_pi: f64 = 0.5641895835477563;

/// erfc(a) for a >= 4 by its continued fraction e^(-a²)/√π · 1/(a + (1/2)/(a + (2/2)/(a + (3/2)/(...)))),
/// evaluated from its 20th level up (relative error below 1e-13 there, from e^(-a²)'s rounding).
fn erfcTailV(comptime n: usize, a: F(n)) F(n) {
    var t = a;
    inline for (0..20) |i| t = a + splat64(n, @as(f64, @floatFromInt(20 - i)) / 2) / t;
    return expV(n, -(a * a)) * splat64(n, one_over_sqrt_pi) / t;
}

/// GELU, erf form (PyTorch's default): x·Φ(x) with Φ(x) = 0.5·(1 + erf(s)), s = x/√2, and, where erf
/// rounds to -1 (s <= -4), Φ(x) = 0.5·erfc(-s) by `erfcTailV`, so the result keeps its relative accuracy
/// down to the f32 subnormals. gelu(-inf) = -0 (the limit), gelu(+inf) = +inf.
pub fn geluErfV(comptime n: usize, x: F(n)) F(n) {
    const s = x * splat64(n, sqrt1_2);
    var phi = splat64(n, 0.5) * (splat64(n, 1) + erfV(n, s));
    // The tail is computed only when a lane needs it (a lane's value never depends on its neighbours).
    const far = s <= splat64(n, -4);
    if (@reduce(.Or, far)) phi = @select(f64, far, splat64(n, 0.5) * erfcTailV(n, @max(-s, splat64(n, 4))), phi);
    const y = x * phi;
    return @select(f64, x == splat64(n, -inf64), splat64(n, -0.0), y);
}

/// x^y in lanes: exp(y log|x|) for x > 0, x != 1 and finite nonzero y; every other lane takes `pow`.
pub fn powV(comptime n: usize, x: F(n), y: F(n)) F(n) {
    const inf = splat64(n, inf64);
    const special = either(
        either(either(x <= splat64(n, 0), x == splat64(n, 1)), either(y == splat64(n, 0), x != x)),
        either(either(x == inf, @abs(y) == inf), y != y),
    );
    const safe_x = @select(f64, special, splat64(n, 2), x);
    var result = expV(n, y * logV(n, safe_x));
    if (@reduce(.Or, special)) {
        inline for (0..n) |i| {
            if (special[i]) result[i] = pow(x[i], y[i]);
        }
    }
    return result;
}

/// log(1 + x) without cancellation near 0: u = 1 + x rounded, then log(u)·x/(u - 1), which cancels u's
/// rounding error (Goldberg's form); x itself where u rounds to 1, +inf at +inf.
pub fn log1pV(comptime n: usize, x: F(n)) F(n) {
    const u = splat64(n, 1) + x;
    const one = u == splat64(n, 1);
    const safe_den = @select(f64, one, splat64(n, 1), u - splat64(n, 1));
    const r = logV(n, u) * (x / safe_den);
    return @select(f64, one, x, @select(f64, x == splat64(n, inf64), x, r));
}

/// silu(x) = x / (1 + exp(-x)).
pub fn siluV(comptime n: usize, x: F(n)) F(n) {
    return x / (splat64(n, 1) + expV(n, -x));
}

/// softplus with beta and threshold: z = f32(x·beta) (an f32 product, as PyTorch computes it); x where z >
/// threshold, else log1p(exp(z)) / beta.
pub fn softplusV(comptime n: usize, x: @Vector(n, f32), beta: f32, threshold: f32) F(n) {
    const z: @Vector(n, f32) = x * @as(@Vector(n, f32), @splat(beta));
    const y = log1pV(n, expV(n, z)) / splat64(n, beta);
    return @select(f64, z > @as(@Vector(n, f32), @splat(threshold)), @as(F(n), x), y);
}

/// elu(x) = x for x > 0, alpha·expm1(x) otherwise.
pub fn eluV(comptime n: usize, x: F(n), alpha: f32) F(n) {
    return @select(f64, x > splat64(n, 0), x, splat64(n, alpha) * expm1V(n, x));
}

/// Scalar forms of the vector functions (the same bits).
pub fn exp(x: f64) f64 {
    return expV(1, .{x})[0];
}

pub fn expm1(x: f64) f64 {
    return expm1V(1, .{x})[0];
}

pub fn log(x: f64) f64 {
    return logV(1, .{x})[0];
}

pub fn tanh(x: f64) f64 {
    return tanhV(1, .{x})[0];
}

pub fn sigmoid(x: f64) f64 {
    return sigmoidV(1, .{x})[0];
}

pub fn gelu(x: f64) f64 {
    return geluV(1, .{x})[0];
}

pub fn erf(x: f64) f64 {
    return erfV(1, .{x})[0];
}

pub fn geluErf(x: f64) f64 {
    return geluErfV(1, .{x})[0];
}

/// Whether y is an odd integer.
fn isOddInteger(y: f64) bool {
    if (!(@abs(y) < 0x1p53)) return false;
    return @trunc(y) == y and @abs(@rem(y, 2.0)) == 1;
}

/// x^y with C99 (and PyTorch) special cases: pow(x, ±0) = 1 and pow(1, y) = 1 even for NaN, pow(-1, ±inf)
/// = 1; otherwise exp(y log|x|), negated for a negative x and an odd integer y, NaN for a negative x and a
/// non-integer y. For f32 arguments and a result in the f32 range, |y log|x|| < 104 so the product's
/// rounding costs below 3e-14 relative.
pub fn pow(x: f64, y: f64) f64 {
    if (y == 0 or x == 1) return 1;
    if (x != x or y != y) return nan64;
    const ax = @abs(x);
    if (@abs(y) == inf64) {
        if (ax == 1) return 1;
        return if ((ax < 1) == (y < 0)) inf64 else 0;
    }
    const odd = isOddInteger(y);
    if (x == 0 or ax == inf64) {
        const big = (x == 0) == (y < 0);
        const magnitude: f64 = if (big) inf64 else 0;
        return if (odd and std.math.signbit(x)) -magnitude else magnitude;
    }
    if (x < 0 and @trunc(y) != y) return nan64;
    const r = exp(y * log(ax));
    return if (x < 0 and odd) -r else r;
}

// --- fast, f32 vectors ---

/// Whether this variant's ISA has a fused multiply-add; without one, `mulAdd` is a multiply and an add
/// (a libcall per lane would be far slower).
const has_fma = switch (builtin.cpu.arch) {
    .x86_64 => std.Target.x86.featureSetHas(builtin.cpu.features, .fma),
    .aarch64 => true,
    else => false,
};

/// Whether this variant has AVX-512's 14-bit reciprocal estimate (`vrcp14ps`, 128 to 512 bits with AVX-512VL).
const has_rcp14 = builtin.cpu.arch == .x86_64 and std.Target.x86.featureSetHas(builtin.cpu.features, .avx512vl);

extern fn @"llvm.x86.avx512.rcp14.ps.512"(a: @Vector(16, f32), src: @Vector(16, f32), mask: u16) @Vector(16, f32);
extern fn @"llvm.x86.avx512.rcp14.ps.256"(a: @Vector(8, f32), src: @Vector(8, f32), mask: u8) @Vector(8, f32);
extern fn @"llvm.x86.avx512.rcp14.ps.128"(a: @Vector(4, f32), src: @Vector(4, f32), mask: u8) @Vector(4, f32);

/// `vrcp14ps` of each lane (relative error below 2^-14), at the widths the instruction has; another width
/// takes its lanes one by one through the 4-lane form, so a lane's estimate never depends on the width.
inline fn rcp14(comptime n: usize, d: @Vector(n, f32)) @Vector(n, f32) {
    switch (n) {
        16 => return @"llvm.x86.avx512.rcp14.ps.512"(d, @splat(0), 0xffff),
        8 => return @"llvm.x86.avx512.rcp14.ps.256"(d, @splat(0), 0xff),
        4 => return @"llvm.x86.avx512.rcp14.ps.128"(d, @splat(0), 0xf),
        else => {
            var q: @Vector(n, f32) = undefined;
            inline for (0..n) |i| q[i] = @"llvm.x86.avx512.rcp14.ps.128"(@splat(d[i]), @splat(0), 0xf)[0];
            return q;
        },
    }
}

/// a/d for the fast functions' quotients (d normal, of magnitude in [1, 2]): on AVX-512, a times the 14-bit
/// estimate of 1/d refined by one Newton step, q0 + q0·(1 − d·q0) in two fused multiply-adds (within 0.5 ulp
/// + 2^-27 of 1/d), in place of a division that runs at a fraction of the FMA rate on these cores; elsewhere
/// the division.
inline fn quotient(comptime n: usize, a: @Vector(n, f32), d: @Vector(n, f32)) @Vector(n, f32) {
    const V = @Vector(n, f32);
    if (!has_rcp14) return a / d;
    const q0 = rcp14(n, d);
    return a * mulAdd(V, q0, mulAdd(V, -d, q0, splat(n, 1.0)), q0);
}

const gelu_c32: f32 = 0.7978845608028654;
const gelu_a32: f32 = 0.044715;

inline fn mulAdd(comptime V: type, a: V, b: V, c: V) V {
    return if (has_fma) @mulAdd(V, a, b, c) else a * b + c;
}

inline fn splat(comptime n: usize, value: f32) @Vector(n, f32) {
    return @splat(value);
}

/// Lane-wise `a or b` (vectors of bool have no `or`).
inline fn either(a: anytype, b: @TypeOf(a)) @TypeOf(a) {
    return @select(bool, a, a, b);
}

/// Horner evaluation of the polynomial with coefficients `c` (highest degree first).
inline fn horner(comptime n: usize, x: @Vector(n, f32), comptime c: []const f32) @Vector(n, f32) {
    const V = @Vector(n, f32);
    var r: V = @splat(c[0]);
    inline for (c[1..]) |k| r = mulAdd(V, r, x, @splat(k));
    return r;
}

/// Error bounds of the fast functions against the exact ones rounded to f32, for finite results: a result
/// `fast` passes when |fast - exact| <= ulps * ulp(exact) * (1 + slope * |arg|) + abs, where `arg` is the
/// quantity named in each comment (the error of an exponent's rounding grows with its size), and `ulp` is
/// at least the smallest normal's ulp (2^-149). Special values (NaN, ±inf, ±0 where exact) match exactly.
pub const FastBound = struct { ulps: f32, slope: f32 = 0, abs: f32 = 0 };
pub const fast_bounds = struct {
    pub const exp: FastBound = .{ .ulps = 3 };
    pub const log: FastBound = .{ .ulps = 3 };
    pub const tanh: FastBound = .{ .ulps = 4 };
    pub const sigmoid: FastBound = .{ .ulps = 4 };
    /// arg = |2u|, u = √(2/π)(x + 0.044715x³): the exponent of exp(-2u) carries u's rounding.
    pub const gelu: FastBound = .{ .ulps = 6, .slope = 1 };
    pub const erf: FastBound = .{ .ulps = 4 };
    /// Φ = 0.5 + 0.5·erf(s) just above s = -1 multiplies erf's error by up to 5; absolute part: a subnormal
    /// result inherits exp's subnormal rounding times |x| (up to 15).
    pub const gelu_erf: FastBound = .{ .ulps = 16, .abs = 0x1p-140 };
    /// arg = |y ln|x||: log's relative error is multiplied by the size of the exponent.
    pub const pow: FastBound = .{ .ulps = 4, .slope = 2 };
    pub const softmax: FastBound = .{ .ulps = 6 };
    pub const log1p: FastBound = .{ .ulps = 6 };
    pub const expm1: FastBound = .{ .ulps = 12 };
    /// Absolute part: a subnormal result inherits sigmoid's subnormal rounding times |x| (up to 104).
    pub const silu: FastBound = .{ .ulps = 6, .abs = 0x1p-140 };
    pub const softplus: FastBound = .{ .ulps = 12 };
    pub const elu: FastBound = .{ .ulps = 12 };
    /// Absolute part: log s inherits the exponentials' f32 error, 2^-22 at most, whatever the result's size.
    pub const log_softmax: FastBound = .{ .ulps = 6, .abs = 0x1p-21 };
};

const ln2_hi32: f32 = 0.693359375;
const ln2_lo32: f32 = -2.12194440e-4;
const log2e32: f32 = 1.44269504088896341;
const round_shifter32: f32 = 0x1.8p23;
/// exp(r) for |r| ≤ ln2/2 by its Taylor polynomial of degree 7 (truncation below 6e-9), highest degree first.
const exp_taylor32 = [_]f32{ 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0 };

/// exp(x): n = round(x log2e), r = x - n ln2 (exact first part), exp(r) by its Taylor polynomial of degree 7
/// (truncation below 6e-9 for |r| <= 0.35), times 2^n in two steps so that subnormal results come out.
pub fn expFast(comptime n: usize, x: @Vector(n, f32)) @Vector(n, f32) {
    const V = @Vector(n, f32);
    const I = @Vector(n, i32);
    // exp(89) overflows and exp(-104) rounds to 0; NaN becomes a bound here and is restored at the end.
    const xc = @min(@max(x, splat(n, -104.0)), splat(n, 89.0));
    const nf = mulAdd(V, xc, splat(n, log2e32), splat(n, round_shifter32)) - splat(n, round_shifter32);
    var r = xc - nf * splat(n, ln2_hi32);
    r = r - nf * splat(n, ln2_lo32);
    const p = horner(n, r, &exp_taylor32);
    const ni: I = @intFromFloat(nf);
    const half = ni >> @splat(1);
    const s1: V = @bitCast((half + @as(I, @splat(127))) << @splat(23));
    const s2: V = @bitCast((ni - half + @as(I, @splat(127))) << @splat(23));
    return @select(f32, x != x, x, p * s1 * s2);
}

/// Adding 1.5·2^23 + 127 to t in [−127, 127] rounds it to an integer n whose f32 sum holds n + 127, the
/// exponent field of 2^n, in its low bits.
const exp2_shifter: f32 = 0x1.8p23 + 127.0;

/// 2^r for r in [−½, ½]: the degree-6 polynomial fitted to 2^r at Chebyshev nodes (mpmath `chebyfit`),
/// coefficients rounded to f32 and highest degree first; relative error 1.9e-8 (with the rounding of the
/// coefficients), 1.3·2^-24 evaluated in f32 with fused multiply-adds.
inline fn exp2Poly(comptime n: usize, r: @Vector(n, f32)) @Vector(n, f32) {
    return horner(n, r, &.{ 1.5461444854736328e-4, 1.3400427997112274e-3, 9.618056938052177e-3, 5.550327152013779e-2, 2.4022650718688965e-1, 6.931471824645996e-1, 1.0 });
}

/// 2^n from j = t + exp2_shifter: n + 127 shifted into the exponent field (0 for n = −127).
inline fn exp2Scale(comptime n: usize, j: @Vector(n, f32)) @Vector(n, f32) {
    return @bitCast(@as(@Vector(n, u32), @bitCast(j)) << @splat(23));
}

/// 2^x for x ≤ 127 (no overflow check: the callers' arguments are ≤ 0 up to a rounding): 2^n·P(r) with n the
/// nearest integer, r = x − n in [−½, ½] (exact) and P `exp2Poly`, within 2 ulps of 2^x for results of at
/// least 2^-126.5; arguments below −126.5 (−∞ among them) give 0, NaN stays NaN. Cheaper than `expFast` (one
/// scaling step, no clamp above, no NaN select).
pub inline fn exp2Fast(comptime n: usize, x: @Vector(n, f32)) @Vector(n, f32) {
    const W = @Vector(n, f32);
    const low: W = @splat(-127.0);
    const xc = @select(f32, x < low, low, x);
    const shifter: W = @splat(exp2_shifter);
    const j = xc + shifter;
    return exp2Poly(n, xc - (j - shifter)) * exp2Scale(n, j);
}

/// e^(x − shift) for x − shift ≤ 88 (the callers' x is at most their running maximum `shift`), the
/// exponential of flash attention and of crossEntropy's log-sum-exp in fast mode: d = x − shift (one
/// rounding), n the nearest integer to d·log2 e and r = d·log2 e − n, each by a fused multiply-add where the
/// ISA has one (so r carries no rounding of the product), then 2^n·P(r) with P `exp2Poly`. Relative error at
/// most 2^-24·(2.3·|x − shift| + 4) for results of at least 2^-126.5 (d's rounding, log2 e's, P's 1.3 and the
/// final product's ½); d below −88 (−∞ among them) gives 0, NaN stays NaN.
pub inline fn expDiffFast(comptime n: usize, x: @Vector(n, f32), shift: @Vector(n, f32)) @Vector(n, f32) {
    const W = @Vector(n, f32);
    const low: W = @splat(-88.0);
    const d = x - shift;
    const dc = @select(f32, d < low, low, d);
    const shifter: W = @splat(exp2_shifter);
    const j = mulAdd(W, dc, @splat(log2e32), shifter);
    const r = mulAdd(W, dc, @splat(log2e32), shifter - j);
    return exp2Poly(n, r) * exp2Scale(n, j);
}

/// log(x): x = 2^e m with m in [√½, √2), log m = 2 atanh(s), s = (m-1)/(m+1), by its series to s^9.
pub fn logFast(comptime n: usize, x: @Vector(n, f32)) @Vector(n, f32) {
    const V = @Vector(n, f32);
    const U = @Vector(n, u32);
    const I = @Vector(n, i32);
    const subnormal = x < splat(n, 0x1p-126);
    const xs = @select(f32, subnormal, x * splat(n, 0x1p23), x);
    const bits: U = @bitCast(xs);
    var e: I = @as(I, @bitCast(bits >> @splat(23))) - @as(I, @splat(127));
    e -= @select(i32, subnormal, @as(I, @splat(23)), @as(I, @splat(0)));
    var m: V = @bitCast((bits & @as(U, @splat(0x007f_ffff))) | @as(U, @splat(0x3f80_0000)));
    const big = m > splat(n, std.math.sqrt2);
    m = @select(f32, big, m * splat(n, 0.5), m);
    e += @select(i32, big, @as(I, @splat(1)), @as(I, @splat(0)));
    const f = m - splat(n, 1.0);
    const s = f / (f + splat(n, 2.0));
    const z = s * s;
    const w = z * horner(n, z, &.{ 2.0 / 9.0, 2.0 / 7.0, 2.0 / 5.0, 2.0 / 3.0 });
    const log_m = mulAdd(V, s, w, s + s);
    const ef: V = @floatFromInt(e);
    const y = mulAdd(V, ef, splat(n, ln2_hi32), mulAdd(V, ef, splat(n, ln2_lo32), log_m));
    const inf: V = @splat(std.math.inf(f32));
    var result = @select(f32, x == inf, inf, y);
    result = @select(f32, x == splat(n, 0), -inf, result);
    return @select(f32, either(x < splat(n, 0), x != x), splat(n, std.math.nan(f32)), result);
}

/// Adding 1.5·2^23 + 191 to t in [−151, 0] rounds it to an integer n whose f32 sum holds n + 191, the exponent
/// field of 2^(n+64), in its low bits.
const exp_neg_shifter: f32 = 0x1.8p23 + 191.0;

/// e^x for x ≤ 0 (the callers pass −|y|), `expFast`'s steps less what this range does not need: n = round(x
/// log2e), r = x − n ln2 (exact first part), e^r by the Taylor polynomial of degree 7, then 2^n applied as
/// 2^(n+64)·2^-64: the first product exact (n + 64 ≥ −87 is a normal exponent), the second rounding once, so
/// subnormal results come out as `expFast`'s do, with one shift and two products where `expFast` takes two
/// scalings, an upper clamp and a NaN select. Arguments below −104 give 0 (−∞ among them); NaN stays NaN.
inline fn expNegFast(comptime n: usize, x: @Vector(n, f32)) @Vector(n, f32) {
    const V = @Vector(n, f32);
    const low: V = @splat(-104.0);
    const xc = @select(f32, x < low, low, x);
    const shifter: V = @splat(exp_neg_shifter);
    const j = mulAdd(V, xc, splat(n, log2e32), shifter);
    const nf = j - shifter;
    const r = mulAdd(V, nf, splat(n, -ln2_lo32), mulAdd(V, nf, splat(n, -ln2_hi32), xc));
    const p = horner(n, r, &exp_taylor32);
    const scale: V = @bitCast(@as(@Vector(n, u32), @bitCast(j)) << @splat(23));
    return p * scale * splat(n, 0x1p-64);
}

/// tanh(x): the odd Taylor polynomial to x^15 for |x| < 0.5 (truncation below 1e-8), else
/// (1 − e)/(1 + e) with e = e^(−2|x|) ≤ e^-1 (`expNegFast`, the quotient by `quotient`) and the sign restored.
pub fn tanhFast(comptime n: usize, x: @Vector(n, f32)) @Vector(n, f32) {
    const V = @Vector(n, f32);
    const a = @abs(x);
    const z = x * x;
    const small = x * horner(n, z, &.{
        -929569.0 / 638512875.0, 21844.0 / 6081075.0, -1382.0 / 155925.0, 62.0 / 2835.0,
        -17.0 / 315.0,           2.0 / 15.0,          -1.0 / 3.0,         1.0,
    });
    const e = expNegFast(n, a * splat(n, -2.0));
    const large_abs = quotient(n, splat(n, 1.0) - e, splat(n, 1.0) + e);
    const sign_mask: @Vector(n, u32) = @splat(0x8000_0000);
    const large: V = @bitCast(@as(@Vector(n, u32), @bitCast(large_abs)) | (@as(@Vector(n, u32), @bitCast(x)) & sign_mask));
    return @select(f32, a < splat(n, 0.5), small, large);
}

/// 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0, with e = e^(−|x|) (`expNegFast`) and 1/(1 + e) by
/// `quotient`: e never overflows, so results down to the subnormals keep their relative accuracy.
pub fn sigmoidFast(comptime n: usize, x: @Vector(n, f32)) @Vector(n, f32) {
    const e = expNegFast(n, -@abs(x));
    const q = quotient(n, splat(n, 1.0), splat(n, 1.0) + e);
    return @select(f32, x >= splat(n, 0), q, e * q);
}

/// x · sigmoid(2u), u = √(2/π)(x + 0.044715x³): the same function as 0.5x(1 + tanh(u)), relatively
/// accurate for negative x too; gelu(-inf) = -0.
pub fn geluFast(comptime n: usize, x: @Vector(n, f32)) @Vector(n, f32) {
    const V = @Vector(n, f32);
    const u = splat(n, gelu_c32) * mulAdd(V, splat(n, gelu_a32) * (x * x), x, x);
    const y = x * sigmoidFast(n, u + u);
    return @select(f32, x == splat(n, -std.math.inf(f32)), splat(n, -0.0), y);
}

/// erf(x) for |x| < 1: x P(x²), P a degree-6 Chebyshev fit of erf(√z)/√z on [0, 1] (error 1.3e-9).
const erf_small = [_]f32{
    7.875875062685488e-05, -0.000801686428716587, 0.005189087423433974, -0.026854212010626412,
    0.11283594715160218,   -0.37612626666720334,  1.1283791658483509,
};
/// erfc(a) e^(a²) for 1 <= a < 4 as a polynomial in s = 1/a - 0.625: a degree-9 Chebyshev fit on
/// s in [-0.375, 0.375] (error 4.8e-9).
const erfc_scaled = [_]f32{
    0.02503254318653564,   -0.007090389200874667, -0.026610224160197794, 0.04466035463530791,
    -0.046975775462040355, 0.023258428922195633,  0.04376821965127413,   -0.1723935043927423,
    0.3822837581694632,    0.3059529887942309,
};

/// erf(x): x P(x²) for |x| < 1; 1 - e^(-x²) G(1/|x|) with the sign restored for 1 <= |x| < 4; ±1 beyond.
/// x² is split into a rounded part and its rounding error so that e^(-x²) keeps f32 accuracy.
pub fn erfFast(comptime n: usize, x: @Vector(n, f32)) @Vector(n, f32) {
    const V = @Vector(n, f32);
    const a = @abs(x);
    const z = x * x;
    const small = x * horner(n, z, &erf_small);
    const ac = @min(@max(a, splat(n, 1.0)), splat(n, 4.0));
    const z_hi = ac * ac;
    const large_abs = splat(n, 1.0) - erfcFast(n, ac, z_hi, squareError(n, ac, z_hi));
    const sign_mask: @Vector(n, u32) = @splat(0x8000_0000);
    const large: V = @bitCast(@as(@Vector(n, u32), @bitCast(large_abs)) | (@as(@Vector(n, u32), @bitCast(x)) & sign_mask));
    const one: V = @bitCast(@as(@Vector(n, u32), @bitCast(splat(n, 1.0))) | (@as(@Vector(n, u32), @bitCast(x)) & sign_mask));
    const result = @select(f32, a < splat(n, 4.0), large, one);
    return @select(f32, either(a < splat(n, 1.0), x != x), small, result);
}

/// erfc(a) for 1 <= a <= 4: e^(-a²) G(1/a), given a² as a rounded part and its rounding error so that
/// e^(-a²) keeps f32 accuracy (e^(-z_hi - z_lo) = e^(-z_hi)(1 - z_lo) to f32 accuracy for |z_lo| < 2^-20).
inline fn erfcFast(comptime n: usize, a: @Vector(n, f32), z_hi: @Vector(n, f32), z_lo: @Vector(n, f32)) @Vector(n, f32) {
    const g = horner(n, splat(n, 1.0) / a - splat(n, 0.625), &erfc_scaled);
    return expFast(n, -z_hi) * (splat(n, 1.0) - z_lo) * g;
}

/// erfc(a) for a >= 4, a² given as in `erfcFast`: the continued fraction of `erfcTailV` from its 8th level
/// (relative error 1.2e-9 in exact arithmetic).
inline fn erfcTailFast(comptime n: usize, a: @Vector(n, f32), z_hi: @Vector(n, f32), z_lo: @Vector(n, f32)) @Vector(n, f32) {
    var t = a;
    inline for (0..8) |i| t = a + splat(n, @as(f32, @floatFromInt(8 - i)) / 2) / t;
    return expFast(n, -z_hi) * (splat(n, 1.0) - z_lo) * splat(n, @floatCast(one_over_sqrt_pi)) / t;
}

/// GELU, erf form: x·Φ(x) with s = x/√2 and a = |s|: Φ = 0.5 + 0.5·erf(s) by erf's polynomial for a < 1,
/// and from erfc(a) beyond, 1 - 0.5·erfc(a) above and 0.5·erfc(a) below (`erfcFast`, then `erfcTailFast`
/// from s = -4, computed only when a lane needs it), so negative inputs keep their relative accuracy. One
/// exponential per element; a² = x²/2 is taken from x (not from the rounded s), so the exponent carries no
/// rounding of s. gelu(-inf) = -0.
pub fn geluErfFast(comptime n: usize, x: @Vector(n, f32)) @Vector(n, f32) {
    const V = @Vector(n, f32);
    // Beyond ±16, Φ(x) rounds to 0 or 1 in f32: clamping keeps x² finite (NaN becomes -16 and is restored by
    // x·Φ).
    const xc = @min(@max(x, splat(n, -16.0)), splat(n, 16.0));
    const s = xc * splat(n, @floatCast(sqrt1_2));
    const a = @abs(s);
    const x2 = xc * xc;
    const z_hi = x2 * splat(n, 0.5);
    const z_lo = squareError(n, xc, x2) * splat(n, 0.5);
    var erfc = erfcFast(n, @min(@max(a, splat(n, 1.0)), splat(n, 4.0)), z_hi, z_lo);
    const far = s < splat(n, -4.0);
    if (@reduce(.Or, far)) erfc = @select(f32, far, erfcTailFast(n, @max(a, splat(n, 4.0)), z_hi, z_lo), erfc);
    const small = mulAdd(V, splat(n, 0.5), s * horner(n, s * s, &erf_small), splat(n, 0.5));
    const large = @select(f32, s > splat(n, 0), splat(n, 1.0) - splat(n, 0.5) * erfc, splat(n, 0.5) * erfc);
    const y = x * @select(f32, a < splat(n, 1.0), small, large);
    return @select(f32, x == splat(n, -std.math.inf(f32)), splat(n, -0.0), y);
}

/// a·a - hi exactly, for hi = a·a rounded: with a fused multiply-add directly, else by Dekker's split.
inline fn squareError(comptime n: usize, a: @Vector(n, f32), hi: @Vector(n, f32)) @Vector(n, f32) {
    if (has_fma) return @mulAdd(@Vector(n, f32), a, a, -hi);
    const split = a * splat(n, 4097.0);
    const a_hi = split - (split - a);
    const a_lo = a - a_hi;
    return ((a_hi * a_hi - hi) + (a_hi + a_hi) * a_lo) + a_lo * a_lo;
}

/// x^y in f64 for whole y with |y| <= 64, by binary powering (at most 12 f64 products, so the f32 rounding of
/// the result is nearly always the correct one, and exact wherever the result fits 53 bits).
fn powWholeV(comptime n: usize, x: @Vector(n, f32), y: @Vector(n, f32)) F(n) {
    const U = @Vector(n, u32);
    var e: U = @intFromFloat(@abs(y));
    var base: F(n) = x;
    var acc = splat64(n, 1);
    inline for (0..7) |_| {
        const bit = (e & @as(U, @splat(1))) != @as(U, @splat(0));
        acc = @select(f64, bit, acc * base, acc);
        base = base * base;
        e >>= @splat(1);
    }
    return @select(f64, y < splat(n, 0), splat64(n, 1) / acc, acc);
}

/// x^y as exp(y log|x|) for x > 0 and finite y in vectors; lanes with a special case (x <= 0, x = 1,
/// y = 0, an infinity or a NaN) take the exact `pow` of the lane, so special values match exact mode.
pub fn powFast(comptime n: usize, x: @Vector(n, f32), y: @Vector(n, f32)) @Vector(n, f32) {
    const V = @Vector(n, f32);
    const inf: V = @splat(std.math.inf(f32));
    const special = either(either(either(x <= splat(n, 0), x == splat(n, 1.0)), either(y == splat(n, 0), x != x)), either(either(@abs(x) == inf, @abs(y) == inf), y != y));
    const safe_x = @select(f32, special, splat(n, 1.0), x);
    var result = expFast(n, y * logFast(n, safe_x));
    // A whole exponent up to 64 multiplies in f64 instead: exact where the result is (5^2 = 25), and
    // correctly rounded nearly always, like PyTorch's integer powers.
    const whole = @select(bool, @abs(y) <= splat(n, 64), @round(y) == y, @as(@Vector(n, bool), @splat(false)));
    if (@reduce(.Or, whole)) result = @select(f32, whole, @as(V, @floatCast(powWholeV(n, x, @select(f32, whole, y, splat(n, 0))))), result);
    if (@reduce(.Or, special)) {
        inline for (0..n) |i| {
            if (special[i]) result[i] = @floatCast(pow(x[i], y[i]));
        }
    }
    return result;
}

/// log(1 + x): log(u)·x/(u - 1) with u = 1 + x rounded (x where u rounds to 1, +inf at +inf).
pub fn log1pFast(comptime n: usize, x: @Vector(n, f32)) @Vector(n, f32) {
    const u = splat(n, 1.0) + x;
    const one = u == splat(n, 1.0);
    const den = @select(f32, one, splat(n, 1.0), u - splat(n, 1.0));
    const r = logFast(n, u) * (x / den);
    return @select(f32, either(one, x == splat(n, std.math.inf(f32))), x, r);
}

/// exp(x) - 1: x·P(x) with P the Taylor polynomial of degree 7 for |x| < 0.5, expFast(x) - 1 beyond.
pub fn expm1Fast(comptime n: usize, x: @Vector(n, f32)) @Vector(n, f32) {
    const small = x * horner(n, x, &.{ 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0 });
    return @select(f32, @abs(x) < splat(n, 0.5), small, expFast(n, x) - splat(n, 1.0));
}

/// x · sigmoid(x).
pub fn siluFast(comptime n: usize, x: @Vector(n, f32)) @Vector(n, f32) {
    return x * sigmoidFast(n, x);
}

/// softplus: z = x·beta; x where z > threshold, else log1p(exp(z)) / beta.
pub fn softplusFast(comptime n: usize, x: @Vector(n, f32), beta: f32, threshold: f32) @Vector(n, f32) {
    const z = x * splat(n, beta);
    const y = log1pFast(n, expFast(n, z)) / splat(n, beta);
    return @select(f32, z > splat(n, threshold), x, y);
}

/// elu: x for x > 0, alpha·expm1(x) otherwise.
pub fn eluFast(comptime n: usize, x: @Vector(n, f32), alpha: f32) @Vector(n, f32) {
    return @select(f32, x > splat(n, 0), x, splat(n, alpha) * expm1Fast(n, x));
}

// --- tests ---

const testing = std.testing;

fn f32Ulp(value: f32) f64 {
    const a = @abs(value);
    if (a < 0x1p-126) return 0x1p-149;
    const bits: u32 = @bitCast(a);
    const next: f32 = @bitCast(bits + 1);
    return @as(f64, next) - @as(f64, a);
}

/// How many f32 steps separate two finite values of the same sign region (the ordered integer distance).
fn ulpDistance(x: f32, y: f32) u32 {
    const ordered = struct {
        fn of(v: f32) i64 {
            const bits: i32 = @bitCast(v);
            return if (bits < 0) -@as(i64, bits & 0x7fff_ffff) else bits;
        }
    };
    return @intCast(@abs(ordered.of(x) - ordered.of(y)));
}

test "exact exp, log and expm1 reproduce exact values and identities" {
    try testing.expectEqual(@as(f64, 1), exp(0));
    try testing.expectApproxEqRel(@as(f64, 2), exp(std.math.ln2), 2.3e-16);
    try testing.expectApproxEqRel(@as(f64, 2.718281828459045), exp(1), 2e-16);
    try testing.expectApproxEqRel(@as(f64, 1.1175725853661098e-43), exp(-98.9), 1e-15);
    try testing.expectEqual(inf64, exp(710));
    try testing.expectEqual(@as(f64, 0), exp(-746));
    try testing.expect(exp(-745) > 0);
    try testing.expectEqual(@as(f64, 0), log(1));
    try testing.expectApproxEqRel(@as(f64, 1), log(std.math.e), 4e-16);
    try testing.expectApproxEqRel(@as(f64, -744.4400719213812), log(0x1p-1074), 1e-15);
    try testing.expectEqual(-inf64, log(0));
    try testing.expect(std.math.isNan(log(-1)));
    try testing.expectApproxEqRel(@as(f64, 1.00000000005e-10), expm1(1e-10), 1e-16);
}

test "exact functions stay within 4 f64 ulps of the identities they must satisfy" {
    var x: f64 = -30;
    while (x < 30) : (x += 0.0137) {
        try testing.expectApproxEqAbs(x, log(exp(x)), 1e-15 * @max(1, @abs(x)));
        try testing.expectApproxEqRel(tanh(x), (exp(2 * x) - 1) / (exp(2 * x) + 1), 1e-13);
        if (@abs(x) < 10) try testing.expectApproxEqRel(sigmoid(x), 0.5 * (1 + tanh(x / 2)), 1e-10);
        try testing.expectEqual(-erf(x), erf(-x));
    }
}

test "exact erf matches known values" {
    try testing.expectApproxEqRel(@as(f64, 0.8427007929497149), erf(1), 1e-15);
    try testing.expectApproxEqRel(@as(f64, 0.9953222650189527), erf(2), 1e-15);
    try testing.expectApproxEqRel(@as(f64, 0.9999999832607886), erf(3.99), 1e-15);
    try testing.expectApproxEqRel(@as(f64, 0.1124629160182849), erf(0.1), 1e-15);
    try testing.expectEqual(@as(f64, -1), erf(-7));
    try testing.expect(std.math.signbit(erf(-0.0)));
}

test "exact pow follows the C99 special cases" {
    const nan = nan64;
    try testing.expectEqual(@as(f64, 1), pow(nan, 0));
    try testing.expectEqual(@as(f64, 1), pow(1, nan));
    try testing.expectEqual(@as(f64, 1), pow(-1, inf64));
    try testing.expectEqual(@as(f64, 0), pow(0.5, inf64));
    try testing.expectEqual(inf64, pow(0.5, -inf64));
    try testing.expectEqual(-inf64, pow(-0.0, -3));
    try testing.expectEqual(inf64, pow(-0.0, -2));
    try testing.expectEqual(-inf64, pow(-inf64, 3));
    try testing.expectEqual(@as(f64, 0), pow(-inf64, -2));
    try testing.expect(std.math.isNan(pow(-2, 0.5)));
    try testing.expectApproxEqRel(@as(f64, -8), pow(-2, 3), 1e-15);
    try testing.expectApproxEqRel(@as(f64, 1.4142135623730951), pow(2, 0.5), 1e-15);
    try testing.expectApproxEqRel(@as(f64, 1e38), pow(10, 38), 1e-14);
}

/// The exact functions' bits over a fixed set of f32 arguments, hashed: the same value on every ISA
/// (x86-64 variants natively, aarch64 under qemu) proves the results do not depend on the ISA.
fn exactFingerprint() u64 {
    var hash = std.hash.Fnv1a_64.init();
    var state: u32 = 12345;
    for (0..20000) |i| {
        state = state *% 1103515245 +% 12345;
        const bits = (state >> 1) ^ (@as(u32, @intCast(i)) << 20);
        const raw: f32 = @bitCast(bits & 0xc2ff_ffff); // finite, magnitudes up to 2^6
        const x: f64 = raw;
        const y: f64 = @as(f32, @floatFromInt(@as(i32, @intCast(i % 17)) - 8)) * 0.75;
        const values = [_]f64{ exp(x), log(@abs(x)), tanh(x), sigmoid(x), gelu(x), erf(x), pow(@abs(x), y), expm1(x) };
        for (values) |v| hash.update(std.mem.asBytes(&v));
    }
    return hash.final();
}

test "exact functions give the same bits on every ISA" {
    try testing.expectEqual(@as(u64, 8226992265837601691), exactFingerprint());
}

const Grid = struct {
    lo: f32,
    hi: f32,
    steps: u32,
};

fn checkFast(
    comptime name: []const u8,
    comptime fast: anytype,
    comptime exact: fn (f64) f64,
    comptime bound: FastBound,
    comptime argument: fn (f32) f64,
    grid: Grid,
) !f64 {
    var worst: f64 = 0;
    var i: u32 = 0;
    while (i < grid.steps) : (i += 4) {
        var xv: @Vector(4, f32) = undefined;
        inline for (0..4) |k| {
            const t = @as(f32, @floatFromInt(i + k)) / @as(f32, @floatFromInt(grid.steps));
            xv[k] = grid.lo + (grid.hi - grid.lo) * t;
        }
        const yv = fast(4, xv);
        inline for (0..4) |k| {
            const want: f32 = @floatCast(exact(xv[k]));
            const got = yv[k];
            if (std.math.isNan(want) or std.math.isInf(want) or want == 0) {
                if (!(std.math.isNan(want) and std.math.isNan(got)) and want != got and
                    @abs(@as(f64, got) - want) > bound.abs + 0x1p-149)
                {
                    std.debug.print("{s}({e}) = {e}, want {e}\n", .{ name, xv[k], got, want });
                    return error.TestUnexpectedResult;
                }
            } else {
                const allowed = bound.ulps * f32Ulp(want) * (1 + bound.slope * argument(xv[k])) + bound.abs;
                const err = @abs(@as(f64, got) - want);
                worst = @max(worst, err / f32Ulp(want) / (1 + bound.slope * argument(xv[k])));
                if (err > allowed) {
                    std.debug.print("{s}({e}) = {e}, want {e}: {d} ulps\n", .{ name, xv[k], got, want, err / f32Ulp(want) });
                    return error.TestUnexpectedResult;
                }
            }
        }
    }
    return worst;
}

fn exp2(x: f64) f64 {
    return exp(x * std.math.ln2);
}

fn noArgument(_: f32) f64 {
    return 0;
}

fn geluArgument(x: f32) f64 {
    const xf: f64 = x;
    return @abs(2 * gelu_c * (xf + gelu_a * xf * xf * xf));
}

test "fast functions stay within their documented bounds" {
    const grids = [_]Grid{ .{ .lo = -110, .hi = 110, .steps = 200_000 }, .{ .lo = -2, .hi = 2, .steps = 200_000 }, .{ .lo = -1e-3, .hi = 1e-3, .steps = 20_000 } };
    for (grids) |grid| {
        _ = try checkFast("exp", expFast, exp, fast_bounds.exp, noArgument, grid);
        _ = try checkFast("exp2", exp2Fast, exp2, .{ .ulps = 2 }, noArgument, grid);
        _ = try checkFast("tanh", tanhFast, tanh, fast_bounds.tanh, noArgument, grid);
        _ = try checkFast("sigmoid", sigmoidFast, sigmoid, fast_bounds.sigmoid, noArgument, grid);
        _ = try checkFast("gelu", geluFast, gelu, fast_bounds.gelu, geluArgument, grid);
        _ = try checkFast("erf", erfFast, erf, fast_bounds.erf, noArgument, grid);
        _ = try checkFast("gelu_erf", geluErfFast, geluErf, fast_bounds.gelu_erf, noArgument, grid);
    }
    const log_grids = [_]Grid{ .{ .lo = 0, .hi = 4, .steps = 200_000 }, .{ .lo = 0, .hi = 1e30, .steps = 20_000 }, .{ .lo = -1, .hi = 1e-30, .steps = 20_000 } };
    for (log_grids) |grid| _ = try checkFast("log", logFast, log, fast_bounds.log, noArgument, grid);
}

test "expDiffFast stays within 2^-24·(2.3·|x − shift| + 4) of e^(x − shift); −∞ gives 0, NaN stays NaN" {
    const shifts = [_]f32{ 0, 3.5, -20.25, 100, 1e4 };
    for (shifts) |shift| {
        var i: u32 = 0;
        const steps = 100_000;
        while (i < steps) : (i += 4) {
            var xv: @Vector(4, f32) = undefined;
            inline for (0..4) |k| xv[k] = shift - 90 + 92 * @as(f32, @floatFromInt(i + k)) / steps;
            const got = expDiffFast(4, xv, @splat(shift));
            inline for (0..4) |k| {
                const d = @as(f64, xv[k]) - shift;
                const want = exp(d);
                if (want < 0x1.6a09e6p-127) { // 2^-126.5
                    try testing.expect(got[k] <= 0x1p-126);
                } else {
                    const allowed = 0x1p-24 * (2.3 * @abs(d) + 4) * want;
                    if (@abs(got[k] - want) > allowed) {
                        std.debug.print("expDiffFast({e}, {e}) = {e}, want {e}\n", .{ xv[k], shift, got[k], want });
                        return error.TestUnexpectedResult;
                    }
                }
            }
        }
    }
    const special = expDiffFast(4, .{ -std.math.inf(f32), std.math.nan(f32), 5, -1e30 }, .{ 5, 5, 5, 5 });
    try testing.expectEqual(@as(f32, 0), special[0]);
    try testing.expect(std.math.isNan(special[1]));
    try testing.expectEqual(@as(f32, 1), special[2]);
    try testing.expectEqual(@as(f32, 0), special[3]);
}

test "fast log covers subnormals, powers of two and the special values" {
    const x: @Vector(8, f32) = .{ 0x1p-149, 0x1p-130, 0x1p100, 0, -0.0, -1, std.math.inf(f32), std.math.nan(f32) };
    const y = logFast(8, x);
    inline for (0..3) |i| try testing.expect(ulpDistance(y[i], @floatCast(log(x[i]))) <= 1);
    try testing.expectEqual(-std.math.inf(f32), y[3]);
    try testing.expectEqual(-std.math.inf(f32), y[4]);
    try testing.expect(std.math.isNan(y[5]) and std.math.isNan(y[7]));
    try testing.expectEqual(std.math.inf(f32), y[6]);
}

test "fast pow of a whole exponent is exact where the result is" {
    const x: @Vector(8, f32) = .{ 5, 3, 2, 10, 1.5, 7, 0.5, 2 };
    const y: @Vector(8, f32) = .{ 2, 3, -2, 7, 2, 0.5, -3, 64 };
    const got = powFast(8, x, y);
    const want = [_]f32{ 25, 27, 0.25, 1e7, 2.25, @floatCast(pow(7, 0.5)), 8, 0x1p64 };
    inline for (0..7) |i| if (i != 5) try testing.expectEqual(want[i], got[i]);
    try testing.expectEqual(want[7], got[7]);
}

test "fast pow is within its bound and exact on special lanes" {
    var state: u32 = 99;
    for (0..50_000) |_| {
        var xv: @Vector(4, f32) = undefined;
        var yv: @Vector(4, f32) = undefined;
        inline for (0..4) |k| {
            state = state *% 1664525 +% 1013904223;
            xv[k] = @as(f32, @floatFromInt(state >> 8)) * 0x1p-20 - 4;
            state = state *% 1664525 +% 1013904223;
            yv[k] = @as(f32, @floatFromInt(state >> 8)) * 0x1p-21 - 4;
            if (k == 3) yv[k] = @round(yv[k]);
        }
        const got = powFast(4, xv, yv);
        inline for (0..4) |k| {
            const want: f32 = @floatCast(pow(xv[k], yv[k]));
            if (std.math.isNan(want) or std.math.isInf(want) or want == 0 or xv[k] <= 0) {
                try testing.expect((std.math.isNan(want) and std.math.isNan(got[k])) or want == got[k]);
            } else {
                const argument = @abs(@as(f64, yv[k]) * log(xv[k]));
                const allowed = fast_bounds.pow.ulps * f32Ulp(want) * (1 + fast_bounds.pow.slope * argument);
                try testing.expect(@abs(@as(f64, got[k]) - want) <= allowed);
            }
        }
    }
}

//! The CTC loss (Graves' forward-backward algorithm) in log space, in f64, with no allocation: α once for the
//! loss and, when the caller wants the gradient, β once for it, so that the backward pass is one product with
//! the output gradient. Every step is an f64 operation or the f64 `exp`/`log` of math.zig (one algorithm on
//! every ISA), in a fixed order per sequence, so the result is the same bits on every ISA, for every thread
//! count, in both arithmetic modes; the TypeScript reference (`src/kernels/ctc.ts`) spells out the same
//! recursion with `Math.exp`/`Math.log` and agrees within an f32 ulp.
//!
//! Argument block: ints[0..8] = T, N, C, blank, reduction (0 none, 1 mean, 2 sum), zeroInfinity, wantGrad,
//! S (the widest extended target, 2·max target length + 1); ints[8..12] = the element offsets of logProbs,
//! meta, out and grad; ints[12] = the f64 offset of the workspace.
//! logProbs: contiguous f32 [T, N, C]. meta (i32): input lengths [N], target lengths [N], label starts [N],
//! then the labels concatenated. out: f32, [N] for reduction none, else one value. grad (wantGrad only):
//! f32 [T, N, C], every element written: the derivative of the reduced loss (times 1 for none) with respect
//! to logProbs. Workspace: f64, N · (T·(S + 4)·(wantGrad ? 2 : 1) + 2·S + 2 + C) + N elements. Each row of
//! α and β is computed with vectors over the extended positions (the cells of a row are independent).
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const math = @import("math.zig");

/// The CTC loss of a batch; see the file comment for the argument block.
pub const CtcFn = *const fn (
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    log_probs: [*]const f32,
    meta: [*]const i32,
    out: [*]f32,
    grad: ?[*]f32,
    work: [*]f64,
) callconv(.c) void;

/// This family's entries in the kernel table.
pub const Table = extern struct {
    ctc_f32: CtcFn,
};

pub const table_entries: Table = .{ .ctc_f32 = ctcF32 };

const neg_inf = -std.math.inf(f64);
/// f64 lanes of this ISA's vectors.
const lanes = @max(1, @import("elementwise.zig").lanes / 2);
/// Cells per step of a row: four vectors, whose chains of dependent operations (the exponentials' and the
/// logarithm's polynomials) overlap; the lanes are independent, so the width changes no bit.
const wide = 4 * lanes;

fn splat(comptime n: usize, x: f64) @Vector(n, f64) {
    return @splat(x);
}

/// log(eᵃ + eᵇ + eᶜ) = m + log(e^(a−m) + e^(b−m) + e^(c−m)) with m the largest (−∞ when all are), per lane.
/// The largest term's own difference is m − m, whose exponential is 1 (or m − m itself, NaN, where m is not
/// finite, as exp gives), so only the other two exponentials are computed; each term keeps its place in the
/// sum, so the bits are those of three exponentials.
inline fn logSum3(comptime n: usize, a: @Vector(n, f64), b: @Vector(n, f64), c: @Vector(n, f64)) @Vector(n, f64) {
    const a_wins = a > b;
    const m1 = @select(f64, a_wins, a, b);
    const c_wins = !(m1 > c);
    const m = @select(f64, c_wins, c, m1);
    const zero = m - m;
    const own = @select(f64, zero == splat(n, 0), splat(n, 1), zero);
    // The two others: a and b when c is the largest, else the smaller of a, b and then c.
    const ex = math.expV(n, @select(f64, c_wins, a, @select(f64, a_wins, b, a)) - m);
    const ey = math.expV(n, @select(f64, c_wins, b, c) - m);
    const ea = @select(f64, c_wins, ex, @select(f64, a_wins, own, ex));
    const eb = @select(f64, c_wins, ey, @select(f64, a_wins, ex, own));
    const ec = @select(f64, c_wins, own, ey);
    const sum = (ea + eb) + ec;
    return @select(f64, m == splat(n, neg_inf), splat(n, neg_inf), m + math.logV(n, sum));
}

/// One recursion step over lanes: the log-sum of three neighbours of the previous row plus the step's log
/// probability, −∞ where the sum is.
inline fn cell(comptime n: usize, a: @Vector(n, f64), b: @Vector(n, f64), c: @Vector(n, f64), lp: @Vector(n, f64)) @Vector(n, f64) {
    const sum = logSum3(n, a, b, c);
    return @select(f64, sum == splat(n, neg_inf), splat(n, neg_inf), sum + lp);
}

fn load(comptime n: usize, p: [*]const f64) @Vector(n, f64) {
    return p[0..n].*;
}

const Problem = struct {
    steps: usize,
    batch: usize,
    classes: usize,
    blank: usize,
    reduction: i32,
    zero_infinity: bool,
    width: usize,
    stride: usize,
    log_probs: [*]const f32,
    meta: [*]const i32,
    grad: ?[*]f32,
    work: [*]f64,

    fn at(p: *const Problem, i: usize) usize {
        return @intCast(p.meta[i]);
    }

    fn scale(p: *const Problem, n: usize) f64 {
        if (p.reduction != 1) return 1;
        const length = @max(p.at(p.batch + n), 1);
        return 1.0 / @as(f64, @floatFromInt(p.batch * length));
    }

    /// The loss of sequence n into work's tail and, when wanted, its rows of the gradient. Rows of α and β
    /// hold 2 cells of −∞ before and after the s_len cells, so that s − 2 and s + 2 need no test.
    fn sequence(p: *const Problem, n: usize) void {
        const inputs = p.at(n);
        const labels = p.meta + 3 * p.batch + p.at(2 * p.batch + n);
        const s_len = 2 * p.at(p.batch + n) + 1;
        const r = p.width + 4;
        const alpha = p.work + n * p.stride;
        const beta = alpha + p.steps * r;
        const lpe = alpha + p.steps * r * @as(usize, if (p.grad == null) 1 else 2);
        const skip = lpe + p.width;
        const sums = skip + p.width + 2;
        const ext = struct {
            fn of(blank: usize, l: [*]const i32, s: usize) usize {
                return if (s % 2 == 0) blank else @intCast(l[s / 2]);
            }
        }.of;
        // 0 where the recursion may come from s − 2 (a label unlike the one before), −∞ elsewhere.
        for (0..s_len + 2) |s| {
            const ok = s >= 2 and s < s_len and s % 2 == 1 and labels[s / 2] != labels[s / 2 - 1];
            skip[s] = if (ok) 0 else neg_inf;
        }
        const gather = struct {
            fn row(q: *const Problem, out: [*]f64, l: [*]const i32, len: usize, t: usize, seq: usize) void {
                const base = q.log_probs + (t * q.batch + seq) * q.classes;
                for (0..len) |s| out[s] = base[ext(q.blank, l, s)];
            }
        }.row;
        for (0..inputs) |t| {
            const row = alpha + t * r;
            row[0] = neg_inf;
            row[1] = neg_inf;
            row[2 + s_len] = neg_inf;
            row[3 + s_len] = neg_inf;
            gather(p, lpe, labels, s_len, t, n);
            if (t == 0) {
                for (0..s_len) |s| row[2 + s] = if (s < 2) 0 + lpe[s] else neg_inf;
                continue;
            }
            const step: Step = .{ .row = row + 2, .from = alpha + (t - 1) * r, .skip = skip, .lpe = lpe, .forward = true };
            eachCell(s_len, &step);
        }
        var nll: f64 = undefined;
        if (inputs == 0) {
            nll = if (s_len == 1) 0 else std.math.inf(f64);
        } else {
            const last = alpha + (inputs - 1) * r + 2;
            nll = -logSum3(1, .{last[s_len - 1]}, .{(last - 1)[s_len - 1]}, .{neg_inf})[0];
        }
        const infinite = nll == std.math.inf(f64);
        p.work[p.batch * p.stride + n] = if (p.zero_infinity and infinite) 0 else nll;
        const grad = p.grad orelse return;
        for (0..p.steps) |t| @memset(grad[(t * p.batch + n) * p.classes ..][0..p.classes], 0);
        if (inputs == 0 or (p.zero_infinity and infinite)) return;
        const factor = p.scale(n);
        var t = inputs;
        while (t > 0) {
            t -= 1;
            const row = beta + t * r;
            row[0] = neg_inf;
            row[1] = neg_inf;
            row[2 + s_len] = neg_inf;
            row[3 + s_len] = neg_inf;
            gather(p, lpe, labels, s_len, t, n);
            if (t == inputs - 1) {
                for (0..s_len) |s| row[2 + s] = if (s + 2 >= s_len) 0 + lpe[s] else neg_inf;
            } else {
                const step: Step = .{ .row = row + 2, .from = beta + (t + 1) * r, .skip = skip, .lpe = lpe, .forward = false };
                eachCell(s_len, &step);
            }
            // Each position's share of the paths through step t over the probability there, into α's row.
            const a_row = alpha + t * r + 2;
            if (s_len < lanes) {
                for (0..s_len) |s| a_row[s..][0..1].* = occupancy(1, a_row + s, row + 2 + s, lpe + s, nll);
            } else {
                // In place: the last (overlapping) vector is computed before the others overwrite its input.
                const last = occupancy(lanes, a_row + s_len - lanes, row + 2 + s_len - lanes, lpe + s_len - lanes, nll);
                var s: usize = 0;
                while (s + wide <= s_len) : (s += wide) a_row[s..][0..wide].* = occupancy(wide, a_row + s, row + 2 + s, lpe + s, nll);
                while (s + lanes <= s_len) : (s += lanes) a_row[s..][0..lanes].* = occupancy(lanes, a_row + s, row + 2 + s, lpe + s, nll);
                a_row[s_len - lanes ..][0..lanes].* = last;
            }
            @memset(sums[0..p.classes], 0);
            for (0..s_len) |q| sums[ext(p.blank, labels, q)] += a_row[q];
            const g = grad + (t * p.batch + n) * p.classes;
            for (0..p.classes) |c| {
                // A class no path visits at step t has no gradient, even where its probability is 0.
                if (sums[c] != 0) g[c] = @floatCast(-sums[c] * factor);
            }
        }
    }
};

/// One row of α (from the row before: cells s, s − 1 and, where skip allows, s − 2) or of β (from the row
/// after: s, s + 1, s + 2); `row`, `from` and their cells as in Problem.sequence.
const Step = struct {
    row: [*]f64,
    from: [*]f64,
    skip: [*]const f64,
    lpe: [*]const f64,
    forward: bool,

    inline fn at(step: *const Step, comptime n: usize, s: usize) void {
        const lp = load(n, step.lpe + s);
        if (step.forward) {
            const c = load(n, step.from + s) + load(n, step.skip + s);
            step.row[s..][0..n].* = cell(n, load(n, step.from + 2 + s), load(n, step.from + 1 + s), c, lp);
        } else {
            const c = load(n, step.from + 4 + s) + load(n, step.skip + 2 + s);
            step.row[s..][0..n].* = cell(n, load(n, step.from + 2 + s), load(n, step.from + 3 + s), c, lp);
        }
    }
};

/// `step.at` over the cells 0..len in vectors of `wide` cells (or `lanes` for a shorter row), the last one
/// overlapping the one before when len is not a multiple (its cells depend only on the other row, so they come
/// out the same bits again); one cell at a time for a row shorter than a vector.
fn eachCell(len: usize, step: *const Step) void {
    inline for (.{ wide, lanes }) |n| {
        if (len >= n) {
            var s: usize = 0;
            while (s + n <= len) : (s += n) step.at(n, s);
            if (s < len) step.at(n, len - n);
            return;
        }
    }
    for (0..len) |s| step.at(1, s);
}

/// exp(α + β − lp + nll) per lane, 0 where α + β is −∞.
fn occupancy(comptime n: usize, a: [*]const f64, b: [*]const f64, lp: [*]const f64, nll: f64) @Vector(n, f64) {
    const e = load(n, a) + load(n, b);
    const v = math.expV(n, (e - load(n, lp)) + splat(n, nll));
    return @select(f64, e == splat(n, neg_inf), splat(n, 0), v);
}

fn ctcF32(
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    log_probs: [*]const f32,
    meta: [*]const i32,
    out: [*]f32,
    grad: ?[*]f32,
    work: [*]f64,
) callconv(.c) void {
    for (args.ints[0..13]) |v| std.debug.assert(v >= 0);
    const u = struct {
        fn of(v: i32) usize {
            return @intCast(v);
        }
    }.of;
    const steps = u(args.ints[0]);
    const width = u(args.ints[7]);
    const want_grad = args.ints[6] != 0;
    const p: Problem = .{
        .steps = steps,
        .batch = u(args.ints[1]),
        .classes = u(args.ints[2]),
        .blank = u(args.ints[3]),
        .reduction = args.ints[4],
        .zero_infinity = args.ints[5] != 0,
        .width = width,
        .stride = steps * (width + 4) * @as(usize, if (want_grad) 2 else 1) + 2 * width + 2 + u(args.ints[2]),
        .log_probs = log_probs + u(args.ints[8]),
        .meta = meta + u(args.ints[9]),
        .grad = if (want_grad) grad.? + u(args.ints[11]) else null,
        .work = work + u(args.ints[12]),
    };
    const Job = struct {
        fn run(context: *anyopaque, task: u32) callconv(.c) void {
            const problem: *const Problem = @ptrCast(@alignCast(context));
            problem.sequence(task);
        }
    };
    if (p.batch > 0) {
        const threads: usize = @max(1, @min(u(@max(args.threads, 1)), p.batch));
        rt.parallelFor(@ptrCast(@constCast(&p)), @intCast(p.batch), @intCast(threads), Job.run);
    }
    const o = out + u(args.ints[10]);
    const losses = p.work + p.batch * p.stride;
    if (p.reduction == 0) {
        for (0..p.batch) |n| o[n] = @floatCast(losses[n]);
    } else {
        var total: f64 = 0;
        for (0..p.batch) |n| total += losses[n] * p.scale(n);
        o[0] = @floatCast(total);
    }
}

// --- tests ---

const testing = std.testing;

test "two uniform steps over {blank, a}: the loss of \"a\" is −log(3/4) and its gradient sums to −1 per step" {
    var args = std.mem.zeroes(abi.ArgBlock);
    args.threads = 1;
    const half: f32 = @floatCast(@log(0.5));
    const lp = [_]f32{ half, half, half, half };
    const meta = [_]i32{ 2, 1, 0, 1 };
    var out = [_]f32{0};
    var grad = [_]f32{ 9, 9, 9, 9 };
    var work: [1 * (2 * 2 * (3 + 4) + 2 * 3 + 2 + 2) + 1]f64 = undefined;
    args.ints[0..8].* = .{ 2, 1, 2, 0, 2, 0, 1, 3 };
    ctcF32(&@import("elementwise.zig").test_runtime, &args, &lp, &meta, &out, &grad, &work);
    try testing.expectApproxEqAbs(-@log(0.75), @as(f64, out[0]), 1e-6);
    // d(−log p)/d lp is minus the occupancy of each class, which sums to 1 over the classes at each step.
    for (0..2) |t| try testing.expectApproxEqAbs(@as(f32, -1.0), grad[2 * t] + grad[2 * t + 1], 1e-6);
}

test "logSum3 gives the bits of the three-exponential sum, ties, infinities and NaN included" {
    const values = [_]f64{ 0, -0.0, -1.5, -1.5, -700, -800, neg_inf, std.math.inf(f64), std.math.nan(f64), -3.25e-5 };
    for (values) |a| for (values) |b| for (values) |c| {
        const m1 = if (a > b) a else b;
        const m = if (m1 > c) m1 else c;
        const sum = (math.exp(a - m) + math.exp(b - m)) + math.exp(c - m);
        const want = if (m == neg_inf) neg_inf else m + math.log(sum);
        const got = logSum3(1, .{a}, .{b}, .{c})[0];
        if (std.math.isNan(want)) {
            try testing.expect(std.math.isNan(got));
        } else {
            try testing.expectEqual(@as(u64, @bitCast(want)), @as(u64, @bitCast(got)));
        }
    };
}

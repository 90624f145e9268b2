//! The class losses: nllLoss and crossEntropy (a log-softmax over the classes fused with the pick of the
//! target, the class weights, label smoothing and the reduction), forward and backward, with PyTorch's rules.
//!
//! Argument block: shape = [rows..., C] (the class axis last; the TypeScript side permutes [N, C, d...] to
//! [N, d..., C], a view). Operand 0 = x (logits, or log-probabilities for nllLoss); 1 = target (class indices
//! over the rows, its class stride unused; or probabilities over the whole shape); 2 = the output: the losses
//! over the rows for reduction none, else one value at its offset (forward), or the gradient over the whole
//! shape (backward); 3 = g, the output gradient over the rows (strides 0 for a reduced loss; backward only).
//! ints[0] = phase (0 forward, 1 the input's gradient, 2 the probability target's gradient), ints[1] =
//! reduction (0 none, 1 mean, 2 sum), ints[2] = ignoreIndex, ints[3] = the target's kind (4: i32 indices,
//! 8: i64 indices, 0: f32 probabilities), ints[4] = the element offset of weight (contiguous f32 [C]; null
//! for none), ints[5] = the f64 element offset of work; floats[0] = label smoothing ε.
//!
//! work (f64, 3R + 1 for R rows): [0, R) the log-sum-exp of each row (crossEntropy), [R, 2R) each row's
//! loss, [2R, 3R) each row's weight (w[t], 0 for an ignored row, 1 for probabilities), [3R] the mean's
//! divisor (Σ of the row weights). The forward pass fills it and the backward pass reads it, so the backward
//! needs neither the softmax nor the targets' weights again.
//!
//! Per row (crossEntropy): lse = m + log Σ exp(x_c − m) (m the row's f32 maximum, NaN if it holds one);
//! with class index t: loss = (1 − ε)·w_t·(lse − x_t) + (ε/C)·Σ_c w_c·(lse − x_c), 0 when t = ignoreIndex;
//! with probabilities y: loss = Σ_c w_c·q_c·(lse − x_c), q_c = (1 − ε)·y_c + ε/C. nllLoss: loss = −w_t·x_t.
//! Reduced: sum = Σ loss, mean = Σ loss / Σ row weights (NaN when every row is ignored), in f64 in ascending
//! row order and rounded once. Gradients, p_c = exp(x_c − lse), s = g (none), g/divisor (mean) or g (sum):
//! index targets s·(p_c·((1 − ε)·w_t + (ε/C)·W) − [c = t]·(1 − ε)·w_t − (ε/C)·w_c) with W = Σ w_c;
//! probabilities s·(p_c·Σ_k w_k·q_k − w_c·q_c); the probabilities' own s·(1 − ε)·w_c·(lse − x_c);
//! nllLoss −s·w_t at the target.
//!
//! Exact mode: every step in f64 with math.zig's exp and log, every sum in ascending order, each result
//! rounded once to f32, so the bits are the same on every ISA and thread count (threads split the rows; each
//! row is one thread's, and the reduction over rows runs after them on one thread), and equal to the
//! TypeScript reference (`src/kernels/nll.ts`) within 1 ulp (its `Math.exp`/`Math.log`). Fast mode: the
//! sums over the classes in vector lanes (any order); over a contiguous row the log-sum-exp in one pass of
//! blocks (`fastLogSumExp`: a running maximum, f32 exponentials by `math.expDiffFast` summed in f32 vectors
//! per block and in f64 lanes across blocks) and the gradient's p = exp(x − lse_hi)·(1 − lse_lo) by the same
//! exponential (`expShifted`). The log-sum-exp's bound: each exponential's relative error is at most
//! 2^-24·(2.3·(m − x) + 4) and reaches its block's f32 sum through at most lse_block/(4·wide) + 1 roundings,
//! so to first order |Δlse| ≤ 2^-24·(2.3·E_p[m − x] + lse_block/(4·wide) + 5) with p the softmax, and
//! E_p[m − x] = H(p) − (lse − m) ≤ ln C: |Δlse| ≤ 2^-24·(2.3·ln C + lse_block/(4·wide) + 5), below 4.2e-6 for
//! C ≤ 10^6 on every variant (checked by the unit test at the bottom). Losses and gradients are within
//! 1e-5·(1 + |exact|) of the reference (tests/helpers/nll_conformance.ts). Index targets
//! are checked before anything is written: one that is neither ignoreIndex nor in [0, C) makes the call
//! return 1.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const math = @import("math.zig");
const ew = @import("elementwise.zig");
const Rows = @import("rows.zig").Rows;
const softmax = @import("softmax.zig");

/// The losses, numbered by the op table (`zig/kernels/ops.zig`, generated from src/core/op_table.ts).
pub const NllOp = @import("ops.zig").NllOp;

/// One loss call; see the file comment for the argument block.
pub const NllFn = *const fn (
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    x: [*]const u8,
    target: [*]const u8,
    weight: ?[*]const u8,
    out: [*]u8,
    work: [*]u8,
    g: ?[*]const u8,
) callconv(.c) i32;

/// This family's entries in the kernel table.
pub const Table = extern struct {
    nll_f32: NllFn,
};

/// The family's table.
pub const table_entries: Table = .{ .nll_f32 = nllF32 };

const lanes = ew.lanes;
const V = ew.V;
const V64 = @Vector(lanes, f64);
const inf32 = std.math.inf(f32);
const wide = softmax.wide;
const W = @Vector(wide, f32);
const W64 = @Vector(wide, f64);

/// Elements per block of fast mode's one-pass log-sum-exp (2 KiB, so its second read comes from L1); a
/// multiple of 4·wide.
const lse_block = 512;

/// exp(x − shift) for x ≤ shift (−∞ allowed) by math.expDiffFast: relative error at most
/// 2^-24·(2.3·|x − shift| + 4).
inline fn expShifted(x: W, shift: W) W {
    return math.expDiffFast(wide, x, shift);
}

/// Lanes of x from i on, −∞ past `len`.
inline fn padded(x: [*]const f32, i: usize, len: usize) W {
    if (i + wide <= len) return x[i..][0..wide].*;
    var v: [wide]f32 = @splat(-inf32);
    @memcpy(v[0 .. len - i], x[i..len]);
    return v;
}

/// The maximum of `len` ≤ lse_block elements, ignoring NaN; four accumulators.
inline fn blockMax(x: [*]const f32, len: usize) f32 {
    var acc: [4]W = @splat(@splat(-inf32));
    var i: usize = 0;
    while (i + 4 * wide <= len) : (i += 4 * wide) {
        inline for (0..4) |u| {
            const v: W = x[i + u * wide ..][0..wide].*;
            acc[u] = @select(f32, v > acc[u], v, acc[u]);
        }
    }
    while (i < len) : (i += wide) {
        const v = padded(x, i, len);
        acc[0] = @select(f32, v > acc[0], v, acc[0]);
    }
    return @reduce(.Max, @max(@max(acc[0], acc[1]), @max(acc[2], acc[3])));
}

/// Σ exp(x − shift) over `len` ≤ lse_block elements in four f32 accumulators, added pairwise.
inline fn blockSum(x: [*]const f32, len: usize, shift: W) W {
    var acc: [4]W = @splat(@splat(0));
    var i: usize = 0;
    while (i + 4 * wide <= len) : (i += 4 * wide) {
        inline for (0..4) |u| acc[u] += expShifted(x[i + u * wide ..][0..wide].*, shift);
    }
    // Padding lanes are −∞, whose exponential is 0.
    while (i < len) : (i += wide) acc[0] += expShifted(padded(x, i, len), shift);
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

const Phase = enum(i32) { forward = 0, input_grad = 1, target_grad = 2 };

/// Operands of the row walk: x, target, out (or the gradient), g, and the rows' flat index.
const Walk = Rows(5);

const Problem = struct {
    op: NllOp,
    phase: Phase,
    exact: bool,
    reduction: i32,
    ignore: i64,
    /// 4 or 8 (index bytes), 0 for probabilities.
    kind: i32,
    smoothing: f64,
    classes: usize,
    rows: usize,
    x: [*]const f32,
    target: [*]const u8,
    out: [*]f32,
    g: [*]const f32,
    weight: ?[*]const f32,
    /// Σ w_c in ascending order (C without weights).
    weight_sum: f64,
    work: [*]f64,
    /// Strides along the class axis of x, target and out.
    class_x: isize,
    class_t: isize,
    class_o: isize,
    inner: [5]isize,

    fn w(p: *const Problem, c: usize) f64 {
        return if (p.weight) |weights| weights[c] else 1;
    }

    fn xAt(p: *const Problem, base: isize, c: usize) f32 {
        return ew.at([*]const f32, p.x, base + @as(isize, @intCast(c)) * p.class_x)[0];
    }

    fn classOf(p: *const Problem, at: isize) i64 {
        if (p.kind == 8) return ew.at([*]const i64, @ptrCast(@alignCast(p.target)), at)[0];
        return ew.at([*]const i32, @ptrCast(@alignCast(p.target)), at)[0];
    }

    fn probability(p: *const Problem, base: isize, c: usize) f64 {
        const y: f64 = ew.at([*]const f32, @ptrCast(@alignCast(p.target)), base + @as(isize, @intCast(c)) * p.class_t)[0];
        if (p.smoothing == 0) return y;
        return (1 - p.smoothing) * y + p.smoothing / @as(f64, @floatFromInt(p.classes));
    }

    /// Lanes of x from class i on, as f64 (−∞ past the row's end).
    fn piece(p: *const Problem, base: isize, i: usize) V64 {
        const count = @min(lanes, p.classes - i);
        const start = ew.at([*]const f32, p.x, base + @as(isize, @intCast(i)) * p.class_x);
        if (p.class_x == 1 and count == lanes) return @floatCast(@as(V, start[0..lanes].*));
        return @floatCast(ew.gather(f32, start, p.class_x, count, -inf32));
    }

    /// The row's maximum, NaN when it holds one (the order of the comparisons does not matter).
    fn rowMax(p: *const Problem, base: isize) f32 {
        var acc: V = @splat(-inf32);
        var nan: @Vector(lanes, bool) = @splat(false);
        var i: usize = 0;
        while (i < p.classes) : (i += lanes) {
            const count = @min(lanes, p.classes - i);
            const start = ew.at([*]const f32, p.x, base + @as(isize, @intCast(i)) * p.class_x);
            const v: V = if (p.class_x == 1 and count == lanes) start[0..lanes].* else ew.gather(f32, start, p.class_x, count, -inf32);
            nan = @select(bool, v != v, v != v, nan);
            acc = @select(f32, v > acc, v, acc);
        }
        if (@reduce(.Or, nan)) return std.math.nan(f32);
        return @reduce(.Max, acc);
    }

    /// Fast mode's log Σ_c exp(x_c) over a contiguous row in one pass: per block of `lse_block` elements
    /// (read twice, the second time from L1) its maximum raises the row's running maximum m (the f64 lane sums
    /// so far times exp(m_old − m) when it does), then the block's exponentials of x − m (`math.expDiffFast`)
    /// are added in four f32 vectors, whose sum is added to the f64 lane sums. A NaN never raises m but its
    /// exponential is NaN; NaN when m ends up not finite (as the exact definition gives).
    fn fastLogSumExp(p: *const Problem, base: isize) f64 {
        const x = ew.at([*]const f32, p.x, base);
        var max = -inf32;
        var sum: W64 = @splat(0);
        var i: usize = 0;
        while (i < p.classes) : (i += lse_block) {
            const len = @min(lse_block, p.classes - i);
            const block_max = if (len == lse_block) blockMax(x + i, lse_block) else blockMax(x + i, len);
            if (block_max > max) {
                sum *= @splat(math.exp(@as(f64, max) - block_max));
                max = block_max;
            }
            // m is −∞ only while every element so far is −∞ or NaN: shifted by 0, they give 0 or NaN.
            const shift: W = @splat(if (max == -inf32) 0 else max);
            const block_sum = if (len == lse_block) blockSum(x + i, lse_block, shift) else blockSum(x + i, len, shift);
            sum += @as(W64, @floatCast(block_sum));
        }
        if (!std.math.isFinite(max)) return std.math.nan(f64);
        return @as(f64, max) + math.log(@reduce(.Add, sum));
    }

    /// log Σ_c exp(x_c) as m + log Σ exp(x_c − m).
    fn logSumExp(p: *const Problem, base: isize) f64 {
        if (!p.exact and p.class_x == 1) return p.fastLogSumExp(base);
        const m: f64 = p.rowMax(base);
        const mv: V64 = @splat(m);
        var s: f64 = 0;
        var lane_sums: V64 = @splat(0);
        var i: usize = 0;
        while (i < p.classes) : (i += lanes) {
            const e = math.expV(lanes, p.piece(base, i) - mv);
            if (p.exact) {
                const values: [lanes]f64 = e;
                // One element after another: the sum's order is the row's.
                for (values[0..@min(lanes, p.classes - i)]) |v| s += v;
            } else {
                // A strided row in fast mode: padding lanes are exp(−∞ − m) = 0 unless m is −∞ or NaN,
                // whose rows are NaN anyway.
                lane_sums += e;
            }
        }
        if (!p.exact) s = @reduce(.Add, lane_sums);
        return m + math.log(s);
    }

    /// Σ_c w_c·(lse − x_c) (the smoothing term), in ascending order.
    fn smoothingSum(p: *const Problem, base: isize, lse: f64) f64 {
        var b: f64 = 0;
        for (0..p.classes) |c| b += p.w(c) * (lse - @as(f64, p.xAt(base, c)));
        return b;
    }

    /// Fast mode's Σ_c w_c·q_c·(lse − x_c), with q_c = 1 (the smoothing term) or the smoothed probability at
    /// `target_base`, summed in f64 lanes (no chain of dependent additions).
    fn fastWeightedSum(p: *const Problem, base: isize, target_base: ?isize, lse: f64) f64 {
        var acc: V64 = @splat(0);
        var i: usize = 0;
        while (i < p.classes) : (i += lanes) {
            const count = @min(lanes, p.classes - i);
            var wq: [lanes]f64 = @splat(0);
            for (0..count) |k| wq[k] = p.w(i + k) * if (target_base) |tb| p.probability(tb, i + k) else 1;
            const term = @as(V64, wq) * (@as(V64, @splat(lse)) - p.piece(base, i));
            // Padding lanes (x = −∞, weight 0) would give 0·∞.
            const live = std.simd.iota(u32, lanes) < @as(@Vector(lanes, u32), @splat(@intCast(count)));
            acc += @select(f64, live, term, @as(V64, @splat(0)));
        }
        return @reduce(.Add, acc);
    }

    /// The loss of one row, its weight, and (crossEntropy) its log-sum-exp, into work.
    fn forwardRow(p: *const Problem, o: [5]isize) void {
        const j: usize = @intCast(o[4]);
        var loss: f64 = 0;
        var weight: f64 = 0;
        var lse: f64 = 0;
        if (p.kind == 0) {
            lse = p.logSumExp(o[0]);
            if (p.exact) {
                for (0..p.classes) |c| loss += (p.w(c) * p.probability(o[1], c)) * (lse - @as(f64, p.xAt(o[0], c)));
            } else {
                loss = p.fastWeightedSum(o[0], o[1], lse);
            }
            weight = 1;
        } else {
            const t = p.classOf(o[1]);
            if (t != p.ignore) {
                const tc: usize = @intCast(t);
                weight = p.w(tc);
                if (p.op == .nll_loss) {
                    loss = -(weight * @as(f64, p.xAt(o[0], tc)));
                } else {
                    lse = p.logSumExp(o[0]);
                    loss = weight * (lse - @as(f64, p.xAt(o[0], tc)));
                    if (p.smoothing > 0) {
                        const share = p.smoothing / @as(f64, @floatFromInt(p.classes));
                        const b = if (p.exact) p.smoothingSum(o[0], lse) else p.fastWeightedSum(o[0], null, lse);
                        loss = (1 - p.smoothing) * loss + share * b;
                    }
                }
            }
        }
        p.work[j] = lse;
        p.work[p.rows + j] = loss;
        p.work[2 * p.rows + j] = weight;
        if (p.reduction == 0) ew.at([*]f32, p.out, o[2])[0] = @floatCast(loss);
    }

    /// The factor of the row's gradient: g (none, sum) or g / divisor (mean).
    fn scaleOf(p: *const Problem, o: [5]isize) f64 {
        const g: f64 = ew.at([*]const f32, p.g, o[3])[0];
        return if (p.reduction == 1) g / p.work[3 * p.rows] else g;
    }

    fn store(p: *const Problem, o: [5]isize, c: usize, value: f64) void {
        ew.at([*]f32, p.out, o[2] + @as(isize, @intCast(c)) * p.class_o)[0] = @floatCast(value);
    }

    /// One row of the input's gradient.
    fn inputGradRow(p: *const Problem, o: [5]isize) void {
        const j: usize = @intCast(o[4]);
        const scale = p.scaleOf(o);
        const share = p.smoothing / @as(f64, @floatFromInt(p.classes));
        var target: usize = p.classes;
        var coef: f64 = 0;
        var hit: f64 = 0;
        if (p.kind == 0) {
            for (0..p.classes) |c| coef += p.w(c) * p.probability(o[1], c);
        } else {
            const t = p.classOf(o[1]);
            if (t == p.ignore) {
                for (0..p.classes) |c| p.store(o, c, 0);
                return;
            }
            target = @intCast(t);
            hit = p.w(target);
            if (p.op == .nll_loss) {
                for (0..p.classes) |c| p.store(o, c, 0);
                p.store(o, target, -(hit * scale));
                return;
            }
            if (p.smoothing > 0) hit *= 1 - p.smoothing;
            coef = if (p.smoothing > 0) hit + share * p.weight_sum else hit;
        }
        if (!p.exact and p.class_x == 1 and p.class_o == 1 and std.math.isFinite(p.work[j])) {
            p.fastInputGradRow(o, scale, coef, target, hit);
            return;
        }
        const lse: V64 = @splat(p.work[j]);
        var i: usize = 0;
        while (i < p.classes) : (i += lanes) {
            const e: [lanes]f64 = math.expV(lanes, p.piece(o[0], i) - lse);
            for (0..@min(lanes, p.classes - i)) |k| {
                const c = i + k;
                var d = e[k] * coef;
                if (p.kind == 0) {
                    d -= p.w(c) * p.probability(o[1], c);
                } else {
                    if (c == target) d -= hit;
                    if (p.smoothing > 0) d -= share * p.w(c);
                }
                p.store(o, c, scale * d);
            }
        }
    }

    /// Fast mode's row of the input's gradient, contiguous x and gradient: p = expShifted(x, lse_hi) (x ≤ lse_hi:
    /// lse ≥ the row's f32 maximum, and so is its rounding to f32) in f32 vectors, lse = lse_hi + lse_lo carried as the factor 1 − lse_lo of the softmax term; the target
    /// element (index targets) is then written again from f64.
    fn fastInputGradRow(p: *const Problem, o: [5]isize, scale: f64, coef: f64, target: usize, hit: f64) void {
        const lse = p.work[@intCast(o[4])];
        const lse_hi: f32 = @floatCast(lse);
        const lse_lo = lse - @as(f64, lse_hi);
        const x = ew.at([*]const f32, p.x, o[0]);
        const out = ew.at([*]f32, p.out, o[2]);
        const share = p.smoothing / @as(f64, @floatFromInt(p.classes));
        const soft: f32 = @floatCast(scale * coef * (1 - lse_lo));
        // The constant part, −s·(ε/C)·w_c (index targets) or −s·w_c·q_c (probabilities), per class.
        const uniform: f32 = @floatCast(scale * share);
        const eps: f32 = @floatCast(1 - p.smoothing);
        const scale32: f32 = @floatCast(scale);
        var i: usize = 0;
        if (p.kind != 0 and p.weight == null and p.smoothing == 0) {
            // The common case, index targets without weights or smoothing: s·coef·p_c over whole pieces.
            const soft_w: W = @splat(soft);
            while (i + wide <= p.classes) : (i += wide) {
                out[i..][0..wide].* = expShifted(x[i..][0..wide].*, @splat(lse_hi)) * soft_w;
            }
        }
        while (i < p.classes) {
            const count = @min(wide, p.classes - i);
            var xs: [wide]f32 = @splat(-inf32);
            var wv: [wide]f32 = @splat(1);
            var y: [wide]f32 = @splat(0);
            if (count == wide) {
                xs = x[i..][0..wide].*;
                if (p.weight) |weights| wv = weights[i..][0..wide].*;
            } else {
                @memcpy(xs[0..count], x[i..][0..count]);
                if (p.weight) |weights| @memcpy(wv[0..count], weights[i..][0..count]);
            }
            const e = expShifted(xs, @splat(lse_hi));
            var d = e * @as(W, @splat(soft));
            if (p.kind == 0) {
                for (0..count) |k| y[k] = ew.at([*]const f32, @ptrCast(@alignCast(p.target)), o[1] + @as(isize, @intCast(i + k)) * p.class_t)[0];
                // s·w_c·q_c with q_c = (1 − ε)·y_c + ε/C.
                d -= @as(W, wv) * (@as(W, y) * @as(W, @splat(scale32 * eps)) + @as(W, @splat(uniform)));
            } else if (p.smoothing > 0) {
                d -= @as(W, wv) * @as(W, @splat(uniform));
            }
            if (count == wide) {
                out[i..][0..wide].* = d;
            } else {
                const values: [wide]f32 = d;
                @memcpy(out[i..][0..count], values[0..count]);
            }
            i += count;
        }
        if (p.kind != 0) {
            const e = math.exp(@as(f64, x[target]) - lse);
            p.store(o, target, scale * (e * coef - hit - if (p.smoothing > 0) share * p.w(target) else 0));
        }
    }

    /// One row of the probability target's gradient.
    fn targetGradRow(p: *const Problem, o: [5]isize) void {
        const j: usize = @intCast(o[4]);
        const scale = p.scaleOf(o);
        const lse = p.work[j];
        for (0..p.classes) |c| {
            var d = p.w(c) * (lse - @as(f64, p.xAt(o[0], c)));
            if (p.smoothing > 0) d *= 1 - p.smoothing;
            p.store(o, c, scale * d);
        }
    }

    pub fn span(p: *const Problem, offsets: [5]isize, begin: usize, end: usize) void {
        for (begin..end) |j| {
            var o: [5]isize = undefined;
            for (0..5) |k| o[k] = offsets[k] + @as(isize, @intCast(j)) * p.inner[k];
            switch (p.phase) {
                .forward => p.forwardRow(o),
                .input_grad => p.inputGradRow(o),
                .target_grad => p.targetGradRow(o),
            }
        }
    }
};

/// Walks the rows of `walk` over `first..end` with `problem`.
const Job = struct {
    walk: *const Walk,
    problem: *const Problem,

    pub fn range(job: *const Job, first: usize, end: usize) void {
        ew.forEachSpan(job.walk, first, end, job.problem);
    }
};

/// Whether every index target is ignoreIndex or a class in [0, C).
fn targetsInRange(walk: *const Walk, p: *const Problem) bool {
    const Check = struct {
        p: *const Problem,
        ok: bool = true,

        pub fn span(check: *@This(), offsets: [5]isize, begin: usize, end: usize) void {
            for (begin..end) |j| {
                const t = check.p.classOf(offsets[1] + @as(isize, @intCast(j)) * check.p.inner[1]);
                if (t != check.p.ignore and (t < 0 or t >= check.p.classes)) check.ok = false;
            }
        }
    };
    var check: Check = .{ .p = p };
    ew.forEachSpan(walk, 0, p.rows, &check);
    return check.ok;
}

/// `zt_nll_f32`: see the file comment. Returns 1, writing nothing, when an index target is out of range.
pub fn nllF32(rt: *const table.Runtime, args: *const abi.ArgBlock, x: [*]const u8, target: [*]const u8, weight_raw: ?[*]const u8, out: [*]u8, work_raw: [*]u8, g: ?[*]const u8) callconv(.c) i32 {
    std.debug.assert(args.rank >= 1 and args.op >= 0 and args.op < @typeInfo(NllOp).@"enum".fields.len);
    const shape = args.shapeSlice();
    const r = shape.len - 1;
    const classes: usize = @intCast(shape[r]);
    var rows: usize = 1;
    for (shape[0..r]) |e| rows *= @intCast(e);
    // The rows' flat index in row-major order, as a fifth operand.
    var index: abi.Operand = .{ .offset = 0, .strides = @splat(0) };
    var step: i32 = 1;
    var d = r;
    while (d > 0) {
        d -= 1;
        index.strides[d] = step;
        step *= shape[d];
    }
    const walk = Walk.init(shape[0..r], .{ &args.operands[0], &args.operands[1], &args.operands[2], &args.operands[3], &index });
    const weight: ?[*]const f32 = if (weight_raw) |w| ew.at([*]const f32, @ptrCast(@alignCast(w)), args.ints[4]) else null;
    var p: Problem = .{
        .op = @enumFromInt(args.op),
        .phase = @enumFromInt(args.ints[0]),
        .exact = ew.isExact(args),
        .reduction = args.ints[1],
        .ignore = args.ints[2],
        .kind = args.ints[3],
        .smoothing = args.floats[0],
        .classes = classes,
        .rows = rows,
        .x = @ptrCast(@alignCast(x)),
        .target = target,
        .out = @ptrCast(@alignCast(out)),
        .g = if (g) |gp| @ptrCast(@alignCast(gp)) else @ptrCast(@alignCast(out)),
        .weight = weight,
        .weight_sum = 0,
        .work = ew.at([*]f64, @ptrCast(@alignCast(work_raw)), args.ints[5]),
        .class_x = args.operands[0].strides[r],
        .class_t = args.operands[1].strides[r],
        .class_o = args.operands[2].strides[r],
        .inner = walk.innerStrides(),
    };
    for (0..classes) |c| p.weight_sum += p.w(c);
    if (p.phase == .forward and p.kind != 0 and !targetsInRange(&walk, &p)) return 1;
    const job: Job = .{ .walk = &walk, .problem = &p };
    // A row's work is about C elements (one exponential each for crossEntropy).
    const per_element: usize = if (p.op == .cross_entropy) ew.parallel_min_elements / 8 else ew.parallel_min_elements;
    ew.parallelRange(rt, args.threads, rows, @max(2, per_element / @max(classes, 1)), 1, &job);
    if (p.phase == .forward and p.reduction != 0) {
        var total: f64 = 0;
        var divisor: f64 = 0;
        for (0..rows) |j| {
            total += p.work[rows + j];
            divisor += p.work[2 * rows + j];
        }
        p.work[3 * rows] = divisor;
        ew.at([*]f32, p.out, args.operands[2].offset)[0] = @floatCast(if (p.reduction == 1) total / divisor else total);
    }
    return 0;
}

// --- tests ---

const testing = std.testing;

fn testCall(op: NllOp, phase: i32, reduction: i32, kind: i32, shape: []const i32, operands: []const []const i32, x: []const f32, target: [*]const u8, weight: ?[]const f32, out: []f32, work: []f64, g: ?[]const f32, smoothing: f64) i32 {
    var args = ew.testArgs(shape, operands, &.{ 0, 0, 0, 0 }, @intFromEnum(op), 1, 1);
    args.ints[0] = phase;
    args.ints[1] = reduction;
    args.ints[2] = -100;
    args.ints[3] = kind;
    args.floats[0] = smoothing;
    return nllF32(&ew.test_runtime, &args, @ptrCast(x.ptr), target, if (weight) |w| @ptrCast(w.ptr) else null, @ptrCast(out.ptr), @ptrCast(work.ptr), if (g) |gg| @ptrCast(gg.ptr) else null);
}

test "nllLoss: weighted mean over the rows that are not ignored; a target out of range writes nothing" {
    const x = [_]f32{ -1, -2, -3, -4, -5, -6 };
    const weight = [_]f32{ 1, 2, 4 };
    var work: [10]f64 = undefined;
    var out = [_]f32{7};
    const targets = [_]i64{ 2, -100 };
    try testing.expectEqual(@as(i32, 0), testCall(.nll_loss, 0, 1, 8, &.{ 2, 3 }, &.{ &.{ 3, 1 }, &.{ 1, 0 }, &.{ 0, 0 } }, &x, @ptrCast(&targets), &weight, &out, &work, null, 0));
    try testing.expectEqual(@as(f32, 3), out[0]);
    const bad = [_]i32{ 0, 3 };
    out[0] = 7;
    try testing.expectEqual(@as(i32, 1), testCall(.nll_loss, 0, 1, 4, &.{ 2, 3 }, &.{ &.{ 3, 1 }, &.{ 1, 0 }, &.{ 0, 0 } }, &x, @ptrCast(&bad), &weight, &out, &work, null, 0));
    try testing.expectEqual(@as(f32, 7), out[0]);
}

test "crossEntropy: the loss of equal logits is log C and its gradient sums to zero" {
    const x = [_]f32{ 0, 0, 0, 0 };
    const targets = [_]i32{1};
    var work: [4]f64 = undefined;
    var out = [_]f32{0};
    try testing.expectEqual(@as(i32, 0), testCall(.cross_entropy, 0, 2, 4, &.{ 1, 4 }, &.{ &.{ 4, 1 }, &.{ 1, 0 }, &.{ 0, 0 } }, &x, @ptrCast(&targets), null, &out, &work, null, 0.2));
    try testing.expectEqual(@as(f32, @floatCast(math.log(4))), out[0]);
    var grad: [4]f32 = undefined;
    const g = [_]f32{1};
    try testing.expectEqual(@as(i32, 0), testCall(.cross_entropy, 1, 2, 4, &.{ 1, 4 }, &.{ &.{ 4, 1 }, &.{ 1, 0 }, &.{ 4, 1 }, &.{ 0, 0 } }, &x, @ptrCast(&targets), null, &grad, &work, &g, 0.2));
    // p = 1/4, target share (1 − 0.2) + 0.2/4 = 0.85: 0.25 − 0.85 at the target, 0.25 − 0.05 elsewhere.
    try testing.expectEqual(@as(f32, @floatCast(0.25 - 0.85)), grad[1]);
    try testing.expectEqual(@as(f32, @floatCast(0.25 - 0.05)), grad[0]);
}

test "crossEntropy: threads split the rows without changing exact bits; fast mode is within its bound" {
    const rows = 48;
    const classes = 300;
    var x: [rows * classes]f32 = undefined;
    for (&x, 0..) |*v, i| v.* = @as(f32, @floatFromInt((i * 37) % 101)) * 0.08 - 4;
    var targets: [rows]i32 = undefined;
    for (&targets, 0..) |*t, i| t.* = @intCast((i * 53) % classes);
    const shape = [_]i32{ rows, classes };
    const strides: []const []const i32 = &.{ &.{ classes, 1 }, &.{ 1, 0 }, &.{ 1, 0 } };
    var work: [3 * rows + 1]f64 = undefined;
    var losses: [3][rows]f32 = undefined;
    for (0..3) |k| {
        var args = ew.testArgs(&shape, strides, &.{ 0, 0, 0, 0 }, @intFromEnum(NllOp.cross_entropy), if (k == 2) 0 else 1, if (k == 1) 4 else 1);
        args.ints[2] = -100;
        args.ints[3] = 4;
        args.floats[0] = 0.1;
        try testing.expectEqual(@as(i32, 0), nllF32(&ew.test_runtime, &args, @ptrCast(&x), @ptrCast(&targets), null, @ptrCast(&losses[k]), @ptrCast(&work), null));
    }
    try testing.expectEqualSlices(f32, &losses[0], &losses[1]);
    for (losses[0], losses[2]) |exact, fast| try testing.expect(@abs(fast - exact) <= 1e-5 * (1 + @abs(exact)));
}

test "crossEntropy fast mode: the one-pass log-sum-exp is within its bound over many blocks; −∞ and NaN rows" {
    const classes = 3 * lse_block + 37;
    const rows = 6;
    var x: [rows * classes]f32 = undefined;
    for (&x, 0..) |*v, i| {
        const c: f32 = @floatFromInt(i % classes);
        const noise = @as(f32, @floatFromInt((i * 37) % 101)) * 0.08 - 4;
        v.* = switch (i / classes) {
            // Rising (the maximum rises in every block), falling far from 0, sparse, a first block of −∞.
            0 => noise + c * 0.02,
            1 => noise - c * 0.02 + 1000,
            2 => if (i % 7 == 0) noise else -inf32,
            3 => if (c < lse_block + 5) -inf32 else noise * 20,
            4 => if (c == 900) std.math.nan(f32) else noise,
            else => -inf32,
        };
    }
    var targets: [rows]i32 = @splat(0);
    const shape = [_]i32{ rows, classes };
    const strides: []const []const i32 = &.{ &.{ classes, 1 }, &.{ 1, 0 }, &.{ 1, 0 } };
    var work: [2][3 * rows + 1]f64 = undefined;
    var losses: [rows]f32 = undefined;
    for (0..2) |k| {
        var args = ew.testArgs(&shape, strides, &.{ 0, 0, 0, 0 }, @intFromEnum(NllOp.cross_entropy), @intCast(k), 1);
        args.ints[2] = -100;
        args.ints[3] = 4;
        try testing.expectEqual(@as(i32, 0), nllF32(&ew.test_runtime, &args, @ptrCast(&x), @ptrCast(&targets), null, @ptrCast(&losses), @ptrCast(&work[k]), null));
    }
    // The bound of the file comment: 2^-24·(2.3·ln C + lse_block/(4·wide) + 5).
    const bound = 0x1p-24 * (2.3 * @log(@as(f64, classes)) + lse_block / (4 * wide) + 5);
    for (work[0][0..4], work[1][0..4]) |fast, exact| try testing.expect(@abs(fast - exact) <= bound);
    try testing.expect(std.math.isNan(work[0][4]) and std.math.isNan(work[1][4]));
    try testing.expect(std.math.isNan(work[0][5]) and std.math.isNan(work[1][5]));
}

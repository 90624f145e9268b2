//! Layer normalization over contiguous rows [R, D], forward and backward, one call each (the TypeScript
//! reference, `src/kernels/norm.ts`, defines the meaning; the binding makes every operand contiguous).
//!
//! Forward (`zt_layer_norm_f32`): per row, exact mode adds the row in f64 in ascending order, μ = s / D, then
//! v = Σ (x − μ)² in f64 in ascending order, rstd = 1 / √(v / D + eps) in f64; x̂ = (x − μ)·rstd in f64, and
//! y = x̂·w + b in f64, each rounded once to f32 (x̂ written only when wanted; rstd written rounded). Fast
//! mode: the same two passes over the row while it is in cache, in vector lanes, the sums in f64, the row's
//! mean rounded to f32 (m) and the second pass shifted by it (Σ d and Σ d², d = x − m, so the variance is
//! Σ d²/D − (Σ d/D)², exact in f32 where x and m are close), then x̂ = (d − δ)·rstd and y = x̂·w + b in f32.
//!
//! Backward (`zt_layer_norm_backward_f32`): with ĝ = g·w (g alone without a weight), per row a = Σ ĝ / D and
//! c = Σ ĝ·x̂ / D in f64 in ascending order (exact) or in f64 lanes (fast), dx = rstd·((ĝ − a) − x̂·c), in f64
//! rounded once (exact) or in f32 (fast). dw = Σ g·x̂ and db = Σ g over the rows, in f64 in both modes, in
//! fixed blocks of `block_rows` rows: ascending within a block, the block sums then added in ascending block
//! order from +0 and rounded once, so the bits do not depend on the thread count (threads take whole blocks).
//!
//! Argument block, forward: ints[0..2] = R, D; ints[2..8] = element offsets of y, x̂, rstd, x, w, b;
//! ints[8] = flags (1: write x̂, 2: weight, 4: bias); floats[0] = eps. Backward: ints[0..2] = R, D;
//! ints[2..10] = element offsets of dx, dw, db, g, x̂, rstd, w, work (f64); ints[10] = flags (1: dx, 2:
//! weight, 4: dw, 8: db). The workspace holds 2·D f64 per block of rows when dw or db is wanted.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const ew = @import("elementwise.zig");

const lanes = ew.lanes;
const V = ew.V;
const V64 = @Vector(lanes, f64);

/// Rows per block of the weight and bias gradients' partial sums (fixed: the bits depend on it).
pub const block_rows = 128;

/// Rows below which the kernels stay on the calling thread (counted in elements: R·D).
const parallel_min_elements = ew.parallel_min_elements;

pub const ForwardFn = *const fn (
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    y: [*]f32,
    xhat: ?[*]f32,
    rstd: [*]f32,
    x: [*]const f32,
    w: ?[*]const f32,
    b: ?[*]const f32,
) callconv(.c) void;

pub const BackwardFn = *const fn (
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    dx: ?[*]f32,
    dw: ?[*]f32,
    db: ?[*]f32,
    g: [*]const f32,
    xhat: [*]const f32,
    rstd: [*]const f32,
    w: ?[*]const f32,
    work: ?[*]f64,
) callconv(.c) void;

/// This family's entries in the kernel table.
pub const Table = extern struct {
    layer_norm_f32: ForwardFn,
    layer_norm_backward_f32: BackwardFn,
};

pub const table_entries: Table = .{ .layer_norm_f32 = forwardF32, .layer_norm_backward_f32 = backwardF32 };

fn u(v: i32) usize {
    std.debug.assert(v >= 0);
    return @intCast(v);
}

fn shift(comptime P: type, p: ?P, offset: i32) ?P {
    return if (p) |q| q + u(offset) else null;
}

inline fn load(p: [*]const f32, i: usize) V {
    return p[i..][0..lanes].*;
}

inline fn widen(v: V) [2]@Vector(lanes / 2, f64) {
    const H = @Vector(lanes / 2, f32);
    const a: [lanes]f32 = v;
    const lo: H = a[0 .. lanes / 2].*;
    const hi: H = a[lanes / 2 ..].*;
    return .{ @floatCast(lo), @floatCast(hi) };
}

// --- forward ---

const Forward = struct {
    rows: usize,
    d: usize,
    eps: f64,
    exact: bool,
    tasks: usize,
    y: [*]f32,
    xhat: ?[*]f32,
    rstd: [*]f32,
    x: [*]const f32,
    w: ?[*]const f32,
    b: ?[*]const f32,

    fn run(context: *anyopaque, task: u32) callconv(.c) void {
        const f: *const Forward = @ptrCast(@alignCast(context));
        const begin = f.rows * task / f.tasks;
        const end = f.rows * (task + 1) / f.tasks;
        for (begin..end) |r| {
            if (f.exact) f.exactRow(r) else f.fastRow(r);
        }
    }

    fn exactRow(f: *const Forward, r: usize) void {
        const x = f.x + r * f.d;
        const y = f.y + r * f.d;
        const n: f64 = @floatFromInt(f.d);
        var s: f64 = 0;
        for (0..f.d) |i| s += x[i];
        const mu = s / n;
        var v: f64 = 0;
        for (0..f.d) |i| {
            const t = @as(f64, x[i]) - mu;
            v += t * t;
        }
        const rs = 1 / @sqrt(v / n + f.eps);
        f.rstd[r] = @floatCast(rs);
        const xh_out = if (f.xhat) |p| p + r * f.d else null;
        for (0..f.d) |i| {
            const xh = (@as(f64, x[i]) - mu) * rs;
            if (xh_out) |p| p[i] = @floatCast(xh);
            var out = xh;
            if (f.w) |w| out = out * @as(f64, w[i]);
            if (f.b) |b| out = out + @as(f64, b[i]);
            y[i] = @floatCast(out);
        }
    }

    fn fastRow(f: *const Forward, r: usize) void {
        const H = @Vector(lanes / 2, f64);
        const x = f.x + r * f.d;
        const y = f.y + r * f.d;
        const d = f.d;
        const n: f64 = @floatFromInt(d);
        var acc = [4]H{ @splat(0), @splat(0), @splat(0), @splat(0) };
        var i: usize = 0;
        while (i + 2 * lanes <= d) : (i += 2 * lanes) {
            const p = widen(load(x, i));
            const q = widen(load(x, i + lanes));
            acc[0] += p[0];
            acc[1] += p[1];
            acc[2] += q[0];
            acc[3] += q[1];
        }
        var s = @reduce(.Add, (acc[0] + acc[1]) + (acc[2] + acc[3]));
        while (i < d) : (i += 1) s += x[i];
        const m: f32 = @floatCast(s / n);
        const mv: V = @splat(m);
        var sd = [2]H{ @splat(0), @splat(0) };
        var sq = [2]H{ @splat(0), @splat(0) };
        i = 0;
        while (i + lanes <= d) : (i += lanes) {
            const p = widen(load(x, i) - mv);
            inline for (0..2) |k| {
                sd[k] += p[k];
                sq[k] = @mulAdd(H, p[k], p[k], sq[k]);
            }
        }
        var s1 = @reduce(.Add, sd[0] + sd[1]);
        var s2 = @reduce(.Add, sq[0] + sq[1]);
        while (i < d) : (i += 1) {
            const t: f64 = x[i] - m;
            s1 += t;
            s2 += t * t;
        }
        const delta = s1 / n;
        const variance = @max(s2 / n - delta * delta, 0);
        const rs = 1 / @sqrt(variance + f.eps);
        f.rstd[r] = @floatCast(rs);
        const shift_v: V = @splat(m + @as(f32, @floatCast(delta)));
        const scale: V = @splat(@as(f32, @floatCast(rs)));
        const xh_out = if (f.xhat) |p| p + r * f.d else null;
        i = 0;
        while (i + lanes <= d) : (i += lanes) {
            const xh = (load(x, i) - shift_v) * scale;
            if (xh_out) |p| p[i..][0..lanes].* = xh;
            y[i..][0..lanes].* = f.affine(xh, i);
        }
        while (i < d) : (i += 1) {
            const xh = (x[i] - shift_v[0]) * scale[0];
            if (xh_out) |p| p[i] = xh;
            var out = xh;
            if (f.w) |w| out = out * w[i];
            if (f.b) |b| out = out + b[i];
            y[i] = out;
        }
    }

    inline fn affine(f: *const Forward, xh: V, i: usize) V {
        if (f.w) |w| {
            if (f.b) |b| return @mulAdd(V, xh, load(w, i), load(b, i));
            return xh * load(w, i);
        }
        if (f.b) |b| return xh + load(b, i);
        return xh;
    }
};

fn forwardF32(
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    y: [*]f32,
    xhat: ?[*]f32,
    rstd: [*]f32,
    x: [*]const f32,
    w: ?[*]const f32,
    b: ?[*]const f32,
) callconv(.c) void {
    const flags = args.ints[8];
    const rows = u(args.ints[0]);
    const d = u(args.ints[1]);
    std.debug.assert(d > 0);
    var f: Forward = .{
        .rows = rows,
        .d = d,
        .eps = args.floats[0],
        .exact = args.mode == 1,
        .tasks = 1,
        .y = y + u(args.ints[2]),
        .xhat = if (flags & 1 != 0) shift([*]f32, xhat, args.ints[3]) else null,
        .rstd = rstd + u(args.ints[4]),
        .x = x + u(args.ints[5]),
        .w = if (flags & 2 != 0) shift([*]const f32, w, args.ints[6]) else null,
        .b = if (flags & 4 != 0) shift([*]const f32, b, args.ints[7]) else null,
    };
    if (rows == 0) return;
    const threads = u(@max(args.threads, 1));
    if (threads == 1 or rows < 2 or rows * d < parallel_min_elements) {
        Forward.run(@ptrCast(&f), 0);
        return;
    }
    f.tasks = @min(rows, 4 * threads);
    rt.parallelFor(@ptrCast(&f), @intCast(f.tasks), @intCast(threads), Forward.run);
}

// --- backward ---

const Backward = struct {
    rows: usize,
    d: usize,
    exact: bool,
    dx: ?[*]f32,
    dw: bool,
    db: bool,
    g: [*]const f32,
    xhat: [*]const f32,
    rstd: [*]const f32,
    w: ?[*]const f32,
    /// Per block: D partial sums of g·x̂, then D of g.
    work: ?[*]f64,

    fn run(context: *anyopaque, task: u32) callconv(.c) void {
        const k: *const Backward = @ptrCast(@alignCast(context));
        const begin = @as(usize, task) * block_rows;
        const end = @min(k.rows, begin + block_rows);
        if (k.dx != null) {
            for (begin..end) |r| {
                if (k.exact) k.exactRow(r) else k.fastRow(r);
            }
        }
        if (k.dw or k.db) k.partials(task, begin, end);
    }

    inline fn gw(k: *const Backward, g: [*]const f32, i: usize) f64 {
        return if (k.w) |w| @as(f64, g[i]) * @as(f64, w[i]) else g[i];
    }

    fn exactRow(k: *const Backward, r: usize) void {
        const g = k.g + r * k.d;
        const xh = k.xhat + r * k.d;
        const dx = k.dx.? + r * k.d;
        const n: f64 = @floatFromInt(k.d);
        var s1: f64 = 0;
        var s2: f64 = 0;
        for (0..k.d) |i| {
            const t = k.gw(g, i);
            s1 += t;
            s2 += t * @as(f64, xh[i]);
        }
        const a = s1 / n;
        const c = s2 / n;
        const rs: f64 = k.rstd[r];
        for (0..k.d) |i| dx[i] = @floatCast(rs * ((k.gw(g, i) - a) - @as(f64, xh[i]) * c));
    }

    inline fn gwv(k: *const Backward, g: [*]const f32, i: usize) V {
        return if (k.w) |w| load(g, i) * load(w, i) else load(g, i);
    }

    fn fastRow(k: *const Backward, r: usize) void {
        const H = @Vector(lanes / 2, f64);
        const g = k.g + r * k.d;
        const xh = k.xhat + r * k.d;
        const dx = k.dx.? + r * k.d;
        const d = k.d;
        const n: f64 = @floatFromInt(d);
        var a1 = [2]H{ @splat(0), @splat(0) };
        var a2 = [2]H{ @splat(0), @splat(0) };
        var i: usize = 0;
        while (i + lanes <= d) : (i += lanes) {
            const t = k.gwv(g, i);
            const p = widen(t);
            const q = widen(t * load(xh, i));
            inline for (0..2) |j| {
                a1[j] += p[j];
                a2[j] += q[j];
            }
        }
        var s1 = @reduce(.Add, a1[0] + a1[1]);
        var s2 = @reduce(.Add, a2[0] + a2[1]);
        while (i < d) : (i += 1) {
            const t: f32 = if (k.w) |w| g[i] * w[i] else g[i];
            s1 += t;
            s2 += t * xh[i];
        }
        const a: V = @splat(@as(f32, @floatCast(s1 / n)));
        const c: V = @splat(@as(f32, @floatCast(s2 / n)));
        const rs: V = @splat(k.rstd[r]);
        i = 0;
        while (i + lanes <= d) : (i += lanes) {
            dx[i..][0..lanes].* = rs * @mulAdd(V, -load(xh, i), c, k.gwv(g, i) - a);
        }
        while (i < d) : (i += 1) {
            const t: f32 = if (k.w) |w| g[i] * w[i] else g[i];
            dx[i] = rs[0] * ((t - a[0]) - xh[i] * c[0]);
        }
    }

    /// The block's sums of g·x̂ and g per column, rows ascending, in f64 (vector lanes over columns keep each
    /// column's order).
    fn partials(k: *const Backward, block: usize, begin: usize, end: usize) void {
        const d = k.d;
        const pw = k.work.? + block * 2 * d;
        const pb = pw + d;
        @memset(pw[0 .. 2 * d], 0);
        for (begin..end) |r| {
            const g = k.g + r * d;
            const xh = k.xhat + r * d;
            const H = @Vector(lanes / 2, f64);
            const h = lanes / 2;
            var i: usize = 0;
            while (i + lanes <= d) : (i += lanes) {
                const gv = widen(load(g, i));
                const xv = widen(load(xh, i));
                inline for (0..2) |j| {
                    const o = i + j * h;
                    if (k.dw) pw[o..][0..h].* = @as(H, pw[o..][0..h].*) + gv[j] * xv[j];
                    if (k.db) pb[o..][0..h].* = @as(H, pb[o..][0..h].*) + gv[j];
                }
            }
            while (i < d) : (i += 1) {
                if (k.dw) pw[i] += @as(f64, g[i]) * @as(f64, xh[i]);
                if (k.db) pb[i] += g[i];
            }
        }
    }
};

fn backwardF32(
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    dx: ?[*]f32,
    dw: ?[*]f32,
    db: ?[*]f32,
    g: [*]const f32,
    xhat: [*]const f32,
    rstd: [*]const f32,
    w: ?[*]const f32,
    work: ?[*]f64,
) callconv(.c) void {
    const flags = args.ints[10];
    const rows = u(args.ints[0]);
    const d = u(args.ints[1]);
    std.debug.assert(d > 0);
    const k: Backward = .{
        .rows = rows,
        .d = d,
        .exact = args.mode == 1,
        .dx = if (flags & 1 != 0) shift([*]f32, dx, args.ints[2]) else null,
        .dw = flags & 4 != 0,
        .db = flags & 8 != 0,
        .g = g + u(args.ints[5]),
        .xhat = xhat + u(args.ints[6]),
        .rstd = rstd + u(args.ints[7]),
        .w = if (flags & 2 != 0) shift([*]const f32, w, args.ints[8]) else null,
        .work = shift([*]f64, work, args.ints[9]),
    };
    const blocks = (rows + block_rows - 1) / block_rows;
    if (blocks > 0) {
        const threads = u(@max(args.threads, 1));
        const fewer = @min(blocks, if (rows * d < parallel_min_elements) 1 else threads);
        rt.parallelFor(@ptrCast(@constCast(&k)), @intCast(blocks), @intCast(fewer), Backward.run);
    }
    const sums = [2]struct { want: bool, out: ?[*]f32, at: usize }{
        .{ .want = k.dw, .out = shift([*]f32, dw, args.ints[3]), .at = 0 },
        .{ .want = k.db, .out = shift([*]f32, db, args.ints[4]), .at = d },
    };
    for (sums) |s| {
        if (!s.want) continue;
        const out = s.out.?;
        for (0..d) |i| {
            var total: f64 = 0;
            for (0..blocks) |b| total += k.work.?[b * 2 * d + s.at + i];
            out[i] = @floatCast(total);
        }
    }
}

// --- tests ---

const testing = std.testing;

test "a row [1, 3] normalizes to [-1, 1] with eps 0 in both modes, and its backward of g = x̂ is 0" {
    for ([_]i32{ 0, 1 }) |mode| {
        var args = std.mem.zeroes(abi.ArgBlock);
        args.mode = mode;
        args.threads = 1;
        args.ints[0..2].* = .{ 1, 2 };
        args.ints[8] = 1;
        const x = [_]f32{ 1, 3 };
        var y = [_]f32{ 9, 9 };
        var xh = [_]f32{ 9, 9 };
        var rs = [_]f32{9};
        forwardF32(&ew.test_runtime, &args, &y, &xh, &rs, &x, null, null);
        try testing.expectEqualSlices(f32, &.{ -1, 1 }, &y);
        try testing.expectEqualSlices(f32, &.{ -1, 1 }, &xh);
        try testing.expectEqual(@as(f32, 1), rs[0]);
        var back = std.mem.zeroes(abi.ArgBlock);
        back.mode = mode;
        back.threads = 1;
        back.ints[0..2].* = .{ 1, 2 };
        back.ints[10] = 1 | 8;
        var dx = [_]f32{ 9, 9 };
        var db = [_]f32{ 9, 9 };
        var work: [4]f64 = undefined;
        backwardF32(&ew.test_runtime, &back, &dx, null, &db, &xh, &xh, &rs, null, &work);
        try testing.expectEqualSlices(f32, &.{ 0, 0 }, &dx);
        try testing.expectEqualSlices(f32, &.{ -1, 1 }, &db);
    }
}

//! Layer and batch normalization, forward and backward, one call each (the TypeScript reference,
//! `src/kernels/norm.ts`, defines the meaning; the binding makes every operand contiguous). A normalized
//! group ("row") r is K segments of L contiguous elements: segment k of row r starts at r·row_step +
//! k·segment_step. Layer normalization: R rows of K = 1 segment of L = D (row_step D), the weight and bias
//! indexed by the position in the row. Batch normalization over [N, C, S]: R = C rows of K = N segments of
//! L = S (row_step S, segment_step C·S), the weight and bias indexed by the row (flag "per row").
//!
//! Forward (`zt_norm_f32`), per row of M = K·L elements: exact mode adds the row in f64 in ascending order,
//! μ = s / M, then v = Σ (x − μ)² in f64 in ascending order, rstd = 1 / √(v / M + eps) in f64; x̂ = (x − μ)·rstd
//! in f64, and y = x̂·w + b in f64, each rounded once to f32 (x̂ written only when wanted; rstd written
//! rounded; μ and v/M written rounded when asked, for the running statistics). With given statistics
//! (evaluation) μ and v/M are read instead. Fast mode: the same two passes over the row while it is in cache,
//! in vector lanes, the sums in f64, the row's mean rounded to f32 (m) and the second pass shifted by it (Σ d
//! and Σ d², d = x − m, so the variance is Σ d²/M − (Σ d/M)², exact in f32 where x and m are close), then
//! x̂ = (d − δ)·rstd and y = x̂·w + b in f32.
//!
//! Backward (`zt_norm_backward_f32`): with ĝ = g·w (g alone without a weight), per row a = Σ ĝ / M and
//! c = Σ ĝ·x̂ / M in f64 in ascending order (exact) or in f64 lanes (fast), dx = rstd·((ĝ − a) − x̂·c) (or
//! rstd·ĝ when the statistics were given), in f64 rounded once (exact) or in f32 (fast). Per position (layer
//! norm): dw = Σ g·x̂ and db = Σ g over the rows, in f64 in both modes, in fixed blocks of `block_rows` rows:
//! ascending within a block, the block sums then added in ascending block order from +0 and rounded once, so
//! the bits do not depend on the thread count (threads take whole blocks). Per row (batch norm): dw and db are
//! the row's own sums, in f64 in ascending order in both modes.
//!
//! Argument block, forward: ints[0..5] = R, L, K, segment_step, row_step; ints[5..13] = element offsets of y,
//! x̂, rstd, x, w, b, mean, var; ints[13] = flags (1: write x̂, 2: weight, 4: bias, 8: per row, 16: write mean
//! and var, 32: read mean and var); floats[0] = eps. Backward: ints[0..5] as forward; ints[5..13] = element
//! offsets of dx, dw, db, g, x̂, rstd, w, work (f64); ints[13] = flags (1: dx, 2: weight, 4: dw, 8: db, 16: per
//! row, 32: statistics given). The workspace holds 2·L f64 per block of rows when a per-position dw or db is
//! wanted.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const ew = @import("elementwise.zig");

/// The full vector width of the variant (zmm on AVX-512, where `elementwise.zig`'s suggested width is a
/// ymm): a row's three passes run from L1, so their width sets the speed.
const lanes = @import("gemm.zig").vector_bytes / @sizeOf(f32);
const V = @Vector(lanes, f32);
const H = @Vector(lanes / 2, f64);

/// Rows per block of the per-position weight and bias gradients' partial sums (fixed: the bits depend on it).
pub const block_rows = 128;

pub const ForwardFn = *const fn (
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    y: [*]f32,
    xhat: ?[*]f32,
    rstd: [*]f32,
    x: [*]const f32,
    w: ?[*]const f32,
    b: ?[*]const f32,
    mean: ?[*]f32,
    variance: ?[*]f32,
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
    norm_f32: ForwardFn,
    norm_backward_f32: BackwardFn,
};

pub const table_entries: Table = .{ .norm_f32 = forwardF32, .norm_backward_f32 = backwardF32 };

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

inline fn widen(v: V) [2]H {
    const Half = @Vector(lanes / 2, f32);
    const a: [lanes]f32 = v;
    const lo: Half = a[0 .. lanes / 2].*;
    const hi: Half = a[lanes / 2 ..].*;
    return .{ @floatCast(lo), @floatCast(hi) };
}

/// Where a row's elements lie, and how its weight and bias are indexed.
const Geometry = struct {
    rows: usize,
    len: usize,
    segments: usize,
    segment_step: usize,
    row_step: usize,
    /// The weight and bias hold one value per row (batch norm), not one per position (layer norm).
    per_row: bool,

    fn count(geo: Geometry) f64 {
        return @floatFromInt(geo.len * geo.segments);
    }

    fn init(args: *const abi.ArgBlock, per_row: bool) Geometry {
        return .{
            .rows = u(args.ints[0]),
            .len = u(args.ints[1]),
            .segments = u(args.ints[2]),
            .segment_step = u(args.ints[3]),
            .row_step = u(args.ints[4]),
            .per_row = per_row,
        };
    }

    /// The first element of segment k of row r.
    inline fn at(geo: Geometry, r: usize, k: usize) usize {
        return r * geo.row_step + k * geo.segment_step;
    }
};

/// A weight or bias as seen by one row: its value at position i of a segment (a row's one value when per row).
const Param = struct {
    p: ?[*]const f32,
    stride: usize,

    fn of(p: ?[*]const f32, geo: Geometry, r: usize) Param {
        return if (p) |q| (if (geo.per_row) .{ .p = q + r, .stride = 0 } else .{ .p = q, .stride = 1 }) else .{ .p = null, .stride = 0 };
    }

    inline fn scalar(param: Param, i: usize) f32 {
        return param.p.?[i * param.stride];
    }

    inline fn vector(param: Param, i: usize) V {
        return if (param.stride == 0) @splat(param.p.?[0]) else load(param.p.?, i);
    }
};

// --- forward ---

const Forward = struct {
    geo: Geometry,
    eps: f64,
    exact: bool,
    tasks: usize,
    y: [*]f32,
    xhat: ?[*]f32,
    rstd: [*]f32,
    x: [*]const f32,
    w: ?[*]const f32,
    b: ?[*]const f32,
    mean: ?[*]f32,
    variance: ?[*]f32,
    given: bool,

    fn run(context: *anyopaque, task: u32) callconv(.c) void {
        const f: *const Forward = @ptrCast(@alignCast(context));
        const begin = f.geo.rows * task / f.tasks;
        const end = f.geo.rows * (task + 1) / f.tasks;
        for (begin..end) |r| {
            if (f.exact) f.exactRow(r) else f.fastRow(r);
        }
    }

    /// μ and v/M of row r from the given statistics.
    inline fn givenStats(f: *const Forward, r: usize) [2]f64 {
        return .{ f.mean.?[r], f.variance.?[r] };
    }

    fn exactRow(f: *const Forward, r: usize) void {
        const geo = f.geo;
        const n = geo.count();
        var mu: f64 = undefined;
        var variance: f64 = undefined;
        if (f.given) {
            mu, variance = f.givenStats(r);
        } else {
            var s: f64 = 0;
            for (0..geo.segments) |k| {
                const x = f.x + geo.at(r, k);
                for (0..geo.len) |i| s += x[i];
            }
            mu = s / n;
            var v: f64 = 0;
            for (0..geo.segments) |k| {
                const x = f.x + geo.at(r, k);
                for (0..geo.len) |i| {
                    const t = @as(f64, x[i]) - mu;
                    v += t * t;
                }
            }
            variance = v / n;
            if (f.mean) |m| m[r] = @floatCast(mu);
            if (f.variance) |m| m[r] = @floatCast(variance);
        }
        const rs = 1 / @sqrt(variance + f.eps);
        f.rstd[r] = @floatCast(rs);
        const w = Param.of(f.w, geo, r);
        const b = Param.of(f.b, geo, r);
        for (0..geo.segments) |k| {
            const o = geo.at(r, k);
            const x = f.x + o;
            const y = f.y + o;
            const xh_out = if (f.xhat) |p| p + o else null;
            for (0..geo.len) |i| {
                const xh = (@as(f64, x[i]) - mu) * rs;
                if (xh_out) |p| p[i] = @floatCast(xh);
                var out = xh;
                if (w.p != null) out = out * @as(f64, w.scalar(i));
                if (b.p != null) out = out + @as(f64, b.scalar(i));
                y[i] = @floatCast(out);
            }
        }
    }

    /// Σ x over the row in f64 lanes.
    fn fastSum(f: *const Forward, r: usize) f64 {
        const geo = f.geo;
        var acc = [4]H{ @splat(0), @splat(0), @splat(0), @splat(0) };
        var s: f64 = 0;
        for (0..geo.segments) |k| {
            const x = f.x + geo.at(r, k);
            var i: usize = 0;
            while (i + 2 * lanes <= geo.len) : (i += 2 * lanes) {
                const p = widen(load(x, i));
                const q = widen(load(x, i + lanes));
                acc[0] += p[0];
                acc[1] += p[1];
                acc[2] += q[0];
                acc[3] += q[1];
            }
            while (i < geo.len) : (i += 1) s += x[i];
        }
        return s + @reduce(.Add, (acc[0] + acc[1]) + (acc[2] + acc[3]));
    }

    /// Asks for row r's x ahead of use, when it is one short contiguous run (layer normalization): the
    /// fetch then overlaps the passes over the row before it, which run from L1.
    fn prefetchRow(f: *const Forward, r: usize) void {
        const geo = f.geo;
        if (r >= geo.rows or geo.segments != 1 or geo.len > 16384) return;
        const x = f.x + geo.at(r, 0);
        var i: usize = 0;
        while (i < geo.len) : (i += 64 / @sizeOf(f32)) @prefetch(x + i, .{});
    }

    fn fastRow(f: *const Forward, r: usize) void {
        const geo = f.geo;
        const n = geo.count();
        var center: f32 = undefined;
        var rs: f64 = undefined;
        if (f.given) {
            f.prefetchRow(r + 1);
            const mu, const variance = f.givenStats(r);
            center = @floatCast(mu);
            rs = 1 / @sqrt(variance + f.eps);
        } else {
            const m: f32 = @floatCast(f.fastSum(r) / n);
            f.prefetchRow(r + 1);
            const mv: V = @splat(m);
            var sd = [2]H{ @splat(0), @splat(0) };
            var sq = [2]H{ @splat(0), @splat(0) };
            var s1: f64 = 0;
            var s2: f64 = 0;
            for (0..geo.segments) |k| {
                const x = f.x + geo.at(r, k);
                var i: usize = 0;
                while (i + lanes <= geo.len) : (i += lanes) {
                    const p = widen(load(x, i) - mv);
                    inline for (0..2) |j| {
                        sd[j] += p[j];
                        sq[j] = @mulAdd(H, p[j], p[j], sq[j]);
                    }
                }
                while (i < geo.len) : (i += 1) {
                    const t: f64 = x[i] - m;
                    s1 += t;
                    s2 += t * t;
                }
            }
            s1 += @reduce(.Add, sd[0] + sd[1]);
            s2 += @reduce(.Add, sq[0] + sq[1]);
            const delta = s1 / n;
            const variance = @max(s2 / n - delta * delta, 0);
            rs = 1 / @sqrt(variance + f.eps);
            center = m + @as(f32, @floatCast(delta));
            if (f.mean) |p| p[r] = @floatCast(@as(f64, m) + delta);
            if (f.variance) |p| p[r] = @floatCast(variance);
        }
        f.rstd[r] = @floatCast(rs);
        const w = Param.of(f.w, geo, r);
        const b = Param.of(f.b, geo, r);
        const flags = @as(u3, @intFromBool(w.p != null)) | @as(u3, @intFromBool(b.p != null)) << 1 | @as(u3, @intFromBool(f.xhat != null)) << 2;
        for (0..geo.segments) |k| {
            const o = geo.at(r, k);
            const out: Out = .{ .y = f.y + o, .xhat = if (f.xhat) |p| p + o else undefined };
            switch (flags) {
                inline else => |which| normalize(which, f.x + o, out, geo.len, center, @floatCast(rs), w, b),
            }
        }
    }

    const Out = struct { y: [*]f32, xhat: [*]f32 };

    /// y = (x − center)·scale (then ·w, +b), and x̂ = (x − center)·scale, over one segment; `which` says at
    /// comptime whether there is a weight (bit 0), a bias (bit 1), and whether x̂ is written (bit 2).
    inline fn normalize(comptime which: u3, x: [*]const f32, out: Out, len: usize, center: f32, scale: f32, w: Param, b: Param) void {
        const has_w = which & 1 != 0;
        const has_b = which & 2 != 0;
        const write_xhat = which & 4 != 0;
        const shift_v: V = @splat(center);
        const scale_v: V = @splat(scale);
        var i: usize = 0;
        while (i + lanes <= len) : (i += lanes) {
            const xh = (load(x, i) - shift_v) * scale_v;
            if (write_xhat) out.xhat[i..][0..lanes].* = xh;
            out.y[i..][0..lanes].* = if (has_w and has_b)
                @mulAdd(V, xh, w.vector(i), b.vector(i))
            else if (has_w)
                xh * w.vector(i)
            else if (has_b)
                xh + b.vector(i)
            else
                xh;
        }
        while (i < len) : (i += 1) {
            const xh = (x[i] - center) * scale;
            if (write_xhat) out.xhat[i] = xh;
            var y = xh;
            if (has_w) y = y * w.scalar(i);
            if (has_b) y = y + b.scalar(i);
            out.y[i] = y;
        }
    }
};

/// Tasks for `rows` independent rows of `per_row` elements each on `threads` threads (1: the calling thread).
fn rowTasks(rows: usize, per_row: usize, threads: usize) usize {
    if (threads == 1 or rows < 2 or rows * per_row < ew.parallel_min_elements) return 1;
    return @min(rows, 4 * threads);
}

fn forwardF32(
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    y: [*]f32,
    xhat: ?[*]f32,
    rstd: [*]f32,
    x: [*]const f32,
    w: ?[*]const f32,
    b: ?[*]const f32,
    mean: ?[*]f32,
    variance: ?[*]f32,
) callconv(.c) void {
    const flags = args.ints[13];
    const stats = flags & (16 | 32) != 0;
    var f: Forward = .{
        .geo = Geometry.init(args, flags & 8 != 0),
        .eps = args.floats[0],
        .exact = args.mode == 1,
        .tasks = 1,
        .y = y + u(args.ints[5]),
        .xhat = if (flags & 1 != 0) shift([*]f32, xhat, args.ints[6]) else null,
        .rstd = rstd + u(args.ints[7]),
        .x = x + u(args.ints[8]),
        .w = if (flags & 2 != 0) shift([*]const f32, w, args.ints[9]) else null,
        .b = if (flags & 4 != 0) shift([*]const f32, b, args.ints[10]) else null,
        .mean = if (stats) shift([*]f32, mean, args.ints[11]) else null,
        .variance = if (stats) shift([*]f32, variance, args.ints[12]) else null,
        .given = flags & 32 != 0,
    };
    std.debug.assert(f.geo.len * f.geo.segments > 0);
    if (f.geo.rows == 0) return;
    const threads = u(@max(args.threads, 1));
    f.tasks = rowTasks(f.geo.rows, f.geo.len * f.geo.segments, threads);
    rt.parallelFor(@ptrCast(&f), @intCast(f.tasks), @intCast(@min(threads, f.tasks)), Forward.run);
}

// --- backward ---

const Backward = struct {
    geo: Geometry,
    exact: bool,
    centered: bool,
    tasks: usize,
    dx: ?[*]f32,
    dw: ?[*]f32,
    db: ?[*]f32,
    g: [*]const f32,
    xhat: [*]const f32,
    rstd: [*]const f32,
    w: ?[*]const f32,
    /// Per block of rows (per-position weights): L partial sums of g·x̂, then L of g.
    work: ?[*]f64,

    /// Per-position weights: task = one block of rows (dx, then the block's partial sums).
    fn runBlock(context: *anyopaque, task: u32) callconv(.c) void {
        const k: *const Backward = @ptrCast(@alignCast(context));
        const begin = @as(usize, task) * block_rows;
        const end = @min(k.geo.rows, begin + block_rows);
        if (k.dx != null) {
            for (begin..end) |r| k.row(r);
        }
        if (k.dw != null or k.db != null) k.partials(task, begin, end);
    }

    /// Per-row weights: task = a range of rows, each with its own dw and db.
    fn runRows(context: *anyopaque, task: u32) callconv(.c) void {
        const k: *const Backward = @ptrCast(@alignCast(context));
        const begin = k.geo.rows * task / k.tasks;
        const end = k.geo.rows * (task + 1) / k.tasks;
        for (begin..end) |r| {
            if (k.dx != null) k.row(r);
            if (k.dw != null or k.db != null) k.rowSums(r);
        }
    }

    fn row(k: *const Backward, r: usize) void {
        if (k.exact) k.exactRow(r) else k.fastRow(r);
    }

    fn exactRow(k: *const Backward, r: usize) void {
        const geo = k.geo;
        const n = geo.count();
        const w = Param.of(k.w, geo, r);
        const gw = struct {
            inline fn at(p: Param, g: [*]const f32, i: usize) f64 {
                return if (p.p != null) @as(f64, g[i]) * @as(f64, p.scalar(i)) else g[i];
            }
        }.at;
        var a: f64 = 0;
        var c: f64 = 0;
        if (k.centered) {
            var s1: f64 = 0;
            var s2: f64 = 0;
            for (0..geo.segments) |j| {
                const o = geo.at(r, j);
                for (0..geo.len) |i| {
                    const t = gw(w, k.g + o, i);
                    s1 += t;
                    s2 += t * @as(f64, k.xhat[o + i]);
                }
            }
            a = s1 / n;
            c = s2 / n;
        }
        const rs: f64 = k.rstd[r];
        for (0..geo.segments) |j| {
            const o = geo.at(r, j);
            const dx = k.dx.? + o;
            for (0..geo.len) |i| {
                const t = gw(w, k.g + o, i);
                dx[i] = @floatCast(if (k.centered) rs * ((t - a) - @as(f64, k.xhat[o + i]) * c) else rs * t);
            }
        }
    }

    fn fastRow(k: *const Backward, r: usize) void {
        const geo = k.geo;
        const n = geo.count();
        const w = Param.of(k.w, geo, r);
        var a: f32 = 0;
        var c: f32 = 0;
        if (k.centered) {
            var a1 = [2]H{ @splat(0), @splat(0) };
            var a2 = [2]H{ @splat(0), @splat(0) };
            var s1: f64 = 0;
            var s2: f64 = 0;
            for (0..geo.segments) |j| {
                const o = geo.at(r, j);
                const g = k.g + o;
                const xh = k.xhat + o;
                var i: usize = 0;
                while (i + lanes <= geo.len) : (i += lanes) {
                    const t = gwv(w, g, i);
                    const p = widen(t);
                    const q = widen(t * load(xh, i));
                    inline for (0..2) |h| {
                        a1[h] += p[h];
                        a2[h] += q[h];
                    }
                }
                while (i < geo.len) : (i += 1) {
                    const t: f32 = if (w.p != null) g[i] * w.scalar(i) else g[i];
                    s1 += t;
                    s2 += t * xh[i];
                }
            }
            a = @floatCast((s1 + @reduce(.Add, a1[0] + a1[1])) / n);
            c = @floatCast((s2 + @reduce(.Add, a2[0] + a2[1])) / n);
        }
        const av: V = @splat(a);
        const cv: V = @splat(c);
        const rs: V = @splat(k.rstd[r]);
        for (0..geo.segments) |j| {
            const o = geo.at(r, j);
            const g = k.g + o;
            const xh = k.xhat + o;
            const dx = k.dx.? + o;
            var i: usize = 0;
            while (i + lanes <= geo.len) : (i += lanes) {
                dx[i..][0..lanes].* = rs * @mulAdd(V, -load(xh, i), cv, gwv(w, g, i) - av);
            }
            while (i < geo.len) : (i += 1) {
                const t: f32 = if (w.p != null) g[i] * w.scalar(i) else g[i];
                dx[i] = rs[0] * ((t - a) - xh[i] * c);
            }
        }
    }

    inline fn gwv(w: Param, g: [*]const f32, i: usize) V {
        return if (w.p != null) load(g, i) * w.vector(i) else load(g, i);
    }

    /// A per-row weight's and bias's gradients: the row's Σ g·x̂ and Σ g, in f64, ascending.
    fn rowSums(k: *const Backward, r: usize) void {
        const geo = k.geo;
        var sw: f64 = 0;
        var sb: f64 = 0;
        for (0..geo.segments) |j| {
            const o = geo.at(r, j);
            for (0..geo.len) |i| {
                const g: f64 = k.g[o + i];
                sw += g * @as(f64, k.xhat[o + i]);
                sb += g;
            }
        }
        if (k.dw) |p| p[r] = @floatCast(sw);
        if (k.db) |p| p[r] = @floatCast(sb);
    }

    /// The block's sums of g·x̂ and g per position, rows ascending, in f64 (vector lanes over the positions
    /// keep each position's order).
    fn partials(k: *const Backward, block: usize, begin: usize, end: usize) void {
        const d = k.geo.len;
        const pw = k.work.? + block * 2 * d;
        const pb = pw + d;
        @memset(pw[0 .. 2 * d], 0);
        for (begin..end) |r| {
            const g = k.g + r * k.geo.row_step;
            const xh = k.xhat + r * k.geo.row_step;
            const h = lanes / 2;
            var i: usize = 0;
            while (i + lanes <= d) : (i += lanes) {
                const gv = widen(load(g, i));
                const xv = widen(load(xh, i));
                inline for (0..2) |j| {
                    const o = i + j * h;
                    if (k.dw != null) pw[o..][0..h].* = @as(H, pw[o..][0..h].*) + gv[j] * xv[j];
                    if (k.db != null) pb[o..][0..h].* = @as(H, pb[o..][0..h].*) + gv[j];
                }
            }
            while (i < d) : (i += 1) {
                if (k.dw != null) pw[i] += @as(f64, g[i]) * @as(f64, xh[i]);
                if (k.db != null) pb[i] += g[i];
            }
        }
    }

    /// The per-position gradients: each position's block sums added in block order.
    fn combine(k: *const Backward) void {
        const d = k.geo.len;
        const blocks = (k.geo.rows + block_rows - 1) / block_rows;
        for ([2]?[*]f32{ k.dw, k.db }, 0..) |target, at| {
            const out = target orelse continue;
            for (0..d) |i| {
                var total: f64 = 0;
                for (0..blocks) |b| total += k.work.?[b * 2 * d + at * d + i];
                out[i] = @floatCast(total);
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
    const flags = args.ints[13];
    var k: Backward = .{
        .geo = Geometry.init(args, flags & 16 != 0),
        .exact = args.mode == 1,
        .centered = flags & 32 == 0,
        .tasks = 1,
        .dx = if (flags & 1 != 0) shift([*]f32, dx, args.ints[5]) else null,
        .dw = if (flags & 4 != 0) shift([*]f32, dw, args.ints[6]) else null,
        .db = if (flags & 8 != 0) shift([*]f32, db, args.ints[7]) else null,
        .g = g + u(args.ints[8]),
        .xhat = xhat + u(args.ints[9]),
        .rstd = rstd + u(args.ints[10]),
        .w = if (flags & 2 != 0) shift([*]const f32, w, args.ints[11]) else null,
        .work = shift([*]f64, work, args.ints[12]),
    };
    const geo = k.geo;
    std.debug.assert(geo.len * geo.segments > 0);
    const threads = u(@max(args.threads, 1));
    if (geo.per_row) {
        if (geo.rows == 0) return;
        k.tasks = rowTasks(geo.rows, geo.len * geo.segments, threads);
        rt.parallelFor(@ptrCast(&k), @intCast(k.tasks), @intCast(@min(threads, k.tasks)), Backward.runRows);
        return;
    }
    std.debug.assert(geo.segments == 1);
    const blocks = (geo.rows + block_rows - 1) / block_rows;
    if (blocks > 0) {
        const fewer = @min(blocks, if (geo.rows * geo.len < ew.parallel_min_elements) 1 else threads);
        rt.parallelFor(@ptrCast(&k), @intCast(blocks), @intCast(fewer), Backward.runBlock);
    }
    if (k.dw != null or k.db != null) k.combine();
}

// --- tests ---

const testing = std.testing;

test "a row [1, 3] normalizes to [-1, 1] with eps 0 in both modes, and its backward of g = x̂ is 0" {
    for ([_]i32{ 0, 1 }) |mode| {
        var args = std.mem.zeroes(abi.ArgBlock);
        args.mode = mode;
        args.threads = 1;
        args.ints[0..5].* = .{ 1, 2, 1, 0, 2 };
        args.ints[13] = 1;
        const x = [_]f32{ 1, 3 };
        var y = [_]f32{ 9, 9 };
        var xh = [_]f32{ 9, 9 };
        var rs = [_]f32{9};
        forwardF32(&ew.test_runtime, &args, &y, &xh, &rs, &x, null, null, null, null);
        try testing.expectEqualSlices(f32, &.{ -1, 1 }, &y);
        try testing.expectEqualSlices(f32, &.{ -1, 1 }, &xh);
        try testing.expectEqual(@as(f32, 1), rs[0]);
        var back = std.mem.zeroes(abi.ArgBlock);
        back.mode = mode;
        back.threads = 1;
        back.ints[0..5].* = .{ 1, 2, 1, 0, 2 };
        back.ints[13] = 1 | 8;
        var dx = [_]f32{ 9, 9 };
        var db = [_]f32{ 9, 9 };
        var work: [4]f64 = undefined;
        backwardF32(&ew.test_runtime, &back, &dx, null, &db, &xh, &xh, &rs, null, &work);
        try testing.expectEqualSlices(f32, &.{ 0, 0 }, &dx);
        try testing.expectEqualSlices(f32, &.{ -1, 1 }, &db);
    }
}

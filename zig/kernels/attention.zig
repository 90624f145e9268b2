//! Scaled dot-product attention forward in one call, flash-attention style (the TypeScript reference,
//! `src/kernels/attention.ts`, defines the meaning): for every batch entry b and query row i,
//! out[b, i] = Σ_j p_ij v_j / Σ_j p_ij with p_ij = exp(s_ij − m_i) over the keys j the row may see, where
//! s_ij = scale·(q_i·k_j) (+ an f32 mask element). No L×S score matrix exists: the keys are visited in blocks
//! of `block_keys`, each row keeping its running maximum m, its running sum l and its output accumulator
//! (online softmax: when a block raises the maximum from m to m', l and the accumulator are multiplied by
//! exp(m − m')). Causal rows stop at key i (key blocks past the last row of a query chunk are never touched);
//! a Bool mask's false elements are skipped inside the tile; a row that sees no key gives zeros (PyTorch's
//! safe softmax). Each row's log-sum-exp m + log l is written for the backward pass (+∞ for such a row).
//!
//! The running maximum starts at −∞ and only a greater score raises it (NaN never does). A block whose
//! maximum is still −∞ is shifted by 0 instead (its −∞ scores give 0, not NaN); when the first finite maximum
//! arrives the factor is 0, otherwise it is exp(m − m'). out = acc / l (0/0 = NaN where every visible score
//! is −∞, as the softmax of such a row).
//!
//! Exact mode, per row: q·k in f64 in ascending order, s = that·scale + mask in f64, p = math.exp(s − m) in
//! f64, l = l·factor then + p in ascending key order, acc_c = acc_c·factor then + p·v_jc (a product, then a
//! sum) in ascending key order, out = f32(acc / l), lse = f32(m + math.log(l)): the same bits on every ISA and
//! thread count, and the reference's (which ports math.exp and math.log).
//!
//! Fast mode: per task the keys of a block are packed transposed (Kᵀ panels of `nr` keys) and V padded to
//! 16 columns, a micro-kernel forms 6 rows × `nr` scores with f32 FMAs over E, the softmax step runs in f32
//! vectors with math.expFast, and a second micro-kernel adds P·V into the rows' f32 accumulators.
//!
//! Operands (element strides; the argument block's shape holds the batch extents, rank = their count):
//! operands 0–3 = q, k, v, mask, each with its batch strides, then its row stride at [rank] (and the mask's
//! column stride at [rank + 1]); q, k and v rows are contiguous. ints[0..4] = L, S, E, Ev; ints[4] = flags
//! (1 causal, 2 Bool mask, 4 f32 mask); ints[5..8] = element offsets of out, lse and work; ints[8] = tasks;
//! ints[9] = query rows per work item; floats[0] = scale. out is [batch, L, Ev] and lse [batch, L],
//! contiguous; work holds `tasks` slices of `workFloats` f32 each.
const std = @import("std");
const builtin = @import("builtin");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const math = @import("math.zig");
const ew = @import("elementwise.zig");

const lanes = ew.lanes;
const V = ew.V;

/// Keys per block of the online softmax (fixed: the exact bits depend on it).
pub const block_keys = 64;
/// The column padding of packed V rows and accumulators, the largest vector width of any variant.
pub const pad = 16;
/// Rows of the micro-tiles.
const mr = 6;
/// Keys per packed Kᵀ panel (divides `block_keys`).
const nr = if (lanes >= 16) 4 * lanes else 2 * lanes;
/// Vectors of output columns per P·V micro-tile.
const pv_vecs = if (lanes >= 16) 4 else 2;

const has_fma = switch (builtin.cpu.arch) {
    .x86_64 => std.Target.x86.featureSetHas(builtin.cpu.features, .fma),
    .aarch64 => true,
    else => false,
};

inline fn fma(a: V, b: V, c: V) V {
    return if (has_fma) @mulAdd(V, a, b, c) else a * b + c;
}

pub const ForwardFn = *const fn (
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    out: [*]f32,
    lse: [*]f32,
    q: [*]const f32,
    k: [*]const f32,
    v: [*]const f32,
    mask: ?[*]const u8,
    work: [*]f32,
) callconv(.c) void;

/// This family's entries in the kernel table.
pub const Table = extern struct {
    attention_f32: ForwardFn,
};

pub const table_entries: Table = .{ .attention_f32 = forwardF32 };

fn u(v: i32) usize {
    std.debug.assert(v >= 0);
    return @intCast(v);
}

fn ceilTo(x: usize, m: usize) usize {
    return (x + m - 1) / m * m;
}

/// The f32 elements of one task's workspace (as `attentionWorkspace` in src/kernels/attention.ts).
pub fn workFloats(e: usize, ev: usize, rows: usize) usize {
    const evp = ceilTo(ev, pad);
    return ceilTo(block_keys * e + block_keys * evp + rows * evp + 3 * rows + 8 * block_keys, 16);
}

const Forward = struct {
    rank: usize,
    batch: [abi.max_rank]usize,
    /// Batch strides of q, k, v and the mask.
    strides: [4][abi.max_rank]isize,
    base: [4]isize,
    l: usize,
    s: usize,
    e: usize,
    ev: usize,
    q_row: usize,
    k_row: usize,
    v_row: usize,
    m_row: isize,
    m_col: isize,
    causal: bool,
    bool_mask: bool,
    f32_mask: bool,
    scale: f32,
    exact: bool,
    rows: usize,
    items: usize,
    tasks: usize,
    out: [*]f32,
    lse: [*]f32,
    q: [*]const f32,
    k: [*]const f32,
    v: [*]const f32,
    mask: ?[*]const u8,
    work: [*]f32,
    work_floats: usize,

    /// The element offsets of batch entry `b` in q, k, v and the mask.
    fn offsets(f: *const Forward, b: usize) [4]isize {
        var o = f.base;
        var rest = b;
        var d = f.rank;
        while (d > 0) {
            d -= 1;
            const index: isize = @intCast(rest % f.batch[d]);
            rest /= f.batch[d];
            inline for (0..4) |t| o[t] += index * f.strides[t][d];
        }
        return o;
    }

    fn run(context: *anyopaque, task: u32) callconv(.c) void {
        const f: *const Forward = @ptrCast(@alignCast(context));
        const begin = f.items * task / f.tasks;
        const end = f.items * (task + 1) / f.tasks;
        const ws = f.work + task * f.work_floats;
        const chunks = (f.l + f.rows - 1) / f.rows;
        for (begin..end) |item| {
            const b = item / chunks;
            const r0 = (item % chunks) * f.rows;
            const r1 = @min(f.l, r0 + f.rows);
            const at = Item.init(f, b, r0, r1);
            if (f.exact) at.exact(ws) else at.fast(ws);
        }
    }
};

/// One work item: query rows r0..r1 of batch entry b.
const Item = struct {
    f: *const Forward,
    q: [*]const f32,
    k: [*]const f32,
    v: [*]const f32,
    mask_f: ?[*]const f32,
    mask_b: ?[*]const u8,
    out: [*]f32,
    lse: [*]f32,
    r0: usize,
    r1: usize,

    fn init(f: *const Forward, b: usize, r0: usize, r1: usize) Item {
        const o = f.offsets(b);
        return .{
            .f = f,
            .q = ew.at([*]const f32, f.q, o[0]),
            .k = ew.at([*]const f32, f.k, o[1]),
            .v = ew.at([*]const f32, f.v, o[2]),
            .mask_f = if (f.f32_mask) ew.at([*]const f32, @ptrCast(@alignCast(f.mask.?)), o[3]) else null,
            .mask_b = if (f.bool_mask) ew.at([*]const u8, f.mask.?, o[3]) else null,
            .out = f.out + b * f.l * f.ev,
            .lse = f.lse + b * f.l,
            .r0 = r0,
            .r1 = r1,
        };
    }

    inline fn maskAt(it: *const Item, i: usize, j: usize) isize {
        return @as(isize, @intCast(i)) * it.f.m_row + @as(isize, @intCast(j)) * it.f.m_col;
    }

    inline fn allowed(it: *const Item, i: usize, j: usize) bool {
        const m = it.mask_b orelse return true;
        return ew.at([*]const u8, m, it.maskAt(i, j))[0] != 0;
    }

    inline fn added(it: *const Item, i: usize, j: usize) f32 {
        const m = it.mask_f orelse return 0;
        return ew.at([*]const f32, m, it.maskAt(i, j))[0];
    }

    /// The keys row i may see: all S, or 0..i for causal rows.
    inline fn keyEnd(it: *const Item, i: usize) usize {
        return if (it.f.causal) @min(it.f.s, i + 1) else it.f.s;
    }

    // --- exact ---

    fn exact(it: *const Item, ws: [*]f32) void {
        const f = it.f;
        const acc: [*]f64 = @ptrCast(@alignCast(ws));
        const sc = acc + ceilTo(f.ev, pad);
        const ok: [*]bool = @ptrCast(sc + block_keys);
        for (it.r0..it.r1) |i| {
            const qi = it.q + i * f.q_row;
            @memset(acc[0..f.ev], 0);
            var m = -std.math.inf(f64);
            var l: f64 = 0;
            var alive = false;
            const kend = it.keyEnd(i);
            var kb: usize = 0;
            while (kb < kend) : (kb += block_keys) {
                const nk = @min(block_keys, kend - kb);
                var bm = -std.math.inf(f64);
                for (0..nk) |t| {
                    const j = kb + t;
                    ok[t] = it.allowed(i, j);
                    if (!ok[t]) continue;
                    alive = true;
                    const kj = it.k + j * f.k_row;
                    var d: f64 = 0;
                    for (0..f.e) |c| d += @as(f64, qi[c]) * @as(f64, kj[c]);
                    const x = d * @as(f64, f.scale) + @as(f64, it.added(i, j));
                    sc[t] = x;
                    if (x > bm) bm = x;
                }
                const next = if (bm > m) bm else m;
                const factor: f64 = if (next == -std.math.inf(f64)) 1 else if (m == -std.math.inf(f64)) 0 else math.exp(m - next);
                const shift: f64 = if (next == -std.math.inf(f64)) 0 else next;
                m = next;
                l = l * factor;
                for (0..f.ev) |c| acc[c] = acc[c] * factor;
                for (0..nk) |t| {
                    if (!ok[t]) continue;
                    const p = math.exp(sc[t] - shift);
                    l = l + p;
                    const vj = it.v + (kb + t) * f.v_row;
                    for (0..f.ev) |c| acc[c] = acc[c] + p * @as(f64, vj[c]);
                }
            }
            const o = it.out + i * f.ev;
            if (!alive) {
                @memset(o[0..f.ev], 0);
                it.lse[i] = std.math.inf(f32);
                continue;
            }
            for (0..f.ev) |c| o[c] = @floatCast(acc[c] / l);
            it.lse[i] = @floatCast(m + math.log(l));
        }
    }

    // --- fast ---

    fn fast(it: *const Item, ws: [*]f32) void {
        const f = it.f;
        const evp = ceilTo(f.ev, pad);
        const rows = it.r1 - it.r0;
        const kt = ws;
        const vp = kt + block_keys * f.e;
        const acc = vp + block_keys * evp;
        const mx = acc + f.rows * evp;
        const sum = mx + f.rows;
        const alive = sum + f.rows;
        const tile = alive + f.rows;
        @memset(acc[0 .. rows * evp], 0);
        @memset(mx[0..rows], -std.math.inf(f32));
        @memset(sum[0..rows], 0);
        @memset(alive[0..rows], 0);
        const kend = it.keyEnd(it.r1 - 1);
        var kb: usize = 0;
        while (kb < kend) : (kb += block_keys) {
            const nk = @min(block_keys, kend - kb);
            it.pack(kt, vp, kb, nk, evp);
            // Causal rows before key kb see nothing of this block.
            var ib = if (f.causal) @max(it.r0, kb) else it.r0;
            while (ib < it.r1) : (ib += mr) {
                const n = @min(mr, it.r1 - ib);
                switch (n) {
                    inline 1...mr => |R| it.tileStep(R, ib, kb, nk, kt, vp, evp, acc, mx, sum, alive, tile),
                    else => unreachable,
                }
            }
        }
        for (0..rows) |r| {
            const i = it.r0 + r;
            const o = it.out + i * f.ev;
            if (alive[r] == 0) {
                @memset(o[0..f.ev], 0);
                it.lse[i] = std.math.inf(f32);
                continue;
            }
            const inv: V = @splat(1 / sum[r]);
            const a = acc + r * evp;
            var c: usize = 0;
            while (c + lanes <= f.ev) : (c += lanes) o[c..][0..lanes].* = @as(V, a[c..][0..lanes].*) * inv;
            while (c < f.ev) : (c += 1) o[c] = a[c] * inv[0];
            it.lse[i] = mx[r] + @as(f32, @floatCast(math.log(sum[r])));
        }
    }

    /// Kᵀ of keys kb..kb+nk as panels of `nr` keys (E rows of nr, zeros past nk) and V rows padded to evp.
    fn pack(it: *const Item, kt: [*]f32, vp: [*]f32, kb: usize, nk: usize, evp: usize) void {
        const f = it.f;
        const panels = (nk + nr - 1) / nr;
        for (0..panels) |p| {
            const panel = kt + p * f.e * nr;
            for (0..nr) |t| {
                const j = p * nr + t;
                if (j < nk) {
                    const kj = it.k + (kb + j) * f.k_row;
                    for (0..f.e) |c| panel[c * nr + t] = kj[c];
                } else {
                    for (0..f.e) |c| panel[c * nr + t] = 0;
                }
            }
        }
        for (0..nk) |t| {
            const row = vp + t * evp;
            const vj = it.v + (kb + t) * f.v_row;
            @memcpy(row[0..f.ev], vj[0..f.ev]);
            @memset(row[f.ev..evp], 0);
        }
    }

    /// R query rows from ib against keys kb..kb+nk: scores, the online softmax step, then acc += P·V.
    fn tileStep(
        it: *const Item,
        comptime R: usize,
        ib: usize,
        kb: usize,
        nk: usize,
        kt: [*]const f32,
        vp: [*]const f32,
        evp: usize,
        acc: [*]f32,
        mx: [*]f32,
        sum: [*]f32,
        alive: [*]f32,
        tile: [*]f32,
    ) void {
        const f = it.f;
        var qr: [R][*]const f32 = undefined;
        inline for (0..R) |r| qr[r] = it.q + (ib + r) * f.q_row;
        const panels = (nk + nr - 1) / nr;
        for (0..panels) |p| scores(R, qr, kt + p * f.e * nr, f.e, tile + p * nr, block_keys);
        const ninf = -std.math.inf(f32);
        const scale: V = @splat(f.scale);
        const nkp = panels * nr;
        inline for (0..R) |r| {
            const i = ib + r;
            const local = i - it.r0;
            const row = tile + r * block_keys;
            const count = if (f.causal) @min(nk, i + 1 - kb) else nk;
            // Scores: scaled and masked; excluded keys (a false Bool element, past `count`) become −∞, whose
            // exponential below is 0 (the shift is finite or 0).
            var any = false;
            var bmv: V = @splat(ninf);
            var j: usize = 0;
            while (j < nkp) : (j += lanes) {
                var x = @as(V, row[j..][0..lanes].*) * scale;
                if (it.mask_f != null or it.mask_b != null or j + lanes > count) {
                    var a: [lanes]f32 = x;
                    inline for (0..lanes) |t| {
                        const jj = j + t;
                        if (jj >= count or !it.allowed(i, kb + jj)) {
                            a[t] = ninf;
                        } else {
                            any = true;
                            a[t] += it.added(i, kb + jj);
                        }
                    }
                    x = a;
                } else any = true;
                row[j..][0..lanes].* = x;
                bmv = @max(bmv, @select(f32, x == x, x, @as(V, @splat(ninf))));
            }
            if (any) alive[local] = 1;
            const bm = @reduce(.Max, bmv);
            const m = mx[local];
            const next = if (bm > m) bm else m;
            const factor: f32 = if (next == ninf) 1 else if (m == ninf) 0 else @floatCast(math.exp(m - next));
            const shift: V = @splat(if (next == ninf) 0 else next);
            mx[local] = next;
            var lv: V = @splat(0);
            j = 0;
            while (j < nkp) : (j += lanes) {
                const p = math.expFast(lanes, @as(V, row[j..][0..lanes].*) - shift);
                row[j..][0..lanes].* = p;
                lv += p;
            }
            sum[local] = sum[local] * factor + @reduce(.Add, lv);
            if (factor != 1) {
                const a = acc + local * evp;
                const fv: V = @splat(factor);
                var c: usize = 0;
                while (c < evp) : (c += lanes) a[c..][0..lanes].* = @as(V, a[c..][0..lanes].*) * fv;
            }
        }
        var c: usize = 0;
        const vecs = evp / lanes;
        while (c < vecs) : (c += pv_vecs) {
            switch (@min(pv_vecs, vecs - c)) {
                inline 1...pv_vecs => |C| pv(R, C, tile, nk, vp + c * lanes, evp, acc + (ib - it.r0) * evp + c * lanes, evp),
                else => unreachable,
            }
        }
    }
};

/// out[r][0..nr] = Σ_e q_r[e] · panel[e][0..nr] for R rows (f32 FMAs).
inline fn scores(comptime R: usize, qr: [R][*]const f32, panel: [*]const f32, e: usize, out: [*]f32, out_row: usize) void {
    const nv = nr / lanes;
    var a: [R][nv]V = undefined;
    inline for (0..R) |r| inline for (0..nv) |t| {
        a[r][t] = @splat(0);
    };
    for (0..e) |c| {
        var b: [nv]V = undefined;
        inline for (0..nv) |t| b[t] = panel[c * nr + t * lanes ..][0..lanes].*;
        inline for (0..R) |r| {
            const x: V = @splat(qr[r][c]);
            inline for (0..nv) |t| a[r][t] = fma(x, b[t], a[r][t]);
        }
    }
    inline for (0..R) |r| inline for (0..nv) |t| {
        out[r * out_row + t * lanes ..][0..lanes].* = a[r][t];
    };
}

/// acc[r][0..C vectors] += Σ_j p[r][j] · vp[j][0..C vectors] for R rows, keys j < nk.
inline fn pv(comptime R: usize, comptime C: usize, p: [*]const f32, nk: usize, vp: [*]const f32, v_row: usize, acc: [*]f32, acc_row: usize) void {
    var a: [R][C]V = undefined;
    inline for (0..R) |r| inline for (0..C) |t| {
        a[r][t] = acc[r * acc_row + t * lanes ..][0..lanes].*;
    };
    for (0..nk) |j| {
        var b: [C]V = undefined;
        inline for (0..C) |t| b[t] = vp[j * v_row + t * lanes ..][0..lanes].*;
        inline for (0..R) |r| {
            const x: V = @splat(p[r * block_keys + j]);
            inline for (0..C) |t| a[r][t] = fma(x, b[t], a[r][t]);
        }
    }
    inline for (0..R) |r| inline for (0..C) |t| {
        acc[r * acc_row + t * lanes ..][0..lanes].* = a[r][t];
    };
}

fn forwardF32(
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    out: [*]f32,
    lse: [*]f32,
    q: [*]const f32,
    k: [*]const f32,
    v: [*]const f32,
    mask: ?[*]const u8,
    work: [*]f32,
) callconv(.c) void {
    const rank = u(args.rank);
    std.debug.assert(rank + 2 <= abi.max_rank);
    const flags = args.ints[4];
    var f: Forward = .{
        .rank = rank,
        .batch = undefined,
        .strides = undefined,
        .base = undefined,
        .l = u(args.ints[0]),
        .s = u(args.ints[1]),
        .e = u(args.ints[2]),
        .ev = u(args.ints[3]),
        .q_row = u(args.operands[0].strides[rank]),
        .k_row = u(args.operands[1].strides[rank]),
        .v_row = u(args.operands[2].strides[rank]),
        .m_row = args.operands[3].strides[rank],
        .m_col = args.operands[3].strides[rank + 1],
        .causal = flags & 1 != 0,
        .bool_mask = flags & 2 != 0,
        .f32_mask = flags & 4 != 0,
        .scale = @floatCast(args.floats[0]),
        .exact = args.mode == 1,
        .rows = u(args.ints[9]),
        .items = 0,
        .tasks = u(args.ints[8]),
        .out = out + u(args.ints[5]),
        .lse = lse + u(args.ints[6]),
        .q = q,
        .k = k,
        .v = v,
        .mask = mask,
        .work = work + u(args.ints[7]),
        .work_floats = 0,
    };
    var count: usize = 1;
    for (0..rank) |d| {
        f.batch[d] = u(args.shape[d]);
        count *= f.batch[d];
        inline for (0..4) |t| f.strides[t][d] = args.operands[t].strides[d];
    }
    inline for (0..4) |t| f.base[t] = args.operands[t].offset;
    std.debug.assert(f.l > 0 and f.s > 0 and f.e > 0 and f.ev > 0 and f.rows > 0 and f.tasks > 0);
    f.work_floats = workFloats(f.e, f.ev, f.rows);
    f.items = count * ((f.l + f.rows - 1) / f.rows);
    if (f.items == 0) return;
    std.debug.assert(f.tasks <= f.items);
    const threads = u(@max(args.threads, 1));
    rt.parallelFor(@ptrCast(&f), @intCast(f.tasks), @intCast(@min(threads, f.tasks)), Forward.run);
}

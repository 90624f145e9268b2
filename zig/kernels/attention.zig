//! Scaled dot-product attention in one call each way (the backward is documented below it), flash-attention style (the TypeScript reference,
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
//! 16 columns, a micro-kernel forms 6 rows × `nr` scores with f32 FMAs over E (stored times scale·log2 e,
//! each row's maximum raised on the way), the softmax step runs in f32 vectors with `math.expDiffFast` (e^(s − m)
//! as a polynomial 2^x of (s − m)·log2 e), and a second micro-kernel scales the rows' f32 accumulators by their factors and adds P·V.
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
const has_fma = switch (builtin.cpu.arch) {
    .x86_64 => std.Target.x86.featureSetHas(builtin.cpu.features, .fma),
    .aarch64 => true,
    else => false,
};
/// 32 vector registers (AVX-512, whatever width the vectors are compiled to): micro-tiles of 24 accumulators.
const many_registers = switch (builtin.cpu.arch) {
    .x86_64 => std.Target.x86.featureSetHas(builtin.cpu.features, .avx512f),
    .aarch64 => true,
    else => false,
};
/// Keys per packed Kᵀ panel (divides `block_keys`).
const nr = if (many_registers) 4 * lanes else 2 * lanes;
/// Vectors of output columns per P·V micro-tile.
const pv_vecs = if (many_registers) 4 else 2;

inline fn mulAdd(comptime W: type, a: W, b: W, c: W) W {
    return if (has_fma) @mulAdd(W, a, b, c) else a * b + c;
}

pub const ForwardFn = *const @TypeOf(forwardF32);

/// This family's entries in the kernel table.
pub const Table = extern struct {
    attention_f32: ForwardFn,
    attention_backward_f32: BackwardFn,
};

pub const table_entries: Table = .{ .attention_f32 = forwardF32, .attention_backward_f32 = backwardF32 };

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

    /// The geometry, options and operands the argument block describes (work items: batch entries × row chunks).
    fn init(args: *const abi.ArgBlock, out: [*]f32, lse: [*]f32, q: [*]const f32, k: [*]const f32, v: [*]const f32, mask: ?[*]const u8, work: [*]f32) Forward {
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
        f.items = count * ((f.l + f.rows - 1) / f.rows);
        return f;
    }

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

    /// R query rows from ib against keys kb..kb+nk: scores, the online softmax step, then acc += P·V, with
    /// p = 2^((s − m)·log2 e) (the difference formed first, so its rounding stays relative to it).
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
        @setEvalBranchQuota(20000);
        const f = it.f;
        var qr: [R][*]const f32 = undefined;
        inline for (0..R) |r| qr[r] = it.q + (ib + r) * f.q_row;
        const panels = (nk + nr - 1) / nr;
        const nkp = panels * nr;
        const ninf = -std.math.inf(f32);
        const scale: V = @splat(f.scale);
        // Each row's maximum, raised as the score micro-tiles are stored (only a greater score raises it).
        var bmv: [R]V = @splat(@splat(ninf));
        for (0..panels) |p| {
            const a = scores(R, qr, kt + p * f.e * nr, f.e);
            inline for (0..R) |r| inline for (0..nr / lanes) |t| {
                const y = a[r][t] * scale;
                tile[r * block_keys + p * nr + t * lanes ..][0..lanes].* = y;
                bmv[r] = @select(f32, y > bmv[r], y, bmv[r]);
            };
        }
        // Every row sees every key of the tile unless a mask, padding past nk or the causal edge excludes some.
        const full = it.mask_f == null and it.mask_b == null and nk == nkp and (!f.causal or ib + 1 >= kb + nk);
        if (full) {
            inline for (0..R) |r| alive[ib + r - it.r0] = 1;
        } else {
            inline for (0..R) |r| {
                const i = ib + r;
                const row = tile + r * block_keys;
                const count = if (f.causal) @min(nk, i + 1 - kb) else nk;
                // Excluded keys (a false Bool element, past `count`) become −∞, whose power below is 0 (the shift is
                // finite or 0); an f32 mask element is added.
                var any = false;
                bmv[r] = @splat(ninf);
                var j: usize = 0;
                while (j < nkp) : (j += lanes) {
                    var x: V = row[j..][0..lanes].*;
                    if (it.mask_f == null and it.mask_b == null) {
                        // Only the count limits the row: the keys past it by one comparison.
                        x = @select(f32, before(j, count), x, @as(V, @splat(ninf)));
                        any = any or j < count;
                    } else {
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
                    }
                    row[j..][0..lanes].* = x;
                    bmv[r] = @select(f32, x > bmv[r], x, bmv[r]);
                }
                if (any) alive[i - it.r0] = 1;
            }
        }
        // The new maxima, and the factors of the old sums and accumulators (1 while −∞, 0 for the first finite
        // maximum), all rows at once.
        const W = @Vector(R, f32);
        var old: W = undefined;
        var next: W = undefined;
        inline for (0..R) |r| {
            const m = mx[ib + r - it.r0];
            const bm = @reduce(.Max, bmv[r]);
            old[r] = m;
            next[r] = if (bm > m) bm else m;
        }
        const none = next == @as(W, @splat(ninf));
        const factor = math.exp2Fast(R, @select(f32, none, @as(W, @splat(0)), (old - next) * @as(W, @splat(log2e))));
        const shifts = @select(f32, none, @as(W, @splat(0)), next);
        const factors: [R]f32 = factor;
        inline for (0..R) |r| {
            const local = ib + r - it.r0;
            mx[local] = next[r];
            const row = tile + r * block_keys;
            const shift: V = @splat(shifts[r]);
            var lv: V = @splat(0);
            var j: usize = 0;
            while (j < nkp) : (j += lanes) {
                const p = math.expDiffFast(lanes, row[j..][0..lanes].*, shift);
                row[j..][0..lanes].* = p;
                lv += p;
            }
            sum[local] = sum[local] * factors[r] + @reduce(.Add, lv);
        }
        var c: usize = 0;
        const vecs = evp / lanes;
        while (c < vecs) : (c += pv_vecs) {
            switch (@min(pv_vecs, vecs - c)) {
                inline 1...pv_vecs => |C| pv(R, C, tile, block_keys, 1, nk, vp + c * lanes, evp, acc + (ib - it.r0) * evp + c * lanes, evp, factors),
                else => unreachable,
            }
        }
    }
};

const log2e: f32 = std.math.log2e;

/// The R × nr score micro-tile Σ_e q_r[e] · panel[e][0..nr] (f32 FMAs), as R rows of nr / lanes vectors.
inline fn scores(comptime R: usize, qr: [R][*]const f32, panel: [*]const f32, e: usize) [R][nr / lanes]V {
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
            inline for (0..nv) |t| a[r][t] = mulAdd(V, x, b[t], a[r][t]);
        }
    }
    return a;
}

/// Which of the lanes j.. are below `count`.
inline fn before(j: usize, count: usize) @Vector(lanes, bool) {
    const index = std.simd.iota(u32, lanes) + @as(@Vector(lanes, u32), @splat(@intCast(j)));
    return index < @as(@Vector(lanes, u32), @splat(@intCast(count)));
}

/// A score micro-tile into rows of `block_keys`.
inline fn store(comptime R: usize, a: [R][nr / lanes]V, out: [*]f32) void {
    inline for (0..R) |r| inline for (0..nr / lanes) |t| {
        out[r * block_keys + t * lanes ..][0..lanes].* = a[r][t];
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
    var f = Forward.init(args, out, lse, q, k, v, mask, work);
    f.work_floats = workFloats(f.e, f.ev, f.rows);
    if (f.items == 0) return;
    std.debug.assert(f.tasks <= f.items);
    const threads = u(@max(args.threads, 1));
    rt.parallelFor(@ptrCast(&f), @intCast(f.tasks), @intCast(@min(threads, f.tasks)), Forward.run);
}

// --- backward ---
//
// From the saved out O, each row's log-sum-exp λ and the output gradient G, with P_ij = exp(s_ij − λ_i) over
// the keys row i sees and D_i = Σ_c G_ic O_ic: dv_j = Σ_i P_ij G_i, dS_ij = P_ij (G_i·v_j − D_i),
// dq_i = scale Σ_j dS_ij k_j, dk_j = scale Σ_i dS_ij q_i. One task per batch entry (it owns that entry's
// dq, dk and dv; the tasks split the batch entries among the threads).
//
// Exact mode, per batch entry, rows i ascending and their visible keys j ascending: s_ij as forward, p =
// math.exp(s_ij − λ_i), dp = G_i·v_j in f64 ascending, t = p·(dp − D_i)·scale (D_i in f64 ascending), then
// dq_ic += t·k_jc, dk_jc += t·q_ic, dv_jc += p·G_ic in f64 (products, then sums), each rounded once at the
// end: the same bits on every ISA and thread count, and the reference's.
//
// Fast mode: per key block, Kᵀ and Vᵀ panels and K rows padded; per block of `bwd_rows` query rows the
// score and G·Vᵀ micro-tiles, P (by `math.expDiffFast`) and dS in f32 vectors, then dv += Pᵀ·G, dk += dSᵀ·Q and dq += dS·K by the
// P·V micro-kernel over padded copies of Q and G.
//
// Argument block: as forward, plus ints[5..8] = element offsets of out (O), lse and work; ints[8] = tasks;
// ints[10..14] = element offsets of G, dq, dk, dv (each contiguous, of the batch's full extent).

/// Query rows per block of the fast backward (a multiple of `mr`).
const bwd_rows = 48;

pub const BackwardFn = *const @TypeOf(backwardF32);

/// The f32 elements of one backward task's workspace (as `attentionBackwardWorkspace` in
/// src/kernels/attention.ts): exact mode's f64 accumulators or fast mode's packed copies, whichever is larger.
pub fn backwardFloats(l: usize, s: usize, e: usize, ev: usize) usize {
    const ep = ceilTo(e, pad);
    const evp = ceilTo(ev, pad);
    const exact = 2 * (e + s * e + s * ev + l);
    const fast = l * ep * 2 + l * evp + l + block_keys * (e + ev) + block_keys * ep * 2 + block_keys * evp + 2 * bwd_rows * block_keys;
    return ceilTo(@max(exact, fast), 16);
}

const Backward = struct {
    fwd: Forward,
    o: [*]const f32,
    g: [*]const f32,
    dq: [*]f32,
    dk: [*]f32,
    dv: [*]f32,
    count: usize,

    fn run(context: *anyopaque, task: u32) callconv(.c) void {
        const bw: *const Backward = @ptrCast(@alignCast(context));
        const f = &bw.fwd;
        const begin = bw.count * task / f.tasks;
        const end = bw.count * (task + 1) / f.tasks;
        const ws = f.work + task * f.work_floats;
        for (begin..end) |b| {
            const it = Item.init(f, b, 0, f.l);
            const entry: Entry = .{
                .it = it,
                .o = bw.o + b * f.l * f.ev,
                .g = bw.g + b * f.l * f.ev,
                .dq = bw.dq + b * f.l * f.e,
                .dk = bw.dk + b * f.s * f.e,
                .dv = bw.dv + b * f.s * f.ev,
            };
            if (f.exact) entry.exact(ws) else entry.fast(ws);
        }
    }
};

/// One batch entry's backward.
const Entry = struct {
    it: Item,
    o: [*]const f32,
    g: [*]const f32,
    dq: [*]f32,
    dk: [*]f32,
    dv: [*]f32,

    fn exact(en: *const Entry, ws: [*]f32) void {
        const it = &en.it;
        const f = it.f;
        const w: [*]f64 = @ptrCast(@alignCast(ws));
        const dq = w;
        const dk = dq + f.e;
        const dv = dk + f.s * f.e;
        const dd = dv + f.s * f.ev;
        @memset(dk[0 .. f.s * (f.e + f.ev)], 0);
        for (0..f.l) |i| {
            var d: f64 = 0;
            for (0..f.ev) |c| d += @as(f64, en.g[i * f.ev + c]) * @as(f64, en.o[i * f.ev + c]);
            dd[i] = d;
        }
        const scale: f64 = f.scale;
        for (0..f.l) |i| {
            const qi = it.q + i * f.q_row;
            const gi = en.g + i * f.ev;
            const lam: f64 = it.lse[i];
            @memset(dq[0..f.e], 0);
            for (0..it.keyEnd(i)) |j| {
                if (!it.allowed(i, j)) continue;
                const kj = it.k + j * f.k_row;
                const vj = it.v + j * f.v_row;
                var dot: f64 = 0;
                for (0..f.e) |c| dot += @as(f64, qi[c]) * @as(f64, kj[c]);
                const x = dot * scale + @as(f64, it.added(i, j));
                const p = math.exp(x - lam);
                var dp: f64 = 0;
                for (0..f.ev) |c| dp += @as(f64, gi[c]) * @as(f64, vj[c]);
                const t = p * (dp - dd[i]) * scale;
                for (0..f.e) |c| {
                    dq[c] = dq[c] + t * @as(f64, kj[c]);
                    dk[j * f.e + c] = dk[j * f.e + c] + t * @as(f64, qi[c]);
                }
                for (0..f.ev) |c| dv[j * f.ev + c] = dv[j * f.ev + c] + p * @as(f64, gi[c]);
            }
            for (0..f.e) |c| en.dq[i * f.e + c] = @floatCast(dq[c]);
        }
        for (0..f.s * f.e) |x| en.dk[x] = @floatCast(dk[x]);
        for (0..f.s * f.ev) |x| en.dv[x] = @floatCast(dv[x]);
    }

    fn fast(en: *const Entry, ws: [*]f32) void {
        const it = &en.it;
        const f = it.f;
        const l = f.l;
        const ep = ceilTo(f.e, pad);
        const evp = ceilTo(f.ev, pad);
        const qp = ws;
        const dqa = qp + l * ep;
        const gp = dqa + l * ep;
        const dd = gp + l * evp;
        const kt = dd + l;
        const vt = kt + block_keys * f.e;
        const kp = vt + block_keys * f.ev;
        const dka = kp + block_keys * ep;
        const dva = dka + block_keys * ep;
        const pt = dva + block_keys * evp;
        const st = pt + bwd_rows * block_keys;
        for (0..l) |i| {
            const row = qp + i * ep;
            @memcpy(row[0..f.e], (it.q + i * f.q_row)[0..f.e]);
            @memset(row[f.e..ep], 0);
            const grow = gp + i * evp;
            @memcpy(grow[0..f.ev], (en.g + i * f.ev)[0..f.ev]);
            @memset(grow[f.ev..evp], 0);
            var dv: V = @splat(0);
            var c: usize = 0;
            const oi = en.o + i * f.ev;
            while (c + lanes <= f.ev) : (c += lanes) dv = mulAdd(V, @as(V, grow[c..][0..lanes].*), @as(V, oi[c..][0..lanes].*), dv);
            var d = @reduce(.Add, dv);
            while (c < f.ev) : (c += 1) d += grow[c] * oi[c];
            dd[i] = d;
        }
        @memset(dqa[0 .. l * ep], 0);
        var kb: usize = 0;
        while (kb < f.s) : (kb += block_keys) {
            const nk = @min(block_keys, f.s - kb);
            // Causal: rows before key kb see nothing of this block.
            const first = if (f.causal) kb else 0;
            if (first >= l) break;
            transposed(kt, it.k + kb * f.k_row, f.k_row, nk, f.e);
            transposed(vt, it.v + kb * f.v_row, f.v_row, nk, f.ev);
            for (0..nk) |t| {
                const row = kp + t * ep;
                @memcpy(row[0..f.e], (it.k + (kb + t) * f.k_row)[0..f.e]);
                @memset(row[f.e..ep], 0);
            }
            @memset(dka[0 .. block_keys * ep], 0);
            @memset(dva[0 .. block_keys * evp], 0);
            var ib = first;
            while (ib < l) : (ib += bwd_rows) {
                const nq = @min(bwd_rows, l - ib);
                en.tiles(ib, nq, kb, nk, kt, vt, qp, gp, dd, pt, st);
                // dv += Pᵀ·G, dk += dSᵀ·Q over this block's rows; dq += dS·K.
                product(pt, 1, block_keys, nk, nq, gp + ib * evp, evp, dva, evp);
                product(st, 1, block_keys, nk, nq, qp + ib * ep, ep, dka, ep);
                product(st, block_keys, 1, nq, nk, kp, ep, dqa + ib * ep, ep);
            }
            for (0..nk) |t| {
                @memcpy((en.dk + (kb + t) * f.e)[0..f.e], (dka + t * ep)[0..f.e]);
                @memcpy((en.dv + (kb + t) * f.ev)[0..f.ev], (dva + t * evp)[0..f.ev]);
            }
        }
        // Keys no row sees (causal, S > L) get no gradient.
        const seen = if (f.causal) @min(f.s, ceilTo(l, block_keys)) else f.s;
        if (seen < f.s) {
            @memset(en.dk[seen * f.e .. f.s * f.e], 0);
            @memset(en.dv[seen * f.ev .. f.s * f.ev], 0);
        }
        for (0..l) |i| @memcpy((en.dq + i * f.e)[0..f.e], (dqa + i * ep)[0..f.e]);
    }

    /// P and dS·scale of query rows ib..ib+nq against keys kb..kb+nk, as [row][key] tiles of `block_keys`.
    fn tiles(
        en: *const Entry,
        ib: usize,
        nq: usize,
        kb: usize,
        nk: usize,
        kt: [*]const f32,
        vt: [*]const f32,
        qp: [*]const f32,
        gp: [*]const f32,
        dd: [*]const f32,
        pt: [*]f32,
        st: [*]f32,
    ) void {
        const it = &en.it;
        const f = it.f;
        const ep = ceilTo(f.e, pad);
        const evp = ceilTo(f.ev, pad);
        const panels = (nk + nr - 1) / nr;
        const nkp = panels * nr;
        const scale: V = @splat(f.scale);
        var r0: usize = 0;
        while (r0 < nq) : (r0 += mr) {
            const n = @min(mr, nq - r0);
            switch (n) {
                inline 1...mr => |R| {
                    var qr: [R][*]const f32 = undefined;
                    var gr: [R][*]const f32 = undefined;
                    inline for (0..R) |r| {
                        qr[r] = qp + (ib + r0 + r) * ep;
                        gr[r] = gp + (ib + r0 + r) * evp;
                    }
                    for (0..panels) |p| {
                        store(R, scores(R, qr, kt + p * f.e * nr, f.e), pt + r0 * block_keys + p * nr);
                        store(R, scores(R, gr, vt + p * f.ev * nr, f.ev), st + r0 * block_keys + p * nr);
                    }
                },
                else => unreachable,
            }
        }
        for (0..nq) |r| {
            const i = ib + r;
            const count = if (f.causal) @min(nk, i + 1 - kb) else nk;
            const lam: V = @splat(it.lse[i]);
            const d: V = @splat(dd[i]);
            const prow = pt + r * block_keys;
            const srow = st + r * block_keys;
            var j: usize = 0;
            while (j < nkp) : (j += lanes) {
                var x = @as(V, prow[j..][0..lanes].*) * scale;
                var keep = before(j, count);
                if (it.mask_f != null or it.mask_b != null) {
                    var a: [lanes]f32 = x;
                    var kk: [lanes]bool = undefined;
                    inline for (0..lanes) |t| {
                        const jj = j + t;
                        kk[t] = jj < count and it.allowed(i, kb + jj);
                        if (kk[t]) a[t] += it.added(i, kb + jj);
                    }
                    x = a;
                    keep = kk;
                }
                const p = @select(f32, keep, math.expDiffFast(lanes, x, lam), @as(V, @splat(0)));
                prow[j..][0..lanes].* = p;
                // Excluded keys get exactly 0 (D may be NaN where the row's output is).
                srow[j..][0..lanes].* = @select(f32, keep, p * (@as(V, srow[j..][0..lanes].*) - d) * scale, @as(V, @splat(0)));
            }
        }
    }
};

/// Kᵀ panels of `n` rows (stride `row`) of width `w`: panel p holds rows p·nr.. as w rows of nr, zeros past n.
fn transposed(out: [*]f32, src: [*]const f32, row: usize, n: usize, w: usize) void {
    const panels = (n + nr - 1) / nr;
    for (0..panels) |p| {
        const panel = out + p * w * nr;
        for (0..nr) |t| {
            const j = p * nr + t;
            if (j < n) {
                const s = src + j * row;
                for (0..w) |c| panel[c * nr + t] = s[c];
            } else {
                for (0..w) |c| panel[c * nr + t] = 0;
            }
        }
    }
}

/// acc[a][·] += Σ_j A(a, j)·b[j][·] for rows a < rows and j < depth, A(a, j) = x[a·sa + j·sj], b rows of
/// `width` (a multiple of `pad`, padded with zeros), by the P·V micro-kernel.
fn product(x: [*]const f32, sa: usize, sj: usize, rows: usize, depth: usize, b: [*]const f32, width: usize, acc: [*]f32, acc_row: usize) void {
    @setEvalBranchQuota(20000);
    const vecs = width / lanes;
    var a0: usize = 0;
    while (a0 < rows) : (a0 += mr) {
        const n = @min(mr, rows - a0);
        var c: usize = 0;
        while (c < vecs) : (c += pv_vecs) {
            switch (n) {
                inline 1...mr => |R| switch (@min(pv_vecs, vecs - c)) {
                    inline 1...pv_vecs => |C| pv(R, C, x + a0 * sa, sa, sj, depth, b + c * lanes, width, acc + a0 * acc_row + c * lanes, acc_row, null),
                    else => unreachable,
                },
                else => unreachable,
            }
        }
    }
}

/// acc[r][0..C vectors] = acc[r]·factor[r] (when given) + Σ_j x[r·sa + j·sj] · b[j][0..C vectors] for R rows
/// and j < depth: the P·V micro-kernel of the forward pass (which rescales by the online softmax's factors)
/// and of the backward products.
inline fn pv(comptime R: usize, comptime C: usize, x: [*]const f32, sa: usize, sj: usize, depth: usize, b: [*]const f32, b_row: usize, acc: [*]f32, acc_row: usize, factor: ?[R]f32) void {
    var a: [R][C]V = undefined;
    inline for (0..R) |r| inline for (0..C) |t| {
        a[r][t] = acc[r * acc_row + t * lanes ..][0..lanes].*;
        if (factor) |f| a[r][t] *= @as(V, @splat(f[r]));
    };
    for (0..depth) |j| {
        var bv: [C]V = undefined;
        inline for (0..C) |t| bv[t] = b[j * b_row + t * lanes ..][0..lanes].*;
        inline for (0..R) |r| {
            const s: V = @splat(x[r * sa + j * sj]);
            inline for (0..C) |t| a[r][t] = mulAdd(V, s, bv[t], a[r][t]);
        }
    }
    inline for (0..R) |r| inline for (0..C) |t| {
        acc[r * acc_row + t * lanes ..][0..lanes].* = a[r][t];
    };
}

fn backwardF32(
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    o: [*]const f32,
    lse: [*]const f32,
    q: [*]const f32,
    k: [*]const f32,
    v: [*]const f32,
    mask: ?[*]const u8,
    g: [*]const f32,
    dq: [*]f32,
    dk: [*]f32,
    dv: [*]f32,
    work: [*]f32,
) callconv(.c) void {
    var bw: Backward = .{
        .fwd = Forward.init(args, @constCast(lse), @constCast(lse), q, k, v, mask, work),
        .o = o + u(args.ints[5]),
        .g = g + u(args.ints[10]),
        .dq = dq + u(args.ints[11]),
        .dk = dk + u(args.ints[12]),
        .dv = dv + u(args.ints[13]),
        .count = 0,
    };
    const f = &bw.fwd;
    bw.count = f.items;
    f.work_floats = backwardFloats(f.l, f.s, f.e, f.ev);
    if (bw.count == 0) return;
    std.debug.assert(f.tasks <= bw.count);
    const threads = u(@max(args.threads, 1));
    rt.parallelFor(@ptrCast(&bw), @intCast(f.tasks), @intCast(@min(threads, f.tasks)), Backward.run);
}

// --- tests ---

const testing = std.testing;

test "two keys of equal score average their values, causal row 0 sees key 0 only, lse is log of the key count; backward of g = 1" {
    for ([_]i32{ 0, 1 }) |mode| {
        var args = std.mem.zeroes(abi.ArgBlock);
        args.mode = mode;
        args.threads = 1;
        args.rank = 0;
        args.ints[0..5].* = .{ 2, 2, 1, 1, 1 };
        args.ints[8] = 1;
        args.ints[9] = 2;
        inline for (0..3) |t| args.operands[t].strides[0] = 1;
        args.floats[0] = 1;
        const q = [_]f32{ 0, 0 };
        const k = [_]f32{ 1, 2 };
        const v = [_]f32{ 4, 8 };
        var out = [_]f32{ 9, 9 };
        var lse = [_]f32{ 9, 9 };
        var work: [16384]f32 align(64) = undefined;
        forwardF32(&ew.test_runtime, &args, &out, &lse, &q, &k, &v, null, &work);
        try testing.expectEqualSlices(f32, &.{ 4, 6 }, &out);
        try testing.expectEqual(@as(f32, 0), lse[0]);
        try testing.expectApproxEqAbs(@as(f32, std.math.ln2), lse[1], 1e-6);
        // g = 1 on both rows: dv = the column sums of P (key 0: 1 + 1/2, key 1: 1/2); dS = P·(v − out) is
        // nonzero on row 1 only, and q·k = 0 there, so dq = Σ dS·k and dk = Σ dS·q = 0.
        const g = [_]f32{ 1, 1 };
        var dq = [_]f32{ 9, 9 };
        var dk = [_]f32{ 9, 9 };
        var dv = [_]f32{ 9, 9 };
        backwardF32(&ew.test_runtime, &args, &out, &lse, &q, &k, &v, null, &g, &dq, &dk, &dv, &work);
        try testing.expectApproxEqAbs(@as(f32, 1.5), dv[0], 1e-6);
        try testing.expectApproxEqAbs(@as(f32, 0.5), dv[1], 1e-6);
        try testing.expectEqualSlices(f32, &.{ 0, 0 }, &dk);
        try testing.expectEqual(@as(f32, 0), dq[0]);
        // Row 1: dS = ½·(4 − 6), ½·(8 − 6) = −1, 1 (P = exp(−lse) within an f32 rounding of ½), so
        // dq = −1·1 + 1·2 = 1.
        try testing.expectApproxEqAbs(@as(f32, 1), dq[1], 1e-6);
    }
}

//! The point-wise part of one step of an LSTM or GRU layer, forward and backward, over the N rows of a batch
//! (the matrix products of a step run in the GEMM kernel; `src/ops/sequence.ts` drives the time loop). The
//! arithmetic is the element-wise composition's, operation for operation: f32 additions and products, and
//! sigmoid/tanh that are, in exact mode, the f64 functions of math.zig rounded once (as `unary.zig` computes
//! them), so an exact forward step is the same bits as the composition of element-wise kernels, on every ISA
//! and thread count; in fast mode they are math.zig's f32 approximations (`fast_bounds.sigmoid`/`.tanh`).
//! The TypeScript reference (`src/kernels/rnn.ts`) spells out the same formulas.
//!
//! Argument block: op = 0 LSTM forward, 1 LSTM backward, 2 GRU forward, 3 GRU backward; ints[0] = N,
//! ints[1] = H, ints[2] = flags (bit 0: a hidden bias is given, bit 1: save the activations, bit 2: an input
//! bias is given, added to pre as the composition's linear layer adds it), ints[3..6] =
//! the row strides A, B, C (in elements) of the strided operands, ints[6..14] = the element offsets of the
//! eight operands. Every other operand has contiguous rows (4H, 3H or H wide). Operands by op (G = 4 for the
//! LSTM, 3 for the GRU):
//! - LSTM forward: 0 pre [N, 4H] (rows A apart: the input projection of the step), 1 hh [N, 4H] (the step's
//!   h·W_hhᵀ), 2 b_hh [4H], 3 c_prev [N, H], 4 h [N, H] (rows B apart), 5 c [N, H], 6 saved [N, 4H]: the
//!   activated gates i, f, g, o, 7 b_ih [4H].
//! - LSTM backward: 0 saved [N, 4H], 1 c [N, H], 2 c_prev [N, H], 3 dh from the next step [N, H], 4 the
//!   output gradient of the step [N, H] (rows A apart), 5 the cell gradient of the step [N, H], 6 dc [N, H]
//!   (read: from the next step; written: to the previous one), 7 the gate gradients [N, 4H] (rows B apart).
//! - GRU forward: 0 pre [N, 3H] (rows A), 1 hh [N, 3H], 2 b_hh [3H], 3 h_prev [N, H] (rows C), 4 h [N, H]
//!   (rows B), 5 saved [N, 4H]: r, z, n and the hidden part of n's pre-activation (W_hn·h + b_hn), 6 b_ih [3H].
//! - GRU backward: 0 saved [N, 4H], 1 h_prev [N, H] (rows C), 2 dh through W_hh from the next step [N, H],
//!   3 dh along the z path [N, H] (read, then written for the previous step), 4 the output gradient [N, H]
//!   (rows A), 5 the input-side gate gradients [N, 3H] (rows B), 6 the hidden-side ones [N, 3H] (rows B).
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const math = @import("math.zig");
const gemm = @import("gemm.zig");
/// The full vector width of the variant (zmm on AVX-512, where `elementwise.zig`'s suggested width is a
/// ymm): the gates' sigmoid and tanh are most of a step's point-wise time.
const lanes = gemm.vector_bytes / @sizeOf(f32);

/// One step of a recurrent cell; see the file comment for the argument block and the operands.
pub const CellFn = *const fn (rt: *const table.Runtime, args: *const abi.ArgBlock, operands: *const [8][*]f32) callconv(.c) void;

/// The time loop of one layer, forward or backward (`loopF32`). Returns an `abi.Status`.
pub const LoopFn = *const fn (rt: *const table.Runtime, args: *const abi.ArgBlock, operands: *const [9][*]f32) callconv(.c) i32;

/// This family's entries in the kernel table.
pub const Table = extern struct {
    cell_f32: CellFn,
    loop_f32: LoopFn,
};

pub const table_entries: Table = .{ .cell_f32 = cellF32, .loop_f32 = loopF32 };

fn F32(comptime n: usize) type {
    return @Vector(n, f32);
}

inline fn load(comptime n: usize, p: [*]const f32) F32(n) {
    return p[0..n].*;
}

inline fn store(comptime n: usize, p: [*]f32, v: F32(n)) void {
    p[0..n].* = v;
}

inline fn one(comptime n: usize) F32(n) {
    return @splat(1);
}

inline fn sigmoid(comptime n: usize, comptime exact: bool, x: F32(n)) F32(n) {
    if (exact) return @floatCast(math.sigmoidV(n, @floatCast(x)));
    return math.sigmoidFast(n, x);
}

inline fn tanh(comptime n: usize, comptime exact: bool, x: F32(n)) F32(n) {
    if (exact) return @floatCast(math.tanhV(n, @floatCast(x)));
    return math.tanhFast(n, x);
}

/// Asks for the `len` values from `p` ahead of use: the next row's input projection, which the forward pass
/// reads one gate's run at a time, too short for the hardware prefetcher to catch up with. On one thread the
/// step's own projection product wrote it just before; on more, the projection of every step at once wrote
/// it long before, megabytes away (`src/ops/sequence.ts`).
fn prefetchRow(p: [*]const f32, len: usize) void {
    var i: usize = 0;
    while (i < len) : (i += 64 / @sizeOf(f32)) @prefetch(p + i, .{});
}

/// The problem of one call, the operands' row starts resolved per row by `row`.
const Cell = struct {
    op: i32,
    batch: usize,
    hidden: usize,
    bias: bool,
    save: bool,
    input_bias: bool,
    strides: [3]usize,
    p: [8][*]f32,

    /// Operand k's row r, with `stride` between rows.
    fn rowOf(c: *const Cell, k: usize, r: usize, stride: usize) [*]f32 {
        return c.p[k] + r * stride;
    }

    fn rowLstmForward(c: *const Cell, comptime exact: bool, r: usize) void {
        const h = c.hidden;
        const rows = .{ c.rowOf(0, r, c.strides[0]), c.rowOf(1, r, 4 * h), c.p[2], c.rowOf(3, r, h), c.rowOf(4, r, c.strides[1]), c.rowOf(5, r, h), c.rowOf(6, r, 4 * h), c.p[7] };
        if (r + 1 < c.batch) prefetchRow(c.rowOf(0, r + 1, c.strides[0]), 4 * h);
        var j: usize = 0;
        while (j + lanes <= h) : (j += lanes) c.lstmForward(lanes, exact, rows, j);
        while (j < h) : (j += 1) c.lstmForward(1, exact, rows, j);
    }

    /// The input side of gate k: the step's projection plus b_ih when given.
    inline fn input(c: *const Cell, comptime n: usize, pre: [*]f32, b_ih: [*]f32, k: usize, j: usize) F32(n) {
        const at = k * c.hidden + j;
        return if (c.input_bias) load(n, pre + at) + load(n, b_ih + at) else load(n, pre + at);
    }

    /// The hidden side of gate k: h·W_hhᵀ plus b_hh when given.
    inline fn recurrent(c: *const Cell, comptime n: usize, hh: [*]f32, b: [*]f32, k: usize, j: usize) F32(n) {
        const at = k * c.hidden + j;
        return if (c.bias) load(n, hh + at) + load(n, b + at) else load(n, hh + at);
    }

    inline fn gate(c: *const Cell, comptime n: usize, pre: [*]f32, b_ih: [*]f32, hh: [*]f32, b: [*]f32, k: usize, j: usize) F32(n) {
        return c.input(n, pre, b_ih, k, j) + c.recurrent(n, hh, b, k, j);
    }

    inline fn lstmForward(c: *const Cell, comptime n: usize, comptime exact: bool, rows: anytype, j: usize) void {
        const h = c.hidden;
        const bias_ih = 7;
        const i = sigmoid(n, exact, c.gate(n, rows[0], rows[bias_ih], rows[1], rows[2], 0, j));
        const f = sigmoid(n, exact, c.gate(n, rows[0], rows[bias_ih], rows[1], rows[2], 1, j));
        const g = tanh(n, exact, c.gate(n, rows[0], rows[bias_ih], rows[1], rows[2], 2, j));
        const o = sigmoid(n, exact, c.gate(n, rows[0], rows[bias_ih], rows[1], rows[2], 3, j));
        const cell = f * load(n, rows[3] + j) + i * g;
        store(n, rows[5] + j, cell);
        store(n, rows[4] + j, o * tanh(n, exact, cell));
        if (c.save) {
            store(n, rows[6] + j, i);
            store(n, rows[6] + h + j, f);
            store(n, rows[6] + 2 * h + j, g);
            store(n, rows[6] + 3 * h + j, o);
        }
    }

    fn rowLstmBackward(c: *const Cell, comptime exact: bool, r: usize) void {
        const h = c.hidden;
        const rows = .{ c.rowOf(0, r, 4 * h), c.rowOf(1, r, h), c.rowOf(2, r, h), c.rowOf(3, r, h), c.rowOf(4, r, c.strides[0]), c.rowOf(5, r, h), c.rowOf(6, r, h), c.rowOf(7, r, c.strides[1]) };
        var j: usize = 0;
        while (j + lanes <= h) : (j += lanes) c.lstmBackward(lanes, exact, rows, j);
        while (j < h) : (j += 1) c.lstmBackward(1, exact, rows, j);
    }

    inline fn lstmBackward(c: *const Cell, comptime n: usize, comptime exact: bool, rows: anytype, j: usize) void {
        const h = c.hidden;
        const s = rows[0];
        const i = load(n, s + j);
        const f = load(n, s + h + j);
        const g = load(n, s + 2 * h + j);
        const o = load(n, s + 3 * h + j);
        const tc = tanh(n, exact, load(n, rows[1] + j));
        const dh = load(n, rows[3] + j) + load(n, rows[4] + j);
        const dc = (load(n, rows[6] + j) + load(n, rows[5] + j)) + (dh * o) * (one(n) - tc * tc);
        const d = rows[7];
        store(n, d + j, ((dc * g) * i) * (one(n) - i));
        store(n, d + h + j, ((dc * load(n, rows[2] + j)) * f) * (one(n) - f));
        store(n, d + 2 * h + j, (dc * i) * (one(n) - g * g));
        store(n, d + 3 * h + j, ((dh * tc) * o) * (one(n) - o));
        store(n, rows[6] + j, dc * f);
    }

    fn rowGruForward(c: *const Cell, comptime exact: bool, r: usize) void {
        const h = c.hidden;
        const rows = .{ c.rowOf(0, r, c.strides[0]), c.rowOf(1, r, 3 * h), c.p[2], c.rowOf(3, r, c.strides[2]), c.rowOf(4, r, c.strides[1]), c.rowOf(5, r, 4 * h), c.p[6] };
        if (r + 1 < c.batch) prefetchRow(c.rowOf(0, r + 1, c.strides[0]), 3 * h);
        var j: usize = 0;
        while (j + lanes <= h) : (j += lanes) c.gruForward(lanes, exact, rows, j);
        while (j < h) : (j += 1) c.gruForward(1, exact, rows, j);
    }

    inline fn gruForward(c: *const Cell, comptime n: usize, comptime exact: bool, rows: anytype, j: usize) void {
        const h = c.hidden;
        const bias_ih = 6;
        const r = sigmoid(n, exact, c.gate(n, rows[0], rows[bias_ih], rows[1], rows[2], 0, j));
        const z = sigmoid(n, exact, c.gate(n, rows[0], rows[bias_ih], rows[1], rows[2], 1, j));
        const hn = c.recurrent(n, rows[1], rows[2], 2, j);
        const cand = tanh(n, exact, c.input(n, rows[0], rows[bias_ih], 2, j) + r * hn);
        store(n, rows[4] + j, cand + z * (load(n, rows[3] + j) - cand));
        if (c.save) {
            store(n, rows[5] + j, r);
            store(n, rows[5] + h + j, z);
            store(n, rows[5] + 2 * h + j, cand);
            store(n, rows[5] + 3 * h + j, hn);
        }
    }

    fn rowGruBackward(c: *const Cell, r: usize) void {
        const h = c.hidden;
        const rows = .{ c.rowOf(0, r, 4 * h), c.rowOf(1, r, c.strides[2]), c.rowOf(2, r, h), c.rowOf(3, r, h), c.rowOf(4, r, c.strides[0]), c.rowOf(5, r, c.strides[1]), c.rowOf(6, r, c.strides[1]) };
        var j: usize = 0;
        while (j + lanes <= h) : (j += lanes) c.gruBackward(lanes, rows, j);
        while (j < h) : (j += 1) c.gruBackward(1, rows, j);
    }

    inline fn gruBackward(c: *const Cell, comptime n: usize, rows: anytype, j: usize) void {
        const h = c.hidden;
        const s = rows[0];
        const r = load(n, s + j);
        const z = load(n, s + h + j);
        const cand = load(n, s + 2 * h + j);
        const hn = load(n, s + 3 * h + j);
        const dh = (load(n, rows[2] + j) + load(n, rows[3] + j)) + load(n, rows[4] + j);
        const dn = (dh * (one(n) - z)) * (one(n) - cand * cand);
        const dz = ((dh * (load(n, rows[1] + j) - cand)) * z) * (one(n) - z);
        const dr = ((dn * hn) * r) * (one(n) - r);
        inline for (.{ rows[5], rows[6] }, 0..) |d, side| {
            store(n, d + j, dr);
            store(n, d + h + j, dz);
            store(n, d + 2 * h + j, if (side == 0) dn else dn * r);
        }
        store(n, rows[3] + j, dh * z);
    }

    fn row(c: *const Cell, comptime exact: bool, r: usize) void {
        switch (c.op) {
            0 => c.rowLstmForward(exact, r),
            1 => c.rowLstmBackward(exact, r),
            2 => c.rowGruForward(exact, r),
            else => c.rowGruBackward(r),
        }
    }
};

fn cellF32(rt: *const table.Runtime, args: *const abi.ArgBlock, operands: *const [8][*]f32) callconv(.c) void {
    for (args.ints[0..14]) |v| std.debug.assert(v >= 0);
    std.debug.assert(args.op >= 0 and args.op <= 3);
    var c: Cell = .{
        .op = args.op,
        .batch = u(args.ints[0]),
        .hidden = u(args.ints[1]),
        .bias = args.ints[2] & 1 != 0,
        .save = args.ints[2] & 2 != 0,
        .input_bias = args.ints[2] & 4 != 0,
        .strides = .{ u(args.ints[3]), u(args.ints[4]), u(args.ints[5]) },
        .p = undefined,
    };
    for (0..8) |k| c.p[k] = operands[k] + u(args.ints[6 + k]);
    const Job = struct {
        fn exact(context: *anyopaque, task: u32) callconv(.c) void {
            const cell: *const Cell = @ptrCast(@alignCast(context));
            cell.row(true, task);
        }
        fn fast(context: *anyopaque, task: u32) callconv(.c) void {
            const cell: *const Cell = @ptrCast(@alignCast(context));
            cell.row(false, task);
        }
    };
    if (c.batch == 0 or c.hidden == 0) return;
    // A row holds 3H or 4H gates with their transcendentals: worth a task when the rows are wide.
    const wanted = @max(1, @min(u(@max(args.threads, 1)), c.batch * c.hidden / 256));
    const threads: u32 = @intCast(@min(wanted, c.batch));
    rt.parallelFor(@ptrCast(&c), @intCast(c.batch), threads, if (args.mode == 1) Job.exact else Job.fast);
}

/// Rows of the batch below which a row group is not worth a thread of its own: the products of fewer rows
/// read all of both packed weights per step for too little arithmetic.
const min_group_rows = 4;

/// Forward (`loopF32` with op 0, LSTM, or 2, GRU): the whole forward pass of one layer over batch-first x [N, T, I]: for each step
/// t, pre = x_t·W_ihᵀ and hh = h_{t-1}·W_hhᵀ from weights packed once per call, then the step's cell (the
/// operands of the file comment). These are the calls `composedRnnForward` (src/kernels/rnn.ts) makes
/// through the packed-product and cell kernels, so the results are their bits. Batch rows never meet
/// through time, so threads split the batch into row groups that each run every step alone: one parallel
/// call per sequence, no wait between steps.
///
/// Argument block: op, mode, threads; ints[0..4] = N, T, I, H (N, T, H ≥ 1); ints[4] the flags of
/// `cellF32` (bit 0 b_hh, bit 1 save, bit 2 b_ih); ints[5..11] the element offsets of h0, c0, out, saved,
/// b_hh, b_ih; operand 0 x (offset, strides over N, T, I), operand 1 W_ihᵀ [I, G·H] and operand 2 W_hhᵀ
/// [H, G·H] (offsets, strides). Pointers: 0 x, 1 W_ih, 2 W_hh, 3 h0 [N, H], 4 c0 [N, H] (LSTM), 5 out: h
/// [N, T, H], then for the LSTM c [T, N, H] from element N·T·H, 6 saved [T, N, 4H] (when saving), 7 b_hh,
/// 8 b_ih (when given); an unused one may be any valid address. Returns `Status.out_of_memory`, having
/// written nothing, when the packed weights and per-group buffers cannot be allocated.
fn Forward(comptime T: type) type {
    return struct {
        const G = gemm.Gemm(T);
        const Self = @This();
        lstm: bool,
        n: usize,
        steps: usize,
        in: usize,
        hidden: usize,
        flags: i32,
        x: [*]const f32,
        /// x's strides over N, T, I.
        xs: [3]isize,
        packed_ih: [*]const T,
        packed_hh: [*]const T,
        /// h0, c0, out, saved, b_hh, b_ih at their offsets.
        p: [6][*]f32,
        group_rows: usize,
        ws_bytes: [3]usize,
        group_bytes: usize,
        groups: [*]u8,

        fn run(rt: *const table.Runtime, args: *const abi.ArgBlock, operands: *const [9][*]f32) i32 {
            var s: Self = .{
                .lstm = args.op == 0,
                .n = u(args.ints[0]),
                .steps = u(args.ints[1]),
                .in = u(args.ints[2]),
                .hidden = u(args.ints[3]),
                .flags = args.ints[4],
                .x = operands[0] + u(args.operands[0].offset),
                .xs = .{ args.operands[0].strides[0], args.operands[0].strides[1], args.operands[0].strides[2] },
                .packed_ih = undefined,
                .packed_hh = undefined,
                .p = undefined,
                .group_rows = undefined,
                .ws_bytes = undefined,
                .group_bytes = undefined,
                .groups = undefined,
            };
            for (0..6) |k| s.p[k] = operands[3 + k] + u(args.ints[5 + k]);
            const gh = gateWidth(s.lstm, s.hidden);
            const macs = @as(u64, s.n) *| s.steps *| gh *| (s.in + s.hidden);
            s.group_rows = groupRows(s.n, macs, args.threads);
            const tasks = gemm.ceilDiv(s.n, s.group_rows);
            s.ws_bytes = G.workspaceBytes(s.group_rows, gh, @max(s.in, s.hidden));
            s.ws_bytes[1] = 0;
            // Each group's pre and hh, [rows, G·H] each, after its workspace.
            s.group_bytes = s.ws_bytes[0] + s.ws_bytes[2] + gemm.roundUp(2 * s.group_rows * gh * @sizeOf(f32), 64);
            const ih_bytes = gemm.roundUp(G.packedElems(s.in, gh) * @sizeOf(T), 64);
            const hh_bytes = G.packedElems(s.hidden, gh) * @sizeOf(T);
            const lease = gemm.WorkspaceCache.acquire(ih_bytes + hh_bytes + tasks * s.group_bytes) orelse
                return @intFromEnum(abi.Status.out_of_memory);
            defer gemm.WorkspaceCache.release(lease);
            const ih: [*]T = @ptrCast(@alignCast(lease.memory));
            const hh: [*]T = @ptrCast(@alignCast(lease.memory + ih_bytes));
            const w = args.operands;
            const weights = [_]Packing(T).Weight{
                .{ .k = s.in, .n = gh, .src = operands[1] + u(w[1].offset), .rs = w[1].strides[0], .cs = w[1].strides[1], .dst = ih },
                .{ .k = s.hidden, .n = gh, .src = operands[2] + u(w[2].offset), .rs = w[2].strides[0], .cs = w[2].strides[1], .dst = hh },
            };
            var packing: Packing(T) = .{ .weights = &weights };
            packing.run(rt, tasks);
            s.packed_ih = ih;
            s.packed_hh = hh;
            s.groups = lease.memory + ih_bytes + hh_bytes;
            runTasks(rt, &s, tasks, group);
            return @intFromEnum(abi.Status.ok);
        }

        /// Every step of the rows of group `task`.
        fn group(context: *anyopaque, task: u32) callconv(.c) void {
            const s: *const Self = @ptrCast(@alignCast(context));
            const r0 = task * s.group_rows;
            const rows = @min(s.group_rows, s.n - r0);
            const gh = gateWidth(s.lstm, s.hidden);
            const h = s.hidden;
            const t_h = s.steps * h;
            const base = s.groups + task * s.group_bytes;
            const ws = G.workspaceAt(base, s.ws_bytes, gh);
            const pre: [*]f32 = @ptrCast(@alignCast(base + s.ws_bytes[0] + s.ws_bytes[2]));
            const hh = pre + rows * gh;
            // An empty input (I = 0) projects to zeros, which no product writes.
            if (s.in == 0) @memset(pre[0 .. rows * gh], 0);
            const h0, const c0, const out, const saved, const b_hh, const b_ih = s.p;
            const cells = out + s.n * t_h;
            for (0..s.steps) |t| {
                if (s.in > 0) {
                    const x_t = gemm.offsetBy([*]const f32, s.x, @as(isize, @intCast(r0)) * s.xs[0] + @as(isize, @intCast(t)) * s.xs[1]);
                    G.multiplyPacked(rows, gh, s.in, x_t, s.xs[0], s.xs[2], s.packed_ih, pre, @intCast(gh), ws);
                }
                const h_prev = if (t == 0) h0 + r0 * h else out + r0 * t_h + (t - 1) * h;
                const h_prev_stride = if (t == 0) h else t_h;
                G.multiplyPacked(rows, gh, h, h_prev, @intCast(h_prev_stride), 1, s.packed_hh, hh, @intCast(gh), ws);
                const h_out = out + r0 * t_h + t * h;
                const act = saved + (t * s.n + r0) * 4 * h;
                var c: Cell = .{
                    .op = if (s.lstm) 0 else 2,
                    .batch = rows,
                    .hidden = h,
                    .bias = s.flags & 1 != 0,
                    .save = s.flags & 2 != 0,
                    .input_bias = s.flags & 4 != 0,
                    .strides = .{ gh, t_h, h_prev_stride },
                    .p = undefined,
                };
                if (s.lstm) {
                    const c_prev = if (t == 0) c0 + r0 * h else cells + ((t - 1) * s.n + r0) * h;
                    c.p = .{ pre, hh, b_hh, c_prev, h_out, cells + (t * s.n + r0) * h, act, b_ih };
                } else {
                    c.p = .{ pre, hh, b_hh, h_prev, h_out, act, b_ih, b_ih };
                }
                for (0..rows) |r| c.row(T == f64, r);
            }
        }
    };
}

/// Backward (`loopF32` with op 1, LSTM, or 3, GRU): the backward pass through time of one layer, last step first:
/// per step the cell's backward step (the operands of the file comment) and dh = dgates_t·W_hh (the hidden
/// side's for the GRU) from W_hh packed once per call, the calls `src/ops/sequence.ts` made one by one before
/// (so the same bits). Threads split the batch into row groups as `Forward` does.
///
/// Argument block: op, mode, threads; ints[0..3] = N, T, H (all ≥ 1); ints[3..11] the element offsets of
/// pointers 1 to 8; operand 0 W_hh [G·H, H] (offset, strides). Pointers: 0 W_hh, 1 saved [T, N, 4H], 2 the
/// states: for the LSTM the op's buffer (h [N, T, H], then c [T, N, H]), for the GRU its output [N, T, H],
/// 3 the initial state [N, H] (c0 for the LSTM, h0 for the GRU), 4 dh [N, H] (zeros in, the gradient of h0
/// out), 5 [N, H]: the LSTM's dc, the GRU's dh along the z path (zeros in, the last step's out), 6 the
/// gradient of the op's output (the LSTM's buffer, the GRU's [N, T, H]), 7 the gate gradients [N, T, G·H]
/// (the GRU's input side), 8 the GRU's hidden-side gate gradients [N, T, 3H] (unused for the LSTM).
/// Returns `Status.out_of_memory`, having written nothing, when the workspace cannot be allocated.
fn Backward(comptime T: type) type {
    return struct {
        const G = gemm.Gemm(T);
        const Self = @This();
        lstm: bool,
        n: usize,
        steps: usize,
        hidden: usize,
        packed_hh: [*]const T,
        /// Pointers 1 to 8 at their offsets.
        p: [8][*]f32,
        group_rows: usize,
        ws_bytes: [3]usize,
        group_bytes: usize,
        groups: [*]u8,

        fn run(rt: *const table.Runtime, args: *const abi.ArgBlock, operands: *const [9][*]f32) i32 {
            var s: Self = .{
                .lstm = args.op == 1,
                .n = u(args.ints[0]),
                .steps = u(args.ints[1]),
                .hidden = u(args.ints[2]),
                .packed_hh = undefined,
                .p = undefined,
                .group_rows = undefined,
                .ws_bytes = undefined,
                .group_bytes = undefined,
                .groups = undefined,
            };
            for (0..8) |k| s.p[k] = operands[1 + k] + u(args.ints[3 + k]);
            const h = s.hidden;
            const gh = gateWidth(s.lstm, h);
            s.group_rows = groupRows(s.n, @as(u64, s.n) *| s.steps *| gh *| h, args.threads);
            const tasks = gemm.ceilDiv(s.n, s.group_rows);
            s.ws_bytes = G.workspaceBytes(s.group_rows, h, gh);
            s.ws_bytes[1] = 0;
            s.group_bytes = s.ws_bytes[0] + s.ws_bytes[2];
            const hh_bytes = gemm.roundUp(G.packedElems(gh, h) * @sizeOf(T), 64);
            const lease = gemm.WorkspaceCache.acquire(hh_bytes + tasks * s.group_bytes) orelse
                return @intFromEnum(abi.Status.out_of_memory);
            defer gemm.WorkspaceCache.release(lease);
            const packed_hh: [*]T = @ptrCast(@alignCast(lease.memory));
            const w = args.operands[0];
            const weights = [_]Packing(T).Weight{.{ .k = gh, .n = h, .src = operands[0] + u(w.offset), .rs = w.strides[0], .cs = w.strides[1], .dst = packed_hh }};
            var packing: Packing(T) = .{ .weights = &weights };
            packing.run(rt, tasks);
            s.packed_hh = packed_hh;
            s.groups = lease.memory + hh_bytes;
            runTasks(rt, &s, tasks, group);
            return @intFromEnum(abi.Status.ok);
        }

        /// Every step of the rows of group `task`, last to first.
        fn group(context: *anyopaque, task: u32) callconv(.c) void {
            const s: *const Self = @ptrCast(@alignCast(context));
            const r0 = task * s.group_rows;
            const rows = @min(s.group_rows, s.n - r0);
            const h = s.hidden;
            const gh = gateWidth(s.lstm, h);
            const t_h = s.steps * h;
            const ws = G.workspaceAt(s.groups + task * s.group_bytes, s.ws_bytes, h);
            const saved, const states, const initial, const dh, const carried, const grad, const gates_a, const gates_b = s.p;
            const cells = s.n * t_h;
            var t = s.steps;
            while (t > 0) {
                t -= 1;
                const act = saved + (t * s.n + r0) * 4 * h;
                const grad_h = grad + r0 * t_h + t * h;
                const d_a = gates_a + r0 * s.steps * gh + t * gh;
                var c: Cell = .{
                    .op = if (s.lstm) 1 else 3,
                    .batch = rows,
                    .hidden = h,
                    .bias = false,
                    .save = false,
                    .input_bias = false,
                    .strides = .{ t_h, s.steps * gh, if (t == 0) h else t_h },
                    .p = undefined,
                };
                // The product dh = dgates·W_hh reads the hidden side's gradients.
                var d_hh = d_a;
                if (s.lstm) {
                    const c_prev = if (t == 0) initial + r0 * h else states + cells + ((t - 1) * s.n + r0) * h;
                    c.p = .{ act, states + cells + (t * s.n + r0) * h, c_prev, dh + r0 * h, grad_h, grad + cells + (t * s.n + r0) * h, carried + r0 * h, d_a };
                } else {
                    const h_prev = if (t == 0) initial + r0 * h else states + r0 * t_h + (t - 1) * h;
                    d_hh = gates_b + r0 * s.steps * gh + t * gh;
                    c.p = .{ act, h_prev, dh + r0 * h, carried + r0 * h, grad_h, d_a, d_hh, d_hh };
                }
                for (0..rows) |r| c.row(T == f64, r);
                G.multiplyPacked(rows, h, gh, d_hh, @intCast(s.steps * gh), 1, s.packed_hh, dh + r0 * h, @intCast(h), ws);
            }
        }
    };
}

/// The time loop of one LSTM or GRU layer: op 0 or 2 forward (`Forward`), 1 or 3 backward (`Backward`), in
/// `args.mode`'s arithmetic; each documents its argument block and the nine pointers.
fn loopF32(rt: *const table.Runtime, args: *const abi.ArgBlock, operands: *const [9][*]f32) callconv(.c) i32 {
    std.debug.assert(args.op >= 0 and args.op <= 3);
    for (args.ints[0..11]) |v| std.debug.assert(v >= 0);
    // An empty layer (N, T or H zero; the binding does not call for one) has nothing to compute.
    const hidden = args.ints[if (@rem(args.op, 2) == 0) 3 else 2];
    if (args.ints[0] == 0 or args.ints[1] == 0 or hidden == 0) return @intFromEnum(abi.Status.ok);
    const exact = args.mode == 1;
    if (@rem(args.op, 2) == 0) return if (exact) Forward(f64).run(rt, args, operands) else Forward(f32).run(rt, args, operands);
    return if (exact) Backward(f64).run(rt, args, operands) else Backward(f32).run(rt, args, operands);
}

/// Packs a layer's weights for its products (`Gemm.packWhole`), split by column panels across the threads
/// that the time loop will use (packing is a few percent of a forward pass). A weight with k = 0 is skipped.
fn Packing(comptime T: type) type {
    return struct {
        const G = gemm.Gemm(T);
        const Weight = struct { k: usize, n: usize, src: [*]const f32, rs: isize, cs: isize, dst: [*]T };
        weights: []const Weight,
        tasks: usize = 1,

        fn run(p: *@This(), rt: *const table.Runtime, tasks: usize) void {
            p.tasks = tasks;
            runTasks(rt, p, tasks, task);
        }

        /// Task `i`'s share of each weight's columns, in whole panels.
        fn task(context: *anyopaque, i: u32) callconv(.c) void {
            const p: *const @This() = @ptrCast(@alignCast(context));
            for (p.weights) |w| {
                if (w.k == 0) continue;
                const step = gemm.roundUp(gemm.ceilDiv(w.n, p.tasks), G.nr);
                const j0 = i * step;
                if (j0 >= w.n) continue;
                G.packWholeColumns(w.k, w.n, j0, @min(w.n, j0 + step), w.src, w.rs, w.cs, w.dst);
            }
        }
    };
}

/// Runs `task` for every index in 0..tasks, each on a thread of its own, or on the calling thread for one.
fn runTasks(rt: *const table.Runtime, context: *anyopaque, tasks: usize, task: table.TaskFn) void {
    if (tasks == 1) return task(context, 0);
    rt.parallelFor(context, @intCast(tasks), @intCast(tasks), task);
}

/// Rows per group of a layer's time loop over `n` rows with `macs` multiply-adds in all: one group below
/// about a million (as for a matmul), else a group per thread, of at least `min_group_rows` rows.
fn groupRows(n: usize, macs: u64, threads: i32) usize {
    const wanted = if (macs < 1 << 20) 1 else @min(@as(usize, @intCast(@max(threads, 1))), gemm.ceilDiv(n, min_group_rows));
    return gemm.ceilDiv(n, @max(wanted, 1));
}

/// A layer's gate width G·H: 4H for the LSTM, 3H for the GRU.
fn gateWidth(lstm: bool, hidden: usize) usize {
    return (if (lstm) @as(usize, 4) else 3) * hidden;
}

fn u(v: i32) usize {
    return @intCast(v);
}

// --- tests ---

/// The runtime of the tests: tasks run in order on the calling thread.
const serial: table.Runtime = .{ .parallel_for = struct {
    fn run(context: *anyopaque, tasks: u32, _: u32, task: table.TaskFn) callconv(.c) void {
        for (0..tasks) |i| task(context, @intCast(i));
    }
}.run };

test "an LSTM step with zero gates halves the cell state, and its backward pass gives σ'(0)-scaled gradients" {
    // N = 1, H = 5 (a vector part and a scalar tail for small lane counts).
    const h = 5;
    var zeros = [_]f32{0} ** (4 * h);
    var c_prev = [_]f32{2} ** h;
    var h_out = [_]f32{0} ** h;
    var c_out = [_]f32{0} ** h;
    var saved = [_]f32{0} ** (4 * h);
    var args = std.mem.zeroes(abi.ArgBlock);
    args.mode = 1;
    args.threads = 1;
    args.ints[0] = 1;
    args.ints[1] = h;
    args.ints[2] = 2;
    args.ints[3] = 4 * h;
    args.ints[4] = h;
    const ops: [8][*]f32 = .{ &zeros, &zeros, &zeros, &c_prev, &h_out, &c_out, &saved, &zeros };
    cellF32(&serial, &args, &ops);
    for (0..h) |j| {
        // i = f = o = 1/2, g = 0: c = 1, h = tanh(1)/2.
        try std.testing.expectEqual(@as(f32, 1), c_out[j]);
        try std.testing.expectEqual(@as(f32, @floatCast(math.tanh(1) / 2)), h_out[j]);
        try std.testing.expectEqual(@as(f32, 0.5), saved[j]);
        try std.testing.expectEqual(@as(f32, 0), saved[2 * h + j]);
    }
    // Backward with dh = 0, an output gradient of 1 and no cell gradient from later steps.
    var ones = [_]f32{1} ** h;
    var dc = [_]f32{0} ** h;
    var dg = [_]f32{0} ** (4 * h);
    args.op = 1;
    args.ints[3] = h;
    args.ints[4] = 4 * h;
    const back: [8][*]f32 = .{ &saved, &c_out, &c_prev, &zeros, &ones, &zeros, &dc, &dg };
    cellF32(&serial, &args, &back);
    const tc: f32 = @floatCast(math.tanh(1));
    const dc_total = 0.5 * (1 - tc * tc);
    for (0..h) |j| {
        try std.testing.expectEqual(dc_total * 0.5, dc[j]);
        try std.testing.expectEqual(dc_total * 0 * 0.5 * 0.5, dg[j]);
        try std.testing.expectEqual(((dc_total * 2) * 0.5) * 0.5, dg[h + j]);
        try std.testing.expectEqual(dc_total * 0.5, dg[2 * h + j]);
        try std.testing.expectEqual(((tc * 0.5) * 0.5), dg[3 * h + j]);
    }
}

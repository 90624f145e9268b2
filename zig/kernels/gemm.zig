//! GEMM: batched f32 matrix products in the BLIS/GotoBLAS structure. B is packed into KC×NR panels and A
//! into MR×KC panels; loops NC → KC → MC run around a register-tiled micro-kernel that keeps an MR×NR tile
//! of C in vector registers. Transposed, strided and reversed operands are only strides: the packing reads
//! them, so the caller never copies. The code is written once over the vector width of the CPU it is
//! compiled for, with the tile and block sizes chosen per ISA at comptime.
//!
//! Fast mode multiplies in f32 with FMA, in any order. Exact mode packs f64 copies of A and B and runs the
//! same blocking with f64 accumulators: a product of two f32 values is exact in f64, so each step is one
//! rounding of `acc + a·b`, in ascending k, and the sum is rounded to f32 once. The k loop is never split
//! across threads or reordered, so exact results are the same bits on every ISA and every thread count,
//! and equal to the TypeScript reference.
//!
//! A product of a few rows (`stream_max_rows`: batch-1 decoding, a small batch through a linear layer) is
//! bound by reading B, not by arithmetic; packing B would read and write it once more. When B's rows are
//! contiguous such products skip the packing and stream B once, row after row (`Stream`), with the sums of
//! a strip of C kept in L1; the same ascending-k sums, so exact mode gives the same bits on either path.
const std = @import("std");
const builtin = @import("builtin");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const bench = @import("../bench.zig");
const aligned = @import("../memory/aligned.zig");
const conv = @import("conv.zig");

/// out[..., m, n] = Σ_k a[..., m, k] · b[..., k, n]; see `matmulF32`. Returns an `abi.Status`.
pub const MatmulFn = *const fn (
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    out: [*]u8,
    a: [*]const u8,
    b: [*]const u8,
) callconv(.c) i32;

/// Packs b [K, N] for `matmulPackedF32`; see `packBF32`.
pub const PackBFn = *const fn (args: *const abi.ArgBlock, packed_b: [*]u8, b: [*]const u8) callconv(.c) void;

/// The panel width NR of a packed B for a mode (0 fast, 1 exact); see `packBF32`.
pub const PackedPanelFn = *const fn (mode: i32) callconv(.c) i32;

/// This family's entries in the kernel table; the machine-measuring loops of `bench.zig` ride along,
/// since they too must run the variant's widest vectors.
pub const Table = extern struct {
    matmul_f32: MatmulFn,
    /// The product with a B packed once beforehand (`packBF32`), for a weight used by many products.
    matmul_packed_f32: MatmulFn,
    pack_b_f32: PackBFn,
    packed_panel: PackedPanelFn,
    bench: bench.Table,
    /// im2col and col2im of convolution (`conv.zig`), which feed and drain this family's products.
    conv_fold_f32: conv.FoldFn,
    /// Convolution as an implicit GEMM (`conv.zig`): the windows packed straight into this family's panels.
    conv_product_f32: conv.ProductFn,
};

pub const table_entries: Table = .{
    .matmul_f32 = matmulF32,
    .matmul_packed_f32 = matmulPackedF32,
    .pack_b_f32 = packBF32,
    .packed_panel = packedPanel,
    .bench = bench.table_entries,
    .conv_fold_f32 = conv.foldF32,
    .conv_product_f32 = conv.productF32,
};

/// Bytes in one vector register of the CPU this file is compiled for. (`suggestVectorLength` answers 256
/// bits for x86-64-v4, whose model prefers them for auto-vectorized code; explicit zmm vectors are faster
/// for GEMM.)
pub const vector_bytes: usize = switch (builtin.cpu.arch) {
    .x86_64 => if (hasX86(.avx512f)) 64 else if (hasX86(.avx2)) 32 else 16,
    else => 16,
};

/// Vector registers the micro-kernel can fill.
pub const vector_registers: usize = switch (builtin.cpu.arch) {
    .x86_64 => if (hasX86(.avx512f)) 32 else 16,
    .aarch64 => 32,
    else => 16,
};

/// Whether a fused multiply-add is one instruction. Without it `acc + a·b` is a multiply and an add, which
/// gives the same bits in exact mode because the f64 product is exact.
pub const has_fma: bool = switch (builtin.cpu.arch) {
    .x86_64 => hasX86(.fma),
    .aarch64 => true,
    else => false,
};

fn hasX86(comptime feature: std.Target.x86.Feature) bool {
    return std.Target.x86.featureSetHas(builtin.cpu.features, feature);
}

/// acc + x·y, fused where the CPU has it.
pub inline fn mulAdd(comptime V: type, x: V, y: V, acc: V) V {
    return if (has_fma) @mulAdd(V, x, y, acc) else acc + x * y;
}

/// Tile and block sizes for one element type on this ISA.
pub const Blocking = struct {
    /// Rows of the register tile.
    mr: usize,
    /// Vectors across a row of the register tile (NR = nv · lanes).
    nv: usize,
    /// Depth of a packed panel: long enough to amortize loading and storing a C tile, short enough that the
    /// micro-panels a tile reads stay in L1 and L2.
    kc: usize,
    /// Rows of a packed A block (sized for L2); a multiple of `mr`.
    mc: usize,
    /// Columns of a packed B block (sized for L3); a multiple of NR.
    nc: usize,
};

/// The blocking used for the f32 (fast) or f64 (exact) multiply on this ISA.
pub fn blocking(comptime T: type) Blocking {
    const lanes = vector_bytes / @sizeOf(T);
    if (vector_registers == 32 and vector_bytes == 64) {
        // AVX-512: 6 rows × 4 zmm = 24 accumulators, 4 for B, 1 broadcast: 10 loads per 24 FMAs. (14×32
        // measured the same within noise on Zen 5 but wastes more of its last row panel.) KC 256 in exact
        // mode too: half the partial sums stored and reloaded of KC 128, 2–3 % faster on Zen 4.
        return .{ .mr = 6, .nv = 4, .kc = 256, .mc = 6 * 48, .nc = 64 * lanes };
    }
    if (vector_registers == 32) {
        // NEON: 8 rows × 3 q registers = 24 accumulators.
        return .{ .mr = 8, .nv = 3, .kc = if (T == f32) 256 else 128, .mc = 8 * 16, .nc = 96 * lanes };
    }
    if (has_fma) {
        // AVX2: 6 rows × 2 ymm = 12 accumulators, 2 for B, 1 broadcast.
        return .{ .mr = 6, .nv = 2, .kc = if (T == f32) 256 else 128, .mc = 6 * 24, .nc = 128 * lanes };
    }
    // SSE2: 6 rows × 2 xmm, one more register for the product (no FMA).
    return .{ .mr = 6, .nv = 2, .kc = if (T == f32) 256 else 128, .mc = 6 * 16, .nc = 128 * lanes };
}

/// Output rows a task processes at once in exact mode: the f64 partial sums of that many rows by NC columns
/// wait in a scratch buffer between KC panels, so this bounds the scratch.
const exact_rows_chunk = 2048;

/// Below this many multiply-adds a matmul stays on the calling thread.
const parallel_min_macs: u64 = 1 << 20;

/// Pointer arithmetic with a signed element offset (negative strides reach below the base).
pub inline fn offsetBy(comptime P: type, base: P, elems: isize) P {
    const Elem = @typeInfo(P).pointer.child;
    const delta: usize = @bitCast(elems *% @as(isize, @sizeOf(Elem)));
    return @ptrFromInt(@intFromPtr(base) +% delta);
}

/// One matrix product: C (m×n) = A (m×k) · B (k×n), each with signed element strides.
const Problem = struct {
    m: usize,
    n: usize,
    k: usize,
    a: [*]const f32,
    rs_a: isize,
    cs_a: isize,
    b: [*]const f32,
    rs_b: isize,
    cs_b: isize,
    c: [*]f32,
    rs_c: isize,
    cs_c: isize,
    /// The column of the whole product where this one starts (where its panels begin in a packed B).
    n0: usize = 0,

    /// The sub-problem of rows `m0..m0+m` and columns `n0..n0+n`.
    fn sub(p: Problem, m0: usize, m: usize, n0: usize, n: usize) Problem {
        var s = p;
        s.m = m;
        s.n = n;
        const im0: isize = @intCast(m0);
        const in0: isize = @intCast(n0);
        s.a = offsetBy([*]const f32, p.a, im0 * p.rs_a);
        s.b = offsetBy([*]const f32, p.b, in0 * p.cs_b);
        s.c = offsetBy([*]f32, p.c, im0 * p.rs_c + in0 * p.cs_c);
        s.n0 = p.n0 + n0;
        return s;
    }
};

/// The packed buffers one task owns.
pub fn Workspace(comptime T: type) type {
    return struct {
        a_pack: [*]T,
        b_pack: [*]T,
        /// Exact mode's f64 partial sums between KC panels (unused when one panel covers K), one MR×NR
        /// tile after another, `partial_row_tiles` tiles to a row of tiles.
        partial: [*]f64,
        partial_row_tiles: usize,
        /// A B packed beforehand for every column (`Gemm.packWhole`), and its padded width; null when
        /// each KC×NC block is packed into `b_pack` as the product reaches it.
        packed_b: ?[*]const T = null,
        packed_n: usize = 0,
    };
}

/// The GEMM for one accumulation type: f32 (fast) or f64 (exact).
pub fn Gemm(comptime T: type) type {
    return struct {
        pub const sizes = blocking(T);
        pub const lanes = vector_bytes / @sizeOf(T);
        pub const mr = sizes.mr;
        pub const nv = sizes.nv;
        pub const nr = nv * lanes;
        const V = @Vector(lanes, T);
        const V32 = @Vector(lanes, f32);
        const Tile = [mr][nv]V;
        const exact = T == f64;
        const rows_chunk = if (exact) exact_rows_chunk else std.math.maxInt(usize);

        comptime {
            std.debug.assert(sizes.mc % mr == 0);
            std.debug.assert(sizes.nc % nr == 0);
            std.debug.assert(T == f32 or T == f64);
        }

        /// Bytes of each workspace region for a task whose blocks are at most `m`×`n` deep `k`.
        pub fn workspaceBytes(m: usize, n: usize, k: usize) [3]usize {
            const mc = roundUp(@min(sizes.mc, m), mr);
            const nc = roundUp(@min(sizes.nc, n), nr);
            const kc = @min(sizes.kc, k);
            const partial = if (exact and k > sizes.kc) roundUp(@min(rows_chunk, m), mr) * nc * @sizeOf(f64) else 0;
            return .{ roundUp(mc * kc * @sizeOf(T), 64), roundUp(kc * nc * @sizeOf(T), 64), roundUp(partial, 64) };
        }

        /// The workspace laid out from `base` as `workspaceBytes` sized it (`bytes`), for blocks of at most
        /// `n` columns.
        pub fn workspaceAt(base: [*]u8, bytes: [3]usize, n: usize) Workspace(T) {
            return .{
                .a_pack = @ptrCast(@alignCast(base)),
                .b_pack = @ptrCast(@alignCast(base + bytes[0])),
                .partial = @ptrCast(@alignCast(base + bytes[0] + bytes[1])),
                .partial_row_tiles = ceilDiv(@min(sizes.nc, n), nr),
            };
        }

        /// C = A·B for one problem, on the calling thread, with the given workspace.
        pub fn multiply(p: Problem, ws: Workspace(T)) void {
            var m0: usize = 0;
            while (m0 < p.m) : (m0 += rows_chunk) {
                const rows = @min(rows_chunk, p.m - m0);
                var jc: usize = 0;
                while (jc < p.n) : (jc += sizes.nc) {
                    const nc = @min(sizes.nc, p.n - jc);
                    multiplyBlockColumn(p.sub(m0, rows, jc, nc), ws);
                }
            }
        }

        /// C [m, n] (rows `rs_c` apart) = A [m, k] (strides `rs_a`, `cs_a`) · a k×n B packed by `packWhole`,
        /// on the calling thread: the sums and order of `matmulPackedF32`, so the same bits. `ws` is a
        /// workspace sized by `workspaceBytes(m, n, k)` (its B region unused).
        pub fn multiplyPacked(m: usize, n: usize, k: usize, a: [*]const f32, rs_a: isize, cs_a: isize, packed_b: [*]const T, c: [*]f32, rs_c: isize, ws: Workspace(T)) void {
            var w = ws;
            w.packed_b = packed_b;
            w.packed_n = roundUp(n, nr);
            multiply(.{ .m = m, .n = n, .k = k, .a = a, .rs_a = rs_a, .cs_a = cs_a, .b = a, .rs_b = 0, .cs_b = 0, .c = c, .rs_c = rs_c, .cs_c = 1 }, w);
        }

        /// The depth of the KC panels of a product deep `k`: at most `sizes.kc`, with the panels as equal as
        /// possible, so that no short last panel pays a C update for a few k (K = 576: 3 × 192, not 256, 256,
        /// 64).
        fn panelDepth(k: usize) usize {
            const panels = ceilDiv(k, sizes.kc);
            return @min(sizes.kc, roundUp(ceilDiv(k, @max(panels, 1)), 8));
        }

        /// One NC-wide column block: for each KC panel, pack B once and sweep the MC row blocks.
        fn multiplyBlockColumn(p: Problem, ws: Workspace(T)) void {
            const depth = panelDepth(p.k);
            var pc: usize = 0;
            while (pc < p.k) : (pc += depth) {
                const kc = @min(depth, p.k - pc);
                const ipc: isize = @intCast(pc);
                // KC block pc of a packed B starts pc·packed_n elements in; its panel for column n0 n0·kc.
                const b_pack: [*]const T = if (ws.packed_b) |whole| whole + pc * ws.packed_n + p.n0 * kc else blk: {
                    packB(kc, p.n, offsetBy([*]const f32, p.b, ipc * p.rs_b), p.rs_b, p.cs_b, ws.b_pack);
                    break :blk ws.b_pack;
                };
                const pass: Pass = .{ .first = pc == 0, .last = pc + kc == p.k };
                var ic: usize = 0;
                while (ic < p.m) : (ic += sizes.mc) {
                    const mc = @min(sizes.mc, p.m - ic);
                    const iic: isize = @intCast(ic);
                    packA(mc, kc, offsetBy([*]const f32, p.a, iic * p.rs_a + ipc * p.cs_a), p.rs_a, p.cs_a, ws.a_pack);
                    const c = offsetBy([*]f32, p.c, iic * p.rs_c);
                    const partial = ws.partial + (ic / mr) * ws.partial_row_tiles * mr * nr;
                    macroKernel(mc, p.n, kc, ws, b_pack, c, p.rs_c, p.cs_c, partial, pass);
                }
            }
        }

        /// C (m×n, strides rs_c, cs_c) = A·B with the same blocking, sums and order as `multiply`, where
        /// `source` packs the blocks in place of strided operands: `source.packA(ic, mc, pc, kc, dst)` writes
        /// rows ic.. and depths pc.. of A as `packA` would, `source.packB(pc, kc, jc, nc, dst)` depths pc.. and
        /// columns jc.. of B as `packB` would (an implicit operand, such as convolution's windows).
        pub fn multiplyFrom(source: anytype, m: usize, n: usize, k: usize, c: [*]f32, rs_c: isize, cs_c: isize, ws: Workspace(T)) void {
            var m0: usize = 0;
            while (m0 < m) : (m0 += rows_chunk) {
                const rows = @min(rows_chunk, m - m0);
                var jc: usize = 0;
                while (jc < n) : (jc += sizes.nc) {
                    const nc = @min(sizes.nc, n - jc);
                    const block = offsetBy([*]f32, c, @as(isize, @intCast(m0)) * rs_c + @as(isize, @intCast(jc)) * cs_c);
                    const depth = panelDepth(k);
                    var pc: usize = 0;
                    while (pc < k) : (pc += depth) {
                        const kc = @min(depth, k - pc);
                        source.packB(pc, kc, jc, nc, ws.b_pack);
                        const pass: Pass = .{ .first = pc == 0, .last = pc + kc == k };
                        var ic: usize = 0;
                        while (ic < rows) : (ic += sizes.mc) {
                            const mc = @min(sizes.mc, rows - ic);
                            source.packA(m0 + ic, mc, pc, kc, ws.a_pack);
                            const partial = ws.partial + (ic / mr) * ws.partial_row_tiles * mr * nr;
                            macroKernel(mc, nc, kc, ws, ws.b_pack, offsetBy([*]f32, block, @as(isize, @intCast(ic)) * rs_c), rs_c, cs_c, partial, pass);
                        }
                    }
                }
            }
        }

        const Pass = struct { first: bool, last: bool };

        /// Runs the micro-kernel over every MR×NR tile of an mc×nc block, B micro-panel by B micro-panel, so
        /// that each is reused from cache by all the A micro-panels of the block.
        fn macroKernel(mc: usize, nc: usize, kc: usize, ws: Workspace(T), b_pack: [*]const T, c: [*]f32, rs_c: isize, cs_c: isize, partial: [*]f64, pass: Pass) void {
            var jr: usize = 0;
            while (jr < nc) : (jr += nr) {
                const n_valid = @min(nr, nc - jr);
                const b_panel = b_pack + jr * kc;
                var ir: usize = 0;
                while (ir < mc) : (ir += mr) {
                    const m_valid = @min(mr, mc - ir);
                    const c_tile = offsetBy([*]f32, c, @as(isize, @intCast(ir)) * rs_c + @as(isize, @intCast(jr)) * cs_c);
                    const partial_tile = partial + ((ir / mr) * ws.partial_row_tiles + jr / nr) * mr * nr;
                    // The sums start at zero in registers, or from exact mode's partial sums of the panels before.
                    var tile: Tile = undefined;
                    const from_partial = exact and !pass.first;
                    if (from_partial) loadPartial(&tile, partial_tile);
                    const vectors = ceilDiv(n_valid, lanes);
                    if (!exact or pass.last) prefetchTile(c_tile, rs_c, cs_c, m_valid, n_valid);
                    if (m_valid == mr and vectors == nv) {
                        microKernel(mr, nv, kc, ws.a_pack + ir * kc, b_panel, &tile, from_partial);
                    } else {
                        edgeKernel(m_valid, vectors, kc, ws.a_pack + ir * kc, b_panel, &tile, from_partial);
                    }
                    if (exact and !pass.last) {
                        storePartial(&tile, partial_tile);
                    } else {
                        storeTile(&tile, c_tile, rs_c, cs_c, m_valid, n_valid, !exact and !pass.first);
                    }
                }
            }
        }

        /// Row p of a micro-kernel's B: `b` a packed panel (`[*]const T`, k-major, rows NR apart) or a table
        /// of kc row pointers (`[*]const [*]const T`), for rows read where they lie, such as convolution's
        /// windows in a padded image; each row holds the NR values of one k.
        inline fn rowOf(b: anytype, p: usize) [*]const T {
            return if (@TypeOf(b) == [*]const T) b + p * nr else b[p];
        }

        /// The first `rows`×`vectors` part of tile = (tile when `from_partial`, else 0) + A panel (mr×kc, k-major) ·
        /// B (kc×nr, see `rowOf`), in ascending k. (Zeroing the tile in memory instead costs a memset of it
        /// per tile: 4 % of a K = 128 product.)
        inline fn microKernel(comptime rows: usize, comptime vectors: usize, kc: usize, a: [*]const T, b: anytype, tile: *Tile, from_partial: bool) void {
            var acc: [rows][vectors]V = undefined;
            inline for (0..rows) |i| inline for (0..vectors) |j| {
                acc[i][j] = if (from_partial) tile[i][j] else @splat(0);
            };
            for (0..kc) |p| {
                var bv: [vectors]V = undefined;
                const row = rowOf(b, p);
                inline for (0..vectors) |j| bv[j] = row[j * lanes ..][0..lanes].*;
                inline for (0..rows) |i| {
                    const ai: V = @splat(a[p * mr + i]);
                    inline for (0..vectors) |j| acc[i][j] = mulAdd(V, ai, bv[j], acc[i][j]);
                }
            }
            inline for (0..rows) |i| inline for (0..vectors) |j| {
                tile[i][j] = acc[i][j];
            };
        }

        /// The micro-kernel cut to an edge tile's rows and vectors, so that a thin edge (the one row of a
        /// vector-matrix product, a narrow N) costs what it computes rather than a full tile.
        pub fn edgeKernel(rows: usize, vectors: usize, kc: usize, a: [*]const T, b: anytype, tile: *Tile, from_partial: bool) void {
            @setEvalBranchQuota(20_000);
            switch (rows) {
                inline 1...mr => |r| switch (vectors) {
                    inline 1...nv => |v| microKernel(r, v, kc, a, b, tile, from_partial),
                    else => unreachable,
                },
                else => unreachable,
            }
        }

        /// Asks for the cache lines of a C tile that `storeTile` will write (and, after the first panel, read),
        /// so that they arrive while the micro-kernel runs instead of stalling its stores at the end. Only for
        /// rows of contiguous columns, which is where a tile is a few whole lines per row.
        fn prefetchTile(c: [*]f32, rs_c: isize, cs_c: isize, m_valid: usize, n_valid: usize) void {
            if (cs_c != 1) return;
            const line = 64 / @sizeOf(f32);
            for (0..m_valid) |i| {
                const row = offsetBy([*]f32, c, @as(isize, @intCast(i)) * rs_c);
                var j: usize = 0;
                while (j < n_valid) : (j += line) @prefetch(row + j, .{ .rw = .write, .locality = 3, .cache = .data });
                @prefetch(row + n_valid - 1, .{ .rw = .write, .locality = 3, .cache = .data });
            }
        }

        fn loadPartial(tile: *Tile, partial: [*]const f64) void {
            inline for (0..mr) |i| inline for (0..nv) |j| {
                tile[i][j] = partial[(i * nv + j) * lanes ..][0..lanes].*;
            };
        }

        fn storePartial(tile: *const Tile, partial: [*]f64) void {
            inline for (0..mr) |i| inline for (0..nv) |j| {
                partial[(i * nv + j) * lanes ..][0..lanes].* = tile[i][j];
            };
        }

        /// Writes the valid part of a finished tile to C (adding to it after the first fast-mode panel); exact
        /// sums are rounded to f32 here, once.
        fn storeTile(tile: *const Tile, c: [*]f32, rs_c: isize, cs_c: isize, m_valid: usize, n_valid: usize, accumulate: bool) void {
            if (m_valid == mr and n_valid == nr and cs_c == 1) {
                inline for (0..mr) |i| {
                    const row = offsetBy([*]f32, c, @as(isize, i) * rs_c);
                    inline for (0..nv) |j| {
                        const dst = row[j * lanes ..][0..lanes];
                        var v: V32 = if (exact) @floatCast(tile[i][j]) else tile[i][j];
                        if (accumulate) v += dst.*;
                        dst.* = v;
                    }
                }
                return;
            }
            const flat: *const [mr][nr]T = @ptrCast(tile);
            for (0..m_valid) |i| {
                const row = offsetBy([*]f32, c, @as(isize, @intCast(i)) * rs_c);
                for (0..n_valid) |j| {
                    const dst = &offsetBy([*]f32, row, @as(isize, @intCast(j)) * cs_c)[0];
                    const v: f32 = @floatCast(flat[i][j]);
                    dst.* = if (accumulate) dst.* + v else v;
                }
            }
        }

        /// Elements of a packed k×n B: every KC block of rows as `packB` lays it out for all n columns
        /// (rounded up to whole NR panels), one block after another.
        pub fn packedElems(k: usize, n: usize) usize {
            return roundUp(n, nr) * k;
        }

        /// Packs all of B (k×n, any strides) for `Job.executePacked`: KC block pc at element pc·roundUp(n,
        /// NR), its NR-column panels kc·NR apart, so that any NR-aligned column range of any NC block is
        /// one contiguous run of panels.
        pub fn packWhole(k: usize, n: usize, b: [*]const f32, rs: isize, cs: isize, dst: [*]T) void {
            packWholeColumns(k, n, 0, n, b, rs, cs, dst);
        }

        /// Columns j0..j1 of `packWhole`'s layout (j0 a multiple of NR; j1 too, or n): the values it writes
        /// there, so that ranges packed apart (on different threads) make the whole.
        pub fn packWholeColumns(k: usize, n: usize, j0: usize, j1: usize, b: [*]const f32, rs: isize, cs: isize, dst: [*]T) void {
            std.debug.assert(j0 % nr == 0 and (j1 % nr == 0 or j1 == n) and j0 < j1 and j1 <= n);
            const depth = panelDepth(k);
            var pc: usize = 0;
            while (pc < k) : (pc += depth) {
                const kc = @min(depth, k - pc);
                const src = offsetBy([*]const f32, b, @as(isize, @intCast(pc)) * rs + @as(isize, @intCast(j0)) * cs);
                packB(kc, j1 - j0, src, rs, cs, dst + pc * roundUp(n, nr) + j0 * kc);
            }
        }

        /// Packs an mc×kc block of A into MR-row panels, each k-major (MR values per k), rows past mc zero.
        pub fn packA(mc: usize, kc: usize, src: [*]const f32, rs: isize, cs: isize, dst: [*]T) void {
            var ir: usize = 0;
            while (ir < mc) : (ir += mr) {
                const rows = @min(mr, mc - ir);
                const panel = dst + ir * kc;
                const base = offsetBy([*]const f32, src, @as(isize, @intCast(ir)) * rs);
                if (rows == mr and cs == 1) {
                    var row_ptrs: [mr][*]const f32 = undefined;
                    inline for (0..mr) |i| row_ptrs[i] = offsetBy([*]const f32, base, @as(isize, i) * rs);
                    for (0..kc) |p| {
                        inline for (0..mr) |i| panel[p * mr + i] = row_ptrs[i][p];
                    }
                } else if (rows == mr and rs == 1) {
                    for (0..kc) |p| {
                        const col = offsetBy([*]const f32, base, @as(isize, @intCast(p)) * cs);
                        inline for (0..mr) |i| panel[p * mr + i] = col[i];
                    }
                } else {
                    for (0..kc) |p| {
                        const col = offsetBy([*]const f32, base, @as(isize, @intCast(p)) * cs);
                        for (0..mr) |i| {
                            panel[p * mr + i] = if (i < rows) offsetBy([*]const f32, col, @as(isize, @intCast(i)) * rs)[0] else 0;
                        }
                    }
                }
            }
        }

        /// Packs a kc×nc block of B into NR-column panels, each k-major (NR values per k), columns past nc
        /// zero.
        pub fn packB(kc: usize, nc: usize, src: [*]const f32, rs: isize, cs: isize, dst: [*]T) void {
            var jr: usize = 0;
            while (jr < nc) : (jr += nr) {
                const cols = @min(nr, nc - jr);
                const panel = dst + jr * kc;
                const base = offsetBy([*]const f32, src, @as(isize, @intCast(jr)) * cs);
                if (cols == nr and cs == 1) {
                    for (0..kc) |p| {
                        const row = offsetBy([*]const f32, base, @as(isize, @intCast(p)) * rs);
                        inline for (0..nv) |j| {
                            const v: V32 = row[j * lanes ..][0..lanes].*;
                            const w: V = if (exact) @floatCast(v) else v;
                            panel[p * nr + j * lanes ..][0..lanes].* = w;
                        }
                    }
                } else if (cols == nr and rs == 1) {
                    packTransposedPanel(kc, base, cs, panel);
                } else {
                    for (0..kc) |p| {
                        const row = offsetBy([*]const f32, base, @as(isize, @intCast(p)) * rs);
                        for (0..nr) |j| {
                            panel[p * nr + j] = if (j < cols) offsetBy([*]const f32, row, @as(isize, @intCast(j)) * cs)[0] else 0;
                        }
                    }
                }
            }
        }

        /// Packs one whole B panel whose k axis is contiguous (a transposed B, as in x·Wᵀ) by reading L values
        /// down each of L columns and transposing the L×L block in registers, so that each cache line of B is
        /// read whole, once, and only L columns stream at a time. (Reading across the columns one k at a time
        /// touches a line per column per k, and columns a multiple of 4 KiB apart fight over one L1 set: ten
        /// times slower.)
        fn packTransposedPanel(kc: usize, base: [*]const f32, cs: isize, panel: [*]T) void {
            const L = lanes32;
            const VL = @Vector(L, T);
            var jb: usize = 0;
            while (jb + L <= nr) : (jb += L) {
                var columns: [L][*]const f32 = undefined;
                inline for (0..L) |j| columns[j] = offsetBy([*]const f32, base, @as(isize, @intCast(jb + j)) * cs);
                var p: usize = 0;
                while (p + L <= kc) : (p += L) {
                    var block: [L]@Vector(L, f32) = undefined;
                    inline for (0..L) |j| block[j] = columns[j][p..][0..L].*;
                    // Kept out of line: inlined, LLVM turns the f32 shuffles and stores into scalar moves.
                    @call(.never_inline, transpose, .{ L, &block });
                    inline for (0..L) |q| {
                        const w: VL = if (exact) @floatCast(block[q]) else block[q];
                        panel[(p + q) * nr + jb ..][0..L].* = w;
                    }
                }
                for (p..kc) |q| {
                    inline for (0..L) |j| panel[q * nr + jb + j] = columns[j][q];
                }
            }
            // Columns past the last whole block, when NR is not a multiple of L.
            for (jb..nr) |j| {
                const column = offsetBy([*]const f32, base, @as(isize, @intCast(j)) * cs);
                for (0..kc) |q| panel[q * nr + j] = column[q];
            }
        }
    };
}

/// Products with at most this many rows stream B instead of packing it (when B's rows are contiguous).
pub const stream_max_rows = 4;

/// Bytes of the sums of C a streaming task keeps between rows of B: well inside L1, beside the rows of B
/// that pass through.
const stream_buffer_bytes = 16 << 10;

/// The streaming product C (m ≤ `stream_max_rows` rows) = A·B for a B whose rows are contiguous
/// (`cs_b == 1`): for each strip of columns, the strip's sums start at zero and take the rows of B in
/// ascending k, `unroll` rows at a time, each sum one `acc + a·b` per k. Every B element is read once.
pub fn Stream(comptime T: type) type {
    return struct {
        const lanes = vector_bytes / @sizeOf(T);
        const V = @Vector(lanes, T);
        const V32 = @Vector(lanes, f32);
        const buffer_elems = stream_buffer_bytes / @sizeOf(T);

        /// C = A·B for `p` (p.m ≤ stream_max_rows, p.cs_b == 1), on the calling thread.
        pub fn multiply(p: Problem) void {
            std.debug.assert(p.m >= 1 and p.m <= stream_max_rows and p.cs_b == 1);
            switch (p.m) {
                inline 1...stream_max_rows => |rows| multiplyRows(rows, p),
                else => unreachable,
            }
        }

        fn multiplyRows(comptime rows: usize, p: Problem) void {
            // B rows per step: each step reads and writes the strip's sums in L1 once, so more rows per step
            // leave more of the time to reading B (1×4096·4096² on Zen 4: 4 rows 2.8–3.1 ms, 8 rows 2.4–2.6).
            const unroll = if (rows <= 2) 8 else 4;
            const width_max = buffer_elems / rows / lanes * lanes;
            var sums: [buffer_elems]T align(64) = undefined;
            var j0: usize = 0;
            while (j0 < p.n) : (j0 += width_max) {
                const width = @min(width_max, p.n - j0);
                @memset(sums[0 .. rows * width], 0);
                const b = p.b + j0;
                var k: usize = 0;
                while (k + unroll <= p.k) : (k += unroll) step(rows, unroll, p, k, b, width, &sums);
                while (k < p.k) : (k += 1) step(rows, 1, p, k, b, width, &sums);
                for (0..rows) |i| {
                    const c = offsetBy([*]f32, p.c, @as(isize, @intCast(i)) * p.rs_c + @as(isize, @intCast(j0)) * p.cs_c);
                    for (0..width) |j| offsetBy([*]f32, c, @as(isize, @intCast(j)) * p.cs_c)[0] = @floatCast(sums[i * width + j]);
                }
            }
        }

        /// Adds rows k..k+count of B (strip of `width` columns from `b`) times A's columns k..k+count to
        /// the sums, in ascending k for every sum.
        inline fn step(comptime rows: usize, comptime count: usize, p: Problem, k: usize, b: [*]const f32, width: usize, sums: *[buffer_elems]T) void {
            var a: [rows][count]T = undefined;
            var b_rows: [count][*]const f32 = undefined;
            inline for (0..count) |u| {
                const kk: isize = @intCast(k + u);
                b_rows[u] = offsetBy([*]const f32, b, kk * p.rs_b);
                inline for (0..rows) |i| a[i][u] = offsetBy([*]const f32, p.a, @as(isize, i) * p.rs_a + kk * p.cs_a)[0];
            }
            var j: usize = 0;
            while (j + lanes <= width) : (j += lanes) {
                var bv: [count]V = undefined;
                inline for (0..count) |u| {
                    const v: V32 = b_rows[u][j..][0..lanes].*;
                    bv[u] = if (T == f32) v else @floatCast(v);
                }
                inline for (0..rows) |i| {
                    const dst = sums[i * width + j ..][0..lanes];
                    var acc: V = dst.*;
                    inline for (0..count) |u| acc = mulAdd(V, @splat(a[i][u]), bv[u], acc);
                    dst.* = acc;
                }
            }
            while (j < width) : (j += 1) {
                inline for (0..rows) |i| {
                    var acc = sums[i * width + j];
                    inline for (0..count) |u| acc = mulAdd(T, a[i][u], b_rows[u][j], acc);
                    sums[i * width + j] = acc;
                }
            }
        }
    };
}

/// Whether the product takes the streaming path: few rows, B's rows contiguous.
fn streams(batched: *const Batched) bool {
    return batched.m <= stream_max_rows and batched.strides[2][batched.batch_rank + 1] == 1;
}

/// f32 lanes in one vector register.
const lanes32 = vector_bytes / @sizeOf(f32);

/// Transposes an L×L block held as L row vectors in log2(L) rounds of two-vector shuffles: round w swaps the
/// off-diagonal w×w sub-blocks of every 2w×2w block.
pub fn transpose(comptime L: usize, rows: *[L]@Vector(L, f32)) void {
    comptime var w: usize = 1;
    inline while (w < L) : (w *= 2) {
        const low = comptime transposeMask(L, w, false);
        const high = comptime transposeMask(L, w, true);
        inline for (0..L) |i| {
            if (i & w == 0) {
                const a = rows[i];
                const b = rows[i + w];
                rows[i] = @shuffle(f32, a, b, low);
                rows[i + w] = @shuffle(f32, a, b, high);
            }
        }
    }
}

/// Lanes of row i (`upper` false) or row i+w (`upper` true) after round w: lanes whose bit w is clear come
/// from row i, the others from row i+w (negative indices select the second operand).
fn transposeMask(comptime L: usize, comptime w: usize, comptime upper: bool) @Vector(L, i32) {
    var mask: [L]i32 = undefined;
    for (0..L) |t| {
        const lane: i32 = @intCast(t);
        const width: i32 = @intCast(w);
        if (upper) {
            mask[t] = if (t & w == 0) lane + width else ~lane;
        } else {
            mask[t] = if (t & w == 0) lane else ~(lane - width);
        }
    }
    return mask;
}

pub fn roundUp(x: usize, multiple: usize) usize {
    return (x + multiple - 1) / multiple * multiple;
}

pub fn ceilDiv(x: usize, y: usize) usize {
    return (x + y - 1) / y;
}

/// How a batched matmul is split into work items (a batch entry's block of rows by block of columns) and
/// how the items are dealt to tasks: task t takes items t·items/tasks up to (t+1)·items/tasks.
pub const Plan = struct {
    m_step: usize,
    n_step: usize,
    m_parts: usize,
    n_parts: usize,
    items: usize,
    tasks: usize,

    /// Splits each matrix only as much as the threads need: none when the batch alone divides evenly or is
    /// large, else into threads/gcd(batch, threads) parts across its larger dimension, in whole tiles.
    pub fn init(batch: usize, m: usize, n: usize, k: usize, threads_wanted: usize, mr: usize, nr: usize) Plan {
        const macs = @as(u64, batch) *| m *| n *| k;
        const threads = if (macs < parallel_min_macs) 1 else threads_wanted;
        const parts = if (batch % threads == 0 or batch >= 4 * threads) 1 else threads / std.math.gcd(batch, threads);
        const m_tiles = ceilDiv(m, mr);
        const n_tiles = ceilDiv(n, nr);
        var m_parts: usize = 1;
        var n_parts: usize = 1;
        if (n_tiles >= m_tiles) {
            n_parts = @min(parts, n_tiles);
            m_parts = @min(ceilDiv(parts, n_parts), m_tiles);
        } else {
            m_parts = @min(parts, m_tiles);
            n_parts = @min(ceilDiv(parts, m_parts), n_tiles);
        }
        const m_step = roundUp(ceilDiv(m, m_parts), mr);
        const n_step = roundUp(ceilDiv(n, n_parts), nr);
        m_parts = ceilDiv(m, m_step);
        n_parts = ceilDiv(n, n_step);
        const items = batch * m_parts * n_parts;
        return .{
            .m_step = m_step,
            .n_step = n_step,
            .m_parts = m_parts,
            .n_parts = n_parts,
            .items = items,
            .tasks = @min(threads, items),
        };
    }

    /// The work items of task `task`: from the first to the end (exclusive), the same share for every task.
    pub fn taskItems(plan: Plan, task: usize) struct { usize, usize } {
        return .{ task * plan.items / plan.tasks, (task + 1) * plan.items / plan.tasks };
    }

    /// Work item `item` over matrices of m rows and n columns: its matrix, first row, rows, first column and
    /// columns.
    pub fn block(plan: Plan, item: usize, m: usize, n: usize) struct { usize, usize, usize, usize, usize } {
        const per_matrix = plan.m_parts * plan.n_parts;
        const m0 = item % per_matrix / plan.n_parts * plan.m_step;
        const n0 = item % plan.n_parts * plan.n_step;
        return .{ item / per_matrix, m0, @min(plan.m_step, m - m0), n0, @min(plan.n_step, n - n0) };
    }
};

/// The batch axes of a matmul and each operand's strides over them and over the matrix axes.
const Batched = struct {
    batch_rank: usize,
    batch_shape: [abi.max_rank]usize,
    /// Per operand (out, a, b): strides over the batch axes, then the two matrix axes.
    strides: [3][abi.max_rank]isize,
    offsets: [3]isize,
    m: usize,
    n: usize,
    k: usize,
    out: [*]f32,
    a: [*]const f32,
    b: [*]const f32,

    fn init(args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8, b: [*]const u8) Batched {
        const shape = args.shapeSlice();
        std.debug.assert(shape.len >= 2);
        std.debug.assert(args.ints[0] >= 0);
        var self: Batched = undefined;
        self.batch_rank = shape.len - 2;
        for (shape, 0..) |extent, axis| {
            std.debug.assert(extent >= 0);
            if (axis < self.batch_rank) self.batch_shape[axis] = @intCast(extent);
        }
        for (0..3) |k| {
            self.offsets[k] = args.operands[k].offset;
            for (0..shape.len) |axis| self.strides[k][axis] = args.operands[k].strides[axis];
        }
        self.m = @intCast(shape[shape.len - 2]);
        self.n = @intCast(shape[shape.len - 1]);
        self.k = @intCast(args.ints[0]);
        self.out = @ptrCast(@alignCast(out));
        self.a = @ptrCast(@alignCast(a));
        self.b = @ptrCast(@alignCast(b));
        self.foldBatchIntoRows();
        return self;
    }

    /// Merges trailing batch axes into M while B is the same matrix for every entry along them and the
    /// entries' rows of A and C continue each other's (x [N, T, I] · Wᵀ as one [N·T, I] product, not N
    /// products that each pack W again). Each output element keeps its sum of the same products in the same
    /// order, so exact results do not change.
    fn foldBatchIntoRows(self: *Batched) void {
        while (self.batch_rank > 0) {
            const axis = self.batch_rank - 1;
            const extent = self.batch_shape[axis];
            if (extent != 1) {
                if (self.strides[2][axis] != 0) return;
                for (0..2) |k| {
                    // One row per entry: the batch stride is the row stride of the merged axis.
                    if (self.m != 1 and self.strides[k][axis] != @as(isize, @intCast(self.m)) * self.strides[k][axis + 1]) return;
                }
                if (self.m == 1) for (0..2) |k| {
                    self.strides[k][axis + 1] = self.strides[k][axis];
                };
                self.m *= extent;
            }
            // The matrix axes move down over the merged batch axis.
            for (0..3) |k| {
                self.strides[k][axis] = self.strides[k][axis + 1];
                self.strides[k][axis + 1] = self.strides[k][axis + 2];
            }
            self.batch_rank -= 1;
        }
    }

    /// Whether computing Cᵀ = Bᵀ·Aᵀ wastes fewer lanes: edge tiles are cut to whole rows but only to whole
    /// vectors, so a narrow N (a matrix times a vector) is better done as a wide one. Each element is the same
    /// sum of the same products in the same order either way, so exact results do not change.
    fn transposeIsCheaper(self: *const Batched, lanes: usize) bool {
        return self.n * roundUp(self.m, lanes) < self.m * roundUp(self.n, lanes);
    }

    /// Turns the product into Cᵀ = Bᵀ·Aᵀ: only strides, pointers and extents move.
    fn transpose(self: *Batched) void {
        const r = self.batch_rank;
        std.mem.swap([abi.max_rank]isize, &self.strides[1], &self.strides[2]);
        std.mem.swap(isize, &self.offsets[1], &self.offsets[2]);
        for (&self.strides) |*strides| std.mem.swap(isize, &strides[r], &strides[r + 1]);
        std.mem.swap(usize, &self.m, &self.n);
        const a = self.a;
        self.a = self.b;
        self.b = a;
    }

    fn batchCount(self: *const Batched) usize {
        var count: usize = 1;
        for (self.batch_shape[0..self.batch_rank]) |extent| count *= extent;
        return count;
    }

    /// The matrix product of batch entry `index` (row-major over the batch axes).
    fn problem(self: *const Batched, index: usize) Problem {
        var offsets = self.offsets;
        var rest = index;
        var axis = self.batch_rank;
        while (axis > 0) {
            axis -= 1;
            const i: isize = @intCast(rest % self.batch_shape[axis]);
            rest /= self.batch_shape[axis];
            for (0..3) |k| offsets[k] += i * self.strides[k][axis];
        }
        const r = self.batch_rank;
        return .{
            .m = self.m,
            .n = self.n,
            .k = self.k,
            .c = offsetBy([*]f32, self.out, offsets[0]),
            .rs_c = self.strides[0][r],
            .cs_c = self.strides[0][r + 1],
            .a = offsetBy([*]const f32, self.a, offsets[1]),
            .rs_a = self.strides[1][r],
            .cs_a = self.strides[1][r + 1],
            .b = offsetBy([*]const f32, self.b, offsets[2]),
            .rs_b = self.strides[2][r],
            .cs_b = self.strides[2][r + 1],
        };
    }
};

/// A batched matmul split into tasks, each with its own workspace carved from one allocation.
fn Job(comptime T: type) type {
    return struct {
        const G = Gemm(T);
        batched: *const Batched,
        plan: Plan,
        region_bytes: [3]usize,
        memory: [*]u8,
        /// B packed beforehand (`executePacked`), or null.
        packed_b: ?[*]const T = null,

        fn taskBytes(job: *const @This()) usize {
            return job.region_bytes[0] + job.region_bytes[1] + job.region_bytes[2];
        }

        fn run(context: *anyopaque, task: u32) callconv(.c) void {
            const job: *const @This() = @ptrCast(@alignCast(context));
            const base = job.memory + task * job.taskBytes();
            var ws = G.workspaceAt(base, job.region_bytes, @min(job.plan.n_step, job.batched.n));
            ws.packed_b = job.packed_b;
            ws.packed_n = roundUp(job.batched.n, G.nr);
            const plan = job.plan;
            const first, const end = plan.taskItems(task);
            for (first..end) |item| {
                const whole = job.batched.problem(item / (plan.m_parts * plan.n_parts));
                _, const m0, const m, const n0, const n = plan.block(item, whole.m, whole.n);
                G.multiply(whole.sub(m0, m, n0, n), ws);
            }
        }

        fn execute(rt: *const table.Runtime, original: *const Batched, threads: usize) i32 {
            var oriented = original.*;
            if (!streams(&oriented) and oriented.transposeIsCheaper(G.lanes)) oriented.transpose();
            const batched = &oriented;
            if (streams(batched)) {
                executeStream(rt, batched, threads);
                return @intFromEnum(abi.Status.ok);
            }
            return executeBlocked(rt, batched, threads, null);
        }

        /// The blocked product, B packed per block from its operand or, when `packed_b` is given (one matrix,
        /// no batch axes, packed by `Gemm.packWhole`), read from it.
        fn executeBlocked(rt: *const table.Runtime, batched: *const Batched, threads: usize, packed_b: ?[*]const T) i32 {
            const plan = Plan.init(batched.batchCount(), batched.m, batched.n, batched.k, threads, G.mr, G.nr);
            var region_bytes = G.workspaceBytes(@min(plan.m_step, batched.m), @min(plan.n_step, batched.n), batched.k);
            if (packed_b != null) region_bytes[1] = 0;
            var job: @This() = .{
                .batched = batched,
                .plan = plan,
                .region_bytes = region_bytes,
                .memory = undefined,
                .packed_b = packed_b,
            };
            const lease = WorkspaceCache.acquire(plan.tasks * job.taskBytes()) orelse
                return @intFromEnum(abi.Status.out_of_memory);
            defer WorkspaceCache.release(lease);
            job.memory = lease.memory;
            if (plan.tasks == 1) {
                run(&job, 0);
            } else {
                rt.parallelFor(&job, @intCast(plan.tasks), @intCast(plan.tasks), run);
            }
            return @intFromEnum(abi.Status.ok);
        }

        /// The streaming product of every batch entry, split across threads by batch entry and, when the
        /// batch does not divide among the threads, by strips of columns (each strip its own sums, so the
        /// split changes no bits).
        fn executeStream(rt: *const table.Runtime, batched: *const Batched, threads: usize) void {
            const Context = struct {
                batched: *const Batched,
                plan: Plan,

                fn run(context: *anyopaque, task: u32) callconv(.c) void {
                    const self: *const @This() = @ptrCast(@alignCast(context));
                    const plan = self.plan;
                    const first, const end = plan.taskItems(task);
                    for (first..end) |item| {
                        const whole = self.batched.problem(item / plan.n_parts);
                        const n0 = item % plan.n_parts * plan.n_step;
                        Stream(T).multiply(whole.sub(0, whole.m, n0, @min(plan.n_step, whole.n - n0)));
                    }
                }
            };
            // Column strips in whole cache lines, so that two threads never write one line of C.
            const strip = 64 / @sizeOf(f32);
            var context: Context = .{
                .batched = batched,
                .plan = Plan.init(batched.batchCount(), batched.m, batched.n, batched.k, threads, batched.m, strip),
            };
            std.debug.assert(context.plan.m_parts == 1);
            if (context.plan.tasks == 1) {
                Context.run(&context, 0);
            } else {
                rt.parallelFor(&context, @intCast(context.plan.tasks), @intCast(context.plan.tasks), Context.run);
            }
        }
    };
}

/// The packing memory, kept from one call to the next: a fresh allocation of a few megabytes costs a page
/// fault per 4 KiB on first touch, about 5% of a 1024³ product. One caller at a time uses the kept block;
/// a concurrent caller (another JS worker) or a request above `max_kept_bytes` gets memory of its own.
pub const WorkspaceCache = struct {
    const max_kept_bytes = 64 << 20;
    var busy: std.atomic.Value(bool) = .init(false);
    var kept: ?[*]align(aligned.alignment) u8 = null;
    var kept_bytes: usize = 0;

    const Lease = struct { memory: [*]align(aligned.alignment) u8, bytes: usize, cached: bool };

    pub fn acquire(bytes_wanted: usize) ?Lease {
        const bytes = @max(64, bytes_wanted);
        if (bytes <= max_kept_bytes and busy.cmpxchgStrong(false, true, .acquire, .monotonic) == null) {
            if (kept_bytes < bytes) {
                if (kept) |old| aligned.free(old, kept_bytes);
                kept = aligned.alloc(bytes);
                kept_bytes = if (kept == null) 0 else bytes;
            }
            if (kept) |memory| return .{ .memory = memory, .bytes = kept_bytes, .cached = true };
            busy.store(false, .release);
            return null;
        }
        return .{ .memory = aligned.alloc(bytes) orelse return null, .bytes = bytes, .cached = false };
    }

    pub fn release(lease: Lease) void {
        if (lease.cached) busy.store(false, .release) else aligned.free(lease.memory, lease.bytes);
    }
};

/// Batched matmul. `args.shape` is the output's `[...batch, M, N]` (rank ≥ 2) and `args.ints[0]` is K;
/// operands 0, 1, 2 are out `[...batch, M, N]`, a `[...batch, M, K]` and b `[...batch, K, N]`, with any
/// strides (0 broadcasts a batch axis). `args.mode` 0 is fast, 1 exact; `args.threads` caps the threads.
/// Returns `Status.out_of_memory` if the packing buffers cannot be allocated, having written nothing.
pub fn matmulF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8, b: [*]const u8) callconv(.c) i32 {
    const batched = Batched.init(args, out, a, b);
    if (batched.batchCount() == 0 or batched.m == 0 or batched.n == 0) return @intFromEnum(abi.Status.ok);
    if (batched.k == 0) {
        zeroFill(&batched);
        return @intFromEnum(abi.Status.ok);
    }
    const threads: usize = @intCast(@max(1, args.threads));
    return if (args.mode == 1) Job(f64).execute(rt, &batched, threads) else Job(f32).execute(rt, &batched, threads);
}

/// The panel width NR of a B packed for `mode` (0 fast, 1 exact) on this ISA: a packed k×n B holds
/// roundUp(n, NR)·k values of 4 (fast) or 8 (exact) bytes.
pub fn packedPanel(mode: i32) callconv(.c) i32 {
    return @intCast(if (mode == 1) Gemm(f64).nr else Gemm(f32).nr);
}

/// Packs b [K, N] once for many products with `matmulPackedF32`. `args.shape` is [K, N] (both ≥ 1),
/// operand 0 b's offset and strides, `args.mode` the mode the products will run in (exact mode packs f64
/// values); `packed_b` holds `packedPanel`'s roundUp(N, NR)·K values, 64-byte aligned.
pub fn packBF32(args: *const abi.ArgBlock, packed_b: [*]u8, b: [*]const u8) callconv(.c) void {
    std.debug.assert(args.rank == 2 and args.shape[0] >= 1 and args.shape[1] >= 1);
    const k: usize = @intCast(args.shape[0]);
    const n: usize = @intCast(args.shape[1]);
    const src = offsetBy([*]const f32, @ptrCast(@alignCast(b)), args.operands[0].offset);
    const rs = args.operands[0].strides[0];
    const cs = args.operands[0].strides[1];
    if (args.mode == 1) {
        Gemm(f64).packWhole(k, n, src, rs, cs, @ptrCast(@alignCast(packed_b)));
    } else {
        Gemm(f32).packWhole(k, n, src, rs, cs, @ptrCast(@alignCast(packed_b)));
    }
}

/// out [M, N] = a [M, K] · B, with B packed by `packBF32` in the same mode. `args.shape` is [M, N] (both
/// ≥ 1), `args.ints[0]` K (≥ 1, the packed B's), operands 0 and 1 out and a; the same sums in the same
/// order as `matmulF32`, so exact results are its bits. Returns `Status.out_of_memory` before writing.
pub fn matmulPackedF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8, packed_b: [*]const u8) callconv(.c) i32 {
    std.debug.assert(args.rank == 2 and args.shape[0] >= 1 and args.shape[1] >= 1 and args.ints[0] >= 1);
    var batched = Batched.init(args, out, a, packed_b);
    batched.strides[2][0] = 0;
    batched.strides[2][1] = 0;
    batched.offsets[2] = 0;
    const threads: usize = @intCast(@max(1, args.threads));
    if (args.mode == 1) return Job(f64).executeBlocked(rt, &batched, threads, @ptrCast(@alignCast(packed_b)));
    return Job(f32).executeBlocked(rt, &batched, threads, @ptrCast(@alignCast(packed_b)));
}

/// An empty sum is +0 in both modes.
fn zeroFill(batched: *const Batched) void {
    for (0..batched.batchCount()) |index| {
        const p = batched.problem(index);
        for (0..p.m) |i| for (0..p.n) |j| {
            offsetBy([*]f32, p.c, @as(isize, @intCast(i)) * p.rs_c + @as(isize, @intCast(j)) * p.cs_c)[0] = 0;
        };
    }
}

// --- tests ---

const testing = std.testing;

/// A serial runtime for the tests of this file: tasks run in order on the calling thread.
const serial_runtime: table.Runtime = .{ .parallel_for = serialFor };

fn serialFor(context: *anyopaque, tasks: u32, threads: u32, task: table.TaskFn) callconv(.c) void {
    _ = threads;
    for (0..tasks) |i| task(context, @intCast(i));
}

/// The reference: f64 sums in ascending k, rounded once.
fn referenceProduct(m: usize, n: usize, k: usize, a: []const f32, rs_a: isize, cs_a: isize, a0: isize, b: []const f32, rs_b: isize, cs_b: isize, b0: isize, out: []f32) void {
    for (0..m) |i| for (0..n) |j| {
        var sum: f64 = 0;
        for (0..k) |p| {
            const ia = a0 + @as(isize, @intCast(i)) * rs_a + @as(isize, @intCast(p)) * cs_a;
            const ib = b0 + @as(isize, @intCast(p)) * rs_b + @as(isize, @intCast(j)) * cs_b;
            sum += @as(f64, a[@intCast(ia)]) * @as(f64, b[@intCast(ib)]);
        }
        out[i * n + j] = @floatCast(sum);
    };
}

fn fillRandom(random: std.Random, data: []f32) void {
    for (data) |*x| x.* = random.float(f32) * 2 - 1;
}

const Layout = enum { row_major, transposed, reversed };

/// Strides and offset of an r×c matrix stored in a buffer of r·c elements.
fn layoutOf(layout: Layout, rows: usize, cols: usize) struct { rs: isize, cs: isize, offset: isize } {
    const r: isize = @intCast(rows);
    const c: isize = @intCast(cols);
    return switch (layout) {
        .row_major => .{ .rs = c, .cs = 1, .offset = 0 },
        .transposed => .{ .rs = 1, .cs = r, .offset = 0 },
        // Rows and columns both reversed: the last element of the buffer comes first.
        .reversed => .{ .rs = -c, .cs = -1, .offset = @max(0, r * c - 1) },
    };
}

fn runCase(m: usize, n: usize, k: usize, layout_a: Layout, layout_b: Layout, mode: i32, threads: i32, rt: *const table.Runtime) !void {
    var prng = std.Random.DefaultPrng.init(m * 1_000_003 + n * 1009 + k);
    const a = try testing.allocator.alloc(f32, m * k);
    defer testing.allocator.free(a);
    const b = try testing.allocator.alloc(f32, k * n);
    defer testing.allocator.free(b);
    const out = try testing.allocator.alloc(f32, m * n);
    defer testing.allocator.free(out);
    const expected = try testing.allocator.alloc(f32, m * n);
    defer testing.allocator.free(expected);
    fillRandom(prng.random(), a);
    fillRandom(prng.random(), b);
    @memset(out, std.math.nan(f32));
    const la = layoutOf(layout_a, m, k);
    const lb = layoutOf(layout_b, k, n);
    referenceProduct(m, n, k, a, la.rs, la.cs, la.offset, b, lb.rs, lb.cs, lb.offset, expected);

    var args: abi.ArgBlock = std.mem.zeroes(abi.ArgBlock);
    args.rank = 2;
    args.shape[0] = @intCast(m);
    args.shape[1] = @intCast(n);
    args.ints[0] = @intCast(k);
    args.mode = mode;
    args.threads = threads;
    args.operands[0] = .{ .offset = 0, .strides = .{ @intCast(n), 1, 0, 0, 0, 0, 0, 0 } };
    args.operands[1] = .{ .offset = @intCast(la.offset), .strides = .{ @intCast(la.rs), @intCast(la.cs), 0, 0, 0, 0, 0, 0 } };
    args.operands[2] = .{ .offset = @intCast(lb.offset), .strides = .{ @intCast(lb.rs), @intCast(lb.cs), 0, 0, 0, 0, 0, 0 } };
    const status = matmulF32(rt, &args, @ptrCast(out.ptr), @ptrCast(a.ptr), @ptrCast(b.ptr));
    try testing.expectEqual(@as(i32, 0), status);
    try expectProduct(expected, out, k, mode);

    // The same product with B packed once beforehand.
    const nr: usize = @intCast(packedPanel(mode));
    const packed_b = try testing.allocator.alignedAlloc(f64, .@"64", roundUp(n, nr) * k);
    defer testing.allocator.free(packed_b);
    var pack_args = args;
    pack_args.shape[0] = @intCast(k);
    pack_args.shape[1] = @intCast(n);
    pack_args.operands[0] = args.operands[2];
    packBF32(&pack_args, @ptrCast(packed_b.ptr), @ptrCast(b.ptr));
    @memset(out, std.math.nan(f32));
    args.operands[2] = .{ .offset = 0, .strides = @splat(0) };
    try testing.expectEqual(@as(i32, 0), matmulPackedF32(rt, &args, @ptrCast(out.ptr), @ptrCast(a.ptr), @ptrCast(packed_b.ptr)));
    try expectProduct(expected, out, k, mode);
}

fn expectProduct(expected: []const f32, out: []const f32, k: usize, mode: i32) !void {
    for (expected, out) |want, got| {
        if (mode == 1) {
            try testing.expectEqual(@as(u32, @bitCast(want)), @as(u32, @bitCast(got)));
        } else {
            // |a|,|b| < 1, so Σ|a_k b_k| < k: the fast sum is within k·2^-23·k of the exact one.
            const bound = @as(f32, @floatFromInt(k * k + 1)) * std.math.floatEps(f32);
            try testing.expect(@abs(want - got) <= bound);
        }
    }
}

fn edgeSizes(comptime T: type) [7]usize {
    const sizes = blocking(T);
    const mr = sizes.mr;
    const nr = sizes.nv * vector_bytes / @sizeOf(T);
    return .{ 1, mr - 1, mr, mr + 1, nr - 1, nr + 1, 2 * nr + 3 };
}

test "exact matmul equals the f64 reference bit for bit around tile edges, for every layout" {
    for (edgeSizes(f64)) |m| for (edgeSizes(f64)) |n| for ([_]usize{ 1, 2, 7, 33 }) |k| {
        inline for (.{ Layout.row_major, Layout.transposed, Layout.reversed }) |la| {
            try runCase(m, n, k, la, .row_major, 1, 1, &serial_runtime);
            try runCase(m, n, k, .row_major, la, 1, 1, &serial_runtime);
        }
    };
}

test "exact matmul keeps its bits across KC, MC and NC block edges and thread counts" {
    const sizes = blocking(f64);
    const lanes = vector_bytes / @sizeOf(f64);
    const k_edges = [_]usize{ sizes.kc - 1, sizes.kc, sizes.kc + 1, 2 * sizes.kc + 5 };
    for (k_edges) |k| try runCase(sizes.mr + 3, 2 * sizes.nv * lanes + 1, k, .row_major, .transposed, 1, 1, &serial_runtime);
    try runCase(sizes.mc + 5, sizes.nc + 7, sizes.kc + 9, .transposed, .row_major, 1, 1, &serial_runtime);
    const ThreadPool = @import("../ThreadPool.zig");
    for ([_]i32{ 1, 2, 3, 4 }) |threads| {
        try runCase(150, 97, 300, .row_major, .row_major, 1, threads, &ThreadPool.runtime);
        try runCase(7, 300, 513, .reversed, .transposed, 1, threads, &ThreadPool.runtime);
    }
}

test "the streaming path for a few rows gives the exact bits on 1 to 4 threads and stays within the fast bound" {
    const ThreadPool = @import("../ThreadPool.zig");
    // Widths around a vector, and past the strip of sums one task keeps (2048 f64 sums for one row).
    for (1..stream_max_rows + 1) |m| for ([_]usize{ 1, 7, 9, 33, 4100 }) |n| for ([_]usize{ 1, 3, 6, 257 }) |k| {
        inline for (.{ Layout.row_major, Layout.transposed, Layout.reversed }) |la| {
            try runCase(m, n, k, la, .row_major, 1, 1, &serial_runtime);
            try runCase(m, n, k, la, .row_major, 0, 1, &serial_runtime);
        }
    };
    for ([_]i32{ 1, 2, 3, 4 }) |threads| {
        try runCase(1, 3000, 700, .row_major, .row_major, 1, threads, &ThreadPool.runtime);
        try runCase(3, 1500, 900, .transposed, .row_major, 1, threads, &ThreadPool.runtime);
        try runCase(2, 1500, 900, .row_major, .row_major, 0, threads, &ThreadPool.runtime);
    }
}

test "fast matmul stays within its bound around tile and block edges" {
    for (edgeSizes(f32)) |m| for (edgeSizes(f32)) |n| {
        try runCase(m, n, 17, .row_major, .row_major, 0, 1, &serial_runtime);
        try runCase(m, n, 5, .transposed, .reversed, 0, 1, &serial_runtime);
    };
    const sizes = blocking(f32);
    try runCase(sizes.mc + 1, sizes.nc + 1, sizes.kc + 1, .row_major, .row_major, 0, 1, &serial_runtime);
    const ThreadPool = @import("../ThreadPool.zig");
    try runCase(200, 130, 600, .row_major, .transposed, 0, 3, &ThreadPool.runtime);
}

test "K = 0 writes zeros and an empty output writes nothing" {
    var out = [_]f32{ 5, 5, 5, 5, 5, 5 };
    const a = [_]f32{0};
    var args: abi.ArgBlock = std.mem.zeroes(abi.ArgBlock);
    args.rank = 3;
    args.shape = .{ 1, 2, 3, 0, 0, 0, 0, 0 };
    args.operands[0] = .{ .offset = 0, .strides = .{ 6, 3, 1, 0, 0, 0, 0, 0 } };
    for ([_]i32{ 0, 1 }) |mode| {
        args.mode = mode;
        try testing.expectEqual(@as(i32, 0), matmulF32(&serial_runtime, &args, @ptrCast(&out), @ptrCast(&a), @ptrCast(&a)));
        for (out) |x| try testing.expectEqual(@as(u32, 0), @as(u32, @bitCast(x)));
    }
    out[0] = 5;
    args.shape[0] = 0;
    args.ints[0] = 4;
    try testing.expectEqual(@as(i32, 0), matmulF32(&serial_runtime, &args, @ptrCast(&out), @ptrCast(&a), @ptrCast(&a)));
    try testing.expectEqual(@as(f32, 5), out[0]);
}

test "a broadcast batch axis reuses one operand for every entry" {
    // out[b] = a[b] · w for b in 0..3, with w shared (batch stride 0).
    const m = 5;
    const n = 9;
    const k = 11;
    var prng = std.Random.DefaultPrng.init(7);
    var a: [3 * m * k]f32 = undefined;
    var w: [k * n]f32 = undefined;
    var out: [3 * m * n]f32 = undefined;
    fillRandom(prng.random(), &a);
    fillRandom(prng.random(), &w);
    var args: abi.ArgBlock = std.mem.zeroes(abi.ArgBlock);
    args.rank = 3;
    args.shape = .{ 3, m, n, 0, 0, 0, 0, 0 };
    args.ints[0] = k;
    args.mode = 1;
    args.threads = 2;
    args.operands[0] = .{ .offset = 0, .strides = .{ m * n, n, 1, 0, 0, 0, 0, 0 } };
    args.operands[1] = .{ .offset = 0, .strides = .{ m * k, k, 1, 0, 0, 0, 0, 0 } };
    args.operands[2] = .{ .offset = 0, .strides = .{ 0, n, 1, 0, 0, 0, 0, 0 } };
    try testing.expectEqual(@as(i32, 0), matmulF32(&serial_runtime, &args, @ptrCast(&out), @ptrCast(&a), @ptrCast(&w)));
    var expected: [m * n]f32 = undefined;
    for (0..3) |batch| {
        referenceProduct(m, n, k, a[batch * m * k ..][0 .. m * k], k, 1, 0, &w, n, 1, 0, &expected);
        for (expected, out[batch * m * n ..][0 .. m * n]) |want, got| {
            try testing.expectEqual(@as(u32, @bitCast(want)), @as(u32, @bitCast(got)));
        }
    }
}

test "batch axes fold into M only where B is shared and the rows of A and C continue across entries" {
    const Case = struct { shape: [4]i32, a: [4]i32, b: [4]i32, folded_rank: usize, m: usize, rs_a: isize };
    const cases = [_]Case{
        // [2, 3, 5, 4] · [4, 7], contiguous: one [30, 4] product.
        .{ .shape = .{ 2, 3, 5, 7 }, .a = .{ 60, 20, 4, 1 }, .b = .{ 0, 0, 7, 1 }, .folded_rank = 0, .m = 30, .rs_a = 4 },
        // A's entries padded apart: nothing folds.
        .{ .shape = .{ 2, 3, 5, 7 }, .a = .{ 96, 32, 4, 1 }, .b = .{ 0, 0, 7, 1 }, .folded_rank = 2, .m = 5, .rs_a = 4 },
        // B differs along the inner batch axis: nothing folds.
        .{ .shape = .{ 2, 3, 5, 7 }, .a = .{ 60, 20, 4, 1 }, .b = .{ 0, 28, 7, 1 }, .folded_rank = 2, .m = 5, .rs_a = 4 },
        // One row per entry, its row stride unused: the batch stride becomes the row stride; a size-1
        // axis in between goes whatever its strides.
        .{ .shape = .{ 6, 1, 1, 7 }, .a = .{ 8, 99, 3, 1 }, .b = .{ 0, 5, 7, 1 }, .folded_rank = 0, .m = 6, .rs_a = 8 },
    };
    for (cases) |case| {
        var args: abi.ArgBlock = std.mem.zeroes(abi.ArgBlock);
        args.rank = 4;
        @memcpy(args.shape[0..4], &case.shape);
        args.ints[0] = 4;
        const m: i32 = case.shape[2];
        args.operands[0] = .{ .offset = 0, .strides = .{ case.shape[1] * m * 7, m * 7, 7, 1, 0, 0, 0, 0 } };
        args.operands[1] = .{ .offset = 0, .strides = .{ case.a[0], case.a[1], case.a[2], case.a[3], 0, 0, 0, 0 } };
        args.operands[2] = .{ .offset = 0, .strides = .{ case.b[0], case.b[1], case.b[2], case.b[3], 0, 0, 0, 0 } };
        var dummy: [1]f32 = .{0};
        const batched = Batched.init(&args, @ptrCast(&dummy), @ptrCast(&dummy), @ptrCast(&dummy));
        try testing.expectEqual(case.folded_rank, batched.batch_rank);
        try testing.expectEqual(case.m, batched.m);
        const r = batched.batch_rank;
        try testing.expectEqual(case.rs_a, batched.strides[1][r]);
        try testing.expectEqual(@as(isize, 1), batched.strides[1][r + 1]);
        try testing.expectEqual(@as(isize, 7), batched.strides[2][r]);
    }
}

test "the register transpose transposes, at every width the variants use" {
    inline for (.{ 2, 4, 8, 16 }) |L| {
        var rows: [L]@Vector(L, f32) = undefined;
        for (0..L) |i| {
            var row: [L]f32 = undefined;
            for (0..L) |t| row[t] = @floatFromInt(100 * i + t);
            rows[i] = row;
        }
        transpose(L, &rows);
        for (0..L) |i| {
            const row: [L]f32 = rows[i];
            for (0..L) |t| try testing.expectEqual(@as(f32, @floatFromInt(100 * t + i)), row[t]);
        }
    }
}

test "the plan splits the larger dimension only as far as the threads need" {
    // 74 row tiles against 32 column tiles: the rows are split.
    const one = Plan.init(1, 1024, 1024, 1024, 2, 14, 32);
    try testing.expectEqual(@as(usize, 2), one.tasks);
    try testing.expectEqual(@as(usize, 2), one.m_parts);
    try testing.expectEqual(@as(usize, 1), one.n_parts);
    try testing.expectEqual(@as(usize, 518), one.m_step);
    const wide = Plan.init(1, 64, 4096, 512, 2, 6, 16);
    try testing.expectEqual(@as(usize, 2), wide.n_parts);
    try testing.expectEqual(@as(usize, 2048), wide.n_step);
    const batched = Plan.init(8, 64, 64, 64, 4, 6, 16);
    try testing.expectEqual(@as(usize, 1), batched.m_parts * batched.n_parts);
    try testing.expectEqual(@as(usize, 4), batched.tasks);
    const uneven = Plan.init(3, 600, 100, 600, 2, 6, 16);
    try testing.expectEqual(@as(usize, 6), uneven.items);
    const tiny = Plan.init(1, 4, 4, 4, 8, 6, 16);
    try testing.expectEqual(@as(usize, 1), tiny.tasks);
}

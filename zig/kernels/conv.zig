//! The window movements of convolution over NCHW images: im2col (the windows of an image as columns
//! [N, C, KH, KW, OH, OW], zeros where a tap falls in the padding) and col2im (its adjoint: columns summed back
//! into an image). Tap (ky, kx) of output (oy, ox) reads image position (oy·strideH − padH + ky·dilationH,
//! ox·strideW − padW + kx·dilationW). im2col only moves values; col2im starts each image element at +0 and
//! adds its taps in ascending (ky, kx) order, one f32 addition each, so both are the same bits in both modes,
//! on every ISA and for any thread count (threads split whole (n, c) rows or planes, never one element's sum).
//!
//! Argument block: shape [N, C, KH, KW, OH, OW]; args.op 0 im2col (operand 0 the columns' strides over the six
//! axes, operand 1 the image's over N, C, H, W), 1 col2im (operand 0 the image's, operand 1 the columns');
//! ints: strideH, strideW, padH, padW, dilationH, dilationW, H, W.
//!
//! `productF32` is convolution as an implicit GEMM: the same windows, never stored, packed from the image
//! straight into the panels of `gemm.zig` (`Gemm.multiplyFrom`), for the forward pass and for each image's
//! weight gradient; the sums are the matmul's, so exact mode equals im2col followed by the matmul. Stride-1
//! products (the forward, the input gradient, the weight gradient of most layers) first copy each image into a
//! zero-padded plane per channel (`Padded`), so that the windows' rows are plain runs of memory: packing a B
//! row is a few vector copies, without bounds or divisions (`DirectJob`).
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const ew = @import("elementwise.zig");
const gemm = @import("gemm.zig");

/// im2col or col2im (args.op 0 or 1); operands 0 and 1 are out and a.
pub const FoldFn = *const fn (rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8) callconv(.c) void;

const Geometry = struct {
    n: usize,
    c: usize,
    kernel: [2]usize,
    output: [2]usize,
    stride: [2]isize,
    pad: [2]isize,
    dilation: [2]isize,
    size: [2]isize,

    fn fromArgs(args: *const abi.ArgBlock) Geometry {
        const s = args.shape;
        const i = args.ints;
        return .{
            .n = @intCast(s[0]),
            .c = @intCast(s[1]),
            .kernel = .{ @intCast(s[2]), @intCast(s[3]) },
            .output = .{ @intCast(s[4]), @intCast(s[5]) },
            .stride = .{ i[0], i[1] },
            .pad = .{ i[2], i[3] },
            .dilation = .{ i[4], i[5] },
            .size = .{ i[6], i[7] },
        };
    }

    /// The outputs [lo, hi) along `axis` whose tap `k` lands inside the image (lo ≤ hi).
    fn valid(g: *const Geometry, axis: usize, k: usize) [2]usize {
        const shift = @as(isize, @intCast(k)) * g.dilation[axis] - g.pad[axis];
        const out: isize = @intCast(g.output[axis]);
        // The first o with o·stride + shift ≥ 0, and the first with o·stride + shift ≥ size.
        const lo = std.math.clamp(divCeil(-shift, g.stride[axis]), 0, out);
        const hi = std.math.clamp(divCeil(g.size[axis] - shift, g.stride[axis]), lo, out);
        return .{ @intCast(lo), @intCast(hi) };
    }

    /// The image coordinate of output `o`, tap `k` along `axis`.
    inline fn source(g: *const Geometry, axis: usize, o: usize, k: usize) isize {
        return @as(isize, @intCast(o)) * g.stride[axis] - g.pad[axis] + @as(isize, @intCast(k)) * g.dilation[axis];
    }
};

fn divCeil(a: isize, b: isize) isize {
    return -@divFloor(-a, b);
}

inline fn offset(operand: *const abi.Operand, index: []const usize) isize {
    var at: isize = operand.offset;
    for (index, 0..) |i, axis| at += @as(isize, @intCast(i)) * operand.strides[axis];
    return at;
}

const Unfold = struct {
    g: Geometry,
    cols_op: *const abi.Operand,
    image_op: *const abi.Operand,
    cols: [*]f32,
    image: [*]const f32,

    /// Column rows (n, c, ky, kx) `first..end`, in the flat order of [N, C, KH, KW].
    pub fn range(u: *const Unfold, first: usize, end: usize) void {
        const g = &u.g;
        const cs = u.cols_op.strides;
        const xs = u.image_op.strides;
        for (first..end) |r| {
            const kx = r % g.kernel[1];
            const ky = (r / g.kernel[1]) % g.kernel[0];
            const c = (r / g.kernel[1] / g.kernel[0]) % g.c;
            const n = r / g.kernel[1] / g.kernel[0] / g.c;
            const row = offset(u.cols_op, &.{ n, c, ky, kx });
            const plane = offset(u.image_op, &.{ n, c });
            const ys = g.valid(0, ky);
            const xr = g.valid(1, kx);
            for (0..g.output[0]) |oy| {
                const out_row = row + @as(isize, @intCast(oy)) * cs[4];
                const inside = oy >= ys[0] and oy < ys[1];
                const lo = if (inside) xr[0] else g.output[1];
                const hi = if (inside) xr[1] else g.output[1];
                for (0..lo) |ox| ew.at([*]f32, u.cols, out_row + @as(isize, @intCast(ox)) * cs[5])[0] = 0;
                if (inside) {
                    const in_row = plane + g.source(0, oy, ky) * xs[2];
                    const step = g.stride[1] * xs[3];
                    var from = in_row + g.source(1, lo, kx) * xs[3];
                    if (cs[5] == 1 and step == 1) {
                        const dst = ew.at([*]f32, u.cols, out_row + @as(isize, @intCast(lo)));
                        const src = ew.at([*]const f32, u.image, from);
                        @memcpy(dst[0 .. hi - lo], src[0 .. hi - lo]);
                    } else {
                        for (lo..hi) |ox| {
                            ew.at([*]f32, u.cols, out_row + @as(isize, @intCast(ox)) * cs[5])[0] = ew.at([*]const f32, u.image, from)[0];
                            from += step;
                        }
                    }
                }
                for (hi..g.output[1]) |ox| ew.at([*]f32, u.cols, out_row + @as(isize, @intCast(ox)) * cs[5])[0] = 0;
            }
        }
    }
};

const Fold = struct {
    g: Geometry,
    image_op: *const abi.Operand,
    cols_op: *const abi.Operand,
    image: [*]f32,
    cols: [*]const f32,

    /// Image planes (n, c) `first..end`, in the flat order of [N, C].
    pub fn range(f: *const Fold, first: usize, end: usize) void {
        const g = &f.g;
        const cs = f.cols_op.strides;
        const xs = f.image_op.strides;
        const h: usize = @intCast(g.size[0]);
        const w: usize = @intCast(g.size[1]);
        for (first..end) |p| {
            const c = p % g.c;
            const n = p / g.c;
            const plane = offset(f.image_op, &.{ n, c });
            for (0..h) |y| {
                const row = plane + @as(isize, @intCast(y)) * xs[2];
                if (xs[3] == 1) {
                    @memset(ew.at([*]f32, f.image, row)[0..w], 0);
                } else {
                    for (0..w) |x| ew.at([*]f32, f.image, row + @as(isize, @intCast(x)) * xs[3])[0] = 0;
                }
            }
            for (0..g.kernel[0]) |ky| {
                const ys = g.valid(0, ky);
                for (0..g.kernel[1]) |kx| {
                    const xr = g.valid(1, kx);
                    const tap = offset(f.cols_op, &.{ n, c, ky, kx });
                    const step = g.stride[1] * xs[3];
                    for (ys[0]..ys[1]) |oy| {
                        const src_row = tap + @as(isize, @intCast(oy)) * cs[4];
                        var to = plane + g.source(0, oy, ky) * xs[2] + g.source(1, xr[0], kx) * xs[3];
                        for (xr[0]..xr[1]) |ox| {
                            const dst = ew.at([*]f32, f.image, to);
                            dst[0] += ew.at([*]const f32, f.cols, src_row + @as(isize, @intCast(ox)) * cs[5])[0];
                            to += step;
                        }
                    }
                }
            }
        }
    }
};

/// `zt_conv_fold_f32`: see the file comment for the argument block. Assumes validated geometry (positive
/// strides and dilations, output extents that fit the operands).
pub fn foldF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8) callconv(.c) void {
    std.debug.assert(args.rank == 6);
    const g = Geometry.fromArgs(args);
    const taps = g.kernel[0] * g.kernel[1];
    const per_plane = taps * g.output[0] * g.output[1];
    if (g.n * g.c == 0) return;
    if (args.op == 0) {
        if (per_plane == 0) return;
        const work: Unfold = .{
            .g = g,
            .cols_op = &args.operands[0],
            .image_op = &args.operands[1],
            .cols = @ptrCast(@alignCast(out)),
            .image = @ptrCast(@alignCast(a)),
        };
        const per_row = g.output[0] * g.output[1];
        ew.parallelRange(rt, args.threads, g.n * g.c * taps, @max(2, ew.parallel_min_elements / @max(1, per_row)), 1, &work);
    } else {
        const work: Fold = .{
            .g = g,
            .image_op = &args.operands[0],
            .cols_op = &args.operands[1],
            .image = @ptrCast(@alignCast(out)),
            .cols = @ptrCast(@alignCast(a)),
        };
        const cost = per_plane + @as(usize, @intCast(g.size[0] * g.size[1]));
        ew.parallelRange(rt, args.threads, g.n * g.c, @max(2, ew.parallel_min_elements / @max(1, cost)), 1, &work);
    }
}

/// A convolution's implicit product (args.op 0 forward, 1 weight gradient); operands 0, 1, 2 are out, a and
/// the image.
pub const ProductFn = *const fn (rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8, image: [*]const u8) callconv(.c) i32;

/// The stride of axes with `extents` and `strides` read as one flat axis, or null when they do not flatten
/// (extent-1 axes are skipped; an empty or all-1 run flattens with stride 1).
fn flatStride(extents: []const usize, strides: []const i32) ?isize {
    var inner: ?isize = null;
    var span: isize = 1;
    var axis = extents.len;
    while (axis > 0) {
        axis -= 1;
        if (extents[axis] == 1) continue;
        const s: isize = strides[axis];
        if (inner) |step| {
            if (s != step * span) return null;
        } else inner = s;
        span *= @intCast(extents[axis]);
    }
    return inner orelse 1;
}

/// The column matrix of one image and group, never stored: element (k, p) with k = (c, ky, kx) over the
/// group's channels and p = (oy, ox) is im2col's column value (zero in the padding).
const Windows = struct {
    g: Geometry,
    image: [*]const f32,
    xs: [4]isize,
    /// The image offset of the group's first channel of image n.
    plane: isize,

    const Tap = struct { base: isize, ky: usize, kx: usize, ys: [2]usize, xr: [2]usize };

    fn tap(w: *const Windows, k: usize) Tap {
        const g = &w.g;
        const kx = k % g.kernel[1];
        const ky = (k / g.kernel[1]) % g.kernel[0];
        const c = k / g.kernel[1] / g.kernel[0];
        return .{ .base = w.plane + @as(isize, @intCast(c)) * w.xs[1], .ky = ky, .kx = kx, .ys = g.valid(0, ky), .xr = g.valid(1, kx) };
    }

    /// Writes elements (k, p0..p0 + count) of tap `t`'s row to dst[j·step], converted to T.
    fn row(w: *const Windows, comptime T: type, t: Tap, p0: usize, count: usize, dst: [*]T, step: usize) void {
        const g = &w.g;
        const ow = g.output[1];
        var oy = p0 / ow;
        var ox = p0 % ow;
        var j: usize = 0;
        while (j < count) {
            const seg = @min(ow - ox, count - j);
            const end = ox + seg;
            if (oy >= t.ys[0] and oy < t.ys[1]) {
                const lo = std.math.clamp(t.xr[0], ox, end);
                const hi = std.math.clamp(t.xr[1], lo, end);
                for (ox..lo) |x| dst[(j + x - ox) * step] = 0;
                const in_step = g.stride[1] * w.xs[3];
                const from = t.base + g.source(0, oy, t.ky) * w.xs[2] + g.source(1, lo, t.kx) * w.xs[3];
                if (in_step == 1 and step == 1) {
                    const src = ew.at([*]const f32, w.image, from);
                    const out = dst + j + lo - ox;
                    for (0..hi - lo) |i| out[i] = src[i];
                } else {
                    var at = from;
                    for (lo..hi) |x| {
                        dst[(j + x - ox) * step] = ew.at([*]const f32, w.image, at)[0];
                        at += in_step;
                    }
                }
                for (hi..end) |x| dst[(j + x - ox) * step] = 0;
            } else {
                for (0..seg) |i| dst[(j + i) * step] = 0;
            }
            j += seg;
            ox = 0;
            oy += 1;
        }
    }
};

/// The packers of one product of `Product`: `m0`, `n0` place a task's block inside the whole product.
fn Sources(comptime T: type) type {
    const G = gemm.Gemm(T);
    return struct {
        /// Forward: A the group's weights [O/groups, K] (any strides over O, C/groups, KH, KW), B the windows.
        const Forward = struct {
            windows: Windows,
            weight: [*]const f32,
            w_off: isize,
            ws: [4]isize,
            m0: usize,
            n0: usize,

            pub fn packA(f: *const Forward, ic: usize, mc: usize, pc: usize, kc: usize, dst: [*]T) void {
                const g = &f.windows.g;
                var ir: usize = 0;
                while (ir < mc) : (ir += G.mr) {
                    const rows = @min(G.mr, mc - ir);
                    const panel = dst + ir * kc;
                    const first: isize = @intCast(f.m0 + ic + ir);
                    for (0..kc) |p| {
                        const k = pc + p;
                        const kx = k % g.kernel[1];
                        const ky = (k / g.kernel[1]) % g.kernel[0];
                        const c = k / g.kernel[1] / g.kernel[0];
                        const at = f.w_off + first * f.ws[0] + @as(isize, @intCast(c)) * f.ws[1] + @as(isize, @intCast(ky)) * f.ws[2] + @as(isize, @intCast(kx)) * f.ws[3];
                        for (0..G.mr) |i| {
                            panel[p * G.mr + i] = if (i < rows) ew.at([*]const f32, f.weight, at + @as(isize, @intCast(i)) * f.ws[0])[0] else 0;
                        }
                    }
                }
            }

            pub fn packB(f: *const Forward, pc: usize, kc: usize, jc: usize, nc: usize, dst: [*]T) void {
                for (0..kc) |p| {
                    const t = f.windows.tap(pc + p);
                    var jr: usize = 0;
                    while (jr < nc) : (jr += G.nr) {
                        const cols = @min(G.nr, nc - jr);
                        const out = dst + jr * kc + p * G.nr;
                        f.windows.row(T, t, f.n0 + jc + jr, cols, out, 1);
                        for (cols..G.nr) |j| out[j] = 0;
                    }
                }
            }
        };

        /// Weight gradient, transposed: A the windows [K, P], B the gradient's transpose [P, O/groups].
        const Weight = struct {
            windows: Windows,
            grad: [*]const f32,
            /// The gradient's offset of (image, first output channel of the group), its flat stride over P
            /// and its stride over the output channels.
            g_off: isize,
            rs_g: isize,
            cs_g: isize,
            m0: usize,
            n0: usize,

            pub fn packA(f: *const Weight, ic: usize, mc: usize, pc: usize, kc: usize, dst: [*]T) void {
                var ir: usize = 0;
                while (ir < mc) : (ir += G.mr) {
                    const rows = @min(G.mr, mc - ir);
                    const panel = dst + ir * kc;
                    for (0..G.mr) |i| {
                        if (i < rows) {
                            f.windows.row(T, f.windows.tap(f.m0 + ic + ir + i), pc, kc, panel + i, G.mr);
                        } else {
                            for (0..kc) |p| panel[p * G.mr + i] = 0;
                        }
                    }
                }
            }

            pub fn packB(f: *const Weight, pc: usize, kc: usize, jc: usize, nc: usize, dst: [*]T) void {
                const at = f.g_off + @as(isize, @intCast(pc)) * f.rs_g + @as(isize, @intCast(f.n0 + jc)) * f.cs_g;
                G.packB(kc, nc, ew.at([*]const f32, f.grad, at), f.rs_g, f.cs_g, dst);
            }
        };
    };
}

/// The geometry and operands of one `productF32` call, split as a batched matmul over (image, group).
const Product = struct {
    g: Geometry,
    forward: bool,
    groups: usize,
    /// Output channels per group, channels per group, taps per output (K = cg·KH·KW) and outputs per image.
    og: usize,
    cg: usize,
    k: usize,
    positions: usize,
    out: [*]f32,
    a: [*]const f32,
    image: [*]const f32,
    ops: *const [abi.max_operands]abi.Operand,
    /// Flat strides: the output's over P (forward) or K (weight), the gradient's over P (weight).
    out_flat: isize,
    a_flat: isize,

    /// The product's extents M×N deep K: forward [og, P] = W·cols; weight [K, og] = cols·gᵀ.
    fn dims(p: *const Product) [3]usize {
        return if (p.forward) .{ p.og, p.positions, p.k } else .{ p.k, p.og, p.positions };
    }

    fn windows(p: *const Product, n: usize, group: usize) Windows {
        const xs = p.ops[2].strides;
        return .{
            .g = p.g,
            .image = p.image,
            .xs = .{ xs[0], xs[1], xs[2], xs[3] },
            .plane = offset(&p.ops[2], &.{ n, group * p.cg }),
        };
    }
};

fn ProductJob(comptime T: type) type {
    const G = gemm.Gemm(T);
    const S = Sources(T);
    return struct {
        product: *const Product,
        plan: gemm.Plan,
        region_bytes: [3]usize,
        memory: [*]u8,

        fn run(context: *anyopaque, task: u32) callconv(.c) void {
            const job: *const @This() = @ptrCast(@alignCast(context));
            const p = job.product;
            const plan = job.plan;
            const d = p.dims();
            const task_bytes = job.region_bytes[0] + job.region_bytes[1] + job.region_bytes[2];
            const base = job.memory + task * task_bytes;
            const ws = G.workspaceAt(base, job.region_bytes, @min(plan.n_step, d[1]));
            const os = p.ops[0].strides;
            const first, const end = plan.taskItems(task);
            for (first..end) |item| {
                const index, const m0, const m, const n0, const cols = plan.block(item, d[0], d[1]);
                const n = index / p.groups;
                const group = index % p.groups;
                const corner = offset(&p.ops[0], &.{ n, group * p.og });
                const windows = p.windows(n, group);
                if (p.forward) {
                    const ws_a = p.ops[1].strides;
                    const source: S.Forward = .{
                        .windows = windows,
                        .weight = p.a,
                        .w_off = offset(&p.ops[1], &.{group * p.og}),
                        .ws = .{ ws_a[0], ws_a[1], ws_a[2], ws_a[3] },
                        .m0 = m0,
                        .n0 = n0,
                    };
                    const rs_c: isize = os[1];
                    const c = ew.at([*]f32, p.out, corner + @as(isize, @intCast(m0)) * rs_c + @as(isize, @intCast(n0)) * p.out_flat);
                    G.multiplyFrom(&source, m, cols, d[2], c, rs_c, p.out_flat, ws);
                } else {
                    const source: S.Weight = .{
                        .windows = windows,
                        .grad = p.a,
                        .g_off = offset(&p.ops[1], &.{ n, group * p.og }),
                        .rs_g = p.a_flat,
                        .cs_g = p.ops[1].strides[1],
                        .m0 = m0,
                        .n0 = n0,
                    };
                    const cs_c: isize = os[1];
                    const c = ew.at([*]f32, p.out, corner + @as(isize, @intCast(m0)) * p.out_flat + @as(isize, @intCast(n0)) * cs_c);
                    G.multiplyFrom(&source, m, cols, d[2], c, p.out_flat, cs_c, ws);
                }
            }
        }

        fn execute(rt: *const table.Runtime, p: *const Product, threads: usize) i32 {
            const d = p.dims();
            const plan = gemm.Plan.init(p.g.n * p.groups, d[0], d[1], d[2], threads, G.mr, G.nr);
            var job: @This() = .{
                .product = p,
                .plan = plan,
                .region_bytes = G.workspaceBytes(@min(plan.m_step, d[0]), @min(plan.n_step, d[1]), d[2]),
                .memory = undefined,
            };
            const task_bytes = job.region_bytes[0] + job.region_bytes[1] + job.region_bytes[2];
            const lease = gemm.WorkspaceCache.acquire(plan.tasks * task_bytes) orelse
                return @intFromEnum(abi.Status.out_of_memory);
            defer gemm.WorkspaceCache.release(lease);
            job.memory = lease.memory;
            if (plan.tasks == 1) {
                run(&job, 0);
            } else {
                rt.parallelFor(&job, @intCast(plan.tasks), @intCast(plan.tasks), run);
            }
            return @intFromEnum(abi.Status.ok);
        }
    };
}

/// f32 values in one vector register: the block the weight gradient's windows are transposed in.
const lanes32 = gemm.vector_bytes / @sizeOf(f32);

/// Zeros after the last padded plane, so that a panel or a vector started at a valid position may run past
/// the plane's end (into values that no stored result depends on): at least one NR-wide panel (≤ 64 f32
/// values on every ISA) and one vector.
const pad_slack = 64 + lanes32;

/// The largest padded image a task of `DirectJob` copies; a larger image group takes `ProductJob`, which
/// packs straight from the image.
const direct_max_bytes = 32 << 20;

/// A stride-1 product's windows read from a zero-padded copy of one image's group: plane [hp, wp] with
/// padded (r, q) = image (r − padH, q − padW), zero outside the image. Tap (c, ky, kx) of output (oy, ox)
/// is then padded element c·plane + (oy + ky·dH)·wp + ox + kx·dW: every row of the windows is a run of the
/// plane, with no bounds to test. The forward pass runs its columns over the padded width (p' = oy·wp + ox,
/// the columns with ox ≥ OW computed and never stored), so that each packed B row is one contiguous read.
const Padded = struct {
    wp: usize,
    hp: usize,
    plane: usize,
    /// Columns of the forward product over the padded width: up to the last stored output.
    columns: usize,

    fn init(g: *const Geometry) Padded {
        const wp = g.output[1] + (g.kernel[1] - 1) * @as(usize, @intCast(g.dilation[1]));
        const hp = g.output[0] + (g.kernel[0] - 1) * @as(usize, @intCast(g.dilation[0]));
        return .{ .wp = wp, .hp = hp, .plane = wp * hp, .columns = (g.output[0] - 1) * wp + g.output[1] };
    }

    fn elems(pd: *const Padded, channels: usize) usize {
        return channels * pd.plane + pad_slack;
    }

    /// The padded element of tap `k` = (c, ky, kx) at output (0, 0).
    fn tapOffset(pd: *const Padded, g: *const Geometry, k: usize) usize {
        const kx = k % g.kernel[1];
        const ky = (k / g.kernel[1]) % g.kernel[0];
        const c = k / g.kernel[1] / g.kernel[0];
        return c * pd.plane + ky * @as(usize, @intCast(g.dilation[0])) * pd.wp + kx * @as(usize, @intCast(g.dilation[1]));
    }

    /// Copies `channels` planes of the image from offset `base` (strides xs) into dst, zeros around them.
    fn fill(pd: *const Padded, g: *const Geometry, image: [*]const f32, xs: [4]isize, base: isize, channels: usize, dst: [*]f32) void {
        const w: isize = g.size[1];
        const wp: isize = @intCast(pd.wp);
        const lo: usize = @intCast(std.math.clamp(g.pad[1], 0, wp));
        const hi: usize = @intCast(std.math.clamp(g.pad[1] + w, @as(isize, @intCast(lo)), wp));
        for (0..channels) |c| {
            for (0..pd.hp) |r| {
                const row = dst + c * pd.plane + r * pd.wp;
                const y = @as(isize, @intCast(r)) - g.pad[0];
                if (y < 0 or y >= g.size[0] or lo == hi) {
                    @memset(row[0..pd.wp], 0);
                    continue;
                }
                @memset(row[0..lo], 0);
                const from = base + @as(isize, @intCast(c)) * xs[1] + y * xs[2] + (@as(isize, @intCast(lo)) - g.pad[1]) * xs[3];
                if (xs[3] == 1) {
                    @memcpy(row[lo..hi], ew.at([*]const f32, image, from)[0 .. hi - lo]);
                } else {
                    for (lo..hi, 0..) |q, i| row[q] = ew.at([*]const f32, image, from + @as(isize, @intCast(i)) * xs[3])[0];
                }
                @memset(row[hi..pd.wp], 0);
            }
        }
        @memset(dst[channels * pd.plane ..][0..pad_slack], 0);
    }
};

/// The taps k = (c, ky, kx) in ascending order, with their padded offsets.
const TapWalk = struct {
    offset: usize,
    c: usize,
    ky: usize,
    kx: usize,

    fn init(pd: *const Padded, g: *const Geometry, k: usize) TapWalk {
        return .{ .offset = pd.tapOffset(g, k), .c = k / g.kernel[1] / g.kernel[0], .ky = (k / g.kernel[1]) % g.kernel[0], .kx = k % g.kernel[1] };
    }

    fn next(t: *TapWalk, pd: *const Padded, g: *const Geometry) void {
        const dx: usize = @intCast(g.dilation[1]);
        t.kx += 1;
        t.offset += dx;
        if (t.kx < g.kernel[1]) return;
        t.kx = 0;
        t.ky += 1;
        if (t.ky < g.kernel[0]) {
            t.offset += @as(usize, @intCast(g.dilation[0])) * pd.wp - g.kernel[1] * dx;
            return;
        }
        t.ky = 0;
        t.c += 1;
        t.offset = t.c * pd.plane;
    }
};

/// The stride-1 products from a padded image (`Padded`), one task per block of the plan as in `ProductJob`,
/// each with its own padded copy of the image it works on. Forward: the weights are packed once for all
/// tasks (MR-row panels over the whole of K), each NR-wide column panel of the windows is packed once per KC
/// block by NR-wide copies and swept by every row tile of the block, whose sums stay in `Tile`s until K is
/// done and are then stored to the output positions (the padded width's extra columns dropped). Weight
/// gradient, transposed: dWᵀ [O/groups, K] = g [O/groups, P] · windowsᵀ, through `Gemm.multiplyFrom`, the
/// windows' panels packed by L×L register transposes of L taps × L positions. The sums are those of
/// `ProductJob` in the same order, so exact mode gives its bits.
fn DirectJob(comptime T: type) type {
    const G = gemm.Gemm(T);
    const V = @Vector(G.lanes, T);
    const V32 = @Vector(G.lanes, f32);
    const Tile = [G.mr][G.nv]V;
    const exact = T == f64;
    // Taps per forward KC block. Exact mode packs the block's rows of windows as f64: at 64 taps they, the
    // weights' micro-panel and the tiles stay in L1 while every row tile sweeps them. Fast mode reads the
    // rows in place (576 taps touch about 50 KiB of a padded image), so a block can
    // hold all of K of a 64-channel 3×3 layer: each tile's sums stay in registers from the first tap to
    // the last instead of passing through memory every 64 (8×64→64 56² forward: 8 % faster on Zen 4;
    // 32 taps 7 % slower).
    const panel_depth = if (exact) 64 else 576;
    return struct {
        product: *const Product,
        pd: Padded,
        plan: gemm.Plan,
        /// Forward: the packed weights, `group_elems` per group.
        weights: [*]T,
        group_elems: usize,
        /// Per task: the padded image, then (forward) the B panel and the tiles or (weight) the GEMM workspace.
        region_bytes: [4]usize,
        tasks_memory: [*]u8,

        const Self = @This();

        fn run(context: *anyopaque, task: u32) callconv(.c) void {
            const job: *const Self = @ptrCast(@alignCast(context));
            const p = job.product;
            const plan = job.plan;
            const r = job.region_bytes;
            const base = job.tasks_memory + task * (r[0] + r[1] + r[2] + r[3]);
            const padded: [*]f32 = @ptrCast(@alignCast(base));
            const d = job.dims();
            var filled: ?usize = null;
            const first, const end = plan.taskItems(task);
            for (first..end) |item| {
                const index, const m0, const m, const n0, const cols = plan.block(item, d[0], d[1]);
                const n = index / p.groups;
                const group = index % p.groups;
                if (filled != index) {
                    const xs = p.ops[2].strides;
                    job.pd.fill(&p.g, p.image, .{ xs[0], xs[1], xs[2], xs[3] }, offset(&p.ops[2], &.{ n, group * p.cg }), p.cg, padded);
                    filled = index;
                }
                const corner = offset(&p.ops[0], &.{ n, group * p.og });
                if (p.forward) {
                    const panel: [*]T = @ptrCast(@alignCast(base + r[0]));
                    const tiles: [*]Tile = @ptrCast(@alignCast(base + r[0] + r[1]));
                    job.forwardBlock(padded, job.weights + group * job.group_elems, m0, m, n0, cols, ew.at([*]f32, p.out, corner), panel, tiles);
                } else {
                    const ws = G.workspaceAt(base + r[0], .{ r[1], r[2], r[3] }, @min(plan.n_step, d[1]));
                    const source: WeightSource = .{
                        .job = job,
                        .padded = padded,
                        .grad = ew.at([*]const f32, p.a, offset(&p.ops[1], &.{ n, group * p.og })),
                        .m0 = m0,
                        .n0 = n0,
                    };
                    const cs_c = p.out_flat;
                    const rs_c: isize = p.ops[0].strides[1];
                    const c = ew.at([*]f32, p.out, corner + @as(isize, @intCast(m0)) * rs_c + @as(isize, @intCast(n0)) * cs_c);
                    G.multiplyFrom(&source, m, cols, d[2], c, rs_c, cs_c, ws);
                }
            }
        }

        /// M×N deep K: forward [O/groups, padded columns] by K; weight [O/groups, K] by P.
        fn dims(job: *const Self) [3]usize {
            const p = job.product;
            return if (p.forward) .{ p.og, job.pd.columns, p.k } else .{ p.og, p.k, p.positions };
        }

        /// Forward rows m0..m0+m (output channels of the group) by padded columns n0..n0+cols into `out`
        /// (the group's first channel of the image).
        fn forwardBlock(job: *const Self, padded: [*]const f32, weights: [*]const T, m0: usize, m: usize, n0: usize, cols: usize, out: [*]f32, panel: [*]T, tiles: [*]Tile) void {
            const p = job.product;
            const k = p.k;
            var ic: usize = 0;
            while (ic < m) : (ic += G.sizes.mc) {
                const mc = @min(G.sizes.mc, m - ic);
                const row_tiles = (mc + G.mr - 1) / G.mr;
                const first_tile = (m0 + ic) / G.mr;
                var jr = n0;
                while (jr < n0 + cols) : (jr += G.nr) {
                    var pc: usize = 0;
                    while (pc < k) : (pc += panel_depth) {
                        const kc = @min(panel_depth, k - pc);
                        // Fast mode reads the windows' rows where they lie in the padded image, through a
                        // table of their addresses in the panel's place; exact mode packs their f64 copies.
                        const rows_table: [*][*]const f32 = @ptrCast(@alignCast(panel));
                        var walk = TapWalk.init(&job.pd, &p.g, pc);
                        for (0..kc) |q| {
                            const src = padded + walk.offset + jr;
                            if (exact) {
                                inline for (0..G.nv) |j| {
                                    const v: V32 = src[j * G.lanes ..][0..G.lanes].*;
                                    panel[q * G.nr + j * G.lanes ..][0..G.lanes].* = @as(V, @floatCast(v));
                                }
                            } else {
                                rows_table[q] = src;
                            }
                            walk.next(&job.pd, &p.g);
                        }
                        const b = if (exact) @as([*]const T, panel) else @as([*]const [*]const f32, rows_table);
                        for (0..row_tiles) |t| {
                            const rows = @min(G.mr, mc - t * G.mr);
                            G.edgeKernel(rows, G.nv, kc, weights + (first_tile + t) * k * G.mr + pc * G.mr, b, &tiles[t], pc > 0);
                        }
                    }
                    for (0..row_tiles) |t| {
                        const rows = @min(G.mr, mc - t * G.mr);
                        const o = m0 + ic + t * G.mr;
                        job.store(&tiles[t], rows, ew.at([*]f32, out, @as(isize, @intCast(o)) * p.ops[0].strides[1]), jr, @min(jr + G.nr, n0 + cols));
                    }
                }
            }
        }

        /// Writes the tile's padded columns jr..end that are outputs (ox < OW) to their positions.
        fn store(job: *const Self, tile: *const Tile, rows: usize, out: [*]f32, jr: usize, end: usize) void {
            const p = job.product;
            const flat: *const [G.mr][G.nr]T = @ptrCast(tile);
            const wp = job.pd.wp;
            const ow = p.g.output[1];
            const step = p.out_flat;
            const rs: isize = p.ops[0].strides[1];
            var at = jr;
            var oy = jr / wp;
            var ox = jr % wp;
            while (at < end) {
                const row_end = @min(end, at - ox + wp);
                const valid_end = @min(row_end, at - ox + ow);
                if (at < valid_end) {
                    const j0 = at - jr;
                    const count = valid_end - at;
                    const pos: isize = @intCast(oy * ow + ox);
                    for (0..rows) |i| {
                        const dst = ew.at([*]f32, out, @as(isize, @intCast(i)) * rs + pos * step);
                        if (step == 1) {
                            copyRounded(flat[i][j0..].ptr, dst, count);
                        } else {
                            for (0..count) |q| ew.at([*]f32, dst, @as(isize, @intCast(q)) * step)[0] = @floatCast(flat[i][j0 + q]);
                        }
                    }
                }
                at = row_end;
                ox = 0;
                oy += 1;
            }
        }

        /// dst[0..count] = src[0..count] rounded to f32, in whole vectors, then halves of one down to a value.
        fn copyRounded(src: [*]const T, dst: [*]f32, count: usize) void {
            var q: usize = 0;
            comptime var w = G.lanes;
            inline while (w >= 1) : (w /= 2) {
                while (q + w <= count) : (q += w) {
                    const v: @Vector(w, T) = src[q..][0..w].*;
                    const r: @Vector(w, f32) = if (exact) @floatCast(v) else v;
                    dst[q..][0..w].* = r;
                }
            }
        }

        /// The weight gradient's packers for `Gemm.multiplyFrom`: A the output gradient [O/groups, P], B the
        /// windows' transpose [P, K].
        const WeightSource = struct {
            job: *const Self,
            padded: [*]const f32,
            /// The gradient at (image, the group's first output channel).
            grad: [*]const f32,
            m0: usize,
            n0: usize,

            pub fn packA(s: *const WeightSource, ic: usize, mc: usize, pc: usize, kc: usize, dst: [*]T) void {
                const p = s.job.product;
                const rs: isize = p.ops[1].strides[1];
                const at = @as(isize, @intCast(s.m0 + ic)) * rs + @as(isize, @intCast(pc)) * p.a_flat;
                G.packA(mc, kc, ew.at([*]const f32, s.grad, at), rs, p.a_flat, dst);
            }

            /// Taps n0+jc.. as NR-wide panels over positions pc..pc+kc: L taps by L positions (reading on
            /// past a row's end into values it drops) transposed in registers, taps past the block zero in
            /// the last block that has any.
            pub fn packB(s: *const WeightSource, pc: usize, kc: usize, jc: usize, nc: usize, dst: [*]T) void {
                const L = lanes32;
                const VL = @Vector(L, f32);
                const job = s.job;
                const g = &job.product.g;
                const ow = g.output[1];
                var jr: usize = 0;
                while (jr < nc) : (jr += G.nr) {
                    const panel = dst + jr * kc;
                    // Blocks wholly past the last tap are left unwritten: the micro-kernels read only the
                    // vectors that hold valid columns.
                    var jb: usize = 0;
                    while (jb < G.nr and jr + jb < nc) : (jb += L) {
                        const width = @min(L, G.nr - jb);
                        var taps: [L][*]const f32 = undefined;
                        var live: [L]bool = undefined;
                        for (0..L) |j| {
                            const tap = s.n0 + jc + jr + jb + j;
                            live[j] = j < width and jr + jb + j < nc;
                            taps[j] = s.padded + if (live[j]) job.pd.tapOffset(g, tap) else 0;
                        }
                        const mask: @Vector(L, bool) = live;
                        var at = pc;
                        var oy = pc / ow;
                        var ox = pc % ow;
                        while (at < pc + kc) {
                            const seg = @min(ow - ox, pc + kc - at);
                            const row = oy * job.pd.wp + ox;
                            var q0: usize = 0;
                            while (q0 < seg) : (q0 += L) {
                                const count = @min(L, seg - q0);
                                var block: [L]VL = undefined;
                                inline for (0..L) |j| block[j] = taps[j][row + q0 ..][0..L].*;
                                @call(.never_inline, gemm.transpose, .{ L, &block });
                                const to = panel + (at - pc + q0) * G.nr + jb;
                                for (0..count) |q| {
                                    const v = @select(f32, mask, block[q], @as(VL, @splat(0)));
                                    if (width == L) {
                                        const w: @Vector(L, T) = if (exact) @floatCast(v) else v;
                                        to[q * G.nr ..][0..L].* = w;
                                    } else {
                                        const a: [L]f32 = v;
                                        for (0..width) |j| to[q * G.nr + j] = a[j];
                                    }
                                }
                            }
                            at += seg;
                            ox = 0;
                            oy += 1;
                        }
                    }
                }
            }
        };

        fn execute(rt: *const table.Runtime, p: *const Product, threads: usize) i32 {
            const pd = Padded.init(&p.g);
            var job: Self = .{
                .product = p,
                .pd = pd,
                .plan = undefined,
                .weights = undefined,
                .group_elems = 0,
                .region_bytes = undefined,
                .tasks_memory = undefined,
            };
            const d = job.dims();
            const plan = gemm.Plan.init(p.g.n * p.groups, d[0], d[1], d[2], threads, G.mr, G.nr);
            job.plan = plan;
            const padded_bytes = gemm.roundUp(pd.elems(p.cg) * @sizeOf(f32), 64);
            var shared_bytes: usize = 0;
            if (p.forward) {
                job.group_elems = gemm.roundUp(p.og, G.mr) * p.k;
                shared_bytes = gemm.roundUp(p.groups * job.group_elems * @sizeOf(T), 64);
                const tiles = (@min(G.sizes.mc, plan.m_step) + G.mr - 1) / G.mr;
                job.region_bytes = .{ padded_bytes, gemm.roundUp(@min(panel_depth, p.k) * G.nr * @sizeOf(T), 64), tiles * @sizeOf(Tile), 0 };
            } else {
                const gw = G.workspaceBytes(@min(plan.m_step, d[0]), @min(plan.n_step, d[1]), d[2]);
                job.region_bytes = .{ padded_bytes, gw[0], gw[1], gw[2] };
            }
            const r = job.region_bytes;
            const lease = gemm.WorkspaceCache.acquire(shared_bytes + plan.tasks * (r[0] + r[1] + r[2] + r[3])) orelse
                return @intFromEnum(abi.Status.out_of_memory);
            defer gemm.WorkspaceCache.release(lease);
            job.weights = @ptrCast(@alignCast(lease.memory));
            job.tasks_memory = lease.memory + shared_bytes;
            if (p.forward) packWeights(p, job.weights, job.group_elems);
            if (plan.tasks == 1) {
                run(&job, 0);
            } else {
                rt.parallelFor(&job, @intCast(plan.tasks), @intCast(plan.tasks), run);
            }
            return @intFromEnum(abi.Status.ok);
        }

        /// Each group's weights [O/groups, K] as MR-row panels over all of K (k-major, MR values per k; rows
        /// past O/groups zero).
        fn packWeights(p: *const Product, dst: [*]T, group_elems: usize) void {
            const g = &p.g;
            const ws = p.ops[1].strides;
            for (0..p.groups) |group| {
                const w0 = offset(&p.ops[1], &.{group * p.og});
                var ir: usize = 0;
                while (ir < p.og) : (ir += G.mr) {
                    const panel = dst + group * group_elems + ir * p.k;
                    for (0..p.k) |k| {
                        const kx = k % g.kernel[1];
                        const ky = (k / g.kernel[1]) % g.kernel[0];
                        const c = k / g.kernel[1] / g.kernel[0];
                        const at = w0 + @as(isize, @intCast(ir)) * ws[0] + @as(isize, @intCast(c)) * ws[1] + @as(isize, @intCast(ky)) * ws[2] + @as(isize, @intCast(kx)) * ws[3];
                        for (0..G.mr) |i| {
                            panel[k * G.mr + i] = if (ir + i < p.og) ew.at([*]const f32, p.a, at + @as(isize, @intCast(i)) * ws[0])[0] else 0;
                        }
                    }
                }
            }
        }
    };
}

/// `zt_conv_product_f32`: convolution as an implicit GEMM, the windows packed straight from the image into
/// the GEMM's panels (no column matrix). Argument block: shape [N, C, KH, KW, OH, OW]; the ints of
/// `zt_conv_fold_f32`, then ints[8] groups and ints[9] O (output channels); args.mode 0 fast, 1 exact.
/// args.op 0, forward: out [N, O, OH, OW] (operand 0; OH, OW flatten) = weight [O, C/groups, KH, KW]
/// (operand 1, any strides) · windows of the image [N, C, H, W] (operand 2). args.op 1, weight gradient per
/// image: out [N, O, C/groups, KH, KW] (operand 0; the last three flatten) = gradient [N, O, OH, OW]
/// (operand 1; OH, OW flatten) · the windows' transpose. Each output element is the matmul's sum over K
/// (forward) or OH·OW (weight) in ascending order, so exact mode equals im2col followed by the matmul, bit
/// for bit. Stride-1 products read the windows from a padded copy of each image (`DirectJob`), with the same
/// sums. Returns `Status.out_of_memory` before writing anything if the panels cannot be allocated.
pub fn productF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8, image: [*]const u8) callconv(.c) i32 {
    std.debug.assert(args.rank == 6);
    const g = Geometry.fromArgs(args);
    const groups: usize = @intCast(args.ints[8]);
    const o: usize = @intCast(args.ints[9]);
    const forward = args.op == 0;
    const ops = &args.operands;
    const cg = g.c / groups;
    const taps = cg * g.kernel[0] * g.kernel[1];
    const positions = g.output[0] * g.output[1];
    const p_flat = flatStride(&g.output, ops[if (forward) 0 else 1].strides[2..4]) orelse unreachable;
    const product: Product = .{
        .g = g,
        .forward = forward,
        .groups = groups,
        .og = o / groups,
        .cg = cg,
        .k = taps,
        .positions = positions,
        .out = @ptrCast(@alignCast(out)),
        .a = @ptrCast(@alignCast(a)),
        .image = @ptrCast(@alignCast(image)),
        .ops = ops,
        .out_flat = if (forward) p_flat else flatStride(&.{ cg, g.kernel[0], g.kernel[1] }, ops[0].strides[2..5]) orelse unreachable,
        .a_flat = p_flat,
    };
    const d = product.dims();
    if (g.n * groups == 0 or d[0] == 0 or d[1] == 0) return @intFromEnum(abi.Status.ok);
    if (d[2] == 0) {
        // An empty sum is +0 (a weight gradient over an empty output grid).
        const row_len = if (forward) positions else taps;
        const step = if (forward) p_flat else product.out_flat;
        for (0..g.n) |n| for (0..o) |oc| for (0..row_len) |j| {
            ew.at([*]f32, product.out, offset(&ops[0], &.{ n, oc }) + @as(isize, @intCast(j)) * step)[0] = 0;
        };
        return @intFromEnum(abi.Status.ok);
    }
    const threads: usize = @intCast(@max(1, args.threads));
    if (g.stride[0] == 1 and g.stride[1] == 1 and Padded.init(&g).elems(cg) * @sizeOf(f32) <= direct_max_bytes) {
        return if (args.mode == 1) DirectJob(f64).execute(rt, &product, threads) else DirectJob(f32).execute(rt, &product, threads);
    }
    return if (args.mode == 1) ProductJob(f64).execute(rt, &product, threads) else ProductJob(f32).execute(rt, &product, threads);
}

// --- tests ---

const testing = std.testing;

fn foldArgs(op: i32, n: i32, c: i32, h: i32, w: i32, kernel: [2]i32, stride: [2]i32, pad: [2]i32, dil: [2]i32) abi.ArgBlock {
    const oh = @divFloor(h + 2 * pad[0] - dil[0] * (kernel[0] - 1) - 1, stride[0]) + 1;
    const ow = @divFloor(w + 2 * pad[1] - dil[1] * (kernel[1] - 1) - 1, stride[1]) + 1;
    const cols = [_]i32{ c * kernel[0] * kernel[1] * oh * ow, kernel[0] * kernel[1] * oh * ow, kernel[1] * oh * ow, oh * ow, ow, 1 };
    const image = [_]i32{ c * h * w, h * w, w, 1 };
    const operands: [2][]const i32 = if (op == 0) .{ &cols, &image } else .{ &image, &cols };
    var args = ew.testArgs(&.{ n, c, kernel[0], kernel[1], oh, ow }, &operands, &.{ 0, 0 }, op, 1, 1);
    const ints = [_]i32{ stride[0], stride[1], pad[0], pad[1], dil[0], dil[1], h, w };
    @memcpy(args.ints[0..ints.len], &ints);
    return args;
}

test "im2col pads with zeros and col2im sums every tap back in place" {
    // One 3x3 plane 1..9; 2x2 kernel, stride 1, padding 1: a 4x4 output per tap.
    var x: [9]f32 = undefined;
    for (&x, 0..) |*v, i| v.* = @floatFromInt(i + 1);
    var cols: [4 * 16]f32 = undefined;
    const unfold = foldArgs(0, 1, 1, 3, 3, .{ 2, 2 }, .{ 1, 1 }, .{ 1, 1 }, .{ 1, 1 });
    foldF32(&ew.test_runtime, &unfold, @ptrCast(&cols), @ptrCast(&x));
    // Tap (0, 0) reads (oy − 1, ox − 1): row 0 and column 0 are padding.
    try testing.expectEqualSlices(f32, &.{ 0, 0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9 }, cols[0..16]);
    // Tap (1, 1) reads (oy, ox): row 3 and column 3 are padding.
    try testing.expectEqualSlices(f32, &.{ 1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9, 0, 0, 0, 0, 0 }, cols[48..64]);
    var back: [9]f32 = @splat(-1);
    const fold = foldArgs(1, 1, 1, 3, 3, .{ 2, 2 }, .{ 1, 1 }, .{ 1, 1 }, .{ 1, 1 });
    foldF32(&ew.test_runtime, &fold, @ptrCast(&back), @ptrCast(&cols));
    // Every pixel lies in all four taps' windows.
    for (back, x) |b, v| try testing.expectEqual(4 * v, b);
}

test "strided, dilated windows fold back the number of windows covering each pixel" {
    var x: [2 * 5 * 6]f32 = @splat(1);
    var cols: [2 * 2 * 3 * 2 * 3]f32 = undefined;
    const unfold = foldArgs(0, 1, 2, 5, 6, .{ 2, 3 }, .{ 2, 2 }, .{ 0, 1 }, .{ 2, 1 });
    foldF32(&ew.test_runtime, &unfold, @ptrCast(&cols), @ptrCast(&x));
    var back: [x.len]f32 = undefined;
    const fold = foldArgs(1, 1, 2, 5, 6, .{ 2, 3 }, .{ 2, 2 }, .{ 0, 1 }, .{ 2, 1 });
    foldF32(&ew.test_runtime, &fold, @ptrCast(&back), @ptrCast(&cols));
    // Rows: windows start at 0 and 2, taps at +0 and +2, so rows 0, 4 are hit once, row 2 twice, rows 1, 3 never.
    // Columns: windows start at −1, 1, 3 with taps +0..2, so columns 1 and 3 are hit twice, the rest once.
    const rows = [_]f32{ 1, 0, 2, 0, 1 };
    const columns = [_]f32{ 1, 2, 1, 2, 1, 1 };
    for (0..2) |c| for (0..5) |y| for (0..6) |xi| {
        try testing.expectEqual(rows[y] * columns[xi], back[c * 30 + y * 6 + xi]);
    };
}

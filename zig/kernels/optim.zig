//! Optimizer updates: one fused pass over a contiguous f32 parameter that reads its gradient, updates the
//! optimizer's state buffers and writes the new parameter, with no allocation. Every step is a single IEEE
//! f32 operation (`+ − × ÷`, sqrt, a comparison) on f32 coefficients in a fixed order, so the result is the
//! same bits on every ISA, for every thread count, in both arithmetic modes, and equal to the TypeScript
//! reference (`src/kernels/optim.ts`), which spells out the same formulas.
//!
//! Argument block: `op` is an `Algorithm`; ints[0] = element count; ints[1..6] = the element offsets of
//! param, grad, s0, s1, s2; ints[6] = `Flags` bits; floats = the algorithm's coefficients (below). The state
//! pointers an algorithm does not use may be null.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const ew = @import("elementwise.zig");

const lanes = ew.lanes;
const V = ew.V;

/// One update over a parameter; see the file comment for the argument block.
pub const StepFn = *const fn (
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    param: [*]f32,
    grad: [*]const f32,
    s0: ?[*]f32,
    s1: ?[*]f32,
    s2: ?[*]f32,
) callconv(.c) void;

/// This family's entries in the kernel table.
pub const Table = extern struct {
    step_f32: StepFn,
};

pub const table_entries: Table = .{ .step_f32 = stepF32 };

/// The update rules, numbered as `OptimAlgorithm` in src/kernels/optim.ts.
pub const Algorithm = enum(i32) {
    /// floats: lr, weight decay, momentum, 1 − dampening; s0: momentum buffer.
    sgd = 0,
    /// floats: lr / (1 − β1^t), weight decay, 1 − β1, β2, 1 − β2, eps, √(1 − β2^t), 1 − lr·weight decay;
    /// s0: first moment, s1: second moment, s2: its running maximum (amsgrad).
    adam = 1,
    /// floats: lr, weight decay, α, 1 − α, eps, momentum; s0: square average, s1: momentum buffer,
    /// s2: gradient average (centered).
    rmsprop = 2,
};

/// Flag bits in ints[6].
pub const Flags = struct {
    /// Adds weight decay · param to the gradient (L2 penalty).
    pub const weight_decay: i32 = 1;
    /// SGD, RMSprop: keeps a momentum buffer. Adam: multiplies the parameter by 1 − lr·wd first (AdamW).
    pub const momentum_or_decoupled: i32 = 2;
    /// SGD: Nesterov momentum. Adam: amsgrad. RMSprop: centered.
    pub const variant: i32 = 4;
    /// SGD: the momentum buffer starts as the gradient (first step).
    pub const first: i32 = 8;
};

fn Coefficients(comptime T: type) type {
    return struct {
        c: [abi.max_floats]T,
        flags: i32,

        fn init(args: *const abi.ArgBlock) @This() {
            var out: @This() = .{ .c = undefined, .flags = args.ints[6] };
            for (0..abi.max_floats) |k| {
                const x: f32 = @floatCast(args.floats[k]);
                out.c[k] = if (T == f32) x else @splat(x);
            }
            return out;
        }

        fn has(self: @This(), flag: i32) bool {
            return self.flags & flag != 0;
        }
    };
}

fn greater(comptime T: type, a: T, b: T) T {
    return if (T == f32) (if (a > b) a else b) else @select(f32, a > b, a, b);
}

/// The update of one element (T = f32) or one vector of elements (T = V); every path computes the same bits.
inline fn update(comptime alg: Algorithm, comptime T: type, k: Coefficients(T), p: *T, g_in: T, s: [3]?*T) void {
    const c = k.c;
    var g = g_in;
    switch (alg) {
        .sgd => {
            if (k.has(Flags.weight_decay)) g = g + c[1] * p.*;
            if (k.has(Flags.momentum_or_decoupled)) {
                const buf = s[0].?;
                buf.* = if (k.has(Flags.first)) g else c[2] * buf.* + c[3] * g;
                g = if (k.has(Flags.variant)) g + c[2] * buf.* else buf.*;
            }
            p.* = p.* - c[0] * g;
        },
        .adam => {
            if (k.has(Flags.momentum_or_decoupled)) p.* = p.* * c[7];
            if (k.has(Flags.weight_decay)) g = g + c[1] * p.*;
            const m = s[0].?;
            const v = s[1].?;
            m.* = m.* + c[2] * (g - m.*);
            v.* = c[3] * v.* + c[4] * (g * g);
            var second = v.*;
            if (k.has(Flags.variant)) {
                const top = s[2].?;
                top.* = greater(T, second, top.*);
                second = top.*;
            }
            const denom = @sqrt(second) / c[6] + c[5];
            p.* = p.* - c[0] * (m.* / denom);
        },
        .rmsprop => {
            if (k.has(Flags.weight_decay)) g = g + c[1] * p.*;
            const sq = s[0].?;
            sq.* = c[2] * sq.* + c[3] * (g * g);
            var spread = sq.*;
            if (k.has(Flags.variant)) {
                const avg = s[2].?;
                avg.* = avg.* + c[3] * (g - avg.*);
                spread = spread - avg.* * avg.*;
            }
            const denom = @sqrt(spread) + c[4];
            if (k.has(Flags.momentum_or_decoupled)) {
                const buf = s[1].?;
                buf.* = c[5] * buf.* + g / denom;
                p.* = p.* - c[0] * buf.*;
            } else {
                p.* = p.* - c[0] * (g / denom);
            }
        },
    }
}

fn Work(comptime alg: Algorithm) type {
    return struct {
        args: *const abi.ArgBlock,
        param: [*]f32,
        grad: [*]const f32,
        s: [3]?[*]f32,

        /// Loads, updates and stores elements `first..end`: whole vectors, then a scalar tail.
        pub fn range(w: @This(), first: usize, end: usize) void {
            const kv = Coefficients(V).init(w.args);
            const ks = Coefficients(f32).init(w.args);
            var i = first;
            while (i + lanes <= end) : (i += lanes) {
                var p: V = w.param[i..][0..lanes].*;
                var st: [3]V = undefined;
                var ptrs: [3]?*V = .{ null, null, null };
                for (0..3) |j| if (w.s[j]) |base| {
                    st[j] = base[i..][0..lanes].*;
                    ptrs[j] = &st[j];
                };
                update(alg, V, kv, &p, w.grad[i..][0..lanes].*, ptrs);
                w.param[i..][0..lanes].* = p;
                for (0..3) |j| if (w.s[j]) |base| {
                    base[i..][0..lanes].* = st[j];
                };
            }
            while (i < end) : (i += 1) {
                var ptrs: [3]?*f32 = .{ null, null, null };
                for (0..3) |j| if (w.s[j]) |base| {
                    ptrs[j] = &base[i];
                };
                update(alg, f32, ks, &w.param[i], w.grad[i], ptrs);
            }
        }
    };
}

fn run(comptime alg: Algorithm, rt: *const table.Runtime, args: *const abi.ArgBlock, work: Work(alg)) void {
    const n: usize = @intCast(args.ints[0]);
    ew.parallelRange(rt, args.threads, n, 1 << 16, 1024, work);
}

fn stepF32(
    rt: *const table.Runtime,
    args: *const abi.ArgBlock,
    param: [*]f32,
    grad: [*]const f32,
    s0: ?[*]f32,
    s1: ?[*]f32,
    s2: ?[*]f32,
) callconv(.c) void {
    std.debug.assert(args.ints[0] >= 0);
    const offset = struct {
        fn of(base: ?[*]f32, elements: i32) ?[*]f32 {
            return if (base) |b| b + @as(usize, @intCast(elements)) else null;
        }
    }.of;
    const p = param + @as(usize, @intCast(args.ints[1]));
    const g = grad + @as(usize, @intCast(args.ints[2]));
    const s = [3]?[*]f32{ offset(s0, args.ints[3]), offset(s1, args.ints[4]), offset(s2, args.ints[5]) };
    switch (@as(Algorithm, @enumFromInt(args.op))) {
        inline else => |alg| run(alg, rt, args, .{ .args = args, .param = p, .grad = g, .s = s }),
    }
}

// --- tests ---

const testing = std.testing;

fn stepOnce(alg: Algorithm, flags: i32, floats: []const f64, param: []f32, grad: []const f32, s: [3]?[]f32, threads: i32) void {
    var args = std.mem.zeroes(abi.ArgBlock);
    args.op = @intFromEnum(alg);
    args.threads = threads;
    args.ints[0] = @intCast(param.len);
    args.ints[6] = flags;
    for (floats, 0..) |f, k| args.floats[k] = f;
    var ptrs: [3]?[*]f32 = .{ null, null, null };
    for (0..3) |j| if (s[j]) |slice| {
        ptrs[j] = slice.ptr;
    };
    stepF32(&ew.test_runtime, &args, param.ptr, grad.ptr, ptrs[0], ptrs[1], ptrs[2]);
}

test "SGD with momentum: the first step copies the gradient, later ones mix it in" {
    var p = [_]f32{ 1, 2, 3 };
    const g = [_]f32{ 0.5, -1, 2 };
    var buf = [_]f32{ 9, 9, 9 };
    stepOnce(.sgd, Flags.momentum_or_decoupled | Flags.first, &.{ 0.1, 0, 0.9, 1 }, &p, &g, .{ &buf, null, null }, 1);
    try testing.expectEqualSlices(f32, &.{ 0.5, -1, 2 }, &buf);
    try testing.expectEqual(@as(f32, 1) - @as(f32, 0.1) * 0.5, p[0]);
    stepOnce(.sgd, Flags.momentum_or_decoupled, &.{ 0.1, 0, 0.9, 1 }, &p, &g, .{ &buf, null, null }, 1);
    try testing.expectEqual(@as(f32, 0.9) * 0.5 + 0.5, buf[0]);
}

test "Adam's vector body and scalar tail agree, and threads do not change the bits" {
    const n = 3 * 70_001;
    const buffers = try testing.allocator.alloc(f32, 7 * n);
    defer testing.allocator.free(buffers);
    for (buffers, 0..) |*v, i| v.* = @as(f32, @floatFromInt(i % 613)) * 0.0021 - 0.6;
    const one = buffers[0..n];
    const four = buffers[n .. 2 * n];
    @memcpy(four, one);
    const grad = buffers[2 * n .. 3 * n];
    const m1 = buffers[3 * n .. 4 * n];
    const m4 = buffers[4 * n .. 5 * n];
    const v1 = buffers[5 * n .. 6 * n];
    const v4 = buffers[6 * n .. 7 * n];
    @memset(m1, 0);
    @memset(m4, 0);
    @memset(v1, 0);
    @memset(v4, 0);
    const floats = [_]f64{ 0.01, 0.1, 0.1, 0.999, 0.001, 1e-8, 0.0316, 0.999 };
    const flags = Flags.weight_decay | Flags.momentum_or_decoupled;
    stepOnce(.adam, flags, &floats, one, grad, .{ m1, v1, null }, 1);
    stepOnce(.adam, flags, &floats, four, grad, .{ m4, v4, null }, 4);
    try testing.expectEqualSlices(f32, one, four);
    // An element of the tail computes what the same element computes inside a vector.
    var single = [_]f32{@as(f32, @floatFromInt(5)) * 0.0021 - 0.6};
    var m = [_]f32{0};
    var v = [_]f32{0};
    const g = [_]f32{grad[5]};
    stepOnce(.adam, flags, &floats, &single, &g, .{ &m, &v, null }, 1);
    try testing.expectEqual(one[5], single[0]);
}

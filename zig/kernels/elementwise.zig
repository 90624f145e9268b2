//! Element-wise binary kernels, and the machinery every kernel family of this variant shares: splitting a
//! strided iteration into spans of whole and partial rows, and running those spans across the thread pool.
//!
//! Kernels are written once over a comptime vector width (`lanes`: `std.simd.suggestVectorLength` of the
//! target each variant is compiled for, at most 256 bits). Rows whose output steps by one and whose inputs
//! step by one or zero (a broadcast) run in vectors loaded straight from memory; other rows gather a vector's
//! worth of elements, compute the same vector function and scatter the results, so an element's value never
//! depends on where it sits. `+ − × ÷`, max, min, the comparisons and the logical ops are single IEEE f32 operations, bitwise equal to the
//! TypeScript reference in both modes; pow is `math.pow` in f64 rounded once in exact mode and `math.powFast`
//! in fast mode, and gelu_backward (the GELU rule's kernel) takes the mode's tanh likewise.
//!
//! This family's table also carries the unary, reduction, softmax and pooling kernels (their code lives in
//! `unary.zig`, `reduce.zig`, `softmax.zig` and `pool.zig`), so that adding them touched no shared file.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const math = @import("math.zig");
const Rows = @import("rows.zig").Rows;
const unary = @import("unary.zig");
const reduce = @import("reduce.zig");
const softmax = @import("softmax.zig");
const pool = @import("pool.zig");
const index_add = @import("scatter.zig");

/// The element-wise kernels' width: at most a ymm. The AVX-512 variant is compiled without x86-64-v4's
/// `prefer_256_bit` tuning (build.zig) for the stores of the kernels written for the full width, which makes
/// the suggested width a zmm there; the element-wise, data-movement and CTC kernels keep the 256-bit vectors
/// they were tuned and measured with.
pub const lanes = @min(8, std.simd.suggestVectorLength(f32) orelse 1);
pub const V = @Vector(lanes, f32);

/// out = a (op) b over one shape; operands 0, 1, 2 of the argument block are out, a and b.
pub const BinaryFn = *const fn (rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8, b: [*]const u8) callconv(.c) void;
/// out = op(a); operands 0 and 1 are out and a.
pub const UnaryFn = *const fn (rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8) callconv(.c) void;
/// Max pooling: operands 0, 1, 2 are out, x and indices (`indices` may be null).
pub const PoolFn = *const fn (rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, x: [*]const u8, indices: ?[*]u8) callconv(.c) void;

/// This family's entries in the kernel table.
pub const Table = extern struct {
    binary_f32: BinaryFn,
    unary_f32: UnaryFn,
    reduce_f32: UnaryFn,
    softmax_f32: UnaryFn,
    maxpool2d_f32: PoolFn,
    index_add_f32: PoolFn,
};

pub const table_entries: Table = .{
    .binary_f32 = binaryF32,
    .unary_f32 = unary.unaryF32,
    .reduce_f32 = reduce.reduceF32,
    .softmax_f32 = softmax.softmaxF32,
    .maxpool2d_f32 = pool.maxPool2dF32,
    .index_add_f32 = index_add.indexAddF32,
};

/// Binary operations, numbered by the op table (`zig/kernels/ops.zig`, generated from src/core/op_table.ts).
pub const BinaryOp = @import("ops.zig").BinaryOp;

/// Arithmetic mode of the argument block.
pub fn isExact(args: *const abi.ArgBlock) bool {
    return args.mode == 1;
}

// --- pointers with signed element offsets ---

/// `base` moved by `offset` elements (negative strides reach below a row's start).
pub inline fn at(comptime P: type, base: P, offset: isize) P {
    const size = @sizeOf(@typeInfo(P).pointer.child);
    return @ptrFromInt(@as(usize, @bitCast(@as(isize, @bitCast(@intFromPtr(base))) + offset * size)));
}

/// Loads up to `lanes` elements spaced `stride` apart, the rest `fill`.
pub inline fn gather(comptime T: type, p: [*]const T, stride: isize, count: usize, fill: T) @Vector(lanes, T) {
    var v: [lanes]T = @splat(fill);
    var offset: isize = 0;
    for (0..count) |i| {
        v[i] = at([*]const T, p, offset)[0];
        offset += stride;
    }
    return v;
}

/// Stores the first `count` lanes of `v` spaced `stride` apart.
pub inline fn scatter(comptime T: type, p: [*]T, stride: isize, count: usize, v: @Vector(lanes, T)) void {
    const values: [lanes]T = v;
    var offset: isize = 0;
    for (0..count) |i| {
        at([*]T, p, offset)[0] = values[i];
        offset += stride;
    }
}

/// Loads `lanes` elements at `p[i..]` when `stride` is 1, or splats `p[0]` when it is 0.
pub inline fn loadOrSplat(comptime T: type, p: [*]const T, stride: isize, i: usize) @Vector(lanes, T) {
    return if (stride == 0) @splat(p[0]) else p[i..][0..lanes].*;
}

// --- spans and threads ---

/// Below this many elements of work a kernel stays on the calling thread.
pub const parallel_min_elements = 1 << 16;

/// The same for a streaming op (a load or two, one operation and a store per element, under a nanosecond).
/// PyTorch's grain size: since the pool's workers spin between jobs, a job that follows another within
/// 100 µs starts without a futex wake-up, and an add of 1e5 elements went from 0.77× to 1.6–2.3× on 2
/// threads against 1 with the threshold lowered from 2^18 (issue 13); a worker that has gone to sleep costs
/// a wake-up, tens of microseconds on a virtual machine, the first time.
pub const streaming_min_elements = 1 << 15;

/// Calls `visit.span(offsets, begin, end)` for the part of each row that lies in the flat row-major element
/// range `first..end` of `rows`: whole rows, and partial ones at the range's ends.
pub fn forEachSpan(rows: anytype, first: usize, end: usize, visit: anytype) void {
    const len = rows.rowLength();
    if (first >= end or len == 0) return;
    const Offsets = @TypeOf(rows.offsets);
    const Cut = struct {
        visit: @TypeOf(visit),
        current: usize,
        first_row: usize,
        first_col: usize,
        last_row: usize,
        last_end: usize,
        len: usize,

        pub fn row(cut: *@This(), offsets: Offsets) void {
            const begin = if (cut.current == cut.first_row) cut.first_col else 0;
            const stop = if (cut.current == cut.last_row) cut.last_end else cut.len;
            cut.visit.span(offsets, begin, stop);
            cut.current += 1;
        }
    };
    const last_row = (end - 1) / len;
    var cut: Cut = .{
        .visit = visit,
        .current = first / len,
        .first_row = first / len,
        .first_col = first % len,
        .last_row = last_row,
        .last_end = end - last_row * len,
        .len = len,
    };
    rows.forEachRow(first / len, last_row + 1, &cut);
}

/// Runs `work.range(first, end)` over `0..total`, split into tasks of whole `granule`s across at most
/// `threads` threads when `total` reaches `min_total`. Every index belongs to exactly one task, so the
/// results never depend on the thread count.
pub fn parallelRange(rt: *const table.Runtime, threads_in: i32, total: usize, min_total: usize, granule: usize, work: anytype) void {
    const threads: usize = @intCast(@max(1, threads_in));
    if (threads == 1 or total < @max(min_total, 2 * granule)) {
        work.range(0, total);
        return;
    }
    const wanted = threads * 4;
    const per_task = std.mem.alignForward(usize, (total + wanted - 1) / wanted, granule);
    const tasks = (total + per_task - 1) / per_task;
    if (tasks < 2) {
        work.range(0, total);
        return;
    }
    const Work = @TypeOf(work);
    const Job = struct {
        work: Work,
        total: usize,
        per_task: usize,

        fn run(context: *anyopaque, task: u32) callconv(.c) void {
            const job: *const @This() = @ptrCast(@alignCast(context));
            const first = @min(job.total, task * job.per_task);
            job.work.range(first, @min(job.total, first + job.per_task));
        }
    };
    var job: Job = .{ .work = work, .total = total, .per_task = per_task };
    rt.parallelFor(&job, @intCast(tasks), @intCast(@min(threads, tasks)), Job.run);
}

/// Runs `visit.span` over every element of `rows`, split across threads when there are at least
/// `min_elements` (in units of `granule` elements, which keeps contiguous outputs' task edges on cache lines).
pub fn runSpans(rt: *const table.Runtime, args: *const abi.ArgBlock, rows: anytype, visit: anytype, min_elements: usize, granule: usize) void {
    const total = rows.rowCount() * rows.rowLength();
    if (total == 0) return;
    const Spans = struct {
        rows: @TypeOf(rows),
        visit: @TypeOf(visit),

        pub fn range(spans: *const @This(), first: usize, end: usize) void {
            forEachSpan(spans.rows, first, end, spans.visit);
        }
    };
    const spans: Spans = .{ .rows = rows, .visit = visit };
    parallelRange(rt, args.threads, total, min_elements, granule, &spans);
}

// --- binary operations ---

const U = @Vector(lanes, u32);

/// IEEE maximum with NaN propagation: a NaN operand wins (the first one), and +0 beats -0.
inline fn maxV(x: V, y: V) V {
    const equal: V = @bitCast(@as(U, @bitCast(x)) & @as(U, @bitCast(y)));
    const r = @select(f32, x > y, x, @select(f32, y > x, y, equal));
    return @select(f32, x != x, x, @select(f32, y != y, y, r));
}

/// IEEE minimum with NaN propagation: a NaN operand wins (the first one), and -0 beats +0.
inline fn minV(x: V, y: V) V {
    const equal: V = @bitCast(@as(U, @bitCast(x)) | @as(U, @bitCast(y)));
    const r = @select(f32, x < y, x, @select(f32, y < x, y, equal));
    return @select(f32, x != x, x, @select(f32, y != y, y, r));
}

pub inline fn boolBytes(mask: @Vector(lanes, bool)) @Vector(lanes, u8) {
    return @select(u8, mask, @as(@Vector(lanes, u8), @splat(1)), @as(@Vector(lanes, u8), @splat(0)));
}

/// How an element of type `T` is stored: Bool as one byte (any nonzero byte reads as true), the others as
/// themselves. The binary kernel is written once over `T`: f32 here, the integers and Bool in `integer.zig`.
pub fn Storage(comptime T: type) type {
    return if (T == bool) u8 else T;
}

fn Output(comptime T: type, comptime op: BinaryOp) type {
    return if (op.writesBool()) u8 else Storage(T);
}

/// `op` on one vector of each operand. Integers wrap (two's complement, as PyTorch); Bool operands are
/// compared as 0/1; the logical ops treat every nonzero value (NaN included) as true.
inline fn applyBinary(comptime T: type, comptime op: BinaryOp, comptime exact: bool, x_in: @Vector(lanes, Storage(T)), y_in: @Vector(lanes, Storage(T))) @Vector(lanes, Output(T, op)) {
    const S = Storage(T);
    const zero: @Vector(lanes, S) = @splat(0);
    const x = if (T == bool) boolBytes(x_in != zero) else x_in;
    const y = if (T == bool) boolBytes(y_in != zero) else y_in;
    const int = @typeInfo(T) == .int;
    return switch (op) {
        .add => if (int) x +% y else x + y,
        .sub => if (int) x -% y else x - y,
        .mul => if (int) x *% y else x * y,
        .div => x / y,
        .max => maxV(x, y),
        .min => minV(x, y),
        .pow => if (exact) powExact(x, y) else math.powFast(lanes, x, y),
        .eq => boolBytes(x == y),
        .ne => boolBytes(x != y),
        .lt => boolBytes(x < y),
        .le => boolBytes(x <= y),
        .gt => boolBytes(x > y),
        .ge => boolBytes(x >= y),
        .logical_and => boolBytes(x != zero) & boolBytes(y != zero),
        .logical_or => boolBytes(x != zero) | boolBytes(y != zero),
        .logical_xor => boolBytes(x != zero) ^ boolBytes(y != zero),
        // The ReLU rule: the gradient x where the saved output y is not ≤ 0 (a NaN output passes it), else +0.
        .relu_backward => @select(f32, y <= @as(V, @splat(0)), @as(V, @splat(0)), x),
        .gelu_backward => x * geluGrad(exact, y),
    };
}

/// GELU's (tanh form) derivative at x, in the reference's order: t = tanh(((x·x·x)·a + x)·c), each step one
/// f32 operation with a and c rounded to f32, tanh the mode's (exact: the f64 function rounded once, as the
/// unary kernel's); then (t + 1)·0.5 + ((x·0.5)·(1 − t·t))·((x·x·3a + 1)·c) in f64, rounded once.
inline fn geluGrad(comptime exact: bool, x: V) V {
    const V64 = @Vector(lanes, f64);
    const s = struct {
        fn of(v: f64) V64 {
            return @splat(v);
        }
    }.of;
    const a32: V = @splat(@as(f32, @floatCast(math.gelu_a)));
    const c32: V = @splat(@as(f32, @floatCast(math.gelu_c)));
    const u = (x + x * x * x * a32) * c32;
    const t32: V = if (exact) @floatCast(math.tanhV(lanes, @floatCast(u))) else math.tanhFast(lanes, u);
    const a: V64 = @floatCast(x);
    const b: V64 = @floatCast(t32);
    const left = (b + s(1)) * s(0.5);
    const slope = (a * a * s(3 * math.gelu_a) + s(1)) * s(math.gelu_c);
    return @floatCast(left + ((a * s(0.5)) * (s(1) - b * b)) * slope);
}

inline fn powExact(x: V, y: V) V {
    return @floatCast(math.powV(lanes, @floatCast(x), @floatCast(y)));
}

fn BinarySpan(comptime T: type, comptime op: BinaryOp, comptime exact: bool) type {
    const S = Storage(T);
    const Out = Output(T, op);
    return struct {
        out: [*]Out,
        a: [*]const S,
        b: [*]const S,
        inner: [3]isize,

        pub fn span(self: *const @This(), offsets: [3]isize, begin: usize, end: usize) void {
            const s = self.inner;
            const b_at: isize = @intCast(begin);
            const out = at([*]Out, self.out, offsets[0] + b_at * s[0]);
            const a = at([*]const S, self.a, offsets[1] + b_at * s[1]);
            const b = at([*]const S, self.b, offsets[2] + b_at * s[2]);
            const n = end - begin;
            var i: usize = 0;
            if (s[0] == 1 and (s[1] == 1 or s[1] == 0) and (s[2] == 1 or s[2] == 0)) {
                while (i + lanes <= n) : (i += lanes) {
                    out[i..][0..lanes].* = applyBinary(T, op, exact, loadOrSplat(S, a, s[1], i), loadOrSplat(S, b, s[2], i));
                }
            }
            // The strided path, and the tail of the contiguous one: the same vector function on gathered lanes.
            while (i < n) : (i += lanes) {
                const count = @min(lanes, n - i);
                const ii: isize = @intCast(i);
                const x = gather(S, at([*]const S, a, ii * s[1]), s[1], count, 1);
                const y = gather(S, at([*]const S, b, ii * s[2]), s[2], count, 1);
                scatter(Out, at([*]Out, out, ii * s[0]), s[0], count, applyBinary(T, op, exact, x, y));
            }
        }
    };
}

/// `zt_binary_f32`: out = a (op) b, `args.op` a `BinaryOp`; a comparison writes bytes 0/1 and operand 0's
/// offset and strides count those bytes. Assumes the caller validated the shape and strides.
pub fn binaryF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8, b: [*]const u8) callconv(.c) void {
    std.debug.assert(args.op >= 0 and args.op < @typeInfo(BinaryOp).@"enum".fields.len);
    // Inlined here as it was while this was its only caller: `integer.zig` calls it too, and an outlined
    // `init` (a call and a copy of the result) costs a 16-element add about 7 % in Bun.
    const rows = @call(.always_inline, Rows(3).init, .{ args.shapeSlice(), .{ &args.operands[0], &args.operands[1], &args.operands[2] } });
    switch (@as(BinaryOp, @enumFromInt(args.op))) {
        inline else => |op| {
            if ((op == .pow or op == .gelu_backward) and isExact(args)) {
                runBinary(f32, op, true, rt, args, &rows, out, a, b);
            } else {
                runBinary(f32, op, false, rt, args, &rows, out, a, b);
            }
        },
    }
}

/// Runs `op` over elements of type `T` (see `Storage`) on the thread pool.
pub fn runBinary(comptime T: type, comptime op: BinaryOp, comptime exact: bool, rt: *const table.Runtime, args: *const abi.ArgBlock, rows: *const Rows(3), out: [*]u8, a: [*]const u8, b: [*]const u8) void {
    const visit: BinarySpan(T, op, exact) = .{
        .out = @ptrCast(@alignCast(out)),
        .a = @ptrCast(@alignCast(a)),
        .b = @ptrCast(@alignCast(b)),
        .inner = rows.innerStrides(),
    };
    const min_elements: usize = if (op == .pow or op == .gelu_backward) parallel_min_elements / 8 else streaming_min_elements;
    runSpans(rt, args, rows, &visit, min_elements, 64);
}

// --- tests ---

const testing = std.testing;

/// A runtime whose parallel_for runs the tasks in reverse order on the calling thread: a kernel whose
/// result depended on task order would show it.
pub const test_runtime: table.Runtime = .{ .parallel_for = struct {
    fn run(context: *anyopaque, tasks: u32, _: u32, task: table.TaskFn) callconv(.c) void {
        var i = tasks;
        while (i > 0) {
            i -= 1;
            task(context, i);
        }
    }
}.run };

/// An argument block for tests: shape, operands with their offsets and strides, op, mode, threads.
pub fn testArgs(shape: []const i32, operands: []const []const i32, offsets: []const i32, op: i32, mode: i32, threads: i32) abi.ArgBlock {
    var args: abi.ArgBlock = std.mem.zeroes(abi.ArgBlock);
    args.rank = @intCast(shape.len);
    @memcpy(args.shape[0..shape.len], shape);
    for (operands, 0..) |strides, k| {
        args.operands[k].offset = offsets[k];
        @memcpy(args.operands[k].strides[0..strides.len], strides);
    }
    args.op = op;
    args.mode = mode;
    args.threads = threads;
    return args;
}

fn binaryOnce(op: BinaryOp, x: []const f32, y: []const f32, out: []f32) void {
    const n: i32 = @intCast(x.len);
    const args = testArgs(&.{n}, &.{ &.{1}, &.{1}, &.{1} }, &.{ 0, 0, 0 }, @intFromEnum(op), 1, 1);
    binaryF32(&test_runtime, &args, @ptrCast(out.ptr), @ptrCast(x.ptr), @ptrCast(y.ptr));
}

test "max and min propagate NaN and order the zeros" {
    const nan = std.math.nan(f32);
    const x = [_]f32{ nan, 1, 0.0, -0.0, -0.0, 3, 2, -5, 7 };
    const y = [_]f32{ 1, nan, -0.0, 0.0, -0.0, 3, 5, -7, 7 };
    var out: [9]f32 = undefined;
    binaryOnce(.max, &x, &y, &out);
    try testing.expect(std.math.isNan(out[0]) and std.math.isNan(out[1]));
    try testing.expect(!std.math.signbit(out[2]) and !std.math.signbit(out[3]) and std.math.signbit(out[4]));
    try testing.expectEqualSlices(f32, &.{ 3, 5, -5, 7 }, out[5..9]);
    binaryOnce(.min, &x, &y, &out);
    try testing.expect(std.math.isNan(out[0]) and std.math.isNan(out[1]));
    try testing.expect(std.math.signbit(out[2]) and std.math.signbit(out[3]) and std.math.signbit(out[4]));
    try testing.expectEqualSlices(f32, &.{ 3, 2, -7, 7 }, out[5..9]);
}

test "relu_backward passes g where the output is not <= 0 (NaN included) and writes +0 elsewhere" {
    const nan = std.math.nan(f32);
    const g = [_]f32{ -1, -2, -3, 4, 5, -6, 7, 8, 9 };
    const out = [_]f32{ -1, -0.0, 0, 1e-40, nan, 2, 0, 3, -4 };
    var dx: [9]f32 = undefined;
    binaryOnce(.relu_backward, &g, &out, &dx);
    try testing.expectEqualSlices(f32, &.{ 0, 0, 0, 4, 5, -6, 0, 8, 0 }, &dx);
    try testing.expect(!std.math.signbit(dx[0]) and !std.math.signbit(dx[1]) and !std.math.signbit(dx[2]));
}

test "gelu_backward is g/2 at 0, g where x is large, 0 where x is very negative, g·limit where x² overflows" {
    const g = [_]f32{ 3, 2, 5, -4, 7 };
    const x = [_]f32{ 0, 30, -30, 1e20, -1e20 };
    var d: [5]f32 = undefined;
    binaryOnce(.gelu_backward, &g, &x, &d);
    try testing.expectEqualSlices(f32, &.{ 1.5, 2, 0, -4, 0 }, &d);
}

test "comparisons write bytes and treat NaN as unordered" {
    const nan = std.math.nan(f32);
    const x = [_]f32{ 1, 2, 3, nan, -0.0 };
    const y = [_]f32{ 2, 2, 1, nan, 0.0 };
    const expected = [_][5]u8{
        .{ 0, 1, 0, 0, 1 }, .{ 1, 0, 1, 1, 0 }, .{ 1, 0, 0, 0, 0 },
        .{ 1, 1, 0, 0, 1 }, .{ 0, 0, 1, 0, 0 }, .{ 0, 1, 1, 0, 1 },
    };
    for ([_]BinaryOp{ .eq, .ne, .lt, .le, .gt, .ge }, expected) |op, want| {
        var out: [5]u8 = @splat(9);
        const args = testArgs(&.{5}, &.{ &.{1}, &.{1}, &.{1} }, &.{ 0, 0, 0 }, @intFromEnum(op), 0, 1);
        binaryF32(&test_runtime, &args, &out, @ptrCast(&x), @ptrCast(&y));
        try testing.expectEqualSlices(u8, &want, &out);
    }
}

test "strided, broadcast and flipped operands give the contiguous result, split or not" {
    var a: [200]f32 = undefined;
    var b: [200]f32 = undefined;
    for (&a, &b, 0..) |*x, *y, i| {
        x.* = @as(f32, @floatFromInt(i)) * 0.37 - 20;
        y.* = @as(f32, @floatFromInt(i % 13)) - 6.5;
    }
    // A 10x19 view: a transposed (strides 1, 10) over its first 190 elements; b broadcast along rows
    // (stride 0) and flipped along columns; out written with a row gap.
    var out: [10 * 20]f32 = @splat(-1);
    const args = testArgs(&.{ 10, 19 }, &.{ &.{ 20, 1 }, &.{ 1, 10 }, &.{ 0, -1 } }, &.{ 0, 0, 30 }, @intFromEnum(BinaryOp.mul), 0, 3);
    binaryF32(&test_runtime, &args, @ptrCast(&out), @ptrCast(&a), @ptrCast(&b));
    for (0..10) |r| {
        for (0..19) |c| try testing.expectEqual(a[r + 10 * c] * b[30 - c], out[r * 20 + c]);
        try testing.expectEqual(@as(f32, -1), out[r * 20 + 19]);
    }
}

test "spans cover a range exactly once, across row edges" {
    // A 7x5 transposed view: element (r, c) sits at r + 7c.
    const a_op: abi.Operand = .{ .offset = 0, .strides = .{ 1, 7, 0, 0, 0, 0, 0, 0 } };
    const rows = Rows(1).init(&.{ 7, 5 }, .{&a_op});
    const Mark = struct {
        hits: [35]u8 = @splat(0),
        pub fn span(self: *@This(), offsets: [1]isize, begin: usize, end: usize) void {
            for (begin..end) |c| self.hits[@as(usize, @intCast(offsets[0])) + 7 * c] += 1;
        }
    };
    for ([_][2]usize{ .{ 0, 35 }, .{ 3, 4 }, .{ 4, 11 }, .{ 5, 10 }, .{ 12, 34 } }) |range| {
        var mark: Mark = .{};
        forEachSpan(&rows, range[0], range[1], &mark);
        for (mark.hits, 0..) |hit, i| {
            const flat = (i % 7) * 5 + i / 7;
            try testing.expectEqual(@as(u8, @intFromBool(flat >= range[0] and flat < range[1])), hit);
        }
    }
}

test {
    _ = math;
    _ = unary;
    _ = reduce;
    _ = softmax;
    _ = pool;
}

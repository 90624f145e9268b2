//! Element-wise kernels, written once over a comptime vector width (`std.simd.suggestVectorLength` of the
//! target each variant is compiled for). Rows whose operands all step by one run in vectors with a scalar
//! tail; other rows run the plain strided loop. Each element is one IEEE f32 operation, so every variant
//! gives the same bits as the TypeScript reference.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("table.zig");
const Rows = @import("rows.zig").Rows;

const lanes = std.simd.suggestVectorLength(f32) orelse 1;
const V = @Vector(lanes, f32);

/// out = a (op) b over one shape; operands 0, 1, 2 of the argument block are out, a and b.
pub const BinaryFn = *const fn (rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8, b: [*]const u8) callconv(.c) void;

/// This family's entries in the kernel table.
pub const Table = extern struct {
    binary_f32: BinaryFn,
};

pub const table_entries: Table = .{
    .binary_f32 = binaryF32,
};

/// Binary operations, numbered as in the binding's `BinaryOp`.
pub const BinaryOp = enum(i32) {
    add = 0,
    sub = 1,
    mul = 2,
    div = 3,
};

inline fn apply(comptime op: BinaryOp, comptime T: type, x: T, y: T) T {
    return switch (op) {
        .add => x + y,
        .sub => x - y,
        .mul => x * y,
        .div => x / y,
    };
}

fn BinaryRow(comptime op: BinaryOp) type {
    return struct {
        out: [*]f32,
        a: [*]const f32,
        b: [*]const f32,
        len: usize,
        inner: [3]isize,

        pub fn row(self: *const @This(), offsets: [3]isize) void {
            const out = self.out + @as(usize, @intCast(offsets[0]));
            const a = offsetPtr(self.a, offsets[1]);
            const b = offsetPtr(self.b, offsets[2]);
            if (self.inner[0] == 1 and self.inner[1] == 1 and self.inner[2] == 1) {
                var i: usize = 0;
                while (i + lanes <= self.len) : (i += lanes) {
                    const x: V = a[i..][0..lanes].*;
                    const y: V = b[i..][0..lanes].*;
                    out[i..][0..lanes].* = apply(op, V, x, y);
                }
                while (i < self.len) : (i += 1) out[i] = apply(op, f32, a[i], b[i]);
                return;
            }
            var pa: isize = 0;
            var pb: isize = 0;
            var po: isize = 0;
            for (0..self.len) |_| {
                out[@intCast(po)] = apply(op, f32, elem(a, pa), elem(b, pb));
                po += self.inner[0];
                pa += self.inner[1];
                pb += self.inner[2];
            }
        }
    };
}

/// Pointer arithmetic with a signed element offset (negative strides reach below the row start).
inline fn offsetPtr(base: [*]const f32, offset: isize) [*]const f32 {
    return @ptrFromInt(@as(usize, @bitCast(@as(isize, @bitCast(@intFromPtr(base))) + offset * @sizeOf(f32))));
}

inline fn elem(base: [*]const f32, offset: isize) f32 {
    return offsetPtr(base, offset)[0];
}

/// Rows below this many elements in total stay on the calling thread.
const parallel_min_elements = 1 << 16;

fn Job(comptime Visit: type) type {
    return struct {
        rows: *const Rows(3),
        visit: *const Visit,
        per_task: usize,

        fn run(context: *anyopaque, task: u32) callconv(.c) void {
            const job: *const @This() = @ptrCast(@alignCast(context));
            const count = job.rows.rowCount();
            const first = @min(count, task * job.per_task);
            job.rows.forEachRow(first, @min(count, first + job.per_task), job.visit);
        }
    };
}

/// Runs `visit` over all rows, split across threads when the work is large enough.
pub fn runRows(rt: *const table.Runtime, args: *const abi.ArgBlock, rows: *const Rows(3), visit: anytype) void {
    const count = rows.rowCount();
    const elements = count * rows.rowLength();
    const threads: usize = @intCast(@max(1, args.threads));
    if (threads == 1 or count < 2 or elements < parallel_min_elements) {
        rows.forEachRow(0, count, visit);
        return;
    }
    const tasks = @min(count, threads * 4);
    var job: Job(@TypeOf(visit.*)) = .{ .rows = rows, .visit = visit, .per_task = (count + tasks - 1) / tasks };
    rt.parallelFor(&job, @intCast(tasks), @intCast(threads), @TypeOf(job).run);
}

pub fn binaryF32(rt: *const table.Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8, b: [*]const u8) callconv(.c) void {
    const rows = Rows(3).init(args.shapeSlice(), .{ &args.operands[0], &args.operands[1], &args.operands[2] });
    if (args.shapeSlice().len > 0) {
        for (args.shapeSlice()) |extent| if (extent == 0) return;
    }
    switch (@as(BinaryOp, @enumFromInt(args.op))) {
        inline else => |op| {
            const visit: BinaryRow(op) = .{
                .out = @ptrCast(@alignCast(out)),
                .a = @ptrCast(@alignCast(a)),
                .b = @ptrCast(@alignCast(b)),
                .len = rows.rowLength(),
                .inner = rows.innerStrides(),
            };
            runRows(rt, args, &rows, &visit);
        },
    }
}

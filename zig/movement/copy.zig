//! Strided copy: the data movement behind `contiguous`, `clone`, `copyFrom`, reshape's copy and `toLayout`.
//! Axes are coalesced first (extent-1 axes dropped, neighbours that both sides step through as one merged,
//! see `Rows`), so most views shrink to one, two or three axes. The innermost two axes form a block that is
//! copied by one of three paths: a memcpy per row when both inner strides are 1, a fill when the
//! destination's inner stride is 1 and the source's is 0 (a broadcast), and a strided loop otherwise (tiled
//! when the source or destination walks its rows more tightly than its columns, as a transpose does). The
//! outer axes advance by the odometer of `Rows`. Copies of 2^16 elements or more are split over threads in
//! units of row strips of a block (or column chunks of a single row); every element is written by exactly
//! one task, so the result never depends on the thread count. Memory-bound, so it is compiled once, in the
//! core. Element size is any positive byte count: 1, 2, 4 and 8 take typed loops, other sizes (quantized
//! blocks) take a memcpy per element.
const std = @import("std");
const abi = @import("../abi.zig");
const table = @import("../kernels/table.zig");
const Rows = @import("../kernels/rows.zig").Rows;

/// Copies and casts with fewer elements than this stay on the calling thread.
pub const parallel_min_elements = 1 << 16;
/// Column tile of the tiled strided path, in elements.
const tile_cols = 16;
/// Row strip of the tiled path, and the unit of work a thread claims there.
const tile_rows = 32;
/// Row strip of the transpose path, the unit a thread claims there.
const transpose_strip_rows = 128;
/// Column block of the transpose path: the source lines (and pages) one block touches stay cached while
/// the strip's row groups cross it.
const transpose_col_block = 128;
/// Elements per work unit on the untiled paths.
const unit_elements = 1 << 14;

/// `zt_copy`: copies `args.shape` elements of `args.ints[0]` bytes from operand 1 (at `src`) to operand 0
/// (at `dst`). Assumes a valid shape, strides that stay inside both buffers, and no overlap between the
/// destination and the source elements.
pub fn copy(rt: *const table.Runtime, args: *const abi.ArgBlock, dst: [*]u8, src: [*]const u8) void {
    std.debug.assert(args.ints[0] > 0);
    std.debug.assert(args.rank >= 0 and args.rank <= abi.max_rank);
    const elem_bytes: usize = @intCast(args.ints[0]);
    copyStrided(rt, threadCount(args), elem_bytes, args.shapeSlice(), &args.operands[0], &args.operands[1], dst, src);
}

/// The thread count a kernel may use: `args.threads`, at least 1.
pub fn threadCount(args: *const abi.ArgBlock) usize {
    return @intCast(@max(1, args.threads));
}

/// Copies `shape` elements of `elem_bytes` bytes from `src` (operand `src_op`) to `dst` (operand `dst_op`).
pub fn copyStrided(
    rt: *const table.Runtime,
    threads: usize,
    elem_bytes: usize,
    shape: []const i32,
    dst_op: *const abi.Operand,
    src_op: *const abi.Operand,
    dst: [*]u8,
    src: [*]const u8,
) void {
    for (shape) |extent| if (extent == 0) return;
    const rows = Rows(2).init(shape, .{ dst_op, src_op });
    switch (elem_bytes) {
        inline 1, 2, 4, 8 => |size| copyRows(std.meta.Int(.unsigned, 8 * size), rt, threads, &rows, .{ .size = size }, dst, src),
        else => copyRows(void, rt, threads, &rows, .{ .size = elem_bytes }, dst, src),
    }
}

/// An element of `size` bytes; `T` is the unsigned integer of that size, or `void` for any other size.
fn Element(comptime T: type) type {
    return struct {
        size: usize,

        inline fn move(e: @This(), dst: [*]u8, d: usize, src: [*]const u8, s: usize) void {
            if (T == void) {
                @memcpy(dst[d * e.size ..][0..e.size], src[s * e.size ..][0..e.size]);
            } else {
                const out: [*]T = @ptrCast(@alignCast(dst));
                const in: [*]const T = @ptrCast(@alignCast(src));
                out[d] = in[s];
            }
        }

        inline fn fill(e: @This(), dst: [*]u8, d: usize, n: usize, src: [*]const u8, s: usize) void {
            if (T == void) {
                for (0..n) |i| e.move(dst, d + i, src, s);
            } else {
                const out: [*]T = @ptrCast(@alignCast(dst));
                const in: [*]const T = @ptrCast(@alignCast(src));
                @memset(out[d..][0..n], in[s]);
            }
        }
    };
}

/// The two innermost axes after coalescing: `rows` × `cols` elements, and each side's strides.
const Block = struct {
    rows: usize,
    cols: usize,
    dst_row: isize,
    dst_col: isize,
    src_row: isize,
    src_col: isize,

    fn tiled(b: Block) bool {
        if (b.rows < 2) return false;
        return @abs(b.src_col) > @abs(b.src_row) or @abs(b.dst_col) > @abs(b.dst_row);
    }

    /// A transpose: the destination steps by one along columns and the source by one along rows.
    fn transposes(b: Block) bool {
        return b.rows >= 2 and b.dst_col == 1 and b.src_row == 1 and b.src_col != 1;
    }
};

inline fn at(base: isize, index: usize, stride: isize) usize {
    return @intCast(base + @as(isize, @intCast(index)) * stride);
}

/// Copies rows `r0..r1` and columns `c0..c1` of the block whose first element is at `d_off` / `s_off`.
fn copyBlock(
    comptime T: type,
    e: Element(T),
    b: Block,
    dst: [*]u8,
    src: [*]const u8,
    d_off: isize,
    s_off: isize,
    r0: usize,
    r1: usize,
    c0: usize,
    c1: usize,
) void {
    const n = c1 - c0;
    if (b.dst_col == 1 and b.src_col == 1) {
        for (r0..r1) |r| {
            const d = at(d_off, r, b.dst_row) + c0;
            const s = at(s_off, r, b.src_row) + c0;
            @memcpy(dst[d * e.size ..][0 .. n * e.size], src[s * e.size ..][0 .. n * e.size]);
        }
    } else if (b.dst_col == 1 and b.src_col == 0) {
        for (r0..r1) |r| e.fill(dst, at(d_off, r, b.dst_row) + c0, n, src, at(s_off, r, b.src_row));
    } else if (T != void and b.transposes()) {
        transposeBlock(T, dst, src, b, d_off, s_off, r0, r1, c0, c1);
    } else if (b.tiled()) {
        // Tiles keep the lines both sides touch in cache while the column loop crosses the rows.
        var t0 = c0;
        while (t0 < c1) : (t0 += tile_cols) {
            const t1 = @min(c1, t0 + tile_cols);
            for (r0..r1) |r| stridedRun(T, e, dst, src, at(d_off, r, b.dst_row), at(s_off, r, b.src_row), b, t0, t1);
        }
    } else {
        for (r0..r1) |r| stridedRun(T, e, dst, src, at(d_off, r, b.dst_row), at(s_off, r, b.src_row), b, c0, c1);
    }
}

inline fn stridedRun(comptime T: type, e: Element(T), dst: [*]u8, src: [*]const u8, d_row: usize, s_row: usize, b: Block, c0: usize, c1: usize) void {
    var d: isize = @as(isize, @intCast(d_row)) + @as(isize, @intCast(c0)) * b.dst_col;
    var s: isize = @as(isize, @intCast(s_row)) + @as(isize, @intCast(c0)) * b.src_col;
    for (c0..c1) |_| {
        e.move(dst, @intCast(d), src, @intCast(s));
        d += b.dst_col;
        s += b.src_col;
    }
}

/// Lanes of a 16-byte vector of `T`: the micro-tile of the transpose path is lanes × lanes elements.
fn transposeLanes(comptime T: type) usize {
    return 16 / @sizeOf(T);
}

/// Transposes a square tile held as rows: `log2(lanes)` rounds of interleaving row i with row i + lanes/2
/// (low halves into row 2i, high halves into row 2i + 1) leave column k in row k.
inline fn transposeSquare(comptime T: type, comptime lanes: comptime_int, rows: *[lanes]@Vector(lanes, T)) void {
    const half = lanes / 2;
    const lo: @Vector(lanes, i32) = comptime blk: {
        var mask: [lanes]i32 = undefined;
        for (0..half) |k| {
            mask[2 * k] = k;
            mask[2 * k + 1] = ~@as(i32, k);
        }
        break :blk mask;
    };
    const hi: @Vector(lanes, i32) = comptime blk: {
        var mask: [lanes]i32 = undefined;
        for (0..half) |k| {
            mask[2 * k] = half + k;
            mask[2 * k + 1] = ~@as(i32, half + k);
        }
        break :blk mask;
    };
    inline for (0..comptime std.math.log2_int(usize, lanes)) |_| {
        var next: [lanes]@Vector(lanes, T) = undefined;
        inline for (0..half) |i| {
            next[2 * i] = @shuffle(T, rows[i], rows[i + half], lo);
            next[2 * i + 1] = @shuffle(T, rows[i], rows[i + half], hi);
        }
        rows.* = next;
    }
}

/// The transpose path: dst(r, c) = src(r, c) with the destination contiguous along c and the source along
/// r. Square micro-tiles go through registers (`transposeSquare`). The strip is cut into blocks of
/// `transpose_col_block` columns, and each block is walked a group of rows at a time across its columns:
/// the destination lines are written whole, in order, and the source lines a block touches stay in L2
/// (and in the TLB) until the following row groups have used them up. Edges take the scalar loop.
fn transposeBlock(comptime T: type, dst_bytes: [*]u8, src_bytes: [*]const u8, b: Block, d_off: isize, s_off: isize, r0: usize, r1: usize, c0: usize, c1: usize) void {
    var cb = c0;
    while (cb < c1) : (cb += transpose_col_block) {
        transposeTile(T, dst_bytes, src_bytes, b, d_off, s_off, r0, r1, cb, @min(c1, cb + transpose_col_block));
    }
}

fn transposeTile(comptime T: type, dst_bytes: [*]u8, src_bytes: [*]const u8, b: Block, d_off: isize, s_off: isize, r0: usize, r1: usize, c0: usize, c1: usize) void {
    const lanes = comptime transposeLanes(T);
    const V = @Vector(lanes, T);
    const dst: [*]T = @ptrCast(@alignCast(dst_bytes));
    const src: [*]const T = @ptrCast(@alignCast(src_bytes));
    const e: Element(T) = .{ .size = @sizeOf(T) };
    const r_end = r0 + (r1 - r0) / lanes * lanes;
    const c_end = c0 + (c1 - c0) / lanes * lanes;
    var r = r0;
    while (r < r_end) : (r += lanes) {
        var c = c0;
        while (c < c_end) : (c += lanes) {
            var tile: [lanes]V = undefined;
            inline for (0..lanes) |k| tile[k] = src[at(s_off, c + k, b.src_col) + r ..][0..lanes].*;
            transposeSquare(T, lanes, &tile);
            inline for (0..lanes) |k| dst[at(d_off, r + k, b.dst_row) + c ..][0..lanes].* = tile[k];
        }
        for (r..r + lanes) |row| stridedRun(T, e, dst_bytes, src_bytes, at(d_off, row, b.dst_row), at(s_off, row, b.src_row), b, c_end, c1);
    }
    for (r_end..r1) |row| stridedRun(T, e, dst_bytes, src_bytes, at(d_off, row, b.dst_row), at(s_off, row, b.src_row), b, c0, c1);
}

/// Work for one copy: blocks of `block` geometry at the rows of `outer` (the coalesced axes without the
/// innermost one), each cut into `strips` strips of `strip_rows` rows, or one row cut into column chunks.
fn CopyJob(comptime T: type) type {
    return struct {
        const Job = @This();

        e: Element(T),
        outer: Rows(2),
        block: Block,
        dst: [*]u8,
        src: [*]const u8,
        /// Rows per unit (rank ≥ 2), or 0 when the units are column chunks of a single row.
        strip_rows: usize,
        strips: usize,
        chunk_cols: usize,
        units: usize,
        units_per_task: usize,

        fn runUnits(job: *const Job, unit_first: usize, unit_end: usize) void {
            if (unit_first >= unit_end) return;
            if (job.strip_rows == 0) {
                const c0 = unit_first * job.chunk_cols;
                const c1 = @min(job.block.cols, unit_end * job.chunk_cols);
                copyBlock(T, job.e, job.block, job.dst, job.src, job.outer.offsets[0], job.outer.offsets[1], 0, 1, c0, c1);
                return;
            }
            var visit: Visit = .{ .job = job, .unit = unit_first / job.strips * job.strips, .unit_first = unit_first, .unit_end = unit_end };
            job.outer.forEachRow(unit_first / job.strips, (unit_end - 1) / job.strips + 1, &visit);
        }

        const Visit = struct {
            job: *const Job,
            /// The first unit of the block being visited.
            unit: usize,
            unit_first: usize,
            unit_end: usize,

            pub fn row(v: *Visit, offsets: [2]isize) void {
                const job = v.job;
                const first = (@max(v.unit_first, v.unit) - v.unit) * job.strip_rows;
                const last = @min(job.block.rows, (@min(v.unit_end, v.unit + job.strips) - v.unit) * job.strip_rows);
                copyBlock(T, job.e, job.block, job.dst, job.src, offsets[0], offsets[1], first, last, 0, job.block.cols);
                v.unit += job.strips;
            }
        };

        fn run(context: *anyopaque, task: u32) callconv(.c) void {
            const job: *const Job = @ptrCast(@alignCast(context));
            const unit_first = @min(job.units, task * job.units_per_task);
            job.runUnits(unit_first, @min(job.units, unit_first + job.units_per_task));
        }
    };
}

fn copyRows(
    comptime T: type,
    rt: *const table.Runtime,
    threads: usize,
    rows: *const Rows(2),
    e: Element(T),
    dst: [*]u8,
    src: [*]const u8,
) void {
    const r = rows.rank;
    var outer = rows.*;
    // A destination that steps by one along rows and a source that does along columns is a transpose
    // the other way round: swapping the two inner axes (only the visiting order changes) makes it one
    // that `transposeBlock` takes.
    if (r >= 2 and outer.strides[0][r - 2] == 1 and outer.strides[1][r - 1] == 1 and outer.strides[0][r - 1] != 1) {
        std.mem.swap(usize, &outer.shape[r - 2], &outer.shape[r - 1]);
        for (0..2) |k| std.mem.swap(isize, &outer.strides[k][r - 2], &outer.strides[k][r - 1]);
    }
    var job: CopyJob(T) = .{
        .e = e,
        .outer = outer,
        .block = .{
            .rows = if (r >= 2) outer.shape[r - 2] else 1,
            .cols = outer.shape[r - 1],
            .dst_row = if (r >= 2) outer.strides[0][r - 2] else 0,
            .dst_col = outer.strides[0][r - 1],
            .src_row = if (r >= 2) outer.strides[1][r - 2] else 0,
            .src_col = outer.strides[1][r - 1],
        },
        .dst = dst,
        .src = src,
        .strip_rows = 0,
        .strips = 1,
        .chunk_cols = outer.shape[r - 1],
        .units = 1,
        .units_per_task = 1,
    };
    const blocks = if (r >= 2) job.outer.rowCount() / job.block.rows else 1;
    const elements = blocks * job.block.rows * job.block.cols;
    if (r >= 2) {
        // The truncated row loop visits the first element of every block.
        job.outer.rank = r - 1;
        job.strip_rows = if (T != void and job.block.transposes())
            @max(transpose_strip_rows, transposeLanes(T))
        else if (job.block.tiled())
            tile_rows
        else
            @max(1, unit_elements / job.block.cols);
        job.strip_rows = @min(job.strip_rows, job.block.rows);
        job.strips = (job.block.rows + job.strip_rows - 1) / job.strip_rows;
        job.units = blocks * job.strips;
    } else {
        job.chunk_cols = unit_elements;
        job.units = (job.block.cols + unit_elements - 1) / unit_elements;
    }
    if (threads == 1 or job.units < 2 or elements < parallel_min_elements) {
        job.runUnits(0, job.units);
        return;
    }
    const tasks = @min(job.units, threads * 4);
    job.units_per_task = (job.units + tasks - 1) / tasks;
    const task_count = (job.units + job.units_per_task - 1) / job.units_per_task;
    rt.parallelFor(&job, @intCast(task_count), @intCast(threads), CopyJob(T).run);
}

/// Runs `visit.span(offsets, len)` over every row of `rows`, where a span is a whole row or, when there are
/// fewer rows than work units wanted, a column chunk of one (`offsets` then point at the chunk's start).
/// Split over threads when there are 2^16 elements or more. Each element belongs to exactly one span.
pub fn forEachSpan(rt: *const table.Runtime, threads: usize, rows: *const Rows(2), visit: anytype) void {
    const count = rows.rowCount();
    const len = rows.rowLength();
    if (count == 0 or len == 0) return;
    const Visit = @TypeOf(visit.*);
    var job: SpanJob(Visit) = .{ .rows = rows, .visit = visit, .chunks = 1, .chunk_len = len, .units = count, .per_task = count };
    if (threads == 1 or count * len < parallel_min_elements) {
        job.runUnits(0, count);
        return;
    }
    const wanted = threads * 4;
    if (count < wanted) {
        job.chunks = @min((wanted + count - 1) / count, (len + unit_elements - 1) / unit_elements);
        job.chunks = @max(1, job.chunks);
        job.chunk_len = (len + job.chunks - 1) / job.chunks;
        job.chunks = (len + job.chunk_len - 1) / job.chunk_len;
    }
    job.units = count * job.chunks;
    if (job.units < 2) {
        job.runUnits(0, job.units);
        return;
    }
    const tasks = @min(job.units, wanted);
    job.per_task = (job.units + tasks - 1) / tasks;
    const task_count = (job.units + job.per_task - 1) / job.per_task;
    rt.parallelFor(&job, @intCast(task_count), @intCast(threads), SpanJob(Visit).run);
}

fn SpanJob(comptime Visit: type) type {
    return struct {
        const Job = @This();

        rows: *const Rows(2),
        visit: *const Visit,
        chunks: usize,
        chunk_len: usize,
        units: usize,
        per_task: usize,

        fn runUnits(job: *const Job, unit_first: usize, unit_end: usize) void {
            if (unit_first >= unit_end) return;
            var cursor: Cursor = .{ .job = job, .unit = unit_first / job.chunks * job.chunks, .unit_first = unit_first, .unit_end = unit_end };
            job.rows.forEachRow(unit_first / job.chunks, (unit_end - 1) / job.chunks + 1, &cursor);
        }

        const Cursor = struct {
            job: *const Job,
            unit: usize,
            unit_first: usize,
            unit_end: usize,

            pub fn row(c: *Cursor, offsets: [2]isize) void {
                const job = c.job;
                const len = job.rows.rowLength();
                const inner = job.rows.innerStrides();
                const first = @max(c.unit_first, c.unit) - c.unit;
                const last = @min(c.unit_end, c.unit + job.chunks) - c.unit;
                for (first..last) |chunk| {
                    const start = chunk * job.chunk_len;
                    const n = @min(len, start + job.chunk_len) - start;
                    const shift: isize = @intCast(start);
                    job.visit.span(.{ offsets[0] + shift * inner[0], offsets[1] + shift * inner[1] }, n);
                }
                c.unit += job.chunks;
            }
        };

        fn run(context: *anyopaque, task: u32) callconv(.c) void {
            const job: *const Job = @ptrCast(@alignCast(context));
            const unit_first = @min(job.units, task * job.per_task);
            job.runUnits(unit_first, @min(job.units, unit_first + job.per_task));
        }
    };
}

// --- tests ---

const testing = std.testing;
const ThreadPool = @import("../ThreadPool.zig");

/// The element offset of row-major index `flat` of `shape` in an operand.
fn naiveOffset(shape: []const i32, op: *const abi.Operand, flat: usize) usize {
    var rest = flat;
    var offset: isize = op.offset;
    var axis = shape.len;
    while (axis > 0) {
        axis -= 1;
        const extent: usize = @intCast(shape[axis]);
        offset += @as(isize, @intCast(rest % extent)) * op.strides[axis];
        rest /= extent;
    }
    return @intCast(offset);
}

fn elementCount(shape: []const i32) usize {
    var n: usize = 1;
    for (shape) |e| n *= @intCast(e);
    return n;
}

/// A random operand over `shape` inside a buffer: random signs, zero strides (source only) and gaps.
fn randomOperand(random: std.Random, shape: []const i32, allow_zero: bool, buffer_elems: *usize) abi.Operand {
    var op: abi.Operand = .{ .offset = 0, .strides = @splat(0) };
    var perm: [abi.max_rank]usize = undefined;
    for (0..shape.len) |i| perm[i] = i;
    random.shuffle(usize, perm[0..shape.len]);
    var step: i32 = 1 + @as(i32, @intCast(random.uintLessThan(u32, 2)));
    var low: isize = 0;
    var high: isize = 0;
    for (perm[0..shape.len]) |axis| {
        const extent = shape[axis];
        if (allow_zero and random.uintLessThan(u32, 5) == 0) {
            op.strides[axis] = 0;
            continue;
        }
        const negative = random.boolean();
        op.strides[axis] = if (negative) -step else step;
        const reach = @as(isize, @max(extent - 1, 0)) * step;
        if (negative) low -= reach else high += reach;
        step *= @max(extent, 1) + @as(i32, @intCast(random.uintLessThan(u32, 2)));
    }
    op.offset = @intCast(-low + @as(isize, @intCast(random.uintLessThan(u32, 3))));
    buffer_elems.* = @intCast(op.offset + high + 1);
    return op;
}

fn checkRandomCopy(comptime T: type, random: std.Random, threads: usize, big: bool) !void {
    var shape_buf: [abi.max_rank]i32 = undefined;
    // Big cases (rank 3, 8000 to 343000 elements) take the threaded path.
    const rank = if (big) 3 else random.uintAtMost(usize, abi.max_rank);
    const shape = shape_buf[0..rank];
    for (shape) |*e| e.* = @intCast(if (big) 20 + random.uintAtMost(u32, 50) else random.uintAtMost(u32, 4));
    var dst_elems: usize = 0;
    var src_elems: usize = 0;
    const dst_op = randomOperand(random, shape, false, &dst_elems);
    const src_op = randomOperand(random, shape, true, &src_elems);
    const n = elementCount(shape);
    if (n > 1 << 20) return;
    const src = try testing.allocator.alloc(T, src_elems);
    defer testing.allocator.free(src);
    const dst = try testing.allocator.alloc(T, dst_elems);
    defer testing.allocator.free(dst);
    for (src, 0..) |*x, i| x.* = @truncate(i *% 2654435761 +% 1);
    @memset(dst, 0);
    copyStrided(&ThreadPool.runtime, threads, @sizeOf(T), shape, &dst_op, &src_op, @ptrCast(dst.ptr), @ptrCast(src.ptr));
    for (0..n) |flat| {
        try testing.expectEqual(src[naiveOffset(shape, &src_op, flat)], dst[naiveOffset(shape, &dst_op, flat)]);
    }
}

test "strided copies of random shapes and strides match an index-by-index copy" {
    var prng = std.Random.DefaultPrng.init(0x5eed);
    const random = prng.random();
    for (0..1500) |i| {
        const threads = 1 + i % 3;
        switch (i % 4) {
            0 => try checkRandomCopy(u8, random, threads, false),
            1 => try checkRandomCopy(u16, random, threads, false),
            2 => try checkRandomCopy(u32, random, threads, i % 50 == 2),
            else => try checkRandomCopy(u64, random, threads, false),
        }
    }
}

test "a transposed copy, a broadcast fill and a contiguous copy above the thread threshold" {
    const n = 300;
    const src = try testing.allocator.alloc(u32, n * n);
    defer testing.allocator.free(src);
    const dst = try testing.allocator.alloc(u32, n * n);
    defer testing.allocator.free(dst);
    for (src, 0..) |*x, i| x.* = @intCast(i);
    const shape = [_]i32{ n, n };
    const contiguous: abi.Operand = .{ .offset = 0, .strides = .{ n, 1, 0, 0, 0, 0, 0, 0 } };
    const transposed: abi.Operand = .{ .offset = 0, .strides = .{ 1, n, 0, 0, 0, 0, 0, 0 } };
    const row_broadcast: abi.Operand = .{ .offset = 7, .strides = .{ 1, 0, 0, 0, 0, 0, 0, 0 } };
    for ([_]usize{ 1, 3 }) |threads| {
        copyStrided(&ThreadPool.runtime, threads, 4, &shape, &contiguous, &transposed, @ptrCast(dst.ptr), @ptrCast(src.ptr));
        for (0..n) |i| for (0..n) |j| try testing.expectEqual(@as(u32, @intCast(j * n + i)), dst[i * n + j]);
        copyStrided(&ThreadPool.runtime, threads, 4, &shape, &contiguous, &row_broadcast, @ptrCast(dst.ptr), @ptrCast(src.ptr));
        for (0..n) |i| for (0..n) |j| try testing.expectEqual(@as(u32, @intCast(7 + i)), dst[i * n + j]);
        copyStrided(&ThreadPool.runtime, threads, 4, &shape, &contiguous, &contiguous, @ptrCast(dst.ptr), @ptrCast(src.ptr));
        try testing.expectEqualSlices(u32, src, dst);
    }
}

test "elements of 18 bytes (Q4_0 blocks) copy whole, rows reversed" {
    const size = 18;
    var src: [4 * 3 * size]u8 = undefined;
    for (&src, 0..) |*x, i| x.* = @truncate(i);
    var dst: [4 * 3 * size]u8 = @splat(0);
    const shape = [_]i32{ 4, 3 };
    const dst_op: abi.Operand = .{ .offset = 0, .strides = .{ 3, 1, 0, 0, 0, 0, 0, 0 } };
    const src_op: abi.Operand = .{ .offset = 9, .strides = .{ -3, 1, 0, 0, 0, 0, 0, 0 } };
    copyStrided(&ThreadPool.runtime, 1, size, &shape, &dst_op, &src_op, &dst, &src);
    for (0..4) |row| {
        try testing.expectEqualSlices(u8, src[(3 - row) * 3 * size ..][0 .. 3 * size], dst[row * 3 * size ..][0 .. 3 * size]);
    }
}

test "an empty shape copies nothing and a rank-0 shape copies one element" {
    var src = [_]u64{ 5, 6 };
    var dst = [_]u64{ 0, 0 };
    const op: abi.Operand = .{ .offset = 1, .strides = @splat(0) };
    copyStrided(&ThreadPool.runtime, 2, 8, &.{ 3, 0 }, &op, &op, @ptrCast(&dst), @ptrCast(&src));
    try testing.expectEqualSlices(u64, &.{ 0, 0 }, &dst);
    copyStrided(&ThreadPool.runtime, 2, 8, &.{}, &op, &op, @ptrCast(&dst), @ptrCast(&src));
    try testing.expectEqualSlices(u64, &.{ 0, 6 }, &dst);
}

test "transposes of every element size, both ways round, with edges that are not whole micro-tiles" {
    inline for (.{ u8, u16, u32, u64 }) |T| {
        for ([_][2]i32{ .{ 37, 45 }, .{ 130, 259 }, .{ 5, 3 }, .{ 16, 16 } }) |dims| {
            const rows = dims[0];
            const cols = dims[1];
            const n: usize = @intCast(rows * cols);
            const src = try testing.allocator.alloc(T, n + 3);
            defer testing.allocator.free(src);
            const dst = try testing.allocator.alloc(T, n);
            defer testing.allocator.free(dst);
            for (src, 0..) |*x, i| x.* = @truncate(i *% 2654435761);
            const shape = [_]i32{ rows, cols };
            // dst row-major; src column-major from offset 3: dst(r, c) = src[3 + r + c·rows].
            const row_major: abi.Operand = .{ .offset = 0, .strides = .{ cols, 1, 0, 0, 0, 0, 0, 0 } };
            const col_major: abi.Operand = .{ .offset = 3, .strides = .{ 1, rows, 0, 0, 0, 0, 0, 0 } };
            for ([_]usize{ 1, 2 }) |threads| {
                @memset(dst, 0);
                copyStrided(&ThreadPool.runtime, threads, @sizeOf(T), &shape, &row_major, &col_major, @ptrCast(dst.ptr), @ptrCast(src.ptr));
                for (0..@intCast(rows)) |r| for (0..@intCast(cols)) |c| {
                    try testing.expectEqual(src[3 + r + c * @as(usize, @intCast(rows))], dst[r * @as(usize, @intCast(cols)) + c]);
                };
                // The other way round: a column-major destination from a row-major source.
                const dst_col_major: abi.Operand = .{ .offset = 0, .strides = .{ 1, rows, 0, 0, 0, 0, 0, 0 } };
                const src_row_major: abi.Operand = .{ .offset = 2, .strides = .{ cols, 1, 0, 0, 0, 0, 0, 0 } };
                @memset(dst, 0);
                copyStrided(&ThreadPool.runtime, threads, @sizeOf(T), &shape, &dst_col_major, &src_row_major, @ptrCast(dst.ptr), @ptrCast(src.ptr));
                for (0..@intCast(rows)) |r| for (0..@intCast(cols)) |c| {
                    try testing.expectEqual(src[2 + r * @as(usize, @intCast(cols)) + c], dst[r + c * @as(usize, @intCast(rows))]);
                };
            }
        }
    }
}

//! The buffer pool: 64-byte aligned blocks served from size classes, one free list per class, an idle cap
//! above which released blocks go back to the OS. Safe from many threads (one lock per class, atomic
//! counters); nothing depends on timing or thread count. In CHECKED builds new and returned memory reads
//! 0xFF and 64 canary bytes of 0xA5 follow every block's requested length.
const std = @import("std");
const builtin = @import("builtin");
const checked = @import("build_options").checked;

const BufferPool = @This();
const Io = std.Io;

pub const alignment = 64;
pub const canary_bytes = 64;
pub const canary_byte: u8 = 0xA5;
pub const poison_byte: u8 = 0xFF;
pub const max_request: u64 = std.math.maxInt(i32);
pub const default_max_idle_bytes: u64 = 2 << 30;

/// Classes 64, 128, 192, 256, then four per power of two up to 2^31.
pub const class_count = 4 + 4 * (31 - 8);

/// The class a request of `n` bytes is served from: for n ≤ 256, max(64, n rounded up to 64); above, with
/// b the largest power of two below n, b + ceil((n − b)/(b/4))·(b/4). Computed in 64 bits, so 2^31 − 1
/// maps to 2^31.
pub fn sizeClass(n: u64) u64 {
    if (n <= 256) return @max(64, std.mem.alignForward(u64, n, 64));
    const b = @as(u64, 1) << @intCast(63 - @clz(n - 1));
    const step = b / 4;
    return b + (n - b + step - 1) / step * step;
}

/// Index of a class size in `0..class_count`.
pub fn classIndex(size: u64) usize {
    if (size <= 256) return @intCast(size / 64 - 1);
    const b = @as(u64, 1) << @intCast(63 - @clz(size - 1));
    const quarter = (size - b) / (b / 4);
    const log_b: usize = 63 - @clz(b);
    return 4 + (log_b - 8) * 4 + @as(usize, @intCast(quarter)) - 1;
}

const FreeBlock = struct { next: ?*FreeBlock };

const Class = struct {
    lock: Io.Mutex = .init,
    head: ?*FreeBlock = null,
};

pub const Stats = extern struct {
    rented_bytes: u64,
    rented_blocks: u64,
    idle_bytes: u64,
    idle_blocks: u64,
    os_bytes: u64,
    hits: u64,
    misses: u64,
    max_idle_bytes: u64,
};

classes: [class_count]Class = @splat(.{}),
rented_bytes: std.atomic.Value(u64) = .init(0),
rented_blocks: std.atomic.Value(u64) = .init(0),
idle_bytes: std.atomic.Value(u64) = .init(0),
idle_blocks: std.atomic.Value(u64) = .init(0),
os_bytes: std.atomic.Value(u64) = .init(0),
hits: std.atomic.Value(u64) = .init(0),
misses: std.atomic.Value(u64) = .init(0),
max_idle_bytes: std.atomic.Value(u64) = .init(default_max_idle_bytes),

pub var global: BufferPool = .{};

fn io() Io {
    return Io.Threaded.global_single_threaded.io();
}

/// Bytes obtained from the OS for a block of class `size`: the canaries need room past the class.
fn blockBytes(size: u64) usize {
    return @intCast(if (checked) size + canary_bytes else size);
}

/// Rents a block of at least `n` bytes (asserts n ≤ 2^31 − 1); null when the OS refuses memory.
pub fn rent(pool: *BufferPool, n: u64, zero: bool) ?[*]align(alignment) u8 {
    std.debug.assert(n <= max_request);
    const size = sizeClass(n);
    const class = &pool.classes[classIndex(size)];
    class.lock.lockUncancelable(io());
    const reused = class.head;
    if (reused) |block| class.head = block.next;
    class.lock.unlock(io());

    const ptr: [*]align(alignment) u8 = if (reused) |block| blk: {
        _ = pool.hits.fetchAdd(1, .monotonic);
        _ = pool.idle_bytes.fetchSub(size, .monotonic);
        _ = pool.idle_blocks.fetchSub(1, .monotonic);
        break :blk @ptrCast(@alignCast(block));
    } else blk: {
        const fresh = osAlloc(blockBytes(size)) orelse return null;
        _ = pool.misses.fetchAdd(1, .monotonic);
        _ = pool.os_bytes.fetchAdd(size, .monotonic);
        break :blk fresh;
    };
    _ = pool.rented_bytes.fetchAdd(size, .monotonic);
    _ = pool.rented_blocks.fetchAdd(1, .monotonic);
    if (checked) {
        @memset(ptr[0..@intCast(size)], poison_byte);
        @memset(ptr[@intCast(n)..][0..canary_bytes], canary_byte);
    }
    if (zero) @memset(ptr[0..@intCast(n)], 0);
    return ptr;
}

/// Returns a block rented with request `n`. In CHECKED builds, returns how many bytes past `n` were
/// overwritten (the distance to the last damaged canary byte), else 0; the block is recycled either way.
pub fn release(pool: *BufferPool, ptr: [*]align(alignment) u8, n: u64) u32 {
    std.debug.assert(n <= max_request);
    const size = sizeClass(n);
    const overrun = if (checked) canaryDamage(ptr, n) else 0;
    if (checked) @memset(ptr[0..@intCast(size + canary_bytes)], poison_byte);
    _ = pool.rented_bytes.fetchSub(size, .monotonic);
    _ = pool.rented_blocks.fetchSub(1, .monotonic);

    const idle = pool.idle_bytes.fetchAdd(size, .monotonic);
    if (idle + size > pool.max_idle_bytes.load(.monotonic)) {
        _ = pool.idle_bytes.fetchSub(size, .monotonic);
        _ = pool.os_bytes.fetchSub(size, .monotonic);
        osFree(ptr);
        return overrun;
    }
    _ = pool.idle_blocks.fetchAdd(1, .monotonic);
    const class = &pool.classes[classIndex(size)];
    const block: *FreeBlock = @ptrCast(ptr);
    class.lock.lockUncancelable(io());
    block.next = class.head;
    class.head = block;
    class.lock.unlock(io());
    return overrun;
}

/// How far past `n` the canaries were overwritten: the 1-based position of the last damaged byte.
pub fn canaryDamage(ptr: [*]const u8, n: u64) u32 {
    const canaries = ptr[@intCast(n)..][0..canary_bytes];
    var last: u32 = 0;
    for (canaries, 1..) |byte, position| {
        if (byte != canary_byte) last = @intCast(position);
    }
    return last;
}

/// Frees every idle block back to the OS.
pub fn trim(pool: *BufferPool) void {
    for (&pool.classes, 0..) |*class, index| {
        class.lock.lockUncancelable(io());
        var head = class.head;
        class.head = null;
        class.lock.unlock(io());
        const size = classSizeAt(index);
        while (head) |block| {
            head = block.next;
            _ = pool.idle_bytes.fetchSub(size, .monotonic);
            _ = pool.idle_blocks.fetchSub(1, .monotonic);
            _ = pool.os_bytes.fetchSub(size, .monotonic);
            osFree(@ptrCast(@alignCast(block)));
        }
    }
}

fn classSizeAt(index: usize) u64 {
    if (index < 4) return (index + 1) * 64;
    const log_b: u6 = @intCast(8 + (index - 4) / 4);
    const b = @as(u64, 1) << log_b;
    return b + ((index - 4) % 4 + 1) * (b / 4);
}

pub fn stats(pool: *const BufferPool) Stats {
    return .{
        .rented_bytes = pool.rented_bytes.load(.monotonic),
        .rented_blocks = pool.rented_blocks.load(.monotonic),
        .idle_bytes = pool.idle_bytes.load(.monotonic),
        .idle_blocks = pool.idle_blocks.load(.monotonic),
        .os_bytes = pool.os_bytes.load(.monotonic),
        .hits = pool.hits.load(.monotonic),
        .misses = pool.misses.load(.monotonic),
        .max_idle_bytes = pool.max_idle_bytes.load(.monotonic),
    };
}

fn osAlloc(bytes: usize) ?[*]align(alignment) u8 {
    var out: ?*anyopaque = null;
    if (std.c.posix_memalign(&out, alignment, bytes) != 0) return null;
    return @ptrCast(@alignCast(out.?));
}

fn osFree(ptr: [*]align(alignment) u8) void {
    std.c.free(ptr);
}

const testing = std.testing;

test "size classes follow the rule at its edges" {
    const cases = [_][2]u64{
        .{ 0, 64 },      .{ 1, 64 },      .{ 64, 64 },                    .{ 65, 128 },
        .{ 256, 256 },   .{ 257, 320 },   .{ 320, 320 },                  .{ 321, 384 },
        .{ 448, 448 },   .{ 449, 512 },   .{ 512, 512 },                  .{ 513, 640 },
        .{ 1000, 1024 }, .{ 1025, 1280 }, .{ (1 << 30) + 1, 1342177280 }, .{ max_request, 1 << 31 },
    };
    for (cases) |case| try testing.expectEqual(case[1], sizeClass(case[0]));
}

test "class indices are dense and invert classSizeAt" {
    for (0..class_count) |index| {
        const size = classSizeAt(index);
        try testing.expectEqual(size, sizeClass(size));
        try testing.expectEqual(index, classIndex(size));
    }
    try testing.expectEqual(@as(u64, 1 << 31), classSizeAt(class_count - 1));
}

test "a released block is rented again for its class, 64-byte aligned" {
    var pool: BufferPool = .{};
    defer pool.trim();
    const a = pool.rent(300, false).?;
    try testing.expect(@intFromPtr(a) % alignment == 0);
    _ = pool.release(a, 300);
    const b = pool.rent(310, true).?;
    try testing.expectEqual(@intFromPtr(a), @intFromPtr(b));
    for (b[0..310]) |byte| try testing.expectEqual(@as(u8, 0), byte);
    const s = pool.stats();
    try testing.expectEqual(@as(u64, 1), s.hits);
    try testing.expectEqual(@as(u64, 1), s.misses);
    try testing.expectEqual(@as(u64, 320), s.rented_bytes);
    _ = pool.release(b, 310);
    try testing.expectEqual(@as(u64, 320), pool.stats().idle_bytes);
}

test "blocks beyond the idle cap go back to the OS" {
    var pool: BufferPool = .{};
    defer pool.trim();
    pool.max_idle_bytes.store(100, .monotonic);
    const a = pool.rent(64, false).?;
    const b = pool.rent(64, false).?;
    _ = pool.release(a, 64);
    _ = pool.release(b, 64);
    const s = pool.stats();
    try testing.expectEqual(@as(u64, 64), s.idle_bytes);
    try testing.expectEqual(@as(u64, 64), s.os_bytes);
}

test "CHECKED builds poison new memory and report canary damage" {
    if (!checked) return error.SkipZigTest;
    var pool: BufferPool = .{};
    defer pool.trim();
    const a = pool.rent(10, false).?;
    try testing.expectEqual(poison_byte, a[0]);
    a[10 + 4] = 0;
    try testing.expectEqual(@as(u32, 5), pool.release(a, 10));
}

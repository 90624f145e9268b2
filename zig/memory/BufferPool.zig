//! The buffer pool: 64-byte aligned blocks served from size classes, one free list per class, an idle cap
//! kept by giving the least recently released classes' idle blocks back to the OS (see `release`). Safe from many threads (one lock per class guarding its
//! list and counters, one atomic for the pool-wide idle bytes). Deterministic: free lists are LIFO, so the
//! same sequence of rents and releases gets the same blocks back. In CHECKED builds new and returned memory
//! reads 0xFF and 64 canary bytes of 0xA5 follow every block's requested length.
const std = @import("std");
const builtin = @import("builtin");
const checked = @import("build_options").checked;
const aligned = @import("aligned.zig");

const BufferPool = @This();
const Io = std.Io;

pub const alignment = aligned.alignment;
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

/// One size class: its free list and its counters, all guarded by its lock, so that a rent or a release
/// costs one lock round trip plus one atomic update of the pool's idle bytes (for the cap).
const Class = struct {
    lock: Io.Mutex = .init,
    head: ?*FreeBlock = null,
    rented_blocks: u64 = 0,
    idle_blocks: u64 = 0,
    hits: u64 = 0,
    misses: u64 = 0,
    /// The pool's release clock when a block of this class was last released: the age of its idle blocks.
    released_at: u64 = 0,
};

/// The pool's counters; bytes count whole classes (a 100-byte request counts 128).
pub const Stats = extern struct {
    rented_bytes: u64,
    rented_blocks: u64,
    idle_bytes: u64,
    idle_blocks: u64,
    /// Bytes obtained from the OS and not given back: rented plus idle.
    os_bytes: u64,
    hits: u64,
    misses: u64,
    max_idle_bytes: u64,
};

classes: [class_count]Class = @splat(.{}),
/// Idle bytes over all classes, kept apart from the classes' counters because the cap is pool-wide.
idle_bytes: std.atomic.Value(u64) = .init(0),
max_idle_bytes: std.atomic.Value(u64) = .init(default_max_idle_bytes),
/// Counts releases (approximately, under concurrent releases); orders the classes by the age of their last
/// release.
release_clock: std.atomic.Value(u64) = .init(0),

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
    if (reused) |block| {
        class.head = block.next;
        class.idle_blocks -= 1;
        class.hits += 1;
        class.rented_blocks += 1;
    }
    class.lock.unlock(io());
    const ptr: [*]align(alignment) u8 = if (reused) |block| blk: {
        _ = pool.idle_bytes.fetchSub(size, .monotonic);
        break :blk @ptrCast(@alignCast(block));
    } else rentFresh(class, size) orelse return null;
    if (checked) {
        @memset(ptr[0..@intCast(size)], poison_byte);
        @memset(ptr[@intCast(n)..][0..canary_bytes], canary_byte);
    }
    if (zero) @memset(ptr[0..@intCast(n)], 0);
    return ptr;
}

/// A new block from the OS, counted as a miss of its class.
fn rentFresh(class: *Class, size: u64) ?[*]align(alignment) u8 {
    const ptr = osAlloc(size) orelse return null;
    class.lock.lockUncancelable(io());
    class.misses += 1;
    class.rented_blocks += 1;
    class.lock.unlock(io());
    return ptr;
}

/// Returns a block rented with request `n`. In CHECKED builds, returns how many bytes past `n` were
/// overwritten (the distance to the last damaged canary byte), else 0; the block is recycled either way.
///
/// The idle cap: a released block that would take the idle bytes over `max_idle_bytes` is kept, and the
/// idle blocks of the classes released longest ago go back to the OS until the rest fits (only a block
/// larger than the cap itself, or one that still does not fit, is freed instead). So a loop whose sizes
/// change keeps the blocks of the sizes it uses now rather than of those it used first.
pub fn release(pool: *BufferPool, ptr: [*]align(alignment) u8, n: u64) u32 {
    std.debug.assert(n <= max_request);
    const size = sizeClass(n);
    const overrun = if (checked) canaryDamage(ptr, n) else 0;
    if (checked) @memset(ptr[0..@intCast(size + canary_bytes)], poison_byte);
    const cap = pool.max_idle_bytes.load(.monotonic);
    const idle = pool.idle_bytes.fetchAdd(size, .monotonic);
    var keep = size <= cap;
    if (keep and idle + size > cap) keep = pool.evictOldest(cap);
    if (!keep) _ = pool.idle_bytes.fetchSub(size, .monotonic);

    const index = classIndex(size);
    const class = &pool.classes[index];
    const block: *FreeBlock = @ptrCast(ptr);
    // A plain load and store, not a locked add: two threads releasing at once may read the same time, which
    // only makes two classes equally old, and a release stays as cheap as it was.
    const now = pool.release_clock.load(.monotonic) + 1;
    pool.release_clock.store(now, .monotonic);
    class.lock.lockUncancelable(io());
    std.debug.assert(class.rented_blocks > 0);
    class.rented_blocks -= 1;
    class.released_at = now;
    if (keep) {
        block.next = class.head;
        class.head = block;
        class.idle_blocks += 1;
    }
    class.lock.unlock(io());
    if (!keep) osFree(ptr, size);
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

/// Frees idle blocks of the least recently released classes (the larger class first between equals)
/// until the idle bytes fit under `cap`; false if they still do not (other threads' blocks arriving).
fn evictOldest(pool: *BufferPool, cap: u64) bool {
    while (pool.idle_bytes.load(.monotonic) > cap) {
        var oldest: ?usize = null;
        var oldest_at: u64 = std.math.maxInt(u64);
        var index: usize = class_count;
        while (index > 0) {
            index -= 1;
            const class = &pool.classes[index];
            class.lock.lockUncancelable(io());
            const candidate = class.head != null and class.released_at < oldest_at;
            if (candidate) oldest_at = class.released_at;
            class.lock.unlock(io());
            if (candidate) oldest = index;
        }
        if (!pool.freeIdle(oldest orelse return false)) continue;
    }
    return true;
}

/// Frees every idle block back to the OS.
pub fn trim(pool: *BufferPool) void {
    for (0..class_count) |index| {
        while (pool.freeIdle(index)) {}
    }
}

/// Sets the idle cap and frees idle blocks, largest classes first, until the idle bytes fit under it.
pub fn setMaxIdleBytes(pool: *BufferPool, bytes: u64) void {
    pool.max_idle_bytes.store(bytes, .monotonic);
    var index: usize = class_count;
    while (index > 0) {
        index -= 1;
        while (pool.idle_bytes.load(.monotonic) > bytes and pool.freeIdle(index)) {}
    }
}

/// Gives one idle block of class `index` back to the OS; false when the class has none.
fn freeIdle(pool: *BufferPool, index: usize) bool {
    const class = &pool.classes[index];
    class.lock.lockUncancelable(io());
    const block = class.head orelse {
        class.lock.unlock(io());
        return false;
    };
    class.head = block.next;
    class.idle_blocks -= 1;
    class.lock.unlock(io());
    _ = pool.idle_bytes.fetchSub(classSizeAt(index), .monotonic);
    osFree(@ptrCast(@alignCast(block)), classSizeAt(index));
    return true;
}

/// The size of the class at `index` (the inverse of `classIndex`).
pub fn classSizeAt(index: usize) u64 {
    if (index < 4) return (index + 1) * 64;
    const log_b: u6 = @intCast(8 + (index - 4) / 4);
    const b = @as(u64, 1) << log_b;
    return b + ((index - 4) % 4 + 1) * (b / 4);
}

/// Sums the classes' counters, one class at a time: exact when no other thread is renting or releasing.
pub fn stats(pool: *BufferPool) Stats {
    var result = std.mem.zeroes(Stats);
    for (&pool.classes, 0..) |*class, index| {
        const size = classSizeAt(index);
        class.lock.lockUncancelable(io());
        defer class.lock.unlock(io());
        result.rented_blocks += class.rented_blocks;
        result.rented_bytes += class.rented_blocks * size;
        result.idle_blocks += class.idle_blocks;
        result.idle_bytes += class.idle_blocks * size;
        result.hits += class.hits;
        result.misses += class.misses;
    }
    result.os_bytes = result.rented_bytes + result.idle_bytes;
    result.max_idle_bytes = pool.max_idle_bytes.load(.monotonic);
    return result;
}

fn osAlloc(size: u64) ?[*]align(alignment) u8 {
    return aligned.alloc(blockBytes(size));
}

fn osFree(ptr: [*]align(alignment) u8, size: u64) void {
    aligned.free(ptr, blockBytes(size));
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

test "at the idle cap a released block displaces the blocks of the classes released longest ago" {
    var pool: BufferPool = .{};
    defer pool.trim();
    pool.max_idle_bytes.store(16384, .monotonic);
    // Three sizes used once (4096, 5120, 6144: 15360 idle bytes), then a loop over 7168 and 6144.
    var first: [3][*]align(alignment) u8 = undefined;
    for (&first, 0..) |*block, i| block.* = pool.rent(4096 + 1024 * i, false).?;
    for (first, 0..) |block, i| _ = pool.release(block, 4096 + 1024 * i);
    const misses_before = pool.stats().misses;
    for (0..10) |_| {
        const a = pool.rent(7000, false).?;
        const b = pool.rent(6000, false).?;
        _ = pool.release(a, 7000);
        _ = pool.release(b, 6000);
    }
    const s = pool.stats();
    // One fresh block (7168) in ten rounds: the loop never fell back to the OS once its blocks were idle.
    try testing.expectEqual(misses_before + 1, s.misses);
    try testing.expectEqual(@as(u64, 7168 + 6144), s.idle_bytes);
    try testing.expectEqual(s.idle_bytes, pool.idle_bytes.load(.monotonic));
    // The oldest classes went, oldest first; the one rented again (6144) stayed.
    try testing.expect(pool.classes[classIndex(4096)].head == null);
    try testing.expect(pool.classes[classIndex(5120)].head == null);
    try testing.expect(pool.classes[classIndex(6144)].head != null);
    // A block larger than the cap itself is freed, and evicts nothing.
    const huge = pool.rent(5 * 4096, false).?;
    _ = pool.release(huge, 5 * 4096);
    try testing.expectEqual(@as(u64, 7168 + 6144), pool.stats().idle_bytes);
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

test "lowering the idle cap frees idle blocks, largest first, until they fit" {
    var pool: BufferPool = .{};
    defer pool.trim();
    const small = pool.rent(64, false).?;
    const large = pool.rent(4096, false).?;
    _ = pool.release(small, 64);
    _ = pool.release(large, 4096);
    try testing.expectEqual(@as(u64, 4096 + 64), pool.stats().idle_bytes);
    pool.setMaxIdleBytes(100);
    const s = pool.stats();
    try testing.expectEqual(@as(u64, 64), s.idle_bytes);
    try testing.expectEqual(@as(u64, 1), s.idle_blocks);
    try testing.expectEqual(@as(u64, 64), s.os_bytes);
    try testing.expectEqual(@as(u64, 100), s.max_idle_bytes);
}

test "many threads renting and releasing at once leave consistent stats and intact blocks" {
    const Worker = struct {
        fn run(pool: *BufferPool, seed: u64, failures: *std.atomic.Value(u32), rents: *std.atomic.Value(u64)) void {
            var prng = std.Random.DefaultPrng.init(seed);
            const random = prng.random();
            var held: [8]?[*]align(alignment) u8 = @splat(null);
            var lengths: [8]u64 = @splat(0);
            for (0..4000) |step| {
                const slot = random.uintLessThan(usize, held.len);
                if (held[slot]) |block| {
                    const tag: u8 = @truncate(slot ^ seed);
                    for (block[0..lengths[slot]]) |byte| {
                        if (byte != tag) _ = failures.fetchAdd(1, .monotonic);
                    }
                    _ = pool.release(block, lengths[slot]);
                    held[slot] = null;
                } else {
                    const n = random.uintLessThan(u64, 3000) + @as(u64, @intCast(step % 3));
                    const block = pool.rent(n, false).?;
                    _ = rents.fetchAdd(1, .monotonic);
                    @memset(block[0..n], @as(u8, @truncate(slot ^ seed)));
                    held[slot] = block;
                    lengths[slot] = n;
                }
            }
            for (held, lengths) |maybe, n| {
                if (maybe) |block| _ = pool.release(block, n);
            }
        }
    };
    var pool: BufferPool = .{};
    defer pool.trim();
    var failures: std.atomic.Value(u32) = .init(0);
    var rents: std.atomic.Value(u64) = .init(0);
    var threads: [4]std.Thread = undefined;
    for (&threads, 0..) |*thread, i| thread.* = try std.Thread.spawn(.{}, Worker.run, .{ &pool, i + 1, &failures, &rents });
    for (threads) |thread| thread.join();
    const s = pool.stats();
    try testing.expectEqual(@as(u32, 0), failures.load(.monotonic));
    try testing.expectEqual(@as(u64, 0), s.rented_bytes);
    try testing.expectEqual(@as(u64, 0), s.rented_blocks);
    try testing.expectEqual(s.os_bytes, s.idle_bytes);
    try testing.expectEqual(s.idle_bytes, pool.idle_bytes.load(.monotonic));
    try testing.expectEqual(rents.load(.monotonic), s.hits + s.misses);
    var listed: u64 = 0;
    for (pool.classes, 0..) |class, index| {
        var head = class.head;
        while (head) |block| : (head = block.next) listed += classSizeAt(index);
    }
    try testing.expectEqual(s.idle_bytes, listed);
}

//! A bump allocator for the state of one run: 64-byte aligned blocks carved from chunks that come from the
//! buffer pool (`chunk_bytes`, 1 MiB by default; a request that does not fit in one gets a pool block of its
//! own). `reset` reclaims everything at once: standard chunks are kept for the next run, so a run that repeats
//! the previous run's allocation sequence obtains no new memory; oversized blocks go back to the pool, whose
//! free lists serve them again. Not thread-safe: one arena per concurrent run.
//!
//! In CHECKED builds every block is preceded by a 64-byte header holding its length and followed by 64
//! canary bytes of 0xA5, so that `reset` can walk a chunk and verify every block; new, released and reset
//! memory reads 0xFF.
const std = @import("std");
const checked = @import("build_options").checked;
const BufferPool = @import("BufferPool.zig");

const Arena = @This();

pub const alignment = BufferPool.alignment;
pub const default_chunk_bytes: u64 = 1 << 20;
/// Room for a block's length in front of it (CHECKED builds only), one alignment unit so blocks stay aligned.
const header_bytes = if (checked) alignment else 0;
const trailer_bytes = if (checked) BufferPool.canary_bytes else 0;

const Chunk = struct {
    ptr: [*]align(alignment) u8,
    /// The request the chunk was rented with from the pool (its length for the pool's release).
    request_bytes: u64,
    used_bytes: u64,
};

pub const Stats = extern struct {
    /// Standard chunks held (kept across resets).
    chunk_count: u64,
    /// Oversized blocks held until the next reset.
    large_count: u64,
    /// Bytes rented from the pool: every chunk's request and every oversized block's.
    reserved_bytes: u64,
    /// Bytes handed out since the last reset, headers, canaries and padding included.
    used_bytes: u64,
};

gpa: std.mem.Allocator,
pool: *BufferPool,
chunk_bytes: u64,
chunks: std.ArrayList(Chunk) = .empty,
/// The chunk being filled; chunks before it are full for the current run, chunks after it are empty.
current: usize = 0,
large: std.ArrayList(Chunk) = .empty,

/// Asserts 1 ≤ chunk_bytes ≤ 2^31 − 1. The arena's own bookkeeping comes from `gpa`.
pub fn init(gpa: std.mem.Allocator, pool: *BufferPool, chunk_bytes: u64) Arena {
    std.debug.assert(chunk_bytes >= 1 and chunk_bytes <= BufferPool.max_request);
    return .{ .gpa = gpa, .pool = pool, .chunk_bytes = chunk_bytes };
}

/// Returns every chunk to the pool; the result is `reset`'s.
pub fn deinit(arena: *Arena) u32 {
    const overrun = arena.reset();
    for (arena.chunks.items) |chunk| _ = arena.pool.release(chunk.ptr, chunk.request_bytes);
    arena.chunks.deinit(arena.gpa);
    arena.large.deinit(arena.gpa);
    arena.* = undefined;
    return overrun;
}

/// An arena allocated with `gpa` (which also holds its chunk lists) over the global pool.
pub fn create(gpa: std.mem.Allocator, chunk_bytes: u64) error{OutOfMemory}!*Arena {
    const arena = try gpa.create(Arena);
    arena.* = .init(gpa, &BufferPool.global, chunk_bytes);
    return arena;
}

/// Frees an arena made by `create`; the result is `reset`'s.
pub fn destroy(arena: *Arena) u32 {
    const gpa = arena.gpa;
    const overrun = arena.deinit();
    gpa.destroy(arena);
    return overrun;
}

/// Bytes a block of `n` bytes occupies in a chunk: at least one alignment unit, so every block has its
/// own address.
fn footprint(n: u64) u64 {
    return header_bytes + @max(alignment, std.mem.alignForward(u64, n + trailer_bytes, alignment));
}

/// A 64-byte aligned block of `n` bytes (asserts n ≤ 2^31 − 1), zeroed if asked.
pub fn alloc(arena: *Arena, n: u64, zero: bool) error{OutOfMemory}![*]align(alignment) u8 {
    std.debug.assert(n <= BufferPool.max_request);
    const need = footprint(n);
    if (need > arena.chunk_bytes) return arena.allocLarge(n, zero);
    const chunk = try arena.chunkWithRoom(need);
    const base = chunk.ptr + chunk.used_bytes;
    chunk.used_bytes += need;
    if (checked) {
        std.mem.writeInt(u64, base[0..8], n, .little);
        @memset(base[header_bytes..][0..@intCast(need - header_bytes)], BufferPool.poison_byte);
        @memset(base[header_bytes + n ..][0..BufferPool.canary_bytes], BufferPool.canary_byte);
    }
    const ptr: [*]align(alignment) u8 = @alignCast(base + header_bytes);
    if (zero) @memset(ptr[0..@intCast(n)], 0);
    return ptr;
}

/// A block too large for a chunk is a pool block of its own; the pool's canaries guard it.
fn allocLarge(arena: *Arena, n: u64, zero: bool) error{OutOfMemory}![*]align(alignment) u8 {
    try arena.large.ensureUnusedCapacity(arena.gpa, 1);
    const ptr = arena.pool.rent(n, zero) orelse return error.OutOfMemory;
    arena.large.appendAssumeCapacity(.{ .ptr = ptr, .request_bytes = n, .used_bytes = n });
    return ptr;
}

/// The first chunk from `current` on with `need` bytes free, renting a new one when none has.
fn chunkWithRoom(arena: *Arena, need: u64) error{OutOfMemory}!*Chunk {
    while (arena.current < arena.chunks.items.len) : (arena.current += 1) {
        const chunk = &arena.chunks.items[arena.current];
        if (chunk.request_bytes - chunk.used_bytes >= need) return chunk;
    }
    try arena.chunks.ensureUnusedCapacity(arena.gpa, 1);
    const ptr = arena.pool.rent(arena.chunk_bytes, false) orelse return error.OutOfMemory;
    arena.chunks.appendAssumeCapacity(.{ .ptr = ptr, .request_bytes = arena.chunk_bytes, .used_bytes = 0 });
    return &arena.chunks.items[arena.current];
}

/// Reclaims every block. In CHECKED builds verifies every block's canaries and poisons the memory; returns
/// the largest number of bytes any block was overwritten past its end (0 when none, and always in release
/// builds).
pub fn reset(arena: *Arena) u32 {
    var overrun: u32 = 0;
    for (arena.chunks.items) |*chunk| {
        if (checked) overrun = @max(overrun, checkChunk(chunk));
        chunk.used_bytes = 0;
    }
    for (arena.large.items) |block| {
        overrun = @max(overrun, arena.pool.release(block.ptr, block.request_bytes));
    }
    arena.large.clearRetainingCapacity();
    arena.current = 0;
    return overrun;
}

/// Walks a chunk's blocks through their headers, checking canaries and poisoning as it goes.
fn checkChunk(chunk: *Chunk) u32 {
    var overrun: u32 = 0;
    var offset: u64 = 0;
    while (offset < chunk.used_bytes) {
        const base = chunk.ptr + offset;
        const n = std.mem.readInt(u64, base[0..8], .little);
        const need = footprint(n);
        std.debug.assert(offset + need <= chunk.used_bytes);
        overrun = @max(overrun, BufferPool.canaryDamage(base + header_bytes, n));
        @memset(base[0..@intCast(need)], BufferPool.poison_byte);
        offset += need;
    }
    return overrun;
}

/// Marks one block as given up before the reset (a storage released early). In CHECKED builds returns how
/// far past its end it was overwritten, poisons it and rewrites its canaries, so that the reset does not
/// report the same damage twice; in release builds does nothing and returns 0.
pub fn retire(ptr: [*]align(alignment) u8, n: u64) u32 {
    if (!checked) return 0;
    const overrun = BufferPool.canaryDamage(ptr, n);
    @memset(ptr[0..@intCast(n)], BufferPool.poison_byte);
    @memset(ptr[@intCast(n)..][0..BufferPool.canary_bytes], BufferPool.canary_byte);
    return overrun;
}

pub fn stats(arena: *const Arena) Stats {
    var result: Stats = .{
        .chunk_count = arena.chunks.items.len,
        .large_count = arena.large.items.len,
        .reserved_bytes = 0,
        .used_bytes = 0,
    };
    for (arena.chunks.items) |chunk| {
        result.reserved_bytes += chunk.request_bytes;
        result.used_bytes += chunk.used_bytes;
    }
    for (arena.large.items) |block| {
        result.reserved_bytes += block.request_bytes;
        result.used_bytes += block.request_bytes;
    }
    return result;
}

const testing = std.testing;

test "blocks are 64-byte aligned, distinct, and zeroed when asked" {
    var pool: BufferPool = .{};
    defer pool.trim();
    var arena: Arena = .init(testing.allocator, &pool, 4096);
    defer _ = arena.deinit();
    var previous: usize = 0;
    for ([_]u64{ 0, 1, 63, 64, 65, 200, 0 }) |n| {
        const ptr = try arena.alloc(n, true);
        try testing.expect(@intFromPtr(ptr) % alignment == 0);
        try testing.expect(@intFromPtr(ptr) > previous);
        for (ptr[0..n]) |byte| try testing.expectEqual(@as(u8, 0), byte);
        @memset(ptr[0..n], 7);
        previous = @intFromPtr(ptr);
    }
    try testing.expectEqual(@as(u64, 1), arena.stats().chunk_count);
}

test "a full chunk moves on to a new one; a large request gets a block of its own" {
    var pool: BufferPool = .{};
    defer pool.trim();
    var arena: Arena = .init(testing.allocator, &pool, 1024);
    defer _ = arena.deinit();
    for (0..5) |_| _ = try arena.alloc(300, false);
    const big = try arena.alloc(5000, false);
    @memset(big[0..5000], 1);
    const s = arena.stats();
    try testing.expectEqual(@as(u64, if (checked) 3 else 2), s.chunk_count);
    try testing.expectEqual(@as(u64, 1), s.large_count);
    try testing.expectEqual(s.chunk_count * 1024 + 5000, s.reserved_bytes);
}

test "after a warm-up run the same allocation sequence obtains no new memory from the pool" {
    var pool: BufferPool = .{};
    defer pool.trim();
    var arena: Arena = .init(testing.allocator, &pool, 1 << 16);
    defer _ = arena.deinit();
    const sequence = [_]u64{ 100, 40_000, 7, 1 << 17, 30_000, 64, 90_000, 3 };
    for (0..4) |run| {
        const before = pool.stats();
        for (sequence) |n| @memset((try arena.alloc(n, false))[0..n], @intCast(run));
        const after = pool.stats();
        if (run > 0) {
            try testing.expectEqual(before.misses, after.misses);
            try testing.expectEqual(before.os_bytes, after.os_bytes);
        }
        try testing.expectEqual(@as(u32, 0), arena.reset());
    }
}

test "reset in a CHECKED build finds a block overwritten past its end and poisons the chunk" {
    if (!checked) return error.SkipZigTest;
    var pool: BufferPool = .{};
    defer pool.trim();
    var arena: Arena = .init(testing.allocator, &pool, 4096);
    defer _ = arena.deinit();
    const a = try arena.alloc(10, false);
    try testing.expectEqual(BufferPool.poison_byte, a[0]);
    const b = try arena.alloc(100, false);
    b[100 + 6] = 0;
    const large = try arena.alloc(8000, false);
    large[8000 + 2] = 0;
    try testing.expectEqual(@as(u32, 7), arena.reset());
    try testing.expectEqual(BufferPool.poison_byte, b[0]);
    try testing.expectEqual(@as(u32, 0), arena.reset());
}

test "retire reports damage once and leaves the canaries whole for the reset" {
    if (!checked) return error.SkipZigTest;
    var pool: BufferPool = .{};
    defer pool.trim();
    var arena: Arena = .init(testing.allocator, &pool, 4096);
    defer _ = arena.deinit();
    const a = try arena.alloc(20, true);
    a[20] = 1;
    try testing.expectEqual(@as(u32, 1), retire(a, 20));
    try testing.expectEqual(BufferPool.poison_byte, a[0]);
    try testing.expectEqual(@as(u32, 0), arena.reset());
}

//! 64-byte aligned blocks from the C heap through Zig's `c_allocator`: `posix_memalign` where the libc has
//! it, an over-allocated `malloc` block aligned inside on Windows. The one way zigtensor asks for memory.
const std = @import("std");

/// The alignment of every block: one cache line, and the widest SIMD register (AVX-512).
pub const alignment = 64;

/// A block of `bytes` bytes, or null when the heap refuses.
pub fn alloc(bytes: usize) ?[*]align(alignment) u8 {
    const block = std.heap.c_allocator.alignedAlloc(u8, .fromByteUnits(alignment), bytes) catch return null;
    return block.ptr;
}

/// Frees a block that `alloc(bytes)` returned, with the same `bytes`.
pub fn free(ptr: [*]align(alignment) u8, bytes: usize) void {
    std.heap.c_allocator.free(ptr[0..bytes]);
}

test "blocks are aligned, writable and freed with their size" {
    for ([_]usize{ 1, 64, 100, 4096, 1 << 20 }) |bytes| {
        const block = alloc(bytes) orelse return error.OutOfMemory;
        try std.testing.expectEqual(@as(usize, 0), @intFromPtr(block) % alignment);
        @memset(block[0..bytes], 0xAB);
        try std.testing.expectEqual(@as(u8, 0xAB), block[bytes - 1]);
        free(block, bytes);
    }
}

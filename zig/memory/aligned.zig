//! 64-byte aligned blocks from the C heap through Zig's `c_allocator`: `posix_memalign` where the libc has
//! it, an over-allocated `malloc` block aligned inside on Windows. The one way zigtensor asks for memory.
//!
//! On Linux a block of `huge_from` bytes or more starts on a 2 MiB boundary and is advised as transparent
//! huge pages (`MADV_HUGEPAGE`; the kernel's default mode, `madvise`, backs only advised ranges with them): a
//! pass over it then misses the TLB once per 2 MiB rather than once per 4 KiB. On the Zen 4 machine of
//! docs/performance.md that took a one-thread add of 16M f32 from 8.2–9.3 ms to 6.5–6.8 ms and a sum of
//! 16M from 2.34 ms to 2.00 ms. Only the touched huge pages count as resident, as with small pages.
const std = @import("std");
const builtin = @import("builtin");

/// The alignment of every block: one cache line, and the widest SIMD register (AVX-512).
pub const alignment = 64;

/// Whether large blocks are advised as huge pages (Linux only: elsewhere the wider alignment would only
/// cost an over-allocation).
const huge_pages = builtin.os.tag == .linux;
/// The huge-page boundary large blocks start on (x86-64's and 4 KiB-granule aarch64's 2 MiB).
const huge_alignment = 2 << 20;
/// The smallest block advised as huge pages: at least one whole huge page inside it wherever it starts.
pub const huge_from = 4 << 20;

fn isHuge(bytes: usize) bool {
    return huge_pages and bytes >= huge_from;
}

/// A block of `bytes` bytes, or null when the heap refuses.
pub fn alloc(bytes: usize) ?[*]align(alignment) u8 {
    if (isHuge(bytes)) {
        const block = std.heap.c_allocator.alignedAlloc(u8, .fromByteUnits(huge_alignment), bytes) catch return null;
        // Advice only: a kernel without transparent huge pages refuses it, and small pages serve.
        std.posix.madvise(block.ptr, bytes, std.os.linux.MADV.HUGEPAGE) catch {};
        return block.ptr;
    }
    const block = std.heap.c_allocator.alignedAlloc(u8, .fromByteUnits(alignment), bytes) catch return null;
    return block.ptr;
}

/// Frees a block that `alloc(bytes)` returned, with the same `bytes`.
pub fn free(ptr: [*]align(alignment) u8, bytes: usize) void {
    if (isHuge(bytes)) {
        const block: [*]align(huge_alignment) u8 = @alignCast(ptr);
        return std.heap.c_allocator.free(block[0..bytes]);
    }
    std.heap.c_allocator.free(ptr[0..bytes]);
}

test "blocks are aligned, writable and freed with their size" {
    for ([_]usize{ 1, 64, 100, 4096, 1 << 20, huge_from - 64, huge_from, huge_from + 100 }) |bytes| {
        const block = alloc(bytes) orelse return error.OutOfMemory;
        const boundary: usize = if (isHuge(bytes)) huge_alignment else alignment;
        try std.testing.expectEqual(@as(usize, 0), @intFromPtr(block) % boundary);
        @memset(block[0..bytes], 0xAB);
        try std.testing.expectEqual(@as(u8, 0xAB), block[bytes - 1]);
        free(block, bytes);
    }
}

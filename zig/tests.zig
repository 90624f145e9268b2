//! Root of the Zig unit tests, compiled once per variant the host (or qemu) runs.
comptime {
    _ = @import("cpu.zig");
    _ = @import("ThreadPool.zig");
    _ = @import("memory/BufferPool.zig");
    _ = @import("kernels/rows.zig");
    _ = @import("kernels/elementwise.zig");
}

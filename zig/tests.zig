//! Root of the Zig unit tests, compiled once per variant the host (or qemu) runs.
comptime {
    _ = @import("cpu.zig");
    _ = @import("ThreadPool.zig");
    _ = @import("memory/BufferPool.zig");
    _ = @import("memory/Arena.zig");
    _ = @import("memory/aligned.zig");
    _ = @import("kernels/rows.zig");
    _ = @import("kernels/elementwise.zig");
    _ = @import("kernels/math.zig");
    _ = @import("kernels/unary.zig");
    _ = @import("kernels/reduce.zig");
    _ = @import("kernels/softmax.zig");
    _ = @import("kernels/pool.zig");
    _ = @import("kernels/gemm.zig");
    _ = @import("bench.zig");
    // data movement
    _ = @import("copy.zig");
    _ = @import("convert.zig");
    _ = @import("kernels/movement.zig");
    _ = @import("layout.zig");
    _ = @import("quant.zig");
}

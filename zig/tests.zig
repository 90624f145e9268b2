//! Root of the Zig unit tests, compiled once per variant the host (or qemu) runs.
comptime {
    _ = @import("cpu.zig");
    _ = @import("ThreadPool.zig");
    _ = @import("memory/BufferPool.zig");
    _ = @import("memory/Arena.zig");
    _ = @import("memory/aligned.zig");
    _ = @import("kernels/rows.zig");
    _ = @import("kernels/ops.zig");
    _ = @import("kernels/elementwise.zig");
    _ = @import("kernels/math.zig");
    _ = @import("kernels/unary.zig");
    _ = @import("kernels/reduce.zig");
    _ = @import("kernels/softmax.zig");
    _ = @import("kernels/pool.zig");
    _ = @import("kernels/scatter.zig");
    _ = @import("kernels/gemm.zig");
    _ = @import("kernels/conv.zig");
    _ = @import("kernels/optim.zig");
    _ = @import("kernels/index.zig");
    _ = @import("kernels/nll.zig");
    _ = @import("kernels/ctc.zig");
    _ = @import("kernels/rnn.zig");
    _ = @import("kernels/select.zig");
    _ = @import("kernels/norm.zig");
    _ = @import("kernels/attention.zig");
    _ = @import("kernels/integer.zig");
    _ = @import("bench.zig");
    // data movement
    _ = @import("movement/copy.zig");
    _ = @import("movement/convert.zig");
    _ = @import("kernels/movement.zig");
    _ = @import("movement/layout.zig");
    _ = @import("movement/quant.zig");
}

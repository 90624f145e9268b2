//! Root of one ISA variant: the kernel source compiled for one CPU model. It exports its kernel table as
//! `zt_kernels_<isa>`; the core picks one table at init.
const options = @import("build_options");
const table = @import("kernels/table.zig");

const kernels: table.KernelTable = .{
    .elementwise = @import("kernels/elementwise.zig").table_entries,
    .gemm = @import("kernels/gemm.zig").table_entries,
    .movement = @import("kernels/movement.zig").table_entries,
    .optim = @import("kernels/optim.zig").table_entries,
    .index = @import("kernels/index.zig").table_entries,
    .ctc = @import("kernels/ctc.zig").table_entries,
    .nll = @import("kernels/nll.zig").table_entries,
    .rnn = @import("kernels/rnn.zig").table_entries,
    .select = @import("kernels/select.zig").table_entries,
    .norm = @import("kernels/norm.zig").table_entries,
    .attention = @import("kernels/attention.zig").table_entries,
    .integer = @import("kernels/integer.zig").table_entries,
};

comptime {
    @export(&kernels, .{ .name = "zt_kernels_" ++ options.isa });
}

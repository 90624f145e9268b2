//! Root of one ISA variant: the kernel source compiled for one CPU model. It exports its kernel table as
//! `zt_kernels_<isa>`; the core picks one table at init.
const options = @import("build_options");
const table = @import("kernels/table.zig");
const elementwise = @import("kernels/elementwise.zig");

const kernels: table.KernelTable = .{
    .binary_f32 = elementwise.binaryF32,
};

comptime {
    @export(&kernels, .{ .name = "zt_kernels_" ++ options.isa });
}

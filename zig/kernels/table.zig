//! The seam between the core and the per-ISA kernels: the runtime services the core lends to kernels and
//! the table of kernel entry points that each variant exports as `zt_kernels_<isa>`.
const abi = @import("../abi.zig");

/// A unit of parallel work: `task` is called once for every index in `0..tasks`.
pub const TaskFn = *const fn (context: *anyopaque, task: u32) callconv(.c) void;

/// Services the core lends to the kernels, which are compiled separately for each ISA.
pub const Runtime = extern struct {
    /// Runs `task(context, i)` for every `i` in `0..tasks` on at most `threads` threads (the caller
    /// included) and returns when all have finished.
    parallel_for: *const fn (context: *anyopaque, tasks: u32, threads: u32, task: TaskFn) callconv(.c) void,

    pub fn parallelFor(rt: *const Runtime, context: *anyopaque, tasks: u32, threads: u32, task: TaskFn) void {
        rt.parallel_for(context, tasks, threads, task);
    }
};

/// out = a (op) b over one shape; operands 0, 1, 2 of the argument block are out, a and b.
pub const BinaryFn = *const fn (rt: *const Runtime, args: *const abi.ArgBlock, out: [*]u8, a: [*]const u8, b: [*]const u8) callconv(.c) void;

/// The kernel entry points of one ISA variant.
pub const KernelTable = extern struct {
    binary_f32: BinaryFn,
};

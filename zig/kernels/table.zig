//! The seam between the core and the per-ISA kernels: the runtime services the core lends to kernels and
//! the table of kernel entry points that each variant exports as `zt_kernels_<isa>`.

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

/// The kernel entry points of one ISA variant, one sub-table per kernel family; each family's file defines
/// its `Table` type and its `table` value.
pub const KernelTable = extern struct {
    elementwise: @import("elementwise.zig").Table,
    gemm: @import("gemm.zig").Table,
    movement: @import("movement.zig").Table,
    optim: @import("optim.zig").Table,
    index: @import("index.zig").Table,
    ctc: @import("ctc.zig").Table,
    nll: @import("nll.zig").Table,
    rnn: @import("rnn.zig").Table,
    select: @import("select.zig").Table,
    norm: @import("norm.zig").Table,
    attention: @import("attention.zig").Table,
    integer: @import("integer.zig").Table,
};

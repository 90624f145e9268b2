//! Kernel dispatch: the variants compiled into this library, the one the CPU runs best (or the one asked
//! for), and the kernel table in use.
const std = @import("std");
const options = @import("build_options");
const cpu = @import("cpu.zig");
const Isa = @import("isa.zig").Isa;
const table = @import("kernels/table.zig");

/// The kernel tables of the variants compiled in, by `Isa`.
const tables = blk: {
    var result: [std.meta.fields(Isa).len]?*const table.KernelTable = @splat(null);
    for (options.variants) |name| {
        const isa = Isa.fromName(name) orelse @compileError("unknown variant " ++ name);
        result[@intFromEnum(isa)] = @extern(*const table.KernelTable, .{ .name = "zt_kernels_" ++ name });
    }
    break :blk result;
};

pub fn compiledMask() u32 {
    var mask: u32 = 0;
    for (tables, 0..) |entry, i| {
        if (entry != null) mask |= @as(u32, 1) << @intCast(i);
    }
    return mask;
}

var selected: ?Isa = null;
var kernels: *const table.KernelTable = undefined;

/// Selects the variant `requested` (an `Isa` id), or the best one this CPU runs when `requested` is
/// negative. Returns the selected variant, or `error.UnsupportedIsa` when the variant is absent or the CPU
/// cannot run it. Idempotent for the same choice.
pub fn init(requested: i32) error{UnsupportedIsa}!Isa {
    const usable = compiledMask() & cpu.supportedMask();
    const choice: Isa = if (requested < 0) best(usable) orelse return error.UnsupportedIsa else blk: {
        if (requested >= tables.len) return error.UnsupportedIsa;
        const isa: Isa = @enumFromInt(requested);
        if (usable & isa.bit() == 0) return error.UnsupportedIsa;
        break :blk isa;
    };
    kernels = tables[@intFromEnum(choice)].?;
    selected = choice;
    return choice;
}

fn best(usable: u32) ?Isa {
    for ([_]Isa{ .avx512, .avx2, .neon, .baseline }) |isa| {
        if (usable & isa.bit() != 0) return isa;
    }
    return null;
}

/// The selected variant's id, or -1 before `init`.
pub fn selectedId() i32 {
    return if (selected) |isa| @intFromEnum(isa) else -1;
}

/// Asserts that `init` succeeded.
pub fn active() *const table.KernelTable {
    std.debug.assert(selected != null);
    return kernels;
}

//! The C ABI shared with the TypeScript binding: the ABI version, status codes and the argument block
//! through which shapes, strides and scalars travel (one block per calling thread, owned by the binding).
const std = @import("std");
const options = @import("build_options");

/// Bumped whenever an export, a signature or the argument block changes; the binding refuses any other.
/// (`abi_skew` is nonzero only in the library that tests the refusal.)
pub const version: u32 = 1 + if (@hasDecl(options, "abi_skew")) options.abi_skew else 0;

pub const max_rank = 8;
pub const max_operands = 4;
pub const max_ints = 16;
pub const max_floats = 8;

/// Status codes returned across the boundary: 0 is success, negative values are kinds of failure.
pub const Status = enum(i32) {
    ok = 0,
    /// The requested ISA is not compiled into this library or the CPU (or OS) cannot run it.
    unsupported_isa = -1,
    out_of_memory = -2,
    /// A CHECKED build found its canary bytes overwritten on release.
    canary_overrun = -3,
    invalid_argument = -4,
};

/// One operand of a kernel: where its first element is and how far each axis steps, in elements.
pub const Operand = extern struct {
    offset: i32,
    strides: [max_rank]i32,
};

/// The argument block. The binding writes shapes, strides and attributes here before a call, so that hot
/// calls pass only pointers and 32-bit integers.
pub const ArgBlock = extern struct {
    floats: [max_floats]f64,
    rank: i32,
    op: i32,
    /// 0 = fast, 1 = exact.
    mode: i32,
    threads: i32,
    shape: [max_rank]i32,
    ints: [max_ints]i32,
    operands: [max_operands]Operand,

    pub fn shapeSlice(args: *const ArgBlock) []const i32 {
        return args.shape[0..@intCast(args.rank)];
    }
};

/// Field offsets of `ArgBlock`, in bytes, in the order the binding names them (see `src/native/abi.ts`).
pub const layout = [_]i32{
    @sizeOf(ArgBlock),
    @offsetOf(ArgBlock, "floats"),
    @offsetOf(ArgBlock, "rank"),
    @offsetOf(ArgBlock, "op"),
    @offsetOf(ArgBlock, "mode"),
    @offsetOf(ArgBlock, "threads"),
    @offsetOf(ArgBlock, "shape"),
    @offsetOf(ArgBlock, "ints"),
    @offsetOf(ArgBlock, "operands"),
    @sizeOf(Operand),
    max_rank,
    max_operands,
    max_ints,
    max_floats,
};

comptime {
    std.debug.assert(@sizeOf(Operand) == 4 * (1 + max_rank));
    std.debug.assert(@offsetOf(ArgBlock, "floats") == 0);
    std.debug.assert(@offsetOf(ArgBlock, "rank") == 8 * max_floats);
    std.debug.assert(@offsetOf(ArgBlock, "shape") == 8 * max_floats + 16);
    std.debug.assert(@offsetOf(ArgBlock, "operands") == 8 * max_floats + 16 + 4 * (max_rank + max_ints));
    std.debug.assert(@sizeOf(ArgBlock) % 8 == 0);
}

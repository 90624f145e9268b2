//! Instruction-set variants: their stable ids (shared with the binding) and names.
const std = @import("std");

pub const Isa = enum(u8) {
    baseline = 0,
    avx2 = 1,
    avx512 = 2,
    neon = 3,

    pub fn fromName(name: []const u8) ?Isa {
        return std.meta.stringToEnum(Isa, name);
    }

    pub fn bit(isa: Isa) u32 {
        return @as(u32, 1) << @as(u5, @intCast(@intFromEnum(isa)));
    }
};

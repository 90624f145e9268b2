//! Data movement kernels that profit from the ISA: conversions between f32, f16 and bf16.

/// This family's entries in the kernel table.
pub const Table = extern struct {};

pub const table_entries: Table = .{};

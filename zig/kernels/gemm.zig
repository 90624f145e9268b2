//! GEMM: packed, cache-blocked matrix multiplication with a register-tiled micro-kernel per ISA.

/// This family's entries in the kernel table.
pub const Table = extern struct {};

pub const table_entries: Table = .{};

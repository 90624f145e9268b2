//! Generated from the op table (src/core/op_table.ts) by scripts/gen_ops.ts; do not edit.
//! tests/op_table.test.ts fails while this file differs from what the table generates.

/// The `binary` kernels (`zt_binary_f32`, and `zt_binary_int` for integer and Bool tensors), by the codes of the op table.
pub const BinaryOp = enum(i32) {
    add = 0, // ops.add
    sub = 1, // ops.sub
    mul = 2, // ops.mul
    div = 3, // ops.div
    max = 4, // ops.maximum
    min = 5, // ops.minimum
    pow = 6, // ops.pow
    eq = 7, // ops.eq
    ne = 8, // ops.ne
    lt = 9, // ops.lt
    le = 10, // ops.le
    gt = 11, // ops.gt
    ge = 12, // ops.ge
    logical_and = 13, // ops.logicalAnd
    logical_or = 14, // ops.logicalOr
    logical_xor = 15, // ops.logicalXor
    relu_backward = 16, // ops.reluBackward
    gelu_backward = 17, // ops.geluBackward

    /// Whether the op writes Bool (0/1 bytes): its dtype rule ends in `->bool`.
    pub fn writesBool(op: BinaryOp) bool {
        return switch (op) {
            .eq, .ne, .lt, .le, .gt, .ge, .logical_and, .logical_or, .logical_xor => true,
            else => false,
        };
    }
};

/// The `unary` kernels (`zt_unary_f32`), by the codes of the op table.
pub const UnaryOp = enum(i32) {
    neg = 0, // ops.neg
    abs = 1, // ops.abs
    relu = 2, // ops.relu
    exp = 3, // ops.exp
    log = 4, // ops.log
    sqrt = 5, // ops.sqrt
    tanh = 6, // ops.tanh
    sigmoid = 7, // ops.sigmoid
    gelu = 8, // ops.gelu
    erf = 9, // ops.erf
    log1p = 10, // ops.log1p
    expm1 = 11, // ops.expm1
    silu = 12, // ops.silu
    softplus = 13, // ops.softplus
    leaky_relu = 14, // ops.leakyRelu
    elu = 15, // ops.elu
    clamp = 16, // ops.clamp
    sign = 17, // ops.sign
    reciprocal = 18, // ops.reciprocal
    rsqrt = 19, // ops.rsqrt
    square = 20, // ops.square
    gelu_erf = 21, // ops.gelu
};

/// The `reduce` kernels (`zt_reduce_f32`, and `zt_reduce_int` for integer and Bool tensors), by the codes of the op table.
pub const ReduceOp = enum(i32) {
    sum = 0, // ops.sum
    mean = 1, // ops.mean
    max = 2, // ops.max
    min = 3, // ops.min
    arg_max = 4, // ops.argmax
    arg_min = 5, // ops.argmin
    prod = 6, // ops.prod

    /// Whether the op writes I64 indices: its dtype rule ends in `->i64`.
    pub fn writesI64(op: ReduceOp) bool {
        return switch (op) {
            .arg_max, .arg_min => true,
            else => false,
        };
    }
};

/// The `softmax` kernels (`zt_softmax_f32`), by the codes of the op table.
pub const SoftmaxOp = enum(i32) {
    softmax = 0, // ops.softmax
    log_softmax = 1, // ops.logSoftmax
};

/// The `index` kernels (`zt_index_f32`), by the codes of the op table.
pub const IndexOp = enum(i32) {
    gather = 0, // ops.gather
    scatter_add = 1, // ops.scatterAdd
    cum_sum = 2, // ops.cumsum
};

/// The `nll` kernels (`zt_nll_f32`), by the codes of the op table.
pub const NllOp = enum(i32) {
    nll_loss = 0, // ops.nllLoss
    cross_entropy = 1, // ops.crossEntropy
};

/**
 * The op table's names and codes as explicit types. Generated from `src/core/op_table.ts` by
 * `scripts/gen_ops.ts`; do not edit (`tests/op_table.test.ts` fails while it differs).
 *
 * @module
 */

/** The name of an operator in the op table (its name in `ops`). */
export type OpName =
  | "add"
  | "sub"
  | "mul"
  | "div"
  | "maximum"
  | "minimum"
  | "pow"
  | "eq"
  | "ne"
  | "lt"
  | "le"
  | "gt"
  | "ge"
  | "logicalAnd"
  | "logicalOr"
  | "logicalXor"
  | "logicalNot"
  | "neg"
  | "abs"
  | "relu"
  | "exp"
  | "log"
  | "sqrt"
  | "tanh"
  | "sigmoid"
  | "gelu"
  | "erf"
  | "log1p"
  | "expm1"
  | "silu"
  | "softplus"
  | "leakyRelu"
  | "elu"
  | "clamp"
  | "sign"
  | "reciprocal"
  | "rsqrt"
  | "square"
  | "hardtanh"
  | "where"
  | "sum"
  | "mean"
  | "max"
  | "min"
  | "argmax"
  | "argmin"
  | "prod"
  | "var"
  | "std"
  | "logsumexp"
  | "norm"
  | "any"
  | "all"
  | "softmax"
  | "logSoftmax"
  | "gather"
  | "scatterAdd"
  | "cumsum"
  | "indexSelect"
  | "maxWithIndices"
  | "minWithIndices"
  | "stack"
  | "split"
  | "chunk"
  | "repeat"
  | "oneHot"
  | "tril"
  | "triu"
  | "pad"
  | "matmul"
  | "linear"
  | "maxPool2d"
  | "avgPool2d"
  | "adaptiveAvgPool2d"
  | "conv2d"
  | "conv1d"
  | "convTranspose2d"
  | "layerNorm"
  | "batchNorm"
  | "concat"
  | "embedding"
  | "nllLoss"
  | "crossEntropy"
  | "attention"
  | "lstm"
  | "gru"
  | "ctcLoss"
  | "mseLoss"
  | "l1Loss"
  | "smoothL1Loss"
  | "binaryCrossEntropy"
  | "binaryCrossEntropyWithLogits"
  | "klDiv"
  | "dropout"
  | "reshape"
  | "tryReshape"
  | "permute"
  | "transpose"
  | "expand"
  | "flip"
  | "slice"
  | "select"
  | "squeeze"
  | "unsqueeze"
  | "cast"
  | "clone"
  | "contiguous"
  | "toLayout"
  | "copyInto";

/** The kinds of backward record, named as in spec 000 §8's table. */
export type RecordKind =
  | "Add"
  | "Sub"
  | "Mul"
  | "Div"
  | "Maximum"
  | "Minimum"
  | "Pow"
  | "Neg"
  | "Abs"
  | "Relu"
  | "Exp"
  | "Log"
  | "Sqrt"
  | "Tanh"
  | "Sigmoid"
  | "Gelu"
  | "Erf"
  | "Log1p"
  | "Expm1"
  | "Silu"
  | "Softplus"
  | "LeakyRelu"
  | "Elu"
  | "Clamp"
  | "Reciprocal"
  | "Rsqrt"
  | "Square"
  | "Hardtanh"
  | "Where"
  | "Sum"
  | "Mean"
  | "Max"
  | "Min"
  | "Prod"
  | "Softmax"
  | "LogSoftmax"
  | "Gather"
  | "ScatterAdd"
  | "CumSum"
  | "MatMul"
  | "MaxPool2d"
  | "AvgPool2d"
  | "Conv2d"
  | "ConvTranspose2d"
  | "LayerNorm"
  | "BatchNorm"
  | "Concat"
  | "Embedding"
  | "NllLoss"
  | "CrossEntropy"
  | "Attention"
  | "Lstm"
  | "Gru"
  | "CtcLoss"
  | "Reshape"
  | "Permute"
  | "Expand"
  | "Flip"
  | "Slice"
  | "Select"
  | "Cast";

/** The differentiable operators: with a rule, composed of recording ops, or still without a rule. */
export type DifferentiableOp =
  | "add"
  | "sub"
  | "mul"
  | "div"
  | "maximum"
  | "minimum"
  | "pow"
  | "neg"
  | "abs"
  | "relu"
  | "exp"
  | "log"
  | "sqrt"
  | "tanh"
  | "sigmoid"
  | "gelu"
  | "erf"
  | "log1p"
  | "expm1"
  | "silu"
  | "softplus"
  | "leakyRelu"
  | "elu"
  | "clamp"
  | "reciprocal"
  | "rsqrt"
  | "square"
  | "hardtanh"
  | "where"
  | "sum"
  | "mean"
  | "max"
  | "min"
  | "prod"
  | "var"
  | "std"
  | "logsumexp"
  | "norm"
  | "softmax"
  | "logSoftmax"
  | "gather"
  | "scatterAdd"
  | "cumsum"
  | "indexSelect"
  | "maxWithIndices"
  | "minWithIndices"
  | "stack"
  | "split"
  | "chunk"
  | "repeat"
  | "tril"
  | "triu"
  | "pad"
  | "matmul"
  | "linear"
  | "maxPool2d"
  | "avgPool2d"
  | "adaptiveAvgPool2d"
  | "conv2d"
  | "conv1d"
  | "convTranspose2d"
  | "layerNorm"
  | "batchNorm"
  | "concat"
  | "embedding"
  | "nllLoss"
  | "crossEntropy"
  | "attention"
  | "lstm"
  | "gru"
  | "ctcLoss"
  | "mseLoss"
  | "l1Loss"
  | "smoothL1Loss"
  | "binaryCrossEntropy"
  | "binaryCrossEntropyWithLogits"
  | "klDiv"
  | "dropout"
  | "reshape"
  | "tryReshape"
  | "permute"
  | "transpose"
  | "expand"
  | "flip"
  | "slice"
  | "select"
  | "squeeze"
  | "unsqueeze"
  | "cast"
  | "clone"
  | "contiguous";

/** The operators whose kernel is in the `binary` family (their names in `ops`). */
export type BinaryOpName =
  | "add"
  | "sub"
  | "mul"
  | "div"
  | "maximum"
  | "minimum"
  | "pow"
  | "eq"
  | "ne"
  | "lt"
  | "le"
  | "gt"
  | "ge"
  | "logicalAnd"
  | "logicalOr"
  | "logicalXor"
  | "reluBackward"
  | "geluBackward";

/** The operators whose kernel is in the `unary` family (their names in `ops`). */
export type UnaryOpName =
  | "neg"
  | "abs"
  | "relu"
  | "exp"
  | "log"
  | "sqrt"
  | "tanh"
  | "sigmoid"
  | "gelu"
  | "erf"
  | "log1p"
  | "expm1"
  | "silu"
  | "softplus"
  | "leakyRelu"
  | "elu"
  | "clamp"
  | "sign"
  | "reciprocal"
  | "rsqrt"
  | "square";

/** The operators whose kernel is in the `reduce` family (their names in `ops`). */
export type ReduceOpName =
  | "sum"
  | "mean"
  | "max"
  | "min"
  | "argmax"
  | "argmin"
  | "prod";

/** The operators whose kernel is in the `softmax` family (their names in `ops`). */
export type SoftmaxOpName =
  | "softmax"
  | "logSoftmax";

/** The operators whose kernel is in the `index` family (their names in `ops`). */
export type IndexOpName =
  | "gather"
  | "scatterAdd"
  | "cumsum";

/** The operators whose kernel is in the `nll` family (their names in `ops`). */
export type NllOpName =
  | "nllLoss"
  | "crossEntropy";

/** Each kernel family's operator names. */
export interface KernelOpNames {
  /** The `binary` family's operators. */
  readonly binary: BinaryOpName;
  /** The `unary` family's operators. */
  readonly unary: UnaryOpName;
  /** The `reduce` family's operators. */
  readonly reduce: ReduceOpName;
  /** The `softmax` family's operators. */
  readonly softmax: SoftmaxOpName;
  /** The `index` family's operators. */
  readonly index: IndexOpName;
  /** The `nll` family's operators. */
  readonly nll: NllOpName;
}

/** The kernel names of each family mapped to their codes. */
export interface KernelCodes {
  /** The binary kernels by name, with their codes. */
  readonly binary: {
    readonly Add: 0;
    readonly Sub: 1;
    readonly Mul: 2;
    readonly Div: 3;
    readonly Max: 4;
    readonly Min: 5;
    readonly Pow: 6;
    readonly Eq: 7;
    readonly Ne: 8;
    readonly Lt: 9;
    readonly Le: 10;
    readonly Gt: 11;
    readonly Ge: 12;
    readonly LogicalAnd: 13;
    readonly LogicalOr: 14;
    readonly LogicalXor: 15;
    readonly ReluBackward: 16;
    readonly GeluBackward: 17;
  };
  /** The unary kernels by name, with their codes. */
  readonly unary: {
    readonly Neg: 0;
    readonly Abs: 1;
    readonly Relu: 2;
    readonly Exp: 3;
    readonly Log: 4;
    readonly Sqrt: 5;
    readonly Tanh: 6;
    readonly Sigmoid: 7;
    readonly Gelu: 8;
    readonly Erf: 9;
    readonly Log1p: 10;
    readonly Expm1: 11;
    readonly Silu: 12;
    readonly Softplus: 13;
    readonly LeakyRelu: 14;
    readonly Elu: 15;
    readonly Clamp: 16;
    readonly Sign: 17;
    readonly Reciprocal: 18;
    readonly Rsqrt: 19;
    readonly Square: 20;
    readonly GeluErf: 21;
  };
  /** The reduce kernels by name, with their codes. */
  readonly reduce: {
    readonly Sum: 0;
    readonly Mean: 1;
    readonly Max: 2;
    readonly Min: 3;
    readonly ArgMax: 4;
    readonly ArgMin: 5;
    readonly Prod: 6;
  };
  /** The softmax kernels by name, with their codes. */
  readonly softmax: {
    readonly Softmax: 0;
    readonly LogSoftmax: 1;
  };
  /** The index kernels by name, with their codes. */
  readonly index: {
    readonly Gather: 0;
    readonly ScatterAdd: 1;
    readonly CumSum: 2;
  };
  /** The nll kernels by name, with their codes. */
  readonly nll: {
    readonly NllLoss: 0;
    readonly CrossEntropy: 1;
  };
}

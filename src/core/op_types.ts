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
  | "sum"
  | "mean"
  | "max"
  | "min"
  | "argmax"
  | "softmax"
  | "logSoftmax"
  | "matmul"
  | "linear"
  | "maxPool2d"
  | "avgPool2d"
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
  | "Sum"
  | "Mean"
  | "Max"
  | "Min"
  | "Softmax"
  | "LogSoftmax"
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
  | "sum"
  | "mean"
  | "max"
  | "min"
  | "softmax"
  | "logSoftmax"
  | "matmul"
  | "linear"
  | "maxPool2d"
  | "avgPool2d"
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
  };
  /** The reduce kernels by name, with their codes. */
  readonly reduce: {
    readonly Sum: 0;
    readonly Mean: 1;
    readonly Max: 2;
    readonly Min: 3;
    readonly ArgMax: 4;
  };
  /** The softmax kernels by name, with their codes. */
  readonly softmax: {
    readonly Softmax: 0;
    readonly LogSoftmax: 1;
  };
}

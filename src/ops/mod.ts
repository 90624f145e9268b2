/**
 * `ops`: every operation as a function. Tensor methods call these.
 *
 * @module
 */
export {
  abs,
  add,
  div,
  eq,
  erf,
  exp,
  ge,
  gelu,
  gt,
  le,
  log,
  lt,
  maximum,
  minimum,
  mul,
  ne,
  neg,
  pow,
  relu,
  sigmoid,
  sqrt,
  sub,
  tanh,
} from "./elementwise.ts";
export { argmax, logSoftmax, max, mean, min, softmax, sum } from "./reduce.ts";
export type { ReduceOptions } from "./reduce.ts";
export { linear, matmul } from "./linalg.ts";
export { attention, concat, crossEntropy, embedding, maxPool2d, nllLoss } from "./nn.ts";
export type { AttentionOptions, EmbeddingOptions, Pool2dOptions } from "./nn.ts";
export { avgPool2d, conv1d, conv2d, convTranspose2d } from "./conv.ts";
export type { AvgPool2dOptions, Conv1dOptions, Conv2dOptions, ConvTranspose2dOptions } from "./conv.ts";
export { batchNorm, layerNorm } from "./norm.ts";
export type { BatchNormOptions, LayerNormOptions } from "./norm.ts";
export { ctcLoss, gru, lstm } from "./sequence.ts";
export type {
  CtcLossOptions,
  GruOptions,
  GruResult,
  LstmOptions,
  LstmResult,
  RnnWeights,
} from "./sequence.ts";
export {
  expand,
  flip,
  permute,
  reshape,
  select,
  slice,
  squeeze,
  transpose,
  tryReshape,
  unsqueeze,
} from "./views.ts";
export { cast, clone, contiguous, copyInto, toLayout } from "./copy.ts";

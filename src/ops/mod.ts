/**
 * `ops`: every operation as a function. Tensor methods call these.
 *
 * @module
 */
// Every export of elementwise.ts is an op or its `Operand` type (the helpers are in common.ts), so a new
// element-wise op needs no line here.
export * from "./elementwise.ts";
export { argmax, logSoftmax, max, mean, min, softmax, sum } from "./reduce.ts";
export type { ReduceOptions } from "./reduce.ts";
export { argmin, logsumexp, norm, prod, std, var } from "./reduce.ts";
export { all, any } from "./reduce.ts";
export type { NormOptions, VarOptions } from "./reduce.ts";
export {
  cumsum,
  gather,
  indexSelect,
  maxWithIndices,
  minWithIndices,
  oneHot,
  pad,
  repeat,
  scatterAdd,
  stack,
  tril,
  triu,
} from "./indexing.ts";
export { chunk, split } from "./views.ts";
export type { PadOptions, TriangleOptions, ValuesAndIndices } from "./indexing.ts";
export { linear, matmul } from "./linalg.ts";
export { attention, concat, embedding } from "./nn.ts";
export type { AttentionOptions, EmbeddingOptions } from "./nn.ts";
export { conv1d, conv2d, convTranspose2d } from "./conv.ts";
export type { Conv1dOptions, Conv2dOptions, ConvTranspose2dOptions } from "./conv.ts";
export { adaptiveAvgPool2d, avgPool2d, maxPool2d } from "./pool.ts";
export type { AvgPool2dOptions, MaxPool2dResult, Pool2dOptions } from "./pool.ts";
export {
  binaryCrossEntropy,
  binaryCrossEntropyWithLogits,
  crossEntropy,
  klDiv,
  l1Loss,
  mseLoss,
  nllLoss,
  smoothL1Loss,
} from "./losses.ts";
export type {
  BinaryCrossEntropyOptions,
  BinaryCrossEntropyWithLogitsOptions,
  CrossEntropyOptions,
  KlDivOptions,
  LossOptions,
  LossReduction,
  NllLossOptions,
  SmoothL1LossOptions,
} from "./losses.ts";
export { dropout } from "./dropout.ts";
export type { DropoutOptions } from "./dropout.ts";
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

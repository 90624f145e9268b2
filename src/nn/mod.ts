/**
 * `nn`: the `Module` base and PyTorch's layers, with PyTorch's parameter names, shapes and default
 * initialisation (from the generator `manualSeed` seeds), so a PyTorch `state_dict` loads by name.
 *
 * @module
 */
export { Module, StateDictError } from "./module.ts";
export type { LoadResult, StateDict } from "./module.ts";
export { manualSeed } from "./init.ts";
export {
  AvgPool2d,
  BatchNorm1d,
  BatchNorm2d,
  Conv1d,
  Conv2d,
  ConvTranspose2d,
  Dropout,
  Embedding,
  Flatten,
  GELU,
  Identity,
  LayerNorm,
  Linear,
  LogSoftmax,
  MaxPool2d,
  ReLU,
  Sequential,
  Sigmoid,
  Softmax,
  Tanh,
} from "./layers.ts";
export type { BatchNormOptions, ConvOptions, ConvTransposeOptions } from "./layers.ts";
export {
  BCELoss,
  BCEWithLogitsLoss,
  CrossEntropyLoss,
  KLDivLoss,
  L1Loss,
  MSELoss,
  NLLLoss,
  SmoothL1Loss,
} from "./losses.ts";
export { GRU, LSTM } from "./recurrent.ts";
export type { RecurrentOptions } from "./recurrent.ts";
export { MultiheadAttention, TransformerEncoderLayer } from "./transformer.ts";
export type {
  AttentionMasks,
  MultiheadAttentionOptions,
  TransformerEncoderLayerOptions,
} from "./transformer.ts";

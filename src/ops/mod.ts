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
export { linear, matmul } from "./linalg.ts";
export { crossEntropy, maxPool2d, nllLoss } from "./nn.ts";
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
export { cast, clone, contiguous, copyInto, fillStrided, toLayout } from "./copy.ts";

/**
 * `optim`: optimizers (`SGD`, `Adam`, `AdamW`, `RMSprop`), gradient clipping and, in `optim.lr`, learning-rate
 * schedules. Each update is one fused native kernel call per parameter that allocates nothing once the state
 * exists.
 *
 * @module
 */
export { Adam, AdamW, RMSprop, SGD } from "./algorithms.ts";
export type { AdamOptions, RmspropOptions, SgdOptions } from "./algorithms.ts";
export { Optimizer } from "./optimizer.ts";
export type {
  Hyperparameters,
  OptimizerStateDict,
  ParamGroup,
  ParamsInput,
  ParamState,
} from "./optimizer.ts";
export { clipGradNorm } from "./clip.ts";
export * as lr from "./lr.ts";

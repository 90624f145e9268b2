/**
 * The optimizer kernel: one fused pass over a contiguous F32 parameter that reads its gradient, updates the
 * state buffers and writes the parameter. `nativeOptimizerStep` runs `zt_optim_step_f32`
 * (`zig/kernels/optim.zig`); `referenceOptimizerStep` is the same arithmetic in plain TypeScript, each
 * operation rounded to f32 (`Math.fround`), and defines the bits the native kernel must give in both modes.
 *
 * @module
 */
import { args } from "../native/arg_block.ts";
import { native } from "../native/library.ts";
import type { NativePointer } from "../native/symbols.ts";
import { type ComputeSettings, type KernelOperand, MODE_CODE } from "./types.ts";

/** The update rules, numbered as `Algorithm` in zig/kernels/optim.zig. */
export const OptimAlgorithm = {
  /** coefficients: lr, weight decay, momentum, 1 − dampening; state: momentum buffer. */
  SGD: 0,
  /**
   * coefficients: lr/(1 − β1^t), weight decay, 1 − β1, β2, 1 − β2, eps, √(1 − β2^t), 1 − lr·weight decay;
   * state: first moment, second moment, its running maximum (amsgrad).
   */
  Adam: 1,
  /** coefficients: lr, weight decay, α, 1 − α, eps, momentum; state: square average, momentum, grad average. */
  RMSprop: 2,
} as const;
/** An update rule. */
export type OptimAlgorithm = (typeof OptimAlgorithm)[keyof typeof OptimAlgorithm];

/** Flag bits of an update, as `Flags` in zig/kernels/optim.zig. */
export const OptimFlags = {
  /** Adds weight decay · param to the gradient (L2 penalty). */
  WeightDecay: 1,
  /** SGD, RMSprop: use the momentum buffer. Adam: multiply the parameter by 1 − lr·wd first (AdamW). */
  MomentumOrDecoupled: 2,
  /** SGD: Nesterov. Adam: amsgrad. RMSprop: centered. */
  Variant: 4,
  /** SGD: the momentum buffer starts as the gradient. */
  First: 8,
} as const;

/** One update: the rule, its flags and its coefficients (at most 8, unused ones ignored). */
export interface OptimizerStep {
  /** The update rule. */
  readonly algorithm: OptimAlgorithm;
  /** The rule's flags (nesterov, amsgrad, maximize, ...), as bits. */
  readonly flags: number;
  /** The rule's coefficients (learning rate, betas, ...), in the rule's order. */
  readonly coefficients: readonly number[];
}

/** A kernel that applies one update to `count` elements of a parameter. */
export type OptimizerStepKernel = (
  step: OptimizerStep,
  count: number,
  param: KernelOperand,
  grad: KernelOperand,
  state: readonly (KernelOperand | null)[],
  settings: ComputeSettings,
) => void;

const NULL = null as unknown as NativePointer;

/**
 * The native update (`zt_optim_step_f32`); assumes contiguous F32 operands of `count` elements, validated by
 * the optimizer.
 */
export const nativeOptimizerStep: OptimizerStepKernel = (step, count, param, grad, state, settings) => {
  args.op(step.algorithm, MODE_CODE[settings.mode], settings.threads)
    .int(0, count)
    .int(1, param.offset)
    .int(2, grad.offset)
    .int(3, state[0]?.offset ?? 0)
    .int(4, state[1]?.offset ?? 0)
    .int(5, state[2]?.offset ?? 0)
    .int(6, step.flags);
  for (let k = 0; k < step.coefficients.length; k++) args.float(k, step.coefficients[k]);
  native.zt_optim_step_f32(
    args.pointer,
    param.pointer,
    grad.pointer,
    state[0]?.pointer ?? NULL,
    state[1]?.pointer ?? NULL,
    state[2]?.pointer ?? NULL,
  );
};

const f = Math.fround;

/** The reference update: the native kernel's formulas, every operation rounded to f32. */
export const referenceOptimizerStep: OptimizerStepKernel = (step, count, param, grad, state) => {
  const c = Array.from({ length: 8 }, (_, k) => f(step.coefficients[k] ?? 0));
  const has = (flag: number) => (step.flags & flag) !== 0;
  const p = param.data as Float32Array;
  const gr = grad.data as Float32Array;
  const [s0, s1, s2] = [0, 1, 2].map((j) => state[j]?.data as Float32Array | undefined);
  const [o0, o1, o2] = [0, 1, 2].map((j) => state[j]?.offset ?? 0);
  for (let i = 0; i < count; i++) {
    const pi = param.offset + i;
    let g = gr[grad.offset + i];
    if (step.algorithm === OptimAlgorithm.SGD) {
      if (has(OptimFlags.WeightDecay)) g = f(g + f(c[1] * p[pi]));
      if (has(OptimFlags.MomentumOrDecoupled)) {
        const b = o0 + i;
        s0![b] = has(OptimFlags.First) ? g : f(f(c[2] * s0![b]) + f(c[3] * g));
        g = has(OptimFlags.Variant) ? f(g + f(c[2] * s0![b])) : s0![b];
      }
      p[pi] = f(p[pi] - f(c[0] * g));
    } else if (step.algorithm === OptimAlgorithm.Adam) {
      if (has(OptimFlags.MomentumOrDecoupled)) p[pi] = f(p[pi] * c[7]);
      if (has(OptimFlags.WeightDecay)) g = f(g + f(c[1] * p[pi]));
      const m = o0 + i;
      const v = o1 + i;
      s0![m] = f(s0![m] + f(c[2] * f(g - s0![m])));
      s1![v] = f(f(c[3] * s1![v]) + f(c[4] * f(g * g)));
      let second = s1![v];
      if (has(OptimFlags.Variant)) {
        const t = o2 + i;
        s2![t] = second > s2![t] ? second : s2![t];
        second = s2![t];
      }
      const denom = f(f(f(Math.sqrt(second)) / c[6]) + c[5]);
      p[pi] = f(p[pi] - f(c[0] * f(s0![m] / denom)));
    } else {
      if (has(OptimFlags.WeightDecay)) g = f(g + f(c[1] * p[pi]));
      const q = o0 + i;
      s0![q] = f(f(c[2] * s0![q]) + f(c[3] * f(g * g)));
      let spread = s0![q];
      if (has(OptimFlags.Variant)) {
        const a = o2 + i;
        s2![a] = f(s2![a] + f(c[3] * f(g - s2![a])));
        spread = f(spread - f(s2![a] * s2![a]));
      }
      const denom = f(f(Math.sqrt(spread)) + c[4]);
      if (has(OptimFlags.MomentumOrDecoupled)) {
        const b = o1 + i;
        s1![b] = f(f(c[5] * s1![b]) + f(g / denom));
        p[pi] = f(p[pi] - f(c[0] * s1![b]));
      } else {
        p[pi] = f(p[pi] - f(c[0] * f(g / denom)));
      }
    }
  }
};

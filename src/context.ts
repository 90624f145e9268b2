/**
 * Per-job settings that follow the async context: the arithmetic mode, the thread count and whether
 * gradients are recorded. Each is a process-wide default that `TensorCompute.run`, `GradMode.noGrad` and
 * `GradMode.disable` override for one job only (through `AsyncLocalStorage`, so the override follows `await`
 * and is invisible to concurrent jobs).
 *
 * @module
 */
import { OptionError } from "./core/errors.ts";
import { checkOptions } from "./core/options.ts";
import { AsyncLocalStorage } from "node:async_hooks";
import { hardwareThreads } from "./native/kernel_info.ts";
import type { ArithmeticMode, ComputeSettings, KernelSet } from "./kernels/types.ts";
import { givenKernelSet, nativeKernels, resolveKernelSet } from "./kernels/sets.ts";

interface Overrides {
  readonly mode?: ArithmeticMode;
  readonly threads?: number;
  readonly gradEnabled?: boolean;
  readonly kernels?: KernelSet;
}

const context: AsyncLocalStorage<Overrides> = new AsyncLocalStorage<Overrides>();

let defaultMode: ArithmeticMode = "fast";
let defaultThreads: number = hardwareThreads();
let defaultKernels: KernelSet = nativeKernels;
/**
 * The process-wide settings as one object, made again after a default changes: outside any override (the
 * common case) every op's kernel call reads it without allocating.
 */
let defaults: ComputeSnapshot | null = null;

/** The kernel set in force for the current async context. */
export function kernels(): KernelSet {
  return context.getStore()?.kernels ?? defaultKernels;
}

/**
 * Chooses the process-wide kernel set: `nativeKernels` (the default) or `referenceKernels` (plain TypeScript,
 * the meaning every native kernel is tested against). `TensorCompute.run({ kernels }, fn)` chooses for one job.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nativeKernels, referenceKernels, setDefaultKernels, Tensor } from "@zigtensor/zigtensor";
 * setDefaultKernels(referenceKernels);
 * using a = Tensor.from([1, 2]);
 * using b = a.add(a);
 * setDefaultKernels(nativeKernels);
 * assert.ok(b.toArray().join() === "2,4");
 * ```
 */
export function setDefaultKernels(set: KernelSet): void {
  defaultKernels = resolveKernelSet(set);
  defaults = null;
}

function checkMode(mode: unknown): ArithmeticMode {
  if (mode !== "fast" && mode !== "exact") {
    throw new OptionError("TensorCompute", `mode must be "fast" or "exact", got ${JSON.stringify(mode)}`);
  }
  return mode;
}

function checkThreads(threads: unknown): number {
  if (typeof threads !== "number" || !Number.isInteger(threads) || threads < 1 || threads > 256) {
    throw new RangeError(`TensorCompute: threads must be an integer in 1 to 256, got ${String(threads)}`);
  }
  return threads;
}

/** The settings in force for the current async context. */
export function computeSettings(): ComputeSettings {
  return computeSnapshot();
}

/** The shape of `TensorCompute`. */
export interface TensorComputeApi {
  /** The process-wide arithmetic mode, `"fast"` or `"exact"`. */
  mode: ArithmeticMode;
  /** The process-wide number of kernel threads. */
  threads: number;
  /** Runs `fn` with its own settings, which follow `await` inside it; returns what `fn` returns. */
  run<T>(settings: { mode?: ArithmeticMode; threads?: number; kernels?: KernelSet }, fn: () => T): T;
}

/**
 * Compute settings: the arithmetic mode (`"fast"`: f32 FMA, any summation order; `"exact"`: f64 accumulation in
 * ascending order, the same bits on every ISA and thread count) and the kernels' thread count.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TensorCompute } from "@zigtensor/zigtensor";
 * const inside = await TensorCompute.run({ mode: "exact", threads: 1 }, async () => {
 *   await Promise.resolve();
 *   return `${TensorCompute.mode}/${TensorCompute.threads}`;
 * });
 * assert.ok(inside === "exact/1");
 * ```
 */
export const TensorCompute: TensorComputeApi = {
  /** The mode in force here; assigning sets the process-wide default. */
  get mode(): ArithmeticMode {
    return context.getStore()?.mode ?? defaultMode;
  },
  set mode(mode: ArithmeticMode) {
    defaultMode = checkMode(mode);
    defaults = null;
  },
  /** The thread count in force here; assigning sets the process-wide default. */
  get threads(): number {
    return context.getStore()?.threads ?? defaultThreads;
  },
  set threads(threads: number) {
    defaultThreads = checkThreads(threads);
    defaults = null;
  },
  /**
   * Runs `fn` with its own settings, which follow `await` inside it and are invisible to other code; returns
   * what `fn` returns (a promise when `fn` is async).
   */
  run<T>(settings: { mode?: ArithmeticMode; threads?: number; kernels?: KernelSet }, fn: () => T): T {
    checkOptions("TensorCompute.run", settings, ["mode", "threads", "kernels"]);
    const current = context.getStore();
    return context.run({
      ...current,
      ...(settings.mode === undefined ? {} : { mode: checkMode(settings.mode) }),
      ...(settings.threads === undefined ? {} : { threads: checkThreads(settings.threads) }),
      ...(settings.kernels === undefined ? {} : { kernels: resolveKernelSet(settings.kernels) }),
    }, fn);
  },
};

/** The compute settings and kernel set in force, to run later work (a backward rule) under them. */
export interface ComputeSnapshot {
  /** The arithmetic mode. */
  readonly mode: ArithmeticMode;
  /** The thread count. */
  readonly threads: number;
  /** The kernel set. */
  readonly kernels: KernelSet;
}

/** Internal: the kernel set the ops call under a snapshot. */
export let kernelsOf: (snapshot: ComputeSnapshot) => KernelSet;

/**
 * A snapshot: what `ComputeSnapshot` says, with the kernel set the ops call kept private (`kernelsOf`); its
 * `kernels` is the set as it was given (the public stand-ins of the native kernels, never the native kernels:
 * a snapshot reaches code outside the library, as a kernel's settings or a record's).
 */
class Snapshot implements ComputeSnapshot {
  readonly #kernels: KernelSet;
  constructor(readonly mode: ArithmeticMode, readonly threads: number, kernels: KernelSet) {
    this.#kernels = kernels;
  }
  get kernels(): KernelSet {
    return givenKernelSet(this.#kernels);
  }
  static {
    kernelsOf = (snapshot) => (snapshot as Snapshot).#kernels;
  }
}

/** The settings in force now (one context lookup: ops read the kernel set and the settings from it). */
export function computeSnapshot(): ComputeSnapshot {
  const overrides = context.getStore();
  if (overrides === undefined && defaults !== null) return defaults;
  return snapshotOf(overrides);
}

/** The settings under `overrides`, or the process-wide ones (kept in `defaults`) when there are none. */
function snapshotOf(overrides: Overrides | undefined): ComputeSnapshot {
  if (overrides === undefined) return defaults = new Snapshot(defaultMode, defaultThreads, defaultKernels);
  return new Snapshot(
    overrides.mode ?? defaultMode,
    overrides.threads ?? defaultThreads,
    overrides.kernels ?? defaultKernels,
  );
}

/** Runs `fn` under `snapshot` with gradient recording off (how backward rules run). */
export function runBackwardRule<T>(snapshot: ComputeSnapshot, fn: () => T): T {
  const { mode, threads } = snapshot;
  return context.run({ mode, threads, kernels: kernelsOf(snapshot), gradEnabled: false }, fn);
}

/** Whether operations record backward records in the current async context. */
export function gradEnabled(): boolean {
  return context.getStore()?.gradEnabled ?? true;
}

/** The shape of `GradMode`. */
export interface GradModeApi {
  /** Whether ops record for autograd here. */
  readonly isEnabled: boolean;
  /** Runs `fn` without recording; returns what `fn` returns. */
  noGrad<T>(fn: () => T): T;
  /** Stops recording until the returned handle is disposed (`using _ = GradMode.disable()`). */
  disable(): Disposable;
}

/**
 * Gradient recording. Operations record only when it is enabled and an input requires gradients.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { GradMode } from "@zigtensor/zigtensor";
 * assert.ok(GradMode.isEnabled);
 * const inside = GradMode.noGrad(() => GradMode.isEnabled);
 * assert.ok(inside === false && GradMode.isEnabled);
 * {
 *   using _ = GradMode.disable();
 *   assert.ok(!GradMode.isEnabled);
 * }
 * assert.ok(GradMode.isEnabled);
 * ```
 */
export const GradMode: GradModeApi = {
  /** Whether recording is on in the current async context. */
  get isEnabled(): boolean {
    return gradEnabled();
  },
  /** Runs `fn` with recording off and returns what it returns. */
  noGrad<T>(fn: () => T): T {
    return context.run({ ...context.getStore(), gradEnabled: false }, fn);
  },
  /** Turns recording off until the returned object is disposed (`using _ = GradMode.disable()`). */
  disable(): Disposable {
    const previous = context.getStore();
    context.enterWith({ ...previous, gradEnabled: false });
    let restored = false;
    return {
      [Symbol.dispose]() {
        if (restored) return;
        restored = true;
        context.enterWith(previous ?? {});
      },
    };
  },
};

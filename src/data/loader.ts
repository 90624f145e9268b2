/**
 * `DataLoader`: batches of rows drawn from tensors or typed arrays that share their first axis, in order or
 * shuffled by a seeded generator. The loader owns one set of batch tensors, allocated at the first batch and
 * refilled for every later one, so that steady-state iteration obtains no native memory.
 *
 * @module
 */
import { TensorShapeError } from "../core/errors.ts";
import type { TypedArray } from "../core/dtype.ts";
import { Xorshift128 } from "../core/random.ts";
import { formatShape } from "../core/shape.ts";
import { dtypeOf, isContiguousOf, isTensor, rankOf, shapeOf, Tensor } from "../tensor.ts";

/** Options of `DataLoader`. */
export interface DataLoaderOptions {
  /** Rows per batch. @default 1 */
  readonly batchSize?: number;
  /** Visit the rows in a new random order every epoch. @default false */
  readonly shuffle?: boolean;
  /** The shuffling generator's seed. @default 0 */
  readonly seed?: number;
  /** Skip the last batch when it is smaller than `batchSize`. @default false */
  readonly dropLast?: boolean;
}

/**
 * Iterates over batches of `sources` (tensors, or typed arrays taken as [N] tensors), one epoch per
 * `for … of`. Each batch is an array with one tensor per source, `[batchSize, ...rowShape]`. The batch
 * tensors belong to the loader and are overwritten by the next batch: copy what must outlive the step
 * (`clone()`), and `dispose()` the loader at the end.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DataLoader, Tensor } from "@zigtensor/zigtensor";
 * using x = Tensor.arange(10).reshape([5, 2]);
 * using loader = new DataLoader([x, new Int32Array([0, 1, 2, 3, 4])], { batchSize: 2 });
 * const labels: number[][] = [];
 * for (const [xb, yb] of loader) labels.push([...yb.toArray()] as number[]);
 * assert.deepEqual(labels, [[0, 1], [2, 3], [4]]);
 * assert.equal(loader.length, 3);
 * ```
 */
export class DataLoader implements Iterable<Tensor[]>, Disposable {
  /** Rows per batch. */
  readonly batchSize: number;
  /** Whether each epoch visits the rows in a new seeded order. */
  readonly shuffle: boolean;
  /** Whether a last partial batch is left out. */
  readonly dropLast: boolean;
  /** The number of rows. */
  readonly rows: number;
  readonly #sources: Tensor[];
  readonly #owned: Tensor[] = [];
  readonly #order: Int32Array;
  readonly #random: Xorshift128;
  #batches: Tensor[] | null = null;

  /** Batches the rows (first axis) of `sources`, which all have the same number of rows. */
  constructor(sources: readonly (Tensor | TypedArray)[], options: DataLoaderOptions = {}) {
    const op = "DataLoader";
    this.batchSize = options.batchSize ?? 1;
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1) {
      throw new RangeError(`${op}: batchSize must be an integer ≥ 1, got ${String(options.batchSize)}`);
    }
    this.shuffle = options.shuffle ?? false;
    this.dropLast = options.dropLast ?? false;
    this.#random = new Xorshift128(options.seed ?? 0);
    if (sources.length === 0) throw new RangeError(`${op}: needs at least one source`);
    this.#sources = sources.map((s) => {
      const t = isTensor(s) ? s : Tensor.from(s);
      if (!isTensor(s)) this.#owned.push(t);
      if (rankOf(t) === 0) {
        throw new TensorShapeError(op, "a source must have a first axis, got a scalar", [shapeOf(t)]);
      }
      if (isContiguousOf(t)) return t;
      const copy = t.contiguous();
      this.#owned.push(copy);
      return copy;
    });
    this.rows = shapeOf(this.#sources[0])[0];
    for (const t of this.#sources) {
      if (shapeOf(t)[0] !== this.rows) {
        throw new TensorShapeError(
          op,
          `every source needs ${this.rows} rows, got ${formatShape(shapeOf(t))}`,
          this.#sources.map((s) => shapeOf(s)),
        );
      }
    }
    this.#order = Int32Array.from({ length: this.rows }, (_, i) => i);
  }

  /** The number of batches in one epoch. */
  get length(): number {
    return this.dropLast ? Math.floor(this.rows / this.batchSize) : Math.ceil(this.rows / this.batchSize);
  }

  /** One epoch of batches (a new order first when shuffling). */
  *[Symbol.iterator](): Iterator<Tensor[]> {
    if (this.shuffle) this.#permute();
    const batches = this.#batchTensors();
    for (let b = 0; b < this.length; b++) {
      const first = b * this.batchSize;
      const count = Math.min(this.batchSize, this.rows - first);
      this.#sources.forEach((source, i) => this.#gather(source, batches[i], first, count));
      yield count === this.batchSize ? batches : batches.map((t) => t.slice(0, 0, count));
    }
  }

  /** Releases the batch tensors and the copies the loader made of typed arrays; idempotent. */
  dispose(): void {
    for (const t of [...this.#owned, ...(this.#batches ?? [])]) t.dispose();
    this.#owned.length = 0;
    this.#batches = null;
  }

  /** Enables `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** Fisher–Yates with the loader's generator. */
  #permute(): void {
    const order = this.#order;
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(this.#random.uniform() * (i + 1));
      const t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
  }

  #batchTensors(): Tensor[] {
    this.#batches ??= this.#sources.map((s) =>
      Tensor.empty([this.batchSize, ...shapeOf(s).slice(1)], { dtype: dtypeOf(s) })
    );
    return this.#batches;
  }

  /** Copies rows `order[first … first + count)` of `source` into the first rows of `batch`. */
  #gather(source: Tensor, batch: Tensor, first: number, count: number): void {
    const from = source.data();
    const to = batch.mutableData();
    const width = to.length / this.batchSize;
    for (let r = 0; r < count; r++) {
      const start = this.#order[first + r] * width;
      to.set(from.subarray(start, start + width) as never, r * width);
    }
  }
}

/**
 * Progress of long work: steps done, the latest metrics, the rate and the time left. On a terminal one line
 * is rewritten in place (at most ten times a second); otherwise a plain line is printed every `every` steps
 * and at the end, so that logs stay readable.
 *
 * @module
 */
import process from "node:process";

/** Options of `Progress`. */
export interface ProgressOptions {
  /** The text before the counts. @default "" */
  readonly label?: string;
  /** Plain-line mode: print every this many steps. @default a tenth of the total */
  readonly every?: number;
  /** Rewrite one line (true) or print plain lines (false). @default whether stdout is a terminal */
  readonly tty?: boolean;
  /** Where the text goes. @default process.stdout */
  readonly write?: (text: string) => void;
}

function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return "?";
  const s = Math.round(seconds);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s` : `${s}s`;
}

/**
 * A progress line for `total` steps.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Progress } from "@zigtensor/zigtensor";
 * const lines: string[] = [];
 * const progress = new Progress(4, { label: "train", every: 2, tty: false, write: (t) => lines.push(t) });
 * for (let step = 1; step <= 4; step++) progress.update(step, { loss: 1 / step });
 * progress.done();
 * assert.equal(lines.length, 2);
 * assert.ok(lines[1].startsWith("train 4/4") && lines[1].includes("loss 0.2500"));
 * ```
 */
export class Progress {
  readonly #total: number;
  readonly #label: string;
  readonly #every: number;
  readonly #tty: boolean;
  readonly #write: (text: string) => void;
  readonly #start = performance.now();
  #lastDraw = -Infinity;
  #line = "";
  #step = 0;
  #printed = -1;

  /** Progress towards `total` steps. */
  constructor(total: number, options: ProgressOptions = {}) {
    if (!Number.isInteger(total) || total < 1) {
      throw new RangeError(`Progress: total must be an integer ≥ 1, got ${String(total)}`);
    }
    this.#total = total;
    this.#label = options.label ?? "";
    this.#every = Math.max(1, options.every ?? Math.ceil(total / 10));
    this.#tty = options.tty ?? process.stdout.isTTY === true;
    this.#write = options.write ?? ((text) => process.stdout.write(text));
  }

  /** Reports that `step` steps (of the total) are done, with the latest metrics. */
  update(step: number, metrics: Readonly<Record<string, number>> = {}): void {
    this.#step = step;
    const elapsed = (performance.now() - this.#start) / 1000;
    const rate = step / Math.max(elapsed, 1e-9);
    const parts = [`${this.#label ? `${this.#label} ` : ""}${step}/${this.#total}`];
    for (const [name, value] of Object.entries(metrics)) {
      parts.push(`${name} ${Number.isInteger(value) ? value : value.toFixed(4)}`);
    }
    parts.push(`${rate.toFixed(1)} steps/s`, `ETA ${duration((this.#total - step) / rate)}`);
    this.#line = parts.join("  ");
    if (this.#tty) {
      const now = performance.now();
      if (now - this.#lastDraw >= 100 || step === this.#total) {
        this.#lastDraw = now;
        this.#write(`\r\x1b[2K${this.#line}`);
      }
    } else if (step % this.#every === 0 || step === this.#total) {
      this.#printed = step;
      this.#write(`${this.#line}\n`);
    }
  }

  /** Ends the line (terminal) or prints the last state if it was not printed (plain lines). */
  done(): void {
    if (this.#tty) this.#write(`\r\x1b[2K${this.#line}\n`);
    else if (this.#printed !== this.#step && this.#line !== "") this.#write(`${this.#line}\n`);
  }
}

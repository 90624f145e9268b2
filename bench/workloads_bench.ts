/**
 * Workload benchmarks: the work people train (the rows of issue 13, the activations sigmoid, tanh and GELU,
 * and five training steps: MLP, CNN, LSTM, GRU and a transformer block) timed beside PyTorch on the CPU in the
 * same run, with the physical limit of each (its bytes at the measured memory bandwidth or its flops at the
 * measured FMA peak, whichever is slower) beside.
 *
 * Rounds alternate: zigtensor times every workload, then a PyTorch subprocess times every workload, and
 * again, so that a burst of load from other processes hits both alike. Each figure is the median of every
 * timed call over the rounds, with the fastest and slowest call beside it as the spread. Both libraries run
 * on the same thread count: 1, then 2 (`ZIGTENSOR_BENCH_THREADS=1` for one thread only).
 *
 * PyTorch is an optional peer: `bash bench/peers.sh` installs it with pip into bench/.peers/torch, or
 * `ZIGTENSOR_TORCH_PYTHON` names a Python interpreter that imports `torch`. Without it the zigtensor figures
 * and limits are still printed, with a note.
 *
 *   deno bench -A bench/workloads_bench.ts   the ratio tables, then Deno's table of the zigtensor steps
 *   deno run -A bench/workloads_bench.ts     the ratio tables only (also `bun bench/workloads_bench.ts`)
 *
 * `ZIGTENSOR_BENCH_ROUNDS` (default 3) sets the rounds and `ZIGTENSOR_BENCH_ONLY` a comma-separated list of
 * workload keys to run.
 *
 * Peak memory of the training steps (Linux): each library runs each step in a process of its own, one thread,
 * and reports its peak resident set (VmHWM) above what the process held before the step's tensors were made
 * (the runtime, the library and, for PyTorch, `import torch`), and the whole process's peak.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { ActivationScope, GradMode, ops, optim, Tensor, TensorCompute } from "../mod.ts";
import { library, native } from "../src/native/library.ts";
import { ffi } from "../src/native/runtime.ts";

const PEERS = fileURLToPath(new URL("./.peers/", import.meta.url));
const ROUNDS = Number(process.env.ZIGTENSOR_BENCH_ROUNDS ?? 3);
const THREADS = (process.env.ZIGTENSOR_BENCH_THREADS ?? "1,2").split(",").map(Number);
const ONLY = process.env.ZIGTENSOR_BENCH_ONLY?.split(",");
/** Seconds of timed calls each library gives a workload per round (at least 2 calls, at most 1000). */
const SECONDS_PER_ROUND = 0.4;
/**
 * Seconds of untimed calls before them (at least one call), so that steps of microseconds are timed in the
 * steady state a loop reaches (V8's optimizing tiers, the pool's blocks, the caches), on both sides.
 */
const WARMUP_SECONDS = 0.05;
/** The most timed calls per round. */
const MAX_CALLS = 1000;

/** One workload: a zigtensor step, the same step in PyTorch, and what its physical limit counts. */
interface Workload {
  readonly key: string;
  readonly name: string;
  /** Bytes the work must move at least (inputs read and outputs written once). */
  readonly bytes: number;
  /** Floating-point operations of the work (a multiply-add counts 2). */
  readonly flops: number;
  /** The work's arithmetic is f64 (exact mode's accumulation), so its peak is the f64 FMA peak. */
  readonly f64?: boolean;
  /** Makes the inputs and returns one step. */
  readonly make: () => () => void;
  /** Python statements that make the inputs and define `step()` with torch; absent: zigtensor only. */
  readonly torch?: string;
  /** A training step: its peak memory is measured too (one process per library and step). */
  readonly training?: boolean;
}

// --- zigtensor helpers ---

let seed = 1;

/** A normal-distributed F32 tensor times `scale`, a gradient leaf when `grad`. */
function randn(shape: number[], scale = 1, grad = false): Tensor {
  using raw = Tensor.randn(shape, { seed: seed++ });
  const t = GradMode.noGrad(() => {
    using scaled = ops.mul(raw, scale);
    return scaled.clone();
  });
  return grad ? t.withRequiresGrad() : t;
}

function ints(length: number, classes: number, from = 0): Tensor {
  const values = new Int32Array(length);
  for (let i = 0; i < length; i++) values[i] = from + (i * 7919 + 13) % (classes - from);
  return Tensor.from(values);
}

/**
 * SGD as a user writes it: the library's optimizer (one fused kernel per parameter) made once, its step, then
 * the gradients set to none for the next backward (PyTorch's side does the same with `torch.optim.SGD`).
 */
function sgd(parameters: readonly Tensor[], lr = 0.01): () => void {
  const optimizer = new optim.SGD(parameters, { lr });
  return () => {
    optimizer.step();
    optimizer.zeroGrad();
  };
}

/** The gradients set to none for the next backward, as PyTorch's `zero_grads` below. */
function zeroGrads(parameters: readonly Tensor[]): void {
  for (const p of parameters) p.grad = null;
}

/**
 * A step whose temporaries live in one scope. Rows whose inputs need no gradient use it alone, as their
 * PyTorch side runs without `no_grad`.
 */
function scoped(body: () => void): () => void {
  return () => {
    using _scope = new ActivationScope();
    body();
  };
}

/** Forward only, in `GradMode.noGrad` (the rows whose PyTorch side runs under `torch.no_grad()`). */
function inference(body: () => void): () => void {
  return scoped(() => GradMode.noGrad(body));
}

// --- PyTorch helpers (prepended to every Python run) ---

const TORCH_PRELUDE = `
import json, sys, time
import torch
import torch.nn.functional as F

def randn(*shape, scale=1.0, grad=False):
    t = torch.randn(*shape) * scale
    return t.requires_grad_() if grad else t

def ints(length, classes, start=0):
    return torch.tensor([start + (i * 7919 + 13) % (classes - start) for i in range(length)], dtype=torch.int64)

def sgd(parameters, lr=0.01):
    optimizer = torch.optim.SGD(parameters, lr=lr)
    def update():
        optimizer.step()
        optimizer.zero_grad()
    return update

def zero_grads(parameters):
    for p in parameters:
        p.grad = None
`;

// --- the workloads ---

const LSTM = { n: 32, t: 64, i: 128, h: 256 };

function rnnWorkload(kind: "lstm" | "gru", mode: "fwd" | "fwdbwd" | "step"): Workload {
  const { n, t, i, h } = LSTM;
  const gates = kind === "lstm" ? 4 : 3;
  // Forward: x_t·W_ihᵀ and h·W_hhᵀ per step. Backward (x needs no gradient, so no dx): dh = dG·W_hh per step
  // and the weight gradients dGᵀ·x and dGᵀ·h.
  const macs = n * t * gates * h * (mode === "fwd" ? i + h : 2 * i + 3 * h);
  const grad = mode !== "fwd";
  const names = { fwd: "forward", fwdbwd: "forward + backward", step: "training step (SGD)" };
  const module = kind === "lstm" ? "LSTM" : "GRU";
  const torchBody = [
    `m = torch.nn.${module}(${i}, ${h}, batch_first=True)`,
    `parameters = list(m.parameters())`,
    `update = sgd(parameters)`,
    `x = randn(${n}, ${t}, ${i})`,
    `def step():`,
    ...(mode === "fwd" ? [`    with torch.no_grad(): m(x)`] : [
      `    m(x)[0].mean().backward()`,
      mode === "step" ? `    update()` : `    zero_grads(parameters)`,
    ]),
  ];
  return {
    key: `${kind}-${mode}`,
    training: mode === "step",
    name: `${kind.toUpperCase()} seq ${t}, batch ${n}, in ${i}, hidden ${h}: ${names[mode]}`,
    bytes: 4 * (n * t * (i + h) + gates * h * (i + h)),
    flops: 2 * macs,
    make: () => {
      const x = randn([n, t, i]);
      const weights = {
        weightIh: randn([gates * h, i], 0.05, grad),
        weightHh: randn([gates * h, h], 0.05, grad),
        biasIh: randn([gates * h], 0.05, grad),
        biasHh: randn([gates * h], 0.05, grad),
      };
      const parameters = Object.values(weights);
      const run = () => kind === "lstm" ? ops.lstm(x, weights).output : ops.gru(x, weights).output;
      if (mode === "fwd") return inference(run);
      const update = mode === "step" ? sgd(parameters) : () => zeroGrads(parameters);
      return scoped(() => {
        ops.mean(run()).backward();
        update();
      });
    },
    torch: torchBody.join("\n"),
  };
}

function ctcWorkload(backward: boolean): Workload {
  const [t, n, c, s] = [100, 16, 32, 30];
  return {
    key: backward ? "ctc-fwdbwd" : "ctc-fwd",
    name: `logSoftmax + ctcLoss T${t} N${n} C${c}: ${backward ? "forward + backward" : "forward"}`,
    bytes: 4 * t * n * c * (backward ? 4 : 2),
    flops: 0,
    make: () => {
      const logits = randn([t, n, c], 1, backward);
      const targets = ops.reshape(ints(n * s, c, 1), [n, s]);
      const inputLengths = new Array(n).fill(t);
      const targetLengths = new Array(n).fill(s);
      const run = () => ops.ctcLoss(ops.logSoftmax(logits, -1), targets, inputLengths, targetLengths);
      if (!backward) return inference(run);
      return scoped(() => {
        run().backward();
        zeroGrads([logits]);
      });
    },
    torch: [
      `logits = randn(${t}, ${n}, ${c}, grad=${backward ? "True" : "False"})`,
      `targets = ints(${n * s}, ${c}, 1).reshape(${n}, ${s})`,
      `lengths, target_lengths = torch.full((${n},), ${t}), torch.full((${n},), ${s})`,
      `def step():`,
      backward
        ? `    F.ctc_loss(logits.log_softmax(-1), targets, lengths, target_lengths).backward()\n    zero_grads([logits])`
        : `    with torch.no_grad(): F.ctc_loss(logits.log_softmax(-1), targets, lengths, target_lengths)`,
    ].join("\n"),
  };
}

function attentionWorkload(mode: "fwd" | "fwdbwd" | "causal"): Workload {
  const [b, h, l, d] = [8, 8, 256, 64];
  const grad = mode === "fwdbwd";
  const causal = mode === "causal";
  const flops = 4 * b * h * l * l * d * (causal ? 0.5 : 1) * (grad ? 3 : 1);
  return {
    key: `attention-${mode}`,
    name: `attention B${b} H${h} L${l} D${d}: ${
      { fwd: "forward", fwdbwd: "forward + backward", causal: "causal forward" }[mode]
    }`,
    bytes: 4 * 4 * b * h * l * d,
    flops,
    make: () => {
      const [q, k, v] = [0, 1, 2].map(() => randn([b, h, l, d], 1, grad));
      const run = () => ops.attention(q, k, v, { causal });
      if (!grad) return inference(run);
      return scoped(() => {
        ops.sum(run()).backward();
        zeroGrads([q, k, v]);
      });
    },
    torch: [
      `q, k, v = (randn(${b}, ${h}, ${l}, ${d}, grad=${grad ? "True" : "False"}) for _ in range(3))`,
      `def step():`,
      grad
        ? `    F.scaled_dot_product_attention(q, k, v).sum().backward()\n    zero_grads([q, k, v])`
        : `    with torch.no_grad(): F.scaled_dot_product_attention(q, k, v, is_causal=${
          causal ? "True" : "False"
        })`,
    ].join("\n"),
  };
}

function convWorkload(backward: boolean): Workload {
  const [n, c, o, size] = [8, 64, 64, 56];
  return {
    key: backward ? "conv-fwdbwd" : "conv-fwd",
    name: `conv2d ${n}×${c}→${o} ${size}² 3×3: ${backward ? "forward + backward" : "forward"}`,
    bytes: 4 * (n * (c + o) * size * size + o * c * 9),
    flops: 2 * n * o * c * 9 * size * size * (backward ? 3 : 1),
    make: () => {
      const x = randn([n, c, size, size], 1, backward);
      const w = randn([o, c, 3, 3], 0.05, backward);
      const run = () => ops.conv2d(x, w, { padding: 1 });
      if (!backward) return inference(run);
      return scoped(() => {
        ops.sum(run()).backward();
        zeroGrads([x, w]);
      });
    },
    torch: [
      `x = randn(${n}, ${c}, ${size}, ${size}, grad=${backward ? "True" : "False"})`,
      `w = randn(${o}, ${c}, 3, 3, scale=0.05, grad=${backward ? "True" : "False"})`,
      `def step():`,
      backward
        ? `    F.conv2d(x, w, padding=1).sum().backward()\n    zero_grads([x, w])`
        : `    with torch.no_grad(): F.conv2d(x, w, padding=1)`,
    ].join("\n"),
  };
}

function crossEntropyWorkload(backward: boolean): Workload {
  const [n, c] = [256, 32000];
  return {
    key: backward ? "xent-fwdbwd" : "xent-fwd",
    name: `crossEntropy ${n}×${c}: ${backward ? "forward + backward" : "forward"}`,
    bytes: 4 * n * c * (backward ? 3 : 1),
    flops: 0,
    make: () => {
      const logits = randn([n, c], 1, backward);
      const targets = ints(n, c);
      const run = () => ops.crossEntropy(logits, targets);
      if (!backward) return inference(run);
      return scoped(() => {
        run().backward();
        zeroGrads([logits]);
      });
    },
    torch: [
      `logits = randn(${n}, ${c}, grad=${backward ? "True" : "False"})`,
      `targets = ints(${n}, ${c})`,
      `def step():`,
      backward
        ? `    F.cross_entropy(logits, targets).backward()\n    zero_grads([logits])`
        : `    with torch.no_grad(): F.cross_entropy(logits, targets)`,
    ].join("\n"),
  };
}

/**
 * An activation of the training steps over 2^20 elements (4 MiB, in cache on most machines): sigmoid (the LSTM
 * and GRU gates), tanh, and GELU in its tanh form (the transformer block's MLP).
 */
function activationWorkload(kind: "sigmoid" | "tanh" | "gelu"): Workload {
  const n = 1 << 20;
  return {
    key: `${kind}-1M`,
    name: `${kind === "gelu" ? "gelu (tanh form)" : kind} 2^20 f32`,
    bytes: 8 * n,
    flops: 0,
    make: () => {
      const x = randn([n], 4);
      return scoped(() => kind === "gelu" ? ops.gelu(x, { approximate: "tanh" }) : ops[kind](x));
    },
    torch: `x = randn(${n}, scale=4)\ndef step():\n    ${
      kind === "gelu" ? `F.gelu(x, approximate="tanh")` : `torch.${kind}(x)`
    }`,
  };
}

function softmaxWorkload(rows: number, cols: number): Workload {
  return {
    key: `softmax-${rows}x${cols}`,
    name: `softmax ${rows}×${cols}`,
    bytes: 8 * rows * cols,
    flops: 0,
    make: () => {
      const x = randn([rows, cols]);
      return scoped(() => ops.softmax(x, -1));
    },
    torch: `x = randn(${rows}, ${cols})\ndef step():\n    torch.softmax(x, -1)`,
  };
}

function streamingWorkload(kind: "add" | "sum", n: number, label: string): Workload {
  return {
    key: `${kind}-${label}`,
    name: `${kind} ${label} f32`,
    bytes: (kind === "add" ? 12 : 4) * n,
    flops: 0,
    make: () => {
      const a = randn([n]);
      const b = randn([n]);
      return scoped(() => kind === "add" ? ops.add(a, b) : ops.sum(a));
    },
    torch: `a, b = randn(${n}), randn(${n})\ndef step():\n    ${
      kind === "add" ? "torch.add(a, b)" : "a.sum()"
    }`,
  };
}

function gemmWorkload(mode: "fast" | "exact"): Workload {
  const size = 512;
  return {
    key: `gemm-${mode}`,
    name: `matmul ${size}³, ${mode} mode`,
    bytes: 12 * size * size,
    flops: 2 * size ** 3,
    f64: mode === "exact",
    make: () => {
      const a = randn([size, size]);
      const b = randn([size, size]);
      return scoped(() => {
        const previous = TensorCompute.mode;
        TensorCompute.mode = mode;
        try {
          ops.matmul(a, b);
        } finally {
          TensorCompute.mode = previous;
        }
      });
    },
    torch: mode === "fast"
      ? `a, b = randn(${size}, ${size}), randn(${size}, ${size})\ndef step():\n    a @ b`
      : undefined,
  };
}

const MLP_STEP: Workload = {
  key: "mlp-step",
  training: true,
  name: "MLP 784-512-512-10 training step, batch 128",
  bytes: 4 * (784 * 512 + 512 * 512 + 5120) * 3,
  flops: 2 * 128 * (784 * 512 + 512 * 512 + 512 * 10) * 3,
  make: () => {
    const x = randn([128, 784]);
    const labels = ints(128, 10);
    const p = [
      randn([512, 784], 0.03, true),
      randn([512], 0.03, true),
      randn([512, 512], 0.04, true),
      randn([512], 0.04, true),
      randn([10, 512], 0.04, true),
      randn([10], 0.04, true),
    ];
    const update = sgd(p);
    return scoped(() => {
      const h1 = ops.relu(ops.linear(x, p[0], p[1]));
      const h2 = ops.relu(ops.linear(h1, p[2], p[3]));
      ops.crossEntropy(ops.linear(h2, p[4], p[5]), labels).backward();
      update();
    });
  },
  torch: `
x, labels = randn(128, 784), ints(128, 10)
p = [randn(512, 784, scale=0.03, grad=True), randn(512, scale=0.03, grad=True),
     randn(512, 512, scale=0.04, grad=True), randn(512, scale=0.04, grad=True),
     randn(10, 512, scale=0.04, grad=True), randn(10, scale=0.04, grad=True)]
update = sgd(p)
def step():
    h1 = F.relu(F.linear(x, p[0], p[1]))
    h2 = F.relu(F.linear(h1, p[2], p[3]))
    F.cross_entropy(F.linear(h2, p[4], p[5]), labels).backward()
    update()`,
};

const CNN_STEP: Workload = {
  key: "cnn-step",
  training: true,
  name: "CNN training step (2×conv3×3+relu+maxpool, linear; 28², batch 64)",
  bytes: 4 * 64 * 784 * 3,
  flops: 2 * 64 * (16 * 9 * 784 + 32 * 16 * 9 * 196 + 1568 * 10) * 3,
  make: () => {
    const x = randn([64, 1, 28, 28]);
    const labels = ints(64, 10);
    const p = [
      randn([16, 1, 3, 3], 0.3, true),
      randn([16], 0.1, true),
      randn([32, 16, 3, 3], 0.08, true),
      randn([32], 0.1, true),
      randn([10, 1568], 0.02, true),
      randn([10], 0.02, true),
    ];
    const update = sgd(p);
    return scoped(() => {
      const h1 = ops.maxPool2d(ops.relu(ops.conv2d(x, p[0], { bias: p[1], padding: 1 })), { kernel: 2 });
      const h2 = ops.maxPool2d(ops.relu(ops.conv2d(h1, p[2], { bias: p[3], padding: 1 })), { kernel: 2 });
      ops.crossEntropy(ops.linear(ops.reshape(h2, [64, 1568]), p[4], p[5]), labels).backward();
      update();
    });
  },
  torch: `
x, labels = randn(64, 1, 28, 28), ints(64, 10)
p = [randn(16, 1, 3, 3, scale=0.3, grad=True), randn(16, scale=0.1, grad=True),
     randn(32, 16, 3, 3, scale=0.08, grad=True), randn(32, scale=0.1, grad=True),
     randn(10, 1568, scale=0.02, grad=True), randn(10, scale=0.02, grad=True)]
update = sgd(p)
def step():
    h1 = F.max_pool2d(F.relu(F.conv2d(x, p[0], p[1], padding=1)), 2)
    h2 = F.max_pool2d(F.relu(F.conv2d(h1, p[2], p[3], padding=1)), 2)
    F.cross_entropy(F.linear(h2.reshape(64, 1568), p[4], p[5]), labels).backward()
    update()`,
};

/** A pre-norm transformer block (4 heads, causal attention, GELU MLP of 4·D) over B 8, L 128, D 256. */
const TRANSFORMER_STEP: Workload = (() => {
  const [b, l, d, heads] = [8, 128, 256, 4];
  const dh = d / heads;
  return {
    key: "transformer-step",
    training: true,
    name: `transformer block training step (B${b} L${l} D${d}, ${heads} heads, causal)`,
    bytes: 4 * 12 * d * d * 3,
    flops: 2 * b * l * 12 * d * d * 3 + 2 * b * heads * l * l * dh * 3,
    make: () => {
      const x = randn([b, l, d]);
      const ones = () => GradMode.noGrad(() => Tensor.ones([d])).withRequiresGrad();
      const zeros = () => Tensor.zeros([d]).withRequiresGrad();
      const p = {
        ln1w: ones(),
        ln1b: zeros(),
        wq: randn([d, d], 0.06, true),
        wk: randn([d, d], 0.06, true),
        wv: randn([d, d], 0.06, true),
        wo: randn([d, d], 0.06, true),
        ln2w: ones(),
        ln2b: zeros(),
        w1: randn([4 * d, d], 0.06, true),
        b1: randn([4 * d], 0.01, true),
        w2: randn([d, 4 * d], 0.03, true),
        b2: randn([d], 0.01, true),
      };
      const parameters = Object.values(p);
      const update = sgd(parameters);
      const split = (t: Tensor) => ops.permute(ops.reshape(t, [b, l, heads, dh]), [0, 2, 1, 3]);
      return scoped(() => {
        const h = ops.layerNorm(x, d, { weight: p.ln1w, bias: p.ln1b });
        const o = ops.attention(
          split(ops.linear(h, p.wq)),
          split(ops.linear(h, p.wk)),
          split(ops.linear(h, p.wv)),
          {
            causal: true,
          },
        );
        const x1 = ops.add(x, ops.linear(ops.reshape(ops.permute(o, [0, 2, 1, 3]), [b, l, d]), p.wo));
        const h2 = ops.layerNorm(x1, d, { weight: p.ln2w, bias: p.ln2b });
        const y = ops.add(
          x1,
          ops.linear(ops.gelu(ops.linear(h2, p.w1, p.b1), { approximate: "tanh" }), p.w2, p.b2),
        );
        ops.mean(ops.mul(y, y)).backward();
        update();
      });
    },
    torch: `
b, l, d, heads = ${b}, ${l}, ${d}, ${heads}
x = randn(b, l, d)
ln1w, ln1b, ln2w, ln2b = (torch.ones(d).requires_grad_(), torch.zeros(d).requires_grad_(),
                          torch.ones(d).requires_grad_(), torch.zeros(d).requires_grad_())
wq, wk, wv, wo = (randn(d, d, scale=0.06, grad=True) for _ in range(4))
w1, b1 = randn(4 * d, d, scale=0.06, grad=True), randn(4 * d, scale=0.01, grad=True)
w2, b2 = randn(d, 4 * d, scale=0.03, grad=True), randn(d, scale=0.01, grad=True)
parameters = [ln1w, ln1b, wq, wk, wv, wo, ln2w, ln2b, w1, b1, w2, b2]
update = sgd(parameters)
def split(t):
    return t.reshape(b, l, heads, d // heads).permute(0, 2, 1, 3)
def step():
    h = F.layer_norm(x, (d,), ln1w, ln1b)
    o = F.scaled_dot_product_attention(split(F.linear(h, wq)), split(F.linear(h, wk)), split(F.linear(h, wv)),
                                       is_causal=True)
    x1 = x + F.linear(o.permute(0, 2, 1, 3).reshape(b, l, d), wo)
    h2 = F.layer_norm(x1, (d,), ln2w, ln2b)
    y = x1 + F.linear(F.gelu(F.linear(h2, w1, b1), approximate="tanh"), w2, b2)
    (y * y).mean().backward()
    update()`,
  };
})();

const ALL_WORKLOADS: readonly Workload[] = [
  rnnWorkload("lstm", "fwd"),
  rnnWorkload("lstm", "fwdbwd"),
  rnnWorkload("gru", "fwd"),
  rnnWorkload("gru", "fwdbwd"),
  ctcWorkload(false),
  ctcWorkload(true),
  {
    key: "layernorm",
    name: "layerNorm 4096×1024",
    bytes: 8 * 4096 * 1024,
    flops: 0,
    make: () => {
      const x = randn([4096, 1024]);
      const w = randn([1024]);
      const bias = randn([1024]);
      return scoped(() => ops.layerNorm(x, 1024, { weight: w, bias }));
    },
    torch:
      `x, w, bias = randn(4096, 1024), randn(1024), randn(1024)\ndef step():\n    F.layer_norm(x, (1024,), w, bias)`,
  },
  softmaxWorkload(1024, 1024),
  softmaxWorkload(16, 50257),
  activationWorkload("sigmoid"),
  activationWorkload("tanh"),
  activationWorkload("gelu"),
  attentionWorkload("fwd"),
  attentionWorkload("fwdbwd"),
  attentionWorkload("causal"),
  convWorkload(false),
  convWorkload(true),
  {
    key: "matmul-m1",
    name: "matmul 1×4096 · 4096×4096 (batch-1 decoding)",
    bytes: 4 * 4096 * 4096,
    flops: 2 * 4096 * 4096,
    make: () => {
      const x = randn([1, 4096]);
      const w = randn([4096, 4096]);
      return scoped(() => ops.matmul(x, w));
    },
    torch: `x, w = randn(1, 4096), randn(4096, 4096)\ndef step():\n    x @ w`,
  },
  crossEntropyWorkload(false),
  crossEntropyWorkload(true),
  {
    key: "embedding",
    name: "embedding 32000×512, 4096 ids, forward",
    bytes: 8 * 4096 * 512,
    flops: 0,
    make: () => {
      const w = randn([32000, 512]);
      const ids = ints(4096, 32000);
      return scoped(() => ops.embedding(ids, w));
    },
    torch: `w, ids = randn(32000, 512), ints(4096, 32000)\ndef step():\n    F.embedding(ids, w)`,
  },
  gemmWorkload("fast"),
  gemmWorkload("exact"),
  streamingWorkload("add", 1e5, "1e5"),
  streamingWorkload("add", 1e6, "1e6"),
  streamingWorkload("add", 1 << 24, "16M"),
  streamingWorkload("sum", 1 << 24, "16M"),
  MLP_STEP,
  CNN_STEP,
  rnnWorkload("lstm", "step"),
  rnnWorkload("gru", "step"),
  TRANSFORMER_STEP,
];
const WORKLOADS = ALL_WORKLOADS.filter((w) => ONLY === undefined || ONLY.includes(w.key));

// --- timing ---

/** Per-call seconds by `${threads}/${library}/${key}`, over every round. */
const times = new Map<string, number[]>();
const notes: string[] = [];

function add(key: string, values: readonly number[]): void {
  const list = times.get(key) ?? [];
  list.push(...values);
  times.set(key, list);
}

/**
 * Calls `step` untimed for `WARMUP_SECONDS`, then for about `SECONDS_PER_ROUND`, returning each timed call's
 * seconds.
 */
function timeCalls(step: () => void): number[] {
  let warmups = 0;
  const warmupStart = performance.now();
  do {
    step();
    warmups++;
  } while (performance.now() - warmupStart < WARMUP_SECONDS * 1000);
  const each = (performance.now() - warmupStart) / 1000 / warmups;
  const calls = Math.max(2, Math.min(MAX_CALLS, Math.round(SECONDS_PER_ROUND / Math.max(each, 1e-7))));
  const result: number[] = [];
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    step();
    result.push((performance.now() - start) / 1000);
  }
  return result;
}

/** The Python that runs the given workloads' torch steps on `threads` threads and prints their times. */
function torchScript(workloads: readonly Workload[], threads: number): string {
  const makers = workloads.map((w, i) =>
    `def make_${i}():\n${
      w.torch!.trim().split("\n").map((line) => `    ${line}`).join("\n")
    }\n    return step\n`
  );
  return `${TORCH_PRELUDE}
torch.set_num_threads(${threads})
torch.manual_seed(0)
${makers.join("\n")}
def time_calls(step):
    warmups = 0; warmup_start = time.perf_counter()
    while True:
        step(); warmups += 1
        if time.perf_counter() - warmup_start >= ${WARMUP_SECONDS}: break
    each = (time.perf_counter() - warmup_start) / warmups
    calls = max(2, min(${MAX_CALLS}, round(${SECONDS_PER_ROUND} / max(each, 1e-7))))
    result = []
    for _ in range(calls):
        start = time.perf_counter(); step(); result.append(time.perf_counter() - start)
    return result
result = {}
${workloads.map((w, i) => `result[${JSON.stringify(w.key)}] = time_calls(make_${i}())`).join("\n")}
print(json.dumps({"version": torch.__version__, "times": result}))
`;
}

/** How to start a Python with torch: `ZIGTENSOR_TORCH_PYTHON`, else python3 over bench/.peers/torch. */
function torchCommand(): { command: string; env: Record<string, string> } {
  const override = process.env.ZIGTENSOR_TORCH_PYTHON;
  if (override !== undefined && override !== "") return { command: override, env: {} };
  const path = [`${PEERS}torch`, process.env.PYTHONPATH].filter((p) => p).join(":");
  return { command: "python3", env: { PYTHONPATH: path } };
}

/** Runs the torch steps once; returns the torch version, or null (with a note) when torch cannot run. */
function runTorch(workloads: readonly Workload[], threads: number): string | null {
  const peers = workloads.filter((w) => w.torch !== undefined);
  const { command, env } = torchCommand();
  const result = spawnSync(command, ["-c", torchScript(peers, threads)], {
    encoding: "utf8",
    timeout: 1_800_000,
    env: { ...process.env, ...env, OMP_NUM_THREADS: String(threads), MKL_NUM_THREADS: String(threads) },
    maxBuffer: 1 << 26,
  });
  if (result.status !== 0) {
    const reason = (result.stderr ?? String(result.error)).trim().split("\n").at(-1);
    notes.push(
      `PyTorch skipped (${reason}); install it with \`bash bench/peers.sh\` or set ZIGTENSOR_TORCH_PYTHON`,
    );
    return null;
  }
  const report = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as {
    version: string;
    times: Record<string, number[]>;
  };
  for (const [key, values] of Object.entries(report.times)) add(`${threads}/torch/${key}`, values);
  return report.version;
}

// --- peak memory of the training steps ---

/** Calls of a step whose peak memory is taken (the first builds the optimizer's state and warms the pool). */
const MEMORY_CALLS = 5;

/** Bytes of peak (VmHWM) and current (VmRSS) resident memory, read from /proc/self/status. */
const RESIDENT_MEMORY_PY = `
def resident_memory():
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    return {name: int(fields[field].split()[0]) * 1024 for name, field in (("peak", "VmHWM"), ("now", "VmRSS"))}
`;

function residentMemory(): { peak: number; now: number } {
  const status = readFileSync("/proc/self/status", "utf8");
  const bytes = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)![1]) * 1024;
  return { peak: bytes("VmHWM"), now: bytes("VmRSS") };
}

/** What a memory child prints: the resident set before the step's tensors were made, and the peak after. */
interface PeakReport {
  readonly before: number;
  readonly peak: number;
}

/** The child's side (`ZIGTENSOR_BENCH_PEAK_OF=key`): one step, one thread, `MEMORY_CALLS` calls. */
function reportPeak(key: string): void {
  const workload = ALL_WORKLOADS.find((w) => w.key === key);
  if (workload === undefined) throw new Error(`no workload ${key}`);
  TensorCompute.threads = 1;
  const before = residentMemory().now;
  const step = workload.make();
  for (let i = 0; i < MEMORY_CALLS; i++) step();
  console.log(JSON.stringify({ before, peak: residentMemory().peak }));
}

/** Runs a child that prints a `PeakReport` as its last line; null when it fails. */
function peakOf(command: string, args: string[], env: Record<string, string>): PeakReport | null {
  const result = spawnSync(command, args, {
    encoding: "utf8",
    timeout: 600_000,
    env: { ...process.env, ...env, OMP_NUM_THREADS: "1", MKL_NUM_THREADS: "1" },
    maxBuffer: 1 << 24,
  });
  if (result.status !== 0) return null;
  return JSON.parse(result.stdout.trim().split("\n").at(-1)!) as PeakReport;
}

/** Both libraries' peaks for every training step in the run, zigtensor first, then PyTorch. */
function measurePeaks(torch: boolean): Map<string, { zt: PeakReport | null; torch: PeakReport | null }> {
  const script = fileURLToPath(import.meta.url);
  const runtimeArgs = ffi.runtime === "deno" ? ["run", "-A", script] : [script];
  const peaks = new Map<string, { zt: PeakReport | null; torch: PeakReport | null }>();
  const { command, env } = torchCommand();
  for (const w of WORKLOADS.filter((w) => w.training)) {
    const zt = peakOf(process.execPath, runtimeArgs, { ZIGTENSOR_BENCH_PEAK_OF: w.key });
    const python = `${TORCH_PRELUDE}${RESIDENT_MEMORY_PY}
torch.set_num_threads(1)
torch.manual_seed(0)
before = resident_memory()["now"]
${w.torch!.trim()}
for _ in range(${MEMORY_CALLS}):
    step()
print(json.dumps({"before": before, "peak": resident_memory()["peak"]}))
`;
    peaks.set(w.key, { zt, torch: torch ? peakOf(command, ["-c", python], env) : null });
  }
  return peaks;
}

// --- the machine's limits ---

interface Limits {
  /** f32 flops per second of one core. */
  readonly peak: number;
  /** f64 flops per second of one core. */
  readonly peakF64: number;
  /** Bytes per second of an add (two loads, one store) by thread count. */
  readonly bandwidth: Map<number, number>;
}

/** The limits, measured again each round: the best figure of any round counts (load only lowers them). */
function measureLimits(previous?: Limits): Limits {
  const fmaPeak = (loop: (iterations: number) => number, best: number) => {
    const iterations = 2_000_000;
    const flopsPerCall = loop(1000) / 1000 * iterations;
    for (let i = 0; i < 10; i++) {
      const start = performance.now();
      loop(iterations);
      best = Math.max(best, flopsPerCall / ((performance.now() - start) / 1000));
    }
    return best;
  };
  const peak = fmaPeak(native.zt_bench_fma_f32, previous?.peak ?? 0);
  const peakF64 = fmaPeak(native.zt_bench_fma_f64, previous?.peakF64 ?? 0);
  const n = 1 << 24;
  const blocks = [0, 1, 2].map(() => native.zt_pool_rent(4 * n, 1));
  if (blocks.some((b) => b === null)) throw new Error("out of native memory for the bandwidth loop");
  const bandwidth = new Map<number, number>();
  for (const threads of THREADS) {
    let best = previous?.bandwidth.get(threads) ?? 0;
    for (let i = 0; i < 8; i++) {
      const start = performance.now();
      native.zt_bench_stream_add_f32(blocks[2]!, blocks[0]!, blocks[1]!, n, threads, 0);
      best = Math.max(best, 12 * n / ((performance.now() - start) / 1000));
    }
    bandwidth.set(threads, best);
  }
  for (const b of blocks) native.zt_pool_release(b!, 4 * n);
  return { peak, peakF64, bandwidth };
}

// --- the report ---

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function ms(seconds: number): string {
  return seconds >= 0.1
    ? (seconds * 1e3).toFixed(0)
    : seconds >= 0.001
    ? (seconds * 1e3).toFixed(2)
    : (seconds * 1e3).toFixed(3);
}

/** "median (fastest–slowest)" in ms, or a dash. */
function spread(key: string): string {
  const values = times.get(key);
  if (values === undefined || values.length === 0) return "—";
  return `${ms(median(values))} (${ms(Math.min(...values))}–${ms(Math.max(...values))})`;
}

function medianOf(key: string): number | undefined {
  const values = times.get(key);
  return values === undefined || values.length === 0 ? undefined : median(values);
}

function limitSeconds(w: Workload, threads: number, limits: Limits): number {
  const bandwidth = limits.bandwidth.get(threads) ?? limits.bandwidth.get(1)!;
  return Math.max(w.bytes / bandwidth, w.flops / ((w.f64 ? limits.peakF64 : limits.peak) * threads));
}

function loadAverage(): string {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}

function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(0);
}

function report(
  limits: Limits,
  torchVersion: string | null,
  loadBefore: string,
  peaks: Map<string, { zt: PeakReport | null; torch: PeakReport | null }>,
): void {
  const runtime = ffi.runtime === "deno"
    ? `Deno ${(globalThis as { Deno?: { version: { deno: string } } }).Deno?.version.deno}`
    : `Bun ${(globalThis as { Bun?: { version: string } }).Bun?.version}`;
  const lines = [
    "",
    `## Workloads beside PyTorch ${torchVersion ?? "(not run)"}, ${
      new Date().toISOString().slice(0, 10)
    }, ${runtime}, variant ${library.isa}, ${ROUNDS} interleaved rounds`,
    "",
    "Times in ms: median (fastest–slowest call). Ratio: PyTorch's median ÷ zigtensor's (> 1: zigtensor is",
    "faster). Limit: the work's bytes at the measured add bandwidth (of memory, so work that fits in cache can",
    "beat it) or its flops at the FMA peak (f32; f64 for exact mode's GEMM), the slower.",
    "",
    "| work | threads | zigtensor | PyTorch | ratio | limit | zigtensor % of limit |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const threads of THREADS) {
    for (const w of WORKLOADS) {
      const zt = medianOf(`${threads}/zt/${w.key}`);
      const pt = medianOf(`${threads}/torch/${w.key}`);
      const limit = limitSeconds(w, threads, limits);
      const ratio = zt !== undefined && pt !== undefined ? `${(pt / zt).toFixed(2)}×` : "—";
      const ofLimit = zt !== undefined ? `${(100 * limit / zt).toFixed(1)} %` : "—";
      lines.push(
        `| ${w.name} | ${threads} | ${spread(`${threads}/zt/${w.key}`)} | ${
          spread(`${threads}/torch/${w.key}`)
        } | ${ratio} | ${ms(limit)} | ${ofLimit} |`,
      );
    }
  }
  const fast = medianOf("1/zt/gemm-fast");
  const exact = medianOf("1/zt/gemm-exact");
  if (fast !== undefined && exact !== undefined) {
    lines.push(
      "",
      `Exact ÷ fast mode, matmul 512³ on 1 thread: ${
        (fast / exact).toFixed(2)
      } of fast mode's speed; the f64 ` +
        `FMA peak, the ceiling of exact mode's f64 accumulation, is ${
          (limits.peakF64 / limits.peak).toFixed(2)
        } ` +
        `of the f32 peak.`,
    );
  }
  if (THREADS.includes(1) && THREADS.includes(2)) {
    lines.push("", "| 1 → 2 threads (speedup) | zigtensor | PyTorch |", "|---|---|---|");
    for (const w of WORKLOADS) {
      const speedup = (library: string) => {
        const one = medianOf(`1/${library}/${w.key}`);
        const two = medianOf(`2/${library}/${w.key}`);
        return one !== undefined && two !== undefined ? `${(one / two).toFixed(2)}×` : "—";
      };
      lines.push(`| ${w.name} | ${speedup("zt")} | ${speedup("torch")} |`);
    }
  }
  if (peaks.size > 0) {
    lines.push(
      "",
      `Peak memory of the training steps (1 thread, ${MEMORY_CALLS} calls, each in a process of its own), MiB: ` +
        "the peak resident set above what the process held before the step's tensors were made (the ratio: " +
        "zigtensor's ÷ PyTorch's, < 1: zigtensor needs less), and the whole process's peak.",
      "",
      "| training step | zigtensor | PyTorch | ratio | whole process: zigtensor | PyTorch |",
      "|---|---|---|---|---|---|",
    );
    for (const w of WORKLOADS) {
      const peak = peaks.get(w.key);
      if (peak === undefined) continue;
      const above = (r: PeakReport | null) => r === null ? "—" : mib(r.peak - r.before);
      const ratio = peak.zt !== null && peak.torch !== null
        ? `${((peak.zt.peak - peak.zt.before) / (peak.torch.peak - peak.torch.before)).toFixed(2)}`
        : "—";
      lines.push(
        `| ${w.name} | ${above(peak.zt)} | ${above(peak.torch)} | ${ratio} | ${
          peak.zt === null ? "—" : mib(peak.zt.peak)
        } | ${peak.torch === null ? "—" : mib(peak.torch.peak)} |`,
      );
    }
  }
  lines.push(
    "",
    `Machine: FMA peak ${(limits.peak / 1e9).toFixed(1)} GFLOP/s per core in f32, ${
      (limits.peakF64 / 1e9).toFixed(1)
    } in f64; add bandwidth ${
      [...limits.bandwidth].map(([t, b]) => `${(b / 1e9).toFixed(1)} GB/s on ${t} thread(s)`).join(", ")
    }. Load average before the run: ${loadBefore}; after: ${loadAverage()}.`,
    ...notes.map((note) => `Note: ${note}.`),
  );
  console.log(lines.join("\n"));
}

// --- main ---

const peakChild = process.env.ZIGTENSOR_BENCH_PEAK_OF;
if (peakChild !== undefined) {
  reportPeak(peakChild);
  process.exit(0);
}
const loadBefore = loadAverage();
let limits = measureLimits();
const steps = WORKLOADS.map((w) => w.make());
let torchVersion: string | null = null;
let torchAvailable = true;
const previousThreads = TensorCompute.threads;
for (const threads of THREADS) {
  for (let round = 0; round < ROUNDS; round++) {
    TensorCompute.threads = threads;
    WORKLOADS.forEach((w, i) => add(`${threads}/zt/${w.key}`, timeCalls(steps[i])));
    TensorCompute.threads = previousThreads;
    limits = measureLimits(limits);
    if (torchAvailable) {
      torchVersion = runTorch(WORKLOADS, threads) ?? torchVersion;
      torchAvailable = torchVersion !== null;
    }
  }
}
const peaks = process.platform === "linux" ? measurePeaks(torchAvailable) : new Map();
report(limits, torchVersion, loadBefore, peaks);

interface DenoBench {
  bench(definition: { name: string; group: string; fn: () => void }): void;
}
const deno = (globalThis as { Deno?: DenoBench }).Deno;
if (deno !== undefined && typeof (deno as Partial<DenoBench>).bench === "function") {
  // Deno's own figures for the zigtensor steps, on the default thread count.
  WORKLOADS.forEach((w, i) => deno.bench({ name: w.name, group: "workloads (zigtensor)", fn: steps[i] }));
}

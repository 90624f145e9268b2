// The examples that finish in seconds run as tests, in a child of the current runtime: loading the model
// PyTorch trained (examples/load_pytorch.ts exits non-zero when an output differs beyond f32 rounding).
import { test } from "node:test";
import assert from "node:assert/strict";
import { runChild } from "./helpers/subprocess.ts";

test("examples/load_pytorch.ts agrees with PyTorch on every prediction", () => {
  const result = runChild(new URL("../examples/load_pytorch.ts", import.meta.url), {});
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /32\/32 predictions agree with PyTorch/);
});

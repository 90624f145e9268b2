// The layers of src/ import downwards only: core (pure rules, no FFI) < native (the binding) < memory
// (storage, pools, scopes) < kernels (the seam). Importing a core module opens no library and rents no memory.
// The tensor ↔ ops ↔ autograd loop that method calls need sits above these layers and is not checked here.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import process from "node:process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { dirname, join, relative, resolve } from "node:path";

const root = fileURLToPath(new URL("../", import.meta.url));
const LAYERS = ["core", "native", "memory", "kernels"] as const;

/** The layer of a file under src/, or null above the layered ones. */
function layerOf(path: string): number | null {
  const top = relative(join(root, "src"), path).split(/[\\/]/)[0];
  const i = (LAYERS as readonly string[]).indexOf(top);
  return i < 0 ? null : i;
}

/** The relative `.ts` files each module imports (static and dynamic specifiers, doc examples excluded). */
function imports(path: string): string[] {
  const code = readFileSync(path, "utf8").split("\n").filter((line) => !line.trimStart().startsWith("*"))
    .join("\n");
  const specifiers = [...code.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+\.ts)"/g)].map((m) => m[1]);
  return specifiers.map((s) => resolve(dirname(path), s));
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []
  );
}

test("src/core, src/native, src/memory and src/kernels import only their own layer and the ones below", () => {
  const violations: string[] = [];
  let checked = 0;
  for (const file of sources(join(root, "src"))) {
    const layer = layerOf(file);
    if (layer === null) continue;
    for (const target of imports(file)) {
      checked++;
      const to = layerOf(target);
      if (to === null || to > layer) violations.push(`${relative(root, file)} → ${relative(root, target)}`);
    }
  }
  assert.ok(checked > 30, `only ${checked} imports seen`);
  assert.deepEqual(violations, []);
});

test(
  "deno info mod.ts shows no import of src/native/ from src/core/",
  { skip: !("Deno" in globalThis) },
  () => {
    const info = spawnSync(process.execPath, ["info", "--json", join(root, "mod.ts")], { encoding: "utf8" });
    assert.equal(info.status, 0, info.stderr);
    const graph = JSON.parse(info.stdout) as {
      modules: { specifier: string; dependencies?: { code?: { specifier: string } }[] }[];
    };
    const core = graph.modules.filter((m) => m.specifier.includes("/src/core/"));
    assert.ok(core.length >= 8, `${core.length} core modules in the graph`);
    for (const m of core) {
      for (const d of m.dependencies ?? []) {
        const to = d.code?.specifier ?? "";
        assert.ok(
          !to.includes("/src/native/") && !to.includes("/src/memory/"),
          `${m.specifier} imports ${to}`,
        );
      }
    }
  },
);

test("the public API keeps internals out: gradFn is read-only, fillStrided and attachRecord are not exported", async () => {
  const api = await import("../mod.ts");
  using x = api.Tensor.from([1, 2]).withRequiresGrad();
  using y = api.ops.mul(x, 2);
  assert.equal(y.gradFn!.op, "Mul");
  assert.throws(() => {
    (y as { gradFn: unknown }).gradFn = null;
  }, TypeError);
  assert.equal(y.gradFn!.op, "Mul");
  assert.equal("fillStrided" in api.ops, false);
  assert.equal("attachRecord" in api, false);
});

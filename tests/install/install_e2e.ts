// End-to-end install tests: what a user does, with the real tools, against the packages in dist/ (built by
// `bash scripts/dev.sh dist`). Run by `bash scripts/dev.sh test` under `deno test -A`; not a *.test.ts file, so
// the unit suites leave it alone.
//
// - npm: a local verdaccio registry (public registry as uplink) receives `npm publish` of every dist/npm
//   package; a fresh Bun project runs `bun add zigtensor`, a fresh Deno project imports `npm:zigtensor`, a fresh
//   npm project type-checks a consumer with tsc under strict settings and skipLibCheck false;
// - JSR: dist/jsr served over HTTP and imported by URL in Deno with only the documented permissions, then again
//   with the server stopped (from the cache);
// - tampering: one flipped library byte gives the checksum error.
//
// Every child runs with no Zig on PATH and a fresh HOME (so fresh npm, Bun, Deno and zigtensor caches).
// Registry and server are stopped in `after`, whatever happens.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { currentPlatform, libraryFileName, sha256 } from "../../src/native/locate.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const bin = join(root, "node_modules", ".bin");
const deno = join(bin, "deno");
const bun = join(bin, "bun");
const tsc = join(bin, "tsc");
const dist = join(root, "dist");
const version: string = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
const platform = currentPlatform();
const libraryFile = libraryFileName(process.platform);

const work = mkdtempSync(join(tmpdir(), "zigtensor-install-"));
const home = join(work, "home");
mkdirSync(home);

/** PATH without any folder that holds a `zig` executable. */
const pathWithoutZig = (process.env.PATH ?? "").split(delimiter)
  .filter((dir) => dir !== "" && !existsSync(join(dir, "zig")) && !existsSync(join(dir, "zig.exe")))
  .join(delimiter);

/** The environment of every child: no Zig, a fresh HOME, none of npm's or zigtensor's variables. */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || /^(npm_|NPM_|BUN_|DENO_|ZIGTENSOR_|XDG_)/.test(key)) continue;
    env[key] = value;
  }
  return { ...env, PATH: pathWithoutZig, HOME: home, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1", ...extra };
}

interface Result {
  status: number | null;
  stdout: string;
  stderr: string;
  seconds: number;
}

function run(command: string, args: string[], cwd: string, extra: Record<string, string> = {}): Result {
  const start = performance.now();
  const result = spawnSync(command, args, { cwd, env: childEnv(extra), encoding: "utf8", timeout: 180_000 });
  return {
    status: result.status,
    stdout: result.stdout ?? "",
    stderr: (result.stderr ?? "") + (result.error ? String(result.error) : ""),
    seconds: (performance.now() - start) / 1000,
  };
}

function succeed(command: string, args: string[], cwd: string, extra: Record<string, string> = {}): Result {
  const result = run(command, args, cwd, extra);
  assert.equal(result.status, 0, `${command} ${args.join(" ")} failed:\n${result.stdout}\n${result.stderr}`);
  return result;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

const children: ChildProcess[] = [];

/** Starts a long-running child and waits until `ready()` holds (or its output says so). */
async function startService(
  command: string,
  args: string[],
  ready: () => Promise<boolean>,
): Promise<ChildProcess> {
  const child = spawn(command, args, { cwd: work, env: childEnv(), stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let output = "";
  child.stdout?.on("data", (chunk) => output += chunk);
  child.stderr?.on("data", (chunk) => output += chunk);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${command} exited with ${child.exitCode}:\n${output}`);
    if (await ready().catch(() => false)) return child;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${command} did not start within 60 s:\n${output}`);
}

async function stopService(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

/** The smoke program: tensors, matmul, softmax and one backward, values checked. Type-checks strictly. */
function smoke(specifier: string): string {
  return `import { kernelInfo, ops, Tensor } from "${specifier}";

const a = Tensor.from([1, 2, 3, 4, 5, 6], [2, 3]);
const b = Tensor.from([1, 0, 0, 1, 1, 1], [3, 2]);
const product = Array.from(ops.matmul(a, b).toArray(), Number);
const probabilities = Array.from(ops.softmax(Tensor.from([0, Math.log(3)], [2])).toArray(), Number);
const w = Tensor.from([1, 2, 3], [3]).withRequiresGrad();
ops.sum(w.mul(w)).backward();
const gradient = Array.from(w.grad?.toArray() ?? [], Number);
const close = (x: number[], y: number[]) =>
  x.length === y.length && x.every((value, index) => Math.abs(value - (y[index] ?? NaN)) < 1e-6);
if (!close(product, [4, 5, 10, 11]) || !close(probabilities, [0.25, 0.75]) || !close(gradient, [2, 4, 6])) {
  throw new Error("wrong values: " + JSON.stringify({ product, probabilities, gradient }));
}
const info = kernelInfo();
console.log("smoke ok " + JSON.stringify({ runtime: info.runtime, isa: info.isa, library: info.path }));
`;
}

function project(name: string, files: Record<string, string>): string {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

function smokeOk(result: Result): Record<string, string> {
  const line = result.stdout.split("\n").find((text) => text.startsWith("smoke ok "));
  assert.ok(line, `no smoke line:\n${result.stdout}\n${result.stderr}`);
  return JSON.parse(line.slice("smoke ok ".length));
}

let registry = "";
let npmrc = "";

before(async () => {
  assert.ok(
    existsSync(join(dist, "npm")) && existsSync(join(dist, "jsr")),
    "dist/ is built by scripts/dev.sh dist",
  );
  const port = await freePort();
  registry = `http://127.0.0.1:${port}/`;
  const uplink = spawnSync("npm", ["config", "get", "registry"], { encoding: "utf8" }).stdout.trim() ||
    "https://registry.npmjs.org/";
  const config = join(work, "verdaccio.yaml");
  writeFileSync(
    config,
    [
      `storage: ${join(work, "storage")}`,
      "auth:",
      "  htpasswd:",
      `    file: ${join(work, "htpasswd")}`,
      "uplinks:",
      "  upstream:",
      `    url: ${uplink}`,
      "packages:",
      "  'zigtensor':",
      "    access: $all",
      "    publish: $authenticated",
      "  '@zigtensor/*':",
      "    access: $all",
      "    publish: $authenticated",
      "  '**':",
      "    access: $all",
      "    proxy: upstream",
      "web:",
      "  enable: false",
      "log: { type: stdout, format: pretty, level: warn }",
      "",
    ].join("\n"),
  );
  await startService(
    "node",
    [
      join(root, "node_modules", "verdaccio", "bin", "verdaccio"),
      "--config",
      config,
      "--listen",
      `127.0.0.1:${port}`,
    ],
    async () => (await fetch(`${registry}-/ping`)).ok,
  );
  const user = await fetch(`${registry}-/user/org.couchdb.user:zigtensor-ci`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "zigtensor-ci", password: "local-test-only-password" }),
  });
  const { token } = await user.json() as { token?: string };
  assert.ok(token, `verdaccio gave no token (HTTP ${user.status})`);
  npmrc = join(work, "npmrc");
  writeFileSync(npmrc, `registry=${registry}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
});

after(async () => {
  for (const child of children) await stopService(child);
  rmSync(work, { recursive: true, force: true });
});

const npmEnv = () => ({ npm_config_userconfig: npmrc, npm_config_cache: join(work, "npm-cache") });

test("no Zig on PATH for the install tests", () => {
  const which = run("sh", ["-c", "command -v zig || echo none"], work);
  assert.equal(which.stdout.trim(), "none");
});

test("npm publish of every dist/npm package to the local registry; no lifecycle scripts", () => {
  const tarballs = readdirSync(join(dist, "npm")).filter((file) => file.endsWith(".tgz")).sort();
  assert.equal(tarballs.length, 8, `dist/npm holds ${tarballs.join(", ")}`);
  for (const tarball of tarballs) {
    succeed("npm", ["publish", join(dist, "npm", tarball), "--access", "public"], work, npmEnv());
  }
  const view = JSON.parse(succeed("npm", ["view", `zigtensor@${version}`, "--json"], work, npmEnv()).stdout);
  assert.equal(view.version, version);
  assert.equal(view.scripts, undefined);
  assert.deepEqual(Object.values(view.optionalDependencies), Array(7).fill(version));
  assert.ok(view.optionalDependencies[`@zigtensor/${platform}`]);
  const native = JSON.parse(
    succeed("npm", ["view", `@zigtensor/${platform}@${version}`, "--json"], work, npmEnv()).stdout,
  );
  assert.deepEqual(native.os, [process.platform]);
  assert.deepEqual(native.cpu, [process.arch]);
  assert.equal(native.scripts, undefined);
});

test("bun add zigtensor in a fresh project, then the smoke program", () => {
  const dir = project("bun-app", {
    "package.json": JSON.stringify({ name: "bun-app", private: true, type: "module" }),
    "smoke.ts": smoke("zigtensor"),
  });
  const env = { BUN_CONFIG_REGISTRY: registry, BUN_INSTALL_CACHE_DIR: join(work, "bun-cache") };
  const install = succeed(bun, ["add", "zigtensor"], dir, env);
  const installed = readdirSync(join(dir, "node_modules", "@zigtensor"));
  assert.ok(installed.includes(platform), `bun installed ${installed.join(", ")}`);
  const first = succeed(bun, ["smoke.ts"], dir, env);
  const info = smokeOk(first);
  assert.equal(info.runtime, "bun");
  assert.match(info.library, new RegExp(`@zigtensor[/\\\\]${platform}[/\\\\]${libraryFile}$`));
  console.log(
    `bun add zigtensor: ${install.seconds.toFixed(1)} s; first op (bun smoke.ts): ${
      first.seconds.toFixed(1)
    } s`,
  );
});

test("a fresh Deno project imports npm:zigtensor", () => {
  const dir = project("deno-npm-app", { "smoke.ts": smoke(`npm:zigtensor@${version}`) });
  // Deno waits 24 hours before it installs a newly published version; this one was published a moment ago.
  const args = [
    "run",
    "--minimum-dependency-age=0",
    "--allow-ffi",
    "--allow-read",
    "--allow-env",
    "smoke.ts",
  ];
  const result = succeed(deno, args, dir, {
    NPM_CONFIG_REGISTRY: registry,
    DENO_DIR: join(work, "deno-npm"),
  });
  const info = smokeOk(result);
  assert.equal(info.runtime, "deno");
  assert.match(info.library, new RegExp(`${platform}[/\\\\]${version}[/\\\\]${libraryFile}$`));
  console.log(`deno run npm:zigtensor (install and first op): ${result.seconds.toFixed(1)} s`);
});

test("a fresh npm project type-checks a consumer with strict settings and skipLibCheck false", () => {
  const dir = project("tsc-app", {
    "package.json": JSON.stringify({ name: "tsc-app", private: true, type: "module" }),
    "tsconfig.json": JSON.stringify({
      compilerOptions: {
        target: "ESNext",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        lib: ["ESNext", "DOM"],
        types: [],
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: false,
        noEmit: true,
      },
      files: ["consumer.ts"],
    }),
    "consumer.ts": smoke("zigtensor"),
  });
  succeed("npm", ["install", "zigtensor", "--no-audit", "--no-fund"], dir, npmEnv());
  assert.ok(existsSync(join(dir, "node_modules", "zigtensor", "mod.d.ts")));
  const check = run(tsc, ["-p", "tsconfig.json"], dir);
  assert.equal(check.status, 0, `tsc reported:\n${check.stdout}\n${check.stderr}`);
});

/** The SHA-256 that dist/jsr's table holds for this platform's library. */
function shippedHash(): string {
  const table = readFileSync(join(dist, "jsr", "src", "native", "checksums.ts"), "utf8");
  const hash = table.match(new RegExp(`"${platform}/${libraryFile}": "([0-9a-f]{64})"`))?.[1];
  assert.ok(hash, `no checksum for ${platform} in dist/jsr`);
  return hash;
}

/** The JSR permission set of the README, with the test server in place of jsr.io. */
function jsrPermissions(host: string, cache: string, without = ""): string[] {
  return [
    `--allow-import=${host}`,
    `--allow-net=${host}`,
    "--allow-env",
    "--allow-ffi",
    `--allow-read=${cache}`,
    `--allow-write=${cache}`,
  ].filter((flag) => without === "" || !flag.startsWith(without));
}

test("JSR: dist/jsr over HTTP in Deno with the documented permissions, then from the cache with the server stopped", async () => {
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const server = await startService(
    deno,
    [
      "run",
      `--allow-net=${host}`,
      `--allow-read=${join(dist, "jsr")}`,
      join(root, "tests/install/static_server.ts"),
      join(dist, "jsr"),
      String(port),
    ],
    async () => (await fetch(`http://${host}/deno.json`)).ok,
  );
  const dir = project("deno-jsr-app", { "smoke.ts": smoke(`http://${host}/mod.ts`) });
  const cache = join(home, ".cache", "zigtensor");
  const env = { DENO_DIR: join(work, "deno-jsr") };

  const denied = run(deno, ["run", ...jsrPermissions(host, cache, "--allow-write"), "smoke.ts"], dir, env);
  assert.notEqual(denied.status, 0);
  assert.match(denied.stderr, /the Deno permission --allow-write=\S+ is missing/);

  const first = succeed(deno, ["run", ...jsrPermissions(host, cache), "smoke.ts"], dir, env);
  const info = smokeOk(first);
  const hash = shippedHash();
  assert.equal(info.library, join(cache, hash, libraryFile));
  assert.equal(await sha256(readFileSync(info.library)), hash);
  console.log(`deno run http://…/mod.ts (first run, downloads and caches): ${first.seconds.toFixed(1)} s`);

  await stopService(server);
  assert.ok(
    !(await fetch(`http://${host}/deno.json`).then(() => true, () => false)),
    "the server is stopped",
  );
  // Later runs: no net and no write permission needed.
  const later = ["--allow-net", "--allow-write"];
  const laterPermissions = jsrPermissions(host, cache).filter((flag) =>
    !later.some((name) => flag.startsWith(name))
  );
  const second = succeed(deno, ["run", ...laterPermissions, "smoke.ts"], dir, env);
  assert.equal(smokeOk(second).library, info.library);
  console.log(`deno run http://…/mod.ts (cache hit, server stopped): ${second.seconds.toFixed(1)} s`);

  // A flipped byte in the cached copy: refused, both hashes named.
  const bytes = readFileSync(info.library);
  bytes[bytes.length >> 1] ^= 0xff;
  writeFileSync(info.library, bytes);
  const tampered = run(deno, ["run", ...laterPermissions, "smoke.ts"], dir, env);
  assert.notEqual(tampered.status, 0);
  assert.match(
    tampered.stderr,
    new RegExp(`checksum mismatch .*SHA-256 is ${await sha256(bytes)} .*expects ${hash}`),
  );
});

test("a tampered library byte in a package gives the checksum error and the file is not opened", async () => {
  const copy = join(work, "jsr-tampered");
  cpSync(join(dist, "jsr"), copy, { recursive: true });
  const path = join(copy, "lib", platform, libraryFile);
  const bytes = readFileSync(path);
  bytes[100] ^= 0x01;
  writeFileSync(path, bytes);
  const dir = project("tampered-app", { "smoke.ts": smoke(join(copy, "mod.ts")) });
  const result = run(deno, ["run", "--allow-ffi", `--allow-read=${copy}`, "--allow-env", "smoke.ts"], dir, {
    DENO_DIR: join(work, "deno-tampered"),
  });
  assert.notEqual(result.status, 0);
  assert.match(result.stderr, /NativeLibraryError: checksum mismatch for /);
  assert.ok(result.stderr.includes(`SHA-256 is ${await sha256(bytes)}`), "names the file's hash");
  assert.ok(result.stderr.includes(`expects ${shippedHash()}`), "names the expected hash");
});

test("ZIGTENSOR_LIB with its documented permissions: that file, nothing else", () => {
  const library = join(dist, "jsr", "lib", platform, libraryFile);
  const dir = project("override-app", { "smoke.ts": smoke(join(dist, "jsr", "mod.ts")) });
  const result = succeed(
    deno,
    ["run", "--allow-ffi", "--allow-env", `--allow-read=${library}`, "smoke.ts"],
    dir,
    {
      DENO_DIR: join(work, "deno-override"),
      ZIGTENSOR_LIB: library,
    },
  );
  assert.equal(smokeOk(result).library, library);
});

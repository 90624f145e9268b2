/**
 * Packages the libraries that `zig build dist` left in zig-out/dist/<platform>/ into dist/ (run by
 * `bash scripts/dev.sh dist`, which builds them first):
 *
 * - dist/jsr/: the files `deno publish` uploads (the `publish.include` set of deno.json), the libraries under
 *   lib/<platform>/, and src/native/checksums.ts holding their SHA-256; checked against `deno publish
 *   --dry-run` run inside it, file for file;
 * - dist/npm/: `npm pack` tarballs of `zigtensor` (ES modules and .d.ts compiled by tsc from dist/jsr's
 *   sources, the platform packages as optionalDependencies at the same version) and of one package per
 *   platform (`@zigtensor/<platform>`: its library and a package.json with os, cpu and libc).
 *
 * Also checks every library: stripped, exporting the ABI entry point, and for glibc no symbol version newer
 * than 2.17. Prints the sizes.
 *
 * @module
 */
import { execFileSync, spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { libraryFileName, PLATFORMS, sha256 } from "../src/native/locate.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = join(root, "node_modules", ".bin");
const built = join(root, "zig-out", "dist");
const out = join(root, "dist");
const jsr = join(out, "jsr");
const stage = join(out, ".stage");
const GLIBC_FLOOR = [2, 17];

const denoJson = JSON.parse(readFileSync(join(root, "deno.json"), "utf8"));
const packageJson = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
if (denoJson.version !== packageJson.version) {
  throw new Error(`deno.json has version ${denoJson.version} but package.json has ${packageJson.version}`);
}
const version: string = packageJson.version;

function run(command: string, args: string[], cwd = root): string {
  return execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
}

/** Every file under `dir`, as paths relative to it with forward slashes, sorted. */
function walk(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? walk(path, base) : [relative(base, path).split("\\").join("/")];
  }).sort();
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;

// --- the libraries: present for every platform, stripped, exporting the ABI, glibc floor ---------------------
const platformDirs = readdirSync(built).sort();
if (platformDirs.join() !== [...PLATFORMS].sort().join()) {
  throw new Error(`zig-out/dist holds ${platformDirs.join(", ")}; expected ${PLATFORMS.join(", ")}`);
}

interface Library {
  platform: string;
  file: string;
  path: string;
  hash: string;
  bytes: number;
}

function checkLibrary(platform: string, path: string, bytes: Uint8Array): void {
  const text = new TextDecoder("latin1").decode(bytes);
  if (!text.includes("zt_abi_version")) throw new Error(`${path} does not export zt_abi_version`);
  if (!platform.startsWith("linux-")) return;
  const sections = run("readelf", ["-S", "-W", path]);
  if (/\s\.(symtab|debug_\w+)\s/.test(sections)) throw new Error(`${path} is not stripped:\n${sections}`);
  const needed = [...run("readelf", ["-V", "-W", path]).matchAll(/Name: GLIBC_(\d+)\.(\d+)/g)]
    .map((match) => [Number(match[1]), Number(match[2])]);
  if (platform.endsWith("-gnu")) {
    if (needed.length === 0) throw new Error(`${path} names no glibc symbol version; is it a glibc build?`);
    const newest = needed.reduce((a, b) => (a[0] * 1000 + a[1] >= b[0] * 1000 + b[1] ? a : b));
    if (newest[0] * 1000 + newest[1] > GLIBC_FLOOR[0] * 1000 + GLIBC_FLOOR[1]) {
      throw new Error(
        `${path} needs GLIBC_${newest.join(".")}, newer than the floor ${GLIBC_FLOOR.join(".")}`,
      );
    }
    console.log(
      `${platform}: newest glibc symbol version GLIBC_${newest.join(".")} (floor ${GLIBC_FLOOR.join(".")})`,
    );
  } else if (needed.length > 0) {
    throw new Error(`${path} is a musl build but names glibc symbol versions`);
  }
}

const libraries: Library[] = [];
for (const platform of PLATFORMS) {
  const file = libraryFileName(platform.split("-")[0]);
  const path = join(built, platform, file);
  const found = walk(join(built, platform));
  if (found.join() !== file) {
    throw new Error(`zig-out/dist/${platform} holds ${found.join(", ")}, not ${file}`);
  }
  const bytes = readFileSync(path);
  checkLibrary(platform, path, bytes);
  libraries.push({ platform, file, path, hash: await sha256(bytes), bytes: bytes.length });
}

rmSync(out, { recursive: true, force: true });
mkdirSync(jsr, { recursive: true });

// --- dist/jsr ----------------------------------------------------------------------------------------------------
for (const entry of denoJson.publish.include as string[]) {
  const source = join(root, entry);
  if (existsSync(source)) cpSync(source, join(jsr, entry), { recursive: true });
}
for (const library of libraries) {
  mkdirSync(join(jsr, "lib", library.platform), { recursive: true });
  cpSync(library.path, join(jsr, "lib", library.platform, library.file));
}
const checksumModule = join(jsr, "src", "native", "checksums.ts");
const table = libraries.map((library) => `  "${library.platform}/${library.file}": "${library.hash}",`).join(
  "\n",
);
writeFileSync(
  checksumModule,
  readFileSync(checksumModule, "utf8").replace(
    /export const LIBRARY_CHECKSUMS: Readonly<Record<string, string>> = \{\};/,
    `export const LIBRARY_CHECKSUMS: Readonly<Record<string, string>> = {\n${table}\n};`,
  ),
);
if (!readFileSync(checksumModule, "utf8").includes(libraries[0].hash)) {
  throw new Error(`${checksumModule} did not take the checksum table`);
}

// What `deno publish` would upload from dist/jsr must be exactly the folder's files.
const dryRun = spawnSync(join(bin, "deno"), ["publish", "--dry-run", "--allow-dirty"], {
  cwd: jsr,
  encoding: "utf8",
  env: { ...process.env, NO_COLOR: "1" },
});
if (dryRun.status !== 0) {
  throw new Error(`deno publish --dry-run failed in dist/jsr:\n${dryRun.stdout}${dryRun.stderr}`);
}
const published = [...(dryRun.stdout + dryRun.stderr).matchAll(/file:\/\/\S+/g)]
  .map((match) => relative(jsr, fileURLToPath(match[0])).split("\\").join("/")).sort();
const present = walk(jsr);
if (published.join("\n") !== present.join("\n")) {
  throw new Error(
    `deno publish --dry-run in dist/jsr would upload:\n${published.join("\n")}\nbut the folder holds:\n${
      present.join("\n")
    }`,
  );
}

// --- dist/npm ----------------------------------------------------------------------------------------------------
const npmOut = join(out, "npm");
mkdirSync(npmOut, { recursive: true });

const mainStage = join(stage, "zigtensor");
const tsconfig = join(stage, "tsconfig.json");
mkdirSync(stage, { recursive: true });
writeFileSync(
  tsconfig,
  JSON.stringify(
    {
      compilerOptions: {
        target: "ES2022",
        module: "ESNext",
        moduleResolution: "bundler",
        lib: ["ESNext"],
        types: ["node"],
        strict: true,
        declaration: true,
        rewriteRelativeImportExtensions: true,
        allowImportingTsExtensions: true,
        isolatedModules: true,
        skipLibCheck: true,
        rootDir: jsr,
        outDir: mainStage,
      },
      files: [join(jsr, "mod.ts")],
      include: [join(jsr, "src", "**", "*.ts")],
    },
    null,
    2,
  ),
);
run(join(bin, "tsc"), ["-p", tsconfig]);
// tsc rewrites relative `.ts` imports in the JavaScript it emits but not in the declarations.
for (const file of walk(mainStage).filter((path) => path.endsWith(".d.ts"))) {
  const path = join(mainStage, file);
  const text = readFileSync(path, "utf8");
  writeFileSync(path, text.replace(/((?:from\s+|import\()(["'])\.{1,2}\/[^"']+)\.ts\2/g, "$1.js$2"));
}
for (const file of ["README.md", "LICENSE"]) cpSync(join(root, file), join(mainStage, file));

const platformPackage = (platform: string) => `@zigtensor/${platform}`;
const noScripts = (manifest: Record<string, unknown>) => {
  if ("scripts" in manifest) throw new Error(`${manifest.name} must not have scripts`);
  return manifest;
};
const common = {
  version,
  license: packageJson.license,
  ...(packageJson.repository ? { repository: packageJson.repository } : {}),
};
writeFileSync(
  join(mainStage, "package.json"),
  JSON.stringify(
    noScripts({
      name: packageJson.name,
      ...common,
      description: packageJson.description,
      keywords: packageJson.keywords,
      type: "module",
      main: "./mod.js",
      types: "./mod.d.ts",
      exports: { ".": { types: "./mod.d.ts", default: "./mod.js" }, "./package.json": "./package.json" },
      optionalDependencies: Object.fromEntries(
        libraries.map((library) => [platformPackage(library.platform), version]),
      ),
    }),
    null,
    2,
  ) + "\n",
);

for (const library of libraries) {
  const [os, cpu, libc] = library.platform.split("-");
  const dir = join(stage, library.platform);
  mkdirSync(dir, { recursive: true });
  cpSync(library.path, join(dir, library.file));
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify(
      noScripts({
        name: platformPackage(library.platform),
        ...common,
        description:
          `The ${library.platform} build of libzigtensor, the native library of the zigtensor package`,
        os: [os],
        cpu: [cpu],
        ...(libc ? { libc: [libc === "gnu" ? "glibc" : "musl"] } : {}),
        files: [library.file],
        preferUnplugged: true,
        publishConfig: { access: "public" },
      }),
      null,
      2,
    ) + "\n",
  );
}

const packed: { name: string; file: string }[] = [];
for (const dir of ["zigtensor", ...libraries.map((library) => library.platform)]) {
  const result = JSON.parse(
    run("npm", ["pack", "--json", "--pack-destination", npmOut, "--loglevel=error"], join(stage, dir)),
  );
  const files: string[] = result[0].files.map((file: { path: string }) => file.path);
  if (dir === "zigtensor") {
    const sources = files.filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"));
    if (sources.length > 0) {
      throw new Error(`the npm package would ship TypeScript sources: ${sources.join(", ")}`);
    }
  } else if (
    files.sort().join() !== ["package.json", libraries.find((l) => l.platform === dir)!.file].sort().join()
  ) {
    throw new Error(`${dir} would ship ${files.join(", ")}`);
  }
  packed.push({ name: result[0].name, file: result[0].filename });
}
rmSync(stage, { recursive: true, force: true });

// --- sizes -------------------------------------------------------------------------------------------------------
console.log("\nlibraries (stripped):");
for (const library of libraries) {
  console.log(`  ${library.platform.padEnd(18)} ${kib(library.bytes).padStart(9)}  ${library.hash}`);
}
const jsrBytes = walk(jsr).reduce((sum, file) => sum + statSync(join(jsr, file)).size, 0);
console.log(`dist/jsr: ${walk(jsr).length} files, ${kib(jsrBytes)}`);
console.log("dist/npm:");
for (const pack of packed) {
  console.log(
    `  ${pack.name.padEnd(28)} ${kib(statSync(join(npmOut, pack.file)).size).padStart(9)}  ${pack.file}`,
  );
}

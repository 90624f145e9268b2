/**
 * Generates the two files the op table (`src/core/op_table.ts`) determines: `zig/kernels/ops.zig`, the Zig side
 * (one enum per kernel family with the table's codes, and the dtype rule the kernels need: which binary ops
 * write Bool, which reductions write I64), and `src/core/op_types.ts`, the table's names and codes as explicit
 * types (a published module may not export inferred types), with the op names of each kernel family
 * (`BinaryOpName`, `UnaryOpName`, …) so that no other file lists them. Run `deno run -A scripts/gen_ops.ts` after
 * editing the table; `tests/op_table.test.ts` fails while a committed file differs from what the table
 * generates.
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  definitionOf,
  DTYPE_RULES,
  type DTypeResult,
  KERNEL_FAMILIES,
  kernelCodes,
  kernelEntries,
  type KernelFamily,
  type OpName,
  OPS,
} from "../src/core/op_table.ts";

/** Where the generated Zig file lives. */
export const ZIG_OPS_PATH: string = fileURLToPath(new URL("../zig/kernels/ops.zig", import.meta.url));
/** Where the generated TypeScript types live. */
export const TS_TYPES_PATH: string = fileURLToPath(new URL("../src/core/op_types.ts", import.meta.url));

/** `LogSoftmax` → `log_softmax`. */
function snake(name: string): string {
  return name.replace(/(?<=[a-z0-9])([A-Z])/g, "_$1").toLowerCase();
}

function family(name: KernelFamily): string {
  kernelCodes(name); // throws when the codes are not dense
  const families: Record<KernelFamily, { symbol: string; intSymbol?: string; zigEnum: string }> =
    KERNEL_FAMILIES;
  const { symbol, intSymbol, zigEnum } = families[name];
  const entries = kernelEntries(name);
  const fields = entries.map(({ op, kernel }) => `    ${snake(kernel.name)} = ${kernel.code}, // ops.${op}`);
  const rule = (gives: DTypeResult) =>
    entries.filter(({ op }) => DTYPE_RULES[definitionOf(op).dtypes].gives === gives).map(({ kernel }) =>
      `.${snake(kernel.name)}`
    );
  const predicate = (fn: string, doc: string, list: string[]) =>
    list.length === 0 ? [] : [
      "",
      `    /// ${doc}`,
      `    pub fn ${fn}(op: ${zigEnum}) bool {`,
      `        return switch (op) {`,
      `            ${list.join(", ")} => true,`,
      `            else => false,`,
      `        };`,
      `    }`,
    ];
  return [
    `/// The \`${name}\` kernels (\`${symbol}\`${
      intSymbol === undefined ? "" : `, and \`${intSymbol}\` for integer and Bool tensors`
    }), by the codes of the op table.`,
    `pub const ${zigEnum} = enum(i32) {`,
    ...fields,
    ...predicate(
      "writesBool",
      "Whether the op writes Bool (0/1 bytes): its dtype rule ends in `->bool`.",
      rule("bool"),
    ),
    ...predicate(
      "writesI64",
      "Whether the op writes I64 indices: its dtype rule ends in `->i64`.",
      rule("i64"),
    ),
    `};`,
  ].join("\n");
}

/** The text of `zig/kernels/ops.zig` as the op table generates it. */
export function zigOpsSource(): string {
  const families = (Object.keys(KERNEL_FAMILIES) as KernelFamily[]).map(family);
  return [
    "//! Generated from the op table (src/core/op_table.ts) by scripts/gen_ops.ts; do not edit.",
    "//! tests/op_table.test.ts fails while this file differs from what the table generates.",
    "",
    families.join("\n\n"),
    "",
  ].join("\n");
}

function union(name: string, doc: string, members: readonly string[]): string {
  return [
    `/** ${doc} */`,
    `export type ${name} =`,
    ...members.map((m, i) => `  | "${m}"${i === members.length - 1 ? ";" : ""}`),
  ]
    .join("\n");
}

/** The text of `src/core/op_types.ts` as the op table generates it. */
export function tsTypesSource(): string {
  const names = Object.keys(OPS) as OpName[];
  const records = names.flatMap((op) => {
    const grad = OPS[op].grad;
    return typeof grad === "object" ? [grad.record] : [];
  });
  const families = (Object.keys(KERNEL_FAMILIES) as KernelFamily[]).map((f) => {
    const fields = kernelEntries(f).map(({ kernel }) => `    readonly ${kernel.name}: ${kernel.code};`);
    return [`  /** The ${f} kernels by name, with their codes. */`, `  readonly ${f}: {`, ...fields, "  };"]
      .join("\n");
  });
  return [
    "/**",
    " * The op table's names and codes as explicit types. Generated from `src/core/op_table.ts` by",
    " * `scripts/gen_ops.ts`; do not edit (`tests/op_table.test.ts` fails while it differs).",
    " *",
    " * @module",
    " */",
    "",
    union("OpName", "The name of an operator in the op table (its name in `ops`).", names),
    "",
    union("RecordKind", "The kinds of backward record, named as in spec 000 §8's table.", [
      ...new Set(records),
    ]),
    "",
    union(
      "DifferentiableOp",
      "The differentiable operators: with a rule, composed of recording ops, or still without a rule.",
      names.filter((op) => OPS[op].grad !== "none"),
    ),
    "",
    ...(Object.keys(KERNEL_FAMILIES) as KernelFamily[]).flatMap((f) => [
      union(
        `${KERNEL_FAMILIES[f].zigEnum}Name`,
        `The operators whose kernel is in the \`${f}\` family (their names in \`ops\`).`,
        [...new Set(kernelEntries(f).map(({ op }) => op))],
      ),
      "",
    ]),
    "/** Each kernel family's operator names. */",
    "export interface KernelOpNames {",
    ...(Object.keys(KERNEL_FAMILIES) as KernelFamily[]).map((f) =>
      `  /** The \`${f}\` family's operators. */\n  readonly ${f}: ${KERNEL_FAMILIES[f].zigEnum}Name;`
    ),
    "}",
    "",
    "/** The kernel names of each family mapped to their codes. */",
    "export interface KernelCodes {",
    ...families,
    "}",
    "",
  ].join("\n");
}

if (import.meta.main) {
  writeFileSync(ZIG_OPS_PATH, zigOpsSource());
  writeFileSync(TS_TYPES_PATH, tsTypesSource());
  console.log(`wrote ${ZIG_OPS_PATH} and ${TS_TYPES_PATH}`);
}

import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { dequantize, DType, io, quantize, StaleTensorError, Tensor, TensorFileError } from "../mod.ts";
import {
  EXPECTED,
  type ExpectedField,
  firstDiff,
  fixture,
  FIXTURES,
  rowMajorHex,
  toHex,
  withTempDir,
} from "./helpers/io_files.ts";
import { readZipDirectory } from "../src/io/zip.ts";
import { ByteSource } from "../src/io/source.ts";

/** zigtensor's dtype of each format's dtype name, as expected.json spells them. */
const DTYPE_NAMES: Record<string, number> = {
  // safetensors
  BOOL: DType.Bool,
  U8: DType.U8,
  I8: DType.I8,
  I16: DType.I16,
  U16: DType.U16,
  F16: DType.F16,
  BF16: DType.BF16,
  I32: DType.I32,
  U32: DType.U32,
  F32: DType.F32,
  F64: DType.F64,
  I64: DType.I64,
  U64: DType.U64,
  // GGUF adds
  Q4_0: DType.Q4_0,
  Q8_0: DType.Q8_0,
  // NumPy
  f2: DType.F16,
  f4: DType.F32,
  f8: DType.F64,
  i1: DType.I8,
  i2: DType.I16,
  i4: DType.I32,
  i8: DType.I64,
  u1: DType.U8,
  u2: DType.U16,
  u4: DType.U32,
  u8: DType.U64,
  b1: DType.Bool,
};

/** Asserts that `tensors` holds exactly the tensors expected.json lists for `file`, with their bytes. */
function assertMatches(file: string, tensors: ReadonlyMap<string, Tensor>): void {
  const expected = Object.entries(EXPECTED[file]).filter(([name]) => name !== "__metadata__");
  assert.deepEqual([...tensors.keys()].sort(), expected.map(([name]) => name).sort(), file);
  for (const [name, want] of expected) {
    const t = tensors.get(name)!;
    assert.equal(t.dtype, DTYPE_NAMES[want.dtype], `${file} ${name} dtype`);
    assert.deepEqual([...t.shape], want.shape, `${file} ${name} shape`);
    assert.equal(rowMajorHex(t), want.hex, `${file} ${name} values`);
  }
}

test("safetensors: every dtype of a file the safetensors library wrote, from a path and from bytes", () => {
  for (const input of [join(FIXTURES, "all_dtypes.safetensors"), fixture("all_dtypes.safetensors")]) {
    using tensors = io.loadSafetensors(input);
    assertMatches("all_dtypes.safetensors", tensors);
    assert.deepEqual(tensors.metadata, { format: "pt" });
    assert.equal(tensors.get("t.scalar")!.item(), 3.5);
    assert.equal(tensors.get("t.i64")!.get(1, 1, 1), 3n); // (7 - 8/3) · 0.75 = 3.25, truncated
    assert.equal(tensors.get("t.bf16")!.get(1, 2), 1.5); // (5 - 2) · 0.5
  }
});

test("readers take a file: URL; a missing file is the runtime's own error", () => {
  using t = io.readNpy(pathToFileURL(join(FIXTURES, "f4_c.npy")));
  assert.equal(rowMajorHex(t), EXPECTED["f4_c.npy"].array.hex);
  assert.throws(
    () => io.readNpy(join(FIXTURES, "missing.npy")),
    (e: Error) => !(e instanceof TensorFileError),
  );
});

test("safetensors: the writer gives the safetensors library's bytes, in any input order", () => {
  using source = io.loadSafetensors(join(FIXTURES, "writer.safetensors"));
  assertMatches("writer.safetensors", source);
  const shuffled = new Map(["c", "a", "b"].map((name) => [name, source.get(name)!]));
  withTempDir((dir) => {
    io.saveSafetensors(join(dir, "w.safetensors"), shuffled, { note: "zigtensor" });
    const ours = new Uint8Array(readFileSync(join(dir, "w.safetensors")));
    const theirs = fixture("writer.safetensors");
    assert.equal(firstDiff(ours, theirs), -1);
  });
});

test("safetensors: a strided view is written row-major, and tensors load into an arena", async () => {
  const { Arena } = await import("../mod.ts");
  using x = Tensor.from([[1, 2, 3], [4, 5, 6]]);
  withTempDir((dir) => {
    const path = join(dir, "t.safetensors");
    io.saveSafetensors(path, { xt: x.T, row: x.select(0, 1) });
    using arena = new Arena();
    const back = io.loadSafetensors(path, { arena });
    assert.deepEqual([...back.get("xt")!.toArray()], [1, 4, 2, 5, 3, 6]);
    assert.deepEqual([...back.get("row")!.toArray()], [4, 5, 6]);
    arena.reset();
    assert.ok(back.get("xt")!.isReleased);
  });
});

test("safetensors: the writer refuses GGML blocks and non-string metadata", () => {
  using w = Tensor.zeros([1, 32]);
  using q = quantize(w, DType.Q8_0);
  withTempDir((dir) => {
    assert.throws(() => io.saveSafetensors(join(dir, "q.safetensors"), { q }), /Q8_0/);
    assert.throws(
      () => io.saveSafetensors(join(dir, "m.safetensors"), { w }, { n: 1 as unknown as string }),
      TypeError,
    );
  });
});

const NPY_FILES = Object.keys(EXPECTED).filter((file) => file.endsWith(".npy"));

test("npy: every dtype, C and Fortran order, big-endian, scalar and empty files NumPy wrote", () => {
  assert.ok(NPY_FILES.length >= 16);
  for (const file of NPY_FILES) {
    using t = io.readNpy(join(FIXTURES, file));
    assertMatches(file, new Map([["array", t]]));
  }
  using f = io.readNpy(fixture("f8_fortran.npy"));
  assert.deepEqual([...f.strides], [1, 2, 6]); // column-major: a view, as np.load gives
  assert.equal(f.isContiguous, false);
  using big = io.readNpy(fixture("i4_big_endian.npy"));
  assert.equal(big.get(1, 1), 1); // 3 - 4/3, truncated
});

test("npy: the writer gives NumPy's bytes, Fortran order included (without a copy)", () => {
  withTempDir((dir) => {
    for (const file of NPY_FILES.filter((f) => !f.includes("big_endian"))) {
      using t = io.readNpy(fixture(file));
      io.writeNpy(join(dir, file), t);
      const diff = firstDiff(new Uint8Array(readFileSync(join(dir, file))), fixture(file));
      assert.equal(diff, -1, `${file} differs at byte ${diff}`);
    }
  });
});

test("npy: a strided view that is neither C nor Fortran order is written row-major; BF16 is refused", () => {
  using x = Tensor.arange(12).reshape([3, 4]);
  const view = x.slice(1, 0, 4, 2);
  withTempDir((dir) => {
    io.writeNpy(join(dir, "v.npy"), view);
    using back = io.readNpy(join(dir, "v.npy"));
    assert.deepEqual([...back.toArray()], [0, 2, 4, 6, 8, 10]);
    using b = Tensor.zeros([2], { dtype: DType.BF16 });
    assert.throws(() => io.writeNpy(join(dir, "b.npy"), b), /BF16/);
  });
});

test("npz: archives np.savez (stored) and np.savez_compressed (deflate) wrote", () => {
  for (const file of ["stored.npz", "compressed.npz"]) {
    using tensors = io.readNpz(join(FIXTURES, file));
    assertMatches(file, tensors);
    assert.equal(tensors.get("f")!.isContiguous, false); // Fortran order inside the archive
  }
});

test("npz: the writer's members are NumPy's .npy bytes, stored or deflated, and read back", () => {
  using arrays = io.readNpz(fixture("stored.npz"));
  const members = (bytes: Uint8Array) => {
    const source = new ByteSource("npz", bytes);
    return new Map(readZipDirectory(source).map((m) => [m.name, m]));
  };
  const theirs = fixture("stored.npz");
  const theirMembers = members(theirs);
  withTempDir((dir) => {
    for (const compress of [false, true]) {
      const path = join(dir, `a${compress}.npz`);
      io.writeNpz(path, arrays, { compress });
      const ours = new Uint8Array(readFileSync(path));
      for (const [name, member] of members(ours)) {
        assert.equal(member.method, compress ? 8 : 0);
        if (compress) continue;
        const other = theirMembers.get(name)!;
        const a = ours.subarray(member.dataStart, member.dataStart + member.size);
        const b = theirs.subarray(other.dataStart, other.dataStart + other.size);
        assert.equal(toHex(a), toHex(b), name);
      }
      using back = io.readNpz(path);
      assertMatches("stored.npz", back);
    }
  });
});

/** A GGUF metadata value as expected.json spells it (integers as decimal strings). */
function asExpected(value: unknown): unknown {
  if (ArrayBuffer.isView(value)) return asExpected(Array.from(value as unknown as ArrayLike<unknown>));
  if (Array.isArray(value)) return value.map(asExpected);
  if (typeof value === "bigint" || (typeof value === "number" && Number.isInteger(value))) {
    return String(value);
  }
  return value;
}

test("gguf: metadata of every type, and F32, F16, BF16, I32, Q8_0 and Q4_0 tensors gguf.GGUFWriter wrote", () => {
  using model = io.readGguf(join(FIXTURES, "model.gguf"));
  assertMatches("model.gguf", model);
  const fields = EXPECTED["model.gguf"].__metadata__ as unknown as Record<string, ExpectedField>;
  assert.deepEqual(Object.keys(model.metadata).sort(), Object.keys(fields).sort());
  for (const [key, field] of Object.entries(fields)) {
    assert.equal(model.types[key], field.types[field.types.length - 1], `${key} type`);
    const value = model.metadata[key];
    const want = field.types[field.types.length - 1].startsWith("FLOAT") && typeof value === "number"
      ? value
      : asExpected(value);
    assert.deepEqual(want, field.value, key);
  }
  assert.equal(model.metadata["zt.u64"], 2n ** 64n - 1n);
  assert.ok(model.metadata["zt.u16s"] instanceof Uint16Array);
  assert.equal(model.alignment, 32);
});

test("gguf: zigtensor's quantize gives the blocks gguf-py's quantize gave, and they dequantize", () => {
  using model = io.readGguf(fixture("model.gguf"));
  for (const [x, q, format] of [["x8", "q8", DType.Q8_0], ["x4", "q4", DType.Q4_0]] as const) {
    using ours = quantize(model.get(x)!, format);
    assert.equal(rowMajorHex(ours), rowMajorHex(model.get(q)!), q);
    using back = dequantize(model.get(q)!);
    const source = model.get(x)!.toArray() as Float32Array;
    const max = Math.max(...source.map(Math.abs));
    (back.toArray() as Float32Array).forEach((v, i) => assert.ok(Math.abs(v - source[i]) <= max / 7, q));
  }
});

test("gguf: the writer gives gguf.GGUFWriter's bytes for what readGguf read (types, order, alignment)", () => {
  withTempDir((dir) => {
    for (const file of ["model.gguf", "aligned64.gguf"]) {
      using model = io.readGguf(fixture(file));
      io.writeGguf(join(dir, file), model);
      const diff = firstDiff(new Uint8Array(readFileSync(join(dir, file))), fixture(file));
      assert.equal(diff, -1, `${file} differs at byte ${diff}`);
    }
    using aligned = io.readGguf(join(FIXTURES, "aligned64.gguf"));
    assert.equal(aligned.alignment, 64);
    assertMatches("aligned64.gguf", aligned);
  });
});

test("gguf: metadata types are inferred as gguf-py infers them, or given; values that do not fit are refused", () => {
  using t = Tensor.zeros([2]);
  withTempDir((dir) => {
    const path = join(dir, "m.gguf");
    io.writeGguf(path, { t }, {
      i: 5,
      big: 2 ** 40,
      f: 0.5,
      b: true,
      s: "x",
      n: 7n,
      ints: [1, 2],
      floats: [1, 2.5],
      typed: new Int16Array([3]),
      nested: [["a"], ["b", "c"]],
      u8: 7,
    }, { types: { u8: "UINT8" } });
    using back = io.readGguf(path);
    assert.deepEqual(back.types, {
      i: "INT32",
      big: "INT64",
      f: "FLOAT32",
      b: "BOOL",
      s: "STRING",
      n: "INT64",
      ints: "INT32",
      floats: "FLOAT32",
      typed: "INT16",
      nested: "ARRAY",
      u8: "UINT8",
    });
    assert.equal(back.metadata.big, 2n ** 40n);
    assert.deepEqual(back.metadata.nested, [["a"], ["b", "c"]]);
    assert.throws(() => io.writeGguf(path, { t }, { u8: 300 }, { types: { u8: "UINT8" } }), RangeError);
    using five = Tensor.zeros([1, 1, 1, 1, 1]);
    assert.throws(() => io.writeGguf(path, { five }), /at most 4/);
  });
});

test("writers refuse released tensors and unsupported dtypes before they create the file", () => {
  const gone = Tensor.zeros([2]);
  gone.dispose();
  using b = Tensor.zeros([2], { dtype: DType.BF16 });
  using u = Tensor.zeros([2], { dtype: DType.U32 });
  withTempDir((dir) => {
    const path = (name: string) => join(dir, name);
    assert.throws(() => io.saveSafetensors(path("a.safetensors"), { gone }), StaleTensorError);
    assert.throws(() => io.writeNpy(path("a.npy"), gone), StaleTensorError);
    assert.throws(() => io.writeNpz(path("a.npz"), { ok: u, b }), /BF16/);
    assert.throws(() => io.writeGguf(path("a.gguf"), { u }), /U32/);
    assert.deepEqual(readdirSync(dir), []);
  });
});

test("names and keys such as __proto__ are ordinary names in every format", () => {
  using t = Tensor.from([1, 2]);
  withTempDir((dir) => {
    io.saveSafetensors(
      join(dir, "p.safetensors"),
      new Map([["__proto__", t]]),
      JSON.parse('{"__proto__": "x"}'),
    );
    using st = io.loadSafetensors(join(dir, "p.safetensors"));
    assert.deepEqual([...st.get("__proto__")!.toArray()], [1, 2]);
    assert.equal(Object.getOwnPropertyDescriptor(st.metadata, "__proto__")?.value, "x");
    io.writeGguf(join(dir, "p.gguf"), new Map([["__proto__", t]]), JSON.parse('{"__proto__": 5}'));
    using model = io.readGguf(join(dir, "p.gguf"));
    assert.equal(Object.getOwnPropertyDescriptor(model.metadata, "__proto__")?.value, 5);
    assert.equal(Object.getOwnPropertyDescriptor(model.types, "__proto__")?.value, "INT32");
    assert.equal(Object.getPrototypeOf(model.metadata), Object.prototype);
    io.writeNpz(join(dir, "p.npz"), new Map([["__proto__", t]]));
    using npz = io.readNpz(join(dir, "p.npz"));
    assert.deepEqual([...npz.keys()], ["__proto__"]);
  });
});

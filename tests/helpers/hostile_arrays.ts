// Arrays that read differently at each access, for the tests that the library reads what it checks once.

/** `values` with element `index` an accessor that reads `first` once, then `later` at every read after. */
export function shifty(values: number[], index: number, first: number, later: number): number[] {
  let reads = 0;
  Object.defineProperty(values, index, { get: () => (reads++ === 0 ? first : later), enumerable: true });
  return values;
}

/** A proxy of `values` whose length reads true once, then `extra` more at every read after. */
export function lengthening(values: number[], extra: number): number[] {
  let reads = 0;
  return new Proxy(values, {
    get: (target, key) =>
      key === "length" ? (reads++ === 0 ? target.length : target.length + extra) : Reflect.get(target, key),
  });
}

/**
 * The SHA-256 of every prebuilt library a package ships, keyed by its path under the package's `lib/` folder
 * (`"linux-x64-gnu/libzigtensor.so"`). Empty in a source checkout: `bash scripts/dev.sh dist` writes the table
 * of the libraries it builds into the packages it makes (`dist/jsr/` and the npm package `zigtensor`), and the
 * loader refuses a prebuilt file whose hash differs.
 *
 * @module
 */

/** Lowercase hexadecimal SHA-256 by `<platform>/<file name>`. */
export const LIBRARY_CHECKSUMS: Readonly<Record<string, string>> = {};

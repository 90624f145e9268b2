#!/usr/bin/env bash
# zigtensor's one entry point for developers and CI. Every command installs what it needs first, idempotently,
# into git-ignored folders of the repository (.tools/, node_modules/), so a fresh machine with Node.js, npm,
# Python and pip needs nothing else.
#
#   bash scripts/dev.sh setup     install Zig (the version pinned in build.zig.zon), Deno, Bun, TypeScript, qemu-user
#   bash scripts/dev.sh build     build the release and CHECKED libraries into zig-out/ (needs only Zig)
#   bash scripts/dev.sh dist      stripped libraries for every platform by cross-compilation, packed into
#                                 dist/jsr (the JSR file set) and dist/npm (npm tarballs)
#   bash scripts/dev.sh test      build, then the Zig tests, the Deno suite and the Bun suite against both
#                                 libraries, then dist and the end-to-end install tests (tests/install/)
#   bash scripts/dev.sh example   build, then train the main example end to end (examples/digits_cnn.ts)
#   bash scripts/dev.sh bench     build, then run the deno bench files in bench/
#   bash scripts/dev.sh check     formatting (deno, zig), lint, doc lint, type checks for both runtimes, publish dry run
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

ZIG_VERSION=$(sed -n 's/.*\.minimum_zig_version = "\([^"]*\)".*/\1/p' build.zig.zon)
ZIG_DIR="$ROOT/.tools/zig-$ZIG_VERSION"
ZIG="$ZIG_DIR/ziglang/zig"
BIN="$ROOT/node_modules/.bin"
export DENO_NO_UPDATE_CHECK=1 DENO_NO_PROMPT=1

say() { printf '\n== %s\n' "$*"; }

install_zig() {
  if [ -x "$ZIG" ] && [ "$("$ZIG" version)" = "$ZIG_VERSION" ]; then return; fi
  # A Zig of the pinned version on PATH will do (building from source on an unsupported platform).
  if command -v zig >/dev/null && [ "$(zig version)" = "$ZIG_VERSION" ]; then
    ZIG=$(command -v zig)
    return
  fi
  say "installing Zig $ZIG_VERSION from PyPI (ziglang) into .tools/"
  rm -rf "$ZIG_DIR"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$ZIG_DIR" "ziglang==$ZIG_VERSION"
  "$ZIG" version
}

install_node_modules() {
  if [ -x "$BIN/deno" ] && [ -x "$BIN/bun" ] && [ -x "$BIN/tsc" ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
    return
  fi
  say "installing Deno, Bun, TypeScript and type packages (package-lock.json) into node_modules/"
  npm ci --no-audit --no-fund --loglevel=error
}

install_qemu() {
  if command -v qemu-aarch64 >/dev/null || command -v qemu-aarch64-static >/dev/null; then return; fi
  if [ "${ZIGTENSOR_SKIP_QEMU:-0}" = 1 ]; then return; fi
  say "installing qemu-user (Debian) for the aarch64 tests"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  if ! { $sudo apt-get install -y -qq qemu-user >/dev/null 2>&1 ||
    { $sudo apt-get update -qq >/dev/null 2>&1 && $sudo apt-get install -y -qq qemu-user >/dev/null 2>&1; }; }; then
    echo "error: could not install qemu-user with apt-get; install it, or set ZIGTENSOR_SKIP_QEMU=1 to skip the aarch64 tests knowingly" >&2
    exit 1
  fi
}

setup() {
  install_zig
  install_node_modules
}

build() {
  install_zig
  say "building libzigtensor (release and CHECKED)"
  "$ZIG" build
  "$ZIG" build -Dchecked=true
  "$ZIG" build abi-skew
}

dist() {
  setup
  say "building stripped libraries for every platform (zig build dist)"
  "$ZIG" build dist
  say "packing dist/jsr and dist/npm"
  "$BIN/deno" run -A scripts/dist.ts
}

# Counts of passed, failed and skipped tests, summed over every suite this script runs.
PASSED=0
FAILED=0
SKIPPED=0
count() { PASSED=$((PASSED + $1)); FAILED=$((FAILED + $2)); SKIPPED=$((SKIPPED + ${3:-0})); }

# junit_counts FILE: "passed failed skipped" from a JUnit report (deno test --junit-path, bun test
# --reporter=junit): each <testcase> is failed when it holds <failure> or <error>, skipped when it holds
# <skipped>, passed otherwise.
junit_counts() {
  node -e '
    const xml = require("node:fs").readFileSync(process.argv[1], "utf8");
    let p = 0, f = 0, s = 0;
    for (const c of xml.split("<testcase").slice(1)) {
      const body = c.split(/<testcase|<\/testsuite>/)[0];
      if (/<failure|<error/.test(body)) f++;
      else if (/<skipped/.test(body)) s++;
      else p++;
    }
    console.log(p, f, s);
  ' "$1"
}

# zig_counts LOG: "passed failed" from zig build's summary ("N/M tests passed; F failed") and from a Zig test
# binary run directly under qemu ("All N tests passed." / "N passed; S skipped; F failed."); Zig writes no JUnit.
zig_counts() {
  local p f
  p=$(sed 's/\x1b\[[0-9;]*m//g' "$1" | sed -n -E 's/.* ([0-9]+)\/[0-9]+ tests passed.*/\1/p; s/^([0-9]+) passed; .*/\1/p;
    s/^All ([0-9]+) tests passed\.$/\1/p' | awk '{ s += $1 } END { print s + 0 }')
  f=$(sed 's/\x1b\[[0-9;]*m//g' "$1" | sed -n -E 's/.* tests passed.*; ([0-9]+) failed.*/\1/p;
    s/^[0-9]+ passed; .* ([0-9]+) failed\.$/\1/p' | awk '{ s += $1 } END { print s + 0 }')
  echo "$p $f"
}

# run_suite NAME KIND COMMAND...: runs a suite, shows its output, adds its counts. KIND is "junit" (the
# command writes its report to $JUNIT), "zig" (counts from zig's summary) or "check" (a formatter or type
# check: one check). A suite that fails without a counted failure counts as one failure.
run_suite() {
  local name=$1 kind=$2
  shift 2
  say "$name"
  local log
  log=$(mktemp)
  JUNIT=$(mktemp --suffix=.xml)
  local status=0
  "$@" 2>&1 | tee "$log" || status=$?
  local p=0 f=0 s=0
  case "$kind" in
  junit) if [ -s "$JUNIT" ]; then read -r p f s < <(junit_counts "$JUNIT"); fi ;;
  zig) read -r p f < <(zig_counts "$log") ;;
  check) if [ "$status" = 0 ]; then p=1; fi ;;
  esac
  if [ "$status" != 0 ] && [ "$f" = 0 ]; then f=1; fi
  echo "-- $name: $p passed, $f failed, $s skipped"
  count "$p" "$f" "$s"
  rm -f "$log" "$JUNIT"
}

deno_test() {
  local lib=$1
  shift
  ZIGTENSOR_LIB="$lib" "$BIN/deno" test -A --quiet --junit-path="$JUNIT" "$@"
}

bun_test() {
  # The timeout of bunfig.toml is not applied to every test under every Bun version: pass it too.
  ZIGTENSOR_LIB="$1" "$BIN/bun" test --timeout 120000 --reporter=junit --reporter-outfile="$JUNIT"
}

# The end-to-end install tests run without ZIGTENSOR_LIB: they test how the library is found.
install_test() {
  "$BIN/deno" test -A --quiet --junit-path="$JUNIT" tests/install/install_e2e.ts
}

test_all() {
  setup
  build
  install_qemu
  local qemu_flag=()
  if [ "${ZIGTENSOR_SKIP_QEMU:-0}" = 1 ]; then qemu_flag=(-Dskip-qemu=true); fi
  local lib=zig-out/lib/libzigtensor.so checked=zig-out/lib/checked/libzigtensor.so
  run_suite "zig tests (host variants, aarch64 under qemu)" zig "$ZIG" build test --summary all "${qemu_flag[@]}"
  run_suite "zig tests, CHECKED" zig "$ZIG" build test -Dchecked=true --summary all "${qemu_flag[@]}"
  run_suite "deno test (release library, with doc examples)" junit deno_test "$lib" --doc mod.ts src/ docs/ README.md tests/
  run_suite "deno test (CHECKED library)" junit deno_test "$checked" tests/
  run_suite "bun test (release library)" junit bun_test "$lib"
  run_suite "bun test (CHECKED library)" junit bun_test "$checked"
  run_suite "dist: libraries for every platform, dist/jsr, dist/npm" check dist
  run_suite "install tests: npm registry with Bun, Deno and tsc; JSR over HTTP; checksums" junit install_test
  echo
  echo "$SKIPPED skipped"
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" = 0 ]
}

check() {
  setup
  run_suite "deno fmt --check" check "$BIN/deno" fmt --check
  run_suite "zig fmt --check" check "$ZIG" fmt --check zig build.zig
  run_suite "deno lint" check "$BIN/deno" lint
  run_suite "deno doc --lint (JSDoc on every export, no private types in the public API)" check "$BIN/deno" doc --lint mod.ts
  run_suite "deno check" check "$BIN/deno" check mod.ts src/ tests/ bench/ examples/ scripts/
  run_suite "tsc (Bun types)" check "$BIN/tsc" -p tsconfig.bun.json
  run_suite "deno publish --dry-run" check "$BIN/deno" publish --dry-run --allow-dirty
  echo
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" = 0 ]
}

case "${1:-}" in
setup) setup; install_qemu ;;
build) build ;;
dist) dist ;;
test) test_all ;;
example) setup; build; "$BIN/deno" run -A examples/digits_cnn.ts ;;
bench) setup; build; shift; "$BIN/deno" bench -A "${@:-bench/}" ;;
check) check ;;
*)
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac

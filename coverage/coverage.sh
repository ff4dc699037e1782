#!/usr/bin/env bash
# coverage/coverage.sh BUILD_DIR: line coverage of common/ and ref/ from a -DSG_COVERAGE=ON build
# whose tests have run. Writes an HTML report to coverage/report/index.html, prints a summary line,
# and fails (exit 1) when line coverage is below the floor in coverage/FLOOR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:?usage: coverage/coverage.sh BUILD_DIR}
floor=$(cat "$here/FLOOR")
info="$build/coverage.info"
# lcov's own warnings (Debian's geninfo redefines subroutines) go to a log, shown on failure.
lcov --config-file "$here/lcovrc" --quiet --capture --directory "$build" --base-directory "$root" \
     --output-file "$info.all" 2>"$build/lcov.log" || { cat "$build/lcov.log" >&2; exit 1; }
lcov --config-file "$here/lcovrc" --quiet --extract "$info.all" "$root/common/*" "$root/ref/*" \
     --output-file "$info"
genhtml --config-file "$here/lcovrc" --quiet --output-directory "$here/report" "$info" >/dev/null
percent=$(lcov --config-file "$here/lcovrc" --summary "$info" 2>&1 | sed -n 's/.*lines\.*: \([0-9.]*\)%.*/\1/p')
echo "coverage: common/ + ref/ lines ${percent}% (floor ${floor}%), report: coverage/report/index.html"
awk -v p="$percent" -v f="$floor" 'BEGIN { exit !(p >= f) }' || {
  echo "coverage: below the ${floor}% floor: add tests for the uncovered lines (see the report)" >&2
  exit 1
}

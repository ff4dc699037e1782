#!/usr/bin/env bash
# scripts/test.sh: the README's test command. Installs what is missing, builds twice and runs ctest:
#   build/          Release (CUDA too when nvcc is present; GPU tests skip without a GPU),
#   build-coverage/ gcov-instrumented, no CUDA; then coverage/coverage.sh enforces line coverage
#                   of common/ and ref/ >= 85%.
# Usage: scripts/test.sh [extra ctest arguments, e.g. -L unit]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)

echo "== Release build (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs" "$@"

echo "== Coverage build (build-coverage/)"
cmake -S . -B build-coverage -DCMAKE_BUILD_TYPE=Debug -DSG_COVERAGE=ON >/dev/null
cmake --build build-coverage -j"$jobs"
find build-coverage -name '*.gcda' -delete
ctest --test-dir build-coverage --output-on-failure -j"$jobs" "$@"
coverage/coverage.sh build-coverage

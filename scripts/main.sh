#!/usr/bin/env bash
# scripts/main.sh: the README's main command. Installs what is missing, builds (Release) and runs
# the main job on the committed default fixture: the reference decoder on the first request of the
# sequential workload, with the DSpark drafter's simulated hedged speculation (branch positions
# 0,1,2, hedge cap 8). Extra arguments go to `sparkgate generate`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
exec build/sparkgate generate --hedge-cap 8 --hedge-positions 0,1,2 "$@"

#!/usr/bin/env bash
# scripts/main.sh: the README's main command. Installs what is missing, builds (Release) and runs
# the main job, `sparkgate gate`, on the committed default fixture: every gate suite runs the
# hedged speculative decoder (engine, CPU backend) against the plain CPU reference decoder and
# prints one line per suite and a summary with the elapsed time. Exits with the gate's status
# (0 every suite passed, 1 a gate failed). Extra arguments go to `sparkgate gate` (for example
# --suite hedge_concurrent, --json report.json, --junit report.xml, --backend cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
exec build/sparkgate gate "$@"

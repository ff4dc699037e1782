#!/bin/bash
# Planned, not run (the sixth 2026-12-02 session's device time was spent: too little left to start a machine).
# c53: SG_CUDA_ATT_STORED_KEYS=5120 everywhere (two heads a block: 112 KB, room for a second block;
# four: 156 KB, one block an SM and 72 KB beside it, where the o projection's blocks started early
# can run: c52's 32-row verify of hedge3 at one request, o projection 19.9 -> 15.7 us) at 1, 4, 16
# and 64 requests, medians of three, against c50 (the waves condition) and c48 (8192, the rule).
# Build: build-gpu at 887950e; carry .deps and build-gpu.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; tar czf $OUT/c53.tgz -C /tmp r; }
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || { ts "fixture failed"; exit 1; }; ts fixture
timeout 120 env SG_CUDA_ATT_STORED_KEYS=5120 $S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4,16,64 \
  --modes plain,spec,hedge3 --max-new 48 --repeat 3 > /tmp/r/bench_5120.txt 2>&1; ts "bench rc=$?"
grep -E '^ +(1|4|16|64) (plain|spec|hedge3) ' /tmp/r/bench_5120.txt | awk '{printf "  %s %s %s %s verify %s\n", $1, $2, $3, $4, $11}'

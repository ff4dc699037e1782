#!/bin/bash
# c50: attention's two-block rule only for launches of more than two waves at one block an SM
# (att_stored's `blocks > 2 * sm_count`; c48/c49: at 4 requests, launches of 64 and 256 blocks,
# the rule cost plain and spec 2.6 %). The full GPU ctest on it, then the bench as medians of three
# at 1, 4, 16 and 64 requests (to compare with c48's 8192 and rule medians).
# Build: build-gpu at the change; carry .deps and build-gpu.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; tar czf $OUT/c50.tgz -C /tmp r; }
S=build-gpu/sparkgate
timeout 330 ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > /tmp/r/ctest_gpu.txt 2>&1
ts "ctest rc=$? $(grep -E 'tests passed' /tmp/r/ctest_gpu.txt)"
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || { ts "fixture failed"; exit 1; }; ts fixture
timeout 150 $S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4,16,64 --modes plain,spec,hedge3 \
  --max-new 48 --repeat 3 > /tmp/r/bench.txt 2>&1; ts "bench rc=$?"
grep -E '^ +(1|4|16|64) (plain|spec|hedge3) ' /tmp/r/bench.txt | awk '{printf "  %s %s %s %s verify %s\n", $1, $2, $3, $4, $11}'

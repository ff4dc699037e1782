#!/bin/bash
# The third 2026-12-02 session's second call, on the tree as it is (00a9046): the bench at 16 and
# 64 requests (every mode, one repeat; each mode must commit plain's tokens) and the GPU ctest.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c30.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
timeout 240 $S bench --backend cuda --fixture /tmp/q4b --concurrency 16,64 --modes plain,spec,hedge1,hedge2,hedge3 \
  --max-new 48 --json /tmp/r/bench_16_64.json > /tmp/r/bench_16_64.txt 2>&1; ts "bench rc=$?"
grep -E '^ +(16|64) (plain|spec|hedge[123]) |bandwidth' /tmp/r/bench_16_64.txt | cut -c1-110
timeout 280 ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > /tmp/r/ctest_gpu.txt 2>&1
ts "ctest rc=$? $(grep -E 'tests passed' /tmp/r/ctest_gpu.txt)"

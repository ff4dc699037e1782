#!/bin/bash
# Planned, not run (the sixth 2026-12-02 session's device time was spent: too little left to start
# a machine). What attention's footprint should leave beside it at one or two waves.
# 1. SG_CUDA_ATT_STORED_KEYS=5120 everywhere (2 heads a block: 112 KB, room for a second block;
#    4 heads: 156 KB, one block an SM and 72 KB beside it, where the o projection's blocks started
#    early can run: c52's 32-row verify of hedge3 at one request, o projection 19.9 -> 15.7 us) at
#    1, 4, 16 and 64 requests, medians of three, against c50 (the waves condition) and c48.
# 2. The footprint of 4-head blocks at one or two waves: stored 3072, 4096, 5120, 6144 (4 heads:
#    123, 139, 156, 172 KB) at spec 4 requests and hedge3 1 request, medians of three, each with
#    the kernel timeline (the verify's attention and the o projection after it, by grid).
# Build: build-gpu at main; carry .deps and build-gpu.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; tar czf $OUT/c53.tgz -C /tmp r; }
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || { ts "fixture failed"; exit 1; }; ts fixture
timeout 120 env SG_CUDA_ATT_STORED_KEYS=5120 $S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4,16,64 \
  --modes plain,spec,hedge3 --max-new 48 --repeat 3 > /tmp/r/bench_5120.txt 2>&1; ts "bench rc=$?"
grep -E '^ +(1|4|16|64) (plain|spec|hedge3) ' /tmp/r/bench_5120.txt | awk '{printf "  %s %s %s %s verify %s\n", $1, $2, $3, $4, $11}'
for k in 3072 4096 5120 6144; do
  for c in "4 spec" "1 hedge3"; do
    set -- $c
    timeout 60 env SG_CUDA_ATT_STORED_KEYS=$k $S bench --backend cuda --fixture /tmp/q4b --concurrency $1 \
      --modes $2 --max-new 48 --repeat 3 > /tmp/r/bench_${k}_$1_$2.txt 2>&1
    timeout 60 env SG_CUDA_ATT_STORED_KEYS=$k CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $S bench \
      --backend cuda --fixture /tmp/q4b --concurrency $1 --modes $2 --max-new 48 --repeat 1 > /tmp/r/timeline_${k}_$1_$2.txt 2>&1
    ts "stored $k $1 $2 rc=$? $(grep -E "^ +$1 $2 " /tmp/r/bench_${k}_$1_$2.txt | awk '{print $3, "verify", $11}')"
  done
done

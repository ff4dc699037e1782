#!/bin/bash
# c52: which attention launches make hedge3 at one request 2.5 % slower under the waves condition
# than with two blocks an SM for two heads a block (c51): the kernel timeline (per kernel and grid)
# of hedge3 at one request under the default, SG_CUDA_ATT_STORED_KEYS=5120 and 8192.
# Build: build-gpu at 887950e; carry .deps and build-gpu.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; tar czf $OUT/c52.tgz -C /tmp r; }
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || { ts "fixture failed"; exit 1; }; ts fixture
for k in default 5120 8192; do
  if [ $k = default ]; then E=""; else E="SG_CUDA_ATT_STORED_KEYS=$k"; fi
  timeout 60 env $E CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $S bench --backend cuda \
    --fixture /tmp/q4b --concurrency 1 --modes hedge3 --max-new 48 --repeat 1 > /tmp/r/timeline_1_hedge3_$k.txt 2>&1
  ts "timeline 1 hedge3 stored $k rc=$?"
  grep -E '^ +[0-9.]+ +[0-9.]+%' /tmp/r/timeline_1_hedge3_$k.txt | grep attention | head -12 | awk '{printf "  %s ms %s ln %s us/ln %s blocks\n", $1, $3, $4, $6}'
done

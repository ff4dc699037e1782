#!/bin/bash
# c51: one request, the waves condition (default) against two blocks an SM for the launches of two
# heads a block (SG_CUDA_ATT_STORED_KEYS=5120: c48's rule for them; launches of 4 heads a block,
# from 32 rows, get one block an SM under both), alternated twice, medians of three each: c50 read
# hedge3's verify at one request (28.9 rows) 4.595 ms where c47 (the rule, one run) read 4.465.
# Build: build-gpu at 887950e; carry .deps and build-gpu.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; tar czf $OUT/c51.tgz -C /tmp r; }
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || { ts "fixture failed"; exit 1; }; ts fixture
for i in 1 2; do
  for k in default 5120; do
    if [ $k = default ]; then E=""; else E="SG_CUDA_ATT_STORED_KEYS=$k"; fi
    timeout 80 env $E $S bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain,spec,hedge3 \
      --max-new 48 --repeat 3 > /tmp/r/bench_${k}_$i.txt 2>&1; ts "bench $k run $i rc=$?"
    grep -E '^ +1 (plain|spec|hedge3) ' /tmp/r/bench_${k}_$i.txt | awk '{printf "  %s %s %s %s verify %s drafter %s\n", $1, $2, $3, $4, $11, $15}'
  done
done

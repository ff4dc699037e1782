#!/bin/bash
# c48, planned by the fifth 2026-12-02 session (not run there): the full GPU ctest on the final GPU code
# (6eba56b), attention under compute-sanitizer, the stored-score rule against 8192 as medians of three.
# The results are tarred after every step, so a run cut at the limit keeps them.
# Build: build-gpu at main; carry .deps and build-gpu.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; tar czf $OUT/c48.tgz -C /tmp r; }
S=build-gpu/sparkgate
timeout 330 ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > /tmp/r/ctest_gpu.txt 2>&1
ts "ctest rc=$? $(grep -E 'tests passed' /tmp/r/ctest_gpu.txt)"
for t in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $t $S ops check --op attention > /tmp/r/$t.txt 2>&1
  ts "$t rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/r/$t.txt)"
done
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || { ts "fixture failed"; exit 1; }; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 4,16,64 --modes plain,spec,hedge3 --max-new 48 --repeat 3"
for k in 8192 rule; do
  if [ $k = rule ]; then E=""; else E="SG_CUDA_ATT_STORED_KEYS=$k"; fi
  timeout 250 env $E $S $A > /tmp/r/bench_att_$k.txt 2>&1; ts "bench stored $k rc=$?"
  grep -E '^ +(4|16|64) (plain|spec|hedge3) ' /tmp/r/bench_att_$k.txt | awk '{printf "  %s %s %s %s verify %s\n", $1, $2, $3, $4, $11}'
done

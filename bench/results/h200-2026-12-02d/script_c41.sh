#!/bin/bash
# The final GPU code (gemm_wgmma back to 4 stages, 2 ahead: c40 measured 6 and 4 slower in the
# library): the GPU ctest (build-gpu) and ops perf at 128-2048 rows.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c41.tgz -C /tmp r' EXIT
timeout 60 build-gpu/sparkgate ops perf --op gemm --rows 128,512,2048 > /tmp/r/perf_final.txt 2>&1; ts "perf rc=$?"
awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $1, $2, $5, $8}' /tmp/r/perf_final.txt | tr '\n' ';'; echo
timeout 400 ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > /tmp/r/ctest_gpu.txt 2>&1
ts "ctest rc=$? $(grep -E 'tests passed' /tmp/r/ctest_gpu.txt)"; grep -E "Test +#" /tmp/r/ctest_gpu.txt | head -3
build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
timeout 60 build-gpu/sparkgate bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge3 --max-new 64 --repeat 1 > /tmp/r/bench_1_4.txt 2>&1; ts "bench rc=$?"
grep -E '^ +[14] (plain|spec|hedge3) ' /tmp/r/bench_1_4.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'

#!/bin/bash
# The K split under compute-sanitizer memcheck (the products it takes: k_proj, o_proj, down_proj,
# fc at 65, 200 and 256 rows; 200: a second row tile partly past M), then the kernel timeline of
# the bench at 16 requests (plain, spec, hedge3), to see where a verify of about 128 rows goes.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c44.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate
timeout 200 compute-sanitizer --tool memcheck $S ops perf --op gemm --weight k_proj,o_proj,down_proj,fc --rows 65,200,256 > /tmp/r/memcheck_ks.txt 2>&1
ts "memcheck rc=$? $(grep -E 'ERROR SUMMARY' /tmp/r/memcheck_ks.txt)"
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
for m in plain spec hedge3; do
  timeout 120 env CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $S bench --backend cuda --fixture /tmp/q4b \
    --concurrency 16 --modes $m --max-new 48 --repeat 1 > /tmp/r/timeline_16_$m.txt 2>&1; ts "timeline $m rc=$?"
done

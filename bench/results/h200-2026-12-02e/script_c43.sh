#!/bin/bash
# gemm_wgmma's K split as landed (wgmma_parts: past 64 rows, products of at least 16 segments or
# of at most sm_count / 8 tiles), built in build-gpu: the GEMM ops' checks, ops perf at 65-512 rows
# with the split on (default) and off (SG_CUDA_GEMM_WGMMA_KS=0), the bench at 1, 4, 16 and 64
# requests, then the GPU ctest.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c43.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate
for op in gemm gemm_group gemm_swiglu gemm_logits markov_step; do
  timeout 120 $S ops check --op $op > /tmp/r/check_$op.txt 2>&1; ts "check $op rc=$? $(tail -n 1 /tmp/r/check_$op.txt)"
done
P="ops perf --op gemm --rows 65,128,256,512"
for ks in 0 1; do timeout 90 env SG_CUDA_GEMM_WGMMA_KS=$ks $S $P > /tmp/r/perf_ks$ks.txt 2>&1; ts "perf ks=$ks rc=$?"; done
paste <(awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $1, $2, $5, $8}' /tmp/r/perf_ks0.txt) \
      <(awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $5}' /tmp/r/perf_ks1.txt) \
  | awk 'BEGIN {print "weight M ks0_us cublas_us | ks1_us"} {print}'
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
timeout 150 $S bench --backend cuda --fixture /tmp/q4b --concurrency 16,64 --modes plain,spec,hedge3 --max-new 48 --repeat 1 > /tmp/r/bench_16_64.txt 2>&1; ts "bench 16,64 rc=$?"
timeout 90 $S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge3 --max-new 64 --repeat 1 > /tmp/r/bench_1_4.txt 2>&1; ts "bench 1,4 rc=$?"
grep -hE '^ +(1|4|16|64) (plain|spec|hedge3) ' /tmp/r/bench_1_4.txt /tmp/r/bench_16_64.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
rm -rf /tmp/q4b
timeout 330 ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > /tmp/r/ctest_gpu.txt 2>&1
ts "ctest rc=$? $(grep -E 'tests passed' /tmp/r/ctest_gpu.txt)"; grep -E "Test +#" /tmp/r/ctest_gpu.txt | head -20

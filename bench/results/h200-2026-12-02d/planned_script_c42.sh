#!/bin/bash
# Planned, not run (the session's device time was spent): gemm_wgmma with a K split for products
# of few tiles (wgmma_ksplit_0d1204d.patch: past 64 rows, a product of fewer 128 x 128 tiles than
# SMs splits K over P blocks a tile, P = SMs / tiles at most half the segments; each block parks
# its segments in gemm_tiled's 64 x 64 park layout and gemm_park_fold folds them in s order;
# SG_CUDA_GEMM_WGMMA_KS=0 turns it off, the tree's choice). It compiles, ptxas: 177 registers, no
# local memory. The default ops check takes it at the sweep's 65- and 256-row prefixes (q, k, o,
# down, fc), so the bits are compared with the other kernels there. Then ops perf at 65-512 rows
# with and without it, and the bench at 16 and 64 requests (verifies of about 128 and 512 rows).
# Build: the patch applied, libsparkgate.so and sparkgate copied to exp/ks; carry .deps.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c42.tgz -C /tmp r' EXIT
K="env LD_LIBRARY_PATH=$PWD/exp/ks:$LD_LIBRARY_PATH exp/ks/sparkgate"
for op in gemm gemm_group gemm_swiglu gemm_logits; do
  timeout 120 $K ops check --op $op > /tmp/r/check_$op.txt 2>&1; ts "check $op rc=$? $(tail -n 1 /tmp/r/check_$op.txt)"
done
P="ops perf --op gemm --rows 65,128,256,512"
for ks in 0 1; do timeout 90 env SG_CUDA_GEMM_WGMMA_KS=$ks $K $P > /tmp/r/perf_ks$ks.txt 2>&1; ts "perf ks=$ks rc=$?"; done
paste <(awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $1, $2, $5, $8}' /tmp/r/perf_ks0.txt) \
      <(awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $5}' /tmp/r/perf_ks1.txt) \
  | awk 'BEGIN {print "weight M ks0_us cublas_us | ks1_us"} {print}'
$K fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 16,64 --modes plain,spec,hedge3 --max-new 48 --repeat 1"
for ks in 0 1; do
  timeout 150 env SG_CUDA_GEMM_WGMMA_KS=$ks $K $A > /tmp/r/bench_ks$ks.txt 2>&1; ts "bench ks=$ks rc=$?"
  grep -E '^ +(16|64) (plain|spec|hedge3) ' /tmp/r/bench_ks$ks.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done

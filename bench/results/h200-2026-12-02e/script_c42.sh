#!/bin/bash
# Fifth 2026-12-02 session, first call: the planned c42 (bench/results/h200-2026-12-02d/
# planned_script_c42.sh: gemm_wgmma's K split for products of few tiles, wgmma_ksplit_0d1204d.patch,
# built into exp/ks) with markov_step's check added, then the four standalone wgmma records, which
# had not run since f89e3fc moved their shared helpers into wgmma_test.cuh (built here with
# nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -O2 F -lcublas into exp/rec).
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c42.tgz -C /tmp r' EXIT
K="env LD_LIBRARY_PATH=$PWD/exp/ks:$LD_LIBRARY_PATH exp/ks/sparkgate"
for op in gemm gemm_group gemm_swiglu gemm_logits markov_step; do
  timeout 120 $K ops check --op $op > /tmp/r/check_$op.txt 2>&1; ts "check $op rc=$? $(tail -n 1 /tmp/r/check_$op.txt)"
done
P="ops perf --op gemm --rows 65,128,256,512"
for ks in 0 1; do timeout 90 env SG_CUDA_GEMM_WGMMA_KS=$ks $K $P > /tmp/r/perf_ks$ks.txt 2>&1; ts "perf ks=$ks rc=$?"; done
paste <(awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $1, $2, $5, $8}' /tmp/r/perf_ks0.txt) \
      <(awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $5}' /tmp/r/perf_ks1.txt) \
  | awk 'BEGIN {print "weight M ks0_us cublas_us | ks1_us"} {print}'
timeout 60 exp/rec/wgmma_bits > /tmp/r/wgmma_bits.txt 2>&1; ts "wgmma_bits rc=$? $(tail -n 1 /tmp/r/wgmma_bits.txt)"
timeout 60 exp/rec/wgmma_natural_steps > /tmp/r/wgmma_natural_steps.txt 2>&1; ts "wgmma_natural_steps rc=$? $(tail -n 1 /tmp/r/wgmma_natural_steps.txt)"
timeout 120 exp/rec/wgmma_rs_gemm > /tmp/r/wgmma_rs_gemm.txt 2>&1; ts "wgmma_rs_gemm rc=$?"; tail -n 12 /tmp/r/wgmma_rs_gemm.txt
timeout 150 exp/rec/wgmma_fold_gemm > /tmp/r/wgmma_fold_gemm.txt 2>&1; ts "wgmma_fold_gemm rc=$?"; tail -n 8 /tmp/r/wgmma_fold_gemm.txt
$K fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 16,64 --modes plain,spec,hedge3 --max-new 48 --repeat 1"
for ks in 0 1; do
  timeout 150 env SG_CUDA_GEMM_WGMMA_KS=$ks $K $A > /tmp/r/bench_ks$ks.txt 2>&1; ts "bench ks=$ks rc=$?"
  grep -E '^ +(16|64) (plain|spec|hedge3) ' /tmp/r/bench_ks$ks.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done

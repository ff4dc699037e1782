#!/bin/bash
# gemm_wgmma, the wgmma kernel in gemm.cu's order of today (weights from registers, x permuted
# once in global memory): the standalone record wgmma_rs_gemm.cu (bits against the contract chain,
# time, 8 Qwen3-4B shapes), then the library with it (exp/wg) against the tree (b938d77, exp/base):
# ops check of every GEMM op (as built, and with SG_CUDA_GEMM_WGMMA=2: every product it can take),
# a negative control, ops perf 64-2048 rows, bench at 16 and 64 requests.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
trap 'tar czf $OUT/c39.tgz -C /tmp r' EXIT
D=bench/results/h200-2026-12-02d
nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -O2 $D/wgmma_rs_gemm.cu -lcublas -o /tmp/wrs > /tmp/r/build.txt 2>&1; ts "build rc=$?"
timeout 120 /tmp/wrs > /tmp/r/wgmma_rs_gemm.txt 2>&1; ts "wgmma_rs_gemm rc=$?"; cat /tmp/r/wgmma_rs_gemm.txt
W=$(bin wg)
for op in gemm gemm_group gemm_swiglu gemm_logits markov_step; do
  timeout 120 $W ops check --op $op > /tmp/r/check_$op.txt 2>&1; ts "check $op rc=$? $(tail -n 1 /tmp/r/check_$op.txt)"
done
timeout 120 env SG_CUDA_GEMM_WGMMA=2 $W ops check --op gemm > /tmp/r/check_gemm_wgmma2.txt 2>&1; ts "check gemm (every product) rc=$? $(tail -n 1 /tmp/r/check_gemm_wgmma2.txt)"
# Negative control (negative_control_one_chain.patch, exp/wgbug): gemm_wgmma chaining its k-steps
# over all of K instead of folding segments: within the tolerance, but other bits; must fail.
timeout 120 $(bin wgbug) ops check --op gemm > /tmp/r/check_gemm_negative.txt 2>&1; ts "check gemm, negative control, rc=$? (must be non-zero) $(tail -n 1 /tmp/r/check_gemm_negative.txt)"
grep -m3 -iE "fail|differ" /tmp/r/check_gemm_negative.txt | cut -c1-200
P="ops perf --op gemm --rows 64,128,512,2048"
for v in base wg; do timeout 90 $(bin $v) $P > /tmp/r/perf_$v.txt 2>&1; ts "perf $v rc=$?"; done
paste <(awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $1, $2, $5, $8}' /tmp/r/perf_base.txt) \
      <(awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $5}' /tmp/r/perf_wg.txt) \
  | awk 'BEGIN {print "weight M base_us cublas_us | wg_us"} {print}'
$(bin base) fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 16,64 --modes plain,spec,hedge3 --max-new 48 --repeat 1"
for v in base wg; do
  timeout 150 $(bin $v) $A > /tmp/r/bench_$v.txt 2>&1; ts "bench $v rc=$?"
  grep -E '^ +(16|64) (plain|spec|hedge3) ' /tmp/r/bench_$v.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done

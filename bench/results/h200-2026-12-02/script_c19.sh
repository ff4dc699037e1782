#!/bin/bash
# gemm_tiled's K split over blocks (KS: P blocks per tile park their segment values,
# gemm_park_fold folds them in s order) against the tree (base): bits, ops perf at 24-128 rows,
# decode A/B. ks = default routing (the split only where gemm_tiled already runs with few
# tiles); ks32 / ks16 = SG_CUDA_GEMM_SPLIT_MAX_M 32 / 16 (33-64 / 17-64 rows of products
# gemm_band does not take through gemm_tiled, so its split).
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
trap 'tar czf $OUT/c19.tgz -C /tmp r' EXIT
K=$(bin ks)
for op in gemm gemm_group gemm_swiglu gemm_logits; do
  $K ops check --op $op > /tmp/r/check_$op.txt 2>&1; ts "check $op rc=$? $(tail -n 1 /tmp/r/check_$op.txt)"
done
SG_CUDA_GEMM_SPLIT_MAX_M=0 $K ops check --op gemm > /tmp/r/check_gemm_max0.txt 2>&1; ts "check gemm max_m=0 rc=$? $(tail -n 1 /tmp/r/check_gemm_max0.txt)"
SG_CUDA_GEMM_SPLIT_MAX_M=0 SG_CUDA_GEMM_KSPLIT=7 $K ops check --op gemm > /tmp/r/check_gemm_max0_p7.txt 2>&1; ts "check gemm max_m=0 P=7 rc=$? $(tail -n 1 /tmp/r/check_gemm_max0_p7.txt)"
SG_CUDA_GEMM_SPLIT_MAX_M=0 SG_CUDA_GEMM_KSPLIT=7 $K ops check --op gemm_group > /tmp/r/check_group_max0_p7.txt 2>&1; ts "check group max_m=0 P=7 rc=$? $(tail -n 1 /tmp/r/check_group_max0_p7.txt)"
P="ops perf --op gemm --weight q_proj,k_proj,o_proj,gate_proj,down_proj,fc --rows 24,32,48,64,96,128"
$(bin base) $P > /tmp/r/perf_base.txt 2>&1; ts "perf base rc=$?"
$K $P > /tmp/r/perf_ks.txt 2>&1; ts "perf ks rc=$?"
for p in 0 1 2 4 8; do
  SG_CUDA_GEMM_SPLIT_MAX_M=16 SG_CUDA_GEMM_KSPLIT=$p $K $P > /tmp/r/perf_ks16_p$p.txt 2>&1; ts "perf ks16 P=$p rc=$?"
done
paste <(awk '$1 ~ /^(q_proj|k_proj|o_proj|gate_proj|down_proj|fc)$/ && NF == 9 {print $1, $2, $5, $8}' /tmp/r/perf_base.txt) \
      <(awk '$1 ~ /^(q_proj|k_proj|o_proj|gate_proj|down_proj|fc)$/ && NF == 9 {print $5}' /tmp/r/perf_ks.txt) \
      <(for p in 0 1 2 4 8; do awk '$1 ~ /^(q_proj|k_proj|o_proj|gate_proj|down_proj|fc)$/ && NF == 9 {print $5}' /tmp/r/perf_ks16_p$p.txt > /tmp/r/col_$p; done; paste /tmp/r/col_0 /tmp/r/col_1 /tmp/r/col_2 /tmp/r/col_4 /tmp/r/col_8) \
  | awk 'BEGIN {print "weight M base cublas | ks | ks16: P0 rule P2 P4 P8"} {print}'
build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4,16 --modes spec,hedge1,hedge3 --max-new 48 --repeat 2"
for rep in 1 2; do for v in base ks ks32 ks16; do
  case $v in ks32) E="SG_CUDA_GEMM_SPLIT_MAX_M=32"; b=ks;; ks16) E="SG_CUDA_GEMM_SPLIT_MAX_M=16"; b=ks;; *) E=""; b=$v;; esac
  env $E $(bin $b) $A > /tmp/r/bench_${v}_$rep.txt 2>&1; ts "bench $v $rep rc=$?"
  grep -E '^ +(1|4|16) (spec|hedge1|hedge3) ' /tmp/r/bench_${v}_$rep.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done; done

#!/bin/bash
# The kept form (ks2): past 32 rows gemm_tiled for every product, its K split over blocks for one
# row tile of fewer tiles than SMs (P by the occupancy calculator, at most S/2); gemm_split's
# 33-64-row tiles removed. Against the tree (base): bits, ops perf at 33-96 rows, decode A/B
# (two alternating pairs), then the kept tree's GPU ctest, bench and ops perf --op gemm (goal).
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
trap 'tar czf $OUT/c20.tgz -C /tmp r' EXIT
K=$(bin ks2)
for op in gemm gemm_group gemm_swiglu gemm_logits markov_step; do
  $K ops check --op $op > /tmp/r/check_$op.txt 2>&1; ts "check $op rc=$? $(tail -n 1 /tmp/r/check_$op.txt)"
done
P="ops perf --op gemm --weight q_proj,k_proj,o_proj,gate_proj,down_proj,fc --rows 33,40,48,56,64,96"
$(bin base) $P > /tmp/r/perf_base.txt 2>&1; ts "perf base rc=$?"
$K $P > /tmp/r/perf_ks2.txt 2>&1; ts "perf ks2 rc=$?"
paste <(awk '$1 ~ /^(q_proj|k_proj|o_proj|gate_proj|down_proj|fc)$/ && NF == 9 {print $1, $2, $5, $8}' /tmp/r/perf_base.txt) \
      <(awk '$1 ~ /^(q_proj|k_proj|o_proj|gate_proj|down_proj|fc)$/ && NF == 9 {print $5}' /tmp/r/perf_ks2.txt) \
  | awk 'BEGIN {print "weight M base cublas | ks2"} {print}'
build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4,16 --modes spec,hedge1,hedge3 --max-new 48 --repeat 2"
for rep in 1 2; do for v in base ks2; do
  $(bin $v) $A > /tmp/r/ab_${v}_$rep.txt 2>&1; ts "ab $v $rep rc=$?"
  grep -E '^ +(1|4|16) (spec|hedge1|hedge3) ' /tmp/r/ab_${v}_$rep.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done; done
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > /tmp/r/ctest_gpu.txt 2>&1; ts "ctest rc=$? $(grep -E 'tests passed' /tmp/r/ctest_gpu.txt)"
$K bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge2,hedge3 --max-new 64 --repeat 3 --json /tmp/r/final_bench.json > /tmp/r/final_bench.txt 2>&1; ts "bench rc=$?"
grep -E '^ +[14] (plain|spec|hedge[123]) |bandwidth|  (plain|spec|verify|drafter|Markov|ladder)' /tmp/r/final_bench.txt | cut -c1-100
$K ops perf --op gemm --json /tmp/r/ops_perf_gemm.json > /tmp/r/ops_perf_gemm.txt 2>&1; ts "ops perf gemm rc=$?"; grep -A9 'GEMM goal' /tmp/r/ops_perf_gemm.txt

#!/bin/bash
# The natural k-step order by two 8-byte loads per lane (natural_steps_8byte_00a9046.patch, in
# bench/results/h200-2026-12-02c/: global loads in the register paths, two 8-byte shared-memory
# reads in the ring, band and tiled kernels) against the tree (b938d77, gpu/ as 051e77c): bits
# (ops check of every GEMM op), ops perf at 1-64 rows, decode A/B (two alternating pairs).
# Build: the patch applied, libsparkgate.so and sparkgate copied to exp/nat8, the tree's to
# exp/base; carry .deps.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
trap 'tar czf $OUT/c38.tgz -C /tmp r' EXIT
N=$(bin nat8)
for op in gemm gemm_group gemm_swiglu gemm_logits markov_step; do
  timeout 120 $N ops check --op $op > /tmp/r/check_$op.txt 2>&1; ts "check $op rc=$? $(tail -n 1 /tmp/r/check_$op.txt)"
done
P="ops perf --op gemm --rows 1,8,16,32,64"
for v in base nat8; do timeout 60 $(bin $v) $P > /tmp/r/perf_$v.txt 2>&1; ts "perf $v rc=$?"; done
paste <(awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $1, $2, $5, $8}' /tmp/r/perf_base.txt) \
      <(awk 'NF == 9 && $2 ~ /^[0-9]+$/ {print $5}' /tmp/r/perf_nat8.txt) \
  | awk 'BEGIN {print "weight M base_us cublas_us | nat8_us"} {print}'
$(bin base) fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge3 --max-new 64 --repeat 1"
for rep in 1 2; do for v in base nat8; do
  timeout 90 $(bin $v) $A > /tmp/r/ab_${v}_$rep.txt 2>&1; ts "ab $v $rep rc=$?"
  grep -E '^ +[14] (plain|spec|hedge3) ' /tmp/r/ab_${v}_$rep.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done; done

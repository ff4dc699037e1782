#!/bin/bash
# Second 2026-12-02 session, call 1: attention's expf table in shared memory (loaded before the
# PDL wait; SG_EXP_ATT bit 1), attention's first K/V tile prefetched into L2 before the wait (bit
# 2), the norms as programmatic dependents with their weights loaded before the wait (SG_EXP_NORM).
# Bits, then decode A/B alternating, then one timeline each of off and all.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c23.tgz -C /tmp r' EXIT
E="env LD_LIBRARY_PATH=$PWD/exp/e1:$LD_LIBRARY_PATH exp/e1/sparkgate"
for op in attention add_rmsnorm rmsnorm; do
  env SG_EXP_ATT=3 SG_EXP_NORM=1 $E ops check --op $op > /tmp/r/check_$op.txt 2>&1; ts "check $op rc=$? $(tail -n 1 /tmp/r/check_$op.txt)"
done
env SG_EXP_ATT=1 $E ops check --op attention > /tmp/r/check_attention_1.txt 2>&1; ts "check att1 rc=$? $(tail -n 1 /tmp/r/check_attention_1.txt)"
build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain,spec --max-new 64 --repeat 2"
run() { # name att norm rep
  env SG_EXP_ATT=$2 SG_EXP_NORM=$3 $E $A > /tmp/r/ab_$1_$4.txt 2>&1; ts "ab $1 $4 rc=$?"
  grep -E '^ +1 (plain|spec) ' /tmp/r/ab_$1_$4.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s\n", $1, $2, $3, $11, $15}'
}
for rep in 1 2; do run off 0 0 $rep; run att3 3 0 $rep; run norm 0 1 $rep; run all 3 1 $rep; done
T="bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain --max-new 64 --repeat 1"
for v in off:0:0 all:3:1; do IFS=: read n a m <<< "$v"
  env SG_EXP_ATT=$a SG_EXP_NORM=$m CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $E $T 2>&1 | c++filt > /tmp/r/tl_$n.txt; ts "tl $n"
  grep -E "attention_k|rmsnorm_k|qk_norm|^ +1 plain" /tmp/r/tl_$n.txt | cut -c1-90 | head -8
done

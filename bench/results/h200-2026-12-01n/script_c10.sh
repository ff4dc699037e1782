#!/bin/bash
# 32 x 16 tiles (17-32 rows, K <= 4096) with one weight register set (sb) and also 4 chunks of x
# in flight (sb4); warps per block by the model or forced to 6 / 8
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { case $1 in base) echo "$S";; *) echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate";; esac; }
P="ops perf --op gemm --weight q_proj,k_proj,o_proj --rows 17,24,32"
for t in sb sb4; do $(bin $t) ops check --op gemm > $OUT/r/check_$t.txt 2>&1; ts "check $t rc=$? $(tail -1 $OUT/r/check_$t.txt)"; done
for rep in 1 2; do for t in base sb sb4; do for w in 0 6 8; do
  SG_CUDA_GEMM_SPLIT_WARPS=$w $(bin $t) $P > $OUT/r/perf_${t}_w${w}_$rep.txt 2>&1; ts "$t w$w $rep rc=$?"
done; done; done

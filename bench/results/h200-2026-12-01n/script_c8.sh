#!/bin/bash
# bound: both x and the weights of every segment read from segment 0 (timing only, wrong bits)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { case $1 in base) echo "$S";; *) echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate";; esac; }
for rep in 1 2; do for t in base bothfree; do
  $(bin $t) ops perf --op gemm --rows 1,8,16,24,32,48,64 > $OUT/r/bound_perf_${t}_$rep.txt 2>&1; ts "perf $t $rep rc=$?"
done; done

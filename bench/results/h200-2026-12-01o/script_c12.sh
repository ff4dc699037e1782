#!/bin/bash
# c11 follow-up: base vs wb1b (and wb1a), three more alternating pairs; ops perf again (c11's came back
# over the file count); everything in one tarball.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
for v in base wb1a wb1b; do
  $(bin $v) ops perf --op gemm --weight q_proj,k_proj,o_proj,down_proj,fc --rows 9,16,24,32,48,64 > /tmp/r/perf_$v.txt 2>&1; ts "perf $v"
done
[ -d /tmp/q4b ] || { build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture; }
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes spec,hedge1,hedge3 --max-new 48 --repeat 2"
for rep in 3 4 5; do for v in base wb1a wb1b; do
  $(bin $v) $A > /tmp/r/bench_${v}_$rep.txt 2>&1; ts "bench $v $rep rc=$?"
  grep -E '^ +[14] (spec|hedge1|hedge3) ' /tmp/r/bench_${v}_$rep.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done; done
tar czf $OUT/c12.tgz -C /tmp r

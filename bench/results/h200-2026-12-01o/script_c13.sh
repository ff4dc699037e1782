#!/bin/bash
# wb1a (one weight set for the 32 x 16 tile from a tile per SM) vs wb1c (also the 16 x 16 tile
# where K <= 4096) vs wb1b vs base: ops perf, three alternating decode pairs, then the GPU ctest
# on the kept one (wb1c if its verify is faster than wb1a's at hedge1 N=1 and in sum in every pair).
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
trap 'tar czf $OUT/c13.tgz -C /tmp r' EXIT
for op in gemm gemm_swiglu; do $(bin wb1c) ops check --op $op > /tmp/r/check_wb1c_$op.txt 2>&1; ts "check wb1c $op rc=$? $(tail -1 /tmp/r/check_wb1c_$op.txt)"; done
for v in base wb1a wb1b wb1c; do
  $(bin $v) ops perf --op gemm --weight q_proj,o_proj,gate_proj,down_proj --rows 12,15,16,24,32 > /tmp/r/perf_$v.txt 2>&1; ts "perf $v"
done
build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes spec,hedge1,hedge3 --max-new 48 --repeat 2"
for rep in 1 2 3; do for v in base wb1a wb1b wb1c; do
  $(bin $v) $A > /tmp/r/bench_${v}_$rep.txt 2>&1; ts "bench $v $rep rc=$?"
  grep -E '^ +[14] (spec|hedge1|hedge3) ' /tmp/r/bench_${v}_$rep.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done; done
vt() { grep -E "^ +$2 $3 " /tmp/r/bench_$1_$4.txt | awk '{print $11}'; }
sum() { grep -E '^ +[14] (spec|hedge1|hedge3) ' /tmp/r/bench_$1_$2.txt | awk '{s+=$11} END{print s}'; }
keep=wb1c
for rep in 1 2 3; do
  awk -v a="$(vt wb1c 1 hedge1 $rep)" -v b="$(vt wb1a 1 hedge1 $rep)" -v c="$(sum wb1c $rep)" -v d="$(sum wb1a $rep)" 'BEGIN{exit !(a<b && c<d)}' || keep=wb1a
done
ts "keep=$keep"
cp exp/$keep/libsparkgate.so build-gpu/libsparkgate.so
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > /tmp/r/ctest_gpu_$keep.txt 2>&1; ts "ctest $keep rc=$? $(grep -E 'tests passed' /tmp/r/ctest_gpu_$keep.txt)"

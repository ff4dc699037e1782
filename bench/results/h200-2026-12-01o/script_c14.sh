#!/bin/bash
# At a1eac2a (one weight set for 16-column tiles from a tile per SM): spec at 1 request against
# base in the reverse order (HEAD first: is c13's -1 % an order effect?), ops perf (the goal),
# the full bench, then the GPU ctest.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
trap 'tar czf $OUT/c14.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain,spec --max-new 48 --repeat 3"
for rep in 1 2 3 4; do for v in wb1c base; do
  $(bin $v) $A > /tmp/r/ab_${v}_$rep.txt 2>&1; ts "ab $v $rep rc=$?"
  grep -E '^ +1 (plain|spec) ' /tmp/r/ab_${v}_$rep.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done; done
$S ops perf --json /tmp/r/ops_perf.json > /tmp/r/ops_perf.txt 2>&1; ts "ops perf rc=$?"; grep -A12 'GEMM goal' /tmp/r/ops_perf.txt
$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge2,hedge3 --max-new 64 --repeat 3 --json /tmp/r/final_bench.json > /tmp/r/final_bench.txt 2>&1; ts "bench rc=$?"
grep -E '^ +[14] (plain|spec|hedge[123]) |bandwidth' /tmp/r/final_bench.txt | cut -c1-60
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > /tmp/r/ctest_gpu.txt 2>&1; ts "ctest rc=$? $(grep -E 'tests passed' /tmp/r/ctest_gpu.txt)"

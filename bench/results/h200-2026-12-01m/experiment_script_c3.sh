#!/bin/bash
# call 3: add_rmsnorm stages the squares (fp32) instead of the row, warp 0 only adds them
# build-gpu: new; exp/base: ad2b25c
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { case $1 in new) echo "$S";; *) echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate";; esac; }
for op in add_rmsnorm rmsnorm; do $S ops check --op $op > $OUT/r/check_$op.txt 2>&1; ts "check $op rc=$? $(tail -1 $OUT/r/check_$op.txt)"; done
for t in base new; do $(bin $t) ops perf --op add_rmsnorm > $OUT/r/perf_add_rmsnorm_$t.txt 2>&1; ts "perf $t"; grep -E "^add_rmsnorm" $OUT/r/perf_add_rmsnorm_$t.txt; done
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
B="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1; $(bin ${tag%_*}) $B --json $OUT/r/$tag.json > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s markov %s ladder %s\n", $1, $2, $3, $11, $15, $19, $23}'; grep -E "^sparkgate: " $OUT/r/$tag.txt | head -3; }
run base_1; run new_1; run base_2; run new_2; run base_3; run new_3
T="bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain --max-new 64 --repeat 1"
for t in base new; do CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $(bin $t) $T > $OUT/r/tl_$t.txt 2>&1; ts "timeline $t rc=$?"; grep -E "norms_cu|attention_k" $OUT/r/tl_$t.txt | head -4 | cut -c1-110; done
ts done

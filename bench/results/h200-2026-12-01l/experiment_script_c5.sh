#!/bin/bash
# call 5: the selection's stage 1 loads 8 values per thread before comparing (one round trip for a 151936-value row): build-gpu; exp/cur: from_end + one ring stage
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { case $1 in new) echo "$S";; *) echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate";; esac; }
for op in top2 argmax markov_step; do $S ops check --op $op > $OUT/r/check_$op.txt 2>&1; ts "check $op rc=$? $(tail -1 $OUT/r/check_$op.txt)"; done
for t in cur new; do $(bin $t) ops perf --op top2 > $OUT/r/perf_top2_$t.txt 2>&1; $(bin $t) ops perf --op argmax > $OUT/r/perf_argmax_$t.txt 2>&1; ts "perf $t"; grep -hE "^(top2|argmax) " $OUT/r/perf_top2_$t.txt $OUT/r/perf_argmax_$t.txt; done
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
B="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1; $(bin ${tag%_*}) $B --json $OUT/r/$tag.json > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s markov %s ladder %s\n", $1, $2, $3, $11, $15, $19, $23}'; grep -E "^sparkgate: " $OUT/r/$tag.txt | head -3; }
for t in cur new; do env CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so SG_TIMELINE_CSV=$OUT/r/tl_$t.csv $(bin $t) bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain,spec --max-new 32 --repeat 1 > $OUT/r/tl_$t.txt 2>&1; ts "tl $t rc=$?"; gzip $OUT/r/tl_$t.csv; done
run cur_1; run new_1; run cur_2; run new_2
ts done

#!/bin/bash
# call 4: one ring stage where no warp has a second item (markov_w2's blocks: 6 -> 8 per SM), on top of w2 from the end
# build-gpu: both; exp/fe: from_end only; exp/base: 370df75
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { case $1 in new) echo "$S";; *) echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate";; esac; }
for op in gemm markov_step gemm_logits; do $S ops check --op $op > $OUT/r/check_$op.txt 2>&1; ts "check $op rc=$? $(tail -1 $OUT/r/check_$op.txt)"; done
SG_CUDA_GEMM_FROM_END=1 $S ops check --op gemm > $OUT/r/check_fromend_gemm.txt 2>&1; ts "check from_end gemm rc=$? $(tail -1 $OUT/r/check_fromend_gemm.txt)"
P="ops perf --op gemm --size tiny --rows 1,3,8"
for t in base new; do $(bin $t) $P --weight markov_w2 > $OUT/r/perf_w2_$t.txt 2>&1; ts "perf w2 $t"; grep -E "^markov_w2" $OUT/r/perf_w2_$t.txt; done
for tb in 2 8; do SG_CUDA_GEMM_SPLIT_TB=$tb $S $P --weight markov_w2 > $OUT/r/perf_w2_tb$tb.txt 2>&1; ts "perf w2 tb$tb"; grep -E "^markov_w2" $OUT/r/perf_w2_tb$tb.txt; done
for t in base new base new; do $(bin $t) ops perf --op gemm --size tiny --rows 1,8 > $OUT/r/perf_all_$t.txt 2>&1; ts "perf all $t"; grep -E "^(q_proj|k_proj|o_proj|gate_proj|down_proj|fc|lm_head|markov_w2) " $OUT/r/perf_all_$t.txt | awk '{printf "%s/%s %s  ", $1, $2, $5}'; echo; done
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
B="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1; $(bin ${tag%_*}) $B --json $OUT/r/$tag.json > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s markov %s ladder %s\n", $1, $2, $3, $11, $15, $19, $23}'; grep -E "^sparkgate: " $OUT/r/$tag.txt | head -3; }
run base_1; run new_1; run fe_1; run base_2; run new_2
ts done

#!/bin/bash
# call 2: weight loads L2 evict_first (no hint when off), norm without a staged row, attention/rope load order
# build-gpu: new; exp/base: ad2b25c
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { case $1 in new) echo "$S";; ef1) echo "env SG_CUDA_GEMM_EVICT_FIRST=1 $S";; nl1) echo "env SG_EXP_NORM_LANES=1 $S";; both) echo "env SG_EXP_NORM_LANES=1 SG_CUDA_GEMM_EVICT_FIRST=1 $S";; *) echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate";; esac; }
for op in gemm gemm_swiglu; do SG_CUDA_GEMM_EVICT_FIRST=1 $S ops check --op $op > $OUT/r/check_ef1_$op.txt 2>&1; ts "check ef1 $op rc=$? $(tail -1 $OUT/r/check_ef1_$op.txt)"; done
for op in rmsnorm add_rmsnorm; do SG_EXP_NORM_LANES=1 $S ops check --op $op > $OUT/r/check_nl1_$op.txt 2>&1; ts "check nl1 $op rc=$? $(tail -1 $OUT/r/check_nl1_$op.txt)"; done
$S ops check --op markov_step > $OUT/r/check_markov_step.txt 2>&1; ts "check markov_step rc=$? $(tail -1 $OUT/r/check_markov_step.txt)"
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
B="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1; $(bin ${tag%_*}) $B --json $OUT/r/$tag.json > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s markov %s ladder %s\n", $1, $2, $3, $11, $15, $19, $23}'; grep -E "^sparkgate: " $OUT/r/$tag.txt | head -3; }
run base_1; run new_1; run ef1_1; run nl1_1; run both_1; run base_2; run new_2; run ef1_2; run nl1_2; run both_2
T="bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain --max-new 64 --repeat 1"
for t in base new ef1 nl1; do CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $(bin $t) $T > $OUT/r/tl_$t.txt 2>&1; ts "timeline $t rc=$?"; grep -E "^ +[1] plain|norms_cu|attention_k" $OUT/r/tl_$t.txt | head -5 | cut -c1-110; done
ts done

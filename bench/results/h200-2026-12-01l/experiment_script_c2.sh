#!/bin/bash
# call 2: w2 kept in L2 between Markov steps: reversed tiles on odd steps (rev), evict_last hints on a fraction (hint)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate; N=exp/new/sparkgate; NL=LD_LIBRARY_PATH=$PWD/exp/new:$LD_LIBRARY_PATH
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
for h in 50 70; do env $NL SG_EXP_W2_HINT=$h $N ops check --op markov_step > $OUT/r/check_markov_hint$h.txt 2>&1; ts "check markov hint$h rc=$? $(tail -1 $OUT/r/check_markov_hint$h.txt)"; done
B="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1 bin=$2; shift 2; env "$@" $bin $B > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s markov %s ladder %s\n", $1, $2, $3, $11, $15, $19, $23}'; grep -E "^sparkgate: " $OUT/r/$tag.txt | head -3; }
tl() { local tag=$1 bin=$2; shift 2; env "$@" CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so SG_TIMELINE_CSV=$OUT/r/tl_$tag.csv $bin bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes spec,hedge1 --max-new 32 --repeat 1 > $OUT/r/tl_$tag.txt 2>&1; ts "tl $tag rc=$?"; gzip $OUT/r/tl_$tag.csv; }
tl base $S
tl rev $N $NL SG_EXP_W2_REVERSE=1
tl hint50 $N $NL SG_EXP_W2_HINT=50
run base_1 $S
run hint50_1 $N $NL SG_EXP_W2_HINT=50
run hint70_1 $N $NL SG_EXP_W2_HINT=70
run rev_1 $N $NL SG_EXP_W2_REVERSE=1
run hint50_2 $N $NL SG_EXP_W2_HINT=50
run base_2 $S
ts done

#!/bin/bash
# call 3: w2 from the end on alternate Markov steps (cu_gemm_from_end), clean tree (build-gpu) vs 370df75 (exp/base); planted bug (exp/neg)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate; BS=exp/base/sparkgate; BL=LD_LIBRARY_PATH=$PWD/exp/base:$LD_LIBRARY_PATH
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
for op in gemm gemm_logits gemm_group gemm_swiglu; do SG_CUDA_GEMM_FROM_END=1 $S ops check --op $op > $OUT/r/check_fromend_$op.txt 2>&1; ts "check from_end $op rc=$? $(tail -1 $OUT/r/check_fromend_$op.txt)"; done
$S ops check --op markov_step > $OUT/r/check_markov.txt 2>&1; ts "check markov rc=$? $(tail -1 $OUT/r/check_markov.txt)"
for op in gemm markov_step; do env LD_LIBRARY_PATH=$PWD/exp/neg:$LD_LIBRARY_PATH SG_CUDA_GEMM_FROM_END=1 exp/neg/sparkgate ops check --op $op > $OUT/r/neg_$op.txt 2>&1; ts "NEG $op rc=$? $(tail -1 $OUT/r/neg_$op.txt)"; grep -m3 -iE "FAIL|differs" $OUT/r/neg_$op.txt; done
B="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1 bin=$2; shift 2; env "$@" $bin $B --json $OUT/r/$tag.json > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s markov %s ladder %s\n", $1, $2, $3, $11, $15, $19, $23}'; grep -E "^sparkgate: " $OUT/r/$tag.txt | head -3; }
tl() { local tag=$1 bin=$2; shift 2; env "$@" CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so SG_TIMELINE_CSV=$OUT/r/tl_$tag.csv $bin bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes spec,hedge1 --max-new 32 --repeat 1 > $OUT/r/tl_$tag.txt 2>&1; ts "tl $tag rc=$?"; gzip $OUT/r/tl_$tag.csv; }
tl new $S
run base_1 $BS $BL
run new_1 $S
run base_2 $BS $BL
run new_2 $S
ts done

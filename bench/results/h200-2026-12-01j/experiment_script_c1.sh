#!/bin/bash
# call 1: Markov step's selection (stage 1, stage 2) as programmatic dependents (SG_EXP_MK=1),
# plus U prefetched into L2 before the wait (2); the top-2/argmax selection likewise (SG_EXP_SEL=1)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
for op in markov_step argmax top2; do
  SG_EXP_MK=2 SG_EXP_SEL=1 $S ops check --op $op > $OUT/r/check_${op}_exp.txt 2>&1; echo "check $op rc=$? $(tail -1 $OUT/r/check_${op}_exp.txt)"
done
SG_EXP_MK=1 $S ops check --op markov_step > $OUT/r/check_markov_step_mk1.txt 2>&1; echo "check mk1 rc=$? $(tail -1 $OUT/r/check_markov_step_mk1.txt)"
ts checks
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1; shift; env "$@" $B > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$? $(grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $OUT/r/$tag.txt | cut -c1-30 | tr -s ' ' | tr '\n' ' ')"; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
for i in 1 2; do run base_$i SG_EXP_MK=0 SG_EXP_SEL=0; run mk1_$i SG_EXP_MK=1 SG_EXP_SEL=1; run mk2_$i SG_EXP_MK=2 SG_EXP_SEL=1; done
SG_EXP_MK=2 SG_EXP_SEL=1 CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $S bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes spec --max-new 64 --repeat 1 > $OUT/r/timeline_spec_mk2.txt 2>&1
grep -E "markov|top2" $OUT/r/timeline_spec_mk2.txt | cut -c1-110
ts done

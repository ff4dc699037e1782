#!/bin/bash
# call 2: SG_EXP_MK=2 (call 1's best) vs 3 (+ gather as a dependent, stage 2 releasing it), each
# with the selection scans' batch at 4 and 8 values (SG_EXP_T2B)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
for op in markov_step argmax top2; do
  SG_EXP_MK=3 SG_EXP_SEL=1 SG_EXP_T2B=8 $S ops check --op $op > $OUT/r/check_${op}_mk3b8.txt 2>&1; echo "check $op rc=$? $(tail -1 $OUT/r/check_${op}_mk3b8.txt)"
done
SG_EXP_MK=3 SG_EXP_SEL=1 $S ops check --op markov_step > $OUT/r/check_markov_step_mk3b4.txt 2>&1; echo "check mk3b4 rc=$? $(tail -1 $OUT/r/check_markov_step_mk3b4.txt)"
SG_EXP_MK=0 SG_EXP_SEL=0 SG_EXP_T2B=8 $S ops check --op top2 > $OUT/r/check_top2_b8_nopdl.txt 2>&1; echo "check top2 b8 plain launch rc=$? $(tail -1 $OUT/r/check_top2_b8_nopdl.txt)"
ts checks
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1 --max-new 64 --repeat 3"
run() { local tag=$1; shift; env "$@" $B > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$? $(grep -E '^ +1 (plain|spec|hedge1) ' $OUT/r/$tag.txt | awk '{printf "%s %s verify %s markov %s ladder %s | ", $2, $3, $11, $19, $23}')"; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
for i in 1 2; do
  run mk2b4_$i SG_EXP_MK=2 SG_EXP_SEL=1 SG_EXP_T2B=4
  run mk3b4_$i SG_EXP_MK=3 SG_EXP_SEL=1 SG_EXP_T2B=4
  run mk2b8_$i SG_EXP_MK=2 SG_EXP_SEL=1 SG_EXP_T2B=8
  run mk3b8_$i SG_EXP_MK=3 SG_EXP_SEL=1 SG_EXP_T2B=8
done
SG_EXP_MK=3 SG_EXP_SEL=1 SG_EXP_T2B=8 CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $S bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes spec --max-new 64 --repeat 1 > $OUT/r/timeline_spec_mk3b8.txt 2>&1
grep -E "markov|top2" $OUT/r/timeline_spec_mk3b8.txt | cut -c1-110
ts done

#!/bin/bash
# call 3: the norms' sum of squares with a lane's loads issued together (SG_EXP_SS=1; the tree's
# unroll-16 loop runs a 10-piece row as its remainder, one load at a time), and (2) also
# add_rmsnorm's loads of h, x, w all before its stores; Markov and selection at call 2's best
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
export SG_EXP_MK=3 SG_EXP_SEL=1
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
for ss in 1 2; do for op in rmsnorm add_rmsnorm qk_norm_rope_store; do
  SG_EXP_SS=$ss $S ops check --op $op > $OUT/r/check_${op}_ss$ss.txt 2>&1; echo "check $op ss$ss rc=$? $(tail -1 $OUT/r/check_${op}_ss$ss.txt)"
done; done
for ss in 0 1 2; do SG_EXP_SS=$ss $S ops perf --op rmsnorm > $OUT/r/perf_rmsnorm_ss$ss.txt 2>&1; SG_EXP_SS=$ss $S ops perf --op add_rmsnorm > $OUT/r/perf_add_rmsnorm_ss$ss.txt 2>&1; echo "perf ss$ss: $(grep -E '^(rmsnorm|add_rmsnorm) ' $OUT/r/perf_*rmsnorm_ss$ss.txt | tr -s ' ' | cut -c1-200 | tr '\n' ' ')"; done
ts checks
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1 --max-new 64 --repeat 3"
run() { local tag=$1; shift; env "$@" $B > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$? $(grep -E '^ +[14] (plain|spec|hedge1) ' $OUT/r/$tag.txt | awk '{printf "%s%s %s v %s d %s | ", $1, $2, $3, $11, $15}')"; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
for i in 1 2; do
  run ss0_$i SG_EXP_SS=0
  run ss1_$i SG_EXP_SS=1
  run ss2_$i SG_EXP_SS=2
done
for ss in 0 1; do
SG_EXP_SS=$ss CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $S bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain --max-new 64 --repeat 1 > $OUT/r/timeline_plain_ss$ss.txt 2>&1
echo "timeline ss$ss"; grep -E "^ +[0-9.]+ +[0-9.]+%" $OUT/r/timeline_plain_ss$ss.txt | head -9 | cut -c1-120
done
ts done

#!/bin/bash
# call 4: markov_w2 (K = 256, one segment) with more column tiles per block (SG_EXP_TB_SHORT),
# up to one round of resident blocks
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
for t in 36 48; do for op in gemm markov_step; do
  SG_EXP_TB_SHORT=$t $S ops check --op $op > $OUT/r/check_${op}_$t.txt 2>&1; echo "check $op tb $t rc=$? $(tail -1 $OUT/r/check_${op}_$t.txt)"
done; done
for t in 0 12 24 36 48 64 96; do
  SG_EXP_TB_SHORT=$t $S ops perf --op gemm > $OUT/r/perf_$t.txt 2>&1
  ts "perf tb $t: $(grep -E '^markov_w2 ' $OUT/r/perf_$t.txt | awk '{printf "%s %s | ", $2, $5}')"
done
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes spec,hedge1,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1; shift; env "$@" $B > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s markov %s ladder %s\n", $1, $2, $3, $19, $23}'; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
for i in 1 2; do for t in 0 36 48; do run tb${t}_$i SG_EXP_TB_SHORT=$t; done; done
ts done

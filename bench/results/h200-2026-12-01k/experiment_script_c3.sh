#!/bin/bash
# call 3: the next ring item's x requested before this one's chain (SG_EXP_XDB=1: 2-8 rows, 2: also 1)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
for d in 1 2; do for op in gemm gemm_swiglu; do
  SG_EXP_XDB=$d $S ops check --op $op > $OUT/r/check_${op}_$d.txt 2>&1; echo "check $op xdb $d rc=$? $(tail -1 $OUT/r/check_${op}_$d.txt)"
done; done
for d in 0 1 2; do
  SG_EXP_XDB=$d $S ops perf --op gemm > $OUT/r/perf_$d.txt 2>&1
  ts "perf xdb $d"; grep -E '^(q_proj|k_proj|o_proj|gate_proj|down_proj|fc|markov_w2|lm_head) +(1|8) ' $OUT/r/perf_$d.txt | awk '{printf "%s/%s %s  ", $1, $2, $5}'; echo
done
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1 --max-new 64 --repeat 3"
run() { local tag=$1; shift; env "$@" $B > $OUT/r/$tag.txt 2>&1; ts "$tag rc=$?"; grep -E '^ +[14] (plain|spec|hedge1) ' $OUT/r/$tag.txt | awk '{printf "  %s %s tok/s %s verify %s\n", $1, $2, $3, $11}'; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
for i in 1 2; do for d in 0 1 2; do run xdb${d}_$i SG_EXP_XDB=$d; done; done
ts done

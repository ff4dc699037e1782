#!/bin/bash
# call 4: gemm_split with 16-column blocks (NT = 2) at 2-8 rows (SG_EXP_SPLIT_NT2=2), A/B
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
for op in gemm gemm_group gemm_swiglu; do
  SG_EXP_SPLIT_NT2=2 $S ops check --op $op > $OUT/r/nt2_check_$op.txt 2>&1 || { echo "$op FAILED"; grep -E "FAIL|first bad|differs" $OUT/r/nt2_check_$op.txt | head; exit 1; }
  echo "$op $(grep failed $OUT/r/nt2_check_$op.txt)"
done
for v in 0 2; do SG_EXP_SPLIT_NT2=$v $S ops perf --op gemm > $OUT/r/nt2_perf_$v.txt 2>&1; echo "perf $v rc=$?"; grep -E "M= *8 |M=8 " $OUT/r/nt2_perf_$v.txt | head -12 | cut -c1-120; done
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
B="$S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge3 --max-new 64 --repeat 3"
run() { local tag=$1; shift; env "$@" $B > $OUT/r/$tag.txt 2>&1; echo "$tag rc=$? $(grep -E '^ +[14] (plain|spec|hedge3)' $OUT/r/$tag.txt | cut -c1-30 | tr -s ' ' | tr '\n' ' ')"; grep -E "^sparkgate: " $OUT/r/$tag.txt; }
for i in 1 2; do run nt0_$i SG_EXP_SPLIT_NT2=0; run nt2_$i SG_EXP_SPLIT_NT2=2; done

#!/bin/bash
# call 4: the final tree (Markov step and selections as programmatic dependents, U prefetched,
# the norms' loads batched) against 66114ca (exp/base: its libsparkgate.so and sparkgate), A/B
# alternating in one call; ops check of every op; the GPU ctest; a spec timeline
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
$S ops check > $OUT/r/final_ops_check.txt 2>&1; ts "ops check rc=$? $(tail -1 $OUT/r/final_ops_check.txt)"
for op in markov_step argmax top2; do SG_CUDA_PDL=0 $S ops check --op $op > $OUT/r/final_ops_check_${op}_pdl0.txt 2>&1; echo "check $op PDL off rc=$? $(tail -1 $OUT/r/final_ops_check_${op}_pdl0.txt)"; done
ARGS="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge2,hedge3 --max-new 64 --repeat 3"
sum() { grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $1 | awk '{printf "%s%s %s v %s d %s m %s l %s | ", $1, $2, $3, $11, $15, $19, $23}'; }
for i in 1 2; do
  LD_LIBRARY_PATH=$PWD/exp/base:$LD_LIBRARY_PATH exp/base/sparkgate $ARGS > $OUT/r/ab_base_$i.txt 2>&1; ts "base_$i rc=$? $(sum $OUT/r/ab_base_$i.txt)"
  $S $ARGS --json $OUT/r/ab_new_$i.json > $OUT/r/ab_new_$i.txt 2>&1; ts "new_$i rc=$? $(sum $OUT/r/ab_new_$i.txt)"
done
export LD_LIBRARY_PATH
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > $OUT/r/final_ctest_gpu.txt 2>&1; ts "ctest rc=$? $(grep -E 'tests passed|tests failed' $OUT/r/final_ctest_gpu.txt)"
CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $S bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes spec --max-new 64 --repeat 1 > $OUT/r/final_timeline_spec.txt 2>&1
grep -E "markov|top2|rmsnorm" $OUT/r/final_timeline_spec.txt | cut -c1-120
ts done

#!/bin/bash
# call 5: the final tree against 66114ca again, 3 alternating pairs, the rows that read slower in
# call 4's second pair (hedge at 4 requests)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/r/fixture.txt 2>&1 || exit 1
ts fixture
ARGS="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge3 --max-new 64 --repeat 3"
sum() { grep -E '^ +[14] (plain|spec|hedge1|hedge3) ' $1 | awk '{printf "%s%s %s v %s m %s | ", $1, $2, $3, $11, $19}'; }
for i in 1 2 3; do
  $S $ARGS > $OUT/r/ab2_new_$i.txt 2>&1; ts "new_$i rc=$? $(sum $OUT/r/ab2_new_$i.txt)"
  LD_LIBRARY_PATH=$PWD/exp/base:$LD_LIBRARY_PATH exp/base/sparkgate $ARGS > $OUT/r/ab2_base_$i.txt 2>&1; ts "base_$i rc=$? $(sum $OUT/r/ab2_base_$i.txt)"
done
ts done

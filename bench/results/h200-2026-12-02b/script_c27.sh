#!/bin/bash
# Call 5: attention's sums in four lanes (backend.h's new order; the CPU twin too). Bits against
# the CPU twin (every path: stored and recomputed scores, 1/2/4 heads a block), then decode A/B
# against the tree 051e77c (exp/base) alternating, one timeline each, then the GPU ctest.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c27.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate; B="env LD_LIBRARY_PATH=$PWD/exp/base:$LD_LIBRARY_PATH exp/base/sparkgate"
$S ops check --op attention > /tmp/r/check_attention.txt 2>&1; ts "check attention rc=$? $(tail -n 1 /tmp/r/check_attention.txt)"
SG_CUDA_ATT_STORED_KEYS=0 $S ops check --op attention > /tmp/r/check_attention_keys0.txt 2>&1; ts "check keys0 rc=$? $(tail -n 1 /tmp/r/check_attention_keys0.txt)"
for t in 1 4; do SG_CUDA_ATT_TEAMS=$t $S ops check --op attention > /tmp/r/check_attention_teams$t.txt 2>&1; ts "check teams$t rc=$? $(tail -n 1 /tmp/r/check_attention_teams$t.txt)"; done
$S ops check > /tmp/r/check_all.txt 2>&1; ts "check all rc=$? $(tail -n 1 /tmp/r/check_all.txt)"
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge3 --max-new 64 --repeat 2"
for rep in 1 2; do for v in base new; do
  if [ $v = base ]; then X=$B; else X=$S; fi
  $X $A > /tmp/r/ab_${v}_$rep.txt 2>&1; ts "ab $v $rep rc=$?"
  grep -E '^ +[14] (plain|spec|hedge3) ' /tmp/r/ab_${v}_$rep.txt | awk '{printf "  %s %s tok/s %s verify %s drafter %s\n", $1, $2, $3, $11, $15}'
done; done
T="bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain --max-new 64 --repeat 1"
CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $B $T 2>&1 | c++filt > /tmp/r/tl_base.txt; ts "tl base"
CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $S $T 2>&1 | c++filt > /tmp/r/tl_new.txt; ts "tl new"
grep -h "attention_k" /tmp/r/tl_base.txt /tmp/r/tl_new.txt | cut -c1-90
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > /tmp/r/ctest_gpu.txt 2>&1; ts "ctest rc=$? $(grep -E 'tests passed' /tmp/r/ctest_gpu.txt)"

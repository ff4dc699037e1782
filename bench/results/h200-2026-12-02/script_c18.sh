#!/bin/bash
# The last stage-1 block of a row merges the row's partials (top2.h d_top2_last_block: a
# device-scope acq_rel count per row, reset by that block), so the Markov step's stage 2 (2.5 us a
# step on the twelfth session's timeline, 7 steps a round) and the selection's stage 2 after the
# head are gone: last_block_markov.patch (markov.cu) as lbm, last_block_markov_top2.patch (also
# top2.cu) as lbt, against the tree (base).
# Not run (the fifteenth session's device time was spent). To prepare it, from the repository root
# at the commit that added this file (its gpu/ is a1eac2a's): build build-gpu (bench/README
# recipe), then
#   mkdir -p exp/base exp/lbm exp/lbt && cp build-gpu/libsparkgate.so build-gpu/sparkgate exp/base/
#   for v in lbm:last_block_markov lbt:last_block_markov_top2; do git apply bench/results/h200-2026-12-01o/${v#*:}.patch &&
#     cmake --build build-gpu -j2 && cp build-gpu/libsparkgate.so build-gpu/sparkgate exp/${v%%:*}/ && git checkout gpu/; done
#   cmake --build build-gpu -j2 && rm -rf build-gpu/fixtures && cp bench/results/h200-2026-12-01o/planned_script_c18.sh exp/c18.sh
# and run `bash exp/c18.sh` with carry ["build-gpu", ".deps"] (about 200 s plus the start).
# Expected: every check 0 failed (bits, graph replay and reruns: the counts must be back at 0
# after every launch); keep a patch if the Markov loop and the ladder at 1 and 4 requests are
# faster in every pair and no mode slower beyond the pairs' spread, then run the GPU ctest on it.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
trap 'tar czf $OUT/c18.tgz -C /tmp r' EXIT
for v in lbm lbt; do for op in markov_step top2 argmax; do
  $(bin $v) ops check --op $op > /tmp/r/check_${v}_$op.txt 2>&1; ts "check $v $op rc=$? $(tail -n 1 /tmp/r/check_${v}_$op.txt)"
done; done
SG_CUDA_PDL=0 $(bin lbt) ops check --op markov_step > /tmp/r/check_lbt_markov_step_nopdl.txt 2>&1; ts "check lbt markov_step, PDL off rc=$?"
build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes spec,hedge1,hedge3 --max-new 48 --repeat 2"
for rep in 1 2 3; do for v in base lbm lbt; do
  $(bin $v) $A > /tmp/r/bench_${v}_$rep.txt 2>&1; ts "bench $v $rep rc=$?"
  grep -E '^ +[14] (spec|hedge1|hedge3) ' /tmp/r/bench_${v}_$rep.txt | awk '{printf "  %s %s %s verify %s markov %s ladder %s\n", $1, $2, $3, $11, $19, $23}'
done; done

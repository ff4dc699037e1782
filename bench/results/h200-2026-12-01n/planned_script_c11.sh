#!/bin/bash
# the 32 x 16 tile with one weight register set where its launch has a tile per SM or more:
# bits, then a decode A/B against the tree before it (exp/base)
# Not run (the session's device time ran out). To prepare it, from the repository root at the commit
# that added this file: build build-gpu (bench/README recipe), copy its libsparkgate.so and sparkgate to exp/base/,
#   git apply bench/results/h200-2026-12-01n/wb1_32x16_tiles.patch && cmake --build build-gpu -j2
# then copy this script to exp/ and run it with carry ["build-gpu", ".deps"] (about 90 s plus the start).
# Expected: check gemm 0 failed; keep the patch only if spec and hedge3 at 1 and 4 requests are faster than base in both pairs.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
S=build-gpu/sparkgate; B="env LD_LIBRARY_PATH=$PWD/exp/base:$LD_LIBRARY_PATH exp/base/sparkgate"
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
$S ops check --op gemm > $OUT/check_gemm.txt 2>&1; ts "check gemm rc=$? $(tail -1 $OUT/check_gemm.txt)"
$S fixture make --set qwen3-4b --out /tmp/q4b > $OUT/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes spec,hedge3 --max-new 48 --repeat 2"
for rep in 1 2; do
  $S $A > $OUT/bench_new_$rep.txt 2>&1; ts "new $rep rc=$?"; grep -E '^ +[14] (spec|hedge3) ' $OUT/bench_new_$rep.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
  $B $A > $OUT/bench_base_$rep.txt 2>&1; ts "base $rep rc=$?"; grep -E '^ +[14] (spec|hedge3) ' $OUT/bench_base_$rep.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done

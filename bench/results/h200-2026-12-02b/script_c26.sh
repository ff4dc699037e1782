#!/bin/bash
# Call 4: attention alone on its SMs (SG_EXP_ATT_EXCL=1: a block takes all the shared memory a
# block may have, so no o-projection block shares its SM) against the tree; stamps of it; then
# the GPU ctest of the tree (build-gpu at 051e77c).
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c26.tgz -C /tmp r' EXIT
E="env LD_LIBRARY_PATH=$PWD/exp/e1:$LD_LIBRARY_PATH exp/e1/sparkgate"
build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec --max-new 64 --repeat 2"
for rep in 1 2; do for x in 0 1; do
  SG_EXP_ATT_EXCL=$x $E $A > /tmp/r/ab_x${x}_$rep.txt 2>&1; ts "ab excl=$x $rep rc=$?"
  grep -E '^ +[14] (plain|spec) ' /tmp/r/ab_x${x}_$rep.txt | awk '{printf "  %s %s tok/s %s verify %s\n", $1, $2, $3, $11}'
done; done
SG_EXP_ATT=4 SG_EXP_ATT_EXCL=1 $E bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain --max-new 64 --repeat 1 > /tmp/r/stamps_x1.txt 2>&1; ts "stamps excl rc=$?"
grep -E "^ +1 plain |attention stamps" /tmp/r/stamps_x1.txt | cut -c1-300
ctest --test-dir build-gpu -L gpu -j1 --output-on-failure > /tmp/r/ctest_gpu.txt 2>&1; ts "ctest rc=$? $(grep -E 'tests passed' /tmp/r/ctest_gpu.txt)"

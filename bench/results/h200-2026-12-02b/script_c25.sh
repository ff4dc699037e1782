#!/bin/bash
# Call 3: where attention releases its dependent (the o projection): SG_EXP_ALLOW 0 after its
# first K tile (the tree), 4 at entry, 1 after the scores, 2 after the exponentials' sum, 3 after
# the V tile has landed, 5 at exit. Decode A/B alternating; stamps for 0 and 2.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c25.tgz -C /tmp r' EXIT
E="env LD_LIBRARY_PATH=$PWD/exp/e1:$LD_LIBRARY_PATH exp/e1/sparkgate"
build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec --max-new 64 --repeat 2"
for rep in 1 2; do for a in 0 4 1 2 3 5; do
  SG_EXP_ALLOW=$a $E $A > /tmp/r/ab_a${a}_$rep.txt 2>&1; ts "ab allow=$a $rep rc=$?"
  grep -E '^ +[14] (plain|spec) ' /tmp/r/ab_a${a}_$rep.txt | awk '{printf "  %s %s tok/s %s verify %s\n", $1, $2, $3, $11}'
done; done
for a in 0 2 3; do
  SG_EXP_ATT=4 SG_EXP_ALLOW=$a $E bench --backend cuda --fixture /tmp/q4b --concurrency 1 --modes plain --max-new 64 --repeat 1 > /tmp/r/stamps_a$a.txt 2>&1; ts "stamps $a rc=$?"
  grep -E "^ +1 plain |attention stamps" /tmp/r/stamps_a$a.txt | cut -c1-300
done
